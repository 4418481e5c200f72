"""Whether an existing collection can be opened with an encoder: dense model, dims, BM25 language.

A collection records the model that built it (its meta point). Searching it with another dense
model or another BM25 language finds nothing useful, so opening one refuses with
:class:`ModelMismatchError`, and an index opened without a language adopts the stored one.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Dict, Mapping, Optional

from drag_knee_retriever.errors import StoreError
from drag_knee_retriever.store.base import check_collection_compatible

log = logging.getLogger(__name__)

__all__ = ["check_collection_compatible", "stored_collection_info", "stored_language", "stored_max_tokens", "NO_LIMIT"]


def stored_collection_info(store: Any) -> Dict[str, Any]:
    """What the collection records about its models (``{}`` for a new collection)."""
    try:
        return dict(store.collection_info() or {})
    except StoreError:  # the store could not be asked (an unreachable server): say so now, once
        raise
    except Exception:  # no collection yet: the engines differ in how they say so
        return {}


#: What :func:`stored_max_tokens` returns for a collection that records no model yet (a new one).
NO_LIMIT = object()


def stored_max_tokens(info: Mapping[str, Any]) -> Any:
    """The dense encoder's ``max_tokens`` a collection was built with: the number in its model id
    (``"...|max_tokens=128"``), None for a model id without one (the model's own limit), or
    :data:`NO_LIMIT` for a collection that records no model (new)."""
    model_id = info.get("model_id")
    if not model_id:
        return NO_LIMIT
    found = re.search(r"\|max_tokens=(\d+)", str(model_id))
    return int(found.group(1)) if found else None


def stored_language(info: Mapping[str, Any]) -> Optional[str]:
    """The BM25 language a collection was built with (``"bm25:english"`` -> ``"english"``), if any."""
    sparse = info.get("sparse_model")
    return str(sparse).rsplit(":", 1)[1] if sparse and ":" in str(sparse) else None
