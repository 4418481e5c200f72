"""What every benchmark dataset loader shares: the datasets folder, reading files, numbering units,
the limits, and the registry :func:`dataset` puts a loader in (see the package docstring).

``limit_docs`` keeps the first N documents; questions are kept only when every document holding
their gold is kept; ``limit_questions`` then keeps N of those, evenly spread (deterministic).
Whitespace-only units are dropped before numbering (the builder could not make a leaf of them);
gold that pointed at such a unit would be dropped with a warning (none does in the shipped data).
Datasets are read from the ``root`` argument or else the folder the environment variable
``DRAG_KNEE_DATASETS`` names (no folder is guessed).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from drag_knee_retriever.eval.dataset import DatasetError, EvalDataset, GoldLeaf, Question  # noqa: F401 (for loaders)
from drag_knee_retriever.model._nodes import Document

log = logging.getLogger("benchmarks.datasets")

ENV_VAR = "DRAG_KNEE_DATASETS"

#: A loader: ``loader(root, *, limit_docs=None, limit_questions=None, **its own options) -> EvalDataset``.
Loader = Callable[..., EvalDataset]
#: Every registered loader by dataset name, in registration order (see :func:`dataset`).
LOADERS: Dict[str, Loader] = {}


def dataset(name: str) -> Callable[[Loader], Loader]:
    """Register a loader under ``name`` (``@dataset("financebench")`` above its function).

    The loader takes the datasets folder (``root``: None means ``$DRAG_KNEE_DATASETS``, see
    :func:`datasets_root`) and the keywords ``limit_docs`` and ``limit_questions``, plus any options
    of its own (``shared_store``, ``max_doc_pages``...): ``load_dataset`` passes an option only to a
    loader that declares it and refuses it for the others. Build the result with
    :func:`make_dataset`.
    """

    def register(loader: Loader) -> Loader:
        if name in LOADERS and LOADERS[name] is not loader:
            raise ValueError(f"dataset {name!r} is registered twice ({LOADERS[name].__module__} and {loader.__module__})")
        LOADERS[name] = loader
        return loader

    return register


def datasets_root(root: Optional[os.PathLike | str] = None) -> Path:
    """The folder holding the datasets: ``root``, else ``$DRAG_KNEE_DATASETS``."""
    tried: List[str] = []
    candidates: List[Tuple[str, Path]] = []
    if root is not None:
        candidates.append(("argument", Path(root)))
    env = os.environ.get(ENV_VAR)
    if env:
        candidates.append((f"${ENV_VAR}", Path(env)))
    for origin, path in candidates:
        if path.is_dir():
            return path
        tried.append(f"{path} ({origin})")
        if origin == "argument":
            break  # an explicit path that does not exist is an error, not a hint
    raise DatasetError(
        ("No datasets folder found; tried " + ", ".join(tried) if tried else f"No datasets folder given and ${ENV_VAR} is not set")
        + ". Pass the folder that holds "
        f"covidqa_200423/, xquad_en_ru/ and hotpotqa_hipporag100/, or set {ENV_VAR}."
    )


def read_json(path: Path) -> Any:
    """A dataset's JSON file, or a DatasetError saying which file is missing."""
    if not path.is_file():
        raise DatasetError(
            f"Dataset file {path} is missing; check the datasets folder (see its README.txt files)."
        )
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def check_limit(name: str, value: Optional[int]) -> Optional[int]:
    """``limit_docs`` / ``limit_questions``: None or a positive integer."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DatasetError(f"{name} must be a positive integer or None, got {value!r}.")
    return value


def clean_units(raw: Sequence[str]) -> Tuple[List[str], Dict[int, int]]:
    """Drop whitespace-only units; return kept texts and a map raw index -> leaf ordinal."""
    kept: List[str] = []
    mapping: Dict[int, int] = {}
    for index, text in enumerate(raw):
        # A byte-order mark at the start of a text (XQuAD ru) is not content.
        clean = text.replace("\ufeff", "").strip()
        if clean:
            mapping[index] = len(kept)
            kept.append(clean)
    return kept, mapping


def make_dataset(
    name: str,
    language: str,
    docs: List[Tuple[str, List[str], Dict[str, Any]]],
    questions: Iterable[Question],
    limit_docs: Optional[int],
    limit_questions: Optional[int],
    source: str,
    notes: List[str],
) -> EvalDataset:
    """The :class:`EvalDataset` of ``docs`` (``(doc_id, units, metadata)``, one leaf per unit) and
    ``questions``, cut to the limits (see the module docstring). What a loader returns."""
    limit_docs = check_limit("limit_docs", limit_docs)
    limit_questions = check_limit("limit_questions", limit_questions)
    if limit_docs is not None:
        docs = docs[:limit_docs]
    kept_ids = {doc_id for doc_id, _, _ in docs}
    # A question is only fair if every document holding its gold evidence is indexed.
    kept_questions = [q for q in questions if q.gold and q.gold_docs <= kept_ids]
    if limit_questions is not None and limit_questions < len(kept_questions):
        # Evenly spread over the kept questions (deterministic), so a subset samples every part of
        # the corpus rather than only the first documents' questions.
        step = len(kept_questions) / limit_questions
        kept_questions = [kept_questions[int(i * step)] for i in range(limit_questions)]
    documents = [Document(id=doc_id, pages=units, metadata=meta) for doc_id, units, meta in docs]
    units = {doc_id: list(u) for doc_id, u, _ in docs}
    ds = EvalDataset(name, language, documents, kept_questions, units, source=source, notes=notes)
    log.info("loaded %s", ds.describe())
    return ds


def dataset_module(folder: Path, name: str) -> ModuleType:
    """Import a dataset's own ``load.py`` (it knows its files and its gold mapping)."""
    path = folder / "load.py"
    if not path.is_file():
        raise DatasetError(f"{path} is missing; the {name} folder must hold its load.py and raw/ (see README.txt).")
    spec = importlib.util.spec_from_file_location(f"_drag_knee_dataset_{name}", path)
    if spec is None or spec.loader is None:
        raise DatasetError(f"cannot import {path}.")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
