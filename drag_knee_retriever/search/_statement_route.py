"""A question that names a financial statement, routed to that statement's pages of its document.

Inside a filing, a question that says where its evidence is ("... using the balance sheet", "capex
from the statement of cash flows") is ranked by its words against every passage, and a statement's
page is a table of figures whose passages share few of them: the notes and the MD&A that discuss
the same items outrank it. The build marks every node within a primary statement's page with the
statement's kind (``TreeNode.statement``, :mod:`drag_knee_retriever.build._statements`); here, when
the query names statements (:func:`~drag_knee_retriever.model._statements.named_statements`), one
more ranking over the leaves of those statements' pages in the search's best document (the
document of its best result) gives each named statement's best pages, and the best passage of each
page is returned first, before the walk's results. A query that names no statement searches as
before (no extra request); in an index without statement pages that ranking finds nothing and the
walk's results stand as they were.

``FocusConfig.statement_pages`` says how many pages of each named statement (a statement can run
over two pages); None turns the route off.
"""

from __future__ import annotations

from typing import Any, Dict, Generator, List, Optional, Sequence, Set

from drag_knee_retriever.config import SearchConfig
from drag_knee_retriever.model._nodes import Trace, TraceStep
from drag_knee_retriever.model._point_schema import STATEMENT
from drag_knee_retriever.model._statements import named_statements
from drag_knee_retriever.search._traversal import trace_candidate
from drag_knee_retriever.store.base import FilterSpec, RankedHit, RankRequest
from drag_knee_retriever.store.filters import any_of

__all__ = ["routed_first", "statement_route_steps"]

Steps = Generator[Any, Any, Any]

# How many of the named statements' leaves the route ranks per page it may return: a statement
# page holds a few passages, and the best passage of each of its best pages is wanted.
_LEAVES_PER_PAGE = 8


def statement_route_steps(config: SearchConfig, query: str, hits: Sequence[RankedHit], filters: FilterSpec,
                          weights: Any, trace: Trace) -> Steps:
    """The best passage of each of the best pages of every statement ``query`` names, in the document
    of ``hits[0]`` (yields one ranking request; returns the passages, best first, [] when the query
    names none or the route is off)."""
    pages = config.focus.statement_pages if config.focus is not None else None
    kinds = named_statements(query) if pages and hits else frozenset()
    if not pages or not kinds:
        return []
    document = hits[0].node.doc_id
    request = RankRequest(limit=pages * len(kinds) * _LEAVES_PER_PAGE, weights=weights, leaves_only=True,
                          filters=tuple(filters) + (any_of("doc_id", [document]), any_of(STATEMENT, sorted(kinds))),
                          with_scores=True)
    ranked: List[RankedHit] = (yield [request])[0]
    chosen: List[RankedHit] = []
    pages_of: Dict[str, Set[Optional[int]]] = {}
    for hit in ranked:
        kind = hit.node.statement or ""
        page = hit.node.span.first_page
        seen = pages_of.setdefault(kind, set())
        if page in seen or len(seen) >= pages:
            continue
        seen.add(page)
        chosen.append(hit)
    step = TraceStep(step=len(trace.steps), kind="statements", level=max((h.node.level for h in chosen), default=0),
                     weights=request.weights)
    for position, hit in enumerate(chosen):
        candidate = trace_candidate(hit, position)  # with its tree version: the final fetch checks it is live
        candidate.dense_score, candidate.sparse_score = hit.dense_score, hit.sparse_score
        step.candidates.append(candidate)
    step.kept_count = len(chosen)
    trace.steps.append(step)
    return chosen


def routed_first(routed: Sequence[RankedHit], hits: Sequence[RankedHit]) -> List[RankedHit]:
    """The routed passages first, then ``hits`` without them (a hit whose span holds a routed
    passage, a page or region returned whole, stays and the passage is not repeated)."""
    if not routed:
        return list(hits)
    covered = [h.node for h in hits if not h.node.is_leaf]
    extra = [r for r in routed if not any(n.doc_id == r.node.doc_id
                                          and n.span.first_leaf <= r.node.span.first_leaf <= n.span.last_leaf
                                          for n in covered)]
    ids = {r.node.id for r in extra}
    # A routed passage takes at least the best score of the results it goes in front of, so the
    # scores still fall along the returned order.
    top = max((h.score for h in hits), default=None)
    lifted = [r if top is None or r.score >= top else RankedHit(r.node, top, r.dense_rank, r.sparse_rank,
                                                                 r.dense_score, r.sparse_score) for r in extra]
    return lifted + [h for h in hits if h.node.id not in ids]
