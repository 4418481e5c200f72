"""LlamaIndex adapter, conversions: LlamaIndex documents / nodes / filters <-> core types.

Part of :mod:`drag_knee_retriever.integrations.llamaindex`, which re-exports every name here;
import from there. This module holds the adapter's framework-import guard (imported first by the
other parts), so a missing llama-index-core names the extra to install.
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple

from drag_knee_retriever.integrations._common import (
    DOC_ID,
    INSTALL_HINT,
    META_PREFIX,
    SPAN,
    hit_metadata,
    tree_node_from_metadata,
    tree_node_metadata,
)
from drag_knee_retriever.loaders import ocr_settings
from drag_knee_retriever.integrations._pages import PageEntry, group_paged_documents, page_number_from_label

try:
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
    from llama_index.core.schema import (
        BaseNode,
        MetadataMode,
        NodeRelationship,
        NodeWithScore,
        ObjectType,
        RelatedNodeInfo,
        TextNode,
    )
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "drag_knee_retriever.integrations.llamaindex needs LlamaIndex (llama-index-core), which is "
        f"not installed. Install it with: {INSTALL_HINT['llamaindex']}"
    ) from exc

from drag_knee_retriever.errors import InvalidDocumentError, InvalidQueryError
from drag_knee_retriever.model._nodes import Document, ScoredNode, TreeNode

# Metadata keys a file reader puts on each page; they differ per page, so a paged document keeps
# only what its pages agree on.
_PAGE_KEYS = ("page_label", "page")
# Keys identifying the file a page came from (SimpleDirectoryReader sets file_path, PDFReader alone
# sets file_name).
_FILE_KEYS = ("file_path", "file_name")

_LI_OPERATORS = {"==": "$eq", "!=": "$ne", ">": "$gt", ">=": "$gte", "<": "$lt", "<=": "$lte", "in": "$in",
                 "nin": "$nin", "any": "$in", "contains": "$eq"}


def metadata_filters_to_dict(filters: Any) -> Any:
    """LlamaIndex ``MetadataFilters`` (nested, AND / OR / NOT) in the core filter dialect.

    Operators EQ, NE, GT, GTE, LT, LTE, IN, NIN, ANY (any of a list), ALL (every one of a list),
    CONTAINS (a list field holds the value); conditions AND, OR and NOT (none of the filters
    holds, as LlamaIndex defines it). TEXT_MATCH and IS_EMPTY are refused with the supported
    list. A dict (the LangChain dialect) or a qdrant ``models.Filter`` passes through unchanged.
    """
    if filters is None or isinstance(filters, dict) or type(filters).__name__ == "Filter":
        return filters
    if isinstance(filters, MetadataFilter):
        return _metadata_filter_to_dict(filters)
    if not isinstance(filters, MetadataFilters):
        raise InvalidQueryError(
            "filters must be a llama_index MetadataFilters, a dict in the LangChain dialect "
            f"({{'year': {{'$gte': 2020}}}}) or a qdrant models.Filter, got {type(filters).__name__}."
        )
    parts = [metadata_filters_to_dict(f) for f in filters.filters]
    if not parts:
        raise InvalidQueryError("MetadataFilters has no filters; give at least one MetadataFilter, or no filters.")
    condition = getattr(filters.condition, "value", filters.condition) or "and"
    if condition == "and":
        return parts[0] if len(parts) == 1 else {"$and": parts}
    if condition == "or":
        return {"$or": parts}
    if condition == "not":
        return {"$not": parts[0] if len(parts) == 1 else {"$or": parts}}
    raise InvalidQueryError(f"MetadataFilters condition {condition!r} is not supported; use AND, OR or NOT.")


def _metadata_filter_to_dict(f: Any) -> Dict[str, Any]:
    op = getattr(f.operator, "value", f.operator)
    if op == "all":
        values = f.value if isinstance(f.value, list) else [f.value]
        return {"$and": [{f.key: {"$eq": v}} for v in values]}
    if op not in _LI_OPERATORS:
        raise InvalidQueryError(
            f"MetadataFilter on {f.key!r}: operator {op!r} is not supported; use one of "
            "EQ, NE, GT, GTE, LT, LTE, IN, NIN, ANY, ALL, CONTAINS."
        )
    return {f.key: {_LI_OPERATORS[op]: f.value}}


def _hidden_keys(metadata: Dict[str, Any]) -> Tuple[List[str], List[str]]:
    """(embed-excluded, LLM-excluded) keys: our bookkeeping stays out of prompts and embeddings,
    except the span label, which lets a model cite pages ("pp.3-4")."""
    ours = [key for key in metadata if key.startswith(META_PREFIX)]
    return ours, [key for key in ours if key not in (SPAN, DOC_ID)]


def _relationships(node: TreeNode, source: Optional[RelatedNodeInfo] = None) -> Dict[NodeRelationship, Any]:
    relationships: Dict[NodeRelationship, Any] = {
        NodeRelationship.SOURCE: source
        or RelatedNodeInfo(node_id=node.doc_id, node_type=ObjectType.DOCUMENT),
    }
    if node.parent_id:
        relationships[NodeRelationship.PARENT] = RelatedNodeInfo(node_id=node.parent_id, node_type=ObjectType.TEXT)
    if node.child_ids:
        relationships[NodeRelationship.CHILD] = [
            RelatedNodeInfo(node_id=child, node_type=ObjectType.TEXT) for child in node.child_ids
        ]
    return relationships


def to_node_with_score(hit: ScoredNode) -> NodeWithScore:
    """One search hit as a ``NodeWithScore(TextNode)``.

    The text is the full text of the node's span; the metadata is the source document's metadata
    plus the ``drag_*`` fields (hidden from the embedding text, and from the LLM except the span
    label and doc id); SOURCE points to the document, PARENT / CHILD to the node's tree neighbours.
    """
    metadata = hit_metadata(hit)
    embed_hidden, llm_hidden = _hidden_keys(metadata)
    node = TextNode(
        id_=hit.node.id,
        text=hit.text,
        metadata=metadata,
        relationships=_relationships(hit.node),
        excluded_embed_metadata_keys=embed_hidden,
        excluded_llm_metadata_keys=llm_hidden,
    )
    return NodeWithScore(node=node, score=float(hit.score))


def to_text_node(node: TreeNode, source: Optional[RelatedNodeInfo] = None) -> TextNode:
    """A tree node (as the builder made it) as a ``TextNode`` that converts back losslessly.

    Its text is the node's own text: a leaf's text, an inner node's summary (search results, by
    contrast, carry the full span text).
    """
    metadata = tree_node_metadata(node)
    embed_hidden, llm_hidden = _hidden_keys(metadata)
    return TextNode(
        id_=node.id,
        text=node.text,
        metadata=metadata,
        relationships=_relationships(node, source),
        excluded_embed_metadata_keys=embed_hidden,
        excluded_llm_metadata_keys=llm_hidden,
    )


def to_tree_node(node: BaseNode) -> TreeNode:
    """Convert a node made by :class:`DragTreeNodeParser` back into the core ``TreeNode``.

    PARENT / CHILD relationships win over the ids kept in the metadata. Raises
    :class:`InvalidDocumentError` for nodes the parser did not make, or non-JSON metadata.
    """
    if not isinstance(node, BaseNode):
        raise InvalidDocumentError(
            f"Expected a LlamaIndex node, got {type(node).__name__}; pass the nodes DragTreeNodeParser returned."
        )
    parent = node.parent_node
    children = node.child_nodes
    return tree_node_from_metadata(
        node.node_id,
        node.get_content(metadata_mode=MetadataMode.NONE),
        node.metadata,
        parent_id=parent.node_id if parent is not None else None,
        child_ids=[c.node_id for c in children] if children is not None else None,
    )


def index_parsed_nodes(index: Any, nodes: Sequence[BaseNode]) -> Any:
    """Ingest nodes made by :class:`DragTreeNodeParser` (e.g. an ``IngestionPipeline``'s output)
    into ``index`` without rebuilding the trees: every node is converted first (a bad one ingests
    nothing), then :meth:`DragKneeIndex.add_nodes` writes them. Returns what ``add_nodes`` returns.
    """
    if isinstance(nodes, BaseNode) or not isinstance(nodes, Sequence):
        raise InvalidDocumentError("nodes must be a list of the nodes DragTreeNodeParser returned.")
    tree_nodes = [to_tree_node(node) for node in nodes]
    if not tree_nodes:
        raise InvalidDocumentError("No nodes to ingest; run DragTreeNodeParser on some documents first.")
    return index.add_nodes(tree_nodes)


def _node_text(node: Any, where: str) -> str:
    if not isinstance(node, BaseNode):
        raise InvalidDocumentError(
            f"{where} is a {type(node).__name__}, not a LlamaIndex Document or node."
        )
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    if not isinstance(text, str):
        raise InvalidDocumentError(f"{where} has no text (an image or other non-text node); drop it.")
    return text


def _random_id(node_id: str) -> bool:
    """Whether an id is LlamaIndex's default (a random UUID4), not one the user or reader chose."""
    try:
        return uuid.UUID(node_id).version == 4 and str(uuid.UUID(node_id)) == node_id
    except (ValueError, TypeError, AttributeError):
        return False


def page_entries(documents: Sequence[Any], group_pages: bool) -> List[PageEntry]:
    if isinstance(documents, BaseNode) or not isinstance(documents, Sequence):
        raise InvalidDocumentError(
            f"documents must be a list of LlamaIndex Documents, got {type(documents).__name__}; "
            "wrap a single document in a list."
        )
    entries = []
    for position, doc in enumerate(documents):
        where = f"documents[{position}]"
        text = _node_text(doc, where)
        meta = doc.metadata or {}
        file_key = next((str(meta[k]) for k in _FILE_KEYS if meta.get(k)), None)
        is_page = group_pages and file_key is not None and "page_label" in meta
        entries.append(
            PageEntry(
                text=text,
                metadata=meta,
                where=f"{where} (id={doc.node_id!r})",
                group=file_key if is_page else None,
                page=page_number_from_label(meta.get("page_label")) if is_page else None,
                # A LlamaIndex id is always set, random unless the reader was asked for stable
                # ids (SimpleDirectoryReader(filename_as_id=True)) or the user gave one. A random
                # one would duplicate the document on every re-ingest, so it is replaced by the
                # file it came from, else by a hash of the text.
                preferred_id=None if _random_id(doc.node_id) else doc.node_id,
                source=file_key if _random_id(doc.node_id) else None,
                drop_keys=_PAGE_KEYS if is_page else (),
            )
        )
    return entries


def from_llamaindex_documents(
    documents: Sequence[Any],
    *,
    group_pages: bool = True,
    ocr: Any = "auto",
    ocr_languages: Optional[str] = None,
    ocr_cache_dir: Optional[Any] = None,
) -> List[Document]:
    """Convert LlamaIndex ``Document`` objects into core documents, all validated first.

    Each document becomes one tree, with its LlamaIndex id as document id. With ``group_pages``,
    per-page documents of one file (metadata ``page_label`` plus ``file_path`` or ``file_name``,
    as ``PDFReader`` yields them) become ONE paged document named after the file; numeric page
    labels order the pages (and keep the file's page numbers), otherwise input order is kept.
    Pages of a PDF file on disk (``file_path``) whose text is empty or too thin (scanned or
    image-only) are OCR'd like the core loader's: ``ocr="auto"|"always"|"never"`` (or an
    :class:`~drag_knee_retriever.build._ocr.OcrConfig`), ``ocr_languages``, ``ocr_cache_dir``; needs the
    ``ocr`` extra and Tesseract; each leaf records ``text_source``.
    """
    config = ocr_settings(ocr, ocr_languages, ocr_cache_dir)
    return [doc for doc, _ in group_paged_documents(page_entries(documents, group_pages), ocr=config)]

