"""Aggregate figures of an eval run restricted to some documents' questions (no per-question data).

    python benchmarks/subset_gain.py RUN_DIR --outline mmlongbench --max-doc-pages 20 [--methods drag_knee]

Reads RUN_DIR/questions.jsonl.gz (per-question output, kept outside git) and, on the questions whose
gold lies in documents that carry a PDF outline (``--outline DATASET``: the documents of that
dataset with bookmarks), prints per index (the main one and every build variant): the method's
recall and mean tokens, flat hybrid top-k interpolated at the same mean tokens on the same index,
the gain with a 95% paired bootstrap, and flat hybrid recall@5. Used for "outline on vs off on the
documents that have bookmarks" (benchmarks/RESULTS.md, "context").
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
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


def table(rows: List[dict], methods: Sequence[str]) -> List[str]:
    names = list(rows[0]["methods"])
    rec = {n: np.array([r["methods"][n]["metrics"]["recall"] for r in rows]) for n in names}
    tok = {n: np.array([r["methods"][n]["metrics"]["tokens"] for r in rows], dtype=float) for n in names}
    out = ["| index | method | questions | recall | tokens | flat @ tokens | gain | 95% interval | flat hybrid recall@5 |",
           "|---|---|---:|---:|---:|---:|---:|---|---:|"]
    rng = np.random.default_rng(0)
    for label in dict.fromkeys(_label(n) for n in names):
        curve = [n for n in names if _label(n) == label and re.match(r"flat_hybrid_k\d+", n)]
        for base in methods:
            method = f"{base}[{label}]" if label else base
            if method not in rec or not curve:
                continue
            gain = _gain(rec, tok, method, curve)
            boots = [_gain(rec, tok, method, curve, rng.integers(0, len(rows), len(rows))) for _ in range(2000)]
            lo, hi = np.percentile(boots, [2.5, 97.5])
            k5 = f"flat_hybrid_k5[{label}]" if label else "flat_hybrid_k5"
            out.append(f"| {label or 'default'} | `{base}` | {len(rows)} | {rec[method].mean():.3f} | "
                       f"{tok[method].mean():.0f} | {rec[method].mean() - gain:.3f} | **{gain:+.3f}** | "
                       f"{lo:+.3f} to {hi:+.3f} | {rec[k5].mean():.3f} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir")
    parser.add_argument("--outline", default="mmlongbench", help="dataset whose documents with bookmarks are kept")
    parser.add_argument("--max-doc-pages", type=int, default=None)
    parser.add_argument("--methods", nargs="*", default=["drag_knee"])
    args = parser.parse_args()
    from drag_knee_retriever.eval.datasets import load_dataset

    ds = load_dataset(args.outline, max_doc_pages=args.max_doc_pages)
    keep = {d.id for d in ds.documents if d.outline}
    with gzip.open(f"{args.run_dir}/questions.jsonl.gz", "rt") as handle:
        rows = [json.loads(line) for line in handle]
    rows = [r for r in rows if "methods" in r and r["gold"] and all(g[0] in keep for g in r["gold"])]
    print(f"documents with an outline: {len(keep)}; their questions: {len(rows)}")
    print("\n".join(table(rows, args.methods)))


if __name__ == "__main__":
    main()
