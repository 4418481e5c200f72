"""One memoising wrapper of the real encoder, for tests that write the same texts again and again."""

from __future__ import annotations

import threading
from typing import Any, Dict, Sequence

import numpy as np


class CachingEncoder:
    """Delegates to the real encoder and remembers every text's vectors (same outputs, paid once).

    Two indexes given one CachingEncoder get bit-identical vectors (the congruence tests rely on
    it); a fault sweep re-writing a document pays no encoding after the first pass. With
    ``cache_queries=False`` every query reaches the inner encoder (its ``query_encodings`` counts
    each search, as tests of the one-encoding-per-search rule read it).
    """

    def __init__(self, inner: Any, cache_queries: bool = True) -> None:
        self.inner = inner
        self.cache_queries = cache_queries
        self._dense: Dict[str, np.ndarray] = {}
        self._sparse: Dict[str, Any] = {}
        self._queries: Dict[str, Any] = {}
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # dense_size, model_id, sparse_model, model_source...
        return getattr(self.inner, name)

    def encode_query(self, text: str):
        if not self.cache_queries:
            return self.inner.encode_query(text)
        with self._lock:
            if text not in self._queries:
                self._queries[text] = self.inner.encode_query(text)
            return self._queries[text]

    def encode_dense(self, texts: Sequence[str], progress=None) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._dense))
            if missing:
                for text, vector in zip(missing, self.inner.encode_dense(missing)):
                    self._dense[text] = vector
            out = np.zeros((len(texts), self.inner.dense_size), dtype=np.float32)
            for i, text in enumerate(texts):
                out[i] = self._dense[text]
        if progress:
            progress(len(texts), len(texts))
        return out

    def encode_sparse(self, texts: Sequence[str]):
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._sparse))
            if missing:
                for text, vector in zip(missing, self.inner.encode_sparse(missing)):
                    self._sparse[text] = vector
            return [self._sparse[t] for t in texts]
