"""Your own corpus and questions as an evaluation dataset (``drag-knee eval --corpus --questions``).

The corpus is a folder (or files) loaded as ``drag-knee ingest`` loads it (txt, md, pdf); its
leaves are the ones the builder makes with the given :class:`~drag_knee_retriever.BuildConfig`, so
the evaluation measures the tree you would search. The questions file is JSON Lines, one question
per line::

    {"id": "q1", "question": "What do the authors measure?", "gold": [{"doc": "paper.pdf", "pages": [3, 4]}]}
    {"question": "When did colony collapse start?", "gold": [{"text": "in the winter of 2006"}]}
    {"question": "Which report covers tides?", "gold": ["reports/tides.md"]}

``gold`` lists the evidence, each item one of:

- ``{"doc": ID, "pages": [p, ...]}``: those pages of a paged document (PDF pages, 1-based);
- ``{"text": "passage", "doc": ID (optional)}``: the leaves holding that passage (case and
  whitespace ignored; a passage over several leaves marks each leaf it crosses), the passage's
  characters also being the evidence a chunk must hold to cover a leaf it cuts;
- ``{"doc": ID}`` or a plain string ``ID``: every leaf of that document (use it for short
  documents; for long ones recall then counts the share of the document returned).

Document ids are file paths relative to the corpus folder (as ``drag-knee ingest`` names them).
``id`` defaults to the line number. A line that names an unknown document, page or passage is an
error naming the line, so a typo never turns into a silently unanswerable question.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.config import BuildConfig
from drag_knee_retriever.eval.dataset import DatasetError, EvalDataset, Question

_SPACE = re.compile(r"\s+")


def _norm(text: str) -> Tuple[str, List[int]]:
    """Lower-cased text with whitespace runs collapsed, and each kept character's original index."""
    out: List[str] = []
    index: List[int] = []
    last_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if last_space or not out:
                continue
            out.append(" ")
            last_space = True
        else:
            out.append(ch.lower())
            last_space = False
        index.append(i)
    return "".join(out), index


def load_own_dataset(
    corpus: Sequence[os.PathLike | str] | os.PathLike | str,
    questions: os.PathLike | str,
    *,
    build: Optional[BuildConfig] = None,
    language: str = "english",
    name: Optional[str] = None,
) -> EvalDataset:
    """Load a corpus and a JSON Lines questions file into an :class:`EvalDataset` (see module docs)."""
    from drag_knee_retriever.build._builder import build_document_trees
    from drag_knee_retriever.loaders import load_paths

    paths = [corpus] if isinstance(corpus, (str, os.PathLike)) else list(corpus)
    report = load_paths(paths)
    if not report.documents:
        raise DatasetError(f"No documents could be loaded from {[str(p) for p in paths]}; "
                           f"skipped: {[s.reason for s in report.skipped][:3]}.")
    documents = list(report.documents)
    trees = build_document_trees(documents, build or BuildConfig())
    units: Dict[str, List[str]] = {}
    pages: Dict[str, Dict[int, List[int]]] = {}
    for tree in trees:
        leaves = sorted((n for n in tree.nodes if n.is_leaf), key=lambda n: n.span.first_leaf)
        units[tree.doc_id] = [leaf.text for leaf in leaves]
        for leaf in leaves:
            if leaf.span.first_page is not None:
                for page in range(leaf.span.first_page, (leaf.span.last_page or leaf.span.first_page) + 1):
                    pages.setdefault(tree.doc_id, {}).setdefault(page, []).append(leaf.span.first_leaf)
    normalised = {doc: [_norm(u) for u in us] for doc, us in units.items()}
    questions_path = Path(questions)
    try:
        lines = questions_path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"Cannot read the questions file {str(questions_path)!r}: {exc.strerror}.") from None
    out: List[Question] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{questions_path.name} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: not JSON ({exc.msg}); each line is one JSON object.") from None
        if not isinstance(row, Mapping) or not isinstance(row.get("question"), str) or not row["question"].strip():
            raise DatasetError(f"{where}: needs a non-empty \"question\" string.")
        gold_items = row.get("gold")
        if isinstance(gold_items, (str, Mapping)):
            gold_items = [gold_items]
        if not isinstance(gold_items, list) or not gold_items:
            raise DatasetError(f"{where}: needs \"gold\": a list of documents, pages or passages (see the docs).")
        gold: set = set()
        spans: Dict[Tuple[str, int], Tuple[int, int]] = {}
        for item in gold_items:
            _resolve(item, where, units, pages, normalised, gold, spans)
        out.append(Question(id=str(row.get("id", number)), text=row["question"], gold=frozenset(gold),
                            answer=row.get("answer"), answer_spans=spans))
    if not out:
        raise DatasetError(f"{questions_path.name} has no questions.")
    label = name or Path(paths[0]).name or "own"
    return EvalDataset(name=label, language=language, documents=documents, questions=out, units=units,
                       source=f"{', '.join(str(p) for p in paths)} + {questions_path}",
                       notes=[f"{len(documents)} documents, {sum(map(len, units.values()))} leaves, "
                              f"{len(out)} questions; skipped files: {len(report.skipped)}"])


def _doc(item: Mapping[str, Any], where: str, units: Mapping[str, List[str]]) -> Optional[str]:
    doc = item.get("doc")
    if doc is None:
        return None
    if doc not in units:
        close = sorted(units, key=lambda d: (Path(d).name != Path(str(doc)).name, d))[:3]
        raise DatasetError(f"{where}: unknown document {doc!r}; ids are paths relative to the corpus, e.g. {close}.")
    return str(doc)


def _resolve(item: Any, where: str, units: Mapping[str, List[str]], pages: Mapping[str, Mapping[int, List[int]]],
             normalised: Mapping[str, List[Tuple[str, List[int]]]], gold: set,
             spans: Dict[Tuple[str, int], Tuple[int, int]]) -> None:
    if isinstance(item, str):
        item = {"doc": item}
    if not isinstance(item, Mapping):
        raise DatasetError(f"{where}: a gold item is {type(item).__name__}; use a document id or an object.")
    doc = _doc(item, where, units)
    if "pages" in item:
        if doc is None:
            raise DatasetError(f"{where}: \"pages\" needs \"doc\" (which document's pages).")
        for page in item["pages"] if isinstance(item["pages"], list) else [item["pages"]]:
            leaves = pages.get(doc, {}).get(page) if isinstance(page, int) else None
            if not leaves:
                known = sorted(pages.get(doc, {}))
                raise DatasetError(f"{where}: {doc!r} has no page {page!r} (pages: {known[:1] + known[-1:] or 'none, not paged'}).")
            gold.update((doc, leaf) for leaf in leaves)
        return
    if "text" in item:
        wanted, _ = _norm(str(item["text"]))
        if not wanted:
            raise DatasetError(f"{where}: the gold \"text\" is empty.")
        found = False
        for doc_id in ([doc] if doc else list(units)):
            for ordinal, (text, index) in enumerate(normalised[doc_id]):
                at = text.find(wanted)
                if at >= 0:
                    gold.add((doc_id, ordinal))
                    spans[(doc_id, ordinal)] = (index[at], index[at + len(wanted) - 1] + 1)
                    found = True
            if not found:
                found = _across_leaves(doc_id, wanted, normalised[doc_id], gold)
        if not found:
            raise DatasetError(f"{where}: the passage {str(item['text'])[:60]!r} is in no leaf"
                               f"{' of ' + repr(doc) if doc else ''}; copy it from the document.")
        return
    if doc is None:
        raise DatasetError(f"{where}: a gold object needs \"doc\", \"pages\" or \"text\".")
    gold.update((doc, ordinal) for ordinal in range(len(units[doc])))


def _across_leaves(doc_id: str, wanted: str, leaves: Sequence[Tuple[str, List[int]]], gold: set) -> bool:
    """Mark the consecutive leaves a passage runs across (joined by one space)."""
    joined = ""
    starts = []
    for text, _ in leaves:
        starts.append(len(joined))
        joined += text + " "
    at = joined.find(wanted)
    if at < 0:
        return False
    end = at + len(wanted)
    for ordinal, start in enumerate(starts):
        stop = start + len(leaves[ordinal][0])
        if start < end and stop > at:
            gold.add((doc_id, ordinal))
    return True
