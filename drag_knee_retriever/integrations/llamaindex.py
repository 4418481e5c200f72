"""LlamaIndex adapter: a drop-in ``BaseRetriever``, a ``NodeParser`` that builds the document trees
during ingestion, and the knee as a ``BaseNodePostprocessor`` for any other retriever.

Install with ``pip install "drag-knee-retriever[llamaindex]"``.

The adapter converts types and delegates to the core: :meth:`DragKneeIndex.search` /
:meth:`~DragKneeIndex.asearch` for queries, :func:`drag_knee_retriever.builder.build_trees` for the
hierarchy, :meth:`~DragKneeIndex.add_documents` / :meth:`~DragKneeIndex.add_nodes` for ingestion
and :func:`drag_knee_retriever.knee.knee_cut` for the postprocessor. It scores, encodes and stores
nothing itself.

(About 500 lines: four framework classes and their conversions, which LlamaIndex users import from
this one module; the shared parts are in ``_common``/``_pages``.)

Example::

    from llama_index.core.query_engine import RetrieverQueryEngine
    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever

    retriever = DragKneeRetriever.from_documents(SimpleDirectoryReader("docs").load_data(), model_path=...)
    engine = RetrieverQueryEngine.from_args(retriever, llm=my_llm)
    engine.query("what do the authors measure?")
"""

from __future__ import annotations

import contextvars
import logging
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._common import (
    DOC_ID,
    INSTALL_HINT,
    META_PREFIX,
    SPAN,
    RetrieverSettings,
    check_index,
    check_query,
    hit_metadata,
    knee_keep,
    make_index,
    trace_payload,
    tree_node_from_metadata,
    tree_node_metadata,
)
from ..loaders import ocr_settings
from ._pages import PageEntry, group_paged_documents, page_number_from_label

try:
    from llama_index.core.bridge.pydantic import Field, field_serializer, field_validator
    import llama_index.core.base.base_retriever as _base_retriever
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.callbacks.schema import CBEventType, EventPayload
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import (
        BaseNode,
        MetadataMode,
        NodeRelationship,
        NodeWithScore,
        ObjectType,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "drag_knee_retriever.integrations.llamaindex needs LlamaIndex (llama-index-core), which is "
        f"not installed. Install it with: {INSTALL_HINT['llamaindex']}"
    ) from exc

from ..config import BuildConfig
from ..errors import ConfigError, InvalidDocumentError, InvalidQueryError
from ..nodes import Document, ScoredNode, TreeNode
from ..store import QueryVectors

log = logging.getLogger(__name__)

__all__ = [
    "DragKneeRetriever",
    "DragKneeTraceEvent",
    "metadata_filters_to_dict",
    "DragTreeNodeParser",
    "KneeNodePostprocessor",
    "from_llamaindex_documents",
    "index_parsed_nodes",
    "to_node_with_score",
    "to_tree_node",
]

# Metadata keys a file reader puts on each page; they differ per page, so a paged document keeps
# only what its pages agree on.
_PAGE_KEYS = ("page_label", "page")
# Keys identifying the file a page came from (SimpleDirectoryReader sets file_path, PDFReader alone
# sets file_name).
_FILE_KEYS = ("file_path", "file_name")
# Per-call search options of the running retrieve()/aretrieve(): the base class calls _retrieve with
# the query bundle only, so the options travel beside it (a context variable is per thread and per
# asyncio task, so concurrent calls do not see each other's options).
_CALL_OPTIONS: contextvars.ContextVar[Dict[str, Any]] = contextvars.ContextVar("drag_knee_call_options", default={})
# The trace of the search _retrieve ran, for the RETRIEVE callback payload of retrieve()/aretrieve().
_LAST_TRACE: contextvars.ContextVar[Optional[Dict[str, Any]]] = contextvars.ContextVar("drag_knee_last_trace", default=None)
_dispatcher = get_dispatcher(__name__)


class DragKneeTraceEvent(BaseEvent):
    """The walk's trace of one retrieval, as a LlamaIndex instrumentation event.

    ``trace`` holds the steps (kind, level, knee position, every candidate with its fused score
    and outcome), the round trips, timings and results; ``query`` the query text. Arize Phoenix,
    Langfuse and any ``BaseEventHandler`` on the root dispatcher receive it.
    """

    query: str
    trace: Dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        return "DragKneeTraceEvent"


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


def _with_embed_model(index_kwargs: Dict[str, Any], embed_model: Any) -> Dict[str, Any]:
    """The new index's dense model: ``embed_model``, else a ``Settings.embed_model`` the user set."""
    if embed_model is None and not any(k in index_kwargs for k in ("embedding", "encoder", "model_name", "model_path")):
        from llama_index.core import Settings

        # The private field, so that an unset model is not resolved (LlamaIndex would load OpenAI).
        embed_model = getattr(Settings, "_embed_model", None)
        if embed_model is not None:
            log.info("using Settings.embed_model %s as the index's dense model", type(embed_model).__name__)
    if embed_model is None:
        return index_kwargs
    if "embedding" in index_kwargs:
        raise TypeError("embed_model and embedding are the same thing (the dense model); give only one.")
    return {**index_kwargs, "embedding": embed_model}


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


def _entries(documents: Sequence[Any], group_pages: bool) -> List[PageEntry]:
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
    :class:`~drag_knee_retriever.ocr.OcrConfig`), ``ocr_languages``, ``ocr_cache_dir``; needs the
    ``ocr`` extra and Tesseract; each leaf records ``text_source``.
    """
    config = ocr_settings(ocr, ocr_languages, ocr_cache_dir)
    return [doc for doc, _ in group_paged_documents(_entries(documents, group_pages), ocr=config)]


def _dispatcher_has_handlers() -> bool:
    # Walk the dispatcher chain as Dispatcher.event does (propagate up to the root).
    current: Any = _dispatcher
    while current is not None:
        if current.event_handlers:
            return True
        current = current.parent if current.propagate else None
    return False


class DragKneeRetriever(BaseRetriever):
    """DRAG with KNEE as a LlamaIndex retriever: a drop-in replacement for any ``BaseRetriever``.

    Returns ``NodeWithScore(TextNode)``: the node's full span text, the source metadata plus
    ``drag_*`` fields, and SOURCE / PARENT / CHILD relationships. Settings left ``None`` use the
    index's :class:`~drag_knee_retriever.SearchConfig`. ``similarity_top_k`` caps the number of
    results; the method still decides how many up to the cap (a fixed width is
    ``method="fixed", beam_width=n``). ``filters``: LlamaIndex ``MetadataFilters`` (nested, AND /
    OR / NOT), a LangChain-style dict or a qdrant ``models.Filter``, applied at every level of the
    walk. ``score_threshold`` drops results scoring below it.

    Every setting can also be passed per call, as in the LangChain retriever:
    ``retriever.retrieve(query, similarity_top_k=2)`` or ``retriever.retrieve(query, filters=...)``.

    Tracing: each retrieval's walk (steps, kept / suppressed / cut candidates, knee positions) is
    dispatched as a :class:`DragKneeTraceEvent` instrumentation event and rides in the RETRIEVE
    callback's end payload under ``"drag_knee_trace"``; both only when a handler listens.

    The index's documents are managed with ``insert`` / ``insert_documents``, ``refresh_ref_docs``
    and ``delete_ref_doc`` (whole document trees by id).

    If the caller puts a query embedding in the ``QueryBundle`` and its size is the index's dense
    size, that vector is used instead of encoding the query again (it must come from the index's
    model; only the size can be checked). An embedding of another size is ignored with a warning.
    """

    def __init__(
        self,
        index: Any,
        *,
        method: Optional[str] = None,
        similarity_top_k: Optional[int] = None,
        beam_width: Optional[int] = None,
        sensitivity: Optional[float] = None,
        max_roots: Optional[int] = None,
        filters: Any = None,
        fusion_weights: Optional[Sequence[Sequence[float]]] = None,
        order: Optional[str] = None,
        score_threshold: Optional[float] = None,
        callback_manager: Optional[CallbackManager] = None,
        verbose: bool = False,
    ) -> None:
        self._index = check_index(index)
        self._settings = RetrieverSettings(
            "similarity_top_k", convert_filters=metadata_filters_to_dict, method=method,
            similarity_top_k=similarity_top_k, beam_width=beam_width, sensitivity=sensitivity,
            max_roots=max_roots, filters=filters, fusion_weights=fusion_weights, order=order,
            score_threshold=score_threshold,
        )
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def index(self) -> Any:
        """The :class:`DragKneeIndex` this retriever searches."""
        return self._index

    def _query_vectors(self, query: str, bundle: QueryBundle) -> Optional[QueryVectors]:
        embedding = bundle.embedding
        if embedding is None:
            return None
        encoder = self._index.encoder
        size = encoder.dense_size
        if len(embedding) != size:
            log.warning(
                "query embedding has %d dimensions but the index's model %s has %d; ignoring it and "
                "encoding the query text with the index's model.", len(embedding), getattr(encoder, "model_id", "?"), size,
            )
            return None
        # The dense side comes from the caller; the encoder adds the BM25 side of the text.
        return encoder.query_vectors_from_dense(embedding, query)

    @staticmethod
    def _check_input(str_or_query_bundle: Any) -> None:
        # The base class reads `.query_str` before `_retrieve` runs, so a wrong type would fail
        # there with an AttributeError; say what is expected instead.
        if not isinstance(str_or_query_bundle, (str, QueryBundle)):
            raise InvalidQueryError(
                f"The query must be a string or a QueryBundle, got {type(str_or_query_bundle).__name__} "
                f"({str_or_query_bundle!r:.60}); pass the question text."
            )

    @_base_retriever.dispatcher.span
    def retrieve(self, str_or_query_bundle: Any, **options: Any) -> List[NodeWithScore]:
        """Retrieve nodes for a query string or ``QueryBundle``; ``options`` override the
        retriever's search settings for this call (see the class docstring)."""
        self._check_input(str_or_query_bundle)
        token = _CALL_OPTIONS.set(self._settings.for_call(options))
        trace_token = _LAST_TRACE.set(None)
        try:
            # BaseRetriever.retrieve's steps, with the walk's trace in the RETRIEVE end payload.
            self._check_callback_manager()
            _base_retriever.dispatcher.event(RetrievalStartEvent(str_or_query_bundle=str_or_query_bundle))
            bundle = QueryBundle(str_or_query_bundle) if isinstance(str_or_query_bundle, str) else str_or_query_bundle
            with self.callback_manager.as_trace("query"):
                with self.callback_manager.event(
                    CBEventType.RETRIEVE, payload={EventPayload.QUERY_STR: bundle.query_str}
                ) as retrieve_event:
                    nodes = self._retrieve(bundle)
                    nodes = self._handle_recursive_retrieval(bundle, nodes)
                    retrieve_event.on_end(payload=self._end_payload(nodes))
            _base_retriever.dispatcher.event(RetrievalEndEvent(str_or_query_bundle=str_or_query_bundle, nodes=nodes))
            return nodes
        finally:
            _LAST_TRACE.reset(trace_token)
            _CALL_OPTIONS.reset(token)

    @_base_retriever.dispatcher.span
    async def aretrieve(self, str_or_query_bundle: Any, **options: Any) -> List[NodeWithScore]:
        """Async :meth:`retrieve` (delegates to :meth:`DragKneeIndex.asearch`)."""
        self._check_input(str_or_query_bundle)
        token = _CALL_OPTIONS.set(self._settings.for_call(options))
        trace_token = _LAST_TRACE.set(None)
        try:
            self._check_callback_manager()
            _base_retriever.dispatcher.event(RetrievalStartEvent(str_or_query_bundle=str_or_query_bundle))
            bundle = QueryBundle(str_or_query_bundle) if isinstance(str_or_query_bundle, str) else str_or_query_bundle
            with self.callback_manager.as_trace("query"):
                with self.callback_manager.event(
                    CBEventType.RETRIEVE, payload={EventPayload.QUERY_STR: bundle.query_str}
                ) as retrieve_event:
                    nodes = await self._aretrieve(bundle)
                    nodes = await self._ahandle_recursive_retrieval(query_bundle=bundle, nodes=nodes)
                    retrieve_event.on_end(payload=self._end_payload(nodes))
            _base_retriever.dispatcher.event(RetrievalEndEvent(str_or_query_bundle=str_or_query_bundle, nodes=nodes))
            return nodes
        finally:
            _LAST_TRACE.reset(trace_token)
            _CALL_OPTIONS.reset(token)

    @staticmethod
    def _end_payload(nodes: List[NodeWithScore]) -> Dict[str, Any]:
        payload: Dict[str, Any] = {EventPayload.NODES: nodes}
        trace = _LAST_TRACE.get()
        if trace is not None:
            payload["drag_knee_trace"] = trace
        return payload

    def _emit_trace(self, query: str, result: Any) -> None:
        """The trace to the instrumentation handlers and (for retrieve()) the callback payload;
        built only when someone listens."""
        callbacks = bool(self.callback_manager.handlers)
        listening = _dispatcher_has_handlers()
        if not (callbacks or listening):
            return
        trace = trace_payload(result)
        if callbacks:
            _LAST_TRACE.set(trace)
        if listening:
            _dispatcher.event(DragKneeTraceEvent(query=query, trace=trace))

    def _overrides(self) -> Dict[str, Any]:
        # Set by retrieve()/aretrieve(); a framework calling _retrieve directly gets the defaults.
        return _CALL_OPTIONS.get() or self._settings.overrides

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        query = check_query(query_bundle.query_str)
        vectors = self._query_vectors(query, query_bundle)
        result = self._index.search(query, query_vectors=vectors, **self._overrides())
        self._emit_trace(query, result)
        return [to_node_with_score(hit) for hit in result.nodes]

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        query = check_query(query_bundle.query_str)
        vectors = self._query_vectors(query, query_bundle)
        result = await self._index.asearch(query, query_vectors=vectors, **self._overrides())
        self._emit_trace(query, result)
        return [to_node_with_score(hit) for hit in result.nodes]

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Any],
        *,
        index: Any = None,
        group_pages: bool = True,
        progress: Optional[Callable[..., Any]] = None,
        retriever_kwargs: Optional[Dict[str, Any]] = None,
        ocr: Any = "auto",
        ocr_languages: Optional[str] = None,
        ocr_cache_dir: Optional[Any] = None,
        embed_model: Any = None,
        **index_kwargs: Any,
    ) -> "DragKneeRetriever":
        """Build (or reuse) an index, ingest LlamaIndex ``documents``, return a retriever.

        ``index_kwargs`` go to :class:`DragKneeIndex` when no ``index`` is given;
        ``retriever_kwargs`` (method, similarity_top_k, ...) to the retriever. ``embed_model`` (a
        LlamaIndex embedding) is the dense model of a new index; without it, a
        ``Settings.embed_model`` you set is used, else the default offline MiniLM. Every document
        is converted and validated before anything is built or written. ``ocr``, ``ocr_languages``,
        ``ocr_cache_dir``: see :func:`from_llamaindex_documents`.
        """
        core = from_llamaindex_documents(documents, group_pages=group_pages, ocr=ocr,
                                         ocr_languages=ocr_languages, ocr_cache_dir=ocr_cache_dir)
        if index is None:
            index_kwargs = _with_embed_model(index_kwargs, embed_model)
        elif embed_model is not None:
            raise TypeError("index was given, so embed_model cannot configure a new one; drop one of them.")
        index = make_index(index, index_kwargs)
        retriever = cls(index, **(retriever_kwargs or {}))
        index.add_documents(core, progress=progress)
        return retriever

    # -- managing what the index holds (BaseIndex's names) ------------------------------------------

    def insert(self, document: Any, **kwargs: Any) -> Any:
        """Ingest one LlamaIndex document (replacing its old tree if it changed)."""
        return self.insert_documents([document], **kwargs)

    def insert_documents(self, documents: Sequence[Any], *, group_pages: bool = True, progress: Any = None) -> Any:
        """Ingest LlamaIndex documents: unchanged ones are skipped, changed ones replaced; ids as
        :func:`from_llamaindex_documents` gives them (stable for documents without ids)."""
        return self._index.add_documents(from_llamaindex_documents(documents, group_pages=group_pages), progress=progress)

    def refresh_ref_docs(self, documents: Sequence[Any], **kwargs: Any) -> List[bool]:
        """Ingest documents and say, per document, whether it was added or changed (True) or was
        already indexed as is (False), like ``BaseIndex.refresh_ref_docs``."""
        core = from_llamaindex_documents(documents, **kwargs)
        report = self._index.add_documents(core)
        changed = set(report.added) | set(report.replaced)
        return [doc.id in changed for doc in core]

    def delete_ref_doc(self, ref_doc_id: str, delete_from_docstore: bool = False, *,
                       raise_if_missing: bool = False, **kwargs: Any) -> None:
        """Remove a document's whole tree by its id (``delete_from_docstore`` has no meaning here:
        the index is the only store). A missing id is ignored unless ``raise_if_missing``."""
        if kwargs:
            raise TypeError(f"delete_ref_doc takes no options {sorted(kwargs)}.")
        if not self._index.delete_document(ref_doc_id) and raise_if_missing:
            raise KeyError(f"No document {ref_doc_id!r} is indexed; list them with index.list_documents().")

    @classmethod
    def from_nodes(
        cls,
        nodes: Sequence[BaseNode],
        *,
        index: Any = None,
        retriever_kwargs: Optional[Dict[str, Any]] = None,
        **index_kwargs: Any,
    ) -> "DragKneeRetriever":
        """Ingest nodes made by :class:`DragTreeNodeParser` (e.g. from an ``IngestionPipeline``)
        into a new or given index, and return a retriever over it."""
        tree_nodes = [to_tree_node(node) for node in nodes]  # validate before building an index
        index = make_index(index, index_kwargs)
        retriever = cls(index, **(retriever_kwargs or {}))
        index.add_nodes(tree_nodes)
        return retriever


class DragTreeNodeParser(NodeParser):
    """Build the DRAG document trees from LlamaIndex documents, as a ``NodeParser``.

    Returns every node of every tree (roots, inner nodes, leaves) as ``TextNode`` objects with
    stable ids and PARENT / CHILD relationships, so ``get_root_nodes`` / ``get_leaf_nodes`` work and
    consecutive leaves are linked PREVIOUS / NEXT. Inner nodes carry their summary as text. Usable
    as a transformation of an ``IngestionPipeline``; feed its output to
    :func:`index_parsed_nodes` (or :meth:`DragKneeRetriever.from_nodes`) to index it unchanged.

    - ``build``: the :class:`~drag_knee_retriever.BuildConfig` (branching, leaf sizes, summaries).
    - ``summarizer``: a :class:`~drag_knee_retriever.Summarizer`; ``None`` = the extractive default.
    - ``group_pages``: merge per-page documents of one file into one tree (see
      :func:`from_llamaindex_documents`).

    Give the parser the same ``BuildConfig`` and summariser as the index that will ingest its
    nodes: they are part of each document's hash, so a document parsed with other settings is
    rebuilt (replaced) when it is later added with ``index.add_documents``. Node ids are the
    builder's deterministic ids; ``id_func`` is not used.
    """

    build: Any = Field(default_factory=BuildConfig, description="BuildConfig of the trees.")
    summarizer: Any = Field(default=None, description="Summarizer of inner nodes (None: extractive).")
    group_pages: bool = Field(default=True, description="Merge the pages of one file into one tree.")
    # The base class would link every consecutive pair of returned nodes PREVIOUS/NEXT, mixing
    # levels; the parser links consecutive leaves itself instead.
    include_prev_next_rel: bool = Field(default=False, description="Base-class linking (off: the parser links leaves).")

    @field_validator("build")
    @classmethod
    def _check_build(cls, value: Any) -> Any:
        if value is None:
            return BuildConfig()
        if not isinstance(value, BuildConfig):
            raise ConfigError(f"build must be a drag_knee_retriever.BuildConfig, got {type(value).__name__}.")
        return value

    @field_validator("summarizer")
    @classmethod
    def _check_summarizer(cls, value: Any) -> Any:
        if value is not None and not hasattr(value, "describe"):
            raise ConfigError(
                f"summarizer must implement the Summarizer protocol (describe, identity), got {type(value).__name__}."
            )
        return value

    # The ingestion cache keys on str(to_dict()); give it the settings, not object addresses.
    @field_serializer("build")
    def _dump_build(self, value: BuildConfig) -> str:
        return repr(value)

    @field_serializer("summarizer")
    def _dump_summarizer(self, value: Any) -> Optional[str]:
        return None if value is None else str(getattr(value, "identity", type(value).__name__))

    @classmethod
    def class_name(cls) -> str:
        return "DragTreeNodeParser"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> List[BaseNode]:
        from ..builder import build_trees
        from ..summarize import ExtractiveSummarizer

        nodes = list(nodes)
        entries = _entries(nodes, self.group_pages)
        pairs = group_paged_documents(entries)
        summarizer = self.summarizer if self.summarizer is not None else ExtractiveSummarizer(self.build)
        tree_nodes = build_trees([doc for doc, _ in pairs], self.build, summarizer)
        # SOURCE: a tree made from one input document points to it (so the base class can place
        # leaves in its text); a tree merged from several pages points to the file's document id.
        sources: Dict[str, Optional[RelatedNodeInfo]] = {}
        for doc, positions in pairs:
            single = len(positions) == 1 and entries[positions[0]].group is None
            sources[doc.id] = nodes[positions[0]].as_related_node_info() if single else None
        out: List[BaseNode] = []
        previous_leaf: Dict[str, TextNode] = {}
        for tree_node in sorted(tree_nodes, key=_document_order):
            text_node = to_text_node(tree_node, sources.get(tree_node.doc_id))
            if tree_node.is_leaf:
                before = previous_leaf.get(tree_node.doc_id)
                if before is not None:
                    before.relationships[NodeRelationship.NEXT] = text_node.as_related_node_info()
                    text_node.relationships[NodeRelationship.PREVIOUS] = before.as_related_node_info()
                previous_leaf[tree_node.doc_id] = text_node
            out.append(text_node)
        log.debug("parsed %d documents into %d tree nodes", len(pairs), len(out))
        return out


def _document_order(node: TreeNode) -> Tuple[str, int, int, int]:
    # Per document: top-down by level, then by position; leaves end up in reading order.
    return (node.doc_id, node.level, node.span.first_leaf, node.span.last_leaf)


class KneeNodePostprocessor(BaseNodePostprocessor):
    """Cut any retriever's ranked nodes at the knee of their scores.

    Add it to a query engine (``node_postprocessors=[KneeNodePostprocessor()]``) to keep an
    adaptive number of nodes instead of a fixed ``similarity_top_k``. Nodes must arrive best
    first, every one with a score; ``sensitivity`` in (0, 1] (1.0 = plain knee, smaller keeps
    more); ``higher_is_better=False`` for distances. Fewer than three nodes are kept as they are.
    """

    sensitivity: float = Field(default=1.0, gt=0.0, le=1.0, description="Knee sensitivity in (0, 1].")
    higher_is_better: bool = Field(default=True, description="False if scores are distances.")

    @classmethod
    def class_name(cls) -> str:
        return "KneeNodePostprocessor"

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        nodes = list(nodes)
        if not nodes:
            return []
        return knee_keep(
            nodes,
            [getattr(item, "score", None) for item in nodes],
            sensitivity=self.sensitivity,
            higher_is_better=self.higher_is_better,
            what="nodes",
            bad_score=lambda position, score: (
                f"nodes[{position}] has score {score!r}; the knee needs every node scored. Put "
                "KneeNodePostprocessor after a retriever or reranker that sets NodeWithScore.score."
            ),
            expects=(
                "KneeNodePostprocessor expects nodes best first "
                f"({'highest' if self.higher_is_better else 'lowest'} score first)."
            ),
        )
