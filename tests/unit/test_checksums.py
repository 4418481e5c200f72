"""The check each node is written with (store/checksums.py, issue 38 item 7), without an engine:
what an engine does to an intact point passes it, another point's vectors or text fail it."""

from __future__ import annotations

import numpy as np

from drag_knee_retriever.store.checksums import CHECK_FIELD, DENSE_TOLERANCE, add_checks, problem, problems

ID = "01fb2f47-fca0-57b0-b5cb-dd8c61170a52"


def _unit(rng, size=384):
    vector = rng.standard_normal(size)
    return vector / np.linalg.norm(vector)


def _written(rng, text="A note about lava.", scale=3.0):
    """A payload with its check, as a store writes it (a dense vector not yet of unit length)."""
    dense, payload = scale * _unit(rng), {"text": text}
    add_checks([payload], [ID], [dense], [([7, 3, 11], [0.5, 1.25, 2.0])])
    return payload, dense


def test_what_an_engine_gives_back_for_an_intact_point_passes():
    """Normalised, stored as float16, BM25 terms sorted, the id as a UUID object: no false alarm."""
    import uuid

    rng = np.random.default_rng(38)
    for _ in range(200):
        payload, dense = _written(rng)
        stored = (dense / np.linalg.norm(dense)).astype(np.float16).astype(np.float64)
        assert problem(uuid.UUID(ID), payload, stored.tolist(), ([3, 7, 11], [1.25, 0.5, 2.0])) == ""
    assert isinstance(payload[CHECK_FIELD], str) and len(payload[CHECK_FIELD]) < 100


def test_another_points_vectors_or_text_fail():
    rng = np.random.default_rng(7)
    payload, dense = _written(rng)
    near = dense / np.linalg.norm(dense) + 0.1 * _unit(rng)  # a vector at distance ~0.1: a near-duplicate text
    sparse = ([3, 7, 11], [1.25, 0.5, 2.0])
    assert "dense vector is not the one written" in problem(ID, payload, near.tolist(), sparse)
    assert "BM25 vector is not the one written" in problem(ID, payload, dense.tolist(), ([3, 7, 12], [1.25, 0.5, 2.0]))
    assert "BM25 vector is not the one written" in problem(ID, payload, dense.tolist(), ([3, 7, 11], [2.0, 0.5, 2.0]))
    assert "payload is another point's" in problem(ID, dict(payload, text="Sourdough."), dense.tolist(), sparse)
    other = "02fb2f47-fca0-57b0-b5cb-dd8c61170a52"
    assert "payload is another point's" in problem(other, payload, dense.tolist(), sparse)


def test_nodes_without_a_check_of_this_version_are_skipped():
    rng = np.random.default_rng(1)
    payload, dense = _written(rng)
    newer = dict(payload, **{CHECK_FIELD: "2" + payload[CHECK_FIELD][1:]})
    sample = [(ID, {"text": "written by an earlier release"}, dense, None), (ID, newer, dense, None),
              (ID, payload, dense, ([3, 7, 11], [1.25, 0.5, 2.0]))]
    assert problems(sample) == [None, None, ""]
    assert DENSE_TOLERANCE < 0.05
