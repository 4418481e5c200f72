"""Ingestion throughput and memory: against the bare encoder (the floor) or a naive pipeline.

    python benchmarks/ingest.py --corpus mmlongbench [--passage-words 120|none] [--split-pages-over 200|none] [--threads 1]
    python benchmarks/ingest.py --corpus mmlongbench --ab-max-tokens none 128 [--rounds 2]   # encoder window A/B
    python benchmarks/ingest.py [--corpus covidqa] [--papers 20] [--engine edge|local]

``--corpus mmlongbench`` (the floor, issue 17): a fixed subset of ~300 text pages of
MMLongBench-Doc (documents of <= 40 pages, in file-name order, until 300 text pages; image-only
decks left out), in one process: the bare fastembed encoder on exactly the texts the index
embeds (the same length-sorted batches), timed before and after our ``add_documents`` into a
fresh Edge index; the share of wall time per phase (read, building, summarising, dense, bm25,
writing, sweeping) and peak RSS. Last line:
``ingest_vs_encoder_limit=<ratio> pages_per_s=<x> peak_rss_mb=<y>`` (ratio = the encoder's time
over ours; 1.0 would be an ingest that costs nothing but the dense encoder). No page text is printed.

``--corpus covidqa`` (the default):
both sides ingest the first N COVID-QA papers (leaves = the dataset's paragraphs) into the same
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
MMLB = SHARED / "datasets" / "mmlongbench_doc" / "raw"
MMLB_PAGES, MMLB_MAX_DOC_PAGES, MMLB_MIN_CHARS = 300, 40, 20


def load_mmlongbench():
    """The fixed subset: documents of <= 40 pages in file-name order until 300 text pages."""
    from drag_knee_retriever import Document

    image_only = {p.stem for p in (MMLB / "pdfs_image_only").glob("*.pdf")}
    docs, total = [], 0
    for path in sorted((MMLB / "pages").glob("*.json")):
        if path.stem in image_only:
            continue
        pages = [p for p in json.loads(path.read_text(encoding="utf-8")) if len(p.strip()) >= MMLB_MIN_CHARS]
        if not pages or len(pages) > MMLB_MAX_DOC_PAGES:
            continue
        docs.append(Document(id=path.stem, pages=pages))
        total += len(pages)
        if total >= MMLB_PAGES:
            break
    return docs, total


def bare_encoder_seconds(index, texts) -> float:
    """fastembed alone on ``texts``: the index's own ONNX model and batches, none of our code."""
    from drag_knee_retriever.embeddings.fastembed import _batches

    model, cfg = index.encoder.dense._model, index.encoder.dense.config
    prefix = index.encoder.dense.passage_prefix
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    started = time.perf_counter()
    for batch in _batches(order, texts, cfg.batch_size, cfg.max_batch_chars):
        list(model.passage_embed([prefix + texts[i] for i in batch], batch_size=len(batch)))
    return time.perf_counter() - started


def floor_run(args) -> None:
    """--corpus mmlongbench: the bare encoder, our ingest, the bare encoder again; one process."""
    os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL))
    from drag_knee_retriever import BuildConfig, DragKneeIndex, EmbeddingConfig, EncoderRuntime, StoreConfig
    from drag_knee_retriever.build._builder import build_document_trees
    from drag_knee_retriever.build._ingest import PHASES

    started = time.perf_counter()
    docs, pages = load_mmlongbench()
    read_s = time.perf_counter() - started
    # Unset: the BuildConfig default; "none": whole pages (passage_words) / every page longer than
    # one passage (split_pages_over).
    chosen = {name: None if value == "none" else int(value)
              for name, value in (("passage_words", args.passage_words), ("split_pages_over", args.split_pages_over))
              if value is not None}
    build = BuildConfig(**chosen)
    index = DragKneeIndex(":memory:", embedding=EmbeddingConfig(runtime=EncoderRuntime(threads=args.threads)), build=build, store=StoreConfig(collection="floor", engine="edge"))
    trees = build_document_trees(docs, index.build_config, index.summarizer)
    texts = index.vectorizer.dense_inputs([n for t in trees for n in t.nodes])
    bare_encoder_seconds(index, texts[:16])  # warm the ONNX session up (first calls allocate)
    bare_before = bare_encoder_seconds(index, texts)
    report = index.add_documents(docs)
    bare_after = bare_encoder_seconds(index, texts)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    assert report.pages == pages, (report.pages, pages)
    bare = (bare_before + bare_after) / 2
    wall = read_s + report.seconds
    print(f"MMLongBench-Doc subset: {len(docs)} documents, {pages} text pages, {report.nodes_written} nodes, "
          f"{len(texts)} texts for the dense encoder; passage_words={build.passage_words}, "
          f"split_pages_over={build.split_pages_over}, threads={args.threads}, "
          f"{os.cpu_count()} cores, engine=edge")
    print(f"bare encoder (fastembed, same texts and batches): {bare_before:.1f} s before, {bare_after:.1f} s after "
          f"our ingest -> {pages / bare:.2f} pages/s")
    print(f"our ingest (add_documents): {report.seconds:.1f} s -> {pages / report.seconds:.2f} pages/s")
    print("share of wall time (read + ingest):")
    shares = {"read": read_s, **{p: report.phase_seconds.get(p, 0.0) for p in PHASES}}
    shares["other"] = wall - sum(shares.values())
    for phase, seconds in shares.items():
        print(f"  {phase:<12} {seconds:7.2f} s {100 * seconds / wall:5.1f}%")
    print(f"dense phase vs bare encoder: {report.phase_seconds.get('dense', 0.0) / bare:.3f}")
    print(f"ingest_vs_encoder_limit={bare / report.seconds:.3f} pages_per_s={pages / report.seconds:.2f} "
          f"peak_rss_mb={peak:.0f}")


def window_ab(args) -> None:
    """--ab-max-tokens A B: ``add_documents`` of the same subset with EmbeddingConfig(max_tokens=A) and
    (max_tokens=B), alternated for ``--rounds`` rounds in one process (fresh in-memory Edge index each time,
    no bare-encoder timing). Prints pages/s (wall) and process CPU-seconds per page for each, and the ratios."""
    os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL))
    from drag_knee_retriever import DragKneeIndex, EmbeddingConfig, EncoderRuntime, StoreConfig

    docs, pages = load_mmlongbench()
    windows = [None if w == "none" else int(w) for w in args.ab_max_tokens]
    results = {w: [] for w in windows}
    for r in range(args.rounds):
        for w in (windows if r % 2 == 0 else windows[::-1]):  # A B, B A, ...: neither side always first
            index = DragKneeIndex(":memory:", embedding=EmbeddingConfig(max_tokens=w, runtime=EncoderRuntime(threads=args.threads)),
                                  store=StoreConfig(collection=f"ab{r}_{w}", engine="edge"))
            cpu0, wall0 = time.process_time(), time.perf_counter()
            report = index.add_documents(docs)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            index.close()
            results[w].append((wall, cpu))
            print(f"round {r + 1} max_tokens={w}: {wall:.1f} s wall, {cpu:.1f} CPU-s -> {pages / wall:.2f} pages/s, "
                  f"{cpu / pages:.3f} CPU-s/page, dense {report.phase_seconds.get('dense', 0.0):.1f} s; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    base = windows[0]
    print(f"MMLongBench-Doc subset: {len(docs)} documents, {pages} text pages, threads={args.threads}, "
          f"{os.cpu_count()} cores, engine=edge, {args.rounds} alternated rounds")
    for w in windows:
        wall = sum(x for x, _ in results[w]); cpu = sum(y for _, y in results[w])
        bw = sum(x for x, _ in results[base]); bc = sum(y for _, y in results[base])
        print(f"max_tokens={w}: pages_per_s={pages * len(results[w]) / wall:.2f} "
              f"cpu_s_per_page={cpu / (pages * len(results[w])):.3f} speed_x={bw / wall:.2f} cpu_x={cpu / bc:.2f}")


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
    from drag_knee_retriever import DragKneeIndex, EmbeddingConfig, StoreConfig

    docs, questions = load(papers)
    max_tokens = int(os.environ["DRAG_KNEE_MAX_TOKENS"]) if os.environ.get("DRAG_KNEE_MAX_TOKENS") else None
    index = DragKneeIndex(embedding=EmbeddingConfig(max_tokens=max_tokens), store=StoreConfig(collection=f"bench_{side}", engine=engine))
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

    from drag_knee_retriever.build._builder import build_document_trees
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
    parser.add_argument("--corpus", choices=["covidqa", "mmlongbench"], default="covidqa")
    parser.add_argument("--passage-words", help="mmlongbench: BuildConfig(passage_words=N), 'none' for whole pages "
                        "(default: BuildConfig's default)")
    parser.add_argument("--split-pages-over", help="mmlongbench: BuildConfig(split_pages_over=N) or 'none' "
                        "(default: BuildConfig's default)")
    parser.add_argument("--threads", type=int, default=1, help="mmlongbench: EmbeddingConfig(threads=N)")
    parser.add_argument("--papers", type=int, default=20)
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--questions", type=int, default=200, help="questions used for the quality check")
    parser.add_argument("--ab-max-tokens", nargs="+", metavar="N",
                        help="mmlongbench: ingest A/B of EmbeddingConfig(max_tokens=N) ('none' = today's default), "
                        "alternated in one process")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the --ab-max-tokens A/B")
    parser.add_argument("--side", choices=["ours", "naive"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.corpus == "mmlongbench" and args.ab_max_tokens:
        window_ab(args)
        return
    if args.corpus == "mmlongbench":
        floor_run(args)
        return
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
