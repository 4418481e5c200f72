"""``python -m drag_knee_retriever.eval --corpus DIR --questions FILE.jsonl --out DIR``: the evaluation harness
(the benchmark datasets: ``python benchmarks/eval.py --dataset NAME`` in the repository)."""

import sys

from drag_knee_retriever.eval.cli import main

if __name__ == "__main__":
    sys.exit(main())
