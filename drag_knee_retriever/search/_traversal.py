"""The tree walk: beam search with parent/child suppression, knee cuts, and branch search.

The walk knows nothing of Qdrant, encoders or I/O: :func:`walk_steps` is a generator that yields
the list of :class:`RankRequest` of each step and receives their ranked hits, so one algorithm
serves the search pipeline (:mod:`~drag_knee_retriever.search._pipeline`, run by its synchronous or
asynchronous driver) and :func:`walk`, which runs it with a ranker of your own (tests, benchmarks). Each step is one
round trip, so a search costs one for the roots plus one per level visited.

Beam methods (``fixed``, ``knee``, ``sensitive_knee``): rank the roots and keep the beam (the top
``beam_width``, or the roots up to the knee). Then repeatedly rank the beam together with all
children of its inner members, optionally cut the ranked list at the knee, and walk it in rank
order: a candidate already suppressed is skipped; a beam member is kept and suppresses its
children (the broader unit answers better, so it stays whole); a child is kept and suppresses its
parent (the finer unit answers better). ``fixed`` keeps at most ``beam_width``. Stop when the beam
no longer changes or has no inner node left.

Focus (knee methods, ``SearchConfig.focus``): the walk's nodes are regions; the leaves under
them are ranked together in one more round trip, the best ``focus.pool`` are cut at their knee, and
those leaves are the result, except that a region most of whose leaves survive
(``focus.merge_ratio``) is returned whole. With ``focus.global_leaves`` the same round trip also ranks the best
leaves of the whole filtered collection, and the two lists are fused (the tree as evidence, a
global leaf ranking as a second opinion; the trace shows it as a "global" step). Why: the walk reliably finds the right documents and
sections, but a knee over the few candidates of one beam step decides badly between a parent and
its children (the per-step lists are short and RRF scores depend only on ranks). So the walk cuts
generously (``focus.region_sensitivity``) and the leaves compete once, directly.

The focus cut (:func:`focus_cut`) is the knee of the best ``focus_pool`` leaves; with magnitude
scores, whose differences mean something (sums of z-scores over the pool), it also keeps every leaf
within ``near_best`` of the best (nothing tells them apart: the knee's place among them is
arbitrary) and returns a best leaf ``standout`` ahead of the second alone. A word budget
(``max_tokens``, :mod:`.budget`) reads on past the cut in the order of :func:`._page_ranking.budget_order`.

Where the global list looks (``focus.global_scope``): by default among the leaves of the
``focus.global_docs`` best documents of the first step (which ranks that many roots in its round
trip), so it reads a few thousand leaves whatever the index size; ``"collection"`` ranks every
leaf, a flat search of its own. With a filter that leaves at most ``focus.global_docs`` documents
(one document: the usual long-document setting), or no filter over at most that many, the two are the
same list, and without a filter the documents are checked on its hits rather than asked of the engine
(which tests the condition leaf by leaf: 48 filings, ~12 -> ~5 ms).

Branch method: rank the roots and cut them at the knee; then every inner node of the frontier is
ranked against its own children (all such requests of one level in one round trip): where the
parent wins it is a result, where children outrank it those children descend (leaves are results).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, Generator, List, Optional, Sequence, Set, Tuple

from drag_knee_retriever.config import FOCUS_METHODS, SearchConfig
from drag_knee_retriever.search._identity import NO_MATCH, IdentityMatch
from drag_knee_retriever.model._ids import span_leaf_ids
from drag_knee_retriever.common._knee import knee_index
from drag_knee_retriever.search._magnitude import combine_rankings, magnitude_ranking  # combine_rankings: also imported from here
from drag_knee_retriever.model._nodes import Trace, TraceCandidate, TraceStep
from drag_knee_retriever.search._global_list import GlobalList, global_list
from drag_knee_retriever.search._page_ranking import budget_order, budget_page_steps
from drag_knee_retriever.store.base import FilterSpec, RankedHit, RankRequest

log = logging.getLogger(__name__)

Ranker = Callable[[Sequence[RankRequest]], List[List[RankedHit]]]
Steps = Generator[List[RankRequest], List[List[RankedHit]], List[RankedHit]]


# How the settings are used lives here, with the walk (the config only holds and checks them).


def level_weights(schedule: Optional[Sequence[Tuple[float, float]]], level: int) -> Tuple[float, float]:
    """The (dense, sparse) weights of a tree level (0 = roots): the last pair serves deeper levels."""
    if not schedule:
        return (1.0, 1.0)
    return schedule[min(level, len(schedule) - 1)]


def focuses(config: SearchConfig) -> bool:
    """Whether the walk ends with a focus step (a knee method with a ``focus``)."""
    return config.focus is not None and config.method in FOCUS_METHODS


def knee_sensitivity(config: SearchConfig) -> float:
    """The sensitivity of the method's knee: 1.0 (the plain knee) for ``"knee"``, else ``sensitivity``."""
    return 1.0 if config.method == "knee" or config.sensitivity is None else config.sensitivity


def walk_sensitivity(config: SearchConfig) -> float:
    """The sensitivity of the walk's own knee cuts (roots and beam steps): with a focus step after
    them, ``focus.region_sensitivity`` (or the method's, if smaller)."""
    if focuses(config):
        return min(config.focus.region_sensitivity, knee_sensitivity(config))  # type: ignore[union-attr]
    return knee_sensitivity(config)


def _weights(config: SearchConfig, level: int) -> Tuple[float, float]:
    return level_weights(config.fusion.weights, level)


def trace_candidate(hit: RankedHit, rank: int) -> TraceCandidate:
    """A trace's record of ``hit`` at ``rank`` (with its tree version, which the final fetch checks)."""
    node = hit.node
    # Positional, in TraceCandidate's field order: a search records ~100 candidates, and keyword
    # arguments cost a dataclass __init__ three times as much (~1 us more per candidate).
    candidate = TraceCandidate(node.id, node.doc_id, node.level, node.is_leaf, str(node.span), hit.score, rank,
                               hit.dense_rank, hit.sparse_rank, node.parent_id)
    candidate.doc_hash = node.doc_hash
    return candidate


def walk_steps(config: SearchConfig, filters: FilterSpec, trace: Trace,
               identity: IdentityMatch = NO_MATCH) -> Steps:
    """The walk as a generator: yields each step's requests, receives their hits, returns the result.

    ``identity``: the documents the query names (:mod:`.identity`); their roots join the roots
    ranking and their scores count there (``config.identity_weight``) and in the magnitude focus
    (``config.focus.identity_weight``)."""
    roots, ranked, every = yield from _rank_roots(config, filters, trace, identity)
    if not roots:
        return []
    if config.method == "branch":
        return (yield from _branch(config, filters, trace, roots))
    regions = yield from _beam(config, filters, trace, roots)
    if focuses(config):
        return (yield from _focus(config, global_list(config, filters, ranked, every), filters, trace, regions,
                                  identity))
    return regions


def walk(rank: Ranker, config: SearchConfig, filters: FilterSpec, trace: Trace,
         identity: IdentityMatch = NO_MATCH) -> List[RankedHit]:
    """Run the configured method with a synchronous ranker; returns the chosen hits, fills ``trace``."""
    return _run(walk_steps(config, filters, trace, identity), rank)


def _root_scores(trace: Trace) -> Dict[str, float]:
    """Each ranked document's root score (kept or cut) in the walk's roots step."""
    if not trace.steps or trace.steps[0].kind != "roots":
        return {}
    return {c.doc_id: c.fused_score for c in trace.steps[0].candidates}


def _cut(config: SearchConfig, hits: List[RankedHit]) -> Tuple[int, Optional[int]]:
    """How many ranked hits survive before suppression, and the knee position if a knee was used."""
    if config.method == "fixed":
        return len(hits), None
    keep = knee_index([h.score for h in hits], walk_sensitivity(config)) if hits else 0
    return keep, keep


def _rank_roots(config: SearchConfig, filters: FilterSpec, trace: Trace, identity: IdentityMatch = NO_MATCH) -> Steps:
    """Rank the roots; returns the walk's start (cut at the knee), every root ranked (the documents
    the focus step's global list looks in, :func:`~._global_list.global_list`) and whether that is every root.

    With a focus step whose global list looks at the best documents (``focus.global_scope="roots"``)
    the same request ranks ``focus.global_docs`` roots; the walk reads its first ``max_roots``,
    which are the same hits a request of ``max_roots`` returns while ``focus.global_docs`` is at most
    ``MIN_SIDE_LIMIT`` (100: each side ranks that many before the fusion; ties are cut by id). The
    roots of the documents the query names (``identity``) join the walk's start as they would
    without the wider request, and their documents join the ranked ones.
    """
    limit = config.beam_width if config.method == "fixed" else config.max_roots
    scope = limit
    focus = config.focus
    if focuses(config) and focus.global_leaves and focus.global_scope == "roots":  # type: ignore[union-attr]
        scope = max(limit, focus.global_docs)  # type: ignore[union-attr]
    weights = _weights(config, 0)
    requests = [RankRequest(limit=scope, weights=weights, level=0, filters=filters)]
    named = identity.root_ids[:limit] if identity and config.identity_weight else ()
    if named:
        # The roots of the documents the query names, in the same round trip (the filters hold for
        # them too): a document named by its title ranks even where its text ranks below the limit.
        requests.append(RankRequest(limit=len(named), weights=weights, candidate_ids=tuple(named), level=0,
                                    filters=filters))
    answers = yield requests
    ranked = answers[0]
    every = len(ranked) < scope  # the request returned fewer roots than it asked for: all there are
    hits = ranked[:limit]
    if named:
        hits = with_identity(hits, answers[1], identity, config.identity_weight)
        ranked_docs = {r.node.doc_id for r in ranked}
        ranked = list(ranked) + [h for h in hits if h.node.doc_id not in ranked_docs]
    step = TraceStep(step=0, kind="roots", level=0, weights=weights)
    keep, knee_at = _cut(config, hits)
    if config.method == "fixed":
        keep = min(keep, config.beam_width)
    step.knee_index = knee_at
    for position, hit in enumerate(hits):
        candidate = trace_candidate(hit, position)
        candidate.outcome = "kept" if position < keep else "cut"
        if named:
            candidate.identity_score = identity.of(hit.node.doc_id)
        step.candidates.append(candidate)
    step.kept_count = min(keep, len(hits))
    trace.steps.append(step)
    return hits[:keep], ranked, every


def with_identity(ranked: Sequence[RankedHit], named: Sequence[RankedHit], identity: IdentityMatch,
                  weight: float) -> List[RankedHit]:
    """The roots ranking with the named documents' roots joined and each root's fused score raised
    by ``weight`` x its document's identity score; best first, ties by node id.

    A named root the text ranking did not return counts 0 from the text (as a list that does not
    hold an item adds nothing to its reciprocal-rank fusion): its identity alone places it."""
    by_id: Dict[str, RankedHit] = {h.node.id: h for h in ranked}
    for hit in named:
        if hit.node.id not in by_id:
            by_id[hit.node.id] = RankedHit(node=hit.node, score=0.0)
    scored = [RankedHit(node=h.node, score=h.score + weight * identity.of(h.node.doc_id), dense_rank=h.dense_rank,
                        sparse_rank=h.sparse_rank, dense_score=h.dense_score, sparse_score=h.sparse_score)
              for h in by_id.values()]
    scored.sort(key=lambda h: (-h.score, h.node.id))
    return scored


def _beam(config: SearchConfig, filters: FilterSpec, trace: Trace, beam: List[RankedHit]) -> Steps:
    expanded: Set[str] = set()
    for depth in range(1, config.max_depth + 1):
        parent_of: Dict[str, str] = {}
        for hit in beam:
            if hit.node.is_leaf or hit.node.id in expanded:
                continue
            expanded.add(hit.node.id)
            for child in hit.node.child_ids:
                # A malformed tree could point back at a node already walked: never revisit it.
                if child not in expanded:
                    parent_of.setdefault(child, hit.node.id)
        if not parent_of:
            break
        beam_ids = [h.node.id for h in beam]
        candidate_ids = tuple(dict.fromkeys(beam_ids + list(parent_of)))
        weights = _weights(config, depth)
        hits = (yield [RankRequest(limit=len(candidate_ids), weights=weights, candidate_ids=candidate_ids, filters=filters)])[0]
        step = TraceStep(step=len(trace.steps), kind="beam", level=depth, weights=weights)
        keep, knee_at = _cut(config, hits)
        step.knee_index = knee_at
        in_beam = set(beam_ids)
        suppressed: Dict[str, str] = {}
        new_beam: List[RankedHit] = []
        for position, hit in enumerate(hits):
            candidate = trace_candidate(hit, position)
            step.candidates.append(candidate)
            nid = hit.node.id
            full = config.method == "fixed" and len(new_beam) >= config.beam_width
            if position >= keep or full:
                candidate.outcome = "cut"
            elif nid in suppressed:
                candidate.outcome = "suppressed"
                candidate.suppressed_by = suppressed[nid]
            elif nid in in_beam:
                new_beam.append(hit)
                for child in hit.node.child_ids:
                    suppressed.setdefault(child, nid)
            else:
                new_beam.append(hit)
                suppressed.setdefault(parent_of[nid], nid)
        step.kept_count = len(new_beam)
        trace.steps.append(step)
        if not new_beam:  # cannot happen (the first walked hit is always kept); stay safe
            break
        stable = {h.node.id for h in new_beam} == in_beam
        beam = new_beam
        if stable:
            break
    else:
        log.warning("search stopped at max_depth=%d; the tree may be malformed", config.max_depth)
    return beam


@dataclass
class FocusPool:
    """The focus step's ranking of its pool (best first), and the global leaf rankings it read."""

    ranked: List[RankedHit]
    global_hits: List[RankedHit] = field(default_factory=list)
    # A word budget's deeper global ranking (the same request, longer), read in the same round trip.
    deeper: List[RankedHit] = field(default_factory=list)


def _focus_pool(config: SearchConfig, glob: GlobalList, filters: FilterSpec, trace: Trace,
                regions: List[RankedHit], deeper: Optional[int] = None,
                identity: IdentityMatch = NO_MATCH) -> Steps:
    """The focus step's pool ranked (a :class:`FocusPool`): the leaves under the walk's nodes (and
    the best leaves of the collection, with ``focus_global``), best first. ``deeper``: a word
    budget's global ranking this many leaves long, in the same round trip.

    ``glob``: the global list's filter and the documents its hits must be in
    (:class:`~._global_list.GlobalList`); the budget's deeper ranking takes it too, as it is the global list read further (its head is the global list, and
    with ``focus.global_scope="roots"`` it stays among the best documents' leaves instead of
    becoming a flat search of the whole collection). The region request keeps ``filters``."""
    assert config.focus.pool is not None
    leaves_of = {hit.node.id: span_leaf_ids(hit.node) for hit in regions}
    candidate_ids = tuple(dict.fromkeys(i for hit in regions for i in leaves_of[hit.node.id]))
    weights = _weights(config, config.max_depth)  # the leaves' weights: the deepest pair
    extra = ([RankRequest(limit=deeper, weights=weights, leaves_only=True, filters=glob.filters)]
             if deeper and config.focus.global_leaves else [])
    if config.focus.scores == "magnitude":
        return (yield from _magnitude_pool(config, glob, filters, trace, candidate_ids, weights, extra,
                                           identity))
    if config.focus.global_leaves:
        # The tree as evidence, not only as a gate: the leaves under the walk's regions and the
        # best leaves of the whole (filtered) collection are ranked in the same round trip, and
        # each leaf's score sums its reciprocal ranks in both lists. A leaf the walk's regions
        # hold and the global ranking likes wins; a strong leaf whose region the walk cut is
        # still a candidate.
        deepest = len(candidate_ids) if deeper else min(max(config.focus.pool, config.focus.global_leaves),
                                                          len(candidate_ids))
        answers = (yield [
            RankRequest(limit=deepest, weights=weights, candidate_ids=candidate_ids, filters=filters),
            RankRequest(limit=config.focus.global_leaves, weights=weights, leaves_only=True, filters=glob.filters),
        ] + extra)
        region_hits, global_hits = answers[0], glob.admit(answers[1])
        _global_step(trace, global_hits, weights)
        return FocusPool(combine_rankings([region_hits, global_hits], config.fusion.rrf_k), list(global_hits),
                         glob.admit(answers[2]) if extra else [])
    limit = len(candidate_ids) if deeper else min(config.focus.pool, len(candidate_ids))
    return FocusPool((yield [RankRequest(limit=limit, weights=weights, candidate_ids=candidate_ids,
                                         filters=filters)])[0])


def _global_step(trace: Trace, global_hits: Sequence[RankedHit], weights: Tuple[float, float]) -> None:
    glob = TraceStep(step=len(trace.steps), kind="global", level=max((h.node.level for h in global_hits), default=0),
                     weights=weights)
    glob.candidates.extend(trace_candidate(h, i) for i, h in enumerate(global_hits))
    glob.kept_count = len(global_hits)
    trace.steps.append(glob)


def focus_cut(config: SearchConfig, hits: Sequence[RankedHit]) -> int:
    """How many of the focus ranking's best leaves the cut keeps: the knee of the best
    ``focus_pool``; with magnitude scores (whose units mean something: sums of z-scores over the
    pool) at least every leaf within ``near_best`` of the best (up to ``near_best_limit``), and the
    best alone when it is ahead of the second by more than ``standout``."""
    keep = knee_index([h.score for h in hits[: config.focus.pool]], knee_sensitivity(config)) if hits else 0
    if config.focus.scores != "magnitude" or not hits:
        return keep
    best = hits[0].score
    if config.focus.near_best is not None:
        floor = best - config.focus.near_best
        band = 0
        for hit in hits[: config.focus.near_best_limit]:
            if hit.score < floor:
                break
            band += 1
        keep = max(keep, band)
    if config.focus.standout is not None and len(hits) > 1 and best - hits[1].score > config.focus.standout:
        keep = 1
    return keep


def _focus_depth(config: SearchConfig) -> int:
    """How many of the focus ranking's leaves the cut may keep (the trace lists them)."""
    assert config.focus.pool is not None
    if config.focus.scores == "magnitude" and config.focus.near_best is not None:
        return max(config.focus.pool, config.focus.near_best_limit)
    return config.focus.pool


def _identity_of(config: SearchConfig, identity: IdentityMatch) -> Optional[IdentityMatch]:
    """The match the focus step's leaves inherit (and the trace shows), or None where it does not count."""
    return identity if identity and config.focus.identity_weight and config.focus.scores == "magnitude" else None


def _focus(config: SearchConfig, glob: GlobalList, filters: FilterSpec, trace: Trace,
           regions: List[RankedHit], identity: IdentityMatch = NO_MATCH) -> Steps:
    """Rank the leaves under the walk's nodes together, cut at the knee, merge spread regions.

    ``glob``: the global list (see :class:`~._global_list.GlobalList`)."""
    focus = config.focus
    assert focus is not None
    pool = yield from _focus_pool(config, glob, filters, trace, regions, identity=identity)
    inherited = _identity_of(config, identity)
    hits = pool.ranked[: _focus_depth(config)]
    weights = _weights(config, config.max_depth)
    step = TraceStep(step=len(trace.steps), kind="focus", level=max((h.node.level for h in hits), default=0),
                     weights=weights)
    trace.steps.append(step)
    if not hits:
        # No leaf under the regions matched (a filter that parents pass and leaves do not): the
        # walk's nodes are the best answer there is.
        return regions
    keep = focus_cut(config, hits)
    step.knee_index = keep
    survivors = {h.node.id for h in hits[:keep]}
    leaves_of = {hit.node.id: span_leaf_ids(hit.node) for hit in regions}
    merged_into: Dict[str, str] = {}  # leaf id -> the region it is returned inside
    if focus.merge_ratio is not None:
        for region in regions:
            leaves = leaves_of[region.node.id]
            if len(leaves) > 1 and sum(i in survivors for i in leaves) / len(leaves) > focus.merge_ratio:
                merged_into.update((i, region.node.id) for i in leaves)
    by_id = {region.node.id: region for region in regions}
    results: List[RankedHit] = []
    placed: Set[str] = set()
    for position, hit in enumerate(hits):
        candidate = trace_candidate(hit, position)
        candidate.dense_score, candidate.sparse_score = hit.dense_score, hit.sparse_score
        if inherited is not None:
            candidate.identity_score = inherited.of(hit.node.doc_id)
        step.candidates.append(candidate)
        if position >= keep:
            candidate.outcome = "cut"
            continue
        region_id = merged_into.get(hit.node.id)
        if region_id is None:
            results.append(hit)
            continue
        candidate.outcome = "merged"
        candidate.suppressed_by = region_id
        if region_id not in placed:
            # The region takes the place and the score of its best surviving leaf (its cosine
            # too: the public score of a region returned whole is its best leaf's, search/_relevance.py).
            placed.add(region_id)
            results.append(RankedHit(node=by_id[region_id].node, score=hit.score, dense_score=hit.dense_score))
    step.kept_count = len(results)
    return results


@dataclass
class FocusRanking:
    """What a word budget fills from (:mod:`~drag_knee_retriever.search._budget`): the walk's nodes and
    the focus step's whole ranking of the leaves under them (and the global leaves), best first."""

    regions: List[RankedHit]
    ranked: List[RankedHit]
    step: Optional[TraceStep] = None  # the trace's focus step, whose outcomes the fill writes


#: A word budget's deeper global ranking: about one leaf per this many words of the budget (so that
#: short leaves, ~20-word paragraphs, can still fill it), at most ``_MAX_DEEPER`` leaves.
_WORDS_PER_DEEPER_LEAF = 8
_MAX_DEEPER = 2000


def budget_ranking_steps(config: SearchConfig, filters: FilterSpec, trace: Trace,
                         identity: IdentityMatch = NO_MATCH) -> Steps:
    """The walk of a knee method up to its focus step, and the order a word budget is filled in:
    returns a :class:`FocusRanking`.

    The same roots, beam and focus pool as :func:`walk_steps`; the leaves the focus cut keeps come
    first (so a budget starts with the default's own answer), then the global hybrid ranking of the
    leaves (``focus_global``'s list, read deeper in the same round trip) in its own order, then the
    rest of the pool. Why not the magnitude ranking past the cut: its siblings' term, which lifts a
    page whose passages all match, ranks a chosen page's other passages next, and a budget then
    spends its words on one page (measured: benchmarks/RESULTS.md, "budget"). A leaf keeps its
    focus score where the pool scored it; a leaf only the deeper ranking reached gets the pool's
    lowest."""
    assert focuses(config) and config.budget is not None
    roots, ranked_roots, every = yield from _rank_roots(config, filters, trace, identity)
    if not roots:
        return FocusRanking(regions=[], ranked=[])
    regions = yield from _beam(config, filters, trace, roots)
    deeper = min(max(config.focus.global_leaves or 0, math.ceil(config.budget / _WORDS_PER_DEEPER_LEAF)), _MAX_DEEPER)
    pool = yield from _focus_pool(config, global_list(config, filters, ranked_roots, every), filters, trace, regions,
                                  deeper=deeper, identity=identity)
    inherited = _identity_of(config, identity)
    keep = focus_cut(config, pool.ranked) if pool.ranked else 0
    ranked = budget_order(pool, keep)
    if config.focus.budget_order != "global":  # the cut's documents first (search/_page_ranking.py)
        ranked = yield from budget_page_steps(ranked, keep, config, deeper, filters)
    step = TraceStep(step=len(trace.steps), kind="focus", level=max((h.node.level for h in ranked), default=0),
                     weights=_weights(config, config.max_depth))
    step.knee_index = keep
    for position, hit in enumerate(ranked):
        candidate = trace_candidate(hit, position)
        candidate.dense_score, candidate.sparse_score = hit.dense_score, hit.sparse_score
        if inherited is not None:
            candidate.identity_score = inherited.of(hit.node.doc_id)
        candidate.outcome = "cut"
        step.candidates.append(candidate)
    trace.steps.append(step)
    return FocusRanking(regions=regions, ranked=ranked, step=step)


def _run(steps: Steps, rank: Ranker):
    try:
        requests = next(steps)
        while True:
            requests = steps.send(rank(requests))
    except StopIteration as done:
        return done.value


def budget_ranking(rank: Ranker, config: SearchConfig, filters: FilterSpec, trace: Trace,
                   identity: IdentityMatch = NO_MATCH) -> FocusRanking:
    """:func:`budget_ranking_steps` with a synchronous ranker."""
    return _run(budget_ranking_steps(config, filters, trace, identity), rank)


def _magnitude_pool(config: SearchConfig, glob: GlobalList, filters: FilterSpec, trace: Trace,
                    candidate_ids: Tuple[str, ...], weights: Tuple[float, float], extra: Sequence[RankRequest] = (),
                    identity: IdentityMatch = NO_MATCH) -> Steps:
    """The focus pool scored by magnitude (``focus_scores="magnitude"``), best first (a :class:`FocusPool`;
    ``extra``: a budget's deeper global request, answered as ``deeper``).

    One round trip: every leaf under the walk's regions and (``focus.global_leaves``) the best leaves
    ``glob`` admits, each with its dense cosine and BM25 score; the union is
    re-scored by :func:`~drag_knee_retriever.search._magnitude.magnitude_ranking`. Why the whole region
    and not its RRF top: the z-scores need the candidates' spread, and a leaf's siblings are its
    parent's evidence.
    """
    focus = config.focus
    assert focus is not None
    requests = []
    if candidate_ids:
        requests.append(RankRequest(limit=len(candidate_ids), weights=weights, candidate_ids=candidate_ids,
                                    filters=filters, with_scores=True))
    if focus.global_leaves:
        requests.append(RankRequest(limit=focus.global_leaves, weights=weights, leaves_only=True,
                                    filters=glob.filters, with_scores=True))
    if not requests:
        return FocusPool([])
    answers = yield requests + list(extra)
    region_hits = answers[0] if candidate_ids else []
    global_hits = glob.admit(answers[len(requests) - 1]) if config.focus.global_leaves else []
    if config.focus.global_leaves:
        _global_step(trace, global_hits, weights)
    ranked = magnitude_ranking(list(region_hits) + list(global_hits), (config.focus.sibling_weight or 0.0),
                               identity.scores if identity else None, config.focus.identity_weight,
                               _root_scores(trace) if config.focus.root_weight else None, config.focus.root_weight)
    return FocusPool(ranked, list(global_hits), glob.admit(answers[-1]) if extra else [])


def _branch(config: SearchConfig, filters: FilterSpec, trace: Trace, roots: List[RankedHit]) -> Steps:
    results: List[Tuple[int, RankedHit]] = []  # (root order, hit)
    frontier: List[Tuple[int, RankedHit]] = []
    for order, hit in enumerate(roots):
        (results if hit.node.is_leaf else frontier).append((order, hit))
    # Every node taken so far, leaf roots included: a malformed tree may list a root, or a node
    # another parent already took, as a child, and nothing may be returned twice.
    visited: Set[str] = {hit.node.id for hit in roots}
    taken_by: Dict[str, str] = {}  # child id -> the parent that took it (for the trace)
    for depth in range(1, config.max_depth + 1):
        if not frontier:
            break
        weights = _weights(config, depth)
        requests = []
        for _, hit in frontier:
            ids = tuple(dict.fromkeys((hit.node.id,) + tuple(c for c in hit.node.child_ids if c not in visited)))
            requests.append(RankRequest(limit=len(ids), weights=weights, candidate_ids=ids, filters=filters))
        responses = yield requests
        next_frontier: List[Tuple[int, RankedHit]] = []
        for (order, parent), hits in zip(frontier, responses):
            step = TraceStep(step=len(trace.steps), kind="branch", level=depth, parent_id=parent.node.id, weights=weights)
            # A child that another parent of this level took after the requests were made (a node
            # shared by two parents) is already returned: it does not compete here. On a
            # well-formed tree no child is shared, so ``own`` is ``hits``.
            taken = {h.node.id for h in hits if h.node.id != parent.node.id and h.node.id in visited}
            own = [h for h in hits if h.node.id not in taken]
            parent_position = next((i for i, h in enumerate(own) if h.node.id == parent.node.id), len(own))
            own_position = -1
            for position, hit in enumerate(hits):
                candidate = trace_candidate(hit, position)
                step.candidates.append(candidate)
                if hit.node.id in taken:
                    candidate.outcome = "suppressed"
                    candidate.suppressed_by = taken_by.get(hit.node.id)
                    continue
                own_position += 1
                if hit.node.id == parent.node.id:
                    if parent_position == 0:
                        results.append((order, hit))
                    else:
                        candidate.outcome = "suppressed"
                        candidate.suppressed_by = own[0].node.id
                elif own_position < parent_position:
                    visited.add(hit.node.id)
                    taken_by[hit.node.id] = parent.node.id
                    (results if hit.node.is_leaf else next_frontier).append((order, hit))
                else:
                    candidate.outcome = "suppressed"
                    candidate.suppressed_by = parent.node.id
            step.kept_count = sum(1 for c in step.candidates if c.outcome == "kept")
            trace.steps.append(step)
        frontier = next_frontier
    else:
        if frontier:
            log.warning("branch search stopped at max_depth=%d; the tree may be malformed", config.max_depth)
            results.extend(frontier)
    # Trees in the order of their roots; within a tree, by document position.
    results.sort(key=lambda item: (item[0], item[1].node.span.first_leaf))
    return [hit for _, hit in results]
