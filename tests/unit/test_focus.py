"""The focus step of the knee methods (traversal._focus) on hand-made trees, without Qdrant.

The ranker (tests/support/ranker.py) is an in-memory stand-in that honours candidate ids, level,
limit and filters and ranks by a fixed score per node (ties by id, as the stores do), so every
expectation below can be worked out by hand.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Sequence

import pytest

from drag_knee_retriever.model._ids import leaf_id
from drag_knee_retriever.config import FocusConfig, SearchConfig
from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.model._nodes import Span, Trace, TreeNode
from drag_knee_retriever.store import parse_filters
from drag_knee_retriever.search._traversal import focuses, walk, walk_sensitivity
from support import FakeRanker

# These pin the focus step on RRF scores (the default before focus.scores="magnitude", still
# selectable): the fake ranker's hits carry no cosine / BM25 (tests/unit/test_magnitude.py has those).
RRF_FOCUS = FocusConfig(scores="rrf", global_leaves=None)


def RRFConfig(focus=RRF_FOCUS, **kwargs):
    """A SearchConfig whose focus is on RRF; FocusConfig's keywords change that focus (``pool=None``: none)."""
    changes = {k: kwargs.pop(k) for k in list(kwargs) if k in FocusConfig.__dataclass_fields__}
    if kwargs.get("method") in ("fixed", "branch"):
        focus = FocusConfig()
    elif changes.get("pool", 0) is None:
        focus = None
    elif changes:
        focus = dataclasses.replace(focus, **changes)
    return SearchConfig(focus=focus, **kwargs)


def document(doc_id: str, leaves: int, meta: Dict[str, str] | None = None) -> Dict[str, TreeNode]:
    """A root over ``leaves`` leaves (ids from the ordinals, as the builder makes them)."""
    root_id = f"{doc_id}:r"
    kids = [TreeNode(id=leaf_id(doc_id, i), doc_id=doc_id, level=1, is_leaf=True, span=Span(i, i), text=f"{doc_id} {i}",
                     parent_id=root_id, metadata=dict(meta or {}, kind="leaf")) for i in range(leaves)]
    root = TreeNode(id=root_id, doc_id=doc_id, level=0, is_leaf=False, span=Span(0, leaves - 1), text=doc_id,
                    child_ids=tuple(k.id for k in kids), metadata=dict(meta or {}, kind="root"))
    return {n.id: n for n in [root, *kids]}


def run(forest, scores, config, filters=None):
    ranker = FakeRanker(forest, scores)
    trace = Trace(query="q", method=config.method)
    hits = walk(ranker, config, parse_filters(filters), trace)
    return hits, trace, ranker


@pytest.fixture
def bees() -> Dict[str, TreeNode]:
    return document("bees", 6)


def parent_wins(doc: str, leaf_scores: Sequence[float]) -> Dict[str, float]:
    """The root outranks every leaf, so the walk keeps the whole document; the leaves' own
    scores decide the focus."""
    scores = {f"{doc}:r": 10.0}
    scores.update({leaf_id(doc, i): s for i, s in enumerate(leaf_scores)})
    return scores


def test_focus_replaces_a_whole_document_by_the_leaves_at_its_knee(bees):
    hits, trace, ranker = run(bees, parent_wins("bees", [1.0, 0.95, 0.1, 0.08, 0.05, 0.02]), RRFConfig())
    assert [h.node.id for h in hits] == [leaf_id("bees", 0), leaf_id("bees", 1)]
    focus = trace.steps[-1]
    assert focus.kind == "focus" and focus.knee_index == 2 and focus.kept_count == 2
    assert [c.outcome for c in focus.candidates] == ["kept", "kept", "cut", "cut", "cut", "cut"]
    # One request for the focus: the walk's region's leaves, as candidates.
    assert ranker.requests[-1].candidate_ids == tuple(leaf_id("bees", i) for i in range(6))


def test_without_focus_the_walk_returns_the_whole_document(bees):
    config = RRFConfig(pool=None)
    hits, trace, _ = run(bees, parent_wins("bees", [1.0, 0.95, 0.1, 0.08, 0.05, 0.02]), config)
    assert [h.node.id for h in hits] == ["bees:r"]
    assert all(step.kind != "focus" for step in trace.steps)


def test_a_region_whose_leaves_mostly_survive_comes_back_whole(bees):
    # Flat leaf scores then a drop: the knee keeps 4 of 6 (> 0.5), so the document is merged.
    scores = parent_wins("bees", [1.0, 0.98, 0.97, 0.96, 0.1, 0.05])
    hits, trace, _ = run(bees, scores, RRFConfig())
    assert [h.node.id for h in hits] == ["bees:r"]
    assert hits[0].score == 1.0  # the score of its best leaf
    focus = trace.steps[-1]
    assert [c.outcome for c in focus.candidates] == ["merged"] * 4 + ["cut"] * 2
    assert {c.suppressed_by for c in focus.candidates[:4]} == {"bees:r"}
    # With merging off, the same survivors come back as leaves.
    hits, _, _ = run(bees, scores, RRFConfig(merge_ratio=None))
    assert [h.node.id for h in hits] == [leaf_id("bees", i) for i in range(4)]


def test_focus_pool_limits_the_leaves_ranked(bees):
    _, trace, ranker = run(bees, parent_wins("bees", [1.0, 0.9, 0.8, 0.7, 0.6, 0.5]), RRFConfig(pool=3))
    assert ranker.requests[-1].limit == 3 and len(trace.steps[-1].candidates) == 3


def test_leaves_of_two_documents_compete_in_one_list():
    forest = {**document("a", 3), **document("b", 3)}
    scores = {"a:r": 10.0, "b:r": 9.9}
    scores.update({leaf_id("a", 0): 0.2, leaf_id("a", 1): 0.9, leaf_id("a", 2): 0.1,
                   leaf_id("b", 0): 0.1, leaf_id("b", 1): 0.1, leaf_id("b", 2): 1.0})
    hits, _, ranker = run(forest, scores, RRFConfig())
    assert [h.node.id for h in hits] == [leaf_id("b", 2), leaf_id("a", 1)]
    assert len([r for r in ranker.requests if r.candidate_ids and leaf_id("b", 2) in r.candidate_ids]) >= 1


def test_fixed_and_branch_never_focus(bees):
    scores = parent_wins("bees", [1.0, 0.95, 0.1, 0.08, 0.05, 0.02])
    for method in ("fixed", "branch"):
        config = RRFConfig(method=method)
        assert not focuses(config)
        hits, trace, _ = run(bees, scores, config)
        assert [h.node.id for h in hits] == ["bees:r"]
        assert all(step.kind != "focus" for step in trace.steps)


def test_a_filter_that_no_leaf_passes_keeps_the_walk_nodes():
    forest = document("d", 4)
    # Only the root passes the filter: the focus ranks nothing, so the walk's node stands.
    hits, trace, _ = run(forest, parent_wins("d", [1, 1, 1, 1]), RRFConfig(), filters={"kind": "root"})
    assert [h.node.id for h in hits] == ["d:r"]
    assert trace.steps[-1].kind == "focus" and trace.steps[-1].candidates == []


def test_the_walk_cuts_at_the_region_sensitivity_when_it_focuses():
    assert walk_sensitivity(RRFConfig()) == 0.85
    assert walk_sensitivity(RRFConfig(focus=None)) == 1.0
    assert walk_sensitivity(RRFConfig(method="sensitive_knee", sensitivity=0.5)) == 0.5
    assert walk_sensitivity(RRFConfig(method="sensitive_knee", sensitivity=0.95,
                                      focus=FocusConfig(region_sensitivity=0.9))) == 0.9


@pytest.mark.parametrize("field,value,message", [
    ("pool", 0, "FocusConfig.pool must be an integer >= 1"),
    ("pool", 2.5, "FocusConfig.pool must be an integer >= 1"),
    ("pool", True, "FocusConfig.pool must be an integer >= 1"),
    ("pool", None, "FocusConfig.pool must be an integer >= 1"),
    ("region_sensitivity", 0.0, "FocusConfig.region_sensitivity must be a number in (0, 1]"),
    ("region_sensitivity", None, "FocusConfig.region_sensitivity must be a number in (0, 1]"),
    ("merge_ratio", 1.5, "FocusConfig.merge_ratio must be a number in (0, 1] or None"),
    ("merge_ratio", "half", "FocusConfig.merge_ratio must be a number in (0, 1] or None"),
])
def test_bad_focus_settings_are_refused_when_built(field, value, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        FocusConfig(**{field: value})


# -- the tree as evidence: region leaves fused with a global leaf ranking (focus_global) ---------


def two_documents():
    forest = {**document("bees", 4), **document("ants", 4), **document("wasps", 2)}
    # bees' root wins the roots by far (the knee keeps bees only); ants holds the best leaf
    scores = {"bees:r": 10.0, "ants:r": 0.1, "wasps:r": 0.05,
              leaf_id("bees", 0): 0.9, leaf_id("bees", 1): 0.2, leaf_id("bees", 2): 0.1, leaf_id("bees", 3): 0.05,
              leaf_id("ants", 2): 1.0, leaf_id("ants", 0): 0.01, leaf_id("ants", 1): 0.01, leaf_id("ants", 3): 0.01}
    return forest, scores


def test_focus_global_recovers_a_strong_leaf_whose_root_the_walk_cut():
    forest, scores = two_documents()
    walk_only = FakeRanker(forest, scores)
    hits = walk(walk_only, RRFConfig(merge_ratio=None), (), Trace(query="q", method="knee"))
    assert leaf_id("ants", 2) not in {h.node.id for h in hits}, "the walk alone never sees ants"
    ranker = FakeRanker(forest, scores)
    trace = Trace(query="q", method="knee")
    calls = []
    hits = walk(lambda reqs: calls.append(len(reqs)) or ranker(reqs), RRFConfig(global_leaves=3, merge_ratio=None),
                (), trace)
    assert hits[0].node.id == leaf_id("bees", 0)
    assert [s.kind for s in trace.steps][-2:] == ["global", "focus"]
    assert calls[-1] == 2, "region leaves and global leaves go in one round trip"
    focus = trace.steps[-1]
    # region ranks b0 b1 b2 b3, global ranks a2 b0 b1; fused with 1 / (2 + rank):
    # b0 1/2 + 1/3, b1 1/3 + 1/4, a2 1/2, b2 1/4, b3 1/5
    assert [c.node_id for c in focus.candidates] == [leaf_id("bees", 0), leaf_id("bees", 1), leaf_id("ants", 2),
                                                     leaf_id("bees", 2), leaf_id("bees", 3)]
    assert focus.candidates[0].fused_score == pytest.approx(1 / 2 + 1 / 3)
    assert focus.candidates[2].fused_score == pytest.approx(1 / 2)


def test_combine_rankings_sums_reciprocal_ranks():
    from drag_knee_retriever.store import RankedHit
    from drag_knee_retriever.search._traversal import combine_rankings

    forest = document("d", 3)
    a, b, c = (RankedHit(node=forest[leaf_id("d", i)], score=0.0) for i in range(3))
    fused = combine_rankings([[a, b], [b, c]], rrf_k=2)
    assert [h.node.id for h in fused] == [b.node.id, a.node.id, c.node.id]
    assert [round(h.score, 4) for h in fused] == [round(1 / 3 + 1 / 2, 4), 0.5, round(1 / 3, 4)]


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_focus_global_is_validated(bad):
    with pytest.raises(ConfigError, match="FocusConfig.global_leaves must be an integer >= 1"):
        FocusConfig(global_leaves=bad)
