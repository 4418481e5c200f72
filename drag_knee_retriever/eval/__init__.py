"""Evaluation harness: your corpus and questions with gold evidence, metrics, baselines, runner and report.

Quick use::

    from drag_knee_retriever.eval import load_own_dataset, run_eval
    dataset = load_own_dataset(["docs/"], "questions.jsonl")
    report = run_eval(dataset, "runs/mine")
    print(report.headline["knee_recall_gain_at_equal_tokens"])

(``drag-knee eval --corpus docs/ --questions questions.jsonl --out runs/mine`` from the shell.) The
benchmark datasets' loaders are not part of the package: they live in the repository's
``benchmarks/datasets/`` (``python benchmarks/eval.py --dataset NAME``). The heavy parts (index,
LlamaIndex, matplotlib) are imported only when a run starts.
"""

from drag_knee_retriever.eval.dataset import DatasetError, EvalDataset, Question
from drag_knee_retriever.eval.errors import EvalConsistencyError, EvalError, EvalSetupError, UnknownDocumentError
from drag_knee_retriever.eval.metrics import METRIC_FORMULAS, METRIC_NAMES, ContextHit, QuestionMetrics, mean_metrics, question_metrics
from drag_knee_retriever.eval.own import load_own_dataset


def run_eval(*args, **kwargs):
    """Run the evaluation (see :func:`drag_knee_retriever.eval.runner.run_eval`)."""
    from drag_knee_retriever.eval.runner import run_eval as _run_eval

    return _run_eval(*args, **kwargs)


__all__ = [
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
    "load_own_dataset",
    "mean_metrics",
    "question_metrics",
    "UnknownDocumentError",
    "run_eval",
]
