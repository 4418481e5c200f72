"""A word budget spent on the cut's documents' best pages (focus.budget_order, page_ranking.py)."""

import pytest

from drag_knee_retriever import SearchConfig
from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.search._page_ranking import budget_documents, budget_page_steps, page_order
from drag_knee_retriever.store import RankedHit


def _passage(nid, doc, page, part, score=0.0):
    node = TreeNode(id=nid, doc_id=doc, level=2, is_leaf=True, parent_id=f"{doc}/p{page}",
                    span=Span(0, 0, page, page), text="")  # as a light node: no passage numbers
    return RankedHit(node=node, score=score)


def test_a_page_with_several_matching_passages_beats_one_lucky_passage():
    hits = [_passage("a1", "d", 1, 1), _passage("b1", "d", 2, 1), _passage("b2", "d", 2, 2),
            _passage("c1", "d", 3, 1), _passage("b3", "d", 2, 3)]
    # page 2 has three passages in the ranking, page 1 only the best one: page 2 first, its
    # passages together (in their rank order), then page 1, then page 3
    assert [h.node.id for h in page_order(hits)] == ["b1", "b2", "b3", "a1", "c1"]


def test_the_budget_reads_the_cut_documents_at_most_budget_docs():
    ranked = [_passage("x", "A", 1, 1), _passage("y", "B", 1, 1), _passage("z", "C", 1, 1)]
    assert budget_documents(ranked, keep=3, limit=2) == ["A", "B"]
    assert budget_documents(ranked, keep=0, limit=2) == ["A"]  # the cut kept nothing: the best leaf's


def test_budget_pages_asks_one_ranking_of_the_chosen_documents_then_the_rest():
    ranked = [_passage("a1", "A", 5, 1, 3.0), _passage("g1", "G", 1, 1, 2.0), _passage("a9", "A", 9, 1, 1.0)]
    config = SearchConfig().with_overrides(focus=SearchConfig().focus.__class__(budget_order="pages", budget_docs=2))
    steps = budget_page_steps(ranked, 1, config, 50, ())
    requests = next(steps)
    assert len(requests) == 1 and requests[0].leaves_only and requests[0].limit == 50
    (condition,) = requests[0].filters
    assert "A" in repr(condition) and "G" not in repr(condition)  # only the cut's document
    answer = [_passage("a7", "A", 7, 1), _passage("a1", "A", 5, 1), _passage("a8", "A", 7, 2)]
    with pytest.raises(StopIteration) as done:
        steps.send([answer])
    order = done.value.value
    # the cut's leaf, then document A's pages (page 7: two passages), then the default order's rest
    assert [h.node.id for h in order] == ["a1", "a7", "a8", "g1", "a9"]
    assert [h.score for h in order] == [3.0, 1.0, 1.0, 2.0, 1.0]  # unscored leaves: the pool's lowest


def test_budget_order_is_checked():
    assert SearchConfig().focus.budget_order in ("global", "documents", "pages")
    with pytest.raises(ConfigError, match="budget_order"):
        SearchConfig().with_overrides(**{"focus": SearchConfig().focus.__class__(budget_order="nearest")})


def test_spread_reads_each_page_by_its_best_passage_first():
    hits = [_passage("a1", "d", 1, 1), _passage("b1", "d", 2, 1), _passage("b2", "d", 2, 2),
            _passage("c1", "d", 3, 1), _passage("b3", "d", 2, 3)]
    # pages in the same order as page_order (2, 1, 3), one passage each, then the rest as ranked
    assert [h.node.id for h in page_order(hits, spread=True)] == ["b1", "a1", "c1", "b2", "b3"]
