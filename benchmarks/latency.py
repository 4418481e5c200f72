"""Search latency: DRAG methods against flat hybrid top-10, same index, same questions, same run.

    python benchmarks/latency.py [--papers 20] [--questions 120] [--engine auto|edge|local] [--index DIR]
    python benchmarks/latency.py ... --budget 500 --budget 2000   # also search(max_words=N)
    python benchmarks/latency.py --dataset mmlongbench --engine edge --index DIR \
        --embedding-cache DIR [--filtered]
    python benchmarks/latency.py --dataset financebench --engine edge --index DIR --embedding-cache DIR [--filtered]

Builds one collection from the first N COVID-QA papers (one leaf per paragraph) — or, with
``--dataset mmlongbench``, every MMLongBench-Doc page with a text layer in one store (``Document(pages=...)``
per PDF, the default build), or with ``--dataset financebench`` the 48 filings in one store (as the eval
loads them) — or reuses the folder given by --index (documents already there
unchanged are skipped by ingest), then times, per question and including query encoding: (a) flat
hybrid RRF top-10 over leaves, (b) the default method (``index.search(q)``) and each DRAG method.
Calls are interleaved question by question so machine noise hits all methods alike. Prints median
and p95 and the ratio b/a; the last line reads ``knee_vs_flat_latency_ratio=<x> knee_median_ms=<y>
default_vs_flat_latency_ratio=<z>``. ``--filtered`` restricts every search to the question's
document (the single-document setting); ``--embedding-cache`` keeps passage vectors on disk so a
rebuild on a changed default re-encodes only new texts. ``--budget N`` also times
``index.search(q, max_words=N)`` (rows ``max_words=N``), against the same flat hybrid top-10.
``knee_plain_cut`` is the default with the cut before near-best / standout (``SearchConfig(near_best=None,
standout=None)``), timed in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))  # benchmarks.datasets
from ingest import MODEL, load  # noqa: E402

METHODS = ["fixed", "knee", "sensitive_knee", "branch"]
# The knee with the focus of before the magnitude default (RRF over the regions' leaves only), timed
# next to today's default so the cost of the magnitude focus is a ratio in the same run.
RRF_FOCUS = "knee_rrf_focus"
NO_IDENTITY = "default_no_identity"
PLAIN_CUT = "knee_plain_cut"


def load_mmlongbench_pages(limit_docs=None, max_doc_pages=None):
    """Every MMLongBench document with a text layer (shared store) and its text-answerable questions
    as ``(question, doc_id)``. CC BY-NC: only timings are printed, never text."""
    os.environ.setdefault("DRAG_KNEE_DATASETS", str(REPO.parent / "shared" / "datasets"))
    from benchmarks.datasets.mmlongbench import load_mmlongbench

    ds = load_mmlongbench(shared_store=True, limit_docs=limit_docs, max_doc_pages=max_doc_pages)
    return ds.documents, [(q.text, q.metadata["doc_id"]) for q in ds.questions]


def load_financebench_filings():
    """The FinanceBench filings in one store and their questions as ``(question, doc_id)``. CC BY-NC:
    only timings are printed, never text."""
    os.environ.setdefault("DRAG_KNEE_DATASETS", str(REPO.parent / "shared" / "datasets"))
    from benchmarks.datasets.financebench import load_financebench

    ds = load_financebench()
    return ds.documents, [(q.text, q.metadata["doc_id"]) for q in ds.questions]


def p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=20)
    parser.add_argument("--questions", type=int, default=120)
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--index", help="a folder to keep the index in between runs")
    parser.add_argument("--dataset", choices=["covidqa", "mmlongbench", "financebench"], default="covidqa")
    parser.add_argument("--filtered", action="store_true",
                        help="mmlongbench: filter every search to the question's document")
    parser.add_argument("--limit-docs", type=int, help="mmlongbench: the first N documents (a smoke test)")
    parser.add_argument("--max-doc-pages", type=int, help="mmlongbench: only documents of at most N pages")
    parser.add_argument("--embedding-cache", help="a folder for passage vectors (reused across runs)")
    parser.add_argument("--threads", type=int, help="ONNX threads of the dense model")
    parser.add_argument("--budget", type=int, action="append", default=[],
                        help="also time search(max_words=N) (repeatable)")
    args = parser.parse_args()
    os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL))
    from drag_knee_retriever import DragKneeIndex
    from drag_knee_retriever.config import EmbeddingConfig, EncoderRuntime, FocusConfig, StoreConfig
    from drag_knee_retriever.embeddings.encoder import Encoder

    if args.dataset == "mmlongbench":
        docs, questions = load_mmlongbench_pages(args.limit_docs, args.max_doc_pages)
        collection = "latency_mmlongbench"
        filters_of = (lambda doc: {"doc_id": doc}) if args.filtered else (lambda doc: None)
    elif args.dataset == "financebench":
        docs, questions = load_financebench_filings()
        collection = "latency_financebench"
        filters_of = (lambda doc: {"doc_id": doc}) if args.filtered else (lambda doc: None)
    else:
        docs, raw = load(args.papers)
        questions = [(q, doc) for q, doc, _ in raw]
        collection = f"latency_{args.papers}"
        filters_of = (lambda doc: {"doc_id": doc}) if args.filtered else (lambda doc: None)
    encoder = Encoder(EmbeddingConfig(runtime=EncoderRuntime(threads=args.threads)))
    if args.embedding_cache:
        from drag_knee_retriever.eval.encoding import CachingEncoder

        encoder = CachingEncoder(encoder, args.embedding_cache)
    index = DragKneeIndex(args.index or ":memory:", embedding=encoder, store=StoreConfig(collection=collection, engine=args.engine))
    started = time.perf_counter()
    report = index.add_documents(docs)
    if args.embedding_cache:
        encoder.save()
    stats = index.stats()
    pages = sum(len(d.pages) for d in docs if d.pages)
    print(f"index: {stats['documents']} documents ({pages} pages), {stats['nodes']} nodes ({stats['leaves']} leaves), "
          f"engine {stats['engine']}; ingest {time.perf_counter() - started:.1f}s ({report}); "
          f"default method {index.search_config.method!r}; filtered by document: {args.filtered}")
    asked = questions[: args.questions]
    if len(asked) < args.questions:
        print(f"note: only {len(asked)} questions")
    for q, doc in asked[:5]:  # warm up caches and the ONNX session
        index.flat_search(q, k=10, filters=filters_of(doc))
        index.search(q, filters=filters_of(doc))
    from drag_knee_retriever import SearchConfig

    rrf_focus = SearchConfig(focus=FocusConfig(scores="rrf", global_leaves=None))
    plain_cut = SearchConfig(focus=FocusConfig(near_best=None, standout=None))
    # The default without the document's identity (issue 24), timed in the same run.
    no_identity = SearchConfig(identity_weight=0.0, focus=FocusConfig(identity_weight=0.0))
    budgets = {f"max_words={b}": b for b in args.budget}
    timings = {name: [] for name in ["flat_hybrid_top10", "default", NO_IDENTITY] + METHODS
               + [RRF_FOCUS, PLAIN_CUT] + list(budgets)}
    context_tokens = {name: [] for name in timings}
    for q, doc in asked:
        flt = filters_of(doc)
        t = time.perf_counter()
        flat = index.flat_search(q, k=10, filters=flt)
        timings["flat_hybrid_top10"].append((time.perf_counter() - t) * 1e3)
        context_tokens["flat_hybrid_top10"].append(sum(len(h.text.split()) for h in flat))
        t = time.perf_counter()
        result = index.search(q, filters=flt)
        timings["default"].append((time.perf_counter() - t) * 1e3)
        context_tokens["default"].append(sum(len(h.text.split()) for h in result.nodes))
        t = time.perf_counter()
        result = index.search(q, config=no_identity, filters=flt)
        timings[NO_IDENTITY].append((time.perf_counter() - t) * 1e3)
        context_tokens[NO_IDENTITY].append(sum(len(h.text.split()) for h in result.nodes))
        for method in METHODS + [RRF_FOCUS, PLAIN_CUT] + list(budgets):
            t = time.perf_counter()
            if method == RRF_FOCUS:
                result = index.search(q, config=rrf_focus, filters=flt)
            elif method == PLAIN_CUT:
                result = index.search(q, config=plain_cut, filters=flt)
            elif method in budgets:
                result = index.search(q, max_words=budgets[method], filters=flt)
            else:
                result = index.search(q, method=method, filters=flt)
            timings[method].append((time.perf_counter() - t) * 1e3)
            context_tokens[method].append(sum(len(h.text.split()) for h in result.nodes))
    flat_median = statistics.median(timings["flat_hybrid_top10"])
    print(f"{len(asked)} questions, latency including query encoding (ms):")
    print(f"{'method':<20} {'median':>8} {'p95':>8} {'ratio':>7} {'ctx words':>10}")
    for name, values in timings.items():
        print(f"{name:<20} {statistics.median(values):>8.1f} {p95(values):>8.1f} "
              f"{statistics.median(values) / flat_median:>7.2f} {statistics.mean(context_tokens[name]):>10.0f}")
    knee_median = statistics.median(timings["knee"])
    default_median = statistics.median(timings["default"])
    index.close()
    print(f"knee_vs_flat_latency_ratio={knee_median / flat_median:.2f} knee_median_ms={knee_median:.1f} "
          f"default_vs_flat_latency_ratio={default_median / flat_median:.2f} "
          f"default_p95_vs_flat_p95={p95(timings['default']) / p95(timings['flat_hybrid_top10']):.2f}")


if __name__ == "__main__":
    main()
