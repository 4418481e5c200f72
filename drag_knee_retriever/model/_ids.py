"""Every id the package derives: a leaf's, an inner node's, a document's root, the bookkeeping point's.

Ids are uuid5 strings, pure functions of the document id and the node's place in its tree (a
leaf's ordinal, an inner node's path from the root, ``"r.0.2"``), so re-ingesting the same document
gives the same ids and a search derives the ids it needs (the leaves under a region, a document's
root) instead of fetching them. The builder names nodes with these functions; the walk, the
context fetch and the ingest derive ids with them; the engines store the bookkeeping point under
:data:`META_ID`. Nothing here imports the rest of the package.
"""

from __future__ import annotations

import functools
import uuid
from typing import TYPE_CHECKING, Tuple

if TYPE_CHECKING:
    from drag_knee_retriever.model._nodes import TreeNode

_NAMESPACE = uuid.UUID("6f1c2f0e-3d2b-5a57-9a3c-6b1d7e0d4c11")

#: The path of a document's root (inner nodes below it are ``"r.0"``, ``"r.0.2"``, ...).
ROOT_PATH = "r"

#: The id of a collection's bookkeeping point (which model built it); the same in every engine.
META_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "drag-knee-retriever/collection-meta"))
#: Its copy, written with it: the model identity survives the loss of either (see store/integrity.py).
META_COPY_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "drag-knee-retriever/collection-meta-copy"))
#: Both bookkeeping points, in the order they are read.
META_IDS = (META_ID, META_COPY_ID)


# Ids are pure functions of their arguments, and a search derives the same ones query after query
# (the leaves under the walk's regions, the result's leaves and roots): a uuid5 hash costs ~3 us,
# a cache hit ~0.1 us. ~64k leaf ids (a few MB) cover the hot documents of a large index.
@functools.lru_cache(maxsize=1 << 16)
def leaf_id(doc_id: str, ordinal: int) -> str:
    """The id of a document's leaf number ``ordinal`` (0-based)."""
    return str(uuid.uuid5(_NAMESPACE, f"{doc_id}\x1fleaf\x1f{ordinal}"))


@functools.lru_cache(maxsize=1 << 12)
def node_id(doc_id: str, path: str) -> str:
    """The id of a document's inner node at ``path`` (e.g. ``"r.0.2"``)."""
    return str(uuid.uuid5(_NAMESPACE, f"{doc_id}\x1fnode\x1f{path}"))


def root_ids(doc_id: str) -> Tuple[str, str]:
    """The two ids a document's root can have: its inner root's, or its only leaf's (a one-leaf
    document's root is that leaf). Fetching both finds the root, whichever it is."""
    return node_id(doc_id, ROOT_PATH), leaf_id(doc_id, 0)


def span_leaf_ids(node: "TreeNode") -> Tuple[str, ...]:
    """The ids of the leaves a :class:`~drag_knee_retriever.model._nodes.TreeNode` covers, in document
    order (a leaf: its own id). Leaf ids follow from the document and the ordinal, so they are
    derived, never fetched."""
    if node.is_leaf:
        return (node.id,)
    return tuple(leaf_id(node.doc_id, i) for i in range(node.span.first_leaf, node.span.last_leaf + 1))
