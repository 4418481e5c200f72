"""The knee of a descending score curve: how many of the best-ranked items to keep.

Positions and scores are normalised to [0, 1] and a chord is drawn from the first point to the
last. Each point's signed distance from the chord is ``(1 - x - y) / sqrt(2)``: positive below the
chord (the curve has already fallen: a convex elbow), negative above it (the curve is still high
and falls after it). The knee is the point farthest from the chord. Below the chord the knee is
the first point of the flat tail, so the items *before* it are kept; above the chord the knee is
the last point before the fall, so it is kept too. A ``sensitivity`` s in (0, 1] moves the cut to
the last point whose distance is at least ``s`` times the largest (s = 1 is the plain knee; smaller
s keeps more). The cut never falls inside a run of equal scores: ties with the last kept score are
kept. Fewer than three points, or all scores equal: everything is kept.
"""

from __future__ import annotations

import math
import operator
from typing import List, Optional, Sequence, Tuple, TypeVar

import numpy as np

from drag_knee_retriever.errors import InvalidScoresError

T = TypeVar("T")
_TOLERANCE = 1e-12
# The walk cuts lists of 3-50 scores; numpy's fixed cost per call (~50 us for the whole knee) is
# then far above the arithmetic, so lists up to this length take a pure-Python path that performs
# the same IEEE operations in the same order (identical results, ~10x faster).
_PURE_MAX = 128
_SQRT2 = math.sqrt(2.0)  # == np.sqrt(2.0): both are correctly rounded
_PLAIN_NUMBERS = frozenset((float, int))  # not bool, numpy scalars, ...: those take the numpy path


def _validate(scores: Sequence[float], sensitivity: float) -> np.ndarray:
    if not (0.0 < float(sensitivity) <= 1.0):
        raise InvalidScoresError(f"sensitivity must be in (0, 1], got {sensitivity!r}.")
    values = np.asarray(list(scores), dtype=np.float64)
    if values.ndim != 1:
        raise InvalidScoresError("scores must be a flat list of numbers.")
    if values.size and not np.all(np.isfinite(values)):
        raise InvalidScoresError(
            "scores contain NaN or infinity; the knee needs finite scores (drop or fix those items)."
        )
    if values.size and not np.isfinite(values[0] - values[-1]):
        # Scores spanning more than the float range: the knee is scale-free, so rescale first.
        values = values / np.abs(values).max()
    if values.size > 1 and np.any(np.diff(values) > _TOLERANCE * max(1.0, float(np.abs(values).max()))):
        raise InvalidScoresError(
            "scores must be in descending order (best first); sort them before cutting at the knee."
        )
    return values


def knee_distances(scores: Sequence[float]) -> np.ndarray:
    """Signed distance of every point from the chord (positive below it), after normalisation."""
    values = np.asarray(list(scores), dtype=np.float64)
    n = values.size
    if n < 3:
        return np.zeros(n)
    if not np.isfinite(values[0] - values[-1]):
        values = values / np.abs(values).max()
    span = values[0] - values[-1]
    if span <= 0:
        return np.zeros(n)
    x = np.arange(n, dtype=np.float64) / (n - 1)
    y = (values - values[-1]) / span
    return (1.0 - x - y) / np.sqrt(2.0)


def knee_index(scores: Sequence[float], sensitivity: float = 1.0) -> int:
    """How many of the (descending) ``scores`` to keep: always >= 1 for a non-empty list."""
    keep = _knee_index_short(scores, sensitivity)
    return keep if keep is not None else _knee_index_numpy(scores, sensitivity)


def _knee_index_numpy(scores: Sequence[float], sensitivity: float) -> int:
    """:func:`knee_index` on numpy: any input, any length; the reference for the short path."""
    values = _validate(scores, sensitivity)
    n = values.size
    if n < 3 or values[0] - values[-1] <= _TOLERANCE * max(1.0, abs(values[0])):
        return n
    distances = knee_distances(values)
    magnitude = np.abs(distances)
    largest = magnitude.max()
    if largest <= _TOLERANCE:
        return n  # a straight line has no knee
    # The last point at least `sensitivity` times as far from the chord as the farthest one.
    candidates = np.nonzero(magnitude >= float(sensitivity) * largest - _TOLERANCE)[0]
    point = int(candidates[-1])
    keep = point if distances[point] > 0 else point + 1
    keep = max(1, keep)
    # Never cut inside a run of equal scores.
    while keep < n and values[keep] >= values[keep - 1] - _TOLERANCE * max(1.0, abs(values[keep - 1])):
        keep += 1
    return keep


def _knee_index_short(scores: Sequence[float], sensitivity: float) -> Optional[int]:
    """:func:`knee_index` in plain Python for a short list of Python numbers; None: use numpy.

    Every step mirrors the numpy path operation for operation (same float64 arithmetic, same
    order, same tolerances), so both give the same answer; anything unusual (numpy scalars of
    other widths, nested lists, long lists, errors) goes to the numpy path, which also owns the
    error messages.
    """
    # Checks and reductions run through C-level builtins (map, all, max): a generator expression
    # per check cost more than the arithmetic for the walk's short lists.
    if not isinstance(scores, (list, tuple)) or len(scores) > _PURE_MAX:
        return None
    if not set(map(type, scores)) <= _PLAIN_NUMBERS:
        return None
    if not (0.0 < float(sensitivity) <= 1.0):
        return None
    values = list(map(float, scores))
    n = len(values)
    if not all(map(math.isfinite, values)):
        return None
    if n and not math.isfinite(values[0] - values[-1]):
        return None  # rare rescaling case: leave it to the numpy path
    if n > 1 and not all(map(operator.ge, values, values[1:])):
        # Not strictly non-increasing: the numpy path's tolerant check decides (an ordered list
        # always passes it, so only this case needs it).
        top = max(1.0, max(map(abs, values)))
        if any(b - a > _TOLERANCE * top for a, b in zip(values, values[1:])):
            return None  # not descending: the numpy path raises the error
    if n < 3 or values[0] - values[-1] <= _TOLERANCE * max(1.0, abs(values[0])):
        return n
    last = values[-1]
    span = values[0] - last
    if span <= 0:
        return n  # knee_distances would be all zeros: a straight line has no knee
    steps = n - 1
    distances = [(1.0 - i / steps - (v - last) / span) / _SQRT2 for i, v in enumerate(values)]
    magnitudes = list(map(abs, distances))
    largest = max(magnitudes)
    if largest <= _TOLERANCE:
        return n
    threshold = float(sensitivity) * largest - _TOLERANCE
    point = n - 1  # the last point at least `threshold` from the chord (the farthest one is)
    while magnitudes[point] < threshold:
        point -= 1
    keep = point if distances[point] > 0 else point + 1
    keep = max(1, keep)
    while keep < n and values[keep] >= values[keep - 1] - _TOLERANCE * max(1.0, abs(values[keep - 1])):
        keep += 1
    return keep


def knee_cut(items: Sequence[T], scores: Sequence[float], sensitivity: float = 1.0) -> Tuple[List[T], int]:
    """Cut ``items`` (ranked best first, with their ``scores``) at the knee: (kept items, count)."""
    if len(items) != len(scores):
        raise InvalidScoresError(f"{len(items)} items but {len(scores)} scores; give one score per item.")
    keep = knee_index(scores, sensitivity)
    return list(items[:keep]), keep
