"""Where the focus step's global list looks (``focus.global_scope``) on hand-made trees, without Qdrant.

With scope ``"roots"`` the roots request ranks ``focus.global_docs`` roots and the global leaf
request (and a word budget's deeper one) is filtered to their documents; the requests of the walk's
regions keep the user's filters. The ranker (tests/support/ranker.py) honours filters, so a
global leaf of a document outside the ranked roots can be seen to be left out.
"""

from __future__ import annotations

from typing import Dict

from drag_knee_retriever.config import FocusConfig, SearchConfig
from drag_knee_retriever.search._identity import IdentityMatch
from drag_knee_retriever.model._ids import leaf_id
from drag_knee_retriever.model._nodes import Trace, TreeNode
from drag_knee_retriever.store import parse_filters
from drag_knee_retriever.search._traversal import budget_ranking, walk
from support import FakeRanker
from test_focus import document


def forest_of(*docs: str) -> Dict[str, TreeNode]:
    nodes: Dict[str, TreeNode] = {}
    for doc in docs:
        nodes.update(document(doc, 3, {"year": "2024"}))
    return nodes


# Roots rank a > b > c; c's first leaf is the best leaf of the collection.
SCORES = {"a:r": 3.0, "b:r": 2.0, "c:r": 1.0, leaf_id("a", 0): 0.9, leaf_id("b", 0): 0.8, leaf_id("c", 0): 5.0}


def config(scope: str, docs: int = 2, **kwargs) -> SearchConfig:
    return SearchConfig(focus=FocusConfig(global_leaves=10, global_scope=scope, global_docs=docs), **kwargs)


def global_requests(ranker: FakeRanker):
    return [r for r in ranker.requests if r.leaves_only and r.candidate_ids is None]


def test_roots_scope_ranks_global_docs_roots_and_filters_the_global_list_to_their_documents():
    ranker = FakeRanker(forest_of("a", "b", "c"), SCORES)
    trace = Trace(query="q", method="sensitive_knee")
    walk(ranker, config("roots"), parse_filters(None), trace)
    roots_request = ranker.requests[0]
    assert roots_request.level == 0 and roots_request.limit == max(SearchConfig().max_roots, 2)
    global_step = next(s for s in trace.steps if s.kind == "global")
    # max_roots (10) > global_docs (2): every ranked root's document is in scope, c too.
    assert leaf_id("c", 0) in {c.node_id for c in global_step.candidates}


def test_roots_scope_leaves_out_the_leaves_of_documents_the_roots_ranking_did_not_reach():
    ranker = FakeRanker(forest_of("a", "b", "c"), SCORES)
    trace = Trace(query="q", method="sensitive_knee")
    walk(ranker, config("roots", docs=2, max_roots=1), parse_filters(None), trace)
    assert ranker.requests[0].limit == 2  # max(max_roots=1, global_docs=2)
    global_step = next(s for s in trace.steps if s.kind == "global")
    assert {c.doc_id for c in global_step.candidates} == {"a", "b"}
    # The collection scope ranks every leaf: c's best leaf is back.
    ranker = FakeRanker(forest_of("a", "b", "c"), SCORES)
    trace = Trace(query="q", method="sensitive_knee")
    walk(ranker, config("collection", max_roots=1), parse_filters(None), trace)
    assert ranker.requests[0].limit == 1
    global_step = next(s for s in trace.steps if s.kind == "global")
    assert leaf_id("c", 0) in {c.node_id for c in global_step.candidates}


def test_the_region_requests_keep_the_users_filters_and_the_global_one_adds_the_documents():
    user = {"year": "2024"}
    ranker = FakeRanker(forest_of("a", "b", "c"), SCORES)
    walk(ranker, config("roots", max_roots=1), parse_filters(user), Trace(query="q", method="sensitive_knee"))
    user_spec = tuple(parse_filters(user))
    (glob,) = global_requests(ranker)
    assert tuple(glob.filters[: len(user_spec)]) == user_spec and len(glob.filters) == len(user_spec) + 1
    for request in ranker.requests:
        if request is not glob:
            assert tuple(request.filters) == user_spec


def test_a_word_budgets_deeper_global_ranking_takes_the_global_filter_too():
    ranker = FakeRanker(forest_of("a", "b", "c"), SCORES)
    trace = Trace(query="q", method="sensitive_knee")
    ranking = budget_ranking(ranker, config("roots", max_roots=1, max_tokens=400), parse_filters(None), trace)
    deeper = [r for r in global_requests(ranker) if r.limit > 10]
    assert deeper and all(r.filters == global_requests(ranker)[0].filters for r in deeper)
    assert "c" not in {h.node.doc_id for h in ranking.ranked}


def test_a_named_document_beyond_the_roots_ranking_joins_the_global_lists_documents():
    ranker = FakeRanker(forest_of("a", "b", "c"), SCORES)
    trace = Trace(query="q", method="sensitive_knee")
    named = IdentityMatch(scores={"c": 1.0}, root_ids=("c:r",))
    walk(ranker, config("roots", docs=1, max_roots=1, identity_weight=10.0), parse_filters(None), trace, named)
    global_step = next(s for s in trace.steps if s.kind == "global")
    assert {c.doc_id for c in global_step.candidates} == {"a", "c"}
