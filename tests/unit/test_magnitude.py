"""Focus on scores with magnitude (SearchConfig.focus_scores="magnitude") on hand-made trees.

The ranker below is tests/support's FakeRanker with a (dense cosine, BM25) pair per node: it ranks
by their sum and, for a ``with_scores`` request, fills each hit's two scores, as the stores do. So
every z-score and cut below can be worked out by hand.
"""

from __future__ import annotations

import math
from typing import Dict, List, Sequence, Tuple

import pytest

from drag_knee_retriever.model._ids import leaf_id
from drag_knee_retriever.config import FocusConfig, SearchConfig
from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.search._magnitude import magnitude_ranking
from drag_knee_retriever.model._nodes import Span, Trace, TreeNode
from drag_knee_retriever.store import RankedHit, RankRequest
from drag_knee_retriever.search._traversal import walk
from support import FakeRanker

MAG = SearchConfig(focus=FocusConfig(scores="magnitude", global_leaves=50, merge_ratio=None))


class SideRanker(FakeRanker):
    """Ranks by dense + BM25 and fills both scores when a request asks for them."""

    def __init__(self, forest: Dict[str, TreeNode], sides: Dict[str, Tuple[float, float]]) -> None:
        super().__init__(forest, {i: d + b for i, (d, b) in sides.items()})
        self.sides = sides

    def __call__(self, requests: Sequence[RankRequest]) -> List[List[RankedHit]]:
        out = super().__call__(requests)
        return [[RankedHit(h.node, h.score, None, None, *self.sides.get(h.node.id, (0.0, 0.0)))
                 if r.with_scores else h for h in hits] for r, hits in zip(requests, out)]


def pages(doc: str, layout: Sequence[int]) -> Dict[str, TreeNode]:
    """A root over page nodes, page i holding layout[i] passage leaves (ids from the ordinals)."""
    root_id = f"{doc}:r"
    nodes: List[TreeNode] = []
    page_ids = []
    ordinal = 0
    for p, count in enumerate(layout):
        pid = f"{doc}:p{p}"
        page_ids.append(pid)
        kids = [leaf_id(doc, ordinal + i) for i in range(count)]
        nodes += [TreeNode(id=k, doc_id=doc, level=2, is_leaf=True, span=Span(ordinal + i, ordinal + i), text=k,
                           parent_id=pid) for i, k in enumerate(kids)]
        nodes.append(TreeNode(id=pid, doc_id=doc, level=1, is_leaf=False, span=Span(ordinal, ordinal + count - 1),
                              text=pid, parent_id=root_id, child_ids=tuple(kids)))
        ordinal += count
    nodes.append(TreeNode(id=root_id, doc_id=doc, level=0, is_leaf=False, span=Span(0, ordinal - 1), text=doc,
                          child_ids=tuple(page_ids)))
    return {n.id: n for n in nodes}


def hit(node: TreeNode, dense, sparse) -> RankedHit:
    return RankedHit(node, 0.0, None, None, dense, sparse)


def test_scores_are_z_scored_sides_plus_the_siblings_mean():
    forest = pages("d", [2, 2])
    a, b, c, e = (forest[leaf_id("d", i)] for i in range(4))
    # dense 0.4 0.2 0.3 0.1 (mean 0.25, sd sqrt(0.0125)); BM25 equal everywhere: z = 0 (no spread)
    ranked = magnitude_ranking([hit(a, 0.4, 1.0), hit(b, 0.2, 1.0), hit(c, 0.3, 1.0), hit(e, 0.1, 1.0)], 0.0)
    sd = math.sqrt(0.0125)
    assert [h.node.id for h in ranked] == [a.id, c.id, b.id, e.id]
    assert [h.score for h in ranked] == pytest.approx([0.15 / sd, 0.05 / sd, -0.05 / sd, -0.15 / sd])
    # With siblings: a and b share page 0 (mean own 0.1/sd), c and e page 1 (mean -0.1/sd).
    ranked = magnitude_ranking([hit(a, 0.4, 1.0), hit(b, 0.2, 1.0), hit(c, 0.3, 1.0), hit(e, 0.1, 1.0)], 1.0)
    by_id = {h.node.id: h.score for h in ranked}
    assert by_id[b.id] == pytest.approx((-0.05 + 0.05) / sd)
    assert by_id[c.id] == pytest.approx((0.05 - 0.05) / sd)
    assert ranked[0].node.id == a.id and ranked[0].dense_score == 0.4 and ranked[0].sparse_score == 1.0


def test_a_leaf_whose_page_matches_beats_an_equal_leaf_alone():
    forest = pages("d", [2, 2])
    lone, lone_sibling, paired, paired_sibling = (forest[leaf_id("d", i)] for i in range(4))
    hits = [hit(lone, 0.5, 2.0), hit(lone_sibling, 0.0, 0.0), hit(paired, 0.5, 2.0), hit(paired_sibling, 0.4, 1.5)]
    # Swap ids' alphabetical advantage away: without siblings the two tie and the id decides.
    tied = magnitude_ranking(hits, 0.0)
    assert tied[0].score == pytest.approx(tied[1].score)
    ranked = magnitude_ranking(hits, 0.25)
    assert ranked[0].node.id == paired.id, "the page's other passage is evidence for it"


def test_missing_side_scores_take_the_sides_lowest_and_duplicates_count_once():
    forest = pages("d", [3])
    a, b, c = (forest[leaf_id("d", i)] for i in range(3))
    ranked = magnitude_ranking([hit(a, 0.9, 3.0), hit(b, 0.5, None), hit(c, None, 1.0), hit(a, 0.0, 0.0)], 0.0)
    assert len(ranked) == 3
    scores = {h.node.id: h.score for h in ranked}
    # dense: 0.9, 0.5, 0.5 (c missing: the lowest); BM25: 3.0, 1.0 (b missing), 1.0
    assert scores[b.id] == pytest.approx(scores[c.id])
    assert ranked[0].node.id == a.id
    assert magnitude_ranking([], 0.25) == []


def test_the_knee_cuts_where_the_evidence_falls_not_where_the_ranks_do():
    # Three passages match strongly and about equally, seven barely: the magnitudes fall after the
    # third, and the knee over them keeps exactly those three.
    forest = pages("d", [1] * 10)
    strong = [(0.62, 9.0), (0.61, 8.8), (0.60, 8.7)]
    weak = [(0.20 - 0.01 * i, 0.5 - 0.05 * i) for i in range(7)]
    sides = {leaf_id("d", i): s for i, s in enumerate(strong + weak)}
    sides["d:r"] = (0.9, 20.0)  # the walk keeps the whole document
    ranker = SideRanker(forest, sides)
    trace = Trace(query="q", method="knee")
    hits = walk(ranker, MAG, (), trace)
    assert [h.node.id for h in hits] == [leaf_id("d", i) for i in range(3)]
    focus = trace.steps[-1]
    assert focus.kind == "focus" and focus.knee_index == 3
    assert trace.steps[-2].kind == "global"
    assert focus.candidates[0].dense_score == 0.62 and focus.candidates[0].sparse_score == 9.0


def test_region_and_global_leaves_go_in_one_round_trip_with_scores():
    forest = {**pages("bees", [2, 2]), **pages("ants", [2])}
    sides = {"bees:r": (0.9, 9.0), "ants:r": (0.0, 0.0), "bees:p0": (0.5, 1.0), "bees:p1": (0.5, 1.0),
             leaf_id("bees", 0): (0.6, 5.0), leaf_id("bees", 1): (0.1, 0.0), leaf_id("bees", 2): (0.2, 0.1),
             leaf_id("bees", 3): (0.1, 0.0), leaf_id("ants", 0): (0.7, 6.0), leaf_id("ants", 1): (0.0, 0.0)}
    ranker = SideRanker(forest, sides)
    calls: List[int] = []
    trace = Trace(query="q", method="knee")
    hits = walk(lambda reqs: calls.append(len(reqs)) or ranker(reqs), MAG, (), trace)
    assert calls[-1] == 2 and all(r.with_scores for r in ranker.requests[-2:])
    assert ranker.requests[-2].candidate_ids is not None and ranker.requests[-1].leaves_only
    ids = {h.node.id for h in hits}
    assert leaf_id("ants", 0) in ids, "a strong leaf outside the walk's regions stays a candidate"
    assert not ids & {n.parent_id for n in (forest[i] for i in ids)}


def test_without_focus_global_the_pool_is_the_walks_regions():
    forest = {**pages("bees", [2]), **pages("ants", [2])}
    sides = {"bees:r": (0.9, 9.0), "ants:r": (0.0, 0.0), leaf_id("bees", 0): (0.6, 5.0),
             leaf_id("bees", 1): (0.1, 0.0), leaf_id("ants", 0): (0.7, 6.0), leaf_id("ants", 1): (0.0, 0.0)}
    ranker = SideRanker(forest, sides)
    trace = Trace(query="q", method="knee")
    hits = walk(ranker, SearchConfig(focus=FocusConfig(scores="magnitude", global_leaves=None, merge_ratio=None)), (), trace)
    assert {h.node.doc_id for h in hits} == {"bees"}
    assert all(s.kind != "global" for s in trace.steps)


def test_merge_still_returns_a_region_most_of_whose_leaves_survive():
    forest = pages("d", [1, 1])
    sides = {"d:r": (0.9, 9.0), "d:p0": (0.1, 0.0), "d:p1": (0.1, 0.0),
             leaf_id("d", 0): (0.6, 5.0), leaf_id("d", 1): (0.6, 5.0)}
    hits = walk(SideRanker(forest, sides), SearchConfig(focus=FocusConfig(scores="magnitude", merge_ratio=0.5)), (),
                Trace(query="q", method="knee"))
    assert [h.node.id for h in hits] == ["d:r"]


@pytest.mark.parametrize("field, value, message", [
    ("scores", "cosine", "FocusConfig.scores must be one of 'rrf', 'magnitude'"),
    ("sibling_weight", -0.1, "FocusConfig.sibling_weight must be a number >= 0"),
    ("sibling_weight", float("nan"), "FocusConfig.sibling_weight must be a number >= 0"),
    ("sibling_weight", True, "FocusConfig.sibling_weight must be a number >= 0"),
])
def test_bad_magnitude_settings_are_refused_when_built(field, value, message):
    with pytest.raises(ConfigError, match=message):
        FocusConfig(**{field: value})


def test_sibling_weight_under_rrf_scores_is_refused_naming_the_scores_it_needs():
    with pytest.raises(ConfigError, match=r"sibling_weight=0.5 does nothing with scores='rrf' \(it applies with "
                                          r"scores='magnitude'\)"):
        FocusConfig(scores="rrf", sibling_weight=0.5)
    assert FocusConfig(scores="rrf").sibling_weight is None and FocusConfig().sibling_weight == 0.25


def test_the_final_fetch_drops_leaf_ranking_candidates_of_uncommitted_trees():
    """A global leaf ranking reaches leaves without their root: a write or delete cut short leaves
    rootless leaves it can see. The final fetch reads those documents' roots and the trace keeps
    only candidates of committed trees (their version); walk steps are untouched."""
    from drag_knee_retriever.search._context import prune_trace, unrooted_docs
    from drag_knee_retriever.model._nodes import TraceCandidate, TraceStep

    def cand(doc, version):
        c = TraceCandidate(leaf_id(doc, 0), doc, 1, True, "¶0", 1.0, 0)
        c.doc_hash = version
        return c

    trace = Trace(query="q", method="knee")
    trace.steps.append(TraceStep(step=0, kind="roots", level=0, candidates=[cand("kept", "v1")]))
    trace.steps.append(TraceStep(step=1, kind="global", level=1,
                                 candidates=[cand("kept", "v1"), cand("rootless", "v1"), cand("kept", "v2")]))
    assert unrooted_docs(trace) == {"kept", "rootless"}
    root = TreeNode(id="kept:r", doc_id="kept", level=0, is_leaf=False, span=Span(0, 0), text="", doc_hash="v1")
    prune_trace(trace, [root])
    assert [(c.doc_id, c.doc_hash) for c in trace.steps[1].candidates] == [("kept", "v1")]
    assert len(trace.steps[0].candidates) == 1


def test_a_constant_dense_side_leaves_the_ranking_to_bm25():
    """A mock embedding gives every text the same vector: cosines equal up to float32 rounding.
    That noise must not be z-scored into a signal; BM25 (0.0 for a leaf with no query term) decides."""
    from drag_knee_retriever.search._magnitude import magnitude_ranking
    from drag_knee_retriever.model._nodes import Span, TreeNode
    from drag_knee_retriever.store import RankedHit

    def hit(nid, cosine, bm25):
        node = TreeNode(id=nid, doc_id=nid, level=0, is_leaf=True, text=nid, span=Span(0, 0))
        return RankedHit(node, 0.0, None, None, cosine, bm25)

    hits = [hit("bees", 0.99999994, 0.0), hit("bread", 1.0, 0.0), hit("lava", 0.99999988, 2.5)]
    assert [h.node.id for h in magnitude_ranking(hits, 0.25)][0] == "lava"
