"""One method in two eval runs on the same questions (two versions of the code on one index): the
paired difference over questions, counts and means only (no per-question data: several datasets are
CC BY-NC).

    python benchmarks/paired_runs.py BEFORE_DIR AFTER_DIR [--method drag_knee] [--after-method NAME]

Reads each run's ``questions.jsonl.gz`` (``benchmarks/eval.py --out DIR``), pairs the questions by
id and prints, for the method in each run, recall, mean words and the right-document rate, the
paired difference after - before of recall and of the right-document rate with a 95% bootstrap
interval over questions, and how many questions' results changed (their returned nodes differ).
Where a change can be switched off by a setting, a search variant of one run says the same in
one index and run; this is for a change that cannot.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np


def _rows(run_dir: str, method: str) -> Dict[str, Dict]:
    """Question id -> the method's record (``metrics``, ``returned``) in a run."""
    out: Dict[str, Dict] = {}
    with gzip.open(Path(run_dir) / "questions.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if "methods" not in row:
                continue  # the header line
            if method not in row["methods"]:
                raise SystemExit(f"{run_dir}: no method {method!r} (has {', '.join(sorted(row['methods']))})")
            out[row["id"]] = row["methods"][method]
    return out


def _interval(diff: np.ndarray, resamples: int = 2000, seed: int = 0) -> List[float]:
    rng = np.random.default_rng(seed)
    means = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(resamples)]
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--method", default="drag_knee")
    parser.add_argument("--after-method", help="the method's name in the after run (default: --method)")
    args = parser.parse_args(argv)
    before, after = _rows(args.before, args.method), _rows(args.after, args.after_method or args.method)
    ids = sorted(set(before) & set(after))
    if not ids:
        raise SystemExit("no question in both runs")
    get = lambda rows, key: np.array([float(rows[i]["metrics"].get(key, 0.0)) for i in ids])  # noqa: E731
    changed = sum(before[i]["returned"] != after[i]["returned"] for i in ids)
    print(f"{len(ids)} questions in both runs ({len(before)} before, {len(after)} after); results changed: {changed}")
    print("| run | recall @ words | right document |\n|---|---|---:|")
    for label, rows in (("before", before), ("after", after)):
        print(f"| {label} | {get(rows, 'recall').mean():.3f} @ {get(rows, 'tokens').mean():.0f} | "
              f"{get(rows, 'right_document').mean():.3f} |")
    for key in ("recall", "right_document"):
        diff = get(after, key) - get(before, key)
        low, high = _interval(diff)
        print(f"after - before, {key}: {diff.mean():+.3f} ({low:+.3f} to {high:+.3f}); "
              f"{int((diff > 0).sum())} up, {int((diff < 0).sum())} down")


if __name__ == "__main__":
    main()
