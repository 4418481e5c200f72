"""The benchmark datasets: real questions with gold evidence, as the library's ``EvalDataset``.

Not part of the wheel: what a user evaluates on is their own corpus (``drag-knee eval --corpus DIR
--questions FILE``); these loaders read the benchmark datasets of ``$DRAG_KNEE_DATASETS`` (COVID-QA,
XQuAD en/ru, HotpotQA, MMLongBench-Doc, QMSum, FinanceBench) for ``python benchmarks/eval.py --dataset NAME``
and the other benchmark scripts, which run from the repository root (``benchmarks`` is importable
from there; the tests import it too).

One module per dataset. **Adding a dataset is one function in one new file here**: the function
loads the dataset's files, numbers its units (one leaf each) and returns :func:`.common.make_dataset`;
``@dataset("name")`` registers it, and every module of this package is imported on first use, so
``load_dataset("name")`` and ``benchmarks/eval.py --dataset name`` find it::

    # benchmarks/datasets/financebench.py
    from .common import Question, dataset, dataset_module, datasets_root, make_dataset

    @dataset("financebench")
    def load_financebench(root=None, *, limit_docs=None, limit_questions=None, shared_store=False):
        folder = datasets_root(root) / "financebench_dev"
        raw_docs, raw_questions = dataset_module(folder, "financebench").load(str(folder / "raw"))
        docs = [...]       # (doc_id, units, metadata) per document, one unit per leaf
        questions = [...]  # Question(id, text, gold=frozenset({(doc_id, unit_ordinal), ...}))
        return make_dataset("financebench", "english", docs, questions, limit_docs, limit_questions,
                            str(folder), notes=[])

An option beyond the limits (``shared_store``, ``max_doc_pages``, or one of the loader's own) is
passed to the loaders that declare it and refused for the others, naming those that take it.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from typing import Any, Dict, Optional, Tuple

from .common import ENV_VAR, LOADERS, DatasetError, EvalDataset, Question, dataset, datasets_root  # noqa: F401

#: What the report's meta records of every load (as the harness always did), besides any other option given.
RECORDED_OPTIONS: Dict[str, Any] = {"limit_docs": None, "limit_questions": None, "max_doc_pages": None,
                                    "shared_store": False}


def _discover() -> Dict[str, Any]:
    """Import every module of this package once, so that each registers its loaders."""
    for module in pkgutil.iter_modules(__path__):
        if module.name != "common":
            importlib.import_module(f"{__name__}.{module.name}")
    return LOADERS


def dataset_names() -> Tuple[str, ...]:
    """The names of every registered dataset."""
    return tuple(_discover())


def load_dataset(name: str, root: Optional[os.PathLike | str] = None, *, limit_docs: Optional[int] = None,
                 limit_questions: Optional[int] = None, **options: Any) -> EvalDataset:
    """Load a benchmark dataset by name (see :func:`dataset_names`): ``covidqa``, ``xquad-en``,
    ``xquad-ru``, ``hotpotqa``, ``mmlongbench``, ``qmsum`` (these two: one document per question
    by default, ``shared_store=True`` for all; ``max_doc_pages`` for MMLongBench), ``financebench``
    (the shared store by default, ``shared_store=False`` for one filing per question), or one added here.

    ``root``: the datasets folder (default ``$DRAG_KNEE_DATASETS``). The dataset's
    ``load_options`` record how it was loaded (the report's meta shows them).
    """
    loaders = _discover()
    if name not in loaders:
        raise DatasetError(f"Unknown dataset {name!r}; use one of {', '.join(loaders)}.")
    loader = loaders[name]
    accepted = inspect.signature(loader).parameters
    # An option left None (or False for a loader without it: the flag's off state) is not given; a
    # False for a loader that declares it is (financebench's shared_store defaults to True).
    given = {k: v for k, v in options.items() if v is not None and (v is not False or k in accepted)}
    refused = sorted(k for k in given if k not in accepted)
    if refused:
        takes = {k: [n for n, f in loaders.items() if k in inspect.signature(f).parameters] for k in refused}
        raise DatasetError(f"{name} takes no {', '.join(refused)}: " + "; ".join(
            f"{k} applies to {', '.join(v) or 'no dataset'}" for k, v in takes.items()) + ".")
    ds = loader(root, limit_docs=limit_docs, limit_questions=limit_questions, **given)
    # An option left None is recorded as the loader's own default (financebench: the shared store).
    said = {k: (v if v is not None else accepted[k].default) for k, v in options.items()
            if v is not None or k in accepted}
    ds.load_options = {**RECORDED_OPTIONS, "limit_docs": limit_docs, "limit_questions": limit_questions,
                       **{k: v for k, v in said.items() if v is not inspect.Parameter.empty}}
    return ds


__all__ = ["DatasetError", "EvalDataset", "LOADERS", "Question", "dataset", "dataset_names", "datasets_root",
           "load_dataset"]
