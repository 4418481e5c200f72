"""What the loaders cost on a plain folder: this checkout's code against another one's, A/B in turn.

Issue 25 made every read open the file once without following links and check the descriptor
against what discovery saw, skips texts with nothing visible, and bounds PDF work (pages, decoded
content, CPU time checked every 256 operators). This measures what that costs on ordinary files:
``load_paths(folder, ocr="never")`` in a fresh process per run, CPU and wall seconds, alternating
the two code trees. The folder is generated once (300 small text files and four 30-page text PDFs
drawn with matplotlib) under ``--dir``.

    git archive 01fd4f6 drag_knee_retriever | tar -x -C /tmp/old-code
    python benchmarks/loader_cost.py --other /tmp/old-code --pairs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
import drag_knee_retriever, drag_knee_retriever.loaders as loaders
cpu, wall = time.process_time(), time.perf_counter()
report = loaders.load_paths([sys.argv[1]], ocr="never")
print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                  "docs": len(report.documents), "skipped": len(report.skipped), "file": drag_knee_retriever.__file__}))
"""


def make_corpus(folder: Path) -> None:
    if (folder / "manual3.pdf").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    words = "lighthouse keeper harbour tide fog signal beacon ship rock coast storm lantern".split()
    for i in range(300):
        paragraphs = ["\n".join(" ".join(words[(i + j + k) % len(words)] for k in range(12)) + "." for j in range(6))
                      for _ in range(5)]
        (folder / f"note{i:03d}.txt").write_text("\n\n".join(paragraphs))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    for d in range(4):
        with PdfPages(folder / f"manual{d}.pdf") as pdf:
            for p in range(30):
                fig = plt.figure(figsize=(8.5, 11))
                for line in range(45):
                    fig.text(0.05, 0.96 - line * 0.021, f"Page {p} line {line}: "
                             + " ".join(words[(p + line + k) % len(words)] for k in range(10)), fontsize=8)
                pdf.savefig(fig)
                plt.close(fig)


def run(code: Path, folder: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", CHILD, str(folder)], env=env, cwd="/", capture_output=True,
                         text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["file"].startswith(str(code)), (code, result["file"])  # the tree asked for, not an install
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", required=True, type=Path, help="a folder holding another drag_knee_retriever/")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/drag-knee-loader-cost"))
    args = parser.parse_args()
    make_corpus(args.dir)
    trees = {"this": HERE, "other": args.other.resolve()}
    results = {name: [] for name in trees}
    for pair in range(args.pairs):
        for name in (("other", "this") if pair % 2 == 0 else ("this", "other")):
            results[name].append(run(trees[name], args.dir))
    print("| code | documents | skipped | CPU s (median) | wall s (median) |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        print(f"| {name} ({trees[name]}) | {runs[0]['docs']} | {runs[0]['skipped']} | "
              f"{statistics.median(r['cpu'] for r in runs):.2f} | {statistics.median(r['wall'] for r in runs):.2f} |")


if __name__ == "__main__":
    main()
