"""QMSum (test split): 150-word blocks of speaker turns as units, multi-span gold in blocks.

Read through the ``load.py`` shipped with the dataset: one document per meeting, one unit per
``load.blocks(doc, 150)`` passage of consecutive ``speaker: text`` turns; gold = every block holding
a turn of the query's ``relevant_text_span`` ranges (inclusive turn ranges). By default every
search is filtered to the question's document (see :mod:`.mmlongbench` for the setting); QMSum
quotes third-party transcripts: write per-question output outside git.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .common import EvalDataset, Question, clean_units, dataset, dataset_module, datasets_root, make_dataset

QMSUM_DIR = Path("qmsum")
QMSUM_BLOCK_WORDS = 150


@dataset("qmsum")
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
    module = dataset_module(folder, "qmsum")
    raw_docs, raw_questions = module.load(str(folder / "raw" / "test"))
    docs: List[Tuple[str, List[str], Dict[str, Any]]] = []
    block_of: Dict[str, Dict[str, int]] = {}
    for d in raw_docs:
        blocks, turn_to_block = module.blocks(d, block_words)
        units, mapping = clean_units([b["text"] for b in blocks])
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
    return make_dataset("qmsum-shared" if shared_store else "qmsum", "english", docs, questions, limit_docs,
                   limit_questions, str(folder), notes)
