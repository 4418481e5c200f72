"""The headline of a run: DRAG knee against the flat hybrid curve at equal tokens, with a bootstrap interval."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.eval.metrics import interpolate_curve

HEADLINE_METHOD = "drag_knee"
REFERENCE_CURVE = "flat_hybrid"


def curve_points(summary: Mapping[str, Mapping[str, float]], method_info: Mapping[str, Mapping[str, Any]],
                 curve: str) -> List[Tuple[float, float]]:
    """(mean tokens, mean recall) of every method of a sweep, by tokens."""
    return sorted((summary[n]["tokens"], summary[n]["recall"]) for n, info in method_info.items()
                  if info.get("curve") == curve and n in summary)


def compute_headline(summary: Mapping[str, Mapping[str, float]],
                     method_info: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """DRAG knee recall minus flat hybrid recall at equal mean tokens, and the per-token comparison
    with AutoMerging. Also the same gain for every method, so the table can show it."""
    flat = curve_points(summary, method_info, REFERENCE_CURVE)
    headline: Dict[str, Any] = {"reference_curve": REFERENCE_CURVE, "flat_hybrid_curve": flat}
    gains: Dict[str, float] = {}
    extrapolated: Dict[str, bool] = {}
    if flat:
        for name, means in summary.items():
            at, extra = interpolate_curve(flat, means["tokens"])
            gains[name] = means["recall"] - at
            extrapolated[name] = extra
    headline["gains_at_equal_tokens"] = gains
    headline["beyond_flat_curve"] = sorted(n for n, extra in extrapolated.items() if extra)
    knee = summary.get(HEADLINE_METHOD)
    if knee is not None and flat:
        at, extra = interpolate_curve(flat, knee["tokens"])
        headline.update({
            "knee_recall_gain_at_equal_tokens": knee["recall"] - at,
            "knee_recall": knee["recall"],
            "knee_tokens": knee["tokens"],
            "flat_hybrid_recall_at_knee_tokens": at,
            "knee_tokens_beyond_flat_curve": extra,
        })
    else:
        headline["knee_recall_gain_at_equal_tokens"] = None
    automerging = sorted(n for n, info in method_info.items() if info.get("family") == "automerging" and n in summary)
    if knee is not None and automerging:
        # The AutoMerging setting closest to the knee in context size: recall per token falls as
        # context grows, so only points of similar size compare fairly.
        am = min(automerging, key=lambda n: abs(summary[n]["tokens"] - knee["tokens"]))
        knee_rpt = _per_1k(knee)
        am_rpt = _per_1k(summary[am])
        headline.update({
            "automerging_method": am,
            "automerging_recall": summary[am]["recall"],
            "automerging_tokens": summary[am]["tokens"],
            "knee_recall_per_1k_tokens": knee_rpt,
            "automerging_recall_per_1k_tokens": am_rpt,
            "knee_vs_automerging_recall_per_token_ratio": (knee_rpt / am_rpt) if am_rpt else None,
            "automerging_recall_gain_at_equal_tokens": gains.get(am),
            # Both measured against the same flat curve: > 0 means DRAG knee gets more evidence
            # per token than AutoMerging does.
            "knee_minus_automerging_gain": (gains[HEADLINE_METHOD] - gains[am])
            if HEADLINE_METHOD in gains and am in gains else None,
        })
    adaptive = [(gains[n], n) for n, info in method_info.items() if info.get("adaptive") and n in gains
                and info.get("family", "").startswith("drag")]
    if adaptive:
        best_gain, best = max(adaptive)
        headline["best_drag_variant"] = best
        headline["best_drag_variant_gain_at_equal_tokens"] = best_gain
    return headline


def bootstrap_headline_gain(rows: Mapping[str, Sequence[Any]], method_info: Mapping[str, Mapping[str, Any]],
                            *, resamples: int = 2000, seed: int = 0) -> Dict[str, Any]:
    """A 95% interval for ``knee_recall_gain_at_equal_tokens`` by the paired bootstrap.

    The questions are resampled with replacement (the same sample for every method, so the pairing
    of DRAG knee and the flat sweep on each question is kept); on each sample the flat hybrid curve
    is rebuilt from its means and the knee's gain at its mean tokens is recomputed. The 2.5th and
    97.5th percentiles of those gains are the interval; if it contains 0, the sign of the gain is
    not established by these questions.
    """
    import numpy as np

    curve = [n for n, info in method_info.items() if info.get("curve") == REFERENCE_CURVE and rows.get(n)]
    knee = rows.get(HEADLINE_METHOD)
    if not curve or not knee:
        return {}
    size = len(knee)
    if size < 2 or any(len(rows[n]) != size for n in curve):
        return {}
    recall = {n: np.array([float(r.recall) for r in rows[n]]) for n in curve + [HEADLINE_METHOD]}
    tokens = {n: np.array([float(r.tokens) for r in rows[n]]) for n in curve + [HEADLINE_METHOD]}
    rng = np.random.default_rng(seed)
    gains = []
    for _ in range(resamples):
        sample = rng.integers(0, size, size)
        points = [(tokens[n][sample].mean(), recall[n][sample].mean()) for n in curve]
        at, _extra = interpolate_curve(points, tokens[HEADLINE_METHOD][sample].mean())
        gains.append(recall[HEADLINE_METHOD][sample].mean() - at)
    low, high = np.percentile(gains, [2.5, 97.5])
    return {"knee_recall_gain_ci95": [float(low), float(high)], "knee_recall_gain_bootstrap_resamples": resamples}


def _per_1k(means: Mapping[str, float]) -> Optional[float]:
    return 1000.0 * means["recall"] / means["tokens"] if means.get("tokens") else None
