"""Search latency: DRAG methods against flat hybrid top-10, same index, same questions, same run.

    python benchmarks/latency.py [--papers 20] [--questions 120] [--engine auto|edge|local] [--index DIR]

Builds one collection from the first N COVID-QA papers (one leaf per paragraph) — or reuses the
folder given by --index — then times, per question and including query encoding: (a) flat hybrid
RRF top-10 over leaves, (b) each DRAG method. Calls are interleaved question by question so
machine noise hits all methods alike. Prints median and p95 and the ratio b/a; the last line reads
``knee_vs_flat_latency_ratio=<x> knee_median_ms=<y>``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from ingest import MODEL, load  # noqa: E402

METHODS = ["fixed", "knee", "sensitive_knee", "branch"]
# The knee with the focus of before the magnitude default (RRF over the regions' leaves only), timed
# next to today's default so the cost of the magnitude focus is a ratio in the same run.
RRF_FOCUS = "knee_rrf_focus"


def p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=20)
    parser.add_argument("--questions", type=int, default=120)
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--index", help="a folder to keep the index in between runs")
    args = parser.parse_args()
    os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL))
    from drag_knee_retriever import DragKneeIndex

    docs, questions = load(args.papers)
    index = DragKneeIndex(args.index or ":memory:", engine=args.engine, collection=f"latency_{args.papers}")
    started = time.perf_counter()
    report = index.add_documents(docs)
    stats = index.stats()
    print(f"index: {stats['documents']} papers, {stats['nodes']} nodes ({stats['leaves']} leaves), "
          f"engine {stats['engine']}; ingest {time.perf_counter() - started:.1f}s ({report})")
    asked = [q for q, _, _ in questions][: args.questions]
    if len(asked) < args.questions:
        print(f"note: only {len(asked)} questions for {args.papers} papers")
    for q in asked[:5]:  # warm up caches and the ONNX session
        index.flat_search(q, k=10)
        index.search(q)
    from drag_knee_retriever import SearchConfig

    rrf_focus = SearchConfig(focus_scores="rrf", focus_global=None)
    timings = {name: [] for name in ["flat_hybrid_top10"] + METHODS + [RRF_FOCUS]}
    context_tokens = {name: [] for name in timings}
    for q in asked:
        t = time.perf_counter()
        flat = index.flat_search(q, k=10)
        timings["flat_hybrid_top10"].append((time.perf_counter() - t) * 1e3)
        context_tokens["flat_hybrid_top10"].append(sum(len(h.text.split()) for h in flat))
        for method in METHODS + [RRF_FOCUS]:
            t = time.perf_counter()
            result = index.search(q, config=rrf_focus) if method == RRF_FOCUS else index.search(q, method=method)
            timings[method].append((time.perf_counter() - t) * 1e3)
            context_tokens[method].append(sum(len(h.text.split()) for h in result.nodes))
    flat_median = statistics.median(timings["flat_hybrid_top10"])
    print(f"{len(asked)} questions, latency including query encoding (ms):")
    print(f"{'method':<20} {'median':>8} {'p95':>8} {'ratio':>7} {'ctx words':>10}")
    for name, values in timings.items():
        print(f"{name:<20} {statistics.median(values):>8.1f} {p95(values):>8.1f} "
              f"{statistics.median(values) / flat_median:>7.2f} {statistics.mean(context_tokens[name]):>10.0f}")
    knee_median = statistics.median(timings["knee"])
    index.close()
    print(f"knee_vs_flat_latency_ratio={knee_median / flat_median:.2f} knee_median_ms={knee_median:.1f}")


if __name__ == "__main__":
    main()
