"""Aggregate figures of an eval run restricted to some documents' questions (no per-question data).

    python benchmarks/subset_gain.py RUN_DIR [--outline mmlongbench --max-doc-pages 20] [--methods drag_knee ...]

Reads RUN_DIR/questions.jsonl.gz (per-question output, kept outside git), optionally keeps only the
questions whose gold lies in documents with a PDF outline (``--outline DATASET``), and prints per
index (the main one and every build variant) and method: recall, mean tokens, the gain at equal
tokens over flat hybrid top-k on the SAME index and over flat hybrid on TODAY's (the main) index,
each with a 95% paired bootstrap; the all-gold rate on multi-gold questions; flat hybrid recall@5.
A build option is judged by the second gain: does its index beat the baseline's at equal tokens?
Compare within the same leaf size (``--baseline passage_words=120`` for the passage variants): below
the baseline's k=1 tokens the curve is interpolated to the origin, which flatters the smaller leaves.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from drag_knee_retriever.eval.metrics import interpolate_curve


def _label(name: str) -> str:
    m = re.search(r"\[(.*)\]$", name)
    return m.group(1) if m else ""


def _gain(rec: Dict[str, np.ndarray], tok: Dict[str, np.ndarray], method: str, curve: Sequence[str],
          sample: Optional[np.ndarray] = None) -> float:
    s = slice(None) if sample is None else sample
    points = [(tok[n][s].mean(), rec[n][s].mean()) for n in curve]
    at, _ = interpolate_curve(points, tok[method][s].mean())
    return float(rec[method][s].mean() - at)


def table(rows: List[dict], methods: Sequence[str], baseline: str = "") -> List[str]:
    names = list(rows[0]["methods"])
    rec = {n: np.array([r["methods"][n]["metrics"]["recall"] for r in rows]) for n in names}
    tok = {n: np.array([r["methods"][n]["metrics"]["tokens"] for r in rows], dtype=float) for n in names}
    gold = np.array([len(r["gold"]) for r in rows])
    allg = {n: np.array([r["methods"][n]["metrics"]["all_gold"] for r in rows]) for n in names}
    out = ["| index | method | questions | recall | tokens | gain vs flat, same index (95%) "
           f"| gain vs flat on {baseline or 'today'}'s index (95%) | all-gold multi | flat hybrid recall@5 |",
           "|---|---|---:|---:|---:|---|---|---:|---:|"]
    main_curve = [n for n in names if _label(n) == baseline and re.match(r"flat_hybrid_k\d+", n)]
    multi = gold > 1

    def with_ci(method: str, curve: Sequence[str]) -> str:
        rng = np.random.default_rng(0)
        gain = _gain(rec, tok, method, curve)
        boots = [_gain(rec, tok, method, curve, rng.integers(0, len(rows), len(rows))) for _ in range(1000)]
        lo, hi = np.percentile(boots, [2.5, 97.5])
        return f"**{gain:+.3f}** ({lo:+.3f} to {hi:+.3f})"

    for label in dict.fromkeys(_label(n) for n in names):
        curve = [n for n in names if _label(n) == label and re.match(r"flat_hybrid_k\d+", n)]
        for base in methods:
            method = f"{base}[{label}]" if label else base
            if method not in rec or not curve:
                continue
            k5 = f"flat_hybrid_k5[{label}]" if label else "flat_hybrid_k5"
            multi_rate = f"{allg[method][multi].mean():.3f}" if multi.any() else "–"
            own = "–" if base.startswith("flat_hybrid_k") else with_ci(method, curve)
            today = with_ci(method, main_curve) if label != baseline else "–"
            out.append(f"| {label or 'default'} | `{base}` | {len(rows)} | {rec[method].mean():.3f} | "
                       f"{tok[method].mean():.0f} | {own} | {today} | {multi_rate} | "
                       f"{rec[k5].mean():.3f} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir")
    parser.add_argument("--outline", default=None, help="keep only the questions on this dataset's documents with bookmarks")
    parser.add_argument("--max-doc-pages", type=int, default=None)
    parser.add_argument("--baseline", default="", help="the build variant label to compare against (default: the main index)")
    parser.add_argument("--methods", nargs="*", default=["drag_knee", "flat_hybrid_k3", "flat_hybrid_k5"])
    args = parser.parse_args()
    with gzip.open(f"{args.run_dir}/questions.jsonl.gz", "rt") as handle:
        rows = [json.loads(line) for line in handle]
    rows = [r for r in rows if "methods" in r and r["gold"]]
    if args.outline:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks.datasets
        from benchmarks.datasets import load_dataset

        ds = load_dataset(args.outline, max_doc_pages=args.max_doc_pages)
        keep = {d.id for d in ds.documents if d.outline}
        rows = [r for r in rows if all(g[0] in keep for g in r["gold"])]
        print(f"documents with an outline: {len(keep)}; their questions: {len(rows)}")
    print("\n".join(table(rows, args.methods, args.baseline)))


if __name__ == "__main__":
    main()
