"""Ingestion throughput and memory: our pipeline against a naive fastembed baseline, same run.

    python benchmarks/ingest.py [--papers 20] [--engine edge|local]

Both sides ingest the first N COVID-QA papers (leaves = the dataset's paragraphs) into the same
kind of store, each in its own subprocess so that peak memory (max RSS) is measured separately:

- ours: ``DragKneeIndex.add_documents`` (length-sorted small batches; inner nodes embedded from
  their short summaries and mixed with the centroid of their children);
- naive: the same trees, every node's text embedded with fastembed as a tutorial would use it
  (``embed(texts, batch_size=32)``, nodes in input order), BM25 the same way, same upserts.

Quality check: both indexes answer the papers' questions by flat hybrid top-5 over leaves and by
DRAG "knee"; the share of questions whose gold paragraph is returned must not drop.
The last line reads ``ingest_speedup_vs_naive=<x> nodes_per_s=<y> peak_rss_mb=<z>``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DRAG_KNEE_SHARED", REPO.parent / "shared"))
COVID = SHARED / "datasets" / "covidqa_200423" / "raw" / "200423_covidQA.json"
MODEL = SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"


def load(papers: int):
    """Documents (one page per non-blank line, as the dataset README maps leaves) and questions."""
    from drag_knee_retriever import Document

    data = json.loads(COVID.read_text())
    docs, questions = [], []
    for article in data["data"][:papers]:
        paragraph = article["paragraphs"][0]
        context = paragraph["context"]
        lines, offsets, position = [], [], 0
        for line in context.split("\n"):
            if line.strip():
                lines.append(line)
                offsets.append((position, position + len(line)))
            position += len(line) + 1
        doc_id = f"covid-{paragraph['document_id']}"
        docs.append(Document(id=doc_id, pages=lines))
        for qa in paragraph["qas"]:
            answer = qa["answers"][0]
            start = context.find(answer["text"].strip(), max(0, answer["answer_start"] - 10))
            start = answer["answer_start"] if start < 0 else start
            end = start + len(answer["text"].strip())
            gold = {i for i, (a, b) in enumerate(offsets) if a < end and start < b}
            questions.append((qa["question"], doc_id, gold))
    return docs, questions


def quality(index, questions):
    """Share of questions whose gold paragraph is returned: flat hybrid top-5 and DRAG knee."""
    flat_hits = knee_hits = 0
    for question, doc_id, gold in questions:
        vectors = index.encoder.encode_query(question)
        flat = index.flat_search(question, k=5, query_vectors=vectors)
        flat_hits += any(h.doc_id == doc_id and h.span.first_leaf in gold for h in flat)
        knee = index.search(question, method="knee", query_vectors=vectors)
        knee_hits += any(h.doc_id == doc_id and any(h.span.first_leaf <= g <= h.span.last_leaf for g in gold)
                         for h in knee.nodes)
    return flat_hits / len(questions), knee_hits / len(questions)


def run_side(side: str, papers: int, engine: str, questions_limit: int) -> dict:
    os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL))
    from drag_knee_retriever import DragKneeIndex, EmbeddingConfig

    docs, questions = load(papers)
    max_tokens = int(os.environ["DRAG_KNEE_MAX_TOKENS"]) if os.environ.get("DRAG_KNEE_MAX_TOKENS") else None
    index = DragKneeIndex(engine=engine, collection=f"bench_{side}", embedding=EmbeddingConfig(max_tokens=max_tokens))
    started = time.perf_counter()
    if side == "ours":
        report = index.add_documents(docs)
        nodes = report.nodes_written
    else:
        nodes = naive_ingest(index, docs)
    seconds = time.perf_counter() - started
    flat, knee = quality(index, questions[:questions_limit])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"side": side, "nodes": nodes, "seconds": seconds, "peak_rss_mb": peak,
            "flat_top5_hit": flat, "knee_hit": knee, "questions": min(len(questions), questions_limit)}


def naive_ingest(index, docs) -> int:
    """The tutorial way: build the same trees, embed every node's text with batch 32 in order."""
    import numpy as np
    from fastembed import SparseTextEmbedding, TextEmbedding

    from drag_knee_retriever.builder import build_document_trees
    from drag_knee_retriever.store import NodeRecord

    dense_model = TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", specific_model_path=os.environ["DRAG_KNEE_MODEL_PATH"])
    sparse_model = SparseTextEmbedding("Qdrant/bm25", specific_model_path=str(REPO / "drag_knee_retriever" / "data" / "stopwords"))
    trees = build_document_trees(docs, index.build_config, index.summarizer)
    nodes = [n for t in trees for n in t.nodes]
    texts = [n.text for n in nodes]
    dense = list(dense_model.embed(texts, batch_size=32))
    sparse = list(sparse_model.embed(texts, batch_size=32))
    records = [NodeRecord(node=n, dense=np.asarray(d), sparse_indices=s.indices, sparse_values=s.values)
               for n, d, s in zip(nodes, dense, sparse)]
    index.store.upsert(records)
    return len(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=20)
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--questions", type=int, default=200, help="questions used for the quality check")
    parser.add_argument("--side", choices=["ours", "naive"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(run_side(args.side, args.papers, args.engine, args.questions)))
        return
    results = {}
    for side in ("naive", "ours"):
        out = subprocess.run(
            [sys.executable, __file__, "--side", side, "--papers", str(args.papers), "--engine", args.engine,
             "--questions", str(args.questions)],
            capture_output=True, text=True, check=False,
        )
        if out.returncode != 0:
            sys.exit(f"{side} run failed:\n{out.stderr[-3000:]}")
        results[side] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"COVID-QA, first {args.papers} papers; engine={args.engine}; machine: {os.cpu_count()} cores")
    print(f"{'side':<6} {'nodes':>6} {'seconds':>8} {'nodes/s':>8} {'peak MB':>8} {'flat@5 hit':>10} {'knee hit':>9}")
    for side in ("naive", "ours"):
        r = results[side]
        print(f"{side:<6} {r['nodes']:>6} {r['seconds']:>8.1f} {r['nodes'] / r['seconds']:>8.1f} {r['peak_rss_mb']:>8.0f} "
              f"{r['flat_top5_hit']:>10.3f} {r['knee_hit']:>9.3f}")
    ours, naive = results["ours"], results["naive"]
    speedup = (ours["nodes"] / ours["seconds"]) / (naive["nodes"] / naive["seconds"])
    print(f"quality over {ours['questions']} questions: flat@5 {naive['flat_top5_hit']:.3f} -> {ours['flat_top5_hit']:.3f}, "
          f"knee {naive['knee_hit']:.3f} -> {ours['knee_hit']:.3f}")
    print(f"ingest_speedup_vs_naive={speedup:.2f} nodes_per_s={ours['nodes'] / ours['seconds']:.1f} "
          f"peak_rss_mb={ours['peak_rss_mb']:.0f}")


if __name__ == "__main__":
    main()
