"""A tree search under a filter that holds below the roots.

A page's own metadata (``page``, a LangChain / LlamaIndex chunk's keys, the members' source
documents ``drag_member_refs``) lives on that page's nodes, not on the root or on the sections that
span several pages; so do a node's ``level`` / ``is_leaf`` and its id. The walk starts at the roots
and ranks each step under the user's filter, so such a filter stopped it at the first step: no
root matched, and the search returned nothing while a flat search found the page.

Here such a filter steers the walk instead of gating it:

1. the seed: one ranking of the nodes the filter admits, whatever their level
   (:data:`SEED_LIMIT` best, hybrid, as the focus ranks leaves);
2. the walk runs under :func:`navigation_filter`: a node passes if the user's filter holds on it, or
   if it is an ancestor of a seed node (its id, from the seed node's path). So the walk reaches
   exactly the seeds' documents and sections, and every leaf it ranks still has to match;
3. :func:`keep_matching`: a result that is only a way down (an ancestor, whose span holds pages the
   filter excludes) is replaced by the seed nodes inside it, in the seed's order. Every result then
   satisfies the filter;
4. :func:`hide_ancestors`: the trace lists only nodes the filter admits, as without a seed (a filter
   keeps every other node out of a search's answer and of its explanation: tests/hardening's
   isolation property). The ways down the walk took are left out of it.

A filter on the documents' own metadata (``source``, ``doc_id``, a key every page of a document
agrees on) holds on the roots and keeps the plain walk, unchanged.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Set, Tuple

from drag_knee_retriever.model._ids import ROOT_PATH, node_id
from drag_knee_retriever.store.base import FilterSpec, RankedHit, RankRequest
from drag_knee_retriever.store.filters import ALL, ANY, IDS, Condition, filter_fields

__all__ = ["SEED_LIMIT", "hide_ancestors", "keep_matching", "navigation_filter", "reaches_below_roots", "seed_request"]

#: How many of the best nodes a filter admits steer the walk (their documents and sections are the
#: walk's reach). The focus step ranks 40-100 leaves; a few times that leaves room for documents
#: the walk ranks lower than a flat search would.
SEED_LIMIT = 200

#: The adapters' own page-level keys (a page's members and the source documents they came from).
_MEMBER_KEY_PREFIX = "drag_member"


def reaches_below_roots(spec: FilterSpec, page_keys: Set[str]) -> bool:
    """Whether a parsed filter can hold on a node below a root while failing on the root: it names
    a node's id, ``level`` / ``is_leaf``, a key some document has on its pages only (``page_keys``:
    the roots' ``drag_page_keys``) or the adapters' member keys."""
    if filter_fields(spec, (IDS,)):
        return True
    for field in filter_fields(spec):
        if field in ("level", "is_leaf"):
            return True
        if field.startswith("metadata."):
            key = field[len("metadata."):].split(".")[0]
            if key in page_keys or key.startswith(_MEMBER_KEY_PREFIX):
                return True
    return False


def seed_request(spec: FilterSpec, weights: Tuple[float, float]) -> RankRequest:
    """The seed: the best nodes of any level the filter admits (read whole: their paths name their ancestors)."""
    return RankRequest(limit=SEED_LIMIT, weights=weights, filters=spec)


def _ancestor_ids(node: Any) -> List[str]:
    parts = (node.path or "").split(".")
    if not node.path or parts[0] != ROOT_PATH:
        return [node.parent_id] if node.parent_id else []
    return [node_id(node.doc_id, ".".join(parts[:i])) for i in range(1, len(parts))]


def navigation_filter(spec: FilterSpec, seeds: Sequence[RankedHit]) -> Tuple[FilterSpec, Set[str]]:
    """The walk's filter (the user's, or an ancestor of a seed) and the ancestors' ids."""
    seed_ids = {h.node.id for h in seeds}
    ancestors = {a for h in seeds for a in _ancestor_ids(h.node)} - seed_ids
    user = spec[0] if len(spec) == 1 else Condition(ALL, "", tuple(spec))
    if not ancestors:
        return tuple(spec), ancestors
    return (Condition(ANY, "", (Condition(IDS, "", tuple(sorted(ancestors))), user)),), ancestors


def keep_matching(hits: Sequence[RankedHit], ancestors: Set[str], seeds: Sequence[RankedHit]) -> List[RankedHit]:
    """The walk's results with every ancestor (a way down, not a match) replaced by the seed nodes
    inside its span, in the seed's order, each once."""
    if not any(h.node.id in ancestors for h in hits):
        return list(hits)
    returned = {h.node.id for h in hits if h.node.id not in ancestors}
    inside: Dict[str, List[RankedHit]] = {}
    for hit in hits:
        if hit.node.id in ancestors:
            span = hit.node.span
            inside[hit.node.id] = [s for s in seeds if s.node.doc_id == hit.node.doc_id and
                                   span.first_leaf <= s.node.span.first_leaf and s.node.span.last_leaf <= span.last_leaf]
    out: List[RankedHit] = []
    for hit in hits:
        for replacement in inside.get(hit.node.id, [hit]):
            if replacement.node.id not in returned or replacement is hit:
                returned.add(replacement.node.id)
                out.append(replacement)
    # A seed inside two returned ancestors comes once; a seed that was already a result stays where it was.
    seen: Set[str] = set()
    return [h for h in out if not (h.node.id in seen or seen.add(h.node.id))]


def hide_ancestors(trace: Any, ancestors: Set[str]) -> None:
    """Drop the ancestors (ways down the filter does not admit) from the trace's candidates; a
    step's knee position then counts the admitted candidates above it."""
    if not ancestors:
        return
    for step in trace.steps:
        kept = [c for c in step.candidates if c.node_id not in ancestors]
        if len(kept) != len(step.candidates):
            if step.knee_index is not None:
                step.knee_index = sum(1 for c in step.candidates[:step.knee_index] if c.node_id not in ancestors)
            step.candidates[:] = kept
            step.kept_count = min(step.kept_count, sum(1 for c in kept if c.outcome in ("kept", "merged")))
