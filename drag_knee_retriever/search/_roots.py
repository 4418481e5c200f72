"""What a search reads from the documents' roots, kept between searches until a write.

Roots carry their document's metadata: the documents' identities (:mod:`~drag_knee_retriever.search._identity`,
one table per ``identity_keys`` setting), their (doc_id, metadata) pairs (what a self-query model is
shown) and the metadata keys seen (the unknown-filter-key check). Each is read once (one scroll of
the roots, without text) and kept; :meth:`RootCache.forget` drops them after this index's writes,
and a search that meets a root the identities do not know (another process wrote) drops them too.

The reads are generators of :mod:`.ops` operations (:data:`~.ops.SCROLL_ROOTS`), run by a driver.
"""

from __future__ import annotations

from typing import Any, Dict, Generator, List, Mapping, Optional, Sequence, Tuple, Union

from drag_knee_retriever.errors import InvalidQueryError
from drag_knee_retriever.search._identity import NO_MATCH, IdentityIndex, IdentityMatch, identity_fields
from drag_knee_retriever.store.filters import filter_fields
from drag_knee_retriever.search._ops import SCROLL_ROOTS
from drag_knee_retriever.search._plan import SearchPlan

__all__ = ["RootCache"]

Steps = Generator[Any, Any, Any]


class RootCache:
    """The roots' identities, metadata and metadata keys of one index (see the module docstring)."""

    def __init__(self) -> None:
        # Metadata keys seen in indexed documents (for the unknown-filter-key check). Only grows:
        # a document being replaced by a concurrent writer must not make its keys "unknown".
        self.metadata_keys: frozenset = frozenset()
        # The keys some document has on its pages only (its roots' drag_page_keys): a filter naming
        # one holds below the roots (search/_leaf_filters.py). Grows with metadata_keys.
        self.page_keys: frozenset = frozenset()
        # The documents' identities, per identity_keys setting, read from the roots on first use.
        self.identities: Dict[Union[str, Sequence[str], None], IdentityIndex] = {}
        self.roots_meta: Optional[List[Tuple[str, Mapping[str, Any]]]] = None

    def forget(self) -> None:
        """Drop the identities and the roots' metadata (not the keys seen, which only grow)."""
        self.identities = {}
        self.roots_meta = None

    def root_metadata(self) -> Steps:
        """Every document's (doc_id, metadata), read from the roots once and kept until a write."""
        if self.roots_meta is None:
            self.roots_meta = [(r.doc_id, r.metadata) for r in (yield SCROLL_ROOTS)]
        return self.roots_meta

    def metadata_values(self, keys: Optional[Sequence[str]] = None) -> Steps:
        """The values the documents hold for each key that can name a document (see
        ``DragKneeIndex.metadata_values``)."""
        return identity_fields((yield from self.root_metadata()), keys)

    def identity_match(self, plan: SearchPlan) -> Steps:
        """The documents the query names (search/_identity.py), or none when identity is switched off."""
        settings = plan.settings
        if not (settings.identity_weight or (settings.focus is not None and settings.focus.identity_weight)):
            return NO_MATCH
        table = self.identities.get(settings.identity_keys)
        if table is None:
            # Roots carry their document's metadata; read once (without text) and kept until a write.
            roots = yield SCROLL_ROOTS
            table = IdentityIndex.from_roots(roots, settings.identity_keys)
            self.roots_meta = [(r.doc_id, r.metadata) for r in roots]
            self.identities[settings.identity_keys] = table
        match: IdentityMatch = table.match(plan.query, limit=settings.max_roots or settings.beam_width or 20,
                                           coverage=settings.identity_coverage)
        plan.mark("identity")
        return match

    def check_identities(self, plan: SearchPlan) -> None:
        """Forget the identities when the walk met a root they do not know (another process wrote)."""
        table = self.identities.get(plan.settings.identity_keys)
        if table is None or not plan.trace.steps:
            return
        if any(not table.knows(c.doc_id, c.doc_hash) for c in plan.trace.steps[0].candidates):
            self.forget()

    def check_filter_keys(self, spec: Any) -> Steps:
        """A filter naming a metadata key no indexed document has is a typo: say so, with the keys
        there are (the roots are read again before refusing, for documents added since)."""
        wanted = {f[len("metadata."):].split(".")[0] for f in filter_fields(spec) if f.startswith("metadata.")}
        if not wanted:
            return
        if wanted <= self.metadata_keys:
            return
        roots = yield SCROLL_ROOTS
        page_keys = frozenset(k for root in roots for k in (root.metadata.get("drag_page_keys") or ()))
        self.page_keys = self.page_keys | page_keys
        self.metadata_keys = self.metadata_keys | page_keys | frozenset(k for root in roots for k in root.metadata)
        unknown = sorted(wanted - self.metadata_keys)
        if not unknown:
            return
        raise InvalidQueryError(
            f"filter key(s) {unknown} are in no indexed document's metadata; the keys are "
            f"{sorted(k for k in self.metadata_keys if not k.startswith('drag_'))[:20]} (and doc_id, level, is_leaf)."
        )
