"""Whether an existing collection can be opened with an encoder: dense model, dims, BM25 language.

A collection records the model that built it (its meta point). Searching it with another dense
model or another BM25 language finds nothing useful, so opening one refuses with
:class:`ModelMismatchError`, and an index opened without a language adopts the stored one.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Mapping, Optional

from .errors import StoreError
from .store.base import check_collection_compatible

log = logging.getLogger(__name__)

__all__ = ["check_collection_compatible", "stored_collection_info", "stored_language"]


def stored_collection_info(store: Any) -> Dict[str, Any]:
    """What the collection records about its models (``{}`` for a new collection)."""
    try:
        return dict(store.collection_info() or {})
    except StoreError:  # the store could not be asked (an unreachable server): say so now, once
        raise
    except Exception:  # no collection yet: the engines differ in how they say so
        return {}


def stored_language(info: Mapping[str, Any]) -> Optional[str]:
    """The BM25 language a collection was built with (``"bm25:english"`` -> ``"english"``), if any."""
    sparse = info.get("sparse_model")
    return str(sparse).rsplit(":", 1)[1] if sparse and ":" in str(sparse) else None
