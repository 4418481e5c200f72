"""XQuAD English and Russian: one document per article, one leaf per paragraph."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .common import DatasetError, EvalDataset, Question, clean_units, dataset, datasets_root, log, make_dataset, read_json
from .covidqa import resolve_answer_span

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
    data = read_json(path)
    docs: List[Tuple[str, List[str], Dict[str, Any]]] = []
    questions: List[Question] = []
    for a_index, article in enumerate(data.get("data", [])):
        doc_id = f"xquad-{language}-a{a_index}"
        raw = [p["context"] for p in article.get("paragraphs", [])]
        units, mapping = clean_units(raw)
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
    return make_dataset(name, lang, docs, questions, limit_docs, limit_questions, str(path), [])


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


@dataset("xquad-en")
def load_xquad_en(root: Optional[os.PathLike | str] = None, *, limit_docs: Optional[int] = None,
                  limit_questions: Optional[int] = None) -> EvalDataset:
    """XQuAD English (see :func:`load_xquad`)."""
    return load_xquad("en", root, limit_docs=limit_docs, limit_questions=limit_questions)


@dataset("xquad-ru")
def load_xquad_ru(root: Optional[os.PathLike | str] = None, *, limit_docs: Optional[int] = None,
                  limit_questions: Optional[int] = None) -> EvalDataset:
    """XQuAD Russian, with the Russian BM25 (see :func:`load_xquad`)."""
    return load_xquad("ru", root, limit_docs=limit_docs, limit_questions=limit_questions)
