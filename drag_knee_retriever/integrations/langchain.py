"""LangChain adapter: a drop-in ``BaseRetriever`` over a :class:`DragKneeIndex`, and the knee as a
``BaseDocumentCompressor`` for any other retriever.

Install with ``pip install "drag-knee-retriever[langchain]"``.

The adapter converts types and delegates to the core: :meth:`DragKneeIndex.search` /
:meth:`~DragKneeIndex.asearch` for queries, :meth:`~DragKneeIndex.add_documents` for ingestion and
:func:`drag_knee_retriever.common._knee.knee_cut` for the compressor. It scores, encodes and stores nothing
itself.

Example::

    from drag_knee_retriever.integrations.langchain import DragKneeRetriever

    retriever = DragKneeRetriever.from_documents(PyPDFLoader("paper.pdf").load(), model_path=...)
    docs = retriever.invoke("what do the authors measure?")
    docs[0].metadata["drag_span"]      # e.g. "pp.3-4": the pages the text covers
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Literal, Optional, Sequence, Tuple, Union

from drag_knee_retriever.integrations._common import (
    INSTALL_HINT,
    SCORE,
    SEARCH_SETTINGS,
    RetrieverOptions,
    RetrieverSettings,
    trace_payload,
    check_index,
    check_query,
    hit_metadata,
    knee_keep,
    make_index,
    split_settings,
)
from drag_knee_retriever.loaders import ocr_settings
from drag_knee_retriever.integrations._members import MEMBER_IDS, MemberStore, check_members
from drag_knee_retriever.integrations._pages import PageEntry, group_paged_documents

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        Callbacks,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import BaseDocumentCompressor
    from langchain_core.documents import Document as LCDocument
    from langchain_core.indexing.base import DeleteResponse, DocumentIndex, UpsertResponse
    from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, create_model, model_validator
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "drag_knee_retriever.integrations.langchain needs LangChain (langchain-core), which is not "
        f"installed. Install it with: {INSTALL_HINT['langchain']}"
    ) from exc

from drag_knee_retriever.model._search_config import option_help
from drag_knee_retriever.errors import ConfigError, DragKneeError, InvalidDocumentError, InvalidScoresError
from drag_knee_retriever.model._nodes import Document, ScoredNode
from drag_knee_retriever.model._settings import unexpected_keywords
from drag_knee_retriever.integrations._langchain_store import (
    DragKneeVectorStore,
    member_document,
    members_from_langchain,
    read_langchain_documents,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

log = logging.getLogger(__name__)

__all__ = [
    "DragKneeRetriever",
    "DragKneeVectorStore",
    "KneeDocumentCompressor",
    "from_langchain_documents",
    "to_langchain_document",
]

class LangChainRetrieverOptions(RetrieverOptions, total=False):
    """The LangChain retriever's search settings: both retrievers' plus LangChain's ``k`` and ``filter``."""

    k: Optional[int]
    filter: Any


#: The name of the custom event that carries the walk's trace (see DragKneeRetriever).
TRACE_EVENT = "drag_knee_trace"
# as_retriever(search_kwargs=...) keys that belong to other search types (MMR): refused, not ignored.
_MMR_KWARGS = ("fetch_k", "lambda_mult")

# Keys PyPDFLoader (and PyMuPDFLoader) put on every page; they differ per page, so they are
# dropped from the file-level metadata of the paged document.
_PAGE_KEYS = ("page", "page_label")


def to_langchain_document(hit: ScoredNode) -> LCDocument:
    """One search hit as a LangChain ``Document``.

    ``page_content`` is the full text of the node's span (every leaf beneath it, in document
    order); ``metadata`` is the metadata the user gave (a page's own, ``page`` included, for a
    node within one page) plus the ``drag_*`` fields (node id, doc id, level, span label and
    leaf/page bounds, parent id, score, raw score, rank); ``id`` is the id of the document the user
    added when the node lies within one of them, else the node id.
    """
    members = hit.node.metadata.get(MEMBER_IDS) or ()
    doc_id = members[0] if len(members) == 1 else hit.node.id
    return LCDocument(page_content=hit.text, metadata=hit_metadata(hit), id=doc_id)


def from_langchain_documents(
    documents: Sequence[LCDocument],
    *,
    group_pages: bool = True,
    ocr: Any = "auto",
    ocr_languages: Optional[str] = None,
    ocr_cache_dir: Optional[Any] = None,
) -> List[Document]:
    """Convert LangChain ``Document`` objects into core documents, all validated first.

    - Pages of one file (documents with ``metadata["source"]`` and an integer ``metadata["page"]``,
      0-based, as ``PyPDFLoader`` and ``PyMuPDFLoader`` yield them) become ONE paged document with
      id ``source``, pages ordered by number (page p is the core's page p + 1, so spans show the
      file's own page numbers); chunks of the same page are joined; the metadata is what the pages
      agree on (``page`` and ``page_label`` dropped).
    - Any other document becomes a text document with id: its LangChain ``id``, else its
      ``metadata["source"]``, else a hash of its text; duplicates get ``#2``, ``#3``...

    - Pages of a PDF file that is on disk (``source``) whose text is empty or too thin (a scanned
      or image-only page) are OCR'd like the core loader's (``ocr="auto"|"always"|"never"`` or an
      :class:`~drag_knee_retriever.build._ocr.OcrConfig`, ``ocr_languages="english+russian"``, ``ocr_cache_dir``;
      needs the ``ocr`` extra and Tesseract); each leaf records ``text_source``.

    The ids are stable, so ingesting the same files again replaces nothing that did not change.
    Raises :class:`InvalidDocumentError` naming the offending document (not a ``Document``, no
    text, metadata that is not JSON, a key with the reserved ``drag_`` prefix).
    """
    entries: List[PageEntry] = []
    for where, doc, source, page in read_langchain_documents(documents):
        meta = doc.metadata or {}
        is_page = group_pages and source is not None and page is not None
        entries.append(
            PageEntry(
                text=doc.page_content,
                metadata=meta,
                where=f"{where} (source={source!r})" if source else where,
                group=source if is_page else None,
                page=page if is_page else None,
                source=source,
                preferred_id=doc.id if getattr(doc, "id", None) else None,
                drop_keys=_PAGE_KEYS if is_page else (),
            )
        )
    config = ocr_settings(ocr, ocr_languages, ocr_cache_dir)
    return [doc for doc, _ in group_paged_documents(entries, ocr=config)]


#: The descriptions of the retriever's own spellings (the rest read their SearchConfig declaration).
_FIELD_DOCS = {
    "k": "Cap on the number of results (a count with adaptive=False).",
    "adaptive": "True (default): the knee decides up to k; False: k results.",
    "filter": "LangChain filter dict or qdrant models.Filter.",
    "filters": "The same as filter (the index's spelling).",
    "score_threshold": option_help("min_score"),
    "fusion": "FusionConfig: how dense and BM25 rankings are fused.",
    "focus": "FocusConfig of the knee methods' focus step (False: skip it).",
    "fusion_weights": "Deprecated: fusion=FusionConfig(weights=...).",
}


def _search_option_fields() -> Dict[str, Any]:
    """One pydantic field per search option (:class:`LangChainRetrieverOptions`: LangChain's ``k`` and
    ``filter``, both retrievers' options), ``None`` by default (the index's setting), described by its
    declaration. Typed ``Any``: the values are checked once by the retriever's own validator, whose
    errors name the setting (pydantic's coercion would let ``k="3"`` through)."""
    return {name: (Any, Field(default=None, description=_FIELD_DOCS.get(name) or option_help(name)))
            for name in LangChainRetrieverOptions.__annotations__}


if TYPE_CHECKING:
    class _SearchOptionFields(DocumentIndex):  # what type checkers read (the __init__ below is typed)
        pass
else:
    _SearchOptionFields = create_model("_SearchOptionFields", __base__=DocumentIndex, __module__=__name__,
                                       **_search_option_fields())


class DragKneeRetriever(_SearchOptionFields):
    """DRAG with KNEE as a LangChain retriever and ``DocumentIndex``: a drop-in replacement for any
    ``BaseRetriever``, and a destination of ``langchain_core.indexing.index()``.

    Holds a :class:`~drag_knee_retriever.DragKneeIndex` and search settings; every setting left
    ``None`` uses the index's own :class:`~drag_knee_retriever.SearchConfig`.

    - ``method``: ``"knee"``, ``"sensitive_knee"``, ``"branch"`` or ``"fixed"``.
    - ``k``: LangChain's number of results, a cap: the method still decides how many results up to
      ``k`` (the knee cuts where the scores fall). ``adaptive=False`` makes it a count, as in every
      vector store: the method's results, then the best leaves none covers, up to ``k`` (what
      ``DragKneeVectorStore.as_retriever()`` gives by default).
    - ``filter`` (LangChain's name; ``filters`` too): ``{"year": 2019}``, ``{"year": {"$gte": 2020}}``,
      ``$eq $ne $in $nin $gt $gte $lt $lte``, ``$and`` / ``$or`` / ``$not``, or a qdrant-client
      ``models.Filter``; applied at every level of the walk.
    - ``score_threshold``: drop results whose public score (``drag_score``: in [0, 1], never rising
      along the ranking, see :mod:`~drag_knee_retriever.search._relevance`) is below it: a prefix stays.
    - ``max_tokens``: a budget in model tokens (the index encoder's tokenizer, or
      ``EmbeddingConfig(token_counter=...)``) for the returned documents: the best evidence in order
      until the budget is full (whole pages where their passages cluster, no text twice); see
      :class:`~drag_knee_retriever.SearchConfig`. ``max_words``: the same budget in words.
    - ``explain``: also record each candidate's dense and BM25 rank in the trace.
    - ``search_kwargs``: as ``VectorStore.as_retriever(search_kwargs=...)`` (``k``, ``filter``,
      ``score_threshold`` and the settings here); MMR's ``fetch_k`` / ``lambda_mult`` are refused.
    - ``beam_width``, ``sensitivity``, ``max_roots``, ``order``, ``fusion`` (a
      :class:`~drag_knee_retriever.FusionConfig`), ``focus`` (a :class:`~drag_knee_retriever.FocusConfig`,
      ``False`` to skip the focus step): as in :class:`SearchConfig` (``fusion_weights`` is the deprecated
      spelling of ``fusion=FusionConfig(weights=...)``).

    Every setting can also be passed per call: ``retriever.invoke(query, k=2, filter={...})``.
    Settings are validated when the retriever is built (and per call for per-call values); an
    unknown setting is an error, never ignored.

    Tracing: each search sends its trace (steps, kept / suppressed / cut candidates, knee
    positions, round trips, timings) to the run's callback handlers as the custom event
    ``"drag_knee_trace"`` (LangSmith, Langfuse and ``astream_events`` show it under the retriever
    run), and the retriever run's metadata names the method and settings. The trace is built only
    when a handler listens.

    As a ``DocumentIndex`` (``upsert`` / ``get`` / ``delete`` by id), every LangChain document is
    one document tree with the document's ``id`` as id, so ``index()`` with a record manager adds,
    skips, updates and cleans up exactly what it tracks. Returned documents: ``page_content`` is
    the node's full span text, ``metadata`` the source metadata plus ``drag_*`` fields (see
    :func:`to_langchain_document`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    index: Any = Field(description="The DragKneeIndex to search.")
    # The search settings (k, filter and RetrieverOptions) are the fields of _SearchOptionFields, made
    # from the one list of search options (search_config.WalkOptions), not written out here.
    search_kwargs: Optional[Dict[str, Any]] = Field(default=None, description="as_retriever(search_kwargs=...) style settings.")

    _settings: Optional[RetrieverSettings] = PrivateAttr(default=None)

    if TYPE_CHECKING:
        # What type checkers read (pydantic builds the real one from the fields): a misspelled
        # setting is a type error, not an accepted keyword.
        def __init__(self, *, index: Any, search_kwargs: Optional[Dict[str, Any]] = None, name: Optional[str] = None,
                     tags: Optional[List[str]] = None, metadata: Optional[Dict[str, Any]] = None,
                     **settings: Unpack[LangChainRetrieverOptions]) -> None: ...
    else:
        def __init__(self, **data: Any) -> None:
            # pydantic wraps a setting's ConfigError in a many-line ValidationError ("1 validation
            # error for DragKneeRetriever ... Value error, ..."): raise the one line itself.
            try:
                super().__init__(**data)
            except ValidationError as exc:
                ours = next((e["ctx"]["error"] for e in exc.errors()
                             if isinstance((e.get("ctx") or {}).get("error"), DragKneeError)), None)
                if ours is None:
                    raise
                raise ours from None

    @model_validator(mode="before")
    @classmethod
    def _known_keywords(cls, values: Any) -> Any:
        # pydantic's "Extra inputs are not permitted" names no setting; a typo is a TypeError naming the closest.
        if isinstance(values, dict):
            unknown = sorted(set(values) - set(cls.model_fields))
            if unknown:
                raise unexpected_keywords("DragKneeRetriever()", unknown, tuple(cls.model_fields),
                                          f"its settings are {', '.join(cls.model_fields)}.")
        return values

    @model_validator(mode="after")
    def _check_settings(self) -> "DragKneeRetriever":
        check_index(self.index)
        values = {key: getattr(self, key) for key in ("k", "filter", *SEARCH_SETTINGS)}
        for key, value in _search_kwargs(self.search_kwargs).items():
            if values.get(key) is not None and values[key] != value:
                raise ConfigError(f"{key} is given both directly and in search_kwargs ({values[key]!r} vs {value!r}); give it once.")
            values[key] = value
        self._settings = RetrieverSettings("k", aliases={"filter": "filters"}, **values)
        return self

    def _call_overrides(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        # Per call: retriever.invoke(query, k=2, filter={...}) (see RetrieverSettings.for_call).
        assert self._settings is not None
        return self._settings.for_call(kwargs)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> List[LCDocument]:
        query = check_query(query)
        result = self.index.search(query, **self._call_overrides(kwargs))
        if run_manager.handlers:
            run_manager.get_child().on_custom_event(TRACE_EVENT, trace_payload(result), run_id=run_manager.run_id)
        return [to_langchain_document(hit) for hit in result.nodes]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> List[LCDocument]:
        query = check_query(query)
        result = await self.index.asearch(query, **self._call_overrides(kwargs))
        if run_manager.handlers:
            await run_manager.get_child().on_custom_event(TRACE_EVENT, trace_payload(result), run_id=run_manager.run_id)
        return [to_langchain_document(hit) for hit in result.nodes]

    def _get_ls_params(self, **kwargs: Any) -> Dict[str, Any]:  # tracing metadata only
        params = dict(super()._get_ls_params(**kwargs))
        params["ls_vector_store_provider"] = "qdrant"
        # The run's metadata (LangSmith / Langfuse show it on the retriever run): the method and
        # the settings this call searches with. Per-call options are checked in the search itself.
        assert self._settings is not None
        try:
            overrides = self._settings.for_call(kwargs)
        except Exception:
            overrides = self._settings.overrides
        config = self.index.search_config if hasattr(self.index, "search_config") else None
        params["drag_method"] = overrides.get("method") or getattr(config, "method", None)
        params["drag_settings"] = {k: v for k, v in overrides.items() if k != "filters"} | (
            {"filtered": True} if overrides.get("filters") is not None else {})
        return params  # type: ignore[return-value]

    # -- DocumentIndex ---------------------------------------------------------------------------

    def upsert(self, items: Sequence[LCDocument], /, **kwargs: Any) -> UpsertResponse:
        """Add or replace documents by id (``index()`` calls this per batch). A document keeps its
        ``id`` (one without gets a content-derived id); documents sharing ``metadata["source"]``
        are one tree whichever batch or call brought them. Returns the ids written."""
        if kwargs:
            raise TypeError(f"upsert takes no options, got {sorted(kwargs)}.")
        members = members_from_langchain(list(items))
        store = MemberStore(self.index)
        store.add(members)
        return UpsertResponse(succeeded=[m.id for m in members], failed=[])

    def delete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> DeleteResponse:
        """Remove documents by id: an added document's id removes it from its source's tree (the
        last one the tree); a source's or tree's id removes the whole tree. Ids not stored are
        reported as not found."""
        if kwargs:
            raise TypeError(f"delete takes only ids, got {sorted(kwargs)}.")
        if ids is None:
            raise ValueError("delete needs ids (the document ids to remove); there is no delete-all.")
        if isinstance(ids, str):
            raise ValueError("delete takes a list of ids; wrap a single id in a list.")
        removed = MemberStore(self.index).delete(list(ids))
        return DeleteResponse(num_deleted=len(removed), succeeded=removed, failed=[], num_failed=0)

    def get(self, ids: Sequence[str], /, **kwargs: Any) -> List[LCDocument]:
        """The documents with these ids as they were added (text and metadata), in the order
        given; ids not stored are skipped."""
        if kwargs:
            raise TypeError(f"get takes only ids, got {sorted(kwargs)}.")
        return [member_document(m) for m in MemberStore(self.index).get(list(ids))]

    def add_documents(self, documents: Sequence[LCDocument], *, progress: Optional[Callable[..., Any]] = None,
                      ocr: Any = "auto", ocr_languages: Optional[str] = None, ocr_cache_dir: Optional[Any] = None) -> Any:
        """Ingest more LangChain documents into the index: pages of one source join that source's
        tree (added in this call or an earlier one); an id given again replaces that document.
        ``ocr`` options: see :func:`from_langchain_documents`.

        Every document is converted and validated before the index is touched. Returns the
        index's ingest report.
        """
        members = members_from_langchain(list(documents))
        config = ocr_settings(ocr, ocr_languages, ocr_cache_dir)
        store = MemberStore(self.index, ocr=config)
        return store.add(members, progress=progress)

    async def aadd_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> Any:
        """:meth:`add_documents` in a worker thread (encoding is CPU-bound), same guarantees."""
        return await asyncio.to_thread(self.add_documents, documents, **kwargs)

    async def aupsert(self, items: Sequence[LCDocument], /, **kwargs: Any) -> UpsertResponse:
        return await asyncio.to_thread(self.upsert, items, **kwargs)

    async def adelete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> DeleteResponse:
        return await asyncio.to_thread(self.delete, ids, **kwargs)

    async def aget(self, ids: Sequence[str], /, **kwargs: Any) -> List[LCDocument]:
        return await asyncio.to_thread(self.get, ids, **kwargs)

    if TYPE_CHECKING:
        # What type checkers read: the new index's keywords (DragKneeIndex's, and the Qdrant vector
        # stores' collection_name= / url= / path= / client= / api_key=) and the search settings,
        # typed, so a misspelled one is an error; the implementation below takes **kwargs.
        @classmethod
        def from_documents(cls, documents: Sequence[LCDocument], *, index: Any = None,
                           progress: Union[Callable[..., Any], bool, None] = None, ocr: Any = "auto",
                           ocr_languages: Optional[str] = None, ocr_cache_dir: Optional[Any] = None,
                           search_kwargs: Optional[Dict[str, Any]] = None, location: Any = None,
                           embedding: Any = None, build: Any = None, search: Any = None, summarizer: Any = None,
                           store: Any = None, collection_name: Optional[str] = None, collection: Optional[str] = None,
                           url: Optional[str] = None, path: Any = None, client: Any = None,
                           api_key: Optional[str] = None,
                           **settings: Unpack[LangChainRetrieverOptions]) -> "DragKneeRetriever": ...

    else:
        @classmethod
        def from_documents(
            cls,
            documents: Sequence[LCDocument],
            *,
            index: Any = None,
            progress: Union[Callable[..., Any], bool, None] = None,
            ocr: Any = "auto",
            ocr_languages: Optional[str] = None,
            ocr_cache_dir: Optional[Any] = None,
            search_kwargs: Optional[Dict[str, Any]] = None,
            **kwargs: Any,
        ) -> "DragKneeRetriever":
            """Build (or reuse) an index, ingest LangChain ``documents`` into it, return a retriever.

            ``kwargs`` are the retriever's search settings (``method``, ``k``, ``filter``, ...: see the
            class; :class:`LangChainRetrieverOptions`) and, when no ``index`` is given, :class:`DragKneeIndex`'s
            keywords: ``location`` (a folder, ``":memory:"`` (the default), a URL or a QdrantClient),
            ``embedding``, ``build``, ``search``, ``summarizer``, ``store``, and the Qdrant vector stores'
            spellings ``collection_name``, ``url``, ``path``, ``client``, ``api_key``. ``progress``: a
            function ``progress(phase, done, total)`` or ``True`` for progress bars. The search settings are validated
            and every document is converted before anything is built or written, so a bad document ingests
            nothing. ``ocr``, ``ocr_languages``, ``ocr_cache_dir``: see :func:`from_langchain_documents`.
            """
            settings, index_kwargs = split_settings(kwargs, LangChainRetrieverOptions.__annotations__)
            settings = {key: value for key, value in settings.items() if value is not None}
            RetrieverSettings("k", aliases={"filter": "filters"},  # validate before converting, building or writing
                              **{**settings, **_search_kwargs(search_kwargs)})
            if search_kwargs is not None:
                settings["search_kwargs"] = search_kwargs
            members = check_members(members_from_langchain(list(documents)))  # validated before any index is built
            config = ocr_settings(ocr, ocr_languages, ocr_cache_dir)
            index = make_index(index, index_kwargs)
            store = MemberStore(index, ocr=config)
            store.add(members, progress=progress)
            return cls(index=index, **settings)


DragKneeVectorStore.retriever_class = DragKneeRetriever


def _search_kwargs(search_kwargs: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """``as_retriever(search_kwargs=...)`` keys as retriever settings; other search types' keys
    are refused, so that no setting is accepted and ignored."""
    if search_kwargs is None:
        return {}
    if not isinstance(search_kwargs, dict):
        raise ConfigError(f"search_kwargs must be a dict like {{'k': 4, 'filter': {{...}}}}, got {type(search_kwargs).__name__}.")
    mmr = sorted(set(search_kwargs) & set(_MMR_KWARGS))
    if mmr:
        raise ConfigError(
            f"search_kwargs {mmr} belong to MMR search, which this retriever does not do (the knee chooses "
            "how many results; k caps them). Drop them."
        )
    allowed = ("k", "filter", *SEARCH_SETTINGS)
    unknown = sorted(set(search_kwargs) - set(allowed))
    if unknown:
        raise ConfigError(f"Unknown search_kwargs {unknown}; the keys are {', '.join(allowed)}.")
    return dict(search_kwargs)


# Our own results carry drag_score, the public [0, 1] scale, which never rises along their order
# (search/_relevance.py): the knee reads it as any other score.
DEFAULT_SCORE_KEYS: Tuple[str, ...] = ("relevance_score", "score", SCORE)


class KneeDocumentCompressor(BaseDocumentCompressor):
    """Cut any retriever's ranked documents at the knee of their scores.

    Use it after a retriever (or a reranker) whose documents carry a score in their metadata, to
    keep an adaptive number of them instead of a fixed top k: directly with
    ``compress_documents(docs, query)``, or wherever LangChain takes a ``BaseDocumentCompressor``
    (e.g. ``ContextualCompressionRetriever`` from ``langchain-classic``).

    - ``score_key``: the metadata key holding the score. ``None`` (default) picks the first of
      ``relevance_score`` (rerankers), ``score``, ``drag_score`` that every document has.
    - ``higher_is_better``: ``False`` for distances (lower is better); scores are then negated.
    - ``sensitivity``: in (0, 1]; 1.0 is the plain knee, smaller keeps more.
    - ``vector_store``: the store the documents came from, for documents without a score in
      their metadata (a ``VectorStore.as_retriever()`` puts none there, langchain-qdrant's
      included): the store is asked for their scores (langchain-qdrant: exactly these points by
      id, one request), so ``ContextualCompressionRetriever(base_compressor=
      KneeDocumentCompressor(vector_store=store), base_retriever=store.as_retriever(search_kwargs=
      {"k": 20}))`` works as it is.

    Documents must arrive best first; the knee needs at least three to cut (fewer are kept).
    """

    score_key: Optional[str] = None
    higher_is_better: bool = True
    sensitivity: float = Field(default=1.0, gt=0.0, le=1.0)
    vector_store: Any = Field(default=None, description="The store the documents came from, asked for their scores.")

    def _score_key(self, documents: Sequence[LCDocument]) -> Optional[str]:
        if self.score_key is not None:
            return self.score_key
        keys = [k for k in DEFAULT_SCORE_KEYS if all(k in (d.metadata or {}) for d in documents)]
        if not keys:
            if self.vector_store is not None:
                return None
            raise InvalidScoresError(
                f"No score found: not every document has one of the metadata keys "
                f"{list(DEFAULT_SCORE_KEYS)}. A vector store's as_retriever() puts none there: pass the "
                "store, KneeDocumentCompressor(vector_store=store), and it is asked for the scores; or put "
                "each document's score in its metadata, or name the key with score_key=..."
            )
        return keys[0]

    def _scores_from_store(self, documents: List[LCDocument], query: str) -> List[Tuple[LCDocument, float]]:
        """The documents with the scores their vector store gives them for ``query``, best first.

        langchain-qdrant's store (documents carry their point id) is asked for exactly these
        points (a ``HasIdCondition`` filter, one request); any other store for its top documents,
        matched by id, then by text.
        """
        store = self.vector_store
        ids = [d.id or (d.metadata or {}).get("_id") for d in documents]
        if type(store).__module__.startswith("langchain_qdrant") and all(ids):
            from qdrant_client import models

            only = models.Filter(must=[models.HasIdCondition(has_id=list(ids))])
            scored = store.similarity_search_with_score(query, k=len(ids), filter=only)
        else:
            scored = store.similarity_search_with_score(query, k=max(20, 4 * len(documents)))
        by_id = {(d.id or (d.metadata or {}).get("_id")): s for d, s in scored}
        by_text = {d.page_content: s for d, s in scored}
        out = []
        for doc, doc_id in zip(documents, ids):
            score = by_id.get(doc_id) if doc_id is not None and doc_id in by_id else by_text.get(doc.page_content)
            if score is None:
                raise InvalidScoresError(
                    f"the vector store gave no score to the document {doc_id or doc.page_content[:40]!r}; pass "
                    "documents of that store, or put their scores in metadata (score_key=...)."
                )
            out.append((doc, float(score)))
        out.sort(key=lambda pair: -pair[1] if self.higher_is_better else pair[1])
        return out

    def compress_documents(
        self, documents: Sequence[LCDocument], query: str, callbacks: Callbacks = None
    ) -> Sequence[LCDocument]:
        """Keep the documents up to the knee of their scores (order preserved; documents scored
        by ``vector_store`` come best first by those scores)."""
        documents = list(documents)
        if not documents:
            return []
        key = self._score_key(documents)
        if key is None:
            pairs = self._scores_from_store(documents, query)
            return knee_keep(
                [d for d, _ in pairs], [s for _, s in pairs], sensitivity=self.sensitivity,
                higher_is_better=self.higher_is_better, what="documents",
                bad_score=lambda position, value: f"the vector store scored documents[{position}] {value!r}.",
                expects="KneeDocumentCompressor expects the store's scores best first.",
            )
        direction = "descending" if self.higher_is_better else "ascending (distances)"
        return knee_keep(
            documents,
            [(doc.metadata or {}).get(key) for doc in documents],
            sensitivity=self.sensitivity,
            higher_is_better=self.higher_is_better,
            what="documents",
            bad_score=lambda position, value: (
                f"documents[{position}] has metadata[{key!r}] = {value!r}; every document needs a "
                f"numeric score under {key!r} (or choose another key with score_key=...)."
            ),
            expects=f"KneeDocumentCompressor expects documents best first, i.e. scores {direction}.",
        )
