"""The search as one pipeline: generators that yield :mod:`.ops` operations and receive their answers.

:func:`search_steps` is ``DragKneeIndex.search`` / ``asearch`` from the filter-key check to the
result; :func:`flat_steps` is ``flat_search``. Run either with a driver of :mod:`.drivers`
(:func:`~.drivers.run` or :func:`~.drivers.arun`): the steps, their order and their requests are
the same in both, and nothing here touches the store.

A knee search, step by step (each store operation in brackets):

1. the filter keys checked against the roots' metadata keys [read the roots, once, if a key is new];
2. the store's request count noted [requests]; the query encoded [encode];
3. a self-query model, if any, asked which documents the query names [read the roots, ask]; its
   filter narrows the search (4-7), and is dropped again when that leaves no result;
4. identity: the documents the query names [read the roots, once];
5. the walk (:mod:`~drag_knee_retriever.search._traversal`): roots, beam and focus [one rank per step];
   with a word budget, the focus ranking then the fill (:mod:`~drag_knee_retriever.search._budget`)
   [a few retrieves];
6. the public scores (:mod:`~drag_knee_retriever.search._relevance`) [one dense rank, if a hit lacks its cosine];
7. the context (:mod:`~drag_knee_retriever.search._context`): the hits' nodes, texts and liveness [one
   retrieve; a budget's fill already read them], then the result [requests].
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Generator, List, Optional, Sequence

from drag_knee_retriever.search._context import final_fetch_ids, finish_context
from drag_knee_retriever.errors import InvalidQueryError
from drag_knee_retriever.model._nodes import QueryVectors, ScoredNode, SearchResult
from drag_knee_retriever.search._page_ranking import page_steps
from drag_knee_retriever.model._query_args import check_query_vectors
from drag_knee_retriever.search._relevance import relevance_request, relevance_scores
from drag_knee_retriever.store.base import RankRequest
from drag_knee_retriever.store.filters import parse_filters
from drag_knee_retriever.search._traversal import budget_ranking_steps, walk_steps
from drag_knee_retriever.config import MAX_SETTING
from drag_knee_retriever.search._ops import REQUESTS, AskModel, Encode, Rank, Retrieve
from drag_knee_retriever.search._plan import SearchPlan, validate_query
from drag_knee_retriever.search._roots import RootCache

__all__ = ["flat_steps", "search_steps"]

Steps = Generator[Any, Any, Any]


def search_steps(plan: SearchPlan, roots: RootCache, *, query_vectors: Optional[QueryVectors], dense_size: int,
                 model: Any = None) -> Steps:
    """The search of ``plan`` (see the module docstring); returns a :class:`SearchResult`.

    ``query_vectors``: the query's vectors, if the caller has them (checked against ``dense_size``);
    ``model``: a self-query model, or None."""
    yield from roots.check_filter_keys(plan.filters)
    plan.requests_before = yield REQUESTS
    if query_vectors is not None:
        check_query_vectors(query_vectors, dense_size)
    vectors = query_vectors if query_vectors is not None else (yield Encode(plan.query))
    plan.mark("encode")
    if model is not None:
        values = yield from roots.metadata_values(getattr(model, "keys", None))
        extra = yield AskModel(model, plan.query, values)
        plan.mark("self_query")
        if extra:
            result = yield from _walk(plan.narrowed(parse_filters(extra)), vectors, roots)
            result.trace.self_query = {"filters": extra, "used": bool(result.nodes)}
            if result.nodes:
                return result
            plan.trace.self_query = result.trace.self_query
    return (yield from _walk(plan, vectors, roots))


def _walk(plan: SearchPlan, vectors: QueryVectors, roots: RootCache) -> Steps:
    """Identity, walk (and budget fill), public scores and context: one search's result."""
    rrf_k = plan.settings.fusion.rrf_k
    explain = plan.settings.explain

    # The walk reads only the nodes' structure (light rankings); the final fetch brings the
    # chosen nodes whole, with their spans' text, and checks that they are still live.
    def rank(requests: Sequence[RankRequest]) -> Rank:
        return Rank(requests, vectors, rrf_k, explain, True)

    identity = yield from roots.identity_match(plan)
    if plan.fills_budget:
        ranking = yield from _asking(budget_ranking_steps(plan.settings, plan.filters, plan.trace, identity), rank)
        plan.mark("walk")
        roots.check_identities(plan)
        if ranking.ranked:
            filled = yield from _asking(plan.fill_steps(ranking), Retrieve)
            yield from _score(plan, filled.hits, vectors)
            return _result(plan, *plan.budget_context(ranking, filled), (yield REQUESTS))
        hits = ranking.regions  # no leaf under the regions matched: the walk's nodes, packed
    else:
        hits = yield from _asking(walk_steps(plan.settings, plan.filters, plan.trace, identity), rank)
        plan.mark("walk")
        roots.check_identities(plan)
    yield from _score(plan, hits, vectors)
    capped = plan.cap(hits)
    fetched = yield Retrieve(final_fetch_ids(capped, True, plan.trace))
    context = plan.packed(finish_context(capped, fetched, refresh=True, trace=plan.trace))
    return _result(plan, *context, (yield REQUESTS))


def _asking(steps: Steps, op: Callable[[Any], Any]) -> Steps:
    """A sans-IO generator of the walk or the fill (yielding requests or ids) as a pipeline step:
    each thing it yields goes out as ``op(thing)``, and the answer comes back to it."""
    try:
        asked = next(steps)
        while True:
            asked = steps.send((yield op(asked)))
    except StopIteration as done:
        return done.value


def _score(plan: SearchPlan, hits: Sequence[Any], vectors: QueryVectors) -> Steps:
    """The hits' public [0, 1] scores (relevance.py): one dense ranking for the hits the walk did not score."""
    extra = relevance_request(hits)
    answered = (yield Rank([extra], vectors, plan.settings.fusion.rrf_k, False, True))[0] if extra else ()
    plan.score(hits, answered)


def _result(plan: SearchPlan, hits: Sequence[Any], texts: Dict[str, str], requests: int) -> SearchResult:
    """The search's result; ``requests``: the store's request count now (read just before)."""
    nodes = [ScoredNode(node=h.node, score=plan.public[h.node.id], rank=i, text=texts[h.node.id], raw_score=h.score)
             for i, h in enumerate(hits)]
    if plan.settings.order == "document":
        nodes.sort(key=lambda s: (s.node.doc_id, s.node.span.first_leaf))
    plan.mark("context")
    plan.trace.requests = requests - plan.requests_before
    plan.trace.timings_ms["total"] = (time.perf_counter() - plan.started) * 1e3
    return SearchResult(query=plan.query, method=plan.settings.method, nodes=nodes, trace=plan.trace)


def flat_steps(query: Any, roots: RootCache, *, k: int, mode: str, scope: str, filters: Any,
               query_vectors: Optional[QueryVectors], rrf_k: Optional[int], unit: str, default_rrf_k: int,
               dense_size: int) -> Steps:
    """``DragKneeIndex.flat_search`` (the flat top-k baseline): returns a list of :class:`ScoredNode`."""
    query = validate_query(query)
    if unit not in ("leaf", "page"):
        raise InvalidQueryError(f"unit must be 'leaf' or 'page', got {unit!r}.")
    if unit == "page" and scope != "leaves":
        raise InvalidQueryError("unit='page' groups leaves into their pages: use it with scope='leaves'.")
    if mode not in ("hybrid", "dense", "sparse"):
        raise InvalidQueryError(f"mode must be 'hybrid', 'dense' or 'sparse', got {mode!r}.")
    if scope not in ("leaves", "all"):
        raise InvalidQueryError(f"scope must be 'leaves' or 'all', got {scope!r}.")
    for name, value in (("k", k), ("rrf_k", rrf_k)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 1 <= value <= MAX_SETTING):
            raise InvalidQueryError(f"{name} must be an integer >= 1 (at most {MAX_SETTING:,}), got {value!r}.")
    spec = parse_filters(filters)
    yield from roots.check_filter_keys(spec)  # the same filter rules as search()
    if query_vectors is None:
        query_vectors = yield Encode(query)
    else:
        check_query_vectors(query_vectors, dense_size)
    request = RankRequest(limit=k, leaves_only=scope == "leaves", filters=spec,
                          only=None if mode == "hybrid" else mode)
    fused = rrf_k if rrf_k is not None else default_rrf_k
    if unit == "page":
        hits: List[Any] = yield from page_steps(request, query_vectors, k=k, rrf_k=fused)
    else:
        hits = (yield Rank([request], query_vectors, fused, False, False))[0]
    extra = relevance_request(hits)
    public = dict(zip((h.node.id for h in hits), relevance_scores(
        hits, (yield Rank([extra], query_vectors, fused, False, True))[0] if extra else ())))
    fetched = yield Retrieve(final_fetch_ids(hits, False, None))
    hits, texts = finish_context(hits, fetched)
    return [ScoredNode(node=h.node, score=public[h.node.id], rank=i, text=texts[h.node.id], raw_score=h.score)
            for i, h in enumerate(hits)]
