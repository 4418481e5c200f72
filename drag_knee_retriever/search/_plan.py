"""A validated search (:class:`SearchPlan`) and the steps on it that need no I/O.

:func:`build_plan` checks everything about a search before any work is done (the query, the
per-search settings, the filters' syntax); the plan then carries the settings, the parsed filters,
the trace and a stopwatch through the pipeline (:mod:`.pipeline`), which calls its methods to cap,
pack and score the results.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from drag_knee_retriever.search._budget import WORDS, BudgetFill, BudgetUnit, FillSteps, fill_steps, mark_trace, pack
from drag_knee_retriever.config import SEARCH_OPTIONS, SearchConfig
from drag_knee_retriever.search._context import Context, live_with_text, prune_trace, unrooted_docs
from drag_knee_retriever.errors import ConfigError, InvalidQueryError, InvalidSettingError
from drag_knee_retriever.model._nodes import Trace, check_unicode
from drag_knee_retriever.search._relevance import monotone_scores, relevance_scores
from drag_knee_retriever.model._settings import unexpected_keywords, warn_deprecated
from drag_knee_retriever.store.filters import parse_filters
from drag_knee_retriever.search._traversal import FocusRanking, focuses

log = logging.getLogger(__name__)

__all__ = ["MAX_QUERY_CHARS", "SEARCH_ARGUMENTS", "SearchPlan", "build_plan", "validate_query"]

#: search()'s keywords besides its per-search settings (SEARCH_OPTIONS).
SEARCH_ARGUMENTS = ("filters", "config", "query_vectors", "self_query", "fill")

# Longer queries are cut (a dense model reads at most a few hundred tokens anyway).
MAX_QUERY_CHARS = 8192


@dataclass
class SearchPlan:
    """A validated search: its settings, parsed filters, trace, and a stopwatch."""

    query: str
    settings: SearchConfig
    filters: Any
    trace: Trace
    started: float
    # The store's request count when the search began (the pipeline's first read), for the trace.
    requests_before: int = 0
    last: float = 0.0
    # Return max_results results where that many match (the stores' k: a count, not a cap): the
    # method's own, then the best leaves no result covers (search/_pipeline.py, _fill).
    fill: bool = False
    # node id -> the result's public score in [0, 1] (search/_relevance.py); filled by score().
    public: Dict[str, float] = field(default_factory=dict)
    # What counts the budget: words for max_words, the index's tokenizer for max_tokens.
    unit: BudgetUnit = WORDS
    # node id -> the result's own dense cosine in [0, 1] (what the public score is made monotone from).
    cosine: Dict[str, float] = field(default_factory=dict)

    def score(self, hits: Sequence[Any], answered: Sequence[Any]) -> None:
        """Give every hit its public score: the cosines made non-increasing along the hits' order
        (search/_relevance.py), which is the order returned; the walk's raw scores stay on the hits."""
        ids = [h.node.id for h in hits]
        cosines = relevance_scores(hits, answered)
        self.cosine = dict(zip(ids, cosines))
        self.public = dict(zip(ids, monotone_scores(cosines)))
        self.mark("score")

    def narrowed(self, extra: Any) -> "SearchPlan":
        """The same search with ``extra`` conditions joined to its filters (a fresh trace)."""
        return SearchPlan(query=self.query, settings=self.settings, filters=tuple(self.filters) + tuple(extra),
                          trace=Trace(query=self.query, method=self.settings.method, timings_ms=dict(self.trace.timings_ms)),
                          requests_before=self.requests_before, started=self.started, last=self.last, unit=self.unit,
                          fill=self.fill)

    def cap(self, hits: Sequence[Any]) -> List[Any]:
        """The walk's results within ``min_score`` (on the public score) and ``max_results``
        (the method's best by its own raw score kept)."""
        out = list(hits)
        if self.settings.min_score is not None:
            out = [h for h in out if self.public.get(h.node.id, 0.0) >= self.settings.min_score]
        if self.settings.max_results is not None and len(out) > self.settings.max_results:
            keep = set(id(h) for h in sorted(out, key=lambda h: -h.score)[: self.settings.max_results])
            out = [h for h in out if id(h) in keep]
        return out

    @property
    def fills_budget(self) -> bool:
        """A budget over a knee method's focus ranking (the other methods pack their results)."""
        return self.settings.budget is not None and focuses(self.settings)

    def fill_steps(self, ranking: FocusRanking) -> FillSteps:
        """The budget fill's reads, bringing also the roots the trace's leaf rankings need."""
        assert self.settings.budget is not None
        assert self.settings.focus is not None
        return fill_steps(ranking.ranked, ranking.regions, self.settings.budget, self.settings.focus.merge_ratio,
                          root_docs=sorted(unrooted_docs(self.trace)), count=self.unit.count)

    def budget_context(self, ranking: FocusRanking, filled: BudgetFill) -> Context:
        """The live hits of a fill (within ``min_score`` / ``max_results``) and their texts; the
        focus step of the trace says which leaves were kept, merged or left out."""
        assert self.settings.budget is not None
        prune_trace(self.trace, filled.fetched)
        hits, texts = live_with_text(self.cap(filled.hits), filled.fetched, refresh=True)
        if filled.cut_to_budget:
            texts = {i: self.unit.cut(t, self.settings.budget) for i, t in texts.items()}
        if ranking.step is not None:
            mark_trace(ranking.step, hits)
        return hits, texts

    def packed(self, context: Context) -> Context:
        """The results within the budget, if one is set (see :func:`~.budget.pack`)."""
        if self.settings.budget is None:
            return context
        return pack(context[0], context[1], self.settings.budget, self.unit)

    def mark(self, phase: str) -> None:
        now = time.perf_counter()
        self.trace.timings_ms[phase] = (now - (self.last or self.started)) * 1e3
        self.last = now


def validate_query(query: Any) -> str:
    """The query as searched: a non-empty string of valid Unicode, cut to :data:`MAX_QUERY_CHARS`."""
    if not isinstance(query, str):
        raise InvalidQueryError(f"query must be a string, got {type(query).__name__}.")
    if not query.strip():
        raise InvalidQueryError("query is empty; give some words to search for.")
    check_unicode(query, "query", InvalidQueryError)
    if len(query) > MAX_QUERY_CHARS:
        log.warning("query of %d characters cut to %d", len(query), MAX_QUERY_CHARS)
        query = query[:MAX_QUERY_CHARS]
    return query


def build_plan(query: Any, base: SearchConfig, filters: Any, options: Mapping[str, Any],
               token_unit: Optional[Callable[[], BudgetUnit]] = None, *, fill: bool = False) -> SearchPlan:
    """Validate everything about a search that needs no I/O (the filter keys are the pipeline's
    first step): ``base`` with ``options`` (the per-search settings) applied. ``token_unit`` gives
    the unit of a ``max_tokens`` budget (the index's tokenizer; asked only when one is set).

    Called by ``DragKneeIndex.search`` / ``asearch`` themselves: the deprecation warning of
    ``fusion_weights=`` points at their caller."""
    started = time.perf_counter()
    query = validate_query(query)
    unknown = set(options) - set(SEARCH_OPTIONS)
    if unknown:
        raise unexpected_keywords("search()", sorted(unknown), SEARCH_OPTIONS + SEARCH_ARGUMENTS,
                                  "the per-search settings are " + ", ".join(
                                      n for n in SEARCH_OPTIONS if n != "fusion_weights")
                                  + ", and filters, config and query_vectors.")
    overrides = dict(options)
    fusion_weights = overrides.pop("fusion_weights", None)
    if fusion_weights is not None:
        warn_deprecated("search(fusion_weights=...)", "search(fusion=FusionConfig(weights=...))", stacklevel=4)
        if overrides.get("fusion") is not None:
            raise InvalidQueryError("Give fusion= or fusion_weights=, not both.")
        try:
            overrides["fusion"] = replace(base.fusion, weights=fusion_weights)
        except ConfigError as exc:
            raise InvalidSettingError(str(exc)) from None
    settings = base.with_overrides(**overrides)
    spec = parse_filters(filters)
    if not isinstance(fill, bool):
        raise InvalidQueryError(f"fill must be True or False, got {fill!r}.")
    if fill and settings.max_results is None:
        raise InvalidQueryError("fill=True returns max_results results: give max_results (the count) too.")
    unit = WORDS
    if settings.max_tokens is not None:
        if token_unit is None:
            raise InvalidSettingError("max_tokens needs a tokenizer to count model tokens and none is known here; "
                                      "give max_words= (a budget in words) instead.")
        unit = token_unit()
    return SearchPlan(query=query, settings=settings, filters=spec, trace=Trace(query=query, method=settings.method),
                      started=started, unit=unit, fill=fill)
