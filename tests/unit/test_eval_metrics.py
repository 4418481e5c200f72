"""Every evaluation metric pinned on hand-made cases."""

import math

import pytest

from drag_knee_retriever.eval.metrics import (
    METRIC_FORMULAS,
    METRIC_NAMES,
    ContextHit,
    count_tokens,
    interpolate_curve,
    mean_metrics,
    question_metrics,
)

# Document "a" has 6 leaves with these whitespace token counts; "b" has 3.
A = [10, 20, 30, 40, 50, 60]
B = [5, 5, 5]


def leaf(doc, i, counts):
    return ContextHit.from_span(doc, i, i, counts)


def test_count_tokens_is_whitespace_split():
    assert count_tokens("  a b\tc\n\nd  ") == 4
    assert count_tokens("") == 0


def test_single_gold_leaf_found_first():
    m = question_metrics([leaf("a", 2, A), leaf("a", 0, A)], {("a", 2)}, latency_ms=12.5)
    assert m.recall == 1.0
    assert m.leaf_precision == 0.5
    assert m.tokens == 40
    assert m.gold_tokens == 30
    assert m.token_precision == pytest.approx(30 / 40)
    assert m.f1 == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    assert m.all_gold == 1.0
    assert m.mrr == 1.0
    assert m.results == 2
    assert m.latency_ms == 12.5


def test_gold_found_at_rank_three_gives_mrr_one_third():
    hits = [leaf("a", 0, A), leaf("b", 1, B), leaf("a", 2, A)]
    m = question_metrics(hits, {("a", 2)})
    assert m.mrr == pytest.approx(1 / 3)
    assert m.tokens == 10 + 5 + 30


def test_inner_node_covers_every_gold_leaf_of_its_span():
    # One inner node over leaves 1..3 of "a"; gold is leaf 2 and leaf 5.
    parent = ContextHit.from_span("a", 1, 3, A, node_id="p", level=1)
    m = question_metrics([parent], {("a", 2), ("a", 5)})
    assert m.recall == 0.5
    assert m.leaf_precision == pytest.approx(1 / 3)
    assert m.tokens == 20 + 30 + 40
    assert m.gold_tokens == 30
    assert m.token_precision == pytest.approx(30 / 90)
    assert m.all_gold == 0.0
    assert m.mrr == 1.0
    assert m.results == 1


def test_empty_result_scores_zero_everywhere():
    m = question_metrics([], {("a", 1)}, latency_ms=3.0)
    assert (m.recall, m.leaf_precision, m.token_precision, m.f1, m.all_gold, m.mrr) == (0, 0, 0, 0, 0, 0)
    assert m.results == 0 and m.tokens == 0 and m.gold_tokens == 0
    assert m.latency_ms == 3.0


def test_miss_has_zero_recall_but_counts_tokens():
    m = question_metrics([leaf("b", 0, B)], {("a", 1)})
    assert m.recall == 0 and m.mrr == 0 and m.token_precision == 0 and m.f1 == 0
    assert m.tokens == 5


def test_multi_document_gold_partial_and_full():
    gold = {("a", 4), ("b", 2)}
    half = question_metrics([leaf("a", 4, A)], gold)
    assert half.recall == 0.5 and half.all_gold == 0.0
    full = question_metrics([leaf("b", 2, B), leaf("a", 4, A)], gold)
    assert full.recall == 1.0 and full.all_gold == 1.0 and full.leaf_precision == 1.0
    assert full.token_precision == 1.0 and full.gold_tokens == 55


def test_duplicate_context_counts_tokens_twice_but_gold_once():
    # A leaf and its parent both returned: the model reads leaf 2 twice.
    hits = [leaf("a", 2, A), ContextHit.from_span("a", 2, 3, A)]
    m = question_metrics(hits, {("a", 2)})
    assert m.tokens == 30 + 30 + 40
    assert m.gold_tokens == 30
    assert m.leaf_precision == 0.5  # covered = {2, 3}
    assert m.token_precision == pytest.approx(30 / 100)


def test_partial_chunk_counts_only_the_tokens_it_returns():
    # A foreign chunk returning 7 of gold leaf 1's tokens and 4 of leaf 2's (no char ranges: whole).
    chunk = ContextHit("a", {1: 7, 2: 4})
    m = question_metrics([chunk], {("a", 1)})
    assert m.recall == 1.0
    assert m.tokens == 11
    assert m.gold_tokens == 7
    assert m.token_precision == pytest.approx(7 / 11)


def test_question_without_gold_is_refused():
    with pytest.raises(ValueError, match="gold"):
        question_metrics([leaf("a", 0, A)], set())


def test_span_outside_document_is_refused():
    with pytest.raises(ValueError, match="outside"):
        ContextHit.from_span("a", 5, 6, A)


def test_means_average_each_question_equally():
    rows = [
        question_metrics([leaf("a", 1, A)], {("a", 1)}, latency_ms=10),
        question_metrics([], {("a", 1)}, latency_ms=20),
    ]
    means = mean_metrics(rows)
    assert set(means) == set(METRIC_NAMES)
    assert means["recall"] == 0.5
    assert means["tokens"] == 10
    assert means["latency_ms"] == 15
    assert means["mrr"] == 0.5
    assert all(math.isnan(v) for v in mean_metrics([]).values())


def test_every_metric_has_a_documented_formula():
    assert set(METRIC_FORMULAS) == set(METRIC_NAMES)


def test_interpolation_on_the_flat_curve():
    curve = [(100, 0.4), (200, 0.6), (400, 0.8)]
    assert interpolate_curve(curve, 150) == (pytest.approx(0.5), False)
    assert interpolate_curve(curve, 200) == (pytest.approx(0.6), False)
    # Below the first point: towards the origin (no context, no evidence).
    assert interpolate_curve(curve, 50) == (pytest.approx(0.2), False)
    # Beyond the last point: flat, and flagged.
    assert interpolate_curve(curve, 1000) == (pytest.approx(0.8), True)
    # Order of the points does not matter.
    assert interpolate_curve(list(reversed(curve)), 300)[0] == pytest.approx(0.7)


def test_chunk_cutting_a_gold_leaf_covers_it_only_with_the_answer():
    # Leaf 1 of "a" is 40 characters long; the answer is at characters 10..20.
    spans = {("a", 1): (10, 20)}
    holds = ContextHit("a", {1: 7}, char_ranges={1: (5, 25)})
    m = question_metrics([holds], {("a", 1)}, answer_spans=spans)
    assert m.recall == 1.0 and m.gold_tokens == 7 and m.mrr == 1.0
    cut = ContextHit("a", {1: 7, 2: 3}, char_ranges={1: (15, 40)})
    m = question_metrics([cut], {("a", 1)}, answer_spans=spans)
    assert m.recall == 0.0 and m.gold_tokens == 0 and m.mrr == 0.0
    assert m.tokens == 10 and m.leaf_precision == 0.0
    # A whole leaf (no char range) always covers, whatever the answer span.
    whole = leaf("a", 1, A)
    assert question_metrics([whole], {("a", 1)}, answer_spans=spans).recall == 1.0
    # Without an evidence range any returned part counts.
    assert question_metrics([cut], {("a", 1)}).recall == 1.0


def _rows(pairs):
    from drag_knee_retriever.eval.metrics import QuestionMetrics

    return [QuestionMetrics(recall=r, leaf_precision=0.0, token_precision=0.0, f1=0.0, all_gold=r, mrr=0.0,
                            results=1, tokens=t, gold_tokens=0, latency_ms=0.0) for r, t in pairs]


def test_bootstrap_interval_of_the_headline_gain():
    """A knee equal to the flat k=2 point on every question has gain 0 on every resample; one that
    finds one more gold leaf in four at the same tokens has a gain whose interval excludes 0."""
    from drag_knee_retriever.eval.runner import bootstrap_headline_gain

    info = {"flat_hybrid_k1": {"curve": "flat_hybrid"}, "flat_hybrid_k2": {"curve": "flat_hybrid"},
            "drag_knee": {"family": "drag"}}
    k1 = _rows([(0.0, 100), (1.0, 100), (0.0, 100), (1.0, 100)] * 10)
    k2 = _rows([(1.0, 200), (1.0, 200), (0.0, 200), (1.0, 200)] * 10)
    same = bootstrap_headline_gain({"flat_hybrid_k1": k1, "flat_hybrid_k2": k2, "drag_knee": k2}, info,
                                   resamples=200)
    low, high = same["knee_recall_gain_ci95"]
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(0.0, abs=1e-12)
    better = _rows([(1.0, 200)] * 40)
    low, high = bootstrap_headline_gain({"flat_hybrid_k1": k1, "flat_hybrid_k2": k2, "drag_knee": better}, info,
                                        resamples=200)["knee_recall_gain_ci95"]
    assert 0.0 < low <= 0.25 <= high
    # Nothing to compare: no interval, no error.
    assert bootstrap_headline_gain({"drag_knee": better}, info) == {}
