"""Whether two eval runs give the same results: every method's recall and tokens, and every other metric.

    python benchmarks/compare_runs.py BEFORE.json AFTER.json [--all]

Reads two ``--json`` outputs of ``benchmarks/eval.py`` (or ``drag-knee eval``) and prints, per
method, recall and tokens before and after, then whether every metric but latency, the headline
(but latency) and the dataset's description in the meta are identical. Exit status 1 if anything
but latency differs: what a refactor that must not change behaviour is checked with.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional


def _no_latency(values: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in values.items() if "latency" not in k}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--all", action="store_true", help="list every method (default: only those that differ)")
    args = parser.parse_args(argv)
    a, b = (json.load(open(path, encoding="utf-8")) for path in (args.before, args.after))
    sa, sb = a["summary"], b["summary"]
    methods = sorted(set(sa) | set(sb))
    same_rt = [m for m in methods if all(sa.get(m, {}).get(k) == sb.get(m, {}).get(k) for k in ("recall", "tokens"))]
    print(f"{'method':<44} {'recall before':>14} {'after':>14} {'tokens before':>14} {'after':>10}")
    for m in methods:
        if args.all or m not in same_rt:
            ra, rb = sa.get(m, {}), sb.get(m, {})
            print(f"{m:<44} {ra.get('recall')!s:>14.12} {rb.get('recall')!s:>14.12} {ra.get('tokens')!s:>14} "
                  f"{rb.get('tokens')!s:>10} {'' if m in same_rt else 'DIFFERENT'}")
    metrics_same = all(_no_latency(sa.get(m, {})) == _no_latency(sb.get(m, {})) for m in methods)
    headline_same = _no_latency(a["headline"]) == _no_latency(b["headline"])
    meta_keys = ("dataset", "dataset_notes", "limit_docs", "limit_questions", "max_doc_pages", "shared_store",
                 "query_encodings")
    meta_same = all(a["meta"].get(k) == b["meta"].get(k) for k in meta_keys)
    print(f"methods: {len(sa)} before, {len(sb)} after; recall and tokens identical: {len(same_rt)} of {len(methods)}")
    print(f"every metric but latency identical: {metrics_same}; headline (but latency): {headline_same}; "
          f"meta {', '.join(meta_keys)}: {meta_same}")
    return 0 if len(same_rt) == len(methods) and metrics_same and headline_same and meta_same else 1


if __name__ == "__main__":
    sys.exit(main())
