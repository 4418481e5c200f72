"""Figures that matter when evidence spreads: all-gold by gold size, matched budgets, p90 tokens.

Pure numpy over the runner's per-question rows (one :class:`QuestionMetrics` per method and
question, in question order):

- ``all_gold`` on multi-gold questions (more than one gold leaf) and on single-gold ones, each
  next to flat hybrid's all-gold rate interpolated at the method's mean tokens on that subset;
- **recall at a matched per-question budget**: for each question, flat hybrid's recall with the
  tokens the method used *on that question* (linear between the flat top-k points around that
  budget, the origin included): the method is compared with a flat list that reads exactly as
  much as it does, question by question, not only on average;
- ``p90`` (and median) of the tokens a method returns per question;
- the **default method's gain at equal tokens** over flat hybrid with its 95% paired-bootstrap
  interval (the JSON headline's ``default_recall_gain_at_equal_tokens``), and the same interval
  for the matched-budget gain.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from drag_knee_retriever.eval.metrics import interpolate_curve

REFERENCE_CURVE = "flat_hybrid"


def _curve_names(method_info: Mapping[str, Mapping[str, Any]], rows: Mapping[str, Sequence[Any]]) -> List[str]:
    return [n for n, info in method_info.items() if info.get("curve") == REFERENCE_CURVE and rows.get(n)]


def _arrays(rows: Mapping[str, Sequence[Any]], names: Sequence[str], field: str) -> Dict[str, np.ndarray]:
    return {n: np.array([float(getattr(r, field)) for r in rows[n]]) for n in names}


def matched_budget_recall(rows: Mapping[str, Sequence[Any]], method_info: Mapping[str, Mapping[str, Any]],
                          method: str) -> Optional[np.ndarray]:
    """Per question, flat hybrid's recall at the tokens ``method`` returned on that question."""
    curve = _curve_names(method_info, rows)
    if not curve or not rows.get(method):
        return None
    tokens = _arrays(rows, curve, "tokens")
    recall = _arrays(rows, curve, "recall")
    budget = np.array([float(r.tokens) for r in rows[method]])
    out = np.empty(len(budget))
    for i, b in enumerate(budget):
        points = [(tokens[n][i], recall[n][i]) for n in curve]
        out[i] = interpolate_curve(points, b)[0]
    return out


def _subset_gain(rows: Mapping[str, Sequence[Any]], curve: Sequence[str], method: str, select: np.ndarray,
                 field: str) -> Dict[str, Optional[float]]:
    if not select.any():
        return {"questions": 0, "rate": None, "flat_at_tokens": None, "gain": None}
    value = np.array([float(getattr(r, field)) for r in rows[method]])[select]
    tokens = np.array([float(r.tokens) for r in rows[method]])[select]
    points = [(np.array([float(r.tokens) for r in rows[n]])[select].mean(),
               np.array([float(getattr(r, field)) for r in rows[n]])[select].mean()) for n in curve]
    at, _ = interpolate_curve(points, tokens.mean())
    return {"questions": int(select.sum()), "rate": float(value.mean()), "tokens": float(tokens.mean()),
            "flat_at_tokens": float(at), "gain": float(value.mean() - at)}


def bootstrap_gain(rows: Mapping[str, Sequence[Any]], method_info: Mapping[str, Mapping[str, Any]], method: str,
                   *, resamples: int = 2000, seed: int = 0) -> Optional[List[float]]:
    """95% paired-bootstrap interval of ``method``'s recall gain at equal mean tokens over flat hybrid."""
    curve = _curve_names(method_info, rows)
    if not curve or not rows.get(method) or len(rows[method]) < 2:
        return None
    recall = _arrays(rows, list(curve) + [method], "recall")
    tokens = _arrays(rows, list(curve) + [method], "tokens")
    size = len(rows[method])
    rng = np.random.default_rng(seed)
    gains = []
    for _ in range(resamples):
        sample = rng.integers(0, size, size)
        points = [(tokens[n][sample].mean(), recall[n][sample].mean()) for n in curve]
        at, _ = interpolate_curve(points, tokens[method][sample].mean())
        gains.append(recall[method][sample].mean() - at)
    low, high = np.percentile(gains, [2.5, 97.5])
    return [float(low), float(high)]


def _paired_interval(diff: np.ndarray, *, resamples: int = 2000, seed: int = 0) -> List[float]:
    rng = np.random.default_rng(seed)
    means = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(resamples)]
    low, high = np.percentile(means, [2.5, 97.5])
    return [float(low), float(high)]


def budget_figures(rows: Mapping[str, Sequence[Any]], method_info: Mapping[str, Mapping[str, Any]],
                   gold_sizes: Sequence[int], methods: Sequence[str]) -> Dict[str, Dict[str, Any]]:
    """For each of ``methods`` (adaptive ones): p50/p90 tokens, all-gold on multi- and single-gold
    questions against flat at equal tokens, and recall at the matched per-question budget."""
    curve = _curve_names(method_info, rows)
    sizes = np.array(gold_sizes)
    out: Dict[str, Dict[str, Any]] = {}
    for name in methods:
        if not rows.get(name) or len(rows[name]) != len(sizes):
            continue
        tokens = np.array([float(r.tokens) for r in rows[name]])
        recall = np.array([float(r.recall) for r in rows[name]])
        entry: Dict[str, Any] = {"tokens_p50": float(np.percentile(tokens, 50)),
                                 "tokens_p90": float(np.percentile(tokens, 90))}
        if curve:
            entry["all_gold_multi"] = _subset_gain(rows, curve, name, sizes > 1, "all_gold")
            entry["all_gold_single"] = _subset_gain(rows, curve, name, sizes == 1, "all_gold")
            entry["recall_multi"] = _subset_gain(rows, curve, name, sizes > 1, "recall")
            matched = matched_budget_recall(rows, method_info, name)
            if matched is not None:
                diff = recall - matched
                entry["flat_recall_at_matched_budget"] = float(matched.mean())
                entry["recall_gain_at_matched_budget"] = float(diff.mean())
                entry["recall_gain_at_matched_budget_ci95"] = _paired_interval(diff) if len(diff) > 1 else None
        out[name] = entry
    return out


def cut_size_correlation(rows: Mapping[str, Sequence[Any]], gold_sizes: Sequence[int], method: str) -> Optional[Dict[str, float]]:
    """Spearman correlation of the number of results a method returns with the gold count (does
    the cut track need?), on the questions with more than one gold leaf and on all."""
    if not rows.get(method):
        return None
    results = np.array([float(r.results) for r in rows[method]])
    sizes = np.array(gold_sizes, dtype=float)

    def spearman(a: np.ndarray, b: np.ndarray) -> Optional[float]:
        if len(a) < 3 or np.all(a == a[0]) or np.all(b == b[0]):
            return None
        return float(np.corrcoef(_average_ranks(a), _average_ranks(b))[0, 1])

    multi = sizes > 1
    return {"all": spearman(results, sizes), "multi": spearman(results[multi], sizes[multi])}


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks with ties sharing their average rank (Spearman's convention)."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values), dtype=float)
    _, inverse = np.unique(values, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse]


def word_budget_figures(rows: Mapping[str, Sequence[Any]], budgets: Sequence[int],
                        gold_sizes: Sequence[int] = ()) -> Dict[str, Dict[str, Any]]:
    """Recall within each word budget: the default search given the budget (``drag_knee_wB``, where
    the index takes one) next to flat hybrid leaves and pages filled to the same budget
    (``flat_hybrid_wB``, ``flat_hybrid_page_wB``), each with its mean words, right-document rate and
    (``gold_sizes``) all-gold rate on multi-gold questions; the default's gain over each flat row is
    a paired per-question difference at the same budget, with a 95% bootstrap interval."""
    sizes = np.array(gold_sizes) if len(gold_sizes) else None
    out: Dict[str, Dict[str, Any]] = {}
    for budget in budgets:
        entry: Dict[str, Any] = {}
        for name in (f"drag_knee_w{budget}", f"flat_hybrid_w{budget}", f"flat_hybrid_page_w{budget}"):
            if not rows.get(name):
                continue
            recall = np.array([float(r.recall) for r in rows[name]])
            figures: Dict[str, Any] = {
                "recall": float(recall.mean()),
                "tokens": float(np.mean([float(r.tokens) for r in rows[name]])),
                "right_document": float(np.mean([float(r.right_document) for r in rows[name]])),
            }
            if sizes is not None and len(sizes) == len(recall) and (sizes > 1).any():
                figures["all_gold_multi"] = float(np.array([float(r.all_gold) for r in rows[name]])[sizes > 1].mean())
            entry[name] = figures
        default = rows.get(f"drag_knee_w{budget}")
        for flat in (f"flat_hybrid_w{budget}", f"flat_hybrid_page_w{budget}"):
            if default and rows.get(flat) and len(rows[flat]) == len(default):
                diff = (np.array([float(r.recall) for r in default]) - np.array([float(r.recall) for r in rows[flat]]))
                entry[f"gain_over_{flat}"] = {"gain": float(diff.mean()),
                                              "ci95": _paired_interval(diff) if len(diff) > 1 else None}
        if entry:
            out[str(budget)] = entry
    return out
