"""Scores with magnitude: ``RankRequest.with_scores`` fills each hit's dense cosine and BM25 score.

Every engine (Qdrant Edge, qdrant-client local mode, the memory store) gets the same three COVID-QA
papers (real MiniLM + BM25 vectors, encoded once and replayed) and real questions. With scores on,
the fused ranking is unchanged, the request is still one round trip, each hit's dense score is the
score the dense side alone gives that node (and its BM25 score the BM25 side's, 0.0 for a candidate
sharing no term with the query), and the engines agree on the numbers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, List

import pytest

from drag_knee_retriever.store import RankRequest
from support import CachingEncoder

REL = 1e-5  # Edge computes in float32, local mode in float64


@pytest.fixture(scope="module")
def indexes(make_index, covid_corpus, passage_cache):
    from drag_knee_retriever.store.memory import MemoryStore

    docs, _ = covid_corpus
    replay = CachingEncoder(passage_cache)
    built = {
        "edge": make_index(collection="mag_edge", engine="edge", encoder=replay),
        "local": make_index(collection="mag_local", engine="local", encoder=replay),
        "memory": make_index(collection="mag_memory", store=MemoryStore("mag_memory"), encoder=replay),
    }
    for index in built.values():
        index.add_documents(docs)
    return built


def _requests(index) -> Dict[str, RankRequest]:
    leaves = [n for n in index.store.scroll_nodes(with_text=False) if n.is_leaf]
    leaves.sort(key=lambda n: n.id)
    pool = tuple(n.id for n in leaves[:40])
    return {
        "candidates": RankRequest(limit=len(pool), candidate_ids=pool, with_scores=True),
        "candidates, short limit": RankRequest(limit=5, candidate_ids=pool, with_scores=True),
        "global leaves": RankRequest(limit=10, leaves_only=True, with_scores=True),
        "roots": RankRequest(limit=5, level=0, with_scores=True),
    }


def _tied(scores: Dict[str, float]) -> set:
    """Nodes whose side score equals another node's (to float32 precision)."""
    ordered = sorted(scores.items(), key=lambda item: item[1])
    tied = set()
    for (a, x), (b, y) in zip(ordered, ordered[1:]):
        if y == pytest.approx(x, rel=REL, abs=1e-9):
            tied |= {a, b}
    return tied


@pytest.mark.parametrize("engine", ["edge", "local", "memory"])
@pytest.mark.parametrize("explain", [False, True])
def test_scores_are_the_sides_own_and_leave_the_ranking_alone(indexes, covid_corpus, engine, explain):
    index = indexes[engine]
    _, questions = covid_corpus
    for question, _ in questions[:4] + [("zebra stripes deter flies", None)]:
        query = index.encoder.encode_query(question)
        named = _requests(index)
        before = index.store.requests
        plain = index.store.rank([replace(r, with_scores=False) for r in named.values()], query, rrf_k=2,
                                 explain=explain)
        plain_calls, before = index.store.requests - before, index.store.requests
        scored = index.store.rank(list(named.values()), query, rrf_k=2, explain=explain)
        # The side rankings ride in the same round trip(s): asking for them adds no call. (A batch
        # mixing the roots' collection with the nodes' takes one call per collection.)
        assert index.store.requests - before == plain_calls <= 2
        for (name, request), hits, reference in zip(named.items(), scored, plain):
            where = f"{engine} / {name} / {question!r}"
            full = max(request.limit, 100) if request.candidate_ids is None else len(request.candidate_ids)
            dense = {h.node.id: h.score for h in index.store.rank(
                [replace(request, only="dense", limit=full, with_scores=False)], query, rrf_k=2, explain=False)[0]}
            sparse = {h.node.id: h.score for h in index.store.rank(
                [replace(request, only="sparse", limit=full, with_scores=False)], query, rrf_k=2, explain=False)[0]}
            # The same fused ranking. Edge orders equal raw side scores arbitrarily from one call to
            # the next, which moves RRF scores among those nodes (see test_congruence): they aside.
            tied = _tied(dense) | _tied(sparse)
            assert [h.score for h in hits] == [h.score for h in reference], where
            assert [h.node.id for h in hits if h.node.id not in tied] == \
                   [h.node.id for h in reference if h.node.id not in tied], where
            if explain:
                assert [(h.dense_rank, h.sparse_rank) for h in hits if h.node.id not in tied] == \
                       [(h.dense_rank, h.sparse_rank) for h in reference if h.node.id not in tied], where
            for hit in hits:
                assert hit.dense_score is not None and -1.0 - 1e-6 <= hit.dense_score <= 1.0 + 1e-6, where
                assert hit.dense_score == pytest.approx(dense[hit.node.id], rel=REL, abs=1e-6), where
                if request.candidate_ids is not None:
                    # A candidate BM25 does not match scores exactly 0.0 (not None).
                    assert hit.sparse_score == pytest.approx(sparse.get(hit.node.id, 0.0), rel=REL, abs=1e-6), where
                elif hit.sparse_score is not None:
                    # 0.0 for a hit BM25 does not match when the sparse side returned fewer hits
                    # than it read (it returned every match).
                    assert hit.sparse_score == pytest.approx(sparse.get(hit.node.id, 0.0), rel=REL, abs=1e-6), where
                else:
                    assert hit.node.id not in sparse, where
            if "zebra" in question and request.candidate_ids is not None:
                assert all(h.sparse_score == 0.0 for h in hits), where


def test_engines_agree_on_the_scores(indexes, covid_corpus):
    _, questions = covid_corpus
    for question, _ in questions[:4]:
        results: Dict[str, List] = {}
        for engine, index in indexes.items():
            query = index.encoder.encode_query(question)
            (hits,) = index.store.rank([_requests(index)["candidates"]], query, rrf_k=2, explain=False)
            results[engine] = hits
        by_engine = {e: {h.node.id: (h.dense_score, h.sparse_score) for h in hits} for e, hits in results.items()}
        assert by_engine["edge"].keys() == by_engine["local"].keys() == by_engine["memory"].keys()
        for nid, (dense, sparse) in by_engine["local"].items():
            for other in ("edge", "memory"):
                assert by_engine[other][nid][0] == pytest.approx(dense, rel=REL, abs=1e-6)
                assert by_engine[other][nid][1] == pytest.approx(sparse, rel=REL, abs=1e-6)
        assert any(s > 0 for _, s in by_engine["local"].values())  # BM25 matched something
