"""Side rankings order their ties by point id on every engine, and the Edge store's BM25 side split
per group of documents (store/edge/split.py) gives exactly the ranking of the one request.

Real stores throughout (Qdrant Edge, qdrant-client local mode, the in-memory reference engine);
"duplicate texts" are leaves written with the same dense and BM25 vectors, so their scores tie.
Leaves are written in descending id order, the order Edge returns equal scores in, so a store
that kept the engine's order of a tie would fail here.
"""

from __future__ import annotations

import uuid
from typing import List

import numpy as np
import pytest

from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.store import NodeRecord, QueryVectors, RankRequest
from drag_knee_retriever.store.edge.split import SplitRule
from drag_knee_retriever.store.filters import any_of
from support.engines import make_store

DIM = 16
MODEL = "test/deterministic-16d"
QUERY = QueryVectors(dense=tuple(np.random.default_rng(3).standard_normal(DIM).tolist()),
                     sparse_indices=(1, 2, 3, 4, 5, 6, 7, 8), sparse_values=(1.0,) * 8)
# Each document's leaves take one of a few "texts" (vectors), so each text's leaves tie.
TEXTS = 3


def _id(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)))


def make_records(docs: int, leaves: int, seed: int = 11, prefix: str = "doc") -> List[NodeRecord]:
    rng = np.random.default_rng(seed)
    texts = [(rng.standard_normal(DIM).tolist(), sorted(set(rng.integers(1, 12, 5).tolist())))
             for _ in range(TEXTS)]
    records = []
    for d in range(docs):
        doc_id = f"{prefix}{d}"
        root = _id(doc_id, "root")
        leaf_ids = sorted((_id(doc_id, "leaf", str(i)) for i in range(leaves)), reverse=True)
        records.append(NodeRecord(
            TreeNode(id=root, doc_id=doc_id, level=0, is_leaf=False, span=Span(0, leaves - 1, 1, leaves),
                     text=f"summary of {doc_id}", child_ids=tuple(leaf_ids), path="r", doc_hash=f"h{d}"),
            rng.standard_normal(DIM).tolist(), [1, 2], [1.0, 1.0]))
        for i, lid in enumerate(leaf_ids):  # descending ids: the engine's tie order is reverse-id
            dense, terms = texts[(d + i) % TEXTS]
            records.append(NodeRecord(
                TreeNode(id=lid, doc_id=doc_id, level=1, is_leaf=True, span=Span(i, i, i + 1, i + 1),
                         text=f"text {(d + i) % TEXTS}", parent_id=root, path=f"r.{i}", doc_hash=f"h{d}"),
                dense, terms, [1.0] * len(terms)))
    return records


def open_store(engine: str, records: List[NodeRecord], location: str = ":memory:"):
    store = make_store(engine, "nodes", location, batch=64)
    store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
    store.upsert(records)
    return store


@pytest.mark.parametrize("engine", ["edge", "local", "memory"])
def test_tied_side_scores_come_back_ordered_by_id(engine, tmp_path, monkeypatch):
    """Dense and BM25 side rankings (explain ranks, with_scores scores) order equal scores by id.

    (Before the side rankings were ordered here, Edge and local mode failed this on 210 leaves.)"""
    import drag_knee_retriever.store.edge.engine as edge_engine

    monkeypatch.setattr(edge_engine, "SPARSE_FULL_SCAN", 20)  # Edge: the filtered BM25 side walks the index
    records = make_records(docs=30, leaves=7)
    store = open_store(engine, records, str(tmp_path / "index") if engine != "memory" else ":memory:")
    try:
        docs = [f"doc{d}" for d in range(0, 30, 2)]
        requests = [RankRequest(limit=100, leaves_only=True, with_scores=True),
                    RankRequest(limit=60, leaves_only=True, with_scores=True, filters=(any_of("doc_id", docs),))]
        for light in (False, True):
            for hits in store.rank(requests, QUERY, rrf_k=2, explain=True, light=light):
                for rank_of, score_of in (("dense_rank", "dense_score"), ("sparse_rank", "sparse_score")):
                    ranked = sorted((h for h in hits if getattr(h, rank_of) is not None), key=lambda h: getattr(h, rank_of))
                    keys = [(-getattr(h, score_of), h.node.id) for h in ranked]
                    assert len(ranked) > 50 and keys == sorted(keys), (engine, light, rank_of)
                    assert len({getattr(h, score_of) for h in ranked}) < len(ranked) / 10  # ties, many
    finally:
        store.close()


def test_the_split_rule():
    rule = SplitRule()
    assert not rule.may_pay(99_999) and not rule.may_pay(100_000) and rule.may_pay(1_000_000)
    counts = [(f"d{i}", 100) for i in range(46)]  # 4,600 leaves of 50 documents at 1M points
    groups = rule.groups(counts, 1_000_000)
    assert [len(g) for g in groups] == [9, 9, 9, 9, 9, 1] and sum(groups, []) == [d for d, _ in counts]
    assert rule.groups(counts, 400_000) is None  # 4,600 >= 1% of the collection: one request
    assert rule.groups(counts[:9], 1_000_000) is None  # 900 admitted: one request is scored point by point
    assert rule.groups([("big", 1500), ("a", 10), ("b", 10)], 1_000_000) == [["big"], ["a", "b"]]


# Forced: any share (the nodes of the filtered documents may be every point), any size, small groups.
FORCED = SplitRule(share=2.0, min_points=0, group_points=20)


def _view(results):
    return [[(h.node.id, h.score, h.dense_rank, h.sparse_rank, h.dense_score, h.sparse_score) for h in hits]
            for hits in results]


def _assert_split_equals_unsplit(store, docs):
    flt = (any_of("doc_id", docs),)
    # the focus step's global list (scored), and the same with explain's ranks and as a plain side
    requests = [RankRequest(limit=50, leaves_only=True, filters=flt, with_scores=True),
                RankRequest(limit=12, leaves_only=True, filters=flt, with_scores=True, weights=(0.5, 2.0))]
    for explain in (False, True):
        for light in (False, True):
            store.sparse_split = SplitRule()
            assert store._sparse_groups(requests[0]) is None  # a small collection: never split
            one = _view(store.rank(requests, QUERY, rrf_k=3, explain=explain, light=light))
            store.sparse_split = FORCED
            groups = store._sparse_groups(requests[0])
            assert groups is not None and len(groups) > 2
            split = _view(store.rank(requests, QUERY, rrf_k=3, explain=explain, light=light))
            assert split == one, (explain, light)
            assert any(h[5] is not None for h in one[0])
    store.sparse_split = SplitRule()


def test_the_split_bm25_side_gives_the_one_requests_ranking_after_adds_and_deletes(tmp_path, monkeypatch):
    """Forced on a small Edge index (shard threshold 20, so the one request walks the inverted index
    and the groups are scored point by point): the same hits, scores, ranks, after writes too."""
    import drag_knee_retriever.store.edge.engine as edge_engine

    monkeypatch.setattr(edge_engine, "SPARSE_FULL_SCAN", 20)  # the 1,000 of real indexes, scaled down
    records = make_records(docs=30, leaves=7)
    store = open_store("edge", records, str(tmp_path / "index"))
    try:
        docs = [f"doc{d}" for d in range(0, 30, 2)]  # 15 documents, 105 leaves admitted
        _assert_split_equals_unsplit(store, docs)
        assert store._node_counts["doc0"] == 8  # a root and 7 leaves
        # add documents (more leaves for doc0, a new document in the filter) and delete one
        store.delete_nodes("doc0")
        assert "doc0" not in store._node_counts
        store.upsert(make_records(docs=1, leaves=12, seed=4))  # doc0 again, 12 leaves
        store.upsert(make_records(docs=2, leaves=5, seed=5, prefix="new"))
        store.delete_nodes("doc4")
        docs = docs + ["new0", "new1"]
        _assert_split_equals_unsplit(store, docs)
        assert store._node_counts["doc0"] == 13 and store._node_counts["doc4"] == 0
        store.close()
        # reopened without a node map (as at 1M nodes): the sides bring payloads, the fusion is here
        store = edge_engine.EdgeStore("nodes", location=str(tmp_path / "index"), node_map_capacity=0)
        store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
        _assert_split_equals_unsplit(store, docs)
    finally:
        store.close()


def test_a_forced_split_leaves_search_results_unchanged(covid_index):
    """The whole knee search (focus step included) on real embeddings, split forced or not."""
    store = covid_index.store
    questions = ["What is the incubation period of the virus?", "How is the disease transmitted?",
                 "Which treatments were evaluated?"]
    split_sides = []
    groups_of = store._sparse_groups

    def watched(request):  # observes the store's own decision (the real method runs)
        groups = groups_of(request)
        split_sides.append(groups is not None)
        return groups

    # A filter (every document): without one, a store this small keeps no documents' condition on the
    # global list (search/_global_list.py), and that condition is what the split splits.
    every_doc = {"doc_id": [d.doc_id for d in covid_index.list_documents()]}

    def run():
        return [[(n.node.id, n.score, n.raw_score, n.text)
                 for n in covid_index.search(q, method="knee", filters=every_doc).nodes] for q in questions]

    store._sparse_groups = watched
    try:
        store.sparse_split = SplitRule()
        one = run()
        assert split_sides and not any(split_sides)
        split_sides.clear()
        store.sparse_split = SplitRule(share=2.0, min_points=0, group_points=8)
        assert run() == one
        assert any(split_sides)
    finally:
        del store._sparse_groups
        store.sparse_split = SplitRule()
