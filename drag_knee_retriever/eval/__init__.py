"""Evaluation harness: datasets with gold evidence, metrics, baselines, runner and report.

Quick use::

    from drag_knee_retriever.eval import run_eval
    report = run_eval("covidqa", "runs/covidqa", limit_docs=20)
    print(report.headline["knee_recall_gain_at_equal_tokens"])

The heavy parts (index, LlamaIndex, matplotlib) are imported only when a run starts.
"""

from .datasets import (
    DATASET_NAMES,
    DatasetError,
    EvalDataset,
    Question,
    load_covidqa,
    load_dataset,
    load_hotpotqa,
    load_xquad,
)
from .errors import EvalConsistencyError, EvalError, EvalSetupError, UnknownDocumentError
from .metrics import METRIC_FORMULAS, METRIC_NAMES, ContextHit, QuestionMetrics, mean_metrics, question_metrics


def run_eval(*args, **kwargs):
    """Run the evaluation (see :func:`drag_knee_retriever.eval.runner.run_eval`)."""
    from .runner import run_eval as _run_eval

    return _run_eval(*args, **kwargs)


__all__ = [
    "DATASET_NAMES",
    "METRIC_FORMULAS",
    "METRIC_NAMES",
    "ContextHit",
    "DatasetError",
    "EvalConsistencyError",
    "EvalDataset",
    "EvalError",
    "EvalSetupError",
    "Question",
    "QuestionMetrics",
    "load_covidqa",
    "load_dataset",
    "load_hotpotqa",
    "load_xquad",
    "mean_metrics",
    "question_metrics",
    "UnknownDocumentError",
    "run_eval",
]
