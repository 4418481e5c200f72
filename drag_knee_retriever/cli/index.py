"""Where the index is and how the command opens it (folder checks, engine, BM25 language)."""

from __future__ import annotations

import logging
import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from drag_knee_retriever.errors import CliError, DragKneeError
from drag_knee_retriever.common._redact import protect, redact_text, redact_url
from drag_knee_retriever.store import detect_engine
from drag_knee_retriever.cli.options import APP_NAME, EXIT_USAGE, INDEX_ENV, Engine, Language, state
from drag_knee_retriever.cli.output import err, quiet_native_logs

log = logging.getLogger(__name__)


def default_index_dir() -> Path:
    """The per-user index folder: ``<user data dir>/drag-knee-retriever/index``."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "index"


def _index_location(index: Optional[Path], url: Optional[str]) -> Tuple[Optional[Path], Optional[str]]:
    """(folder, None) or (None, url). --index beats DRAG_KNEE_INDEX beats the per-user default.

    DRAG_KNEE_INDEX is read here rather than by the option, so that --url can override a folder
    set in the environment while --index and --url on the same command line are refused.
    """
    if url:
        if index is not None:
            raise CliError("Give either --index DIR (a local folder) or --url URL (a server), not both.", EXIT_USAGE)
        return None, url
    if index is None and os.environ.get(INDEX_ENV):
        index = Path(os.environ[INDEX_ENV])
    return (index.expanduser() if index is not None else default_index_dir()), None


def ocr_cache_dir(index: Optional[Path], url: Optional[str]) -> Optional[Path]:
    """Where ingest keeps OCR text: None, the user's cache folder (as the Python API), for every
    index: the cache is keyed by page image and engine settings, so a second index of the same
    scans reads them from it instead of running OCR again. (Before, each index folder had its own
    ``<index>.ocr-cache``; such a folder is no longer read.)"""
    return None


def index_exists(index: Optional[Path], url: Optional[str], collection: str) -> bool:
    """Whether the index a command names exists already (a server: assumed, it says otherwise)."""
    folder, url = _index_location(index, url)
    return folder is None or detect_engine(folder, collection) is not None


def _check_folder(folder: Path, collection: str, *, must_exist: bool) -> None:
    """Refuse folders that cannot be an index, with a message saying what to do.

    Commands that only read (search, docs, stats) must not create an empty index as a side
    effect, so they check that the collection's folder is there: ``<folder>/<collection>``
    (Qdrant Edge) or ``<folder>/collection/<collection>`` (qdrant-client local mode).
    """
    if folder.exists() and not folder.is_dir():
        raise CliError(f"The index path {folder} is a file, not a folder; give --index a folder.")
    if not must_exist:
        return
    if not folder.exists() or not any(folder.iterdir()):
        raise CliError(
            f"No index at {folder} yet; run `drag-knee ingest PATH` first (or point --index at an existing index)."
        )
    if detect_engine(folder, collection) is None:
        raise CliError(
            f"The folder {folder} holds no collection {collection!r}; run `drag-knee ingest PATH` first, "
            "or pass the right --collection / --index."
        )


def open_index(
    *,
    index: Optional[Path],
    url: Optional[str],
    api_key: Optional[str],
    collection: str,
    engine: Optional[Engine] = None,
    model: Optional[str] = None,
    model_path: Optional[Path] = None,
    language: Optional[Language] = None,
    branching: Optional[int] = None,
    passage_words: Optional[int] = None,
    split_pages_over: Optional[int] = None,
    must_exist: bool,
) -> Any:
    folder, url = _index_location(index, url)
    # Before anything can log the URL (this function's own debug line, the HTTP stack's): its
    # credentials and the API key are masked in every log record from here on.
    secrets = protect(url, [api_key] if api_key else []) if url else []
    if folder is not None:
        _check_folder(folder, collection, must_exist=must_exist)
        if not must_exist:
            folder.mkdir(parents=True, exist_ok=True)
    quiet_native_logs(state["verbose"])
    from drag_knee_retriever.config import BuildConfig, EmbeddingConfig, LeafConfig, StoreConfig
    from drag_knee_retriever.facade._index import DragKneeIndex

    store: Dict[str, Any] = {"collection": collection}
    if engine is not None and engine is not Engine.auto:
        store["engine"] = engine.value
    elif folder is not None and detect_engine(folder, collection) == "local":
        # A folder written by qdrant-client local mode (engine="local" in Python): open it with
        # that engine rather than starting an empty Edge collection beside it.
        store["engine"] = Engine.local.value
    if url:
        store["api_key"] = api_key
    embedding: Dict[str, Any] = {}
    if model:
        embedding["model_name"] = model
    if model_path is not None:
        embedding["model_path"] = str(model_path.expanduser())
    if language is not None:
        embedding["language"] = language.value
    leaves: Dict[str, Any] = {}
    if passage_words is not None:
        leaves["passage_words"] = passage_words or None  # 0: every page one leaf
    if split_pages_over is not None:
        leaves["split_pages_over"] = split_pages_over
    kwargs: Dict[str, Any] = {"store": StoreConfig(**store)}
    if embedding:
        kwargs["embedding"] = EmbeddingConfig(**embedding)
    if branching is not None or leaves:
        kwargs["build"] = BuildConfig(**({"branching": branching} if branching is not None else {}),
                                      leaves=LeafConfig(**leaves))
    # --url is a server address: a bare host:port means http (as qdrant-client reads it).
    where = redact_url(url if "://" in url else f"http://{url}") if url else str(folder)
    log.debug("opening index %s", where)
    # Loading the model takes a few seconds: say so on a terminal instead of sitting silent.
    status = err.status("opening the index and loading the embedding model…") if err.is_terminal else nullcontext()
    try:
        with status:
            idx = DragKneeIndex(where, **kwargs)
    except (DragKneeError, ImportError, KeyboardInterrupt):
        raise
    except Exception as exc:
        # A refusal by the OS (no permission, read-only, full) is not damage: say which, and that
        # the index is intact, never "move the folder aside".
        from drag_knee_retriever.common._disk import io_error

        refused = io_error(exc, "open the index", where) if folder is not None else None
        if refused is not None:
            raise refused from None
        # The engines raise assorted errors (JSON, SQLite, Rust panics) on a folder they cannot
        # read; for the user they all mean the same thing.
        if folder is None:
            raise CliError(
                f"Cannot open collection {collection!r} at {where} ({type(exc).__name__}: "
                f"{redact_text(str(exc), secrets)}); "
                "check the URL, the API key and that the server is running."
            ) from None
        raise CliError(
            f"Cannot open the index at {where}: it is damaged or not a drag-knee index "
            f"({type(exc).__name__}: {exc}). Move the folder aside and run `drag-knee ingest` again, "
            "or point --index at another folder."
        ) from None
    return idx


def where(index: Optional[Path], url: Optional[str]) -> str:
    """The index as printed to the user: the folder, or the server URL with its credentials masked."""
    folder, url = _index_location(index, url)
    return redact_url(url) if url else str(folder.resolve())


