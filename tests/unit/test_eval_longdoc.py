"""Long-document sets (MMLongBench-Doc, QMSum) and the budget figures: gold mappings as the READMEs
describe them, and the metrics on hand-made rows."""

import pytest

from drag_knee_retriever.eval.baselines import ScopedIndex, hits_from_scored, leaf_token_table
from drag_knee_retriever.eval.budget_metrics import (
    _average_ranks,
    bootstrap_gain,
    budget_figures,
    cut_size_correlation,
    matched_budget_recall,
)
from benchmarks.datasets import DatasetError, datasets_root, load_dataset
from drag_knee_retriever.eval.dataset import EvalDataset
from drag_knee_retriever.eval.metrics import QuestionMetrics, question_metrics
from drag_knee_retriever.model._nodes import Document, ScoredNode, Span, TreeNode

try:
    ROOT = datasets_root()
    HAVE = (ROOT / "mmlongbench_doc" / "load.py").is_file() and (ROOT / "qmsum" / "load.py").is_file()
except DatasetError:
    HAVE = False
needs_data = pytest.mark.skipif(not HAVE, reason="mmlongbench_doc / qmsum not in the shared datasets folder")


# -- loaders on the real data (read at test time; never copied into the repository) -------------


@needs_data
def test_mmlongbench_single_document_setting_and_page_gold():
    import json

    ds = load_dataset("mmlongbench")
    # 173 in the README; one names "page 0" of 1-based pages (no such page) and is dropped
    assert len(ds.questions) == 172 and len(ds.documents) == 57
    assert "mmlb0189" not in {q.id for q in ds.questions}
    for q in ds.questions[:40]:
        assert q.metadata["filters"] == {"doc_id": q.metadata["doc_id"]}
        assert q.gold_docs == {q.metadata["doc_id"]}
    # gold ordinal -> the README's 0-based page (evidence_pages - 1) of the raw page list
    q = ds.questions[0]
    raw = json.loads((ROOT / "mmlongbench_doc" / "raw" / "pages" / f"{q.metadata['doc_id']}.json").read_text())
    kept = [p.strip() for p in raw if p.strip()]
    for doc_id, ordinal in q.gold:
        assert ds.units[doc_id][ordinal] == kept[ordinal]
    assert sum(1 for o in ds.outlines.values() if o) > 0


@needs_data
def test_mmlongbench_shared_store_indexes_every_document_with_text():
    ds = load_dataset("mmlongbench", shared_store=True)
    assert ds.name == "mmlongbench-shared" and len(ds.documents) == 64
    assert all("filters" not in q.metadata for q in ds.questions)


@needs_data
def test_qmsum_blocks_hold_the_gold_turns():
    import importlib.util

    ds = load_dataset("qmsum")
    assert len(ds.questions) == 244 and len(ds.documents) == 35
    spec = importlib.util.spec_from_file_location("qmsum_load", ROOT / "qmsum" / "load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    docs, questions = module.load(str(ROOT / "qmsum" / "raw" / "test"))
    doc = {d["doc_id"]: d for d in docs}
    raw_q = questions[0]
    q = next(x for x in ds.questions if x.id == raw_q["qid"])
    turn = doc[raw_q["doc_id"]]["leaves"][int(raw_q["gold_leaf_ids"][0].split("#t")[1])]
    assert any(turn["text"] in ds.units[d][o] for d, o in q.gold)
    assert q.metadata["filters"] == {"doc_id": raw_q["doc_id"]}


# -- passage hits in dataset units ---------------------------------------------------------------


def _node(span, text, leaf=True):
    return TreeNode(id="n", doc_id="d", level=2, is_leaf=leaf, span=span, text=text)


def test_a_passage_covers_its_page_with_its_own_tokens_and_characters():
    page = "Alpha beta gamma. Delta epsilon zeta eta. Theta."
    ds = EvalDataset("t", "english", [Document(id="d", pages=["Cover words here", page])], [],
                     {"d": ["Cover words here", page]})
    table = leaf_token_table(ds)
    passage = "Delta epsilon zeta eta."
    hits, _ = hits_from_scored([ScoredNode(node=_node(Span(4, 4, 2, 2, 2, 2), passage), score=1.0, rank=0,
                                           text=passage)], table)
    assert hits[0].leaf_tokens == {1: 4}
    assert hits[0].char_ranges == {1: (page.index(passage), page.index(passage) + len(passage))}
    # the evidence sits in this passage: covered; elsewhere on the page: not covered
    assert question_metrics(hits, [("d", 1)], answer_spans={("d", 1): (page.index("zeta"), page.index("zeta") + 4)}).recall == 1
    assert question_metrics(hits, [("d", 1)], answer_spans={("d", 1): (0, 5)}).recall == 0
    # a page node (no part) and a page range cover whole units
    whole, _ = hits_from_scored([ScoredNode(node=_node(Span(0, 6, 1, 2), "", leaf=False), score=1.0, rank=0,
                                            text="x")], table)
    assert whole[0].leaf_tokens == {0: 3, 1: 8}


def test_scoped_index_adds_the_question_filter():
    calls = []

    class Fake:
        search_config = "cfg"

        def search(self, q, **kw):
            calls.append(kw)

        def flat_search(self, q, **kw):
            calls.append(kw)

    scope = ScopedIndex(Fake())
    scope.search("q")
    scope.filters = {"doc_id": "a"}
    scope.flat_search("q", k=3)
    scope.search("q", filters={"doc_id": "b"})  # an explicit filter wins
    assert calls == [{}, {"k": 3, "filters": {"doc_id": "a"}}, {"filters": {"doc_id": "b"}}]
    assert scope.search_config == "cfg"


# -- budget figures on hand-made rows ------------------------------------------------------------


def _row(recall, tokens, all_gold=None, results=1):
    return QuestionMetrics(recall, 0.0, 0.0, 0.0, float(recall == 1) if all_gold is None else all_gold, 0.0,
                           results, tokens, 0, 0.0)


def _rows():
    # two questions; flat hybrid k1 / k2; method m uses 150 tokens on q0 and 50 on q1
    rows = {"flat_hybrid_k1": [_row(0.0, 100), _row(1.0, 100)],
            "flat_hybrid_k2": [_row(1.0, 200), _row(1.0, 200)],
            "m": [_row(1.0, 150, results=3), _row(0.5, 50, all_gold=0.0, results=1)]}
    info = {"flat_hybrid_k1": {"curve": "flat_hybrid"}, "flat_hybrid_k2": {"curve": "flat_hybrid"},
            "m": {"adaptive": True}}
    return rows, info


def test_matched_budget_interpolates_each_questions_own_flat_list():
    rows, info = _rows()
    matched = matched_budget_recall(rows, info, "m")
    # q0: halfway from k1 (0.0 @100) to k2 (1.0 @200); q1: from the origin to k1 (1.0 @100)
    assert list(matched) == [0.5, 0.5]


def test_budget_figures_split_multi_and_single_gold():
    rows, info = _rows()
    fig = budget_figures(rows, info, gold_sizes=[3, 1], methods=["m"])["m"]
    assert fig["all_gold_multi"]["questions"] == 1 and fig["all_gold_multi"]["rate"] == 1.0
    # flat on q0 alone: 0.0 @100, 1.0 @200 -> at 150 tokens, 0.5
    assert fig["all_gold_multi"]["flat_at_tokens"] == pytest.approx(0.5)
    assert fig["all_gold_single"]["rate"] == 0.0
    assert fig["recall_gain_at_matched_budget"] == pytest.approx(0.25)
    assert fig["tokens_p90"] == pytest.approx(140.0)
    low, high = bootstrap_gain(rows, info, "m")
    assert low <= high


def test_cut_size_correlation_uses_tied_ranks():
    assert list(_average_ranks(__import__("numpy").array([2, 1, 2, 3]))) == [1.5, 0.0, 1.5, 3.0]
    rows = {"m": [_row(1, 1, results=r) for r in (1, 2, 3, 4)]}
    assert cut_size_correlation(rows, [1, 2, 3, 9], "m")["all"] == pytest.approx(1.0)


def test_build_variant_parses_booleans_and_none():
    from drag_knee_retriever.eval.runner import parse_build_variant

    variant = parse_build_variant("sections.outline=false,leaves.passage_words=120")
    assert variant.build.sections.outline is False and variant.build.leaves.passage_words == 120
    assert parse_build_variant("leaves.passage_words=none").build.leaves.passage_words is None
    with pytest.warns(DeprecationWarning, match=r"BuildConfig\(leaves=LeafConfig\(passage_words=...\)\)"):
        assert parse_build_variant("passage_words=none").build.leaves.passage_words is None  # the old flat key


@needs_data
def test_mmlongbench_max_doc_pages_keeps_short_documents_and_their_questions():
    ds = load_dataset("mmlongbench", max_doc_pages=20)
    assert len(ds.documents) == 23 and all(len(d.pages) <= 20 for d in ds.documents)
    assert {q.metadata["doc_id"] for q in ds.questions} <= {d.id for d in ds.documents}


def test_caching_encoder_saves_while_it_encodes(tmp_path):
    import numpy as np

    from drag_knee_retriever.eval.runner import CachingEncoder

    class Dense:
        model_id, dense_size = "toy", 3

        def encode_dense(self, texts, progress=None):
            return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)

    cache = CachingEncoder(Dense(), tmp_path)
    cache.SLICE, cache.SAVE_EVERY_S = 2, 0.0  # save after every slice
    cache.encode_dense(["a", "bb", "ccc"])
    again = CachingEncoder(Dense(), tmp_path)  # a later run, before any explicit save()
    again.encode_dense(["a", "bb", "ccc"])
    assert again.misses == 0 and again.hits == 3
