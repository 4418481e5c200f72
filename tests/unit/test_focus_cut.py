"""The focus cut from the scores' own scale: the knee, widened over near-best leaves, narrowed to a
standout (traversal.focus_cut), on hand-made magnitude curves."""

import pytest

from drag_knee_retriever import FocusConfig, SearchConfig
from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.common._knee import knee_index
from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.store import RankedHit
from drag_knee_retriever.search._traversal import focus_cut


def hits(*scores):
    return [RankedHit(TreeNode(id=f"n{i}", doc_id="d", level=1, is_leaf=True, span=Span(i, i), text=""), s)
            for i, s in enumerate(scores)]


PLAIN = SearchConfig(focus=FocusConfig(near_best=None, standout=None))


def test_a_flat_top_keeps_every_leaf_as_good_as_the_best():
    # ten near-equal leaves, then a fall: the knee cuts at the fall's first step, but nothing tells
    # the twelve best apart (all within 1.0 of the best)
    curve = hits(5.0, 4.95, 4.9, 4.5, 4.45, 4.4, 4.35, 4.3, 4.25, 4.2, 4.1, 4.05, 1.0, 0.9, 0.8)
    assert focus_cut(PLAIN, curve) == knee_index([h.score for h in curve[:10]])
    assert focus_cut(SearchConfig(), curve) == 12
    # ... up to the limit
    assert focus_cut(SearchConfig(focus=FocusConfig(near_best_limit=5)), curve) == max(5, focus_cut(PLAIN, curve))


def test_a_knee_that_keeps_more_than_the_band_is_kept():
    curve = hits(6.0, 4.5, 4.4, 4.3, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5)
    assert focus_cut(SearchConfig(), curve) == focus_cut(PLAIN, curve) == 4


def test_a_standout_comes_back_alone():
    curve = hits(9.0, 4.0, 3.9, 3.8, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5)
    assert focus_cut(PLAIN, curve) > 1
    assert focus_cut(SearchConfig(), curve) == 1
    assert focus_cut(SearchConfig(focus=FocusConfig(standout=6.0)), curve) == focus_cut(PLAIN, curve)


def test_rank_scores_are_cut_at_their_knee_only():
    # RRF scores carry no magnitude: the widening and narrowing read z units and do not apply
    curve = hits(1.0, 0.5, 0.33, 0.25, 0.2, 0.17, 0.14, 0.12, 0.11, 0.1)
    rrf = SearchConfig(focus=FocusConfig(scores="rrf", global_leaves=None))
    assert focus_cut(rrf, curve) == knee_index([h.score for h in curve])


@pytest.mark.parametrize("field, bad", [("near_best", 0), ("near_best", -1.0), ("near_best", float("nan")),
                                        ("standout", True), ("standout", "4"), ("near_best_limit", 0)])
def test_bad_settings_say_what_to_give(field, bad):
    with pytest.raises(ConfigError, match=field):
        FocusConfig(**{field: bad})
