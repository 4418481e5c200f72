"""FinanceBench in the eval harness (issue 24, item 4): the loader's two settings and gold mapping
on the real data (read at test time, never copied), the right-document rate and the word-budget
figures on hand-made rows."""

import json

import pytest

from drag_knee_retriever.eval.baselines import fill_budget
from drag_knee_retriever.eval.budget_metrics import word_budget_figures
from benchmarks.datasets import DatasetError, datasets_root, load_dataset
from drag_knee_retriever.eval.metrics import ContextHit, QuestionMetrics, question_metrics

try:
    ROOT = datasets_root()
    HAVE = (ROOT / "financebench_dev" / "load.py").is_file()
except DatasetError:
    HAVE = False
needs_data = pytest.mark.skipif(not HAVE, reason="financebench_dev not in the shared datasets folder")


@needs_data
def test_financebench_shared_store_by_default_with_page_gold():
    ds = load_dataset("financebench")
    assert ds.name == "financebench" and len(ds.documents) == 48 and len(ds.questions) == 76
    assert all("filters" not in q.metadata for q in ds.questions)
    assert sum(len(q.gold) > 1 for q in ds.questions) == 22
    # A filing as a user's folder gives it: the file name as id, identity metadata, no link.
    doc = next(d for d in ds.documents if d.id == ds.questions[0].metadata["doc_id"])
    assert set(doc.metadata) == {"company", "doc_type", "doc_period", "gics_sector"}
    # gold ordinal -> the 0-based evidence page of the raw page list (blank pages dropped first)
    raw_q = json.loads((ROOT / "financebench_dev" / "raw" / "financebench_open_source.jsonl")
                       .read_text().splitlines()[0])
    q = next(x for x in ds.questions if x.id == raw_q["financebench_id"])
    pages = json.loads((ROOT / "financebench_dev" / "raw" / "pages" / f"{raw_q['doc_name']}.json").read_text())
    wanted = {pages[e["evidence_page_num"]].strip() for e in raw_q["evidence"]}
    assert {ds.units[d][o] for d, o in q.gold} == wanted


@needs_data
def test_financebench_single_document_setting_filters_each_question():
    ds = load_dataset("financebench", shared_store=False)
    assert ds.name == "financebench-single" and len(ds.documents) == 48
    for q in ds.questions:
        assert q.metadata["filters"] == {"doc_id": q.metadata["doc_id"]} and q.gold_docs == {q.metadata["doc_id"]}


def _hit(doc, leaf, tokens):
    return ContextHit(doc_id=doc, leaf_tokens={leaf: tokens})


def test_right_document_is_any_result_in_a_gold_document():
    gold = {("a", 3)}
    assert question_metrics([_hit("b", 0, 10), _hit("a", 1, 10)], gold).right_document == 1.0
    assert question_metrics([_hit("b", 0, 10), _hit("c", 3, 10)], gold).right_document == 0.0
    assert question_metrics([], gold).right_document == 0.0


def test_fill_budget_skips_what_does_not_fit_and_keeps_rank_order():
    hits = [_hit("a", 0, 300), _hit("a", 1, 400), _hit("a", 2, 150), _hit("a", 3, 100)]
    assert [h.leaf_tokens for h in fill_budget(hits, 500)] == [{0: 300}, {2: 150}]
    assert fill_budget(hits, 50) == []
    assert sum(h.tokens for h in fill_budget(hits, 10_000)) == 950


def _row(recall, tokens, right=1.0, all_gold=None):
    return QuestionMetrics(recall, 0.0, 0.0, 0.0, float(recall == 1) if all_gold is None else all_gold, 0.0,
                           1, tokens, 0, 0.0, right)


def test_word_budget_figures_pair_the_default_with_flat_at_each_budget():
    rows = {"drag_knee_w500": [_row(1.0, 480), _row(0.5, 400, all_gold=0.0), _row(0.0, 300, right=0.0)],
            "flat_hybrid_w500": [_row(0.0, 490), _row(0.5, 500, all_gold=0.0), _row(0.0, 495)],
            "flat_hybrid_w1000": [_row(1.0, 990), _row(1.0, 1000), _row(0.0, 950)]}
    figures = word_budget_figures(rows, [500, 1000], gold_sizes=[1, 2, 1])
    at500 = figures["500"]
    assert at500["drag_knee_w500"]["recall"] == pytest.approx(0.5)
    assert at500["drag_knee_w500"]["right_document"] == pytest.approx(2 / 3)
    assert at500["drag_knee_w500"]["all_gold_multi"] == 0.0
    assert at500["gain_over_flat_hybrid_w500"]["gain"] == pytest.approx(1 / 3)
    low, high = at500["gain_over_flat_hybrid_w500"]["ci95"]
    assert low <= 1 / 3 <= high
    # no default row at 1,000 words (an index without a word budget): flat alone, no gain
    assert set(figures["1000"]) == {"flat_hybrid_w1000"}


def test_search_variants_name_a_default_search_with_other_settings():
    from drag_knee_retriever.eval.errors import EvalSetupError
    from drag_knee_retriever.eval.runner import parse_search_variant

    name, changes = parse_search_variant("identity_weight=0.5, focus.global_leaves=none,identity_keys=company")
    assert name == "drag_knee{identity_weight=0.5,focus.global_leaves=none,identity_keys=company}"
    assert changes == {"identity_weight": 0.5, "focus.global_leaves": None, "identity_keys": "company"}
    with pytest.raises(EvalSetupError, match="unknown SearchConfig setting"):
        parse_search_variant("identity_wieght=1")
    with pytest.raises(EvalSetupError, match="identity_weight"):
        parse_search_variant("identity_weight=-1")


def test_budget_rows_are_made_for_the_index_whose_search_takes_options_as_keywords():
    """DragKneeIndex.search takes its per-call settings as ``**options: Unpack[SearchOptions]``:
    the eval still sees ``max_tokens`` there and makes the ``drag_knee_wB`` rows."""
    from drag_knee_retriever import DragKneeIndex
    from drag_knee_retriever.eval.baselines import WORD_BUDGETS, drag_budget_methods, search_takes

    assert search_takes(DragKneeIndex, "max_tokens") and search_takes(DragKneeIndex, "max_words")
    assert not search_takes(DragKneeIndex, "no_such_option")
    assert 1500 in WORD_BUDGETS
    names = [m.name for m in drag_budget_methods(DragKneeIndex, {}, budgets=WORD_BUDGETS)]
    assert names == [f"drag_knee_w{b}" for b in WORD_BUDGETS]
