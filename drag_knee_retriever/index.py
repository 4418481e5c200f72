"""DragKneeIndex: add, delete and search documents kept as hybrid-indexed trees in Qdrant.

The index owns one store (one client, created once), one encoder (models loaded once) and the
builder settings. A search encodes the query once (dense and sparse) and hands the vectors to
every ranking request: one round trip for the roots, one per tree level visited, and one to fetch
the leaves' text of the inner nodes returned.

The class is a facade: writes go builder -> :mod:`.vectorize` -> store (:mod:`.ingest`), searches
go store -> :mod:`.traversal` -> :mod:`.context`; :mod:`.compat` checks an existing collection.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, TypeVar,
                    cast, overload)

from .compat import NO_LIMIT, check_collection_compatible, stored_collection_info, stored_language, stored_max_tokens
from .config import MAX_SETTING, SEARCH_OPTIONS, BuildConfig, EmbeddingConfig, SearchConfig, SearchOptions, StoreConfig
from .budget import BudgetFill, FillSteps, arun_fill, fill_steps, first_words, mark_trace, pack, run_fill
from .redact import redact_url
from .settings import unexpected_keywords, warn_deprecated
from .context import Context, afetch_context, fetch_context, live_with_text, prune_trace, unrooted_docs
from .embeddings import Encoder
from .errors import ConfigError, InvalidQueryError, InvalidSettingError, StoreError
from .identity import NO_MATCH, IdentityIndex, IdentityMatch, identity_fields
from .ingest import IngestReport, Ingestor, OrphanSweep, Progress
from .nodes import Document, NodeText, ScoredNode, SearchResult, Trace, TreeNode, check_unicode
from .page_ranking import rank_pages
from .query_args import check_query_vectors
from .relevance import relevance_request, relevance_scores
from .store import NodeStore, QdrantClientStore, QueryVectors, RankRequest, parse_filters
from .summarize import ExtractiveSummarizer, Summarizer
from .traversal import FocusRanking, abudget_ranking, awalk, budget_ranking, focuses, walk
from .vectorize import Vectorizer

if TYPE_CHECKING:
    from typing_extensions import Unpack, deprecated

log = logging.getLogger(__name__)

__all__ = ["DocumentInfo", "DragKneeIndex", "IngestReport", "MAX_QUERY_CHARS", "StoredDocument"]

#: search()'s keywords besides its per-search settings (SEARCH_OPTIONS).
_SEARCH_ARGUMENTS = ("filters", "config", "query_vectors", "self_query")

# Longer queries are cut (a dense model reads at most a few hundred tokens anyway).
MAX_QUERY_CHARS = 8192


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
_Method = TypeVar("_Method", bound=Callable[..., Any])


def _in_flight(method: _Method) -> _Method:
    """Count a search as in flight, so that :meth:`DragKneeIndex.close` can wait for it.

    Typed to return the method's own signature, so type checkers see ``search`` / ``flat_search``
    as written (a misspelled keyword is an error), not ``Any``."""

    @functools.wraps(method)
    def tracked(self: "DragKneeIndex", *args: Any, **kwargs: Any) -> Any:
        flight = self._flight
        with flight:
            if self._closing:
                raise StoreError("This index is closed (or closing); open a new DragKneeIndex to search again.")
            self._searching += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            with flight:
                self._searching -= 1
                flight.notify_all()

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

    The spellings of earlier releases (``path=``, ``url=``, ``client=``, ``store=<NodeStore>``,
    ``collection=``, ``engine=``, ``api_key=``, ``timeout=``, ``async_client=``, ``model_name=``,
    ``model_path=``, ``language=``, ``encoder=``) still work for one release, with a DeprecationWarning
    naming the new one.
    """

    if TYPE_CHECKING:
        # What type checkers read: the new spelling, and (flagged as deprecated) the old keywords, so a
        # misspelled one (serach=, colection=) is an error; the implementation below takes **deprecated.
        @overload
        def __init__(self, location: Any = ":memory:", *, embedding: Any = None, build: Optional[BuildConfig] = None,
                     search: Optional[SearchConfig] = None, summarizer: Optional[Summarizer] = None,
                     store: Optional[StoreConfig] = None) -> None: ...

        @overload
        @deprecated("DragKneeIndex(path=/url=/client=/collection=/engine=/api_key=/timeout=/async_client=/model_name=/"
                    "model_path=/language=/encoder=) are deprecated: give where the index lives as the first argument, "
                    "the store's settings in store=StoreConfig(...) and the model in embedding=.")
        def __init__(self, location: Any = ":memory:", *, embedding: Any = None, build: Optional[BuildConfig] = None,
                     search: Optional[SearchConfig] = None, summarizer: Optional[Summarizer] = None,
                     store: Any = None, path: Any = None, url: Optional[str] = None, client: Any = None,
                     collection: Optional[str] = None, engine: Optional[str] = None, api_key: Optional[str] = None,
                     timeout: Optional[float] = None, async_client: Any = None, model_name: Optional[str] = None,
                     model_path: Any = None, language: Optional[str] = None, encoder: Any = None) -> None: ...

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
        location, embedding, store = _translate_deprecated(location, embedding, store, deprecated)
        self.build_config = build if build is not None else BuildConfig()
        self.search_config = search if search is not None else SearchConfig()
        if not isinstance(self.build_config, BuildConfig) or not isinstance(self.search_config, SearchConfig):
            raise ConfigError("build= takes a BuildConfig and search= a SearchConfig.")
        self.store_config = store if store is not None else StoreConfig()
        if not isinstance(self.store_config, StoreConfig):
            raise ConfigError(f"store= takes a StoreConfig (collection, engine, api_key, timeout, ...), got "
                              f"{type(self.store_config).__name__}; pass a NodeStore or client as the first argument.")
        encoder, emb = _embedding_of(embedding)
        self.summarizer: Summarizer = summarizer if summarizer is not None else ExtractiveSummarizer(self.build_config)
        self.store, self.store_config = _open_store(location, self.store_config)
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
                    emb = replace(emb, max_tokens=limit)
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
        self._closing = False
        self.vectorizer = Vectorizer(self.build_config, self.encoder, self.summarizer)
        self._ingestor = Ingestor(self.store, self.build_config, self.summarizer, self.vectorizer)
        # Metadata keys seen in indexed documents (for the unknown-filter-key check). Only grows:
        # a document being replaced by a concurrent writer must not make its keys "unknown".
        self._metadata_keys: frozenset = frozenset()
        # The documents' identities (identity.py), per identity_keys setting, read from the roots on
        # first use; dropped by this index's writes and when a search meets a document they miss.
        self._identities: Dict[Optional[Tuple[str, ...]], IdentityIndex] = {}
        self._roots_meta: Optional[List[Tuple[str, Mapping[str, Any]]]] = None
        #: A self-query model (``drag_knee_retriever.llm.LangChainSelfQuery(chat_model)`` or
        #: ``LlamaIndexSelfQuery(llm)``): every search first asks it which documents the query names
        #: and filters to them (see :meth:`search`). None: no model (identity matching alone).
        self.self_query: Any = None
        # Writes a killed process (or a failed call) left unfinished are finished first.
        self._replay_journal()

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self, timeout: float = 30.0) -> None:
        """Release the store (and the embedded folder's lock), after searches in flight finish.

        Searches started by other threads are waited for (up to ``timeout`` seconds): closing the
        engine under them logged "Already borrowed" from inside Qdrant Edge. Searches started after
        ``close()`` raise :class:`~drag_knee_retriever.errors.StoreError`.
        """
        flight = self.__dict__.get("_flight")
        if flight is not None:
            with flight:
                self._closing = True
                if not flight.wait_for(lambda: self._searching == 0, timeout=timeout):
                    log.warning("closing with %d search(es) still running after %.0f s", self._searching, timeout)
        self.store.close()

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

    def add_documents(self, documents: Iterable[Document], *, progress: Optional[Progress] = None) -> IngestReport:
        """Index documents. Unchanged documents are skipped; changed ones replace their old tree.

        Every document is checked before anything is written, so bad input loses nothing stored.
        A document becomes visible to search only when its root (written last) is stored.
        """
        try:
            return self._ingestor.add_documents(documents, progress)
        finally:
            self._forget_identities()

    def apply_documents(self, documents: Sequence[Document] = (), *, delete: Sequence[str] = (),
                        progress: Optional[Progress] = None) -> IngestReport:
        """Replace ``documents`` and remove the documents whose ids ``delete`` lists, crash-safe.

        Unlike :meth:`add_documents` (whose files can be ingested again), the new versions are
        journaled first (beside an embedded index's files), so a process killed at any step leaves
        each document's old tree or its new one, never less: the next open of the index finishes
        the write. For documents that live only in the index (what the vector stores add).
        """
        try:
            return self._ingestor.apply(list(documents), list(delete), progress)
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

    def add_nodes(self, nodes: Sequence[TreeNode], *, progress: Optional[Progress] = None) -> IngestReport:
        """Index pre-built trees (e.g. from ``DragTreeNodeParser``): every document's full node set."""
        try:
            return self._ingestor.add_nodes(nodes, progress)
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

    async def aadd_documents(self, documents: Iterable[Document], *, progress: Optional[Progress] = None) -> IngestReport:
        """:meth:`add_documents` without blocking the event loop (building and encoding are
        CPU-bound: they run in a worker thread), with the same guarantees: checked before anything
        is written, one writer at a time, a document visible only once its root is stored."""
        return await asyncio.to_thread(self.add_documents, list(documents), progress=progress)

    async def aadd_nodes(self, nodes: Sequence[TreeNode], *, progress: Optional[Progress] = None) -> IngestReport:
        """:meth:`add_nodes` in a worker thread."""
        return await asyncio.to_thread(self.add_nodes, nodes, progress=progress)

    async def adelete_document(self, doc_id: str) -> bool:
        """:meth:`delete_document` in a worker thread."""
        return await asyncio.to_thread(self.delete_document, doc_id)

    def sweep_orphans(self) -> OrphanSweep:
        """Delete every rootless document's nodes (what a killed ingest or delete left behind).

        Returns an :class:`~drag_knee_retriever.ingest.OrphanSweep` (``doc_ids``, ``nodes``).
        ``add_documents`` / ``add_nodes`` run it at the end on embedded stores; on a shared server
        call it only while no other process is writing (their trees are rootless until done).
        """
        return self._ingestor.sweep_orphans()

    # -- listing ---------------------------------------------------------------------------------

    def list_documents(self) -> List[DocumentInfo]:
        """Every indexed document (from its root node)."""
        roots = self.store.scroll_nodes(level=0)
        infos = []
        for root in sorted(roots, key=lambda n: n.doc_id):
            infos.append(DocumentInfo(
                doc_id=root.doc_id, leaves=root.span.last_leaf + 1,
                metadata=root.metadata, doc_hash=root.doc_hash,
                first_page=root.span.first_page, last_page=root.span.last_page,
            ))
        return infos

    def get_documents(self, doc_ids: Sequence[str]) -> List["StoredDocument"]:
        """The indexed documents with these ids: whole text (as given with ``Document.keep_text``, else its
        leaves joined by a blank line) and metadata, in the order given; ids not indexed are skipped."""
        out = []
        for doc_id in dict.fromkeys(doc_ids):
            if not isinstance(doc_id, str) or not doc_id:
                raise InvalidQueryError(f"document ids are non-empty strings, got {doc_id!r}.")
            nodes = self.store.scroll_nodes(filters=parse_filters({"doc_id": doc_id}))
            if not any(n.level == 0 for n in nodes):
                continue  # not indexed (or an interrupted ingest's rootless leftovers)
            leaves = sorted((n for n in nodes if n.is_leaf), key=lambda n: n.span.first_leaf)
            root = next(n for n in nodes if n.level == 0)
            text = root.source_text if root.source_text is not None else "\n\n".join(leaf.text for leaf in leaves)
            out.append(StoredDocument(doc_id=doc_id, text=text, metadata=dict(root.metadata)))
        return out

    def get_nodes(self, node_ids: Sequence[str]) -> List[NodeText]:
        """Tree nodes by id (a result's ``node.id`` / ``parent_id`` / ``child_ids``), each with its
        span's full text, in the order given; ids not stored (or of a tree being rewritten) are
        skipped. One fetch for the nodes, one for the leaves of the inner ones."""
        from .store import RankedHit

        import uuid

        def is_node_id(value: Any) -> bool:  # node ids are UUIDs; anything else names no node
            try:
                return isinstance(value, str) and str(uuid.UUID(value)) == value.lower()
            except ValueError:
                return False

        ids = [i for i in dict.fromkeys(node_ids) if is_node_id(i)]
        nodes = [n for n in self.store.retrieve(ids) if n.id in set(ids)] if ids else []
        hits, texts = fetch_context(self.store, [RankedHit(node=n, score=0.0) for n in nodes])
        by_id = {h.node.id: NodeText(node=h.node, text=texts[h.node.id]) for h in hits}
        return [by_id[i] for i in ids if i in by_id]

    def stats(self) -> Dict[str, Any]:
        """Documents, nodes per level, model and collection."""
        nodes = self.store.scroll_nodes(with_text=False)
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
        info = self.store.collection_info()
        return {
            # A document is one with a root; rootless leftovers are counted apart (`docs gc`).
            "documents": len(rooted),
            "orphan_documents": len(docs - rooted),
            "nodes": len(nodes),
            "leaves": leaves,
            "nodes_per_level": dict(sorted(per_level.items())),
            "embedding_model": self.encoder.model_id,
            "embedding_source": getattr(self.encoder, "model_source", None),
            "dense_size": self.encoder.dense_size,
            "sparse_model": self.encoder.sparse_model,
            "collection": self.store_config.collection,
            "engine": self.store.describe(),
            "stored_model": info.get("model_id"),
        }

    # -- search ----------------------------------------------------------------------------------

    @_in_flight
    def search(
        self,
        query: str,
        *,
        filters: Any = None,
        config: Optional[SearchConfig] = None,
        query_vectors: Optional[QueryVectors] = None,
        self_query: Any = None,
        **options: Unpack[SearchOptions],
    ) -> SearchResult:
        """Walk the trees for ``query``; the settings are :class:`SearchConfig`'s, grouped the same way.

        Each setting given here (:class:`~drag_knee_retriever.config.SearchOptions`: ``method`` and its
        own knobs ``beam_width`` / ``max_roots`` / ``sensitivity``, ``fusion=FusionConfig(...)``,
        ``focus=FocusConfig(...)`` (``focus=False`` skips the focus step), ``order``, ``max_results``,
        ``min_score``, ``max_tokens`` (a word budget for the results, filled with the best evidence in
        order: :mod:`drag_knee_retriever.budget`), ``explain``) replaces the index's (or ``config``'s) for
        this search. ``filters`` (applied at every level of the walk) is a LangChain / Mongo-style dict
        (``{"year": {"$gte": 2020}, "$or": [...]}``) or a qdrant-client ``models.Filter``; see
        :mod:`drag_knee_retriever.store.filters`.

        ``self_query`` (default: the index's :attr:`self_query`; ``False``: none for this call): a
        model that reads from the query which documents it names (``llm/self_query.py``); its
        filter joins ``filters``, and is dropped again (``trace.self_query["used"] is False``) when
        it leaves no result.
        """
        plan = self._plan(query, filters=filters, config=config, options=options)
        if query_vectors is not None:
            check_query_vectors(query_vectors, self.encoder.dense_size)
        vectors = query_vectors if query_vectors is not None else self.encoder.encode_query(plan.query)
        plan.mark("encode")
        model = self.self_query if self_query is None else (self_query or None)
        if model is not None:
            extra = model.filters(plan.query, self.metadata_values(getattr(model, "keys", None)))
            plan.mark("self_query")
            if extra:
                result = self._walk(plan.narrowed(parse_filters(extra)), vectors)
                result.trace.self_query = {"filters": extra, "used": bool(result.nodes)}
                if result.nodes:
                    return result
                plan.trace.self_query = result.trace.self_query
        return self._walk(plan, vectors)

    def _walk(self, plan: "_SearchPlan", vectors: QueryVectors) -> SearchResult:
        rrf_k = plan.settings.fusion.rrf_k

        # The walk reads only the nodes' structure (light rankings); the final fetch brings the
        # chosen nodes whole, with their spans' text, and checks that they are still live.
        def rank(requests: Sequence[RankRequest]):
            return self.store.rank(requests, vectors, rrf_k=rrf_k, explain=plan.settings.explain, light=True)

        def score(hits: Sequence[Any]) -> None:  # the public [0, 1] scores (relevance.py)
            extra = relevance_request(hits)
            plan.score(hits, self.store.rank([extra], vectors, rrf_k=rrf_k, explain=False,
                                             light=True)[0] if extra else ())

        identity = self._identity_match(plan)
        if plan.fills_budget:
            ranking = budget_ranking(rank, plan.settings, plan.filters, plan.trace, identity)
            plan.mark("walk")
            self._check_identities(plan)
            if ranking.ranked:
                filled = run_fill(plan.fill_steps(ranking), self.store.retrieve)
                score(filled.hits)
                return self._result(plan, *plan.budget_context(ranking, filled))
            hits = ranking.regions  # no leaf under the regions matched: the walk's nodes, packed
        else:
            hits = walk(rank, plan.settings, plan.filters, plan.trace, identity)
            plan.mark("walk")
            self._check_identities(plan)
        score(hits)
        return self._result(plan, *plan.packed(fetch_context(self.store, plan.cap(hits), refresh=True,
                                                             trace=plan.trace)))

    async def asearch(
        self,
        query: str,
        *,
        filters: Any = None,
        config: Optional[SearchConfig] = None,
        query_vectors: Optional[QueryVectors] = None,
        self_query: Any = None,
        **options: Unpack[SearchOptions],
    ) -> SearchResult:
        """``search`` without blocking the event loop: same arguments, same results.

        The query is encoded in a worker thread (CPU-bound); the walk's round trips go through the
        store's async methods (qdrant-client's async client for a server).
        """
        plan = self._plan(query, filters=filters, config=config, options=options)
        if query_vectors is not None:
            check_query_vectors(query_vectors, self.encoder.dense_size)
        vectors = query_vectors if query_vectors is not None else await _aencode_query(self.encoder, plan.query)
        plan.mark("encode")
        model = self.self_query if self_query is None else (self_query or None)
        if model is not None:
            extra = await model.afilters(plan.query, self.metadata_values(getattr(model, "keys", None)))
            plan.mark("self_query")
            if extra:
                result = await self._awalk(plan.narrowed(parse_filters(extra)), vectors)
                result.trace.self_query = {"filters": extra, "used": bool(result.nodes)}
                if result.nodes:
                    return result
                plan.trace.self_query = result.trace.self_query
        return await self._awalk(plan, vectors)

    async def _awalk(self, plan: "_SearchPlan", vectors: QueryVectors) -> SearchResult:
        rrf_k = plan.settings.fusion.rrf_k

        async def rank(requests: Sequence[RankRequest]):
            return await self.store.arank(requests, vectors, rrf_k=rrf_k, explain=plan.settings.explain, light=True)

        async def score(hits: Sequence[Any]) -> None:
            extra = relevance_request(hits)
            plan.score(hits, (await self.store.arank([extra], vectors, rrf_k=rrf_k, explain=False,
                                                     light=True))[0] if extra else ())

        identity = self._identity_match(plan)
        if plan.fills_budget:
            ranking = await abudget_ranking(rank, plan.settings, plan.filters, plan.trace, identity)
            plan.mark("walk")
            self._check_identities(plan)
            if ranking.ranked:
                filled = await arun_fill(plan.fill_steps(ranking), self.store.aretrieve)
                await score(filled.hits)
                return self._result(plan, *plan.budget_context(ranking, filled))
            hits = ranking.regions
        else:
            hits = await awalk(rank, plan.settings, plan.filters, plan.trace, identity)
            plan.mark("walk")
            self._check_identities(plan)
        await score(hits)
        return self._result(plan, *plan.packed(await afetch_context(self.store, plan.cap(hits), refresh=True,
                                                                    trace=plan.trace)))

    def _plan(self, query: Any, *, filters: Any, config: Optional[SearchConfig],
              options: Mapping[str, Any]) -> "_SearchPlan":
        """Validate everything about a search before any work is done."""
        started = time.perf_counter()
        query = _validate_query(query)
        base = config or self.search_config
        unknown = set(options) - set(SEARCH_OPTIONS)
        if unknown:
            raise unexpected_keywords("search()", sorted(unknown), SEARCH_OPTIONS + _SEARCH_ARGUMENTS,
                                      "the per-search settings are " + ", ".join(
                                          n for n in SEARCH_OPTIONS if n != "fusion_weights")
                                      + ", and filters, config and query_vectors.")
        overrides = dict(options)
        fusion_weights = overrides.pop("fusion_weights", None)
        if fusion_weights is not None:
            warn_deprecated("search(fusion_weights=...)", "search(fusion=FusionConfig(weights=...))", stacklevel=4)
            if overrides.get("fusion") is not None:
                raise InvalidQueryError("Give fusion= or fusion_weights=, not both.")
            try:
                overrides["fusion"] = replace(base.fusion, weights=fusion_weights)
            except ConfigError as exc:
                raise InvalidSettingError(str(exc)) from None
        settings = base.with_overrides(**overrides)
        spec = parse_filters(filters)
        self._check_filter_keys(spec)
        return _SearchPlan(query=query, settings=settings, filters=spec,
                           trace=Trace(query=query, method=settings.method),
                           requests_before=self.store.requests, started=started)

    def _forget_identities(self) -> None:
        self._identities = {}
        self._roots_meta = None

    def _root_metadata(self) -> List[Tuple[str, Mapping[str, Any]]]:
        """Every document's (doc_id, metadata), read from the roots once and kept until a write."""
        if self._roots_meta is None:
            self._roots_meta = [(r.doc_id, r.metadata) for r in self.store.scroll_nodes(level=0, with_text=False)]
        return self._roots_meta

    def metadata_values(self, keys: Optional[Sequence[str]] = None) -> Dict[str, List[Any]]:
        """The values the indexed documents hold for each metadata key that can name a document
        (``keys``, else the identity keys of :func:`~drag_knee_retriever.identity.identity_fields`),
        most frequent first; ``doc_id`` lists readable document ids. What a self-query model is shown."""
        return identity_fields(self._root_metadata(), keys)

    def _identity_match(self, plan: "_SearchPlan") -> IdentityMatch:
        """The documents the query names (identity.py), or none when identity is switched off."""
        settings = plan.settings
        if not (settings.identity_weight or (settings.focus is not None and settings.focus.identity_weight)):
            return NO_MATCH
        table = self._identities.get(settings.identity_keys)
        if table is None:
            # Roots carry their document's metadata; read once (without text) and kept until a write.
            roots = self.store.scroll_nodes(level=0, with_text=False)
            table = IdentityIndex.from_roots(roots, settings.identity_keys)
            self._roots_meta = [(r.doc_id, r.metadata) for r in roots]
            self._identities[settings.identity_keys] = table
        match = table.match(plan.query, limit=settings.max_roots or settings.beam_width or 20,
                            coverage=settings.identity_coverage)
        plan.mark("identity")
        return match

    def _check_identities(self, plan: "_SearchPlan") -> None:
        """Forget the identities when the walk met a root they do not know (another process wrote)."""
        table = self._identities.get(plan.settings.identity_keys)
        if table is None or not plan.trace.steps:
            return
        if any(not table.knows(c.doc_id, c.doc_hash) for c in plan.trace.steps[0].candidates):
            self._forget_identities()

    def _check_filter_keys(self, spec: Any) -> None:
        """A filter naming a metadata key no indexed document has is a typo: say so, with the keys
        there are (the roots are read again before refusing, for documents added since)."""
        from .store.filters import filter_fields

        wanted = {f[len("metadata."):].split(".")[0] for f in filter_fields(spec) if f.startswith("metadata.")}
        if not wanted:
            return
        if wanted <= self._metadata_keys:
            return
        self._metadata_keys = self._metadata_keys | frozenset(
            k for root in self.store.scroll_nodes(level=0, with_text=False)
            for k in (*root.metadata, *(root.metadata.get("drag_page_keys") or ())))
        unknown = sorted(wanted - self._metadata_keys)
        if not unknown:
            return
        raise InvalidQueryError(
            f"filter key(s) {unknown} are in no indexed document's metadata; the keys are "
            f"{sorted(self._metadata_keys)[:20]} (and doc_id, level, is_leaf)."
        )

    def _result(self, plan: "_SearchPlan", hits: Sequence[Any], texts: Dict[str, str]) -> SearchResult:
        nodes = [ScoredNode(node=h.node, score=plan.public[h.node.id], rank=i, text=texts[h.node.id], raw_score=h.score)
                 for i, h in enumerate(hits)]
        if plan.settings.order == "document":
            nodes.sort(key=lambda s: (s.node.doc_id, s.node.span.first_leaf))
        plan.mark("context")
        plan.trace.requests = self.store.requests - plan.requests_before
        plan.trace.timings_ms["total"] = (time.perf_counter() - plan.started) * 1e3
        return SearchResult(query=plan.query, method=plan.settings.method, nodes=nodes, trace=plan.trace)

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
        :mod:`~drag_knee_retriever.page_ranking`); leaves that are not passages stay as they are.
        """
        query = _validate_query(query)
        if unit not in ("leaf", "page"):
            raise InvalidQueryError(f"unit must be 'leaf' or 'page', got {unit!r}.")
        if unit == "page" and scope != "leaves":
            raise InvalidQueryError("unit='page' groups leaves into their pages: use it with scope='leaves'.")
        if mode not in ("hybrid", "dense", "sparse"):
            raise InvalidQueryError(f"mode must be 'hybrid', 'dense' or 'sparse', got {mode!r}.")
        if scope not in ("leaves", "all"):
            raise InvalidQueryError(f"scope must be 'leaves' or 'all', got {scope!r}.")
        for name, value in (("k", k), ("rrf_k", rrf_k)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 1 <= value <= MAX_SETTING):
                raise InvalidQueryError(f"{name} must be an integer >= 1 (at most {MAX_SETTING:,}), got {value!r}.")
        spec = parse_filters(filters)
        self._check_filter_keys(spec)  # the same filter rules as search()
        if query_vectors is None:
            query_vectors = self.encoder.encode_query(query)
        else:
            check_query_vectors(query_vectors, self.encoder.dense_size)
        request = RankRequest(limit=k, leaves_only=scope == "leaves", filters=spec,
                              only=None if mode == "hybrid" else mode)
        rrf_k = rrf_k if rrf_k is not None else self.search_config.fusion.rrf_k
        if unit == "page":
            hits = rank_pages(self.store, request, query_vectors, k=k, rrf_k=rrf_k)
        else:
            hits = self.store.rank([request], query_vectors, rrf_k=rrf_k, explain=False)[0]
        extra = relevance_request(hits)
        public = dict(zip((h.node.id for h in hits), relevance_scores(
            hits, self.store.rank([extra], query_vectors, rrf_k=rrf_k, explain=False, light=True)[0] if extra else ())))
        hits, texts = fetch_context(self.store, hits)
        return [ScoredNode(node=h.node, score=public[h.node.id], rank=i, text=texts[h.node.id], raw_score=h.score)
                for i, h in enumerate(hits)]


@dataclass
class _SearchPlan:
    """A validated search: its settings, parsed filters, trace, and a stopwatch."""

    query: str
    settings: SearchConfig
    filters: Any
    trace: Trace
    requests_before: int
    started: float
    last: float = 0.0
    # node id -> the result's public score in [0, 1] (relevance.py); filled by score().
    public: Dict[str, float] = field(default_factory=dict)

    def score(self, hits: Sequence[Any], answered: Sequence[Any]) -> None:
        """Give every hit its public score (the walk's raw scores stay on the hits)."""
        self.public = dict(zip((h.node.id for h in hits), relevance_scores(hits, answered)))
        self.mark("score")

    def narrowed(self, extra: Any) -> "_SearchPlan":
        """The same search with ``extra`` conditions joined to its filters (a fresh trace)."""
        return _SearchPlan(query=self.query, settings=self.settings, filters=tuple(self.filters) + tuple(extra),
                           trace=Trace(query=self.query, method=self.settings.method, timings_ms=dict(self.trace.timings_ms)),
                           requests_before=self.requests_before, started=self.started, last=self.last)

    def cap(self, hits: Sequence[Any]) -> List[Any]:
        """The walk's results within ``min_score`` (on the public score) and ``max_results``
        (the method's best by its own raw score kept)."""
        out = list(hits)
        if self.settings.min_score is not None:
            out = [h for h in out if self.public.get(h.node.id, 0.0) >= self.settings.min_score]
        if self.settings.max_results is not None and len(out) > self.settings.max_results:
            keep = set(id(h) for h in sorted(out, key=lambda h: -h.score)[: self.settings.max_results])
            out = [h for h in out if id(h) in keep]
        return out

    @property
    def fills_budget(self) -> bool:
        """A word budget over a knee method's focus ranking (the other methods pack their results)."""
        return self.settings.max_tokens is not None and focuses(self.settings)

    def fill_steps(self, ranking: FocusRanking) -> FillSteps:
        """The budget fill's reads, bringing also the roots the trace's leaf rankings need."""
        assert self.settings.max_tokens is not None
        assert self.settings.focus is not None
        return fill_steps(ranking.ranked, ranking.regions, self.settings.max_tokens, self.settings.focus.merge_ratio,
                          root_docs=sorted(unrooted_docs(self.trace)))

    def budget_context(self, ranking: FocusRanking, filled: BudgetFill) -> Context:
        """The live hits of a fill (within ``min_score`` / ``max_results``) and their texts; the
        focus step of the trace says which leaves were kept, merged or left out."""
        assert self.settings.max_tokens is not None
        prune_trace(self.trace, filled.fetched)
        hits, texts = live_with_text(self.cap(filled.hits), filled.fetched, refresh=True)
        if filled.cut_to_budget:
            texts = {i: first_words(t, self.settings.max_tokens) for i, t in texts.items()}
        if ranking.step is not None:
            mark_trace(ranking.step, hits)
        return hits, texts

    def packed(self, context: Context) -> Context:
        """The results within ``max_tokens`` words, if a budget is set (see :func:`~.budget.pack`)."""
        if self.settings.max_tokens is None:
            return context
        return pack(context[0], context[1], self.settings.max_tokens)

    def mark(self, phase: str) -> None:
        now = time.perf_counter()
        self.trace.timings_ms[phase] = (now - (self.last or self.started)) * 1e3
        self.last = now


def _validate_query(query: Any) -> str:
    if not isinstance(query, str):
        raise InvalidQueryError(f"query must be a string, got {type(query).__name__}.")
    if not query.strip():
        raise InvalidQueryError("query is empty; give some words to search for.")
    check_unicode(query, "query", InvalidQueryError)
    if len(query) > MAX_QUERY_CHARS:
        log.warning("query of %d characters cut to %d", len(query), MAX_QUERY_CHARS)
        query = query[:MAX_QUERY_CHARS]
    return query


async def _aencode_query(encoder: Any, text: str) -> QueryVectors:
    # The embedder's own async method when its class has one (a LangChain/LlamaIndex model's
    # aembed_query); wrappers that only define encode_query run it in a worker thread.
    if callable(getattr(type(encoder), "aencode_query", None)):
        return await encoder.aencode_query(text)
    return await asyncio.to_thread(encoder.encode_query, text)


# Keywords of earlier releases: where each one went (see _translate_deprecated).
_TO_LOCATION = ("path", "url", "client")
_TO_STORE = ("collection", "engine", "api_key", "timeout", "async_client")
_TO_EMBEDDING = ("model_name", "model_path", "language")
_DEPRECATED_KEYWORDS = _TO_LOCATION + _TO_STORE + _TO_EMBEDDING + ("encoder",)
_KEYWORDS = ("embedding", "build", "search", "summarizer", "store")  # the constructor's own
#: Every keyword DragKneeIndex() takes (the deprecated spellings included): what an adapter's
#: ``from_documents`` passes on to a new index.
INDEX_KEYWORDS: Tuple[str, ...] = ("location",) + _KEYWORDS + _DEPRECATED_KEYWORDS
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_HOST_PORT = re.compile(r"^[\w.-]+:\d{1,5}$")


def _translate_deprecated(location: Any, embedding: Any, store: Any,
                          old: Dict[str, Any]) -> Tuple[Any, Any, Optional[StoreConfig]]:
    """Map the constructor keywords of earlier releases onto the new ones, each with a DeprecationWarning."""
    unknown = sorted(set(old) - set(_DEPRECATED_KEYWORDS))
    if unknown:
        raise unexpected_keywords("DragKneeIndex()", unknown, _KEYWORDS + _DEPRECATED_KEYWORDS,
                                  "it takes a location, embedding=, build=, search=, summarizer= and "
                                  "store=StoreConfig(...).")
    if store is not None and not isinstance(store, StoreConfig) and _is_store(store):
        # store= was a ready NodeStore before StoreConfig was accepted here.
        old["store"] = store
        store = None
    places = {k: v for k, v in old.items() if k in _TO_LOCATION + ("store",) and v is not None}
    if places:
        if len(places) > 1 or (isinstance(location, (str, os.PathLike)) and str(location) != ":memory:"):
            given = ", ".join(f"{k}=" for k in places)
            raise ConfigError(f"Give where the index lives once, as the first argument (a folder, ':memory:', a URL, a "
                              f"QdrantClient or a NodeStore), not also {given}.")
        (name, value), = places.items()
        if name == "client" and type(value).__name__ != "QdrantClient":
            raise ConfigError(f"client= takes a qdrant_client.QdrantClient, got {type(value).__name__}; "
                              "pass it as the first argument: DragKneeIndex(QdrantClient(...)).")
        warn_deprecated(f"DragKneeIndex({name}=...)", "DragKneeIndex(location) (where the index lives, the first "
                        "argument: a folder, ':memory:', a URL, a QdrantClient or a NodeStore)", stacklevel=3)
        if name == "url" and isinstance(value, str) and not _URL.match(value):
            value = f"http://{value}"  # url= always meant a server; qdrant-client reads host:port as http
        location = value
    store_changes = {k: old[k] for k in _TO_STORE if old.get(k) is not None}
    if store_changes:
        warn_deprecated(f"DragKneeIndex({', '.join(k + '=' for k in store_changes)}...)",
                        f"DragKneeIndex(..., store=StoreConfig({', '.join(k + '=' for k in store_changes)}...))",
                        stacklevel=3)
        store = replace(store or StoreConfig(), **store_changes)
    emb_changes = {k: old[k] for k in _TO_EMBEDDING if old.get(k)}
    if old.get("encoder") is not None:
        warn_deprecated("DragKneeIndex(encoder=...)", "DragKneeIndex(embedding=<the encoder>)", stacklevel=3)
        if embedding is not None:
            raise ConfigError("Give either encoder= or embedding=, not both (embedding= takes a ready encoder too).")
        embedding = old["encoder"]
    if emb_changes:
        warn_deprecated(f"DragKneeIndex({', '.join(k + '=' for k in emb_changes)}...)",
                        f"DragKneeIndex(embedding=EmbeddingConfig({', '.join(k + '=' for k in emb_changes)}...))",
                        stacklevel=3)
        if embedding is not None and not isinstance(embedding, EmbeddingConfig):
            if _is_encoder(embedding):
                raise ConfigError("a ready encoder was given, so model_name/model_path/language cannot apply too; "
                                  "drop one of them.")
            raise ConfigError(
                "embedding= is your own dense model, so model_name/model_path (a fastembed model) cannot apply "
                "too; drop one of them (the BM25 language goes in EmbeddingConfig(dense=<model>, language=...)).")
        embedding = replace(embedding or EmbeddingConfig(), **emb_changes)
    return location, embedding, store


def _is_store(value: Any) -> bool:
    """A ready :class:`NodeStore` (or an object that serves as one)."""
    return isinstance(value, NodeStore) or all(hasattr(value, m) for m in ("rank", "open_collection", "scroll_nodes"))


def _is_encoder(value: Any) -> bool:
    """A ready encoder (dense + BM25: an :class:`Encoder` or a wrapper of one), not a dense model."""
    return hasattr(value, "encode_query") and hasattr(value, "sparse_model")


def _embedding_of(embedding: Any) -> Tuple[Any, EmbeddingConfig]:
    """(a ready encoder or None, the EmbeddingConfig to build one from)."""
    if embedding is None:
        return None, EmbeddingConfig()
    if isinstance(embedding, EmbeddingConfig):
        return None, embedding
    if _is_encoder(embedding):
        return embedding, EmbeddingConfig()
    # Your own dense model (LangChain Embeddings, LlamaIndex embedding, function, DenseEmbedder).
    return None, EmbeddingConfig(dense=embedding)


def _open_store(location: Any, config: StoreConfig) -> Tuple[NodeStore, StoreConfig]:
    """The store for ``location`` (see :class:`DragKneeIndex`), and the config with the API key resolved."""
    if _is_store(location):
        return location, config
    kind = type(location).__name__
    if kind in ("QdrantClient", "AsyncQdrantClient"):
        return _client_store(config, location), config
    if location is None:
        location = ":memory:"
    if not isinstance(location, (str, os.PathLike)):
        raise ConfigError(f"location must be a folder, ':memory:', a URL, a QdrantClient or a NodeStore, got {kind}.")
    text = os.fspath(location)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    engine = config.engine
    if isinstance(location, str) and _URL.match(text):
        if engine in ("edge", "local"):
            raise ConfigError(f"engine={engine!r} is embedded but location {redact_url(text)!r} is a URL; use a folder "
                              "or ':memory:' for an embedded engine, or engine='server' (or 'auto') for the URL.")
        config = replace(config, api_key=config.api_key or os.environ.get("QDRANT_API_KEY"))
        return QdrantClientStore(config.collection, url=text, api_key=config.api_key,
                                 upsert_batch_size=config.upsert_batch_size, timeout=config.timeout), config
    if isinstance(location, str) and _HOST_PORT.match(text):
        raise ConfigError(f"location {text!r} looks like a server address; write it as a URL "
                          f"('http://{text}'), or as './{text}' for a folder of that name.")
    if engine == "server":
        raise ConfigError(f"engine='server' needs a URL as the location (e.g. 'http://localhost:6333'), got {text!r}.")
    if config.async_client is not None:
        raise ConfigError("StoreConfig(async_client=...) goes with your own QdrantClient as the location.")
    if engine in ("edge", "auto"):
        from .store import EdgeStore

        return EdgeStore(config.collection, location=text, upsert_batch_size=config.upsert_batch_size), config
    return QdrantClientStore(config.collection, location=text, upsert_batch_size=config.upsert_batch_size,
                             timeout=config.timeout), config


def _client_store(config: StoreConfig, client: Any) -> NodeStore:
    """A store over the user's own QdrantClient (writes and listings), with StoreConfig.async_client for asearch."""
    async_client = config.async_client
    if type(client).__name__ != "QdrantClient":
        raise ConfigError("An AsyncQdrantClient alone cannot serve an index (writes and listings use a sync client): "
                          "pass a QdrantClient as the location and the async one as StoreConfig(async_client=...).")
    if async_client is not None and type(async_client).__name__ != "AsyncQdrantClient":
        raise ConfigError(f"StoreConfig(async_client=...) takes a qdrant_client.AsyncQdrantClient, got "
                          f"{type(async_client).__name__}.")
    # The store reads from the client itself whether it is local mode or a server (IDF, lock, indexes).
    return QdrantClientStore(config.collection, client=client, async_client=async_client,
                             upsert_batch_size=config.upsert_batch_size)
