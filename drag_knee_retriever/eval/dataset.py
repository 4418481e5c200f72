"""An evaluation dataset: documents cut into units (one leaf each) and questions with gold leaves.

What the evaluation runner takes: :class:`EvalDataset` (documents, their units, questions) with
:class:`Question` (the gold leaves ``(doc_id, leaf_ordinal)``). Your own corpus becomes one with
:func:`~drag_knee_retriever.eval.own.load_own_dataset` (``drag-knee eval --corpus --questions``);
the benchmark datasets' loaders (COVID-QA, XQuAD, HotpotQA, MMLongBench-Doc, QMSum) live outside
the package, in the repository's ``benchmarks/datasets/``.

Each document's units are passed as ``pages=[...]``, one page per unit, so the builder makes
exactly one leaf per unit and never merges or splits them: the leaf ordinal of a unit is its
index in ``EvalDataset.units[doc_id]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

from drag_knee_retriever.model._nodes import Document
from drag_knee_retriever.eval.errors import EvalError

GoldLeaf = Tuple[str, int]


class DatasetError(EvalError, ValueError):
    """A dataset is missing, malformed, or asked for with an unknown name."""


@dataclass(frozen=True)
class Question:
    """One evaluation question: its id, text, and the gold leaves ``(doc_id, leaf_ordinal)``."""

    id: str
    text: str
    gold: FrozenSet[GoldLeaf]
    answer: Optional[str] = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # Per gold leaf, the characters (unit-local [start, end)) that hold the evidence: the answer's
    # part of the unit (COVID-QA, XQuAD) or the whole sentence (HotpotQA). A chunk that cuts a gold
    # leaf covers it only if it holds this range (see metrics.question_metrics).
    answer_spans: Mapping[GoldLeaf, Tuple[int, int]] = field(default_factory=dict)

    @property
    def gold_docs(self) -> FrozenSet[str]:
        """The documents that hold gold evidence."""
        return frozenset(doc for doc, _ in self.gold)


@dataclass
class EvalDataset:
    """Documents, their units (one leaf each), and the questions with gold leaves.

    ``units[doc_id][i]`` is the text of leaf ordinal ``i`` of that document. ``full_text`` and
    ``unit_offsets`` describe one plain-text rendering of each document (units joined by a blank
    line) for baselines that chunk raw text themselves (LlamaIndex): a character range maps back to
    the units it overlaps.
    """

    name: str
    language: str
    documents: List[Document]
    questions: List[Question]
    units: Dict[str, List[str]]
    source: str = ""
    notes: List[str] = field(default_factory=list)
    # Per document, the PDF outline (bookmarks) as ``[{title, page (0-based), level}]`` where the
    # dataset has one (MMLongBench); empty otherwise.
    outlines: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)
    # How the loader was called (limits and settings), recorded as they are in the report's meta.
    load_options: Dict[str, Any] = field(default_factory=dict)

    SEPARATOR = "\n\n"

    @property
    def leaf_count(self) -> int:
        """Total number of leaves over all documents."""
        return sum(len(u) for u in self.units.values())

    def full_text(self, doc_id: str) -> str:
        """The document as one string: its units joined by a blank line."""
        return self.SEPARATOR.join(self.units[doc_id])

    def unit_offsets(self, doc_id: str) -> List[Tuple[int, int]]:
        """``(start, end)`` character range of every unit inside :meth:`full_text`."""
        offsets = []
        position = 0
        for unit in self.units[doc_id]:
            offsets.append((position, position + len(unit)))
            position += len(unit) + len(self.SEPARATOR)
        return offsets

    def describe(self) -> Dict[str, Any]:
        """Counts for logs and reports."""
        gold_sizes = [len(q.gold) for q in self.questions]
        return {
            "dataset": self.name,
            "language": self.language,
            "documents": len(self.documents),
            "leaves": self.leaf_count,
            "questions": len(self.questions),
            "multi_gold_questions": sum(1 for n in gold_sizes if n > 1),
            "source": self.source,
        }
