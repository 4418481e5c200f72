"""The focus step's global list: which leaves it ranks (its filter) and which of its hits count.

The global list ranks the leaves of the documents the roots ranking reached (``focus.global_scope
="roots"``), by a ``doc_id`` condition on those documents. Where the roots ranking holds every
document and no filter is set, that condition would admit every leaf of a committed tree, and the
engine tests it leaf by leaf (FinanceBench's 48 filings: the global list ~12 -> ~5 ms without it).
It is then checked on the hits instead: a leaf of a tree whose root the roots ranking cannot see
yet (a write cut between the root and its copy, search/_roots.py) stays out, as the condition kept it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, List, Optional, Sequence

from drag_knee_retriever.config import SearchConfig
from drag_knee_retriever.store.base import FilterSpec, RankedHit
from drag_knee_retriever.store.filters import any_of

__all__ = ["GlobalList", "global_list"]


@dataclass(frozen=True)
class GlobalList:
    """What the global list's requests filter by (``filters``) and, where the engine is not asked
    to, the documents its hits must belong to (``docs``; None: every hit the filter admits counts)."""

    filters: FilterSpec = ()
    docs: Optional[FrozenSet[str]] = None

    def admit(self, hits: Sequence[RankedHit]) -> List[RankedHit]:
        """``hits`` in the documents the list is for."""
        return list(hits) if self.docs is None else [h for h in hits if h.node.doc_id in self.docs]


def global_list(config: SearchConfig, filters: FilterSpec, ranked: Sequence[RankedHit], every: bool) -> GlobalList:
    """The global list of a walk whose roots ranking returned ``ranked`` (``every``: all the roots
    the filters admit): the user's filter, and (scope ``"roots"``) the ranked roots' documents, as a
    condition of the requests or, with ``every`` and no filter, checked on the hits (module docstring)."""
    if config.focus is None or config.focus.global_scope == "collection":
        return GlobalList(filters)
    docs = sorted({h.node.doc_id for h in ranked})
    if every and not filters:
        return GlobalList(filters, frozenset(docs))
    return GlobalList(tuple(filters) + (any_of("doc_id", docs),))
