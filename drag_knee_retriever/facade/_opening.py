"""How a :class:`~drag_knee_retriever.facade._index.DragKneeIndex` opens: where it lives, which store and
which embedding serve it, and the constructor keywords of earlier releases.

``DragKneeIndex(location, embedding=..., store=StoreConfig(...))`` takes one location (``":memory:"``,
a folder, a URL, a ``QdrantClient`` or a ready :class:`~drag_knee_retriever.store.NodeStore`):
:func:`open_store` turns it into the store, :func:`embedding_of` the ``embedding`` argument into a
ready encoder or the settings to build one, and :func:`translate_deprecated` maps the keywords of
earlier releases (``path=``, ``url=``, ``client=``, ``collection=``, ``model_name=``, ...) onto these,
each with a DeprecationWarning naming the new spelling.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import fields, replace
from typing import Any, Dict, Optional, Tuple

from drag_knee_retriever.config import EmbeddingConfig, StoreConfig
from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.common._redact import redact_url
from drag_knee_retriever.model._settings import warn_deprecated
from drag_knee_retriever.store import NodeStore, QdrantClientStore

__all__ = ["INDEX_KEYWORDS", "embedding_of", "is_encoder", "is_store", "open_store", "translate_deprecated"]

# Keywords of earlier releases: where each one went (see translate_deprecated).
# Only those the README taught before the constructor took one location are kept, until
# settings.REMOVED_IN; path=, collection=, timeout=, encoder= and store=<a NodeStore>, which it never
# taught, were dropped before the first tagged release.
_TO_LOCATION = ("url", "client")
_TO_STORE = ("engine", "api_key", "async_client")
_TO_EMBEDDING = ("model_name", "model_path", "language")
_DEPRECATED_KEYWORDS = _TO_LOCATION + _TO_STORE + _TO_EMBEDDING
_KEYWORDS = ("embedding", "build", "search", "summarizer", "store")  # the constructor's own
#: Every keyword DragKneeIndex() takes (the deprecated spellings included): what an adapter's
#: ``from_documents`` passes on to a new index.
INDEX_KEYWORDS: Tuple[str, ...] = ("location",) + _KEYWORDS + _DEPRECATED_KEYWORDS
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_HOST_PORT = re.compile(r"^[\w.-]+:\d{1,5}$")


def translate_deprecated(location: Any, embedding: Any, store: Any,
                          old: Dict[str, Any]) -> Tuple[Any, Any, Optional[StoreConfig]]:
    """Map the constructor keywords of earlier releases onto the new ones, each with a DeprecationWarning."""
    unknown = sorted(set(old) - set(_DEPRECATED_KEYWORDS))
    if unknown:
        # A setting of the store or the model given here (collection=, timeout=, ...) is named with its place.
        homes = {"path": "the first argument: DragKneeIndex(path)", "encoder": "embedding=<the encoder>"}
        homes.update({f.name: f"store=StoreConfig({f.name}=...)" for f in fields(StoreConfig)})
        homes.update({f.name: f"embedding=EmbeddingConfig({f.name}=...)" for f in fields(EmbeddingConfig)
                      if f.name not in homes})
        valid = list(_KEYWORDS + _DEPRECATED_KEYWORDS) + list(homes)
        parts = []
        for name in unknown:
            close = name if name in homes else next(iter(difflib.get_close_matches(name, valid, n=1, cutoff=0.6)), None)
            guess = "" if close is None or close == name else f"did you mean {close!r}? "
            place = f"it goes in {homes[close]}" if close in homes else ""
            parts.append(f"{name!r} ({guess}{place})".replace(" )", ")") if guess or place else repr(name))
        raise TypeError(f"DragKneeIndex() got unexpected keyword argument(s) {', '.join(parts)}; it takes a location, "
                        "embedding=, build=, search=, summarizer= and store=StoreConfig(...).")
    if store is not None and not isinstance(store, StoreConfig):
        raise ConfigError(f"store= takes a StoreConfig (collection, engine, api_key, timeout, ...), got "
                          f"{type(store).__name__}; pass a NodeStore or a client as the first argument: "
                          "DragKneeIndex(store_or_client, store=StoreConfig(...)).")
    places = {k: v for k, v in old.items() if k in _TO_LOCATION and v is not None}
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
    if emb_changes:
        warn_deprecated(f"DragKneeIndex({', '.join(k + '=' for k in emb_changes)}...)",
                        f"DragKneeIndex(embedding=EmbeddingConfig({', '.join(k + '=' for k in emb_changes)}...))",
                        stacklevel=3)
        if embedding is not None and not isinstance(embedding, EmbeddingConfig):
            if is_encoder(embedding):
                raise ConfigError("a ready encoder was given, so model_name/model_path/language cannot apply too; "
                                  "drop one of them.")
            raise ConfigError(
                "embedding= is your own dense model, so model_name/model_path (a fastembed model) cannot apply "
                "too; drop one of them (the BM25 language goes in EmbeddingConfig(dense=<model>, language=...)).")
        embedding = replace(embedding or EmbeddingConfig(), **emb_changes)
    return location, embedding, store


def is_store(value: Any) -> bool:
    """A ready :class:`NodeStore` (or an object that serves as one)."""
    return isinstance(value, NodeStore) or all(hasattr(value, m) for m in ("rank", "open_collection", "scroll_nodes"))


def is_encoder(value: Any) -> bool:
    """A ready encoder (dense + BM25: an :class:`Encoder` or a wrapper of one), not a dense model."""
    return hasattr(value, "encode_query") and hasattr(value, "sparse_model")


def embedding_of(embedding: Any) -> Tuple[Any, EmbeddingConfig]:
    """(a ready encoder or None, the EmbeddingConfig to build one from)."""
    if embedding is None:
        return None, EmbeddingConfig()
    if isinstance(embedding, EmbeddingConfig):
        return None, embedding
    if is_encoder(embedding):
        return embedding, EmbeddingConfig()
    # Your own dense model (LangChain Embeddings, LlamaIndex embedding, function, DenseEmbedder).
    return None, EmbeddingConfig(dense=embedding)


def open_store(location: Any, config: StoreConfig) -> Tuple[NodeStore, StoreConfig]:
    """The store for ``location`` (see :class:`DragKneeIndex`), and the config with the API key resolved."""
    if is_store(location):
        return location, config
    kind = type(location).__name__
    if kind in ("QdrantClient", "AsyncQdrantClient"):
        return client_store(config, location), config
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
        from drag_knee_retriever.store import EdgeStore

        return EdgeStore(config.collection, location=text, upsert_batch_size=config.upsert_batch_size), config
    return QdrantClientStore(config.collection, location=text, upsert_batch_size=config.upsert_batch_size,
                             timeout=config.timeout), config


def client_store(config: StoreConfig, client: Any) -> NodeStore:
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


def existing_collections(location: Any, config: StoreConfig) -> Optional[list]:
    """The collections (names, sorted) that ``location`` holds already, read without creating or
    opening anything; None where that cannot be told (a ready NodeStore). ``":memory:"`` holds none.

    What a reader checks before opening a collection by name (``from_existing_collection``): a
    misspelt name would otherwise open a new, empty index without a word."""
    from drag_knee_retriever.store.layout import EDGE_MARKER, LOCAL_DIR, LOCAL_MARKER, ROOTS_SUFFIX

    if is_store(location):
        return None
    kind = type(location).__name__
    if kind == "QdrantClient":
        names = [c.name for c in location.get_collections().collections]
    elif location is None or (isinstance(location, str) and location == ":memory:"):
        return []
    elif isinstance(location, str) and _URL.match(location):
        from qdrant_client import QdrantClient

        api_key = config.api_key or os.environ.get("QDRANT_API_KEY")
        client = QdrantClient(url=location, api_key=api_key, timeout=int(config.timeout or 10),
                              check_compatibility=False)
        try:
            names = [c.name for c in client.get_collections().collections]
        finally:
            client.close()
    elif isinstance(location, (str, os.PathLike)):
        from pathlib import Path

        base = Path(os.fspath(location)).expanduser()
        names = []
        if base.is_dir():
            names += [p.name for p in base.iterdir() if (p / EDGE_MARKER).exists()]
            local = base / LOCAL_DIR
            if local.is_dir():
                names += [p.name for p in local.iterdir() if (p / LOCAL_MARKER).exists()]
    else:
        return None
    return sorted({n for n in names if not n.endswith(ROOTS_SUFFIX)})


def require_collection(location: Any, config: StoreConfig) -> None:
    """Raise :class:`~drag_knee_retriever.errors.CollectionNotFoundError` when ``location`` holds no
    collection ``config.collection`` (see :func:`existing_collections`), naming those it holds."""
    names = existing_collections(location, config)
    if names is not None and config.collection not in names:
        raise collection_not_found(location, config, names)


def collection_not_found(location: Any, config: StoreConfig, names: list) -> Exception:
    """The error for a collection ``location`` does not hold, naming those it does (``names``)."""
    from drag_knee_retriever.errors import CollectionNotFoundError

    if location is None or location == ":memory:":
        where = "in memory (a new in-memory index holds nothing)"
    elif isinstance(location, (str, os.PathLike)):
        where = f"in {redact_url(os.fspath(location)) if isinstance(location, str) else os.fspath(location)!r}"
    else:
        where = f"in the {type(location).__name__}'s Qdrant"
    there = (f"the collections there are {names}" if names else "there is no collection there yet")
    return CollectionNotFoundError(
        f"Collection {config.collection!r} does not exist {where}; {there}. Check the name (collection_name=), "
        "or create it by adding documents (LangChain: from_documents / from_texts; LlamaIndex: add, or an IngestionPipeline).")
