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
from drag_knee_retriever.model._nodes import QueryVectors, ScoredNode, SearchResult, TraceStep
from drag_knee_retriever.search._page_ranking import page_steps
from drag_knee_retriever.model._query_args import check_query_vectors
from drag_knee_retriever.search._relevance import monotone_scores, relevance_request, relevance_scores
from drag_knee_retriever.store.base import RankRequest
from drag_knee_retriever.store.filters import parse_filters
from drag_knee_retriever.search._traversal import budget_ranking_steps, level_weights, trace_candidate, walk_steps
from drag_knee_retriever.config import MAX_SETTING
from drag_knee_retriever.search._ops import REQUESTS, AskModel, Encode, Rank, Retrieve
from drag_knee_retriever.search._plan import SearchPlan, validate_query
from drag_knee_retriever.search._leaf_filters import hide_ancestors, keep_matching, navigation_filter, reaches_below_roots, seed_request
from drag_knee_retriever.search._roots import RootCache
from drag_knee_retriever.search._statement_route import routed_first, statement_route_steps

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

    # A filter that holds below the roots (a page's keys, level, ids) steers the walk through the
    # ancestors of the best nodes it admits instead of stopping it at the roots (_leaf_filters.py).
    walk_filters, ancestors, seeds = plan.filters, set(), []
    if plan.filters and reaches_below_roots(plan.filters, roots.page_keys):
        seeds = (yield Rank([seed_request(plan.filters, _leaf_weights(plan))], vectors, rrf_k, False, False))[0]
        if not seeds:
            return _result(plan, [], {}, (yield REQUESTS))
        walk_filters, ancestors = navigation_filter(plan.filters, seeds)

    identity = yield from roots.identity_match(plan)
    if plan.fills_budget:
        ranking = yield from _asking(budget_ranking_steps(plan.settings, walk_filters, plan.trace, identity), rank)
        ranking.ranked = routed_first((yield from _route(plan, ranking.ranked, walk_filters, rank)), ranking.ranked)
        plan.mark("walk")
        roots.check_identities(plan)
        hide_ancestors(plan.trace, ancestors)
        if ranking.ranked:
            filled = yield from _asking(plan.fill_steps(ranking), Retrieve)
            if not any(h.node.id in ancestors for h in filled.hits):
                yield from _score(plan, filled.hits, vectors)
                return _result(plan, *plan.budget_context(ranking, filled), (yield REQUESTS))
            hits = filled.hits  # a way down among them: replaced below, then packed to the budget
        else:
            hits = ranking.regions  # no leaf under the regions matched: the walk's nodes, packed
    else:
        hits = yield from _asking(walk_steps(plan.settings, walk_filters, plan.trace, identity), rank)
        hits = routed_first((yield from _route(plan, hits, walk_filters, rank)), hits)
        plan.mark("walk")
        roots.check_identities(plan)
        hide_ancestors(plan.trace, ancestors)
    hits = keep_matching(hits, ancestors, seeds)
    if plan.fill and plan.settings.budget is None:
        hits = yield from _fill(plan, hits, vectors)
    yield from _score(plan, hits, vectors)
    capped = plan.cap(hits)
    fetched = yield Retrieve(final_fetch_ids(capped, True, plan.trace))
    context = plan.packed(finish_context(capped, fetched, refresh=True, trace=plan.trace))
    return _result(plan, *context, (yield REQUESTS))


def _route(plan: SearchPlan, hits: Sequence[Any], filters: Any, rank: Callable[[Any], Any]) -> Steps:
    """The pages of the financial statements the query names, in its best document (search/_statement_route.py)."""
    return (yield from _asking(statement_route_steps(plan.settings, plan.query, hits, filters, _leaf_weights(plan),
                                                     plan.trace), rank))


def _leaf_weights(plan: SearchPlan) -> Any:
    """The (dense, sparse) weights the walk gives the leaves (its deepest pair)."""
    return level_weights(plan.settings.fusion.weights, plan.settings.max_depth)


def _fill(plan: SearchPlan, hits: Sequence[Any], vectors: QueryVectors) -> Steps:
    """The walk's results, then (``fill``) the best leaves of a hybrid ranking under the same
    filters that no result covers, up to ``max_results``: a count, as a vector store's ``k``."""
    count = plan.settings.max_results
    assert count is not None
    if len(hits) >= count:
        return list(hits)
    spans: Dict[str, List[Any]] = {}
    for hit in hits:
        spans.setdefault(hit.node.doc_id, []).append(hit.node.span)
    covered = sum(s.last_leaf - s.first_leaf + 1 for hit in hits for s in (hit.node.span,))
    limit = min(count + covered, MAX_SETTING)
    request = RankRequest(limit=limit, weights=_leaf_weights(plan), leaves_only=True, filters=plan.filters,
                          with_scores=True)
    ranked = (yield Rank([request], vectors, plan.settings.fusion.rrf_k, plan.settings.explain, True))[0]
    extra = [h for h in ranked if not any(s.first_leaf <= h.node.span.first_leaf <= s.last_leaf
                                          for s in spans.get(h.node.doc_id, ()))][: count - len(hits)]
    hits = _split_regions(list(hits), ranked, count - len(extra))
    step = TraceStep(step=len(plan.trace.steps), kind="fill", level=max((h.node.level for h in extra), default=0),
                     weights=request.weights)
    step.candidates.extend(trace_candidate(hit, position) for position, hit in enumerate(extra))
    step.kept_count = len(extra)
    plan.trace.steps.append(step)
    plan.mark("fill")
    return hits + extra


def _split_regions(hits: List[Any], ranked: Sequence[Any], count: int) -> List[Any]:
    """Where no uncovered leaf is left to reach ``count``: the results that are regions (best
    first) replaced in place by their own best leaves of ``ranked``, as many as the count needs."""
    position = 0
    while position < len(hits) and len(hits) < count:
        region = hits[position]
        span = region.node.span
        leaves = [] if region.node.is_leaf else [
            h for h in ranked if h.node.doc_id == region.node.doc_id
            and span.first_leaf <= h.node.span.first_leaf <= span.last_leaf]
        if len(leaves) > 1:
            leaves = leaves[: count - len(hits) + 1]
            hits[position:position + 1] = leaves
            position += len(leaves)
        else:
            position += 1
    return hits


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
    """The hits' public [0, 1] scores (search/_relevance.py): one dense ranking for the hits the walk did not score."""
    extra = relevance_request(hits)
    answered = (yield Rank([extra], vectors, plan.settings.fusion.rrf_k, False, True))[0] if extra else ()
    plan.score(hits, answered)


def _result(plan: SearchPlan, hits: Sequence[Any], texts: Dict[str, str], requests: int) -> SearchResult:
    """The search's result; ``requests``: the store's request count now (read just before)."""
    nodes = [ScoredNode(node=h.node, score=plan.public[h.node.id], rank=i, text=texts[h.node.id], raw_score=h.score,
                        cosine=plan.cosine.get(h.node.id)) for i, h in enumerate(hits)]
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
    cosines = relevance_scores(hits, (yield Rank([extra], query_vectors, fused, False, True))[0] if extra else ())
    ids = [h.node.id for h in hits]
    cosine, public = dict(zip(ids, cosines)), dict(zip(ids, monotone_scores(cosines)))
    fetched = yield Retrieve(final_fetch_ids(hits, False, None))
    hits, texts = finish_context(hits, fetched)
    return [ScoredNode(node=h.node, score=public[h.node.id], rank=i, text=texts[h.node.id], raw_score=h.score,
                       cosine=cosine[h.node.id]) for i, h in enumerate(hits)]
