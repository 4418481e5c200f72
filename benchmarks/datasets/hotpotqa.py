"""HotpotQA (HippoRAG's 100-question distractor sample): one document per title, one leaf per sentence."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from .common import EvalDataset, Question, clean_units, dataset, datasets_root, log, make_dataset, read_json

@dataset("hotpotqa")
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
    records = read_json(base / "hotpotqa_train.json")
    corpus: Dict[str, List[str]] = read_json(base / "hotpotqa_train_corpus.json")
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
        units, mapping = clean_units(corpus[title])
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
    return make_dataset("hotpotqa", "english", docs, questions, limit_docs, limit_questions, str(base), notes)
