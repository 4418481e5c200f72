"""``python -m drag_knee_retriever.eval --dataset covidqa --out DIR``: the evaluation harness."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
