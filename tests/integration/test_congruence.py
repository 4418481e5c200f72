"""Congruence: Qdrant Edge and qdrant-client local mode give the same rankings and search results.

Both engines get the same corpus (three COVID-QA papers, real MiniLM + BM25 vectors, encoded once
and replayed to the second index) and the same real questions. At store level every kind of
ranking request is compared hit by hit (scores, order modulo ties, dense/sparse ranks); at index
level every search method must return the same nodes, step by step through the trace, except where
a walk forks at a tie (checked to be one, and required to be rare).
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import List, Set, Tuple

import pytest

from drag_knee_retriever.config import SEARCH_METHODS, FocusConfig, FusionConfig
from drag_knee_retriever.store import EdgeStore, QdrantClientStore, RankedHit, RankRequest, parse_filters
from support import CachingEncoder

# Scores of the two engines agree to float32 precision (Edge computes in f32, local mode in f64).
REL = 1e-5
# The walk is compared step by step with the focus on RRF (the default before focus_scores=
# "magnitude"): this file's tie analysis rebuilds each step's request from its candidates, which the
# magnitude focus (a pool of region + global leaves, re-scored in Python) does not fit; its results
# are compared as sets at the end of this file (test_the_default_magnitude_focus_agrees_...).
from drag_knee_retriever.config import SearchConfig  # noqa: E402

RRF_FOCUS = SearchConfig(focus=FocusConfig(scores="rrf", global_leaves=None))


@pytest.fixture(scope="module")
def replay(passage_cache):
    """The session's real encoder, memoised (queries too): the second index gets bit-identical vectors
    for free, and the passages' come from the session's cache (the papers other files indexed)."""
    return CachingEncoder(passage_cache)


@pytest.fixture(scope="module")
def pair(make_index, covid_corpus, replay):
    """The same three papers in an Edge index and a qdrant-client local-mode index."""
    docs, _ = covid_corpus
    edge = make_index(collection="congruence_edge", engine="edge", encoder=replay, search=RRF_FOCUS)
    local = make_index(collection="congruence_local", engine="local", encoder=replay, search=RRF_FOCUS)
    for index in (edge, local):
        index.add_documents(docs)
        index.search("warm-up")  # the first search reads the roots' identities once (one more store request)
    assert isinstance(edge.store, EdgeStore) and isinstance(local.store, QdrantClientStore)
    return edge, local


@pytest.fixture(scope="module")
def queries(covid_corpus) -> List[str]:
    _, questions = covid_corpus
    # Real questions (two per paper), a keyword-only query and one with no BM25 match at all.
    return [q for q, _ in questions[::2]] + ["ACE2 receptor binding", "zebra stripes deter flies"]


def tie_groups(hits: List[RankedHit]) -> List[Tuple[float, frozenset]]:
    """Consecutive hits with equal scores (to float32 precision), as (score, ids) groups."""
    groups: List[Tuple[float, set]] = []
    for hit in hits:
        if groups and hit.score == pytest.approx(groups[-1][0], rel=REL, abs=1e-9):
            groups[-1][1].add(hit.node.id)
        else:
            groups.append((hit.score, {hit.node.id}))
    return [(score, frozenset(ids)) for score, ids in groups]


def assert_same_order(edge, local, where: str) -> set:
    """Same scores position by position, same nodes in every tie group; returns the tied ids."""
    assert len(edge) == len(local), where
    assert [h.score for h in edge] == pytest.approx([h.score for h in local], rel=REL, abs=1e-9), where
    e_groups, l_groups = tie_groups(edge), tie_groups(local)
    assert len(e_groups) == len(l_groups), where
    # Every tie group holds the same nodes, except the last one, which the limit may cut through.
    assert [g for _, g in e_groups[:-1]] == [g for _, g in l_groups[:-1]], where
    return {i for _, g in e_groups if len(g) > 1 for i in g}


def side_ties(store, request: RankRequest, vectors) -> Set[str]:
    """Nodes that tie with another node on the dense or the BM25 side of a fused request.

    Engines order equal raw scores differently (Edge by internal offset, local mode by insertion),
    and RRF turns that order into different fused scores: such nodes are "ties aside".
    """
    limit = request.limit if request.candidate_ids is not None else max(request.limit, 100)
    tied: Set[str] = set()
    for side in ("dense", "sparse"):
        (hits,) = store.rank([replace(request, only=side, limit=limit)], vectors, rrf_k=2, explain=False)
        tied |= {i for _, group in tie_groups(hits) if len(group) > 1 for i in group}
    return tied


def assert_congruent(pair, request: RankRequest, vectors, e_hits, l_hits, where: str) -> None:
    """Strictly the same ranking, or (only if that fails) the same ranking with side ties aside."""
    try:
        assert_same_ranking(e_hits, l_hits, where)
    except AssertionError:
        edge, local = pair
        tied = side_ties(local.store, request, vectors) | side_ties(edge.store, request, vectors)
        if not tied & {h.node.id for h in list(e_hits) + list(l_hits)}:
            raise
        complete = request.candidate_ids is not None and request.limit >= len(request.candidate_ids)
        assert_same_ranking(e_hits, l_hits, where, tied, complete)


def assert_same_ranking(edge: List[RankedHit], local: List[RankedHit], where: str,
                        side_tied: Set[str] = frozenset(), complete: bool = False) -> None:
    """The same fused ranking, ties aside.

    Without side ties: same scores position by position and the same nodes in every fused tie
    group. With side ties among the hits, the tied nodes may swap fused scores, so: every other
    node has the same score and side ranks in both, and a ranking of a whole candidate set
    (``complete``) holds the same nodes.
    """
    if side_tied & {h.node.id for h in list(edge) + list(local)}:
        assert len(edge) == len(local), where
        if complete:
            assert {h.node.id for h in edge} == {h.node.id for h in local}, where
        l_by_id = {h.node.id: h for h in local}
        for hit in edge:
            other = l_by_id.get(hit.node.id)
            if other is not None and hit.node.id not in side_tied:
                assert hit.score == pytest.approx(other.score, rel=REL, abs=1e-9), where
        return
    tied = assert_same_order(edge, local, where)
    l_by_id = {h.node.id: h for h in local}
    for hit in edge:
        other = l_by_id.get(hit.node.id)
        if other is None or hit.node.id in tied:
            continue
        assert hit.node == other.node, where
        ranks = lambda h: (getattr(h, "dense_rank", None), getattr(h, "sparse_rank", None))
        assert ranks(hit) == ranks(other), where


def store_requests(index) -> List[Tuple[str, RankRequest]]:
    """Every kind of request the index makes, with candidate sets taken from the tree itself."""
    roots = sorted(index.store.scroll_nodes(level=0), key=lambda n: n.doc_id)
    first = roots[0]
    children = index.store.retrieve(list(first.child_ids))
    grandchildren = [c for child in children for c in child.child_ids]
    return [
        ("roots", RankRequest(limit=20, level=0)),
        ("roots weighted", RankRequest(limit=20, level=0, weights=(0.2, 0.8))),
        ("named roots", RankRequest(limit=3, level=0, candidate_ids=tuple(r.id for r in roots[:3]))),
        ("flat leaves", RankRequest(limit=10, leaves_only=True)),
        # Every level (flat_search scope="all"): unrestricted, so the bookkeeping point must stay out.
        ("flat all levels", RankRequest(limit=15)),
        ("flat all levels, metadata filter", RankRequest(limit=15, filters=parse_filters({"lang": "en"}))),
        ("flat dense only", RankRequest(limit=10, leaves_only=True, only="dense")),
        ("flat sparse only", RankRequest(limit=10, leaves_only=True, only="sparse")),
        ("beam candidates", RankRequest(limit=1 + len(children), candidate_ids=(first.id,) + first.child_ids)),
        ("deep candidates dense weight 0", RankRequest(
            limit=len(grandchildren) + len(children), candidate_ids=tuple(c.id for c in children) + tuple(grandchildren),
            weights=(0.0, 1.0))),
        ("candidates sparse weight 0", RankRequest(limit=50, candidate_ids=tuple(c.id for c in children), weights=(1.0, 0.0))),
        ("doc filter", RankRequest(limit=10, filters=parse_filters({"doc_id": [roots[1].doc_id, roots[2].doc_id]}))),
        ("metadata filter + leaves", RankRequest(limit=10, leaves_only=True, filters=parse_filters({"lang": "en"}))),
        ("level 1", RankRequest(limit=10, level=1)),
    ]


@pytest.mark.parametrize("rrf_k", [2, 60])
def test_store_rankings_agree(pair, queries, rrf_k):
    edge, local = pair
    assert edge.store.count() == local.store.count() > 0
    for query in queries:
        vectors = edge.encoder.encode_query(query)
        named = store_requests(edge)
        requests = [r for _, r in named]
        e_before, l_before = edge.store.requests, local.store.requests
        e_results = edge.store.rank(requests, vectors, rrf_k=rrf_k, explain=True)
        l_results = local.store.rank(requests, vectors, rrf_k=rrf_k, explain=True)
        # One round trip per collection each: the roots' rankings run on the roots' own copy.
        calls = 1 + any(r.level == 0 for r in requests)  # the roots' collection answers level 0 (roots_ranking)
        assert edge.store.requests - e_before == calls == local.store.requests - l_before
        for (name, request), e_hits, l_hits in zip(named, e_results, l_results):
            where = f"{name} / {query!r} / k={rrf_k}"
            if request.only is not None:  # one side only: raw scores, plain tie groups
                assert_same_order(e_hits, l_hits, where)
                continue
            assert_congruent(pair, request, vectors, e_hits, l_hits, where)


def test_listing_and_counts_agree(pair):
    edge, local = pair
    key = lambda nodes: sorted((n.id, n.doc_id, n.level, n.is_leaf, n.span, n.doc_hash) for n in nodes)
    assert key(edge.store.scroll_nodes()) == key(local.store.scroll_nodes())
    assert key(edge.store.scroll_nodes(level=0)) == key(local.store.scroll_nodes(level=0))
    ids = [n.id for n in local.store.scroll_nodes(level=1)][:7]
    assert sorted(edge.store.retrieve(ids), key=lambda n: n.id) == sorted(local.store.retrieve(ids), key=lambda n: n.id)
    assert [d.doc_id for d in edge.list_documents()] == [d.doc_id for d in local.list_documents()]


SCHEDULE = ((0.2, 0.8), (0.5, 0.5), (1.0, 0.0))


class _Hit:
    """A trace candidate seen as a ranked hit (id and fused score) for the tie helpers."""

    def __init__(self, candidate) -> None:
        self.node = SimpleNamespace(id=candidate.node_id)
        self.score = candidate.fused_score
        self.dense_rank, self.sparse_rank = candidate.dense_rank, candidate.sparse_rank


def step_request(step, settings, spec) -> RankRequest:
    """The ranking request a trace step answered (candidate steps rank their whole candidate set)."""
    if step.kind == "roots":
        limit = settings.beam_width if settings.method == "fixed" else settings.max_roots
        return RankRequest(limit=limit, weights=step.weights, level=0, filters=spec)
    ids = tuple(c.node_id for c in step.candidates)
    return RankRequest(limit=len(ids), weights=step.weights, candidate_ids=ids, filters=spec)


def assert_same_search(edge, local, query: str, options: dict, method: str) -> bool:
    """Same search result, ties aside. Returns False when a tie legitimately forked the walk.

    The traces are compared step by step. A step whose ranking differs must be explained by a
    tie: equal fused scores (to float32 precision) ordered differently, or ties in the dense or
    BM25 ranking of that step's candidates (checked against both stores). If the tie changed a
    decision, the walks may part there; otherwise the comparison goes on.
    """
    # A method's own knobs go with that method only (elsewhere they are refused).
    options = {k: v for k, v in options.items() if (k != "beam_width" or method == "fixed")
               and (k != "sensitivity" or method in ("sensitive_knee", "branch"))}
    where = f"{method} {options} {query!r}"
    vectors = edge.encoder.encode_query(query)
    e = edge.search(query, method=method, query_vectors=vectors, **options)
    l = local.search(query, method=method, query_vectors=vectors, **options)
    settings = edge.search_config.with_overrides(method=method, **options)
    side_tied: Set[str] = set()  # nodes whose scores a side tie changed without changing decisions
    for e_step, l_step in zip(e.trace.steps, l.trace.steps):
        assert (e_step.kind, e_step.level, e_step.parent_id) == (l_step.kind, l_step.level, l_step.parent_id), where
        e_hits = [_Hit(c) for c in e_step.candidates]
        l_hits = [_Hit(c) for c in l_step.candidates]
        same_decisions = [(c.node_id, c.outcome) for c in e_step.candidates] == \
                         [(c.node_id, c.outcome) for c in l_step.candidates]
        if _only_fused_ties(e_hits, l_hits):
            # Same scores; the order may differ only inside groups of equal fused scores.
            if same_decisions:
                continue
            # Equal RRF sums rounded apart (float32 vs float64) reorder a tie group, or move a
            # knee sitting exactly on such a tie: a tie fork.
            return False
        # Different scores: only ties in the dense or BM25 ranking of these candidates may explain it.
        request = step_request(e_step, settings, ())
        tied = side_ties(local.store, request, vectors) | side_ties(edge.store, request, vectors)
        assert tied, f"{where}: step {e_step.step} differs without any tie"
        assert_same_ranking(e_hits, l_hits, where, tied, complete=request.candidate_ids is not None)
        if not same_decisions:
            return False
        side_tied |= tied
    assert len(e.trace.steps) == len(l.trace.steps), where
    assert [h.node.id for h in e.nodes] == [h.node.id for h in l.nodes], where
    untied = [i for i, h in enumerate(e.nodes) if h.node.id not in side_tied]
    assert [e.nodes[i].score for i in untied] == \
           pytest.approx([l.nodes[i].score for i in untied], rel=REL, abs=1e-9), where
    assert [h.text for h in e.nodes] == [h.text for h in l.nodes], where
    assert e.trace.requests == l.trace.requests, where
    return True


def _only_fused_ties(e_hits, l_hits) -> bool:
    """Both orders differ only inside groups of equal fused scores (both stores sort those by id)."""
    try:
        assert_same_order(e_hits, l_hits, "")
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("method", SEARCH_METHODS)
def test_search_results_agree_for_every_method(pair, queries, method):
    edge, local = pair
    forked = 0
    runs = 0
    for query in queries:
        for options in ({}, {"fusion": FusionConfig(weights=SCHEDULE)}, {"beam_width": 2, "sensitivity": 0.5}):
            runs += 1
            forked += not assert_same_search(edge, local, query, options, method)
    # Every fork was checked above to start at a tie. A limit never cuts a tie where an engine
    # chooses (the walk's rankings over-fetch and cut by score, then id: store.fetch_limit), so
    # two kinds remain: equal RRF sums that Edge (float32) and local mode (float64) round apart,
    # and ties in the dense/BM25 side rankings. Measured: 1 of 96 searches (all methods).
    print(f"{method}: {runs - forked} of {runs} searches identical, {forked} forked on ties")
    assert forked <= 2, f"{forked} of {runs} searches forked on ties"


def test_flat_search_agrees(pair, queries):
    edge, local = pair
    for query in queries:
        for mode in ("hybrid", "dense", "sparse"):
            for scope in ("leaves", "all"):
                e = edge.flat_search(query, k=8, mode=mode, scope=scope)
                l = local.flat_search(query, k=8, mode=mode, scope=scope)
                where = f"flat {mode} {scope} {query!r}"
                if mode != "hybrid":
                    assert_same_order(e, l, where)
                    continue
                vectors = edge.encoder.encode_query(query)
                request = RankRequest(limit=8, leaves_only=scope == "leaves")
                # The fused ranking is what must agree (ties aside): its raw scores. The public score
                # is fitted along each engine's order, so a fused tie group in another order shifts it.
                assert_congruent(pair, request, vectors, _fused(e), _fused(l), where)
                both = {h.node.id for h in e} & {h.node.id for h in l}  # side ties may swap a node at the cut
                assert {h.node.id: h.cosine for h in e if h.node.id in both} == pytest.approx(
                    {h.node.id: h.cosine for h in l if h.node.id in both}, rel=REL, abs=1e-6), where


def _fused(hits):
    return [RankedHit(node=h.node, score=h.raw_score) for h in hits]


# ---------------------------------------------------------------------------------------------
# the pure-Python reference engine (store/memory.py) against both Qdrant engines
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def memory(make_index, covid_corpus, replay):
    """The same three papers in the pure-Python reference engine."""
    from drag_knee_retriever.store.memory import MemoryStore

    docs, _ = covid_corpus
    index = make_index(collection="congruence_memory", store=MemoryStore("congruence_memory"), encoder=replay,
                       search=RRF_FOCUS)
    index.add_documents(docs)
    index.search("warm-up")  # the first search reads the roots' identities once (one more store request)
    return index


@pytest.mark.parametrize("other", ["edge", "local"])
@pytest.mark.parametrize("rrf_k", [2, 60])
def test_memory_engine_rankings_agree_with_the_qdrant_engines(pair, memory, queries, rrf_k, other):
    """Every kind of request ranks the same in the reference engine, ties aside as between engines."""
    engine = pair[0] if other == "edge" else pair[1]
    duo = (memory, engine)
    assert memory.store.count() == engine.store.count() > 0
    for query in queries:
        vectors = engine.encoder.encode_query(query)
        named = store_requests(engine)
        requests = [r for _, r in named]
        before = memory.store.requests
        m_results = memory.store.rank(requests, vectors, rrf_k=rrf_k, explain=True)
        o_results = engine.store.rank(requests, vectors, rrf_k=rrf_k, explain=True)
        assert memory.store.requests - before == 1  # one round trip, like the engines
        for (name, request), m_hits, o_hits in zip(named, m_results, o_results):
            where = f"memory vs {other}: {name} / {query!r} / k={rrf_k}"
            if request.only is not None:
                assert_same_order(m_hits, o_hits, where)
                continue
            assert_congruent(duo, request, vectors, m_hits, o_hits, where)
        light = memory.store.rank(requests, vectors, rrf_k=rrf_k, explain=False, light=True)
        for full, thin in zip(m_results, light):  # light rankings: same ids and scores, no text
            assert [(h.node.id, h.score) for h in full] == [(h.node.id, h.score) for h in thin]


@pytest.mark.parametrize("method", SEARCH_METHODS)
def test_memory_engine_search_results_agree_with_local_mode(pair, memory, queries, method):
    _, local = pair
    forked = runs = 0
    for query in queries:
        for options in ({}, {"fusion": FusionConfig(weights=SCHEDULE)}):
            runs += 1
            forked += not assert_same_search(memory, local, query, options, method)
    print(f"memory vs local, {method}: {runs - forked} of {runs} searches identical, {forked} forked on ties")
    assert forked <= 2, f"{forked} of {runs} searches forked on ties"


def test_memory_engine_listing_and_counts_agree(pair, memory):
    _, local = pair
    key = lambda nodes: sorted((n.id, n.doc_id, n.level, n.is_leaf, n.span, n.doc_hash, n.text) for n in nodes)
    assert key(memory.store.scroll_nodes()) == key(local.store.scroll_nodes())
    assert key(memory.store.scroll_nodes(level=0)) == key(local.store.scroll_nodes(level=0))
    spec = parse_filters({"lang": "en"})
    assert key(memory.store.scroll_nodes(filters=spec)) == key(local.store.scroll_nodes(filters=spec))
    ids = [n.id for n in local.store.scroll_nodes(level=1)][:7]
    assert sorted(memory.store.retrieve(ids), key=lambda n: n.id) == sorted(local.store.retrieve(ids), key=lambda n: n.id)
    assert memory.store.collection_info()["model_id"] == local.store.collection_info()["model_id"]


def test_the_default_magnitude_focus_agrees_within_float_precision(pair, queries):
    """The default focus re-scores its pool in Python from each engine's cosines (Edge f32, local
    f64), so a near-tie may fall either side of the knee: the first result's document must agree
    for every query, the result sets for all but two (measured: 8 of 8 identical), and no set may
    share less than half its nodes."""
    edge, local = pair
    default = SearchConfig()
    overlaps = []
    for query in queries:
        e = edge.search(query, config=default)
        l = local.search(query, config=default)
        e_ids, l_ids = [h.node.id for h in e.nodes], [h.node.id for h in l.nodes]
        assert {h.doc_id for h in e.nodes[:1]} == {h.doc_id for h in l.nodes[:1]}, query
        overlaps.append(len(set(e_ids) & set(l_ids)) / len(set(e_ids) | set(l_ids)))
    print("magnitude focus, Jaccard of the result sets per query:", [round(o, 2) for o in overlaps])
    assert sum(o == 1.0 for o in overlaps) >= len(overlaps) - 2
    assert min(overlaps) >= 0.5
