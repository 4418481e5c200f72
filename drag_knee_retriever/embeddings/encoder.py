"""The encoder: one dense embedder plus fastembed's BM25, with output checks."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from drag_knee_retriever.config import EmbeddingConfig
from drag_knee_retriever.errors import EmbeddingError
from drag_knee_retriever.model._nodes import QueryVectors
from drag_knee_retriever.embeddings.base import DATA_DIR, SparseVector
from drag_knee_retriever.embeddings.fastembed import FastEmbedDense
from drag_knee_retriever.embeddings.frameworks import as_dense_embedder

log = logging.getLogger(__name__)

# Texts per call to a framework / callable embedder: bounds memory and gives progress reports
# without turning one API call into hundreds.
_FOREIGN_BATCH = 64


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
            specific_model_path=str(DATA_DIR / "stopwords"),
            language=self.config.bm25_language,
        )
        self.dense_size = int(self.dense.dimension)
        self.model_id = str(self.dense.identity)
        self.sparse_model = f"Qdrant/bm25:{self.config.bm25_language}"
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
