"""Whether an existing collection can be opened with an encoder: dense model, dims, BM25 language.

A collection records the model that built it (its meta point). Searching it with another dense
model or another BM25 language finds nothing useful, so opening one refuses with
:class:`ModelMismatchError`, and an index opened without a language adopts the stored one.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Mapping, Optional

from .errors import ModelMismatchError

log = logging.getLogger(__name__)


def stored_collection_info(store: Any) -> Dict[str, Any]:
    """What the collection records about its models (``{}`` for a new collection)."""
    try:
        return dict(store.collection_info() or {})
    except Exception:  # no collection yet: the engines differ in how they say so
        return {}


def stored_language(info: Mapping[str, Any]) -> Optional[str]:
    """The BM25 language a collection was built with (``"bm25:english"`` -> ``"english"``), if any."""
    sparse = info.get("sparse_model")
    return str(sparse).rsplit(":", 1)[1] if sparse and ":" in str(sparse) else None


def check_collection_compatible(info: Mapping[str, Any], *, collection: str, model_id: str, dense_size: int,
                                sparse_model: str) -> None:
    """Raise :class:`ModelMismatchError` (saying how to open it) unless a collection recorded as
    ``info`` (see :func:`stored_collection_info`) was built with this BM25 model, dense model and
    dimension. A new collection (empty ``info``) is compatible with anything."""
    stored_sparse = info.get("sparse_model")
    if stored_sparse and stored_sparse != sparse_model:
        raise ModelMismatchError(
            f"Collection {collection!r} was built with BM25 {stored_sparse!r} but this index uses "
            f"{sparse_model!r}; open it with language={str(stored_sparse).rsplit(':', 1)[-1]!r} "
            "or choose another collection."
        )
    if info.get("model_id") and (info["model_id"] != model_id or info.get("dense_size") != dense_size):
        raise ModelMismatchError(
            f"Collection {collection!r} was built with model {info['model_id']!r} "
            f"({info.get('dense_size')} dims) but this index uses {model_id!r} ({dense_size} dims). "
            "Open it with the same model, or choose another collection name."
        )
