"""Checks of what a caller passes to a search, each refusal one line naming the argument as the
caller spelled it (``k``, ``similarity_top_k``, ``score_threshold``, ``embedding``,
``query_embedding``, ``query_vectors``), what was wrong with it and what to pass instead.

A count or a threshold is an :class:`InvalidSettingError` (both a config and a query error: a
retriever's setting, or a call's). Used by :class:`~drag_knee_retriever.DragKneeIndex` and both
framework adapters, so a value is judged once, before any work, and never reaches the engine
(where a NaN query vector ranked nothing and a string threshold raised a bare ``TypeError``).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Optional, Tuple

from drag_knee_retriever.errors import InvalidQueryError, InvalidSettingError
from drag_knee_retriever.model._nodes import QueryVectors
from drag_knee_retriever.model._settings import MAX_SETTING


def _shown(value: Any) -> str:
    """``'0.5' (a str)``: the value as given and, when it is not a number, its type."""
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"{text} (a {type(value).__name__})"
    return text


def check_count(value: Any, name: str) -> int:
    """A number of results (``k``, ``similarity_top_k``): an int in [1, MAX_SETTING]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= int(value) <= MAX_SETTING:
        raise InvalidSettingError(
            f"{name} must be an integer >= 1 (at most {MAX_SETTING:,}: how many results to return), "
            f"got {_shown(value)}; e.g. {name}=4."
        )
    return int(value)


def check_threshold(value: Any, name: str = "score_threshold") -> Optional[float]:
    """A score threshold: None, or a finite number (scores are in [0, 1])."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise InvalidSettingError(
            f"{name} must be a number (scores are in [0, 1], higher is better) or None, got {_shown(value)}; "
            f"e.g. {name}=0.5."
        )
    return float(value)


def check_dense(values: Any, size: int, name: str) -> Tuple[float, ...]:
    """A dense query vector given by the caller: ``size`` finite numbers."""
    if values is None or isinstance(values, (str, bytes, dict)):
        raise InvalidQueryError(f"{name} must be a list of {size} numbers (a query embedding), got {_shown(values)}.")
    try:
        floats = tuple(float(x) for x in values)
    except (TypeError, ValueError):
        raise InvalidQueryError(
            f"{name} must be a list of {size} numbers (a query embedding); some of its values are not numbers."
        ) from None
    if len(floats) != size:
        raise InvalidQueryError(
            f"{name} has {len(floats)} values, but the index's model makes vectors of {size}; "
            "embed the query with the index's own model."
        )
    bad = [position for position, x in enumerate(floats) if not math.isfinite(x)]
    if bad:
        raise InvalidQueryError(
            f"{name} holds {len(bad)} value(s) that are NaN or infinite (the first at position {bad[0]}: "
            f"{floats[bad[0]]!r}), so no score can be computed; check the embedding model's output "
            "(a query vector must be finite)."
        )
    return floats


def check_query_vectors(vectors: Any, size: int, name: str = "query_vectors") -> QueryVectors:
    """A whole :class:`QueryVectors` given by the caller: its dense side as :func:`check_dense`,
    its BM25 side as many finite values as non-negative integer indices."""
    if not isinstance(vectors, QueryVectors):
        raise InvalidQueryError(
            f"{name} must be a QueryVectors (e.g. index.encoder.encode_query(text)), got {_shown(vectors)}."
        )
    check_dense(vectors.dense, size, f"{name}.dense")
    indices, values = tuple(vectors.sparse_indices), tuple(vectors.sparse_values)
    if len(indices) != len(values):
        raise InvalidQueryError(
            f"{name} has {len(indices)} sparse_indices but {len(values)} sparse_values; give one value per index."
        )
    if any(isinstance(i, bool) or not isinstance(i, numbers.Integral) or i < 0 for i in indices):
        raise InvalidQueryError(f"{name}.sparse_indices must be non-negative integers (BM25 term ids).")
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v)]
    if bad:
        raise InvalidQueryError(
            f"{name}.sparse_values holds {len(bad)} value(s) that are not finite numbers (first: {bad[0]!r}); "
            "a query's BM25 weights must be finite."
        )
    return vectors


__all__ = ["check_count", "check_dense", "check_query_vectors", "check_threshold"]
