"""What a stored point holds: a node's payload, a light node, the bookkeeping point, hit order.

Shared by every engine so that their points are the same bytes and their hits the same order.
"""

from __future__ import annotations

import operator
import uuid
from typing import Any, Dict, List, Mapping, Optional

from ..nodes import Span, TreeNode
from .base import READ_VERSION, SCHEMA_VERSION, RankedHit

#: The id of the collection's bookkeeping point (which model built it); the same in every engine.
META_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "drag-knee-retriever/collection-meta"))
#: Its copy, written with it: the model identity survives the loss of either (see store/integrity.py).
META_COPY_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "drag-knee-retriever/collection-meta-copy"))
#: Both bookkeeping points, in the order they are read.
META_IDS = (META_ID, META_COPY_ID)

# What a walk reads of a ranked node: its place in the tree, its span and its version. A "light"
# ranking (``rank(..., light=True)``) returns only these; the text, keywords, metadata and
# descriptions (most of a payload's bytes, and most of the engine's cost per hit) are fetched
# once, for the chosen nodes only, by ``retrieve``.
WALK_FIELDS = ("doc_id", "level", "is_leaf", "parent_id", "child_ids", "first_leaf", "last_leaf",
               "first_page", "last_page", "doc_hash")


def node_payload(node: TreeNode) -> Dict[str, Any]:
    """The payload a node is stored with."""
    return node.to_payload()


def is_node(payload: Optional[Mapping[str, Any]]) -> bool:
    """Whether a stored payload is a node (the bookkeeping point has no doc_id: it never is)."""
    return bool(payload) and "doc_id" in payload  # type: ignore[operator]


def full_node(node_id: str, payload: Mapping[str, Any]) -> TreeNode:
    """A node from its whole stored payload."""
    try:
        return TreeNode.from_payload(node_id, payload)
    except (KeyError, TypeError, ValueError) as exc:
        raise _unreadable(node_id, exc) from None


def _unreadable(node_id: str, exc: Exception) -> Exception:
    from ..errors import IndexDamagedError

    what = f"has no {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else f"is malformed ({exc})"
    return IndexDamagedError(
        f"The index is damaged: the stored payload of node {node_id} {what}. Nothing was changed; restore the "
        "folder from a backup, or move it aside and ingest the documents again."
    )


def light_node(node_id: str, payload: Mapping[str, Any]) -> TreeNode:
    """A node from a payload holding only :data:`WALK_FIELDS`: text, keywords, metadata empty."""
    try:
        return _light_node(node_id, payload)
    except (KeyError, TypeError, ValueError) as exc:
        raise _unreadable(node_id, exc) from None


def _light_node(node_id: str, payload: Mapping[str, Any]) -> TreeNode:
    return TreeNode(
        id=node_id,
        doc_id=payload["doc_id"],
        level=int(payload["level"]),
        is_leaf=bool(payload["is_leaf"]),
        span=Span(int(payload["first_leaf"]), int(payload["last_leaf"]), payload.get("first_page"), payload.get("last_page")),
        text="",
        parent_id=payload.get("parent_id"),
        child_ids=tuple(payload.get("child_ids") or ()),
        doc_hash=payload.get("doc_hash", ""),
    )


def meta_payload(dense_size: int, model_id: str, sparse_model: str, bm25_idf: Optional[str] = None) -> Dict[str, Any]:
    """The bookkeeping point's payload: which model built the collection (and how BM25's IDF is applied).

    It has no doc_id, level or is_leaf, so no search (always restricted by level, leaf flag, ids
    or ``level >= 0``) and no count sees it. ``schema_version`` is the index format this release
    writes and ``read_version`` the oldest format whose readers can still read it (see
    :func:`~drag_knee_retriever.store.integrity.open_existing`). ``bm25_idf``: the store's own IDF scheme
    (:data:`~drag_knee_retriever.bm25_idf.SCHEME`), absent when the engine applies IDF.
    """
    from .integrity import library

    payload = {"kind": "meta", "model_id": model_id, "dense_size": dense_size,
               "sparse_model": sparse_model, "schema_version": SCHEMA_VERSION, "read_version": READ_VERSION,
               "written_by": library()}
    if bm25_idf:
        payload["bm25_idf"] = bm25_idf
    return payload


def meta_vector(dense_size: int) -> List[float]:
    """The bookkeeping point's dense vector (any unit vector; it never ranks)."""
    return [1.0] + [0.0] * (dense_size - 1)


def collection_info(meta: Optional[Mapping[str, Any]], **engine_fields: Any) -> Dict[str, Any]:
    """``collection_info()``'s answer: the bookkeeping payload (if any) plus the engine's own fields."""
    info: Dict[str, Any] = dict(meta) if meta else {}
    info.pop("kind", None)
    info.update(engine_fields)
    return info


def stable_order(hits: List[RankedHit]) -> List[RankedHit]:
    """Order by score, ties broken by node id, so every engine agrees on tied candidates."""
    # By id, then a stable sort by score (reverse=True keeps equal scores in id order): the same
    # order as the key (-score, id), with C-level keys instead of a Python lambda per hit.
    ordered = sorted(hits, key=_NODE_ID)
    ordered.sort(key=_HIT_SCORE, reverse=True)
    return ordered


_NODE_ID = operator.attrgetter("node.id")
_HIT_SCORE = operator.attrgetter("score")
