"""LlamaIndex adapter, retriever: :class:`DragKneeRetriever` and its trace event.

Part of :mod:`drag_knee_retriever.integrations.llamaindex`, which re-exports every name here;
import from there. The logger and the instrumentation dispatcher keep that public module's name,
so handlers and log filters set on it see this module's records and events.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence

from drag_knee_retriever.integrations._llamaindex_convert import (  # first: it raises the missing-framework ImportError
    from_llamaindex_documents,
    metadata_filters_to_dict,
    to_node_with_score,
    to_tree_node,
)
from drag_knee_retriever.integrations._common import (
    RetrieverOptions,
    RetrieverSettings,
    check_index,
    check_query,
    make_index,
    trace_payload,
)

import llama_index.core.base.base_retriever as _base_retriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.callbacks.schema import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle

from drag_knee_retriever.errors import InvalidQueryError
from drag_knee_retriever.model._query_args import check_dense
from drag_knee_retriever.loaders import ocr_settings
from drag_knee_retriever.store import QueryVectors
from drag_knee_retriever.integrations._llamaindex_store import members_from_llamaindex
from drag_knee_retriever.integrations._members import MemberStore, check_members

# The public module's name (see the module docstring).
_PUBLIC_NAME = "drag_knee_retriever.integrations.llamaindex"
if TYPE_CHECKING:
    from typing_extensions import Unpack


class LlamaIndexRetrieverOptions(RetrieverOptions, total=False):
    """The LlamaIndex retriever's search settings: both retrievers' plus LlamaIndex's result count."""

    similarity_top_k: Optional[int]


log = logging.getLogger(_PUBLIC_NAME)

# Per-call search options of the running retrieve()/aretrieve(): the base class calls _retrieve with
# the query bundle only, so the options travel beside it (a context variable is per thread and per
# asyncio task, so concurrent calls do not see each other's options).
_CALL_OPTIONS: contextvars.ContextVar[Dict[str, Any]] = contextvars.ContextVar("drag_knee_call_options", default={})
# The trace of the search _retrieve ran, for the RETRIEVE callback payload of retrieve()/aretrieve().
_LAST_TRACE: contextvars.ContextVar[Optional[Dict[str, Any]]] = contextvars.ContextVar("drag_knee_last_trace", default=None)


class _Retrieval:
    """One retrieval call in progress: its query bundle, and the nodes once retrieved."""

    __slots__ = ("bundle", "nodes")

    def __init__(self, bundle: QueryBundle) -> None:
        self.bundle = bundle
        self.nodes: List[NodeWithScore] = []


_dispatcher = get_dispatcher(_PUBLIC_NAME)


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
    walk. ``score_threshold`` drops results scoring below it. ``fusion`` / ``focus`` take a
    :class:`~drag_knee_retriever.FusionConfig` / :class:`~drag_knee_retriever.FocusConfig` (``focus=False``
    skips the focus step), as ``index.search`` does. ``max_tokens`` is a word budget for the returned
    nodes (the best evidence in order until it is full, whole pages where their passages cluster, no
    text twice; words, not model tokens): what a query engine's context gets.

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
        callback_manager: Optional[CallbackManager] = None,
        verbose: bool = False,
        **settings: Unpack[LlamaIndexRetrieverOptions],
    ) -> None:
        self._index = check_index(index)
        # The settings are RetrieverOptions (one list for both retrievers) plus similarity_top_k;
        # an unknown one is a TypeError naming the closest.
        self._settings = RetrieverSettings("similarity_top_k", convert_filters=metadata_filters_to_dict, **settings)
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
        # A NaN or infinite embedding ranked nothing, silently: refuse it.
        dense = check_dense(embedding, size, "the query's embedding (QueryBundle.embedding)")
        # The dense side comes from the caller; the encoder adds the BM25 side of the text.
        return encoder.query_vectors_from_dense(dense, query)

    @staticmethod
    def _check_input(str_or_query_bundle: Any) -> None:
        # The base class reads `.query_str` before `_retrieve` runs, so a wrong type would fail
        # there with an AttributeError; say what is expected instead.
        if not isinstance(str_or_query_bundle, (str, QueryBundle)):
            raise InvalidQueryError(
                f"The query must be a string or a QueryBundle, got {type(str_or_query_bundle).__name__} "
                f"({str_or_query_bundle!r:.60}); pass the question text."
            )

    @contextlib.contextmanager
    def _retrieval(self, str_or_query_bundle: Any, options: Dict[str, Any]) -> Iterator["_Retrieval"]:
        """BaseRetriever.retrieve's steps around one retrieval, shared by :meth:`retrieve` and
        :meth:`aretrieve`: per-call options and a fresh trace slot for this call, the start event,
        the RETRIEVE callback event (whose end payload carries the walk's trace), the end event."""
        self._check_input(str_or_query_bundle)
        token = _CALL_OPTIONS.set(self._settings.for_call(options))
        trace_token = _LAST_TRACE.set(None)
        try:
            self._check_callback_manager()
            _base_retriever.dispatcher.event(RetrievalStartEvent(str_or_query_bundle=str_or_query_bundle))
            bundle = QueryBundle(str_or_query_bundle) if isinstance(str_or_query_bundle, str) else str_or_query_bundle
            call = _Retrieval(bundle)
            with self.callback_manager.as_trace("query"):
                with self.callback_manager.event(
                    CBEventType.RETRIEVE, payload={EventPayload.QUERY_STR: bundle.query_str}
                ) as retrieve_event:
                    yield call
                    retrieve_event.on_end(payload=self._end_payload(call.nodes))
            _base_retriever.dispatcher.event(RetrievalEndEvent(str_or_query_bundle=str_or_query_bundle,
                                                               nodes=call.nodes))
        finally:
            _LAST_TRACE.reset(trace_token)
            _CALL_OPTIONS.reset(token)

    @_base_retriever.dispatcher.span
    def retrieve(self, str_or_query_bundle: Any, **options: Any) -> List[NodeWithScore]:
        """Retrieve nodes for a query string or ``QueryBundle``; ``options`` override the
        retriever's search settings for this call (see the class docstring)."""
        with self._retrieval(str_or_query_bundle, options) as call:
            nodes = self._retrieve(call.bundle)
            call.nodes = self._handle_recursive_retrieval(call.bundle, nodes)
        return call.nodes

    @_base_retriever.dispatcher.span
    async def aretrieve(self, str_or_query_bundle: Any, **options: Any) -> List[NodeWithScore]:
        """Async :meth:`retrieve` (delegates to :meth:`DragKneeIndex.asearch`)."""
        with self._retrieval(str_or_query_bundle, options) as call:
            nodes = await self._aretrieve(call.bundle)
            call.nodes = await self._ahandle_recursive_retrieval(query_bundle=call.bundle, nodes=nodes)
        return call.nodes

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
        members = check_members(members_from_llamaindex(documents, keep_ids=False, group_pages=group_pages))
        config = ocr_settings(ocr, ocr_languages, ocr_cache_dir)
        if index is None:
            index_kwargs = _with_embed_model(index_kwargs, embed_model)
        elif embed_model is not None:
            raise TypeError("index was given, so embed_model cannot configure a new one; drop one of them.")
        index = make_index(index, index_kwargs)
        retriever = cls(index, **(retriever_kwargs or {}))
        store = MemberStore(index, ocr=config)
        store.add(members, progress=progress)
        return retriever

    # -- managing what the index holds (BaseIndex's names) ------------------------------------------

    def insert(self, document: Any, **kwargs: Any) -> Any:
        """Ingest one LlamaIndex document (replacing its old tree if it changed)."""
        return self.insert_documents([document], **kwargs)

    def insert_documents(self, documents: Sequence[Any], *, group_pages: bool = True, progress: Any = None) -> Any:
        """Ingest LlamaIndex documents: pages of one file join that file's tree (inserted now or
        before), an id given again replaces that document, unchanged ones change nothing; ids as
        :func:`~._llamaindex_store.members_from_llamaindex` gives them (stable for documents
        without ids)."""
        store = MemberStore(self._index)
        return store.add(members_from_llamaindex(list(documents), keep_ids=False, group_pages=group_pages),
                         progress=progress)  # add checks them against what is stored, under the write lock

    async def ainsert(self, document: Any, **kwargs: Any) -> Any:
        """:meth:`insert` in a worker thread (encoding is CPU-bound): the event loop runs on."""
        return await asyncio.to_thread(self.insert, document, **kwargs)

    async def ainsert_documents(self, documents: Sequence[Any], **kwargs: Any) -> Any:
        return await asyncio.to_thread(self.insert_documents, documents, **kwargs)

    def refresh_ref_docs(self, documents: Sequence[Any], **kwargs: Any) -> List[bool]:
        """Ingest documents and say, per document, whether it was added or changed (True) or was
        already indexed as is (False), like ``BaseIndex.refresh_ref_docs``."""
        store = MemberStore(self._index)
        members = store.check(members_from_llamaindex(list(documents), keep_ids=False, **kwargs))
        before = {m.id: (m.text, m.metadata) for m in store.get([m.id for m in members])}
        changed = [before.get(m.id) != (m.text, m.metadata) for m in members]
        if any(changed):
            store.add([m for m, c in zip(members, changed) if c])
        return changed

    def delete_ref_doc(self, ref_doc_id: str, delete_from_docstore: bool = False, *,
                       raise_if_missing: bool = False, **kwargs: Any) -> None:
        """Remove a document's whole tree by its id (``delete_from_docstore`` has no meaning here:
        the index is the only store). A missing id is ignored unless ``raise_if_missing``."""
        if kwargs:
            raise TypeError(f"delete_ref_doc takes no options {sorted(kwargs)}.")
        store = MemberStore(self._index)
        if not (store.delete_refs([ref_doc_id]) or store.delete([ref_doc_id])) and raise_if_missing:
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
