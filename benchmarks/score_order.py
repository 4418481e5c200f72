"""Issue 40 item 3: is the public score monotone (never rising) along the returned ranking and in
[0, 1], for every search method? And (item 4) does ``fill=True`` return ``max_results`` results?

    DRAG_KNEE_DATASETS=... python benchmarks/score_order.py covidqa:30 hotpotqa:30 xquad-en:10 \\
        --questions 60 --embedding-cache DIR

Per dataset (a small in-memory index of its first documents, the offline model) and per method,
over every question: the results, the adjacent pairs whose score rises along the rank (a
violation), the scores outside [0, 1] (a violation), and for the fill mode the searches that
returned fewer than ``k`` results while the index held more leaves. Counts only (no question
texts). The methods: the tree search (knee, sensitive_knee, fixed, branch, knee without its focus
step, knee under a 500-word budget, knee filled to k=10), flat hybrid / dense / page search
(k=10), and the two frameworks' retrievers over the same index (LangChain ``drag_score``,
LlamaIndex ``NodeWithScore.score``). Run it with another checkout on ``PYTHONPATH`` to compare
(a mode that checkout lacks is reported as skipped).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.datasets import load_dataset  # noqa: E402


def _methods(index: Any) -> Dict[str, Callable[[str], List[float]]]:
    """Each method as: question -> its scores in rank order."""
    def tree(**options: Any) -> Callable[[str], List[float]]:
        return lambda q: [h.score for h in sorted(index.search(q, **options).nodes, key=lambda h: h.rank)]

    def flat(**options: Any) -> Callable[[str], List[float]]:
        return lambda q: [h.score for h in index.flat_search(q, k=10, **options)]

    methods: Dict[str, Callable[[str], List[float]]] = {
        "knee": tree(method="knee"), "sensitive_knee": tree(method="sensitive_knee"),
        "fixed": tree(method="fixed"), "branch": tree(method="branch"),
        "knee_no_focus": tree(method="knee", focus=False), "knee_w500": tree(method="knee", max_tokens=500),
        "knee_fill_k10": tree(method="knee", max_results=10, fill=True),
        "flat_hybrid_k10": flat(), "flat_dense_k10": flat(mode="dense"), "flat_page_k10": flat(unit="page"),
    }
    try:
        from drag_knee_retriever.integrations.langchain import DragKneeRetriever as LangChainRetriever
        from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever as LlamaRetriever

        lc = LangChainRetriever(index=index)
        li = LlamaRetriever(index)
        methods["langchain_retriever"] = lambda q: [d.metadata["drag_score"] for d in lc.invoke(q)]
        methods["llamaindex_retriever"] = lambda q: [n.score for n in li.retrieve(q)]
    except ImportError:
        pass
    return methods


def check(spec: str, questions: int, cache: Any) -> Dict[str, Any]:
    from drag_knee_retriever import DragKneeIndex
    from drag_knee_retriever.config import EmbeddingConfig
    from drag_knee_retriever.embeddings import Encoder
    from drag_knee_retriever.eval.encoding import CachingEncoder

    name, _, limit = spec.partition(":")
    ds = load_dataset(name, limit_docs=int(limit) if limit else 30, limit_questions=questions)
    encoder = CachingEncoder(Encoder(EmbeddingConfig(language=ds.language)), cache)
    index = DragKneeIndex(":memory:", embedding=encoder)
    index.add_documents(ds.documents)
    leaves = index.stats()["leaves"]
    rows: Dict[str, Any] = {}
    for method, run in _methods(index).items():
        results = rising = outside = short = 0
        try:
            for question in ds.questions:
                scores = run(question.text)
                results += len(scores)
                rising += sum(1 for a, b in zip(scores, scores[1:]) if b > a + 1e-12)
                outside += sum(1 for s in scores if not 0.0 <= s <= 1.0)
                short += method == "knee_fill_k10" and len(scores) < min(10, leaves)
        except TypeError as exc:  # a checkout without this mode (e.g. fill=)
            rows[method] = {"skipped": str(exc)[:80]}
            continue
        rows[method] = {"questions": len(ds.questions), "results": results, "rising_pairs": rising,
                        "outside_unit": outside, **({"short_of_k": short} if method == "knee_fill_k10" else {})}
    index.close()
    return {"dataset": name, "documents": len(ds.documents), "leaves": leaves, "methods": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", help="name or name:LIMIT_DOCS (default 30 documents)")
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--embedding-cache", default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = [check(spec, args.questions, args.embedding_cache) for spec in args.datasets]
    if args.json:
        print(json.dumps(report, indent=1))
    total = 0
    for ds in report:
        print(f"\n{ds['dataset']}: {ds['documents']} documents, {ds['leaves']} leaves")
        print(f"{'method':24} {'questions':>9} {'results':>8} {'rising':>7} {'outside':>8} {'short':>6}")
        for method, row in ds["methods"].items():
            if "skipped" in row:
                print(f"{method:24} skipped ({row['skipped']})")
                continue
            bad = row["rising_pairs"] + row["outside_unit"] + row.get("short_of_k", 0)
            total += bad
            print(f"{method:24} {row['questions']:>9} {row['results']:>8} {row['rising_pairs']:>7} "
                  f"{row['outside_unit']:>8} {row.get('short_of_k', '-'):>6}")
    print(f"\nviolations: {total}")
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
