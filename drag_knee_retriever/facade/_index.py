"""DragKneeIndex: add, delete and search documents kept as hybrid-indexed trees in Qdrant.

The index owns one store (one client, created once), one encoder (models loaded once) and the
builder settings. A search encodes the query once (dense and sparse) and hands the vectors to
every ranking request: one round trip for the roots, one per tree level visited, and one to fetch
the leaves' text of the inner nodes returned.

The class is a facade: writes go builder -> :mod:`.vectorize` -> store (:mod:`.ingest`); a search is
one pipeline (:mod:`.search.pipeline`: plan, identity, walk, focus, budget, scores, context) run by
the synchronous or the asynchronous driver (:mod:`.search.drivers`); :mod:`.compat` checks an
existing collection.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
from dataclasses import replace
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, TypeVar, Union,
                    cast, overload)

from drag_knee_retriever.search._compat import NO_LIMIT, check_collection_compatible, stored_collection_info, stored_language, stored_max_tokens
from drag_knee_retriever.config import BuildConfig, SearchConfig, SearchOptions, StoreConfig
from drag_knee_retriever.embeddings import Encoder
from drag_knee_retriever.errors import ConfigError, StoreError
from drag_knee_retriever.build._ingest import IngestReport, Ingestor, OrphanSweep, Progress, progress_reporter
from drag_knee_retriever.facade._opening import INDEX_KEYWORDS, embedding_of, open_store, translate_deprecated
from drag_knee_retriever.facade._listing import DocumentInfo, StoredDocument, get_documents, get_nodes, list_documents, stats
from drag_knee_retriever.model._nodes import Document, NodeText, ScoredNode, SearchResult, TreeNode
from drag_knee_retriever.search._drivers import arun, run
from drag_knee_retriever.search._pipeline import flat_steps, search_steps
from drag_knee_retriever.search._plan import MAX_QUERY_CHARS, SearchPlan, build_plan
from drag_knee_retriever.search._roots import RootCache
from drag_knee_retriever.store import QueryVectors
from drag_knee_retriever.build._summarize import ExtractiveSummarizer, Summarizer
from drag_knee_retriever.build._vectorize import Vectorizer

if TYPE_CHECKING:
    from typing_extensions import Unpack, deprecated

log = logging.getLogger(__name__)

__all__ = ["DocumentInfo", "DragKneeIndex", "INDEX_KEYWORDS", "IngestReport", "MAX_QUERY_CHARS", "StoredDocument"]

#: The name tests and earlier code import from here (now :func:`~.opening.open_store`).
_open_store = open_store

_Method = TypeVar("_Method", bound=Callable[..., Any])


def _in_flight(method: _Method) -> _Method:
    """Count a search (``search``, ``asearch``, ``flat_search``) as in flight, so that
    :meth:`DragKneeIndex.close` can wait for it.

    Typed to return the method's own signature, so type checkers see ``search`` / ``flat_search``
    as written (a misspelled keyword is an error), not ``Any``."""

    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def atracked(self: "DragKneeIndex", *args: Any, **kwargs: Any) -> Any:
            thread = threading.get_ident()  # the event loop's: a close() there cannot wait for it
            self._start_search(thread)
            try:
                return await method(self, *args, **kwargs)
            finally:
                self._end_search(thread)

        return cast(_Method, atracked)

    @functools.wraps(method)
    def tracked(self: "DragKneeIndex", *args: Any, **kwargs: Any) -> Any:
        self._start_search()
        try:
            return method(self, *args, **kwargs)
        finally:
            self._end_search()

    return cast(_Method, tracked)


class DragKneeIndex:
    """Hierarchical hybrid retrieval over Qdrant.

    ``location`` says where the index lives, as one argument (QdrantClient's conventions, plus a folder):

    - ``":memory:"`` (the default): an in-process index that lives as long as the object;
    - a folder (``str`` or ``Path``): an embedded index kept on disk (Qdrant Edge, or qdrant-client
      local mode with ``store=StoreConfig(engine="local")``), locked to one process while open;
    - a URL (``"http://localhost:6333"``, ``"https://xyz.cloud.qdrant.io"``): a Qdrant server or cluster,
      with ``StoreConfig(api_key=...)`` or the environment variable ``QDRANT_API_KEY``;
    - your own ``qdrant_client.QdrantClient`` (never closed by the index; an ``AsyncQdrantClient`` for
      ``asearch`` goes in ``StoreConfig(async_client=...)``), or a ready
      :class:`~drag_knee_retriever.store.NodeStore`.

    ``embedding``: an :class:`EmbeddingConfig` (a fastembed model; the default all-MiniLM-L6-v2), your
    own dense model (LangChain ``Embeddings``, a LlamaIndex embedding, a function texts -> vectors), or a
    ready :class:`~drag_knee_retriever.embeddings.Encoder` shared between indexes. ``build``, ``search``
    and ``summarizer`` shape ingestion and search; ``store`` (a :class:`StoreConfig`) how the index talks
    to Qdrant (collection, engine, API key, timeout, ...).

    The spellings the README taught before (``url=``, ``client=``, ``engine=``, ``api_key=``,
    ``async_client=``, ``model_name=``, ``model_path=``, ``language=``) work until 0.2.0, with a
    DeprecationWarning naming the new one.
    """

    if TYPE_CHECKING:
        # What type checkers read: the new spelling, and (flagged as deprecated) the old keywords, so a
        # misspelled one (serach=, colection=) is an error; the implementation below takes **deprecated.
        @overload
        def __init__(self, location: Any = ":memory:", *, embedding: Any = None, build: Optional[BuildConfig] = None,
                     search: Optional[SearchConfig] = None, summarizer: Optional[Summarizer] = None,
                     store: Optional[StoreConfig] = None) -> None: ...

        @overload
        @deprecated("DragKneeIndex(url=/client=/engine=/api_key=/async_client=/model_name=/model_path=/language=) are "
                    "deprecated (removed in 0.2.0): give where the index lives as the first argument, the store's "
                    "settings in store=StoreConfig(...) and the model in embedding=.")
        def __init__(self, location: Any = ":memory:", *, embedding: Any = None, build: Optional[BuildConfig] = None,
                     search: Optional[SearchConfig] = None, summarizer: Optional[Summarizer] = None,
                     store: Optional[StoreConfig] = None, url: Optional[str] = None, client: Any = None,
                     engine: Optional[str] = None, api_key: Optional[str] = None, async_client: Any = None,
                     model_name: Optional[str] = None, model_path: Any = None,
                     language: Optional[str] = None) -> None: ...

    def __init__(
        self,
        location: Any = ":memory:",
        *,
        embedding: Any = None,
        build: Optional[BuildConfig] = None,
        search: Optional[SearchConfig] = None,
        summarizer: Optional[Summarizer] = None,
        store: Optional[StoreConfig] = None,
        **deprecated: Any,
    ) -> None:
        location, embedding, store = translate_deprecated(location, embedding, store, deprecated)
        self.build_config = build if build is not None else BuildConfig()
        self.search_config = search if search is not None else SearchConfig()
        if not isinstance(self.build_config, BuildConfig) or not isinstance(self.search_config, SearchConfig):
            raise ConfigError("build= takes a BuildConfig and search= a SearchConfig.")
        self.store_config = store if store is not None else StoreConfig()
        if not isinstance(self.store_config, StoreConfig):
            raise ConfigError(f"store= takes a StoreConfig (collection, engine, api_key, timeout, ...), got "
                              f"{type(self.store_config).__name__}; pass a NodeStore or client as the first argument.")
        encoder, emb = embedding_of(embedding)
        self.summarizer: Summarizer = summarizer if summarizer is not None else ExtractiveSummarizer(self.build_config)
        self.store, self.store_config = open_store(location, self.store_config)
        collection = self.store_config.collection
        try:
            info = stored_collection_info(self.store)
            if encoder is None:
                if emb.language is None and stored_language(info):
                    # An existing collection keeps the BM25 language it was built with.
                    emb = replace(emb, language=stored_language(info))
                limit = stored_max_tokens(info)
                if embedding is None and limit is not NO_LIMIT:
                    # ... and, opened without embedding settings, the dense window it was built with (an
                    # index built before a default changed keeps opening with the same vectors).
                    emb = replace(emb, max_input_tokens=limit)
                encoder = Encoder(replace(emb, dense=None), dense=emb.dense)
            self.encoder = encoder
            check_collection_compatible(info, collection=collection, model_id=self.encoder.model_id,
                                        dense_size=self.encoder.dense_size, sparse_model=self.encoder.sparse_model)
            self.store.open_collection(
                dense_size=self.encoder.dense_size, model_id=self.encoder.model_id, sparse_model=self.encoder.sparse_model
            )
        except Exception:
            self.store.close()
            raise
        self._flight = threading.Condition()
        self._searching = 0
        # Async searches in flight per event-loop thread: a close() called on that thread cannot wait
        # for them (they resume only once it returns), so it waits for the others only.
        self._searching_on: Dict[int, int] = {}
        self._closing = False
        self.vectorizer = Vectorizer(self.build_config, self.encoder, self.summarizer)
        self._ingestor = Ingestor(self.store, self.build_config, self.summarizer, self.vectorizer)
        # What searches read from the roots (identities, metadata keys and values, search/_roots.py),
        # kept until this index writes or a search meets a document they miss.
        self._roots = RootCache()
        #: A self-query model (``drag_knee_retriever.llm.LangChainSelfQuery(chat_model)`` or
        #: ``LlamaIndexSelfQuery(llm)``): every search first asks it which documents the query names
        #: and filters to them (see :meth:`search`). None: no model (identity matching alone).
        self.self_query: Any = None
        # Writes a killed process (or a failed call) left unfinished are finished first.
        self._replay_journal()

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self, timeout: float = 30.0) -> None:
        """Release the store (and the embedded folder's lock), after searches in flight finish.

        Searches started by other threads (``asearch`` too, on another thread's event loop) are waited
        for (up to ``timeout`` seconds): closing the engine under them logged "Already borrowed" from
        inside Qdrant Edge. An ``asearch`` of the calling thread's own event loop cannot finish while
        ``close()`` blocks that thread, so it is not waited for. Searches started after
        ``close()`` raise :class:`~drag_knee_retriever.errors.StoreError`.
        """
        flight = self.__dict__.get("_flight")
        if flight is not None:
            with flight:
                self._closing = True
                mine = threading.get_ident()
                if not flight.wait_for(lambda: self._searching == self._searching_on.get(mine, 0), timeout=timeout):
                    log.warning("closing with %d search(es) still running after %.0f s", self._searching, timeout)
        self.store.close()

    def _start_search(self, loop_thread: Optional[int] = None) -> None:
        with self._flight:
            if self._closing:
                raise StoreError("This index is closed (or closing); open a new DragKneeIndex to search again.")
            self._searching += 1
            if loop_thread is not None:
                self._searching_on[loop_thread] = self._searching_on.get(loop_thread, 0) + 1

    def _end_search(self, loop_thread: Optional[int] = None) -> None:
        with self._flight:
            self._searching -= 1
            if loop_thread is not None:
                self._searching_on[loop_thread] -= 1
                if not self._searching_on[loop_thread]:
                    del self._searching_on[loop_thread]
            self._flight.notify_all()

    def __enter__(self) -> "DragKneeIndex":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"DragKneeIndex(store={self.store.describe()!r}, collection={self.store_config.collection!r}, "
            f"model={self.encoder.model_id!r})"
        )

    # -- ingestion -------------------------------------------------------------------------------

    def add_documents(self, documents: Iterable[Document], *, progress: Union[Progress, bool, None] = None) -> IngestReport:
        """Index documents. Unchanged documents are skipped; changed ones replace their old tree.

        ``progress``: a function ``progress(phase, done, total)``, or ``True`` for rich's progress bars
        on stderr (as ``show_progress=True`` in LlamaIndex).

        Every document is checked before anything is written, so bad input loses nothing stored.
        A document becomes visible to search only when its root (written last) is stored.
        """
        try:
            with progress_reporter(progress) as report:
                return self._ingestor.add_documents(documents, report)
        finally:
            self._forget_identities()

    def apply_documents(self, documents: Sequence[Document] = (), *, delete: Sequence[str] = (),
                        progress: Union[Progress, bool, None] = None,
                        leaf_vectors: Optional[Mapping[str, Sequence[float]]] = None) -> IngestReport:
        """Replace ``documents`` and remove the documents whose ids ``delete`` lists, crash-safe.

        Unlike :meth:`add_documents` (whose files can be ingested again), the new versions are
        journaled first (beside an embedded index's files), so a process killed at any step leaves
        each document's old tree or its new one, never less: the next open of the index finishes
        the write. For documents that live only in the index (what the vector stores add).
        ``leaf_vectors``: ``{text: dense vector}`` computed with this index's own dense model (a
        framework pipeline's node embeddings): a leaf encoding exactly that text takes it instead of
        being encoded again (vectors of another size are ignored).
        """
        from drag_knee_retriever.build._vectorize import given_vectors

        given = given_vectors(leaf_vectors, self.encoder.dense_size) if leaf_vectors else None
        try:
            with progress_reporter(progress) as report:
                return self._ingestor.apply(list(documents), list(delete), report, given)
        finally:
            self._forget_identities()

    @property
    def write_lock(self) -> Any:
        """The re-entrant lock every write of this index takes: hold it around a read of stored
        documents and the write that follows from it (a read-modify-write), so no other thread's
        write lands in between."""
        return self._ingestor.lock

    def _replay_journal(self) -> None:
        try:
            if self._ingestor.replay_journal():
                self._forget_identities()
        except Exception as exc:  # the index still opens: its reads work, the next write retries
            log.warning("could not finish the document writes left unfinished in %s (%s); the next write "
                        "to this index tries again", self.store.describe(), exc)

    def add_nodes(self, nodes: Sequence[TreeNode], *, progress: Union[Progress, bool, None] = None) -> IngestReport:
        """Index pre-built trees (e.g. from ``DragTreeNodeParser``): every document's full node set."""
        try:
            with progress_reporter(progress) as report:
                return self._ingestor.add_nodes(nodes, report)
        finally:
            self._forget_identities()

    def file_stamps(self, doc_ids: Sequence[str]) -> Dict[str, str]:
        """doc_id -> stored file stamp (``"<size>:<mtime_ns>"``) for ``load_paths(stored_stamps=...)``:
        a file whose size and modification time match is not read again. Only documents built with
        this index's build settings and summariser have one (one request, no texts)."""
        return self._ingestor.file_stamps(doc_ids)

    def delete_document(self, doc_id: str) -> bool:
        """Remove a document's whole tree. Returns False if it was not indexed."""
        try:
            return self._ingestor.delete_document(doc_id)
        finally:
            self._forget_identities()

    async def aadd_documents(self, documents: Iterable[Document], *, progress: Union[Progress, bool, None] = None) -> IngestReport:
        """:meth:`add_documents` without blocking the event loop (building and encoding are
        CPU-bound: they run in a worker thread), with the same guarantees: checked before anything
        is written, one writer at a time, a document visible only once its root is stored."""
        return await asyncio.to_thread(self.add_documents, list(documents), progress=progress)

    async def aadd_nodes(self, nodes: Sequence[TreeNode], *, progress: Union[Progress, bool, None] = None) -> IngestReport:
        """:meth:`add_nodes` in a worker thread."""
        return await asyncio.to_thread(self.add_nodes, nodes, progress=progress)

    async def adelete_document(self, doc_id: str) -> bool:
        """:meth:`delete_document` in a worker thread."""
        return await asyncio.to_thread(self.delete_document, doc_id)

    def sweep_orphans(self) -> OrphanSweep:
        """Delete every rootless document's nodes (what a killed ingest or delete left behind).

        Returns an :class:`~drag_knee_retriever.build._ingest.OrphanSweep` (``doc_ids``, ``nodes``).
        ``add_documents`` / ``add_nodes`` run it at the end on embedded stores; on a shared server
        call it only while no other process is writing (their trees are rootless until done).
        """
        return self._ingestor.sweep_orphans()

    # -- listing ---------------------------------------------------------------------------------

    def list_documents(self) -> List[DocumentInfo]:
        """Every indexed document (from its root node)."""
        return list_documents(self.store)

    def get_documents(self, doc_ids: Sequence[str]) -> List[StoredDocument]:
        """The indexed documents with these ids: whole text (as given with ``Document.keep_text``, else its
        leaves joined by a blank line) and metadata, in the order given; ids not indexed are skipped."""
        return get_documents(self.store, doc_ids)

    def get_nodes(self, node_ids: Sequence[str]) -> List[NodeText]:
        """Tree nodes by id (a result's ``node.id`` / ``parent_id`` / ``child_ids``), each with its
        span's full text, in the order given; ids not stored (or of a tree being rewritten) are
        skipped. One fetch for the nodes, one for the leaves of the inner ones."""
        return get_nodes(self.store, node_ids)

    def stats(self) -> Dict[str, Any]:
        """Documents, nodes per level, model and collection."""
        return stats(self.store, self.encoder, self.store_config.collection)

    # -- search ----------------------------------------------------------------------------------
    # The steps of a search are the pipeline's (search/_pipeline.py); these methods build the plan
    # and run it with the synchronous or the asynchronous driver (search/_drivers.py).

    @_in_flight
    def search(
        self,
        query: str,
        *,
        filters: Any = None,
        config: Optional[SearchConfig] = None,
        query_vectors: Optional[QueryVectors] = None,
        self_query: Any = None,
        fill: bool = False,
        **options: Unpack[SearchOptions],
    ) -> SearchResult:
        """Walk the trees for ``query``; the settings are :class:`SearchConfig`'s, grouped the same way.

        Each setting given here (:class:`~drag_knee_retriever.config.SearchOptions`: ``method`` and its
        own knobs ``beam_width`` / ``max_roots`` / ``sensitivity``, ``fusion=FusionConfig(...)``,
        ``focus=FocusConfig(...)`` (``focus=False`` skips the focus step), ``order``, ``max_results``,
        ``min_score``, ``max_tokens`` (a budget in model tokens for the results, counted by the encoder's
        tokenizer and filled with the best evidence in order: :mod:`drag_knee_retriever.search._budget`) or
        ``max_words`` (the same in words), ``explain``) replaces the index's (or ``config``'s) for
        this search. ``filters`` (applied at every level of the walk) is a LangChain / Mongo-style dict
        (``{"year": {"$gte": 2020}, "$or": [...]}``) or a qdrant-client ``models.Filter``; see
        :mod:`drag_knee_retriever.store.filters`.

        ``self_query`` (default: the index's :attr:`self_query`; ``False``: none for this call): a
        model that reads from the query which documents it names (``llm/self_query.py``); its
        filter joins ``filters``, and is dropped again (``trace.self_query["used"] is False``) when
        it leaves no result.

        ``fill=True`` makes ``max_results`` a count instead of a cap (what a vector store's ``k``
        means): the method's own results, then, when it chose fewer, the best leaves of a hybrid
        ranking under the same filters that no result already covers, up to ``max_results`` (one
        more round trip; the trace shows a ``"fill"`` step). Not with ``max_tokens``, whose budget
        decides the width.
        """
        plan = build_plan(query, config or self.search_config, filters, options, self._token_unit, fill=fill)
        return run(self._search_steps(plan, query_vectors, self_query), self.store, self.encoder)

    @_in_flight
    async def asearch(
        self,
        query: str,
        *,
        filters: Any = None,
        config: Optional[SearchConfig] = None,
        query_vectors: Optional[QueryVectors] = None,
        self_query: Any = None,
        fill: bool = False,
        **options: Unpack[SearchOptions],
    ) -> SearchResult:
        """``search`` without blocking the event loop: same arguments, same steps, same results.

        The query is encoded in a worker thread (CPU-bound); the walk's round trips go through the
        store's async methods (qdrant-client's async client for a server).
        """
        plan = build_plan(query, config or self.search_config, filters, options, self._token_unit, fill=fill)
        return await arun(self._search_steps(plan, query_vectors, self_query), self.store, self.encoder)

    def _token_unit(self) -> Any:
        return self.encoder.token_unit

    def _search_steps(self, plan: SearchPlan, query_vectors: Optional[QueryVectors], self_query: Any) -> Any:
        model = self.self_query if self_query is None else (self_query or None)
        return search_steps(plan, self._roots, query_vectors=query_vectors, dense_size=self.encoder.dense_size,
                            model=model)

    def _forget_identities(self) -> None:
        self._roots.forget()

    def metadata_values(self, keys: Optional[Sequence[str]] = None) -> Dict[str, List[Any]]:
        """The values the indexed documents hold for each metadata key that can name a document
        (``keys``, else the identity keys of :func:`~drag_knee_retriever.search._identity.identity_fields`),
        most frequent first; ``doc_id`` lists readable document ids. What a self-query model is shown."""
        return run(self._roots.metadata_values(keys), self.store)

    def _check_filter_keys(self, spec: Any) -> None:
        """A filter naming a metadata key no indexed document has is a typo: say so, with the keys
        there are (the roots are read again before refusing, for documents added since)."""
        run(self._roots.check_filter_keys(spec), self.store)

    @_in_flight
    def flat_search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: str = "hybrid",
        scope: str = "leaves",
        filters: Any = None,
        query_vectors: Optional[QueryVectors] = None,
        rrf_k: Optional[int] = None,
        unit: str = "leaf",
    ) -> List[ScoredNode]:
        """Flat top-k (the baseline): leaves only, or every node of every level (``scope="all"``).

        ``unit="page"``: the top ``k`` distinct pages, each ranked by its best leaf, so the passages
        of a page split by ``BuildConfig.passage_words`` come back as that whole page (see
        :mod:`~drag_knee_retriever.search._page_ranking`); leaves that are not passages stay as they are.
        """
        steps = flat_steps(query, self._roots, k=k, mode=mode, scope=scope, filters=filters,
                           query_vectors=query_vectors, rrf_k=rrf_k, unit=unit,
                           default_rrf_k=self.search_config.fusion.rrf_k, dense_size=self.encoder.dense_size)
        return run(steps, self.store, self.encoder)
