"""MMLongBench-Doc: PDF pages as units, page-level gold; one of the two long-document sets (with QMSum).

Both are read through the ``load.py`` shipped next to each dataset (standard library only), so the
gold mapping is exactly the one its README documents:

- ``mmlongbench``: one document per PDF, one unit (page) per page with a text layer (blank pages
  are dropped before numbering, so unit ``i`` is the ``i``-th non-blank page); gold = the 0-based
  ``gold_pages`` of ``load()`` (the benchmark's 1-based ``evidence_pages`` minus one), default
  ``subset='text'`` (173 questions whose evidence a text layer carries; one of them names page 0 of
  1-based pages, i.e. no page, and is dropped: 172).
- ``qmsum``: one document per meeting, one unit per ``load.blocks(doc, 150)`` passage of
  consecutive ``speaker: text`` turns; gold = every block holding a turn of the query's
  ``relevant_text_span`` ranges (inclusive turn ranges).

Setting: the questions assume their document is given ("According to the report, ..."), so by
default every search is filtered to the question's document (``Question.metadata["filters"]``,
the single-document setting) and only documents that have questions are indexed.
``shared_store=True`` indexes every document with text and searches them all (routing included).

Licenses: MMLongBench-Doc is CC BY-NC and QMSum's transcripts are third-party; their text and
questions must never enter the repository: write per-question output outside git.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from drag_knee_retriever.model._nodes import Document

from .common import EvalDataset, Question, clean_units, dataset, dataset_module, datasets_root, log, make_dataset

MMLONGBENCH_DIR = Path("mmlongbench_doc")


@dataset("mmlongbench")
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
    module = dataset_module(folder, "mmlongbench")
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
        units, mapping = clean_units([leaf["text"] for leaf in d["leaves"]])
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
    ds = make_dataset("mmlongbench-shared" if shared_store else "mmlongbench", "english", docs, questions,
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
