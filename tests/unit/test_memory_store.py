"""The pure-Python reference engine (store/memory.py) keeps the NodeStore contract without Qdrant.

Hand-made vectors, so every ranking below can be worked out by hand; its agreement with the
Qdrant engines on real vectors is in tests/integration/test_congruence.py.
"""

from __future__ import annotations

import math

import pytest

from drag_knee_retriever.errors import InvalidQueryError, ModelMismatchError
from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.store import NodeRecord, QueryVectors, RankRequest, parse_filters
from drag_knee_retriever.store.memory import MemoryStore

ROOT = "00000000-0000-0000-0000-000000000001"
LEAVES = ["00000000-0000-0000-0000-00000000001%d" % i for i in range(3)]


def records(doc_hash: str = "v1"):
    root = TreeNode(id=ROOT, doc_id="d", level=0, is_leaf=False, span=Span(0, 2), text="root",
                    child_ids=tuple(LEAVES), doc_hash=doc_hash, metadata={"lang": "en"})
    out = [NodeRecord(root, [1.0, 1.0], [1], [1.0])]
    for i, leaf_id in enumerate(LEAVES):
        leaf = TreeNode(id=leaf_id, doc_id="d", level=1, is_leaf=True, span=Span(i, i), text=f"leaf {i}",
                        parent_id=ROOT, doc_hash=doc_hash, metadata={"lang": "en" if i else "ru"})
        out.append(NodeRecord(leaf, [1.0, float(i)], [i + 1], [1.0]))
    return out


@pytest.fixture
def store():
    s = MemoryStore("t")
    s.open_collection(dense_size=2, model_id="m", sparse_model="bm25")
    s.upsert(records())
    yield s
    s.close()


def test_counts_lists_and_hides_the_bookkeeping_point(store):
    assert store.count() == 4
    assert {n.id for n in store.scroll_nodes()} == {ROOT, *LEAVES}
    assert [n.id for n in store.scroll_nodes(filters=parse_filters({"lang": "ru"}))] == [LEAVES[0]]
    assert store.collection_info()["model_id"] == "m"
    (hits,) = store.rank([RankRequest(limit=10)], QueryVectors((1.0, 0.0), (), ()), rrf_k=60, explain=False)
    assert len(hits) == 4  # an unrestricted ranking: nodes only


def test_dense_cosine_bm25_idf_and_rrf_by_hand(store):
    query = QueryVectors((1.0, 0.0), (2,), (1.0,))
    before = store.requests
    dense, sparse, fused = store.rank([RankRequest(limit=4, only="dense"), RankRequest(limit=4, only="sparse"),
                                       RankRequest(limit=4, weights=(1.0, 2.0))], query, rrf_k=2, explain=True)
    assert store.requests - before == 1
    # Cosine with (1, 0): leaf 0 = 1, root = leaf 1 = 0.707 (tie: by id), leaf 2 = 0.447.
    assert [h.node.id for h in dense] == [LEAVES[0], ROOT, LEAVES[1], LEAVES[2]]
    assert dense[1].score == pytest.approx(1 / math.sqrt(2), rel=1e-6)
    # Term 2 is held by leaf 1 only, among 4 points with a sparse vector.
    # IDF on the 1/64 grid (bm25_idf.py).
    assert [(h.node.id, h.score) for h in sparse] == [(LEAVES[1], pytest.approx(math.log((4 - 1 + 0.5) / 1.5 + 1), abs=1 / 128))]
    # Leaf 1: dense position 2 (1/(3+1)) + sparse position 0 with weight 2 (1/(0.5+1)).
    assert fused[0].node.id == LEAVES[1] and fused[0].score == pytest.approx(1 / 4 + 1 / 1.5)
    assert (fused[0].dense_rank, fused[0].sparse_rank) == (2, 0)


def test_candidates_level_filters_and_light_nodes(store):
    query = QueryVectors((0.0, 1.0), (), ())
    (hits,) = store.rank([RankRequest(limit=2, candidate_ids=tuple(LEAVES), filters=parse_filters({"lang": "en"}))],
                         query, rrf_k=60, explain=False, light=True)
    assert [h.node.id for h in hits] == [LEAVES[2], LEAVES[1]]
    assert hits[0].node.text == "" and hits[0].node.parent_id == ROOT


def test_replace_deletes_other_versions_and_rejects_another_model(store):
    store.upsert([r for r in records("v2")])
    store.delete_nodes("d", except_hash="v2")
    assert {n.doc_hash for n in store.scroll_nodes()} == {"v2"} and store.count() == 4
    store.delete_nodes("d")
    assert store.count() == 0 and store.collection_info()["model_id"] == "m"
    with pytest.raises(ModelMismatchError):
        store.open_collection(dense_size=3, model_id="other", sparse_model="bm25")
    with pytest.raises(InvalidQueryError):
        store.rank([RankRequest(limit=1)], QueryVectors((1.0, 0.0), (), ()), rrf_k=0, explain=False)
