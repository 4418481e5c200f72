"""The focus step's global list: which leaves it ranks (its filter) and which of its hits count.

The global list ranks the leaves of the documents the roots ranking reached (``focus.global_scope
="roots"``), by a ``doc_id`` condition on those documents. Where the roots ranking holds every
document and no filter is set, that condition would admit every leaf of a committed tree, and the
engine tests it leaf by leaf (FinanceBench's 48 filings: the global list ~12 -> ~5 ms without it).
It is then checked on the hits instead: a leaf of a tree whose root the roots ranking cannot see
yet (a write cut between the root and its copy, search/_roots.py) stays out, as the condition kept it.
"""

from __future__ import annotations

from typing import FrozenSet, List, Optional, Sequence

from drag_knee_retriever.config import SearchConfig
from drag_knee_retriever.store.base import FilterSpec, RankedHit
from drag_knee_retriever.store.filters import any_of

__all__ = ["GlobalFilters", "admitted", "global_filters"]


class GlobalFilters(tuple):
    """The global list's filter, and (``docs``) the documents its hits must belong to where the
    filter leaves that condition to be checked on the hits (:func:`global_filters`)."""

    docs: Optional[FrozenSet[str]] = None


def global_filters(config: SearchConfig, filters: FilterSpec, ranked: Sequence[RankedHit],
                   every: bool = False) -> FilterSpec:
    """The global list's filter: the user's, and (scope ``"roots"``) the ranked roots' documents.

    Where those are ``every`` document and no filter is set, the documents are checked on the hits
    instead (:func:`admitted`; the module docstring says why)."""
    if config.focus is None or config.focus.global_scope == "collection":
        return filters
    docs = sorted({h.node.doc_id for h in ranked})
    if every and not filters:
        gated = GlobalFilters(filters)
        gated.docs = frozenset(docs)
        return gated
    return tuple(filters) + (any_of("doc_id", docs),)


def admitted(hits: Sequence[RankedHit], global_filters: FilterSpec) -> List[RankedHit]:
    """The global list's hits in the documents it is for (all of them unless the filter says)."""
    docs = getattr(global_filters, "docs", None)
    return list(hits) if docs is None else [h for h in hits if h.node.doc_id in docs]
