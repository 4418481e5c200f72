"""A result's context: the text of every hit, and the check that its document is still live.

One fetch per search brings the leaves under the inner nodes returned and every document's root
(and, after a light walk, the hits' own nodes whole): the ids of :func:`final_fetch_ids`, read
in one request, then :func:`finish_context`. The search pipeline (:mod:`~drag_knee_retriever.search._pipeline`)
runs those two steps after ranking; :func:`fetch_context` runs them against a store, for
evaluation code running its own walk, so that the cost and the liveness rule are the same.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Sequence, Set, Tuple

from drag_knee_retriever.model._ids import root_ids, span_leaf_ids
from drag_knee_retriever.model._nodes import TreeNode
from drag_knee_retriever.store.base import NodeStore, RankedHit

log = logging.getLogger(__name__)

Context = Tuple[List[Any], Dict[str, str]]


def span_leaf_map(nodes: Sequence[TreeNode]) -> Dict[str, List[str]]:
    """For each inner node, the ids of the leaves it covers (leaf ids follow from the ordinals)."""
    return {n.id: list(span_leaf_ids(n)) for n in nodes if not n.is_leaf}


def context_ids(nodes: Sequence[TreeNode], *, with_nodes: bool = False) -> List[str]:
    """The ids of one context fetch: the leaves under the inner nodes and every document's root.

    ``with_nodes``: the nodes themselves too (a light walk holds them without their text).
    """
    ids = {i for leaf_ids in span_leaf_map(nodes).values() for i in leaf_ids}
    if with_nodes:
        ids.update(n.id for n in nodes)
    for doc_id in {n.doc_id for n in nodes}:
        ids.update(root_ids(doc_id))  # the root, whichever it is
    return sorted(ids)


def live_with_text(hits: Sequence[Any], fetched: Sequence[TreeNode], *, refresh: bool = False) -> Context:
    """Keep the hits whose document still has the same committed tree, with their span text.

    A writer may replace or delete a document while a search walks it: a hit is kept only if its
    document's root (fetched now) carries the hit's version and every leaf of its span does too,
    so every result is consistent with the state at this final read. ``refresh``: the hits' own
    nodes were fetched too (a light walk): each must carry the hit's version as well, and the
    fetched, whole node replaces the walk's light one.
    """
    by_id = {n.id: n for n in fetched}
    live = {(n.doc_id, n.doc_hash) for n in fetched if n.level == 0}
    wanted = span_leaf_map([h.node for h in hits])
    kept, texts = [], {}
    for hit in hits:
        node = hit.node
        leaf_ids = wanted.get(node.id, ())
        whole = by_id.get(node.id) if refresh else node
        if whole is None or whole.doc_hash != node.doc_hash or (node.doc_id, node.doc_hash) not in live or any(
            i not in by_id or by_id[i].doc_hash != node.doc_hash for i in leaf_ids
        ):
            log.debug("dropped %s of %s: its document changed during the search", node.id, node.doc_id)
            continue
        if whole is not node:
            hit = RankedHit(node=whole, score=hit.score, dense_rank=hit.dense_rank, sparse_rank=hit.sparse_rank)
            node = whole
        kept.append(hit)
        texts[node.id] = node.text if node.is_leaf else "\n\n".join(by_id[i].text for i in leaf_ids)
    return kept, texts


def final_fetch_ids(hits: Sequence[Any], refresh: bool, trace: Any) -> List[str]:
    """A search's final fetch: the hits (``refresh``), the leaves under them, and the root of each
    document version the hits and the trace's leaf rankings hold (:func:`root_ids_to_read`)."""
    nodes = [h.node for h in hits]
    ids = {i for leaf_ids in span_leaf_map(nodes).values() for i in leaf_ids}
    if refresh:
        ids.update(n.id for n in nodes)
    versions: Dict[str, Set[str]] = {}
    parented: Set[Tuple[str, str]] = set()
    for n in nodes:
        versions.setdefault(n.doc_id, set()).add(n.doc_hash)
        if n.parent_id is not None:
            parented.add((n.doc_id, n.doc_hash))
    for step in (trace.steps if trace is not None else ()):
        unrooted = step.kind in _UNROOTED
        for c in step.candidates:
            if unrooted:
                versions.setdefault(c.doc_id, set()).add(c.doc_hash)
            if c.parent_id is not None:
                parented.add((c.doc_id, c.doc_hash))
    for doc_id, hashes in versions.items():
        ids.update(root_ids_to_read(doc_id, hashes, parented))
    return sorted(ids)


def root_ids_to_read(doc_id: str, versions: Set[str], parented: Set[Tuple[str, str]]) -> Tuple[str, ...]:
    """The ids that can hold the root of ``doc_id`` in each of its ``versions`` (doc hashes).

    A root is its document's inner root or, in a one-leaf document, that leaf (:func:`root_ids`).
    A version of which a node with a parent was seen (``parented``: (doc_id, doc_hash) pairs) has
    an inner root, and the hash names the whole tree (content, settings and summariser), so its
    first leaf is no root of it: then only the inner root's id is read. Why: a search's trace
    holds leaves of ~10 documents, and reading each one's first leaf whole (its text) doubled the
    final fetch.
    The liveness check sees the same roots either way."""
    ids = root_ids(doc_id)
    if all((doc_id, h) in parented for h in versions):
        return ids[:1]
    return ids


def unrooted_docs(trace: Any) -> Set[str]:
    """Documents of the trace's leaf-ranking steps ("global", "focus", "statements"): a leaf ranking reaches
    leaves without passing their root, so their documents' roots are read at the final fetch."""
    if trace is None:
        return set()
    return {c.doc_id for s in trace.steps if s.kind in _UNROOTED for c in s.candidates}


_UNROOTED = ("global", "focus", "statements")


def prune_trace(trace: Any, fetched: Sequence[TreeNode]) -> None:
    """Drop the leaf-ranking steps' candidates whose document has no committed tree of their version
    (a write or delete cut short leaves rootless nodes a global ranking can see): the trace shows
    nothing a search could not return."""
    if trace is None:
        return
    live = {(n.doc_id, n.doc_hash) for n in fetched if n.level == 0}
    for step in trace.steps:
        if step.kind in _UNROOTED:
            kept = [c for c in step.candidates if (c.doc_id, c.doc_hash) in live]
            if len(kept) != len(step.candidates):
                log.debug("trace: %d candidates of uncommitted trees dropped", len(step.candidates) - len(kept))
                step.candidates[:] = kept


def finish_context(hits: Sequence[Any], fetched: Sequence[TreeNode], *, refresh: bool = False,
                   trace: Any = None) -> Context:
    """What the final fetch (the nodes of :func:`final_fetch_ids`) makes of the hits: the trace
    pruned (:func:`prune_trace`), the live hits and their texts (:func:`live_with_text`)."""
    prune_trace(trace, fetched)
    return live_with_text(hits, fetched, refresh=refresh)


def fetch_context(store: NodeStore, hits: Sequence[Any], *, refresh: bool = False, trace: Any = None) -> Context:
    """One round trip: the live hits (whole nodes when ``refresh``) and their texts by node id.

    ``trace``: also check the documents of its leaf-ranking steps (see :func:`prune_trace`). A
    search runs the same two steps in its pipeline (:mod:`drag_knee_retriever.search._pipeline`)."""
    fetched = store.retrieve(final_fetch_ids(hits, refresh, trace))
    return finish_context(hits, fetched, refresh=refresh, trace=trace)
