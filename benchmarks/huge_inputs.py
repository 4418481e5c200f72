"""Cost of huge single documents: the tree builder's time and peak memory (issue 16, item 8).

Each size runs in a fresh subprocess (peak RSS is per process): a text of real paragraphs
(COVID-QA contexts repeated, blank-line separated), the same text as one line without newlines,
one line of words without any sentence end, and the leaf split alone on such a line. Prints CPU
seconds (robust on a shared machine), wall seconds, peak RSS, nodes and levels; a run is cut at
``--timeout`` seconds.

    nice -n 10 python benchmarks/huge_inputs.py --split-sizes 5 50 --sizes 0.5 1 2 --line-sizes 1 --word-sizes 1 4
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
COVID = SHARED / "datasets" / "covidqa_200423" / "raw" / "200423_covidQA.json"


def make_text(megabytes: float, single_line: bool, words: bool = False) -> str:
    if words:  # one line of words without a sentence end: the case that was quadratic
        return ("lighthouse harbour keeper " * int(megabytes * 1024 * 1024 / 26 + 1))[: int(megabytes * 1024 * 1024)]
    data = json.loads(COVID.read_text())
    paragraphs = [p["context"] for a in data["data"] for p in a["paragraphs"]]
    base = "\n\n".join(paragraphs)
    target = int(megabytes * 1024 * 1024)
    text = (base * (target // len(base) + 1))[:target]
    return " ".join(text.split()) if single_line else text


def child(megabytes: float, shape: str) -> None:
    import resource

    from drag_knee_retriever import BuildConfig, Document
    from drag_knee_retriever.build._builder import build_document_trees
    from drag_knee_retriever.build._summarize import ExtractiveSummarizer

    text = make_text(megabytes, shape != "text", shape == "words")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    config = BuildConfig()
    started, cpu = time.perf_counter(), time.process_time()
    if shape == "split":  # the leaf split alone (where a long line was quadratic)
        from drag_knee_retriever.build._builder import _paragraphs

        leaves = _paragraphs(make_text(megabytes, True, True), config)
        print(json.dumps({"mb": megabytes, "shape": shape, "cpu_s": round(time.process_time() - cpu, 2),
                          "leaves": len(leaves)}))
        return
    trees = build_document_trees([Document(id="huge", text=text)], config, ExtractiveSummarizer(config))
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    nodes = trees[0].nodes
    print(json.dumps({"mb": megabytes, "shape": shape, "cpu_s": round(cpu, 2), "wall_s": round(seconds, 2),
                      "peak_rss_mb": round(peak / 1024), "rss_before_mb": round(before / 1024),
                      "nodes": len(nodes), "levels": max(n.level for n in nodes) + 1}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=float, nargs="*", default=[1, 5, 20])
    parser.add_argument("--line-sizes", type=float, nargs="*", default=[1, 5])
    parser.add_argument("--word-sizes", type=float, nargs="*", default=[1, 4])
    parser.add_argument("--split-sizes", type=float, nargs="*", default=[5, 50])
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        child(float(args.child[0]), args.child[1])
        return
    for sizes, shape in ((args.split_sizes, "split"), (args.sizes, "text"), (args.line_sizes, "line"),
                         (args.word_sizes, "words")):
        for mb in sizes:
            try:
                out = subprocess.run([sys.executable, __file__, "--child", str(mb), shape], capture_output=True,
                                     text=True, timeout=args.timeout)
                print(out.stdout.strip() or out.stderr[-500:], flush=True)
            except subprocess.TimeoutExpired:
                print(json.dumps({"mb": mb, "shape": shape, "wall_s": f"> {args.timeout}"}), flush=True)


if __name__ == "__main__":
    main()
