"""FinanceBench (development split, ``financebench_dev``): many similar filings, questions that name which one.

Read through the dataset's own ``load.py``: one document per filing, as a user's folder of PDFs
gives them: ``Document(id=<file name>, pages=..., metadata={company, doc_type, doc_period,
gics_sector})`` (the file name, e.g. ``PEPSICO_2022_10K``, is what such a PDF is called; the
download link and page count are left out: a user's PDF does not carry them). One unit per page
with a text layer (blank pages dropped before numbering, as for MMLongBench); gold = the 0-based
evidence pages.

Setting: the default is the shared store (every filing in one index, no filter: what a user with a
folder of filings gets); ``shared_store=False`` (``benchmarks/eval.py --single``) filters each
question to its filing (``doc_id``).

License: CC BY-NC. Questions and per-question output stay outside git (aggregate tables only).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .common import EvalDataset, Question, clean_units, dataset, dataset_module, datasets_root, log, make_dataset

FINANCEBENCH_DIR = Path("financebench_dev")
#: The metadata a filing carries into the index (what names it: whose, which kind, which period).
FINANCEBENCH_METADATA: Tuple[str, ...] = ("company", "doc_type", "doc_period", "gics_sector")


@dataset("financebench")
def load_financebench(
    root: Optional[os.PathLike | str] = None,
    *,
    limit_docs: Optional[int] = None,
    limit_questions: Optional[int] = None,
    shared_store: bool = True,
) -> EvalDataset:
    """FinanceBench: SEC filings and earnings releases, page-level gold (see the module docstring).

    ``shared_store`` (default) indexes every filing and searches them all; ``False`` is the
    single-document setting (each question filtered to its own filing by ``doc_id``)."""
    folder = datasets_root(root) / FINANCEBENCH_DIR
    module = dataset_module(folder, "financebench")
    raw_docs, raw_questions = module.load(str(folder / "raw"))
    docs: List[Tuple[str, List[str], Dict[str, Any]]] = []
    mappings: Dict[str, Dict[int, int]] = {}
    for d in raw_docs:
        units, mapping = clean_units([leaf["text"] for leaf in d["leaves"]])
        if not units:
            continue
        mappings[d["doc_id"]] = mapping
        meta = d.get("metadata") or {}
        docs.append((d["doc_id"], units, {k: meta[k] for k in FINANCEBENCH_METADATA if meta.get(k) not in (None, "")}))
    questions: List[Question] = []
    dropped = 0
    for q in raw_questions:
        mapping = mappings.get(q["doc_id"])
        if mapping is None:
            dropped += 1
            continue
        gold = {(q["doc_id"], mapping[p]) for p in q["gold_pages"] if p in mapping}
        if len(gold) != len(q["gold_pages"]):
            dropped += 1  # a gold page without a text layer: no text retriever can find it
            continue
        meta: Dict[str, Any] = {"doc_id": q["doc_id"], "question_type": q.get("question_type"), "gold_pages": len(gold)}
        if not shared_store:
            meta["filters"] = {"doc_id": q["doc_id"]}
        questions.append(Question(id=q["qid"], text=q["question"].strip(), gold=frozenset(gold),
                                  answer=str(q.get("answer")), metadata=meta))
    if dropped:
        log.warning("FinanceBench: %d questions dropped (their filing or a gold page has no text)", dropped)
    notes = [f"setting: {'shared store (every filing, no filter)' if shared_store else 'single document (doc_id filter per question)'}",
             f"questions dropped (filing or gold page without text): {dropped}"]
    return make_dataset("financebench" if shared_store else "financebench-single", "english", docs, questions,
                        limit_docs, limit_questions, str(folder), notes)
