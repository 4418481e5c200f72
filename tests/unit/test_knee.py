"""Golden and property tests of the knee cut."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from drag_knee_retriever import knee_cut, knee_index
from drag_knee_retriever.errors import InvalidScoresError
from drag_knee_retriever.common._knee import knee_distances


@pytest.mark.parametrize(
    "scores, expected",
    [
        ([], 0),
        ([0.7], 1),
        ([0.9, 0.1], 2),  # fewer than three points: keep all
        ([0.5, 0.5, 0.5, 0.5], 4),  # all equal: keep all
        ([1.0, 0.2, 0.1, 0.05, 0.0], 1),  # one dominant item: convex elbow right after it
        ([1.0, 0.95, 0.9, 0.1, 0.0], 3),  # a high plateau then a fall: keep the plateau
        ([1.0, 0.5, 0.3, 0.2, 0.15, 0.1, 0.0], 2),
        ([1.0, 0.8, 0.6, 0.4, 0.2], 5),  # a straight line has no knee
    ],
)
def test_golden_cuts(scores, expected):
    assert knee_index(scores) == expected


def test_direction_of_the_cut_keeps_the_head_not_the_tail():
    kept, count = knee_cut(["a", "b", "c", "d", "e", "f"], [0.9, 0.88, 0.86, 0.2, 0.19, 0.18])
    assert kept == ["a", "b", "c"] and count == 3


def test_lower_sensitivity_keeps_more():
    scores = [1.0, 0.5, 0.3, 0.2, 0.15, 0.1, 0.0]
    assert knee_index(scores, 1.0) == 2
    assert knee_index(scores, 0.5) == 4
    assert knee_index(scores, 0.5) >= knee_index(scores, 0.85) >= knee_index(scores, 1.0)


def test_never_cuts_inside_a_run_of_equal_scores():
    # The plain knee would keep one item, but the second ties with it.
    assert knee_index([1.0, 1.0, 0.2, 0.1, 0.05, 0.0]) >= 2


def test_distance_sign_is_positive_below_the_chord():
    d = knee_distances([1.0, 0.2, 0.1, 0.0])
    assert d[1] > 0 and d[0] == pytest.approx(0) and d[-1] == pytest.approx(0)


@pytest.mark.parametrize("bad", [[1.0, float("nan"), 0.2], [1.0, float("inf")]])
def test_non_finite_scores_are_an_error(bad):
    with pytest.raises(InvalidScoresError, match="NaN or infinity"):
        knee_index(bad)


def test_ascending_scores_are_an_error():
    with pytest.raises(InvalidScoresError, match="descending"):
        knee_index([0.1, 0.5, 0.9])


@pytest.mark.parametrize("s", [0.0, -0.1, 1.5])
def test_sensitivity_out_of_range_is_an_error(s):
    with pytest.raises(InvalidScoresError, match="sensitivity"):
        knee_index([1.0, 0.5, 0.1], s)


def test_mismatched_lengths_are_an_error():
    with pytest.raises(InvalidScoresError, match="one score per item"):
        knee_cut(["a"], [1.0, 0.5])


descending = st.lists(st.floats(min_value=-1e3, max_value=1e3, allow_nan=False), min_size=1, max_size=60).map(
    lambda xs: sorted(xs, reverse=True)
)


@settings(max_examples=300, deadline=None)
@given(descending, st.floats(min_value=0.01, max_value=1.0))
def test_property_non_empty_prefix_without_splitting_ties(scores, s):
    keep = knee_index(scores, s)
    assert 1 <= keep <= len(scores)
    if keep < len(scores):
        # The cut falls below the tie band of the last kept score (knee.py's own definition:
        # math.isclose rounds |a - b| and calls 1e-12 + 5e-306 "within 1e-12", which it is not).
        assert scores[keep] < scores[keep - 1] - 1e-12 * max(1.0, abs(scores[keep - 1]))


@settings(max_examples=200, deadline=None)
@given(descending)
def test_property_sensitivity_is_monotone(scores):
    assert knee_index(scores, 0.3) >= knee_index(scores, 0.7) >= knee_index(scores, 1.0)


# The walk cuts short lists in plain Python (knee._knee_index_short); numpy is the reference.
from drag_knee_retriever.common._knee import _PURE_MAX, _knee_index_numpy, _knee_index_short  # noqa: E402

short_lists = st.one_of(
    st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=0, max_size=70),
    st.lists(st.sampled_from([0.0, 0.2, 0.2, 0.5, 0.5, 0.8, 1.0, 1.0 + 1e-13]), min_size=0, max_size=50),
    st.lists(st.floats(-1e307, 1e307), min_size=1, max_size=40),
    st.lists(st.integers(-5, 5), min_size=0, max_size=20),
    # Scores shaped like RRF fusion: sums of 1 / (k + rank).
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), min_size=0, max_size=60).map(
        lambda pairs: [1 / (2 + a) + 1 / (2 + b) for a, b in pairs]),
).map(lambda xs: sorted(xs, reverse=True))


@settings(max_examples=600, deadline=None)
@given(short_lists, st.one_of(st.just(1.0), st.floats(min_value=0.01, max_value=1.0)))
def test_property_the_short_path_equals_numpy(scores, s):
    fast = _knee_index_short(scores, s)
    assert fast is not None  # plain descending Python floats of a short list always take it
    assert fast == _knee_index_numpy(scores, s)
    assert knee_index(scores, s) == fast


def test_the_short_path_hands_unusual_input_to_numpy():
    import numpy as np

    assert _knee_index_short([1.0] * (_PURE_MAX + 1), 1.0) is None
    assert _knee_index_short(np.array([1.0, 0.5, 0.1]), 1.0) is None
    assert _knee_index_short([np.float32(1.0), np.float32(0.5), np.float32(0.1)], 1.0) is None
    assert _knee_index_short([0.1, 0.5, 0.9], 1.0) is None  # ascending: numpy raises the error
    assert _knee_index_short([1.0, float("nan"), 0.2], 1.0) is None
    assert _knee_index_short([1e308, 0.0, -1e308], 1.0) is None  # span beyond the float range
    assert knee_index(np.array([1.0, 0.2, 0.1, 0.05, 0.0])) == knee_index([1.0, 0.2, 0.1, 0.05, 0.0]) == 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), min_size=0, max_size=40),
       st.one_of(st.just(1.0), st.floats(min_value=0.01, max_value=1.0)))
def test_property_the_short_path_equals_numpy_within_the_order_tolerance(pairs, s):
    """Lists that rise by less than the tolerance count as descending on both paths."""
    scores = []
    for value, bump in sorted(pairs, reverse=True):
        scores.append(value + (4e-13 if bump and scores else 0.0))
    fast = _knee_index_short(scores, s)
    try:
        reference = _knee_index_numpy(scores, s)
    except Exception:
        reference = None
    assert fast is None or fast == reference
