"""Properties of the walk on random forests and random scores, without Qdrant, and of the knee.

``traversal.walk`` takes an injected ranker. Here the ranker is an honest in-memory stand-in
(tests/support/ranker.py): it
honours every field of a :class:`RankRequest` (candidate ids, level, leaves only, filters through
the library's own ``node_matches``, limit) and returns hits best first, ties broken by id, like the
stores. Scores are random per node, or drawn afresh for every request (the walk must not rely on
a node scoring the same twice), from a small set so that ties are common.

For every method: the walk terminates within a bounded number of round trips, returns existing
nodes, no duplicates, never a node together with its ancestor, never a node (or a trace
candidate) outside the filter, and something whenever some root matches. Malformed trees (a child
pointing back to an ancestor or to itself, to a missing node or into another document) must still
terminate (the depth guard and the visited sets) and return only existing, matching nodes.
"""

from __future__ import annotations

import math
import random
from typing import Dict, List, Optional

import pytest
from hypothesis import assume, given, settings, strategies as st

from drag_knee_retriever import knee_cut, knee_index
from drag_knee_retriever.model._ids import leaf_id
from drag_knee_retriever.config import SearchConfig
from drag_knee_retriever.search._traversal import focuses
from drag_knee_retriever.errors import InvalidScoresError
from drag_knee_retriever.model._nodes import Span, Trace, TreeNode
from drag_knee_retriever.store import node_matches, parse_filters
from drag_knee_retriever.search._traversal import walk
from support import FakeRanker

METHODS = ("fixed", "knee", "sensitive_knee", "branch")
SCORES = (0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0)  # few distinct values: ties are common
COUNTS = {"forests": 0, "walks": 0, "malformed_walks": 0, "knee_lists": 0}


# ---------------------------------------------------------------------------------------------
# random forests
# ---------------------------------------------------------------------------------------------


@st.composite
def forests(draw, max_docs: int = 4, max_depth: int = 4):
    """{id: TreeNode} of 1..max_docs well-formed trees (a single-leaf document is its own root)."""
    nodes: Dict[str, TreeNode] = {}
    for d in range(draw(st.integers(1, max_docs))):
        doc_id = f"d{d}"
        doc_meta = {"tenant": draw(st.sampled_from(["a", "b", "c"])), "n": draw(st.integers(0, 2))}
        counter = [0]

        def make(path: str, level: int, parent: Optional[str]) -> TreeNode:
            leaf = level >= max_depth or draw(st.floats(0, 1)) < 0.25 + 0.2 * level
            node_id = f"{doc_id}:{path}"
            # Within a document a node may carry other metadata (add_nodes allows it): a parent allowed
            # by a filter with a child that is not, and the reverse.
            meta = dict(doc_meta)
            if draw(st.integers(0, 9)) == 0:
                meta["tenant"] = "x"
            if leaf:
                ordinal = counter[0]
                counter[0] += 1
                # Leaf ids follow from the ordinal, as the builder makes them: the focus step finds
                # the leaves under a node from its span.
                node_id = leaf_id(doc_id, ordinal)
                node = TreeNode(id=node_id, doc_id=doc_id, level=level, is_leaf=True, span=Span(ordinal, ordinal),
                                text=path, parent_id=parent, path=path, metadata=meta)
            else:
                width = draw(st.integers(1, 4))
                kids = [make(f"{path}.{i}", level + 1, node_id) for i in range(width)]
                node = TreeNode(id=node_id, doc_id=doc_id, level=level, is_leaf=False,
                                span=Span(kids[0].span.first_leaf, kids[-1].span.last_leaf), text=path,
                                parent_id=parent, child_ids=tuple(k.id for k in kids), path=path, metadata=meta)
            nodes[node_id] = node
            return node

        make("r", 0, None)
    return nodes


def malform(forest: Dict[str, TreeNode], data) -> Dict[str, TreeNode]:
    """Point some children back at an ancestor / themselves / a missing id / another document."""
    out = dict(forest)
    inner = [n for n in out.values() if not n.is_leaf]
    everything = sorted(out)
    for node in data.draw(st.lists(st.sampled_from(inner), max_size=4), label="malformed nodes") if inner else []:
        node = out[node.id]
        kind = data.draw(st.sampled_from(["ancestor", "self", "missing", "foreign", "duplicate"]), label="kind")
        if kind == "ancestor":
            target = node.parent_id or node.id
        elif kind == "self":
            target = node.id
        elif kind == "missing":
            target = "no-such-node"
        elif kind == "foreign":
            target = data.draw(st.sampled_from(everything), label="foreign target")
        else:
            target = node.child_ids[0]
        from dataclasses import replace

        out[node.id] = replace(node, child_ids=node.child_ids + (target,))
        # A cycle through a descendant too: a leaf-parent's child list gets the root.
    return out


filters = st.one_of(
    st.none(),
    st.fixed_dictionaries({"tenant": st.sampled_from(["a", "b", "x", "zzz"])}),
    st.fixed_dictionaries({"tenant": st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2)}),
    st.fixed_dictionaries({"doc_id": st.sampled_from(["d0", "d1", "d9"])}),
    st.fixed_dictionaries({"n": st.integers(0, 2), "tenant": st.sampled_from(["a", "b"])}),
    st.fixed_dictionaries({"level": st.integers(0, 2)}),
    st.fixed_dictionaries({"is_leaf": st.booleans()}),
)
def _config(method, beam_width, max_roots, sensitivity, max_depth):
    """A SearchConfig with the knobs of ``method`` only (the others are refused under it)."""
    return SearchConfig(method=method, max_depth=max_depth,
                        beam_width=beam_width if method == "fixed" else None,
                        max_roots=max_roots if method != "fixed" else None,
                        sensitivity=sensitivity if method in ("sensitive_knee", "branch") else None)


configs = st.builds(
    _config, method=st.sampled_from(METHODS), beam_width=st.integers(1, 4), max_roots=st.integers(1, 6),
    sensitivity=st.floats(0.05, 1.0), max_depth=st.sampled_from([2, 3, 64]))


def ancestors(forest: Dict[str, TreeNode], node: TreeNode) -> List[str]:
    out, parent = [], node.parent_id
    while parent is not None:
        out.append(parent)
        parent = forest[parent].parent_id
    return out


def _walk(forest, config, flt, scores, seed):
    ranker = FakeRanker(forest, scores, random.Random(seed), choices=SCORES)
    spec = parse_filters(flt)
    trace = Trace(query="q", method=config.method)
    hits = walk(ranker, config, spec, trace)
    return hits, trace, ranker, spec


@settings(max_examples=300, deadline=None)
@given(forest=forests(), config=configs, flt=filters, data=st.data(), per_request=st.booleans(), seed=st.integers(0, 10**6))
def test_every_method_terminates_and_returns_an_antichain_inside_the_filter(forest, config, flt, data, per_request, seed):
    scores = None if per_request else {i: data.draw(st.sampled_from(SCORES), label=f"score {i}") for i in sorted(forest)}
    hits, trace, ranker, spec = _walk(forest, config, flt, scores, seed)
    COUNTS["forests"] += 1
    COUNTS["walks"] += 1
    inner = sum(1 for n in forest.values() if not n.is_leaf)
    # Beam: every step after the roots expands at least one new inner node; branch: one per level;
    # the knee methods' focus step is one more.
    assert ranker.calls <= 1 + min(inner, config.max_depth) + (1 if focuses(config) else 0)
    ids = [h.node.id for h in hits]
    assert len(ids) == len(set(ids)), "a node returned twice"
    for hit in hits:
        assert hit.node.id in forest and hit.node == forest[hit.node.id]
        assert node_matches(hit.node, spec), f"{hit.node.id} outside the filter {flt}"
        assert not set(ancestors(forest, hit.node)) & set(ids), f"{hit.node.id} returned with its ancestor"
    for step in trace.steps:
        for c in step.candidates:
            assert node_matches(forest[c.node_id], spec), f"trace candidate {c.node_id} outside the filter"
    if config.method == "fixed":
        assert len(hits) <= config.beam_width
    focus = [step for step in trace.steps if step.kind == "focus"]
    if focus and focus[0].candidates:
        # After a focus step: leaves it kept, or a node whose leaves it mostly kept (merged).
        kept = {c.node_id for c in focus[0].candidates if c.outcome in ("kept", "merged")}
        for hit in hits:
            if hit.node.is_leaf:
                assert hit.node.id in kept
            else:
                merged = [c for c in focus[0].candidates if c.suppressed_by == hit.node.id]
                span = hit.node.span.last_leaf - hit.node.span.first_leaf + 1
                assert merged and len(merged) / span > config.focus.merge_ratio
    if any(n.level == 0 and node_matches(n, spec) for n in forest.values()):
        assert hits, "some root matches the filter, yet nothing was returned"
    else:
        assert hits == []


@settings(max_examples=200, deadline=None)
@given(forest=forests(max_docs=3, max_depth=5), config=configs, flt=filters, data=st.data(), seed=st.integers(0, 10**6))
def test_malformed_trees_still_terminate_with_existing_matching_nodes(forest, config, flt, data, seed):
    forest = malform(forest, data)
    hits, trace, ranker, spec = _walk(forest, config, flt, None, seed)
    COUNTS["malformed_walks"] += 1
    assert ranker.calls <= 1 + config.max_depth + (1 if focuses(config) else 0)  # the depth guard (+ focus)
    ids = [h.node.id for h in hits]
    assert len(ids) == len(set(ids))
    for hit in hits:
        assert hit.node.id in forest and node_matches(hit.node, spec)


def test_a_cycle_back_to_the_root_is_not_walked_again():
    """A child list pointing back at the root: every method ignores the back edge."""
    leaf = TreeNode(id="l", doc_id="d", level=2, is_leaf=True, span=Span(0, 0), text="l", parent_id="m")
    mid = TreeNode(id="m", doc_id="d", level=1, is_leaf=False, span=Span(0, 0), text="m", parent_id="r",
                   child_ids=("l", "r"))
    root = TreeNode(id="r", doc_id="d", level=0, is_leaf=False, span=Span(0, 0), text="r", child_ids=("m",))
    forest = {n.id: n for n in (leaf, mid, root)}
    # Children always outrank parents, so the walk keeps descending as long as it is allowed to.
    scores = {"l": 1.0, "m": 0.5, "r": 0.1}
    for method in METHODS:
        config = SearchConfig(method=method)
        hits, _, ranker, _ = _walk(forest, config, None, scores, 0)
        assert [h.node.id for h in hits] == ["l"] and ranker.calls <= 3 + (1 if focuses(config) else 0)


def test_a_leaf_root_that_another_document_also_lists_as_a_child_is_returned_once():
    """Hypothesis's minimal example: a leaf root d0 plus a d1 whose inner node also lists that leaf.

    All scores tie, so the stand-in ranker orders by id: both roots are kept, ``m1`` beats its
    parent ``r1``, and ``l0`` would beat ``m1``. Branch search used to return ``l0`` twice.
    """
    l0 = TreeNode(id="l0", doc_id="d0", level=0, is_leaf=True, span=Span(0, 0), text="l0")
    x1 = TreeNode(id="x1", doc_id="d1", level=2, is_leaf=True, span=Span(0, 0), text="x1", parent_id="m1")
    m1 = TreeNode(id="m1", doc_id="d1", level=1, is_leaf=False, span=Span(0, 0), text="m1", parent_id="r1",
                  child_ids=("x1", "l0"))
    r1 = TreeNode(id="r1", doc_id="d1", level=0, is_leaf=False, span=Span(0, 0), text="r1", child_ids=("m1",))
    forest = {n.id: n for n in (l0, x1, m1, r1)}
    scores = {i: 1.0 for i in forest}
    hits, _, _, _ = _walk(forest, SearchConfig(method="branch"), None, scores, 0)
    assert [h.node.id for h in hits] == ["l0", "m1"]
    for method in METHODS:
        hits, _, _, _ = _walk(forest, SearchConfig(method=method), None, scores, 0)
        ids = [h.node.id for h in hits]
        assert len(ids) == len(set(ids)), (method, ids)


def test_a_child_shared_by_two_parents_of_one_level_is_returned_once():
    """``c`` is listed by both ``p`` and ``q``; both rank it first. It is returned once, and ``q``
    still competes with its own other child ``d`` (which wins)."""
    c = TreeNode(id="c", doc_id="d", level=2, is_leaf=True, span=Span(0, 0), text="c", parent_id="p")
    d = TreeNode(id="d", doc_id="d", level=2, is_leaf=True, span=Span(1, 1), text="d", parent_id="q")
    p = TreeNode(id="p", doc_id="d", level=1, is_leaf=False, span=Span(0, 0), text="p", parent_id="z",
                 child_ids=("c",))
    q = TreeNode(id="q", doc_id="d", level=1, is_leaf=False, span=Span(1, 1), text="q", parent_id="z",
                 child_ids=("c", "d"))
    z = TreeNode(id="z", doc_id="d", level=0, is_leaf=False, span=Span(0, 1), text="z", child_ids=("p", "q"))
    forest = {n.id: n for n in (c, d, p, q, z)}
    scores = {i: 1.0 for i in forest}  # ties: ordered by id, so c < d < p < q < z
    hits, trace, _, _ = _walk(forest, SearchConfig(method="branch"), None, scores, 0)
    assert [h.node.id for h in hits] == ["c", "d"]
    at_q = next(s for s in trace.steps if s.parent_id == "q")
    outcome = {cand.node_id: (cand.outcome, cand.suppressed_by) for cand in at_q.candidates}
    assert outcome == {"c": ("suppressed", "p"), "d": ("kept", None), "q": ("suppressed", "d")}
    for method in METHODS:
        hits, _, _, _ = _walk(forest, SearchConfig(method=method), None, scores, 0)
        ids = [h.node.id for h in hits]
        assert len(ids) == len(set(ids)), (method, ids)


def test_the_depth_guard_stops_a_chain_deeper_than_max_depth_and_says_so(caplog):
    chain = [TreeNode(id=f"n{i}", doc_id="d", level=i, is_leaf=i == 9, span=Span(0, 0), text=str(i),
                      parent_id=f"n{i - 1}" if i else None, child_ids=() if i == 9 else (f"n{i + 1}",))
             for i in range(10)]
    forest = {n.id: n for n in chain}
    scores = {n.id: float(n.level) for n in chain}  # deeper is better: the walk wants to go all the way
    for method in METHODS:
        caplog.clear()
        config = SearchConfig(method=method, max_depth=3)
        hits, _, ranker, _ = _walk(forest, config, None, scores, 0)
        assert ranker.calls <= 4 + (1 if focuses(config) else 0) and len(hits) == 1
        assert "max_depth=3" in caplog.text


# ---------------------------------------------------------------------------------------------
# knee: extends tests/unit/test_knee.py (continuous scores there rarely tie; here ties are the point)
# ---------------------------------------------------------------------------------------------

tied_scores = st.lists(st.sampled_from([0.0, 0.2, 0.2, 0.5, 0.5, 0.5, 0.8, 1.0]), min_size=1, max_size=80).map(
    lambda xs: sorted(xs, reverse=True))


@settings(max_examples=400, deadline=None)
@given(tied_scores, st.floats(0.01, 1.0))
def test_knee_keeps_whole_runs_of_ties(scores, s):
    COUNTS["knee_lists"] += 1
    keep = knee_index(scores, s)
    assert 1 <= keep <= len(scores)
    assert keep == len(scores) or scores[keep] < scores[keep - 1]
    assert all(x < scores[keep - 1] for x in scores[keep:])
    kept, count = knee_cut(list(range(len(scores))), scores, s)
    assert kept == list(range(keep)) and count == keep


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60).map(lambda xs: sorted(xs, reverse=True)),
       st.sampled_from([0.25, 0.5, 2.0, 1024.0]), st.floats(0.01, 1.0))
def test_knee_is_unchanged_by_scaling_with_a_power_of_two(scores, factor, s):
    # The knee treats differences below an absolute 1e-12 as ties (knee._TOLERANCE), which no
    # scaling preserves: keep every difference either zero or far above it.
    assume(all(a == b or a - b > 1e-6 for a, b in zip(scores, scores[1:])))
    COUNTS["knee_lists"] += 1
    assert knee_index([x * factor for x in scores], s) == knee_index(scores, s)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e307, 1e307), min_size=1, max_size=40).map(
    lambda xs: sorted(xs, reverse=True)), st.floats(0.01, 1.0))
def test_knee_on_scores_of_any_finite_magnitude(scores, s):
    COUNTS["knee_lists"] += 1
    keep = knee_index(scores, s)
    assert 1 <= keep <= len(scores)


def test_knee_on_scores_spanning_more_than_the_float_range():
    try:
        assert 1 <= knee_index([1e308, 0.0, -1e308]) <= 3
    except InvalidScoresError:
        pass  # a clear error is an acceptable answer too


def test_knee_on_long_lists_is_fast():
    import time

    rng = random.Random(3)
    scores = sorted((rng.random() ** 3 for _ in range(200_000)), reverse=True)
    started = time.perf_counter()
    keep = knee_index(scores, 0.5)
    assert 1 <= keep < len(scores) and time.perf_counter() - started < 5.0


def test_report_counts(capsys):
    with capsys.disabled():
        print(f"\n[hardening] traversal/knee properties: {COUNTS}")
