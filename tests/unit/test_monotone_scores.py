"""relevance.monotone_scores: the public score never rises along the ranking (issue 40 item 3)."""

import itertools
import random

import pytest

from drag_knee_retriever.search._relevance import monotone_scores


def test_the_issue_example_becomes_one_mean():
    assert monotone_scores([0.477, 0.522, 0.573]) == pytest.approx([0.524] * 3)


def test_an_ordered_list_comes_back_unchanged_and_an_empty_one_too():
    assert monotone_scores([0.9, 0.5, 0.5, 0.1]) == [0.9, 0.5, 0.5, 0.1]
    assert monotone_scores([]) == []


def test_random_lists_give_the_closest_non_increasing_sequence_in_unit_interval():
    rng = random.Random(40)
    for _ in range(300):
        values = [rng.random() for _ in range(rng.randint(1, 9))]
        out = monotone_scores(values)
        assert len(out) == len(values) and all(0.0 <= v <= 1.0 for v in out)
        assert all(a >= b for a, b in zip(out, out[1:]))
        assert sum(out) == pytest.approx(sum(values))  # pooling keeps the total
        # least squares among non-increasing sequences on a coarse grid of the same values: none closer
        err = sum((a - b) ** 2 for a, b in zip(out, values))
        if len(values) <= 4:
            grid = sorted(set(values) | set(out))
            for cand in itertools.product(grid, repeat=len(values)):
                if all(a >= b for a, b in zip(cand, cand[1:])):
                    assert err <= sum((a - b) ** 2 for a, b in zip(cand, values)) + 1e-12
