"""The stored point's schema: what every engine writes for a node and reads back, in one place.

A node is one point: two named vectors (:data:`DENSE`, :data:`SPARSE`) and a payload
(:func:`node_payload`, read back by :func:`full_node`, or by :func:`light_node` from the
:data:`WALK_FIELDS` a walk reads). A collection also holds one bookkeeping point
(:func:`meta_payload`, id :data:`~drag_knee_retriever.model._ids.META_ID`) saying which models built it.
Inside a node's metadata the build writes where a page's text came from (:data:`TEXT_SOURCE_KEY`)
and, on a document, which pages were OCR'd (:data:`OCR_PAGES_KEY`): the loaders, the builder and
the adapters name those keys from here.

The build writes with these functions and the search reads with them; the engines share them, so
their points are the same bytes. Nothing here imports more of the package than the node types and the errors.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any, Dict, List, Mapping, Optional

from drag_knee_retriever.errors import IndexDamagedError
from drag_knee_retriever.model._nodes import (CHUNK_UNITS, FILE_STAMP_KEY, OCR_PAGES_KEY as _OCR_PAGES_KEY, UNITS_KEY, Span,
                                              TreeNode)

#: The names of a point's vectors: the dense embedding and the BM25 sparse vector.
DENSE = "dense"
SPARSE = "bm25"
#: The index format, recorded in every collection's bookkeeping point (``schema_version``).
#: 1: one collection of nodes. 2: the roots also in a collection (Edge: a shard) of their own, a copy
#: kept in step by the stores (see :func:`drag_knee_retriever.store.base.roots_ranking`); a version-1
#: index is brought to 2 when opened.
SCHEMA_VERSION = 2
#: The oldest index format whose readers can read what this release writes (recorded as
#: ``read_version`` beside ``schema_version``): a release older than ``read_version`` refuses the
#: index, one older than ``schema_version`` opens it read-only (store/integrity.py). Format 2 keeps
#: format 1's nodes collection as it was, so a format-1 release can read it (read-only: it would not
#: keep the roots' copy in step).
READ_VERSION = 1

#: A document's metadata key (and, after the builder, absent from its nodes): the 1-based page
#: numbers whose text came from OCR (defined beside the Document that checks it).
OCR_PAGES_KEY = _OCR_PAGES_KEY
#: A node's metadata key: where its text came from, :data:`TEXT_SOURCE_PDF`, :data:`TEXT_SOURCE_OCR`
#: or (an inner node over both) :data:`TEXT_SOURCE_MIXED`.
TEXT_SOURCE_KEY = "text_source"
TEXT_SOURCE_PDF = "pdf"
TEXT_SOURCE_OCR = "ocr"
TEXT_SOURCE_MIXED = "mixed"

# What a walk reads of a ranked node: its place in the tree, its span and its version. A "light"
# ranking (``rank(..., light=True)``) returns only these; the text, keywords, metadata and
# descriptions (most of a payload's bytes, and most of the engine's cost per hit) are fetched
# once, for the chosen nodes only, by ``retrieve``.
# The units key says how the span is labelled (a text's chunks: "chunk 7", not "p.7"); the statement
# field which financial statement a page shows (search/_statement_route.py reads it).
WALK_FIELDS = ("doc_id", "level", "is_leaf", "parent_id", "child_ids", "first_leaf", "last_leaf",
               "first_page", "last_page", "doc_hash", f"metadata.{UNITS_KEY}", "statement")
#: What an ingest's change check reads of a stored root: the walk's fields (doc_hash among them)
#: and the file stamp in its metadata (``NodeStore.retrieve_roots``).
ROOT_FIELDS = WALK_FIELDS + (f"metadata.{FILE_STAMP_KEY}",)
#: What a re-ingest's stamp check reads of a root's copy (``NodeStore.root_stamps``): the stamp and the
#: version (the point id says which document it is; the version is checked against the nodes' root).
STAMP_FIELDS = ("doc_hash", f"metadata.{FILE_STAMP_KEY}")
#: A text document root's payload field: the document's exact text (``TreeNode.source_text``). A
#: read without texts (``scroll_nodes(with_text=False)``) leaves it out as it leaves out ``text``.
SOURCE_TEXT = "source_text"
#: The payload field of a node within one page of a primary financial statement: which statement.
STATEMENT = "statement"
#: What ``scroll_nodes(with_text=False)`` leaves out of a payload.
TEXT_FIELDS = ("text", SOURCE_TEXT)


def node_payload(node: TreeNode) -> Dict[str, Any]:
    """The payload a node is stored with."""
    span = node.span
    payload = {
        "doc_id": node.doc_id,
        "level": node.level,
        "is_leaf": node.is_leaf,
        "parent_id": node.parent_id,
        "child_ids": list(node.child_ids),
        "first_leaf": span.first_leaf,
        "last_leaf": span.last_leaf,
        "first_page": span.first_page,
        "last_page": span.last_page,
        "first_part": span.first_part,
        "last_part": span.last_part,
        "text": node.text,
        "keywords": list(node.keywords),
        "title": node.title,
        "path": node.path,
        "metadata": dict(node.metadata),
        "doc_hash": node.doc_hash,
        "description": node.description,
    }
    if node.context is not None:  # absent by default, so default payloads stay as they were
        payload["context"] = node.context
    if node.source_text is not None:  # a text document's root, when its leaves do not give its text back
        payload[SOURCE_TEXT] = node.source_text
    if node.statement is not None:  # a statement page's nodes (filtered on by a question naming it)
        payload[STATEMENT] = node.statement
    return payload


def is_node(payload: Optional[Mapping[str, Any]]) -> bool:
    """Whether a stored payload is a node (the bookkeeping point has no doc_id: it never is)."""
    return bool(payload) and "doc_id" in payload  # type: ignore[operator]


def full_node(node_id: str, payload: Mapping[str, Any]) -> TreeNode:
    """A node from its whole stored payload (the inverse of :func:`node_payload`); a payload that
    lacks a tree field raises :class:`~drag_knee_retriever.errors.IndexDamagedError`."""
    try:
        return _full_node(node_id, payload)
    except (KeyError, TypeError, ValueError) as exc:
        raise _unreadable(node_id, exc) from None


def _unreadable(node_id: str, exc: Exception) -> Exception:
    what = f"has no {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else f"is malformed ({exc})"
    return IndexDamagedError(
        f"The index is damaged: the stored payload of node {node_id} {what}. Nothing was changed; restore the "
        "folder from a backup, or move it aside and ingest the documents again."
    )


def _full_node(node_id: str, payload: Mapping[str, Any]) -> TreeNode:
    metadata = dict(payload.get("metadata") or {})
    return TreeNode(
        id=str(node_id),
        doc_id=payload["doc_id"],
        level=int(payload["level"]),
        is_leaf=bool(payload["is_leaf"]),
        span=Span(
            int(payload["first_leaf"]),
            int(payload["last_leaf"]),
            payload.get("first_page"),
            payload.get("last_page"),
            payload.get("first_part"),
            payload.get("last_part"),
            metadata.get(UNITS_KEY) == CHUNK_UNITS,
        ),
        text=payload.get("text", ""),
        parent_id=payload.get("parent_id"),
        child_ids=tuple(payload.get("child_ids") or ()),
        keywords=tuple(payload.get("keywords") or ()),
        title=payload.get("title"),
        path=payload.get("path", ""),
        metadata=metadata,
        doc_hash=payload.get("doc_hash", ""),
        description=payload.get("description"),
        context=payload.get("context"),
        source_text=payload.get(SOURCE_TEXT),
        statement=payload.get(STATEMENT),
    )


def light_node(node_id: str, payload: Mapping[str, Any]) -> TreeNode:
    """A node from a payload holding only :data:`WALK_FIELDS`: text, keywords, metadata empty."""
    try:
        return _light_node(node_id, payload)
    except (KeyError, TypeError, ValueError) as exc:
        raise _unreadable(node_id, exc) from None


_new = object.__new__


def _light_node(node_id: str, payload: Mapping[str, Any]) -> TreeNode:
    # The same TreeNode as TreeNode(id=..., ...) with the other fields at their defaults, built by
    # filling the instances' __dict__: a frozen dataclass's __init__ sets each of its 15 fields
    # through object.__setattr__, and at 1M nodes (no node map) a knee search makes ~230 light
    # nodes from payloads: 3.4 -> 1.4 us each. tests/unit/test_point_schema.py checks that every
    # field is set and that the result equals the dataclass's own construction.
    get = payload.get
    metadata = get("metadata")
    span = _new(Span)
    span.__dict__.update(first_leaf=int(payload["first_leaf"]), last_leaf=int(payload["last_leaf"]),
                         first_page=get("first_page"), last_page=get("last_page"), first_part=None, last_part=None,
                         chunks=isinstance(metadata, dict) and metadata.get(UNITS_KEY) == CHUNK_UNITS)
    node = _new(TreeNode)
    node.__dict__.update(id=node_id, doc_id=payload["doc_id"], level=int(payload["level"]),
                         is_leaf=bool(payload["is_leaf"]), span=span, text="", parent_id=get("parent_id"),
                         child_ids=tuple(get("child_ids") or ()), keywords=(), title=None, path="", metadata={},
                         doc_hash=get("doc_hash", ""), description=None, context=None,
                         source_text=None, statement=get("statement"))
    return node


def root_node(node_id: str, payload: Mapping[str, Any]) -> TreeNode:
    """A light node with the metadata the payload holds (:data:`ROOT_FIELDS`: the file stamp)."""
    node = light_node(node_id, payload)
    metadata = payload.get("metadata")
    return replace(node, metadata=dict(metadata)) if isinstance(metadata, Mapping) and metadata else node


def meta_payload(dense_size: int, model_id: str, sparse_model: str, bm25_idf: Optional[str] = None) -> Dict[str, Any]:
    """The bookkeeping point's payload: which model built the collection (and how BM25's IDF is applied).

    It has no doc_id, level or is_leaf, so no search (always restricted by level, leaf flag, ids
    or ``level >= 0``) and no count sees it. ``schema_version`` is the index format this release
    writes and ``read_version`` the oldest format whose readers can still read it (see
    :func:`~drag_knee_retriever.store.integrity.open_existing`). ``bm25_idf``: the store's own IDF scheme
    (:data:`~drag_knee_retriever.common._bm25_idf.SCHEME`), absent when the engine applies IDF.
    """
    payload = {"kind": "meta", "model_id": model_id, "dense_size": dense_size,
               "sparse_model": sparse_model, "schema_version": SCHEMA_VERSION, "read_version": READ_VERSION,
               "written_by": library()}
    if bm25_idf:
        payload["bm25_idf"] = bm25_idf
    return payload


def library() -> str:
    """This release, as records and messages name it (``drag-knee-retriever 0.1.0a1``)."""
    # The package is imported whenever this module is (no import statement: the package's own
    # __init__ imports this module's users, and importlib.metadata costs 0.5 s to import).
    package = sys.modules.get(__name__.split(".", 1)[0])
    return f"drag-knee-retriever {getattr(package, '__version__', '(unknown version)')}"


def meta_vector(dense_size: int) -> List[float]:
    """The bookkeeping point's dense vector (any unit vector; it never ranks)."""
    return [1.0] + [0.0] * (dense_size - 1)


def collection_info(meta: Optional[Mapping[str, Any]], **engine_fields: Any) -> Dict[str, Any]:
    """``collection_info()``'s answer: the bookkeeping payload (if any) plus the engine's own fields."""
    info: Dict[str, Any] = dict(meta) if meta else {}
    info.pop("kind", None)
    info.update(engine_fields)
    return info
