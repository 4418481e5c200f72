"""Side rankings order their ties by point id on every engine.

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

from drag_knee_retriever.nodes import Span, TreeNode
from drag_knee_retriever.store import NodeRecord, QueryVectors, RankRequest
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
