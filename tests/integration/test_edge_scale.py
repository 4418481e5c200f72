"""Edge store settings for large indexes (issue 17): payload placement and the paged BM25 rebuild, on real Qdrant Edge."""

from __future__ import annotations

import uuid
from typing import List

import numpy as np
import pytest

from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.store import NodeRecord, QueryVectors, RankRequest
from drag_knee_retriever.store.edge import EdgeStore

DIM = 16
MODEL = "test/deterministic-16d"
QUERY = QueryVectors(dense=tuple(np.random.default_rng(99).standard_normal(DIM).tolist()),
                     sparse_indices=(1, 5, 9, 13, 17, 21, 25, 29), sparse_values=(1.0,) * 8)


def make_records(seed: int = 7, docs: int = 4, leaves: int = 5) -> List[NodeRecord]:
    """One root per document over ``leaves`` leaves, seeded dense and sparse vectors."""
    rng = np.random.default_rng(seed)
    records = []
    for d in range(docs):
        doc_id = f"doc{d}"
        root = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{doc_id}/root"))
        leaf_ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"{doc_id}/leaf/{i}")) for i in range(leaves)]
        nodes = [TreeNode(id=root, doc_id=doc_id, level=0, is_leaf=False, span=Span(0, leaves - 1, 1, leaves),
                          text=f"summary of {doc_id}", child_ids=tuple(leaf_ids), path="r", doc_hash=f"h{d}")]
        nodes += [TreeNode(id=lid, doc_id=doc_id, level=1, is_leaf=True, span=Span(i, i, i + 1, i + 1),
                           text=f"leaf {i} of {doc_id} " * 20, parent_id=root, path=f"r.{i}", doc_hash=f"h{d}")
                  for i, lid in enumerate(leaf_ids)]
        for node in nodes:
            indices = sorted(set(rng.integers(0, 40, 6).tolist()))
            records.append(NodeRecord(node, rng.standard_normal(DIM).tolist(), indices,
                                      rng.uniform(0.5, 2.0, len(indices)).tolist()))
    return records


def _open(location, collection="nodes", **kw) -> EdgeStore:
    store = EdgeStore(collection, location=str(location), **kw)
    store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
    return store


def _rankings(store):
    requests = [RankRequest(limit=5, level=0), RankRequest(limit=8, leaves_only=True), RankRequest(limit=30)]
    return [[(h.node.id, h.score) for h in hits] for hits in store.rank(requests, QUERY, rrf_k=2, explain=False)]


def test_reopened_bm25_frequencies_rebuilt_page_by_page_equal_the_written_ones(tmp_path, monkeypatch):
    records = make_records(seed=3, docs=9, leaves=4)
    # many pages, one of them short (the BM25 terms' scroll in writes.py, the roots' versions' in roots.py)
    from drag_knee_retriever.store.edge import roots as edge_roots, writes as edge_writes

    for module in (edge_writes, edge_roots):
        monkeypatch.setattr(module, "SCROLL_PAGE", 7)
    store = _open(tmp_path)
    try:
        store.upsert(records)
        written = dict(store._idf.frequencies._df), store._idf.frequencies.n
        ranked = _rankings(store)
    finally:
        store.close()
    reopened = _open(tmp_path)
    try:
        assert reopened._idf.stale  # nothing read yet: the first query rebuilds
        assert _rankings(reopened) == ranked
        assert (dict(reopened._idf.frequencies._df), reopened._idf.frequencies.n) == written
        assert written[1] == len(records)
    finally:
        reopened.close()


@pytest.mark.parametrize("placement", ["cold", "cached", "pinned"])
def test_payload_memory_placements_keep_every_ranking_and_payload(tmp_path, placement):
    records = make_records(seed=5)
    default = _open(tmp_path / "default")
    placed = _open(tmp_path / placement, payload_memory=placement)
    try:
        for store in (default, placed):
            store.upsert(records)
        assert _rankings(placed) == _rankings(default)
        ids = [r.node.id for r in records[:6]]
        assert [n.text for n in placed.retrieve(ids)] == [n.text for n in default.retrieve(ids)]
    finally:
        default.close()
        placed.close()
    reopened = _open(tmp_path / placement)  # the placement is the shard's own: it survives a reopen
    try:
        assert reopened.count() == len(records)
        assert [n.text for n in reopened.retrieve([records[0].node.id])] == [records[0].node.text]
    finally:
        reopened.close()


def test_an_unknown_payload_placement_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ConfigError, match="payload_memory must be one of"):
        EdgeStore("nodes", location=str(tmp_path / "x"), payload_memory="disk")
    assert not (tmp_path / "x").exists()
