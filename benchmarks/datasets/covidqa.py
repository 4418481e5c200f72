"""COVID-QA (2020-04-23 snapshot): one document per paper, one leaf per non-blank line."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .common import (GoldLeaf, Question, EvalDataset, dataset, datasets_root, log, make_dataset, read_json)

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


@dataset("covidqa")
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
    data = read_json(path)
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
    return make_dataset("covidqa", "english", docs, questions, limit_docs, limit_questions, str(path), notes)
