"""Evaluation datasets: real questions with gold evidence, as core :class:`Document` objects.

(About 620 lines: one loader per dataset, six datasets; a datasets/ package with a module per
dataset is the next split. A separate long-document module made an import cycle through the runner.)

Every loader returns an :class:`EvalDataset`. Each document's units (COVID-QA lines, XQuAD
paragraphs, HotpotQA sentences) are passed as ``pages=[...]``, one page per unit, so the builder
makes exactly one leaf per unit and never merges or splits them: the leaf ordinal of a unit is its
index in ``EvalDataset.units[doc_id]``. Gold evidence is a set of ``(doc_id, leaf_ordinal)``.

``limit_docs`` keeps the first N documents; questions are kept only when every document holding
their gold is kept; ``limit_questions`` then keeps N of those, evenly spread (deterministic).

Whitespace-only units are dropped before numbering (the builder could not make a leaf of them);
gold that pointed at such a unit would be dropped with a warning (none does in the shipped data).

Datasets are read from the ``root`` argument or else the folder the environment variable
``DRAG_KNEE_DATASETS`` names (the package never guesses a folder of its own).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..nodes import Document
from .errors import EvalError

log = logging.getLogger(__name__)

DATASET_NAMES: Tuple[str, ...] = ("covidqa", "xquad-en", "xquad-ru", "hotpotqa", "mmlongbench", "qmsum", "financebench")
ENV_VAR = "DRAG_KNEE_DATASETS"

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


# ---------------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------------


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


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise DatasetError(
            f"Dataset file {path} is missing; check the datasets folder (see its README.txt files)."
        )
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def _check_limit(name: str, value: Optional[int]) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DatasetError(f"{name} must be a positive integer or None, got {value!r}.")
    return value


def _clean_units(raw: Sequence[str]) -> Tuple[List[str], Dict[int, int]]:
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


def _finish(
    name: str,
    language: str,
    docs: List[Tuple[str, List[str], Dict[str, Any]]],
    questions: Iterable[Question],
    limit_docs: Optional[int],
    limit_questions: Optional[int],
    source: str,
    notes: List[str],
) -> EvalDataset:
    limit_docs = _check_limit("limit_docs", limit_docs)
    limit_questions = _check_limit("limit_questions", limit_questions)
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
    dataset = EvalDataset(name, language, documents, kept_questions, units, source=source, notes=notes)
    log.info("loaded %s", dataset.describe())
    return dataset


# ---------------------------------------------------------------------------------------------
# COVID-QA
# ---------------------------------------------------------------------------------------------

COVIDQA_FILE = Path("covidqa_200423") / "raw" / "200423_covidQA.json"
# The README's nearest-occurrence fix is for offsets shifted by a few characters; anything much
# farther is a different passage and the answer is reported as unresolved instead.
_MAX_SHIFT = 200


def resolve_answer_span(context: str, text: str, start: int) -> Optional[Tuple[int, int, str]]:
    """Locate an answer in its context: ``(start, end, how)`` of its stripped text.

    Handles the two COVID-QA quirks: answers starting with a space that ``answer_start`` does
    not count (the stripped text matches at ``start``), and offsets shifted by a few characters
    (the occurrence of the stripped text nearest to ``start``). ``how`` is ``"exact"``,
    ``"unstripped"`` or ``"nearest"``. ``None`` if it cannot be found.
    """
    stripped = text.strip()
    if not stripped:
        return None
    lead = len(text) - len(text.lstrip())
    if context[start : start + len(text)] == text:
        return start + lead, start + lead + len(stripped), "exact"
    if context[start : start + len(stripped)] == stripped:
        return start, start + len(stripped), "unstripped"
    best: Optional[int] = None
    for match in re.finditer(re.escape(stripped), context):
        if best is None or abs(match.start() - start) < abs(best - start):
            best = match.start()
    if best is None or abs(best - start) > _MAX_SHIFT:
        return None
    return best, best + len(stripped), "nearest"


def covidqa_lines(context: str) -> List[Tuple[int, int, str]]:
    """Non-blank lines of a paper with their character ranges: the README's ``[^\\n]+`` units."""
    return [(m.start(), m.end(), m.group()) for m in re.finditer(r"[^\n]+", context) if m.group().strip()]


def load_covidqa(
    root: Optional[os.PathLike | str] = None,
    *,
    limit_docs: Optional[int] = None,
    limit_questions: Optional[int] = None,
    exclude_docs: Sequence[str] = (),
) -> EvalDataset:
    """COVID-QA (2020-04-23 snapshot): one document per paper, one leaf per non-blank line.

    Gold = the lines overlapping the answer span (after :func:`resolve_answer_span`). Papers keep
    the file's order; ``limit_docs`` keeps the first N (``exclude_docs`` drops ids such as
    ``"covidqa-2684"``, the hard-wrapped paper, before counting).
    """
    path = datasets_root(root) / COVIDQA_FILE
    data = _read_json(path)
    docs: List[Tuple[str, List[str], Dict[str, Any]]] = []
    questions: List[Question] = []
    unresolved = 0
    how_counts: Dict[str, int] = {"exact": 0, "unstripped": 0, "nearest": 0}
    excluded = set(exclude_docs)
    for article in data.get("data", []):
        for paragraph in article.get("paragraphs", []):
            context: str = paragraph["context"]
            doc_id = f"covidqa-{paragraph['document_id']}"
            if doc_id in excluded:
                continue
            lines = covidqa_lines(context)
            units = [text.strip() for _, _, text in lines]
            title = units[0] if units else doc_id
            docs.append((doc_id, units, {"title": title[:200], "dataset": "covidqa"}))
            for qa in paragraph.get("qas", []):
                gold: set = set()
                spans: Dict[GoldLeaf, Tuple[int, int]] = {}
                answers = []
                for answer in qa.get("answers", []):
                    span = resolve_answer_span(context, answer["text"], int(answer["answer_start"]))
                    if span is None:
                        unresolved += 1
                        continue
                    how_counts[span[2]] += 1
                    answers.append(answer["text"].strip())
                    for ordinal, (lo, hi, line) in enumerate(lines):
                        if lo < span[1] and span[0] < hi:
                            gold.add((doc_id, ordinal))
                            # The unit is the stripped line: shift to its local offsets.
                            start = lo + len(line) - len(line.lstrip())
                            end = start + len(units[ordinal])
                            local = (max(span[0], start) - start, min(span[1], end) - start)
                            old_span = spans.get((doc_id, ordinal))
                            if old_span:
                                local = (min(old_span[0], local[0]), max(old_span[1], local[1]))
                            spans[(doc_id, ordinal)] = local
                if not gold:
                    continue
                questions.append(Question(
                    id=f"covidqa-q{qa['id']}", text=qa["question"].strip(), gold=frozenset(gold),
                    answer=answers[0] if answers else None, metadata={"doc_id": doc_id},
                    answer_spans=spans,
                ))
    notes = [f"answers located exactly at answer_start: {how_counts['exact']}",
             f"answers with a leading space answer_start does not count: {how_counts['unstripped']}",
             f"answers with shifted offsets, located by nearest occurrence: {how_counts['nearest']}",
             f"answers that could not be located (dropped): {unresolved}"]
    if unresolved:
        log.warning("COVID-QA: %d answers could not be located in their paper and were dropped", unresolved)
    return _finish("covidqa", "english", docs, questions, limit_docs, limit_questions, str(path), notes)


# ---------------------------------------------------------------------------------------------
# XQuAD
# ---------------------------------------------------------------------------------------------


def load_xquad(
    language: str = "en",
    root: Optional[os.PathLike | str] = None,
    *,
    limit_docs: Optional[int] = None,
    limit_questions: Optional[int] = None,
) -> EvalDataset:
    """XQuAD English or Russian: one document per article, one leaf per paragraph.

    Gold = the question's own paragraph. The Russian set is tagged ``language="russian"`` so the
    index uses the Russian BM25 stemmer and stop words.
    """
    if language not in ("en", "ru"):
        raise DatasetError(f"XQuAD language must be 'en' or 'ru', got {language!r}.")
    path = datasets_root(root) / "xquad_en_ru" / "raw" / f"xquad.{language}.json"
    data = _read_json(path)
    docs: List[Tuple[str, List[str], Dict[str, Any]]] = []
    questions: List[Question] = []
    for a_index, article in enumerate(data.get("data", [])):
        doc_id = f"xquad-{language}-a{a_index}"
        raw = [p["context"] for p in article.get("paragraphs", [])]
        units, mapping = _clean_units(raw)
        docs.append((doc_id, units, {"title": article.get("title", doc_id), "dataset": f"xquad-{language}"}))
        for p_index, paragraph in enumerate(article.get("paragraphs", [])):
            if p_index not in mapping:
                log.warning("XQuAD %s: paragraph %d of article %d is blank; its questions are dropped",
                            language, p_index, a_index)
                continue
            unit = units[mapping[p_index]]
            for qa in paragraph.get("qas", []):
                answers = qa.get("answers") or []
                leaf = (doc_id, mapping[p_index])
                span = _local_answer_span(paragraph["context"], unit, answers[0]) if answers else None
                questions.append(Question(
                    id=f"xquad-{language}-{qa['id']}", text=qa["question"].strip(),
                    gold=frozenset({leaf}),
                    answer=answers[0]["text"] if answers else None,
                    metadata={"doc_id": doc_id, "paragraph": p_index},
                    answer_spans={leaf: span or (0, len(unit))},
                ))
    name = f"xquad-{language}"
    lang = "russian" if language == "ru" else "english"
    return _finish(name, lang, docs, questions, limit_docs, limit_questions, str(path), [])


def _local_answer_span(raw: str, unit: str, answer: Mapping[str, Any]) -> Optional[Tuple[int, int]]:
    """The answer's range inside the cleaned unit (BOMs and surrounding whitespace removed)."""
    text = str(answer.get("text", "")).strip()
    if not text:
        return None
    start = int(answer.get("answer_start", 0))
    prefix = raw[:start]
    cleaned_prefix = prefix.replace("\ufeff", "").lstrip()
    guess = len(cleaned_prefix)
    if unit[guess : guess + len(text)] == text:
        return guess, guess + len(text)
    found = resolve_answer_span(unit, text, guess)
    return (found[0], found[1]) if found else None


# ---------------------------------------------------------------------------------------------
# HotpotQA (HippoRAG's 100-question distractor sample)
# ---------------------------------------------------------------------------------------------


def load_hotpotqa(
    root: Optional[os.PathLike | str] = None,
    *,
    limit_docs: Optional[int] = None,
    limit_questions: Optional[int] = None,
) -> EvalDataset:
    """HotpotQA sample: one document per Wikipedia title, one leaf per sentence.

    Gold = the supporting-fact sentences (always in two documents). Documents are ordered by their
    first appearance in the questions' 10-paragraph pools, so ``limit_docs`` keeps whole pools
    and the first questions stay answerable on a small subset.
    """
    base = datasets_root(root) / "hotpotqa_hipporag100" / "raw"
    records = _read_json(base / "hotpotqa_train.json")
    corpus: Dict[str, List[str]] = _read_json(base / "hotpotqa_train_corpus.json")
    order: List[str] = []
    seen: set = set()
    for record in records:
        for title, _ in record.get("context", []):
            if title not in seen and title in corpus:
                seen.add(title)
                order.append(title)
    order.extend(t for t in corpus if t not in seen)
    docs: List[Tuple[str, List[str], Dict[str, Any]]] = []
    mappings: Dict[str, Dict[int, int]] = {}
    for title in order:
        units, mapping = _clean_units(corpus[title])
        if not units:
            continue
        mappings[title] = mapping
        docs.append((title, units, {"title": title, "dataset": "hotpotqa"}))
    questions: List[Question] = []
    dropped = 0
    for record in records:
        gold = set()
        for title, sentence in record.get("supporting_facts", []):
            ordinal = mappings.get(title, {}).get(int(sentence))
            if ordinal is None:
                dropped += 1
                continue
            gold.add((title, ordinal))
        units_by_doc = {doc_id: units for doc_id, units, _ in docs}
        questions.append(Question(
            id=f"hotpotqa-{record['_id']}", text=record["question"].strip(), gold=frozenset(gold),
            answer=record.get("answer"),
            metadata={"type": record.get("type"), "level": record.get("level")},
            # The evidence is the whole supporting sentence.
            answer_spans={g: (0, len(units_by_doc[g[0]][g[1]])) for g in gold},
        ))
    if dropped:
        log.warning("HotpotQA: %d supporting facts point at missing or blank sentences", dropped)
    notes = [f"supporting facts not resolvable (dropped): {dropped}"]
    return _finish("hotpotqa", "english", docs, questions, limit_docs, limit_questions, str(base), notes)


# ---------------------------------------------------------------------------------------------
# Long documents: MMLongBench-Doc and QMSum
# ---------------------------------------------------------------------------------------------
# Long-document evaluation sets: MMLongBench-Doc (PDF pages) and QMSum (meeting transcripts).
# 
# Both are read through the ``load.py`` shipped next to each dataset (standard library only), so the
# gold mapping is exactly the one its README documents:
# 
# - ``mmlongbench``: one document per PDF, one unit (page) per page with a text layer (blank pages
#   are dropped before numbering, so unit ``i`` is the ``i``-th non-blank page); gold = the 0-based
#   ``gold_pages`` of ``load()`` (the benchmark's 1-based ``evidence_pages`` minus one), default
#   ``subset='text'`` (173 questions whose evidence a text layer carries; one of them names page 0 of
#   1-based pages, i.e. no page, and is dropped: 172).
# - ``qmsum``: one document per meeting, one unit per ``load.blocks(doc, 150)`` passage of
#   consecutive ``speaker: text`` turns; gold = every block holding a turn of the query's
#   ``relevant_text_span`` ranges (inclusive turn ranges).
# 
# Setting: the questions assume their document is given ("According to the report, ..."), so by
# default every search is filtered to the question's document (``Question.metadata["filters"]``,
# the single-document setting) and only documents that have questions are indexed.
# ``shared_store=True`` indexes every document with text and searches them all (routing included).
# 
# Licenses: MMLongBench-Doc is CC BY-NC and QMSum's transcripts are third-party; their text and
# questions must never enter the repository: write per-question output outside git.

LONGDOC_DATASETS: Tuple[str, ...] = ("mmlongbench", "qmsum")
MMLONGBENCH_DIR = Path("mmlongbench_doc")
QMSUM_DIR = Path("qmsum")
QMSUM_BLOCK_WORDS = 150


def _dataset_module(folder: Path, name: str) -> ModuleType:
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


def load_mmlongbench(
    root: Optional[os.PathLike | str] = None,
    *,
    limit_docs: Optional[int] = None,
    limit_questions: Optional[int] = None,
    shared_store: bool = False,
    subset: str = "text",
    max_doc_pages: Optional[int] = None,
) -> EvalDataset:
    """MMLongBench-Doc: PDF pages as units, page-level gold (see the module docstring).

    ``max_doc_pages`` keeps only documents of at most that many pages (and their questions): a
    cheaper run on a crowded machine (``30``: 43 documents, 883 pages, 142 questions)."""
    folder = datasets_root(root) / MMLONGBENCH_DIR
    module = _dataset_module(folder, "mmlongbench")
    raw_docs, raw_questions = module.load(str(folder / "raw"), subset=subset)
    asked = {q["doc_id"] for q in raw_questions}
    docs: List[Tuple[str, List[str], Dict[str, Any]]] = []
    mappings: Dict[str, Dict[int, int]] = {}
    outlines: Dict[str, List[Dict[str, Any]]] = {}
    for d in raw_docs:
        if not shared_store and d["doc_id"] not in asked:
            continue  # filtered to its own document, a question never sees the others
        if max_doc_pages is not None and len(d["leaves"]) > max_doc_pages:
            continue
        units, mapping = _clean_units([leaf["text"] for leaf in d["leaves"]])
        if not units:
            continue  # an image-only PDF: nothing a text retriever can index
        mappings[d["doc_id"]] = mapping
        outlines[d["doc_id"]] = list(d.get("outline") or [])
        meta = d.get("metadata") or {}
        docs.append((d["doc_id"], units, {"title": str(meta.get("file", d["doc_id"])), "dataset": "mmlongbench",
                                          "doc_type": str(meta.get("doc_type", ""))}))
    questions: List[Question] = []
    dropped = 0
    for q in raw_questions:
        mapping = mappings.get(q["doc_id"])
        gold = {(q["doc_id"], mapping[p]) for p in q["gold_pages"] if mapping and p >= 0 and p in mapping}
        if mapping is None:
            continue  # its document is not indexed (max_doc_pages)
        if len(gold) != len(q["gold_pages"]):
            dropped += 1
            continue
        meta: Dict[str, Any] = {"doc_id": q["doc_id"], "doc_type": q.get("doc_type"),
                                "gold_pages": len(gold)}
        if not shared_store:
            meta["filters"] = {"doc_id": q["doc_id"]}
        questions.append(Question(id=q["qid"], text=q["question"].strip(), gold=frozenset(gold),
                                  answer=str(q.get("answer")), metadata=meta))
    if dropped:
        # One record of the source lists evidence page 0 of 1-based pages: load() makes it page -1,
        # which Python reads as the last page; a gold page outside the document is no gold.
        log.warning("MMLongBench: %d questions dropped (a gold page outside the document or without text)", dropped)
    notes = [f"setting: {'shared store over every document with text' if shared_store else 'single-document (doc_id filter per question)'}",
             f"subset: {subset}", f"max_doc_pages: {max_doc_pages}", f"questions dropped (a gold page outside the document or without text): {dropped}",
             f"documents with an outline: {sum(1 for d, *_ in docs if outlines.get(d))}"]
    ds = _finish("mmlongbench-shared" if shared_store else "mmlongbench", "english", docs, questions,
                 limit_docs, limit_questions, str(folder), notes)
    ds.outlines = {d.id: outlines.get(d.id, []) for d in ds.documents}
    # The PDFs' bookmarks go to the builder as each document's outline, in unit numbers (a
    # bookmark on a page without text moves to the next page that has text).
    ds.documents = [Document(id=d.id, pages=d.pages, metadata=d.metadata,
                             outline=_unit_outline(outlines.get(d.id, []), mappings[d.id]) or None)
                    for d in ds.documents]
    return ds


def _unit_outline(outline: List[Dict[str, Any]], mapping: Dict[int, int]) -> List[Dict[str, Any]]:
    """Outline entries with 0-based raw pages -> entries with 1-based unit numbers."""
    kept = sorted(mapping)
    out = []
    for entry in outline:
        page = next((p for p in kept if p >= int(entry.get("page", -1)) >= 0), None)
        title = str(entry.get("title") or "").strip()
        if page is None or not title:
            continue
        out.append({"title": title, "page": mapping[page] + 1, "level": max(0, int(entry.get("level", 0)))})
    return out


def load_qmsum(
    root: Optional[os.PathLike | str] = None,
    *,
    limit_docs: Optional[int] = None,
    limit_questions: Optional[int] = None,
    shared_store: bool = False,
    block_words: int = QMSUM_BLOCK_WORDS,
) -> EvalDataset:
    """QMSum test split: 150-word blocks of speaker turns as units, multi-span gold in blocks."""
    folder = datasets_root(root) / QMSUM_DIR
    module = _dataset_module(folder, "qmsum")
    raw_docs, raw_questions = module.load(str(folder / "raw" / "test"))
    docs: List[Tuple[str, List[str], Dict[str, Any]]] = []
    block_of: Dict[str, Dict[str, int]] = {}
    for d in raw_docs:
        blocks, turn_to_block = module.blocks(d, block_words)
        units, mapping = _clean_units([b["text"] for b in blocks])
        ordinal = {b["leaf_id"]: mapping[j] for j, b in enumerate(blocks) if j in mapping}
        block_of[d["doc_id"]] = {t: ordinal[b] for t, b in turn_to_block.items() if b in ordinal}
        docs.append((d["doc_id"], units, {"title": d["doc_id"], "dataset": "qmsum", "domain": d.get("domain", "")}))
    questions: List[Question] = []
    for q in raw_questions:
        blocks_map = block_of.get(q["doc_id"], {})
        gold = {(q["doc_id"], blocks_map[t]) for t in q["gold_leaf_ids"] if t in blocks_map}
        if not gold:
            continue
        meta: Dict[str, Any] = {"doc_id": q["doc_id"], "gold_spans": len(q.get("gold_spans") or []),
                                "gold_turns": len(q["gold_leaf_ids"])}
        if not shared_store:
            meta["filters"] = {"doc_id": q["doc_id"]}
        questions.append(Question(id=q["qid"], text=q["question"].strip(), gold=frozenset(gold), metadata=meta))
    notes = [f"setting: {'shared store' if shared_store else 'single-document (doc_id filter per question)'}",
             f"units: load.blocks(doc, {block_words}) passages of speaker turns"]
    return _finish("qmsum-shared" if shared_store else "qmsum", "english", docs, questions, limit_docs,
                   limit_questions, str(folder), notes)


# ---------------------------------------------------------------------------------------------
# FinanceBench (development split): many similar filings, questions that name which one
# ---------------------------------------------------------------------------------------------
# Read through the dataset's own ``load.py``: one document per filing, as a user's folder of PDFs
# gives them: ``Document(id=<file name>, pages=..., metadata={company, doc_type, doc_period,
# gics_sector})`` (the file name, e.g. ``PEPSICO_2022_10K``, is what such a PDF is called; the
# download link and page count are left out: a user's PDF does not carry them). One unit per page
# with a text layer (blank pages dropped before numbering, as for MMLongBench); gold = the 0-based
# evidence pages. The default setting is the shared store (every filing in one index, no filter:
# what a user with a folder of filings gets); ``shared_store=False`` filters each question to its
# filing (``doc_id``). CC BY-NC: questions and per-question output stay outside git.

FINANCEBENCH_DIR = Path("financebench_dev")
FINANCEBENCH_METADATA: Tuple[str, ...] = ("company", "doc_type", "doc_period", "gics_sector")


def load_financebench(
    root: Optional[os.PathLike | str] = None,
    *,
    limit_docs: Optional[int] = None,
    limit_questions: Optional[int] = None,
    shared_store: bool = True,
) -> EvalDataset:
    """FinanceBench (``financebench_dev``): SEC filings and earnings releases, page-level gold.

    ``shared_store`` (default) indexes every filing and searches them all; ``False`` is the
    single-document setting (each question filtered to its own filing by ``doc_id``)."""
    folder = datasets_root(root) / FINANCEBENCH_DIR
    module = _dataset_module(folder, "financebench")
    raw_docs, raw_questions = module.load(str(folder / "raw"))
    docs: List[Tuple[str, List[str], Dict[str, Any]]] = []
    mappings: Dict[str, Dict[int, int]] = {}
    for d in raw_docs:
        units, mapping = _clean_units([leaf["text"] for leaf in d["leaves"]])
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
        meta = {"doc_id": q["doc_id"], "question_type": q.get("question_type"), "gold_pages": len(gold)}
        if not shared_store:
            meta["filters"] = {"doc_id": q["doc_id"]}
        questions.append(Question(id=q["qid"], text=q["question"].strip(), gold=frozenset(gold),
                                  answer=str(q.get("answer")), metadata=meta))
    if dropped:
        log.warning("FinanceBench: %d questions dropped (their filing or a gold page has no text)", dropped)
    notes = [f"setting: {'shared store (every filing, no filter)' if shared_store else 'single document (doc_id filter per question)'}",
             f"questions dropped (filing or gold page without text): {dropped}"]
    return _finish("financebench" if shared_store else "financebench-single", "english", docs, questions,
                   limit_docs, limit_questions, str(folder), notes)


#: Datasets whose questions name their document: ``shared_store`` is a choice (None: the default below).
SHARED_STORE_DEFAULT: Dict[str, bool] = {"mmlongbench": False, "qmsum": False, "financebench": True}


def load_dataset(
    name: str,
    root: Optional[os.PathLike | str] = None,
    *,
    limit_docs: Optional[int] = None,
    limit_questions: Optional[int] = None,
    shared_store: Optional[bool] = None,
    max_doc_pages: Optional[int] = None,
) -> EvalDataset:
    """Load a dataset by name: ``covidqa``, ``xquad-en``, ``xquad-ru``, ``hotpotqa``, ``mmlongbench``,
    ``qmsum`` or ``financebench``. For the last three ``shared_store`` chooses between one store of
    every document and each question filtered to its own (None: MMLongBench and QMSum filter,
    FinanceBench shares: :data:`SHARED_STORE_DEFAULT`)."""
    shared = SHARED_STORE_DEFAULT.get(name, False) if shared_store is None else bool(shared_store)
    if name == "financebench":
        return load_financebench(root, limit_docs=limit_docs, limit_questions=limit_questions, shared_store=shared)
    if name in ("mmlongbench", "qmsum"):
        if name == "mmlongbench":
            return load_mmlongbench(root, limit_docs=limit_docs, limit_questions=limit_questions,
                                    shared_store=shared, max_doc_pages=max_doc_pages)
        return load_qmsum(root, limit_docs=limit_docs, limit_questions=limit_questions, shared_store=shared)
    if name == "covidqa":
        return load_covidqa(root, limit_docs=limit_docs, limit_questions=limit_questions)
    if name in ("xquad-en", "xquad-ru"):
        return load_xquad(name[-2:], root, limit_docs=limit_docs, limit_questions=limit_questions)
    if name == "hotpotqa":
        return load_hotpotqa(root, limit_docs=limit_docs, limit_questions=limit_questions)
    raise DatasetError(f"Unknown dataset {name!r}; use one of {', '.join(DATASET_NAMES)}.")
