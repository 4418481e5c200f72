"""A passage-vector cache for evaluation runs: build variants and AutoMerging re-encode the same texts."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

log = logging.getLogger(__name__)


# Long enough to pass any truncation limit a dense model may be given (MiniLM reads 256 or 512
# word pieces), so a changed limit changes the fingerprint.
_PROBE = " ".join(f"probe{i} evidence retrieval context" for i in range(200))


def encoder_fingerprint(encoder: Any) -> str:
    """A short hash of what the encoder makes of fixed texts: same model, weights and truncation
    give the same fingerprint; any change (another model, another token limit) gives another, so a
    passage-vector cache can never mix vectors of two encoder settings."""
    import hashlib

    import numpy as np

    vectors = np.asarray(encoder.encode_dense(["drag knee retriever", _PROBE]), dtype=np.float32)
    digest = hashlib.sha1(f"{getattr(encoder, 'model_id', '')}:{vectors.shape}".encode())
    digest.update(np.round(vectors, 4).tobytes())
    return digest.hexdigest()[:16]


def _is_sha1(key: str) -> bool:
    return len(key) == 40 and all(c in "0123456789abcdef" for c in key)


class CachingEncoder:
    """Wraps an :class:`~drag_knee_retriever.embeddings.Encoder` and remembers passage vectors by text.

    Build variants re-encode the same leaves (and AutoMerging the same chunks across runs); the
    vectors are the same, so they are computed once. With ``cache_dir`` the cache is kept on disk
    (one ``.npz`` per :func:`encoder_fingerprint`, keyed by the SHA-1 of the text) and reused by
    later runs of the same encoder settings. Queries are
    never cached: each question is encoded once per run, and ``query_encodings`` counts that.
    """

    SLICE = 256
    SAVE_EVERY_S = 180.0

    def __init__(self, inner: Any, cache_dir: Optional[os.PathLike | str] = None) -> None:
        self._inner = inner
        self._saved_at = time.monotonic()
        self._vectors: Dict[str, Any] = {}
        self._path: Optional[Path] = None
        self.hits = 0
        self.misses = 0
        if cache_dir is not None:
            import hashlib

            import numpy as np

            self._path = Path(cache_dir) / f"dense-{encoder_fingerprint(inner)}.npz"
            if self._path.is_file():
                with np.load(self._path) as data:
                    for key, vector in zip(data["keys"], data["vectors"]):
                        key = key.decode() if isinstance(key, bytes) else str(key)
                        if _is_sha1(key):
                            self._vectors[key] = vector
                log.info("embedding cache: %d vectors from %s", len(self._vectors), self._path)

    def __getattr__(self, name: str) -> Any:
        # dense_size, model_id, sparse_model, config, model_source, query_encodings, ...
        return getattr(self._inner, name)

    def encode_query(self, text: str) -> Any:
        """Encoded by the wrapped encoder every time (never cached)."""
        return self._inner.encode_query(text)

    def encode_sparse(self, texts: Sequence[str]) -> Any:
        return self._inner.encode_sparse(texts)

    def encode_dense(self, texts: Sequence[str], progress: Any = None) -> Any:
        """Passage vectors in input order; only texts not seen before reach the model."""
        import hashlib

        import numpy as np

        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        missing: Dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in self._vectors and key not in missing:
                missing[key] = text
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            # In slices, saved to disk every few minutes: on a crowded machine a long-document
            # run encodes for an hour, and a run stopped half-way keeps what it encoded.
            items = list(missing.items())
            done = 0
            for lo in range(0, len(items), self.SLICE):
                part = items[lo : lo + self.SLICE]
                inner_progress = None
                if progress:
                    inner_progress = lambda d, t, base=done: progress(base + d, len(items))  # noqa: E731
                vectors = self._inner.encode_dense([t for _, t in part], progress=inner_progress)
                for (key, _), vector in zip(part, vectors):
                    self._vectors[key] = vector
                done += len(part)
                if self._path is not None and time.monotonic() - self._saved_at > self.SAVE_EVERY_S:
                    self.save()
        elif progress:
            progress(len(texts), len(texts))
        if not texts:
            return np.zeros((0, self._inner.dense_size), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys])

    def save(self) -> None:
        """Write the cache to disk (when a cache folder was given)."""
        if self._path is None:
            return
        import numpy as np

        self._path.parent.mkdir(parents=True, exist_ok=True)
        if self._path.is_file():
            # Another run may have saved since this one loaded: keep its vectors too.
            with np.load(self._path) as data:
                for key, vector in zip(data["keys"], data["vectors"]):
                    key = key.decode() if isinstance(key, bytes) else str(key)
                    if _is_sha1(key):
                        self._vectors.setdefault(key, vector)
        keys = np.array(list(self._vectors), dtype="S40")
        vectors = np.stack(list(self._vectors.values())) if self._vectors else np.zeros((0, self._inner.dense_size))
        tmp = self._path.with_name(f"{self._path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, keys=keys, vectors=vectors.astype(np.float32))
        tmp.replace(self._path)
        self._saved_at = time.monotonic()
