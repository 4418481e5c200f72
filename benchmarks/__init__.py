"""Benchmark scripts, their dataset loaders (:mod:`benchmarks.datasets`) and research prototypes.

Not part of the wheel (``pyproject.toml`` packages ``drag_knee_retriever`` only). Run the scripts
from the repository root (``python benchmarks/eval.py ...``); they put the root on ``sys.path`` so
that ``benchmarks.datasets`` imports, and pytest does the same for the tests (``pythonpath``).
"""
