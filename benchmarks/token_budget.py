"""What a budget returns in model tokens: ``search(q, max_tokens=B)`` against ``search(q, max_words=B)``.

    DRAG_KNEE_DATASETS=... python benchmarks/token_budget.py --dataset covidqa --limit-docs 30 \\
        --embedding-cache EMB --budget 500 --budget 2000

Counts every returned text with the all-MiniLM-L6-v2 word-piece tokenizer (special tokens left out):
the unit of ``max_tokens`` for the default model. ``max_words`` is what ``max_tokens`` counted before
issue 40 (the same results, bit for bit).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.datasets import load_dataset  # noqa: E402
from drag_knee_retriever import DragKneeIndex, EmbeddingConfig  # noqa: E402
from drag_knee_retriever.embeddings import Encoder  # noqa: E402
from drag_knee_retriever.eval.encoding import CachingEncoder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="covidqa")
    parser.add_argument("--limit-docs", type=int, default=30)
    parser.add_argument("--embedding-cache", type=Path, default=None)
    parser.add_argument("--budget", type=int, action="append", default=None)
    args = parser.parse_args()
    ds = load_dataset(args.dataset, limit_docs=args.limit_docs)
    encoder = CachingEncoder(Encoder(EmbeddingConfig(language=ds.language)), args.embedding_cache)
    with DragKneeIndex(":memory:", embedding=encoder) as index:
        index.add_documents(ds.documents)
        unit = index.encoder.token_unit
        questions = [q.text for q in ds.questions]
        print(f"| budget | keyword | model tokens: mean | max | over the budget | words: mean |\n|---:|---|---:|---:|---:|---:|")
        for budget in args.budget or [500, 2000]:
            for keyword in ("max_tokens", "max_words"):
                tokens, words = [], []
                for question in questions:
                    nodes = index.search(question, **{keyword: budget}).nodes
                    tokens.append(sum(unit.count(n.text) for n in nodes))
                    words.append(sum(len(n.text.split()) for n in nodes))
                over = sum(t > budget for t in tokens)
                print(f"| {budget} | `{keyword}` | {statistics.mean(tokens):.0f} | {max(tokens)} | {over}/{len(tokens)} "
                      f"| {statistics.mean(words):.0f} |")


if __name__ == "__main__":
    main()
