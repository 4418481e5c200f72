"""What an index holds, read back: its documents, a document's text, nodes by id, and counts.

The reads behind ``DragKneeIndex.list_documents`` / ``get_documents`` / ``get_nodes`` / ``stats``
(none of them is a search: they scroll or retrieve by id).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from drag_knee_retriever.search._context import fetch_context
from drag_knee_retriever.errors import InvalidQueryError
from drag_knee_retriever.model._nodes import NodeText
from drag_knee_retriever.store import NodeStore, RankedHit, parse_filters

__all__ = ["DocumentInfo", "StoredDocument", "get_documents", "get_nodes", "list_documents", "stats"]


@dataclass(frozen=True)
class DocumentInfo:
    """One indexed document as listed by :meth:`DragKneeIndex.list_documents`."""

    doc_id: str
    leaves: int
    metadata: Mapping[str, Any]
    doc_hash: str
    first_page: Optional[int] = None
    last_page: Optional[int] = None


@dataclass(frozen=True)
class StoredDocument:
    """One indexed document's text and metadata, as :meth:`DragKneeIndex.get_documents` returns it."""

    doc_id: str
    text: str
    metadata: Mapping[str, Any]


def list_documents(store: NodeStore) -> List[DocumentInfo]:
    """Every indexed document (from its root node)."""
    roots = store.scroll_nodes(level=0)
    infos = []
    for root in sorted(roots, key=lambda n: n.doc_id):
        infos.append(DocumentInfo(
            doc_id=root.doc_id, leaves=root.span.last_leaf + 1,
            metadata=root.metadata, doc_hash=root.doc_hash,
            first_page=root.span.first_page, last_page=root.span.last_page,
        ))
    return infos


def get_documents(store: NodeStore, doc_ids: Sequence[str]) -> List[StoredDocument]:
    """The indexed documents with these ids: whole text (as given with ``Document.keep_text``, else its
    leaves joined by a blank line) and metadata, in the order given; ids not indexed are skipped."""
    out = []
    for doc_id in dict.fromkeys(doc_ids):
        if not isinstance(doc_id, str) or not doc_id:
            raise InvalidQueryError(f"document ids are non-empty strings, got {doc_id!r}.")
        nodes = store.scroll_nodes(filters=parse_filters({"doc_id": doc_id}))
        if not any(n.level == 0 for n in nodes):
            continue  # not indexed (or an interrupted ingest's rootless leftovers)
        leaves = sorted((n for n in nodes if n.is_leaf), key=lambda n: n.span.first_leaf)
        root = next(n for n in nodes if n.level == 0)
        text = root.source_text if root.source_text is not None else "\n\n".join(leaf.text for leaf in leaves)
        out.append(StoredDocument(doc_id=doc_id, text=text, metadata=dict(root.metadata)))
    return out


def get_nodes(store: NodeStore, node_ids: Sequence[str]) -> List[NodeText]:
    """Tree nodes by id (a result's ``node.id`` / ``parent_id`` / ``child_ids``), each with its
    span's full text, in the order given; ids not stored (or of a tree being rewritten) are
    skipped. One fetch for the nodes, one for the leaves of the inner ones."""
    def is_node_id(value: Any) -> bool:  # node ids are UUIDs; anything else names no node
        try:
            return isinstance(value, str) and str(uuid.UUID(value)) == value.lower()
        except ValueError:
            return False

    ids = [i for i in dict.fromkeys(node_ids) if is_node_id(i)]
    nodes = [n for n in store.retrieve(ids) if n.id in set(ids)] if ids else []
    hits, texts = fetch_context(store, [RankedHit(node=n, score=0.0) for n in nodes])
    by_id = {h.node.id: NodeText(node=h.node, text=texts[h.node.id]) for h in hits}
    return [by_id[i] for i in ids if i in by_id]


def stats(store: NodeStore, encoder: Any, collection: str) -> Dict[str, Any]:
    """Documents, nodes per level, model and collection."""
    nodes = store.scroll_nodes(with_text=False)
    per_level: Dict[int, int] = {}
    docs = set()
    rooted = set()
    leaves = 0
    for node in nodes:
        per_level[node.level] = per_level.get(node.level, 0) + 1
        docs.add(node.doc_id)
        if node.level == 0:
            rooted.add(node.doc_id)
        leaves += node.is_leaf
    info = store.collection_info()
    return {
        # A document is one with a root; rootless leftovers are counted apart (`docs gc`).
        "documents": len(rooted),
        "orphan_documents": len(docs - rooted),
        "nodes": len(nodes),
        "leaves": leaves,
        "nodes_per_level": dict(sorted(per_level.items())),
        "embedding_model": encoder.model_id,
        "embedding_source": getattr(encoder, "model_source", None),
        "dense_size": encoder.dense_size,
        "sparse_model": encoder.sparse_model,
        "collection": collection,
        "engine": store.describe(),
        "stored_model": info.get("model_id"),
    }
