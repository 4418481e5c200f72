"""What both framework adapters share; imports neither framework.

- the namespaced metadata a search hit carries (every key starts with :data:`META_PREFIX`) and its
  reverse conversion into a core :class:`~drag_knee_retriever.model._nodes.TreeNode`;
- (the grouping of per-page framework documents into one paged core document is in ``_pages``);
- query validation, the retrievers' settings (validated once, when a retriever is built) and the
  merge of per-call overrides with them, the index check and the index factory of ``from_documents``;
- the knee cut of a compressor / postprocessor (score checks and the message when they are not
  best first).

None of it scores, encodes or talks to Qdrant: the adapters only convert types and delegate.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.config import FusionConfig, SearchConfig, WalkOptions
from drag_knee_retriever.errors import ConfigError, InvalidDocumentError, InvalidQueryError, InvalidScoresError
from drag_knee_retriever.common._knee import knee_cut
from drag_knee_retriever.model._nodes import FILE_STAMP_KEY, FILTER_FIELDS, OCR_PAGES_KEY, UNITS_KEY, Document, ScoredNode, Span, TreeNode
from drag_knee_retriever.model._point_schema import TEXT_SOURCE_KEY
from drag_knee_retriever.model._query_args import check_count, check_threshold
from drag_knee_retriever.model._settings import unexpected_keywords, warn_deprecated
from drag_knee_retriever.store import parse_filters

log = logging.getLogger(__name__)

#: Prefix of every metadata key the adapters add; source metadata keys may not use it.
META_PREFIX = "drag_"

# Keys describing where a hit sits in its tree (added to every returned document / node).
NODE_ID = META_PREFIX + "node_id"
DOC_ID = META_PREFIX + "doc_id"
LEVEL = META_PREFIX + "level"
IS_LEAF = META_PREFIX + "is_leaf"
SPAN = META_PREFIX + "span"
FIRST_LEAF = META_PREFIX + "first_leaf"
LAST_LEAF = META_PREFIX + "last_leaf"
FIRST_PAGE = META_PREFIX + "first_page"
LAST_PAGE = META_PREFIX + "last_page"
FIRST_CHUNK = META_PREFIX + "first_chunk"  # instead of the pages, on a tree of chunks (1-based)
LAST_CHUNK = META_PREFIX + "last_chunk"
UNITS = UNITS_KEY  # "chunks": the tree's "pages" are a splitter's chunks (_members.UNITS)
PARENT_ID = META_PREFIX + "parent_id"
TITLE = META_PREFIX + "title"
SCORE = META_PREFIX + "score"
RAW_SCORE = META_PREFIX + "raw_score"
COSINE = META_PREFIX + "cosine"
RANK = META_PREFIX + "rank"
# Keys only the LlamaIndex node parser writes: with them a parsed node converts back into the
# exact TreeNode the builder made, so the index can ingest parsed nodes without rebuilding.
KEYWORDS = META_PREFIX + "keywords"
PATH = META_PREFIX + "path"
DOC_HASH = META_PREFIX + "doc_hash"
CHILD_IDS = META_PREFIX + "child_ids"
DESCRIPTION = META_PREFIX + "description"
SOURCE_TEXT = META_PREFIX + "source_text"  # a text document's root: its text as given

INSTALL_HINT = {
    "langchain": 'pip install "drag-knee-retriever[langchain]"',
    "llamaindex": 'pip install "drag-knee-retriever[llamaindex]"',
}

# ---------------------------------------------------------------------------------------------
# queries and settings
# ---------------------------------------------------------------------------------------------


def check_query(query: Any) -> str:
    """Return ``query`` if it is a non-empty string; otherwise raise :class:`InvalidQueryError`."""
    if not isinstance(query, str):
        raise InvalidQueryError(
            f"The query must be a string, got {type(query).__name__} ({query!r:.60}); "
            "pass the question text, e.g. retriever.invoke('what causes ...?')."
        )
    if not query.strip():
        raise InvalidQueryError("The query is empty or whitespace only; pass the question text.")
    return query


#: The frameworks' spelling of a SearchConfig setting, where it differs (the result count is
#: ``k_name``, below); every other setting is passed to ``index.search`` under its own name.
FRAMEWORK_NAMES: Mapping[str, str] = {"score_threshold": "min_score"}


def search_overrides(*, k: Optional[int] = None, k_name: str = "k", **settings: Any) -> Dict[str, Any]:
    """Validate adapter search settings (:class:`RetrieverOptions`) and return the keyword overrides
    for ``index.search``.

    ``k`` (named ``k_name`` in messages: LangChain's ``k``, LlamaIndex's ``similarity_top_k``) is
    the frameworks' "number of results". With ``adaptive`` (the retrievers' default) it is a cap
    (``SearchConfig.max_results``): the method decides how many results up to it (the knee cuts
    where the scores fall). With ``adaptive=False`` (the vector stores' default) it is a count, as
    in every other store: the method's results, then the best leaves none of them covers, up to
    ``k`` (``index.search(fill=True)``). ``score_threshold`` drops results scoring
    below it (``SearchConfig.min_score``). ``filters`` is the LangChain / Mongo-style dict or a
    qdrant-client ``models.Filter`` (see :mod:`drag_knee_retriever.store.filters`). Every other
    setting is :class:`~drag_knee_retriever.config.WalkOptions`' and goes through under its own name,
    so a setting added there needs nothing here. Values are checked here, once; settings left
    ``None`` fall back to the index's. ``fusion`` and ``focus`` take a
    :class:`~drag_knee_retriever.FusionConfig` / :class:`~drag_knee_retriever.FocusConfig`
    (``focus=False`` skips the focus step), as ``index.search`` does.
    """
    unknown = sorted(set(settings) - set(SEARCH_SETTINGS))
    if unknown:
        raise unexpected_keywords("search_overrides()", unknown, (k_name, *SEARCH_SETTINGS),
                                  f"the settings are {k_name}, {', '.join(SEARCH_SETTINGS)}.")
    settings = {key: value for key, value in settings.items() if value is not None}
    filters = settings.pop("filters", None)
    adaptive = settings.pop("adaptive", None)
    if adaptive is not None and not isinstance(adaptive, bool):
        raise ConfigError(f"adaptive must be True or False, got {adaptive!r}.")
    if adaptive is False and k is None:
        raise ConfigError(f"adaptive=False returns {k_name} results: give {k_name} (e.g. {k_name}=4) too.")
    fusion_weights = settings.pop("fusion_weights", None)
    if fusion_weights is not None:
        warn_deprecated("fusion_weights=", "fusion=FusionConfig(weights=...)", stacklevel=4)
        if settings.get("fusion") is not None:
            raise ConfigError("Give fusion= or fusion_weights=, not both.")
        if isinstance(fusion_weights, (str, bytes)) or not isinstance(fusion_weights, Sequence):
            raise ConfigError(
                "fusion_weights must be a list of (dense, sparse) pairs, e.g. [(0.2, 0.8), (0.5, 0.5)]."
            )
        settings["fusion"] = FusionConfig(weights=fusion_weights)
    # The result count and the threshold are named as the user gave them (a str threshold was
    # "SearchConfig.score_threshold must be ..." after the renaming below, a name that exists nowhere).
    if k is not None:
        k = check_count(k, k_name)
    if "score_threshold" in settings:
        settings["score_threshold"] = check_threshold(settings["score_threshold"])
    overrides: Dict[str, Any] = {FRAMEWORK_NAMES.get(key, key): value for key, value in settings.items()}
    if k is not None:
        overrides["max_results"] = k
    # Building the config runs its validation: a bad value fails now, not at the first query. The
    # index's own method is not known here, so a method's own knob is checked under that method.
    base = SearchConfig(method="fixed" if "beam_width" in overrides else
                        "sensitive_knee" if "sensitivity" in overrides else "knee")
    try:
        base.with_overrides(**overrides)
    except ConfigError as exc:
        message = str(exc).replace("SearchConfig.", "").replace("max_results", k_name)
        for theirs, ours in FRAMEWORK_NAMES.items():
            message = message.replace(ours, theirs)
        raise ConfigError(message) from None
    if filters is not None:
        parse_filters(filters)  # raises InvalidQueryError naming the key, operator or value
        overrides["filters"] = filters
    if adaptive is False:
        overrides["fill"] = True  # k results: the method's, then the best leaves none covers
    return overrides


class RetrieverOptions(WalkOptions, total=False):
    """Search settings both retrievers take (at construction and per call): the walk's
    (:class:`~drag_knee_retriever.config.WalkOptions`), ``filters`` and ``score_threshold``, besides their
    framework's name for "number of results" (LangChain ``k``, LlamaIndex ``similarity_top_k``)."""

    filters: Any
    score_threshold: Optional[float]
    #: True (the retrievers' default): the knee decides how many results, k caps them; False (the
    #: vector stores' default): k results, as every other store returns.
    adaptive: Optional[bool]


#: The names of :class:`RetrieverOptions` (for runtime checks; the TypedDict is what type checkers read).
SEARCH_SETTINGS: Tuple[str, ...] = tuple(RetrieverOptions.__annotations__)


class RetrieverSettings:
    """A retriever's search settings, validated once, and their merge with per-call overrides.

    ``k_name`` is the framework's name of the result count (``"k"`` or ``"similarity_top_k"``);
    ``aliases`` maps a framework's own spelling to ours (LangChain's ``filter`` -> ``filters``);
    ``convert_filters`` turns a framework's filter objects into the core dialect (LlamaIndex
    ``MetadataFilters``). Settings left ``None`` use the index's own :class:`SearchConfig`.
    """

    __slots__ = ("k_name", "values", "overrides", "aliases", "convert_filters")

    def __init__(self, k_name: str, *, aliases: Optional[Mapping[str, str]] = None,
                 convert_filters: Optional[Callable[[Any], Any]] = None, **values: Any) -> None:
        self.k_name = k_name
        self.aliases = dict(aliases or {})
        self.convert_filters = convert_filters
        values = self._unalias(values, "setting")
        allowed = (k_name, *SEARCH_SETTINGS)
        unknown = sorted(set(values) - set(allowed))
        if unknown:
            raise unexpected_keywords("the retriever", unknown, (*allowed, *self.aliases),
                                      f"its search settings are {', '.join(allowed)}.")
        self.values: Dict[str, Any] = {key: values.get(key) for key in allowed}
        #: The keyword overrides for ``index.search`` when a call passes no options of its own.
        self.overrides: Dict[str, Any] = self._resolve(self.values)

    def _unalias(self, values: Mapping[str, Any], what: str) -> Dict[str, Any]:
        out = {key: value for key, value in values.items() if key not in self.aliases}
        for alias, name in self.aliases.items():
            if values.get(alias) is not None:
                if out.get(name) is not None:
                    raise ConfigError(f"{alias}= and {name}= are the same {what}; give only one of them.")
                out[name] = values[alias]
        return out

    def _resolve(self, values: Mapping[str, Any]) -> Dict[str, Any]:
        settings = {key: values.get(key) for key in SEARCH_SETTINGS}
        if settings["filters"] is not None and self.convert_filters is not None:
            settings["filters"] = self.convert_filters(settings["filters"])
        return search_overrides(k=values.get(self.k_name), k_name=self.k_name, **settings)

    def for_call(self, call: Mapping[str, Any]) -> Dict[str, Any]:
        """The ``index.search`` overrides for one call: the retriever's settings, then ``call``'s.

        A per-call value replaces the retriever's; ``k`` keeps the retriever's meaning (a cap when
        ``adaptive``, else a count).
        """
        call = self._unalias(call, "option")
        allowed = (self.k_name, *SEARCH_SETTINGS)
        unknown = sorted(set(call) - set(allowed))
        if unknown:
            names = sorted(set(allowed) | set(self.aliases))
            raise InvalidQueryError("Unknown search option(s): " + str(unexpected_keywords(
                "this call", unknown, names, f"per-call options are {', '.join(names)}.")))
        if not call:
            return self.overrides
        values = dict(self.values)
        values.update({key: value for key, value in call.items() if value is not None})
        return self._resolve(values)


def check_index(index: Any) -> Any:
    """Return ``index`` if it can be searched like a :class:`DragKneeIndex`; else raise TypeError."""
    if not hasattr(index, "search") or not hasattr(index, "asearch"):
        raise TypeError(
            f"index must be a DragKneeIndex (something with search/asearch), got "
            f"{type(index).__name__}; build one with DragKneeIndex(...) or use "
            "DragKneeRetriever.from_documents(docs)."
        )
    return index


#: The Qdrant vector stores' constructor keywords a new index takes too (:func:`qdrant_style_index_kwargs`).
QDRANT_STYLE_KEYWORDS = ("client", "location", "path", "url", "api_key", "collection_name", "collection")


def qdrant_style_index_kwargs(kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """A Qdrant vector store's constructor keywords (langchain-qdrant, llama-index-vector-stores-
    qdrant: ``client=``, ``location=``, ``path=``, ``url=``, ``api_key=``, ``collection_name=``) in
    :class:`DragKneeIndex`'s spelling: where the index lives is its first argument, the collection
    and the key go in its ``StoreConfig``."""
    from dataclasses import replace as _replace

    from drag_knee_retriever.config import StoreConfig

    out = dict(kwargs)
    where = [k for k in ("client", "location", "path", "url") if out.get(k) is not None]
    if len(where) > 1:
        raise ConfigError(f"{where} all say where the index lives; give one of them.")
    if where:
        out["location"] = out.pop(where[0])
    for key in ("client", "path", "url"):
        out.pop(key, None)
    store_fields = {}
    for theirs, ours in (("collection_name", "collection"), ("collection", "collection"), ("api_key", "api_key")):
        if theirs in out:
            value = out.pop(theirs)
            if value is not None:
                if ours in store_fields:
                    raise ConfigError(f"{theirs}= and {ours}= are the same setting; give only one of them.")
                store_fields[ours] = value
    if store_fields:
        base = out.get("store") or StoreConfig()
        out["store"] = _replace(base, **store_fields)
    return out


def qdrant_client_of(index: Any) -> Any:
    """The ``QdrantClient`` an index's collection lives in (qdrant-client local mode, a server, or
    the client you passed): what langchain-qdrant's and llama-index-vector-stores-qdrant's
    ``.client`` is. The embedded Qdrant Edge engine has no client: AttributeError naming what does."""
    store = getattr(index, "store", None)
    client = getattr(store, "client", None)
    if client is not None and type(client).__name__ == "QdrantClient":
        return client
    engine = getattr(store, "engine", type(store).__name__)
    raise AttributeError(
        f"This index runs on the embedded {engine!r} engine, which has no QdrantClient: the collection is a "
        "Qdrant Edge shard in its folder (index.store.shard). For a QdrantClient, open the index with one "
        "(client=QdrantClient(...)), a URL, or engine='local' (qdrant-client local mode); the documents are "
        "read with get_by_ids / get_nodes, the index itself is .index."
    )


def require_existing_collection(index_kwargs: Mapping[str, Any]) -> None:
    """Raise CollectionNotFoundError unless the collection ``index_kwargs`` (DragKneeIndex's
    spelling, see :func:`qdrant_style_index_kwargs`) open exists (see ``opening.require_collection``)."""
    from drag_knee_retriever.config import StoreConfig
    from drag_knee_retriever.facade._opening import require_collection

    require_collection(index_kwargs.get("location", ":memory:"), index_kwargs.get("store") or StoreConfig())


def split_settings(kwargs: Mapping[str, Any], names: Any) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """``from_documents``' keywords: (the retriever's search settings ``names``, the new index's).

    A keyword that is neither is refused here, naming the closest of both (``methd=`` -> ``method``),
    before anything is built."""
    from drag_knee_retriever.facade._index import INDEX_KEYWORDS

    settings = {key: value for key, value in kwargs.items() if key in names}
    rest = {key: value for key, value in kwargs.items() if key not in names}
    index_keywords = (*INDEX_KEYWORDS, *QDRANT_STYLE_KEYWORDS)
    unknown = sorted(set(rest) - set(index_keywords))
    if unknown:
        raise unexpected_keywords("from_documents()", unknown, (*names, *index_keywords),
                                  f"its search settings are {', '.join(names)}; the new index's keywords "
                                  f"{', '.join(index_keywords)}.")
    return settings, rest


def make_index(index: Any, index_kwargs: Mapping[str, Any]) -> Any:
    """``index`` itself, or a new :class:`DragKneeIndex` built from ``index_kwargs`` (not both)."""
    if index is None:
        from drag_knee_retriever.facade._index import DragKneeIndex

        # The Qdrant vector stores' spellings (collection_name=, url=, path=, client=) are the
        # frameworks' own: accepted as they are, beside DragKneeIndex's.
        kwargs = qdrant_style_index_kwargs(index_kwargs)
        return DragKneeIndex(kwargs.pop("location", ":memory:"), **kwargs)
    if index_kwargs:
        raise TypeError(
            f"index was given, so {sorted(index_kwargs)} cannot configure a new one; drop them or drop index."
        )
    return index


# ---------------------------------------------------------------------------------------------
# the knee over another retriever's scores
# ---------------------------------------------------------------------------------------------


def knee_keep(
    items: Sequence[Any],
    values: Sequence[Any],
    *,
    sensitivity: float,
    higher_is_better: bool,
    what: str,
    bad_score: Callable[[int, Any], str],
    expects: str,
) -> List[Any]:
    """Keep ``items`` up to the knee of their scores ``values`` (order preserved).

    Every value must be a number (``bad_score(position, value)`` says otherwise what is wrong);
    distances (``higher_is_better=False``) are negated. A list that is not best first raises
    :class:`InvalidScoresError` ending with ``expects``. ``what`` names the items in the log.
    """
    scores: List[float] = []
    for position, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidScoresError(bad_score(position, value))
        scores.append(float(value) if higher_is_better else -float(value))
    try:
        kept, count = knee_cut(list(items), scores, sensitivity)
    except InvalidScoresError as exc:
        raise InvalidScoresError(f"{exc} {expects}") from None
    log.debug("knee kept %d of %d %s", count, len(items), what)
    return kept


# ---------------------------------------------------------------------------------------------
# hits and nodes -> namespaced metadata (and back)
# ---------------------------------------------------------------------------------------------


def _position_metadata(node: TreeNode) -> Dict[str, Any]:
    span = node.span
    out: Dict[str, Any] = {
        NODE_ID: node.id,
        DOC_ID: node.doc_id,
        LEVEL: node.level,
        IS_LEAF: node.is_leaf,
        SPAN: str(span),
        FIRST_LEAF: span.first_leaf,
        LAST_LEAF: span.last_leaf,
        FIRST_PAGE: span.first_page,
        LAST_PAGE: span.last_page,
        PARENT_ID: node.parent_id,
    }
    if (span.chunks or node.metadata.get(UNITS) == "chunks") and span.first_page is not None:
        # Chunks of a text (a splitter's, no page numbers): numbered as chunks, not called pages.
        first, last = span.first_page, span.last_page
        out.update({SPAN: f"chunk {first}" if first == last else f"chunks {first}-{last}", FIRST_PAGE: None,
                    LAST_PAGE: None, FIRST_CHUNK: first, LAST_CHUNK: last})
    if node.title is not None:
        out[TITLE] = node.title
    return out


def _finite(value: float) -> Optional[float]:
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def trace_payload(result: Any) -> Dict[str, Any]:
    """A search's trace as JSON-ready data for tracing tools (LangSmith, Langfuse, Phoenix).

    The walk's steps (kind, level, knee position, every candidate with its fused score and
    outcome: kept, suppressed, cut or merged), the round trips, the timings, and the results
    (node, document, span, score). Built only when a handler listens.
    """
    # Built field by field: dataclasses.asdict (Trace.to_dict) deep-copies every candidate and
    # costs about as much as a tenth of a search; this is the same data at a fraction of that.
    trace = result.trace
    data: Dict[str, Any] = {
        "query": trace.query, "method": trace.method, "requests": trace.requests,
        "timings_ms": dict(trace.timings_ms),
        "steps": [{
            "step": st.step, "kind": st.kind, "level": st.level, "knee_index": st.knee_index,
            "kept_count": st.kept_count, "parent_id": st.parent_id, "weights": list(st.weights),
            "candidates": [{
                "node_id": c.node_id, "doc_id": c.doc_id, "level": c.level, "is_leaf": c.is_leaf,
                "label": c.label, "fused_score": _finite(c.fused_score), "fused_rank": c.fused_rank,
                "dense_rank": c.dense_rank, "sparse_rank": c.sparse_rank, "parent_id": c.parent_id,
                "outcome": c.outcome, "suppressed_by": c.suppressed_by,
            } for c in st.candidates],
        } for st in trace.steps],
    }
    data["results"] = [{"node_id": hit.node.id, "doc_id": hit.node.doc_id, "span": str(hit.node.span),
                        "level": hit.node.level, "score": float(hit.score),
                        "cosine": None if getattr(hit, "cosine", None) is None else float(hit.cosine)}
                       for hit in result.nodes]
    return data


def hit_metadata(hit: ScoredNode) -> Dict[str, Any]:
    """The metadata of a returned hit: the source document's metadata plus ``drag_*`` fields.

    ``drag_score`` is the public score (:mod:`~drag_knee_retriever.search._relevance`: in [0, 1], higher
    is better, the same scale for every method, never rising along the ranking), ``drag_cosine``
    the node's own dense cosine with the query (what the score is made monotone from),
    ``drag_raw_score`` what the method ranked on (an RRF sum, a z-score sum), ``drag_rank`` the 0-based rank in the method's order (the list
    position too, unless the search ordered results by document). Our bookkeeping keys stay
    inside; the ``drag_*`` fields win over a source key of the same name.
    """
    meta = user_metadata(hit.node.metadata)
    meta.update(_position_metadata(hit.node))
    meta[SCORE] = float(hit.score)
    if getattr(hit, "cosine", None) is not None:
        meta[COSINE] = float(hit.cosine)
    if getattr(hit, "raw_score", None) is not None:
        meta[RAW_SCORE] = float(hit.raw_score)
    meta[RANK] = int(hit.rank)
    return meta


def node_metadata(node: TreeNode) -> Dict[str, Any]:
    """A stored node's metadata for a node fetched by id: the user's, and where it sits (no score)."""
    meta = user_metadata(node.metadata)
    meta.update(_position_metadata(node))
    return meta


def user_metadata(metadata: Mapping[str, Any]) -> Dict[str, Any]:
    """A stored node's metadata as the user gave it: our ``drag_*`` bookkeeping keys removed."""
    return {k: v for k, v in metadata.items() if not k.startswith(META_PREFIX)}


def tree_node_metadata(node: TreeNode) -> Dict[str, Any]:
    """Metadata that carries a whole :class:`TreeNode` (for parsed, not-yet-indexed nodes)."""
    meta = dict(node.metadata)
    meta.update(_position_metadata(node))
    meta[CHILD_IDS] = list(node.child_ids)
    meta[KEYWORDS] = list(node.keywords)
    meta[PATH] = node.path
    meta[DOC_HASH] = node.doc_hash
    description = getattr(node, "description", None)
    if description is not None:
        meta[DESCRIPTION] = description
    if node.source_text is not None:
        meta[SOURCE_TEXT] = node.source_text
    return meta


_REQUIRED_NODE_KEYS = (NODE_ID, DOC_ID, LEVEL, IS_LEAF, FIRST_LEAF, LAST_LEAF)


def tree_node_from_metadata(
    node_id: str,
    text: str,
    metadata: Mapping[str, Any],
    *,
    parent_id: Optional[str] = None,
    child_ids: Optional[Sequence[str]] = None,
) -> TreeNode:
    """Rebuild the :class:`TreeNode` that :func:`tree_node_metadata` described.

    ``parent_id`` / ``child_ids`` (from a framework's own relationships) take precedence over the
    copies kept in the metadata. Raises :class:`InvalidDocumentError` when the node was not made by
    this library's parser, or its metadata cannot be stored as JSON.
    """
    missing = [key for key in _REQUIRED_NODE_KEYS if key not in metadata]
    if missing:
        raise InvalidDocumentError(
            f"Node {node_id!r} lacks the fields {', '.join(missing)}: it was not produced by "
            "DragTreeNodeParser. Parse the documents with DragTreeNodeParser first, or ingest "
            "plain documents with index.add_documents()."
        )
    if metadata[NODE_ID] != node_id:
        raise InvalidDocumentError(
            f"Node {node_id!r} carries {NODE_ID}={metadata[NODE_ID]!r}: its id was changed after "
            "parsing. Keep the ids DragTreeNodeParser assigns (they link parents and children)."
        )
    if not isinstance(text, str) or (metadata[IS_LEAF] and not text.strip()):
        raise InvalidDocumentError(f"Node {node_id!r} has no text; a leaf needs its text.")
    source = {k: v for k, v in metadata.items() if not k.startswith(META_PREFIX)}
    # The core Document check gives the same JSON message everywhere (e.g. a datetime value).
    Document(id=str(metadata[DOC_ID]), text="x", metadata=source)
    children = child_ids if child_ids is not None else metadata.get(CHILD_IDS) or ()
    extra: Dict[str, Any] = {}
    if metadata.get(DESCRIPTION) is not None:
        extra["description"] = str(metadata[DESCRIPTION])
    if metadata.get(SOURCE_TEXT) is not None:
        extra["source_text"] = str(metadata[SOURCE_TEXT])
    return TreeNode(
        id=node_id,
        doc_id=str(metadata[DOC_ID]),
        level=int(metadata[LEVEL]),
        is_leaf=bool(metadata[IS_LEAF]),
        span=Span(
            int(metadata[FIRST_LEAF]),
            int(metadata[LAST_LEAF]),
            metadata.get(FIRST_PAGE),
            metadata.get(LAST_PAGE),
        ),
        text=text,
        parent_id=parent_id if parent_id is not None else metadata.get(PARENT_ID),
        child_ids=tuple(children),
        keywords=tuple(metadata.get(KEYWORDS) or ()),
        title=metadata.get(TITLE),
        path=str(metadata.get(PATH) or ""),
        metadata=source,
        doc_hash=str(metadata.get(DOC_HASH) or ""),
        **extra,
    )


def check_source_metadata(metadata: Mapping[str, Any], where: str) -> Dict[str, Any]:
    """Reject source metadata keys that use the reserved ``drag_`` prefix (they would be lost)."""
    if not isinstance(metadata, Mapping):
        raise InvalidDocumentError(f"{where}: metadata must be a mapping, got {type(metadata).__name__}.")
    reserved = sorted(k for k in metadata if isinstance(k, str) and k.startswith(META_PREFIX))
    if reserved:
        raise InvalidDocumentError(
            f"{where}: metadata keys {reserved} use the prefix {META_PREFIX!r}, which this library "
            "reserves for the fields it adds to results; rename them."
        )
    own = next((k for k in metadata if k in INDEX_KEYS), None)
    if own is not None:
        raise InvalidDocumentError(
            f"{where}: metadata key {own!r} is the index's own: {INDEX_KEYS[own]}; rename the key "
            f"(e.g. 'source_{own}'). Nothing was written.")
    return dict(metadata)


#: Metadata keys with a meaning of the index's own: the tree fields filters name, and what the index
#: writes of a file or a page its loader read. A framework document's metadata may not use them (a
#: user's value could not be filtered on, or would not come back as given): see check_source_metadata.
INDEX_KEYS = {**{key: f"a filter on {key!r} selects {what}, never this value" for key, what in FILTER_FIELDS.items()},
              FILE_STAMP_KEY: "the ingest rewrites it with a loaded file's size and time",
              OCR_PAGES_KEY: "the index reads it as the pages whose text came from OCR",
              TEXT_SOURCE_KEY: "the index writes there whether a page's text came from the PDF or from OCR"}
