"""How this package calls Qdrant Edge: the pinned release, the import, the engine's errors in ours.

Shared by every module of the Edge store (``engine.py``, ``rank.py``, ``writes.py``, ``roots.py``,
``maps.py``); see the package docstring for the decisions behind the calls.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

import numpy as np

from drag_knee_retriever.common._disk import io_error
from drag_knee_retriever.errors import InvalidQueryError, ModelMismatchError, StoreError, StoreLockedError

EDGE_PACKAGE = "qdrant-edge-py"
EDGE_VERSION = "0.9.0"  # pinned in pyproject.toml; the API of this beta package drifts between releases

# Points per scroll call when every node's sparse vector is read (the frequencies of a reopened index).
SCROLL_PAGE = 4096


def import_edge() -> Any:
    try:
        import qdrant_edge
    except ImportError as exc:  # pragma: no cover - it is a core dependency
        raise StoreError(
            f"Qdrant Edge is not installed ({exc}). Install it with `pip install {EDGE_PACKAGE}=={EDGE_VERSION}`, "
            "or choose engine='local' (qdrant-client local mode) or engine='server' (url=...)."
        ) from None
    return qdrant_edge


def match_value(qe: Any, value: Any) -> Any:
    """A MatchValue the engine reads with the right type (see the package docstring on booleans)."""
    if isinstance(value, bool):
        return qe.MatchValue(np.bool_(value))
    return qe.MatchValue(value)


@contextlib.contextmanager
def engine_errors(what: str, where: Optional[str] = None) -> Iterator[None]:
    """Turn the engine's bare exceptions into a StoreError that says what was being done."""
    try:
        yield
    except (StoreError, StoreLockedError, ModelMismatchError, InvalidQueryError):
        raise
    except Exception as exc:
        refused = io_error(exc, what, where or "the index folder")
        if refused is not None:  # the disk said no (full, read-only, permissions): the index is intact
            raise refused from exc
        raise StoreError(f"Qdrant Edge failed to {what}: {exc}") from exc
