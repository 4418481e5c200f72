"""Engine benchmark: Qdrant Edge (the embedded default) against qdrant-client local mode (issue 3).

    python benchmarks/engine.py [--sizes 1000,10000,50000] [--local-max 50000] [--queries 40]
                                [--local-reps 10] [--memory-nodes 50000] [--no-memory] [--seed 0]
                                [--scale 100000,1000000 --scale-dir DIR [--reuse] [--payload-memory cold]]

With ``--scale`` it then runs ``engine_scale.py`` (issue 17: Edge folders of 100k and 1M nodes built
once and reused, reopened RSS, p50/p95, an HNSW recall table on the roots), and the last line reads
``edge_knee_ms_1m=<x> knee_vs_flat_ratio_1m=<y> reopened_rss_mb_1m=<z>``.

For each index size (in nodes) and each engine it prints: upsert throughput, the latency of a flat
hybrid top-10 query over the leaves (``index.flat_search``), and of one DRAG ``"knee"`` search
(``index.search``, default SearchConfig: explain off, knee cuts), excluding and including query
encoding, with the ratios knee/flat and local/edge, and (Edge) the same knee search with
``explain=True`` (the trace's dense and BM25 ranks, as ``--trace`` asks for). Then the peak
memory of a 50k-node Edge index kept in a folder, measured in a fresh process (from /proc: Linux
only; skip with --no-memory). The last line reads
``edge_knee_ms_10k=<x> knee_vs_flat_ratio_10k=<y> local_mode_knee_ms_10k=<z>``.

The trees are real: synthetic page documents (31 pages each, the median COVID-QA paper) shaped by
the project's builder (branching 3, stable ids, spans). Their vectors are synthetic but shaped like
real ones: documents belong to topics, pages scatter around their document, an inner node's dense
vector is the normalised centroid of its children (``inner_vectors="centroid"``), and BM25
vectors draw Zipf-distributed terms from a topical vocabulary. A query is a noisy copy of one
page's vectors. The query *encoding* part uses the real offline MiniLM + BM25 encoder on a real
question text, then runs the same search, so "incl. encoding" is what a user waits for.

qdrant-client local mode scans every point in Python for every request, so it is slow above a few
thousand nodes: its repetitions are capped (--local-reps, fewer at larger sizes) and it is skipped
above --local-max nodes; the output says so.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

REPO = Path(__file__).resolve().parents[1]
# Caches live outside the checkout: $DRAG_KNEE_BENCH_CACHE, else ../cache beside it.
CACHE = Path(os.environ.get("DRAG_KNEE_BENCH_CACHE") or REPO.parent / "cache")
# The offline model: $DRAG_KNEE_MODEL_PATH, else ../shared/models beside the checkout.
MODEL = Path(os.environ.get("DRAG_KNEE_MODEL_PATH") or REPO.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8")
DIM = 384
PAGES_PER_DOC = 31
VOCAB = 30_000
QUESTIONS = [
    "What is the incubation period of the virus?",
    "Which receptor does the spike protein bind?",
    "How is the basic reproduction number estimated?",
    "What are the symptoms of severe infection?",
    "Which animals are reservoirs of coronaviruses?",
]


# -- synthetic corpus ----------------------------------------------------------------------------


class _LeadSentences:
    """A summariser for synthetic text: an inner node is described by its children's opening words.

    (The default extractive summariser costs ~2 ms per node; at 50k nodes that would dominate the
    benchmark without changing what it measures: tree shape, payload sizes, ids.)
    """

    identity = "benchmark-lead-words"

    def describe(self, requests):
        from drag_knee_retriever.build._summarize import Summary

        return [Summary(None) if r.is_leaf else Summary(" ".join(t[:120] for t in r.child_texts)[:600]) for r in requests]



def timed_pair(index: Any, text: str, vectors: Any, position: int, flat: List[float], knee: List[float]) -> Any:
    """One flat top-10 and one knee search of a query, timed into ``flat`` / ``knee`` (seconds).

    Flat and knee take turns going first (by ``position``): a flat query scans every leaf vector and
    leaves the CPU caches cold for whatever follows it (~0.5 ms on the next knee search at 10k
    nodes). Returns the knee search's result."""
    result = None
    for run in ("flat", "knee") if position % 2 == 0 else ("knee", "flat"):
        started = time.perf_counter()
        if run == "flat":
            index.flat_search(text, k=10, query_vectors=vectors)
            flat.append(time.perf_counter() - started)
        else:
            result = index.search(text, method="knee", query_vectors=vectors)
            knee.append(time.perf_counter() - started)
    return result

def synthetic_corpus(n_nodes: int, seed: int, docs_per_chunk: int = 64, shapes: Optional[Sequence[dict]] = None):
    """Yield lists of NodeRecords (about ``n_nodes`` in total), a few dozen documents at a time.

    ``shapes`` (None: every document has PAGES_PER_DOC pages and no outline) are real documents'
    shapes, cycled: ``{"pages": n, "chars": per page, "outline": [(0-based page, level), ...]}``.
    """
    from drag_knee_retriever import BuildConfig, Document
    from drag_knee_retriever.build._builder import build_document_trees
    from drag_knee_retriever.store import NodeRecord

    rng = np.random.default_rng(seed)
    config = BuildConfig()
    summarizer = _LeadSentences()
    shapes = list(shapes) if shapes else [{"pages": PAGES_PER_DOC, "chars": 0, "outline": []}]
    per_shape = [_nodes_per_doc(config, summarizer, shape) for shape in shapes]
    nodes_per_doc = sum(per_shape) / len(per_shape)
    n_docs = max(1, round(n_nodes / nodes_per_doc))
    n_topics = max(2, n_docs // 8)
    topics = _unit(rng.standard_normal((n_topics, DIM)))
    # Zipf-like term popularity; every topic favours its own slice of the vocabulary. Terms are
    # drawn by inverting the cumulative distribution (rng.choice(p=...) rebuilds it on every call).
    popularity = 1.0 / np.arange(1, VOCAB + 1) ** 1.05
    cumulative = np.cumsum(popularity / popularity.sum())
    for start in range(0, n_docs, docs_per_chunk):
        docs, doc_vectors, doc_terms = [], {}, {}
        for d in range(start, min(n_docs, start + docs_per_chunk)):
            shape = shapes[d % len(shapes)]
            n_pages = shape["pages"]
            topic = int(rng.integers(n_topics))
            center = _unit(topics[topic] + 0.7 * _unit(rng.standard_normal(DIM)))
            own_terms = (topic * 997 + rng.integers(0, 400, 120)) % VOCAB
            common = np.minimum(np.searchsorted(cumulative, rng.random((n_pages, 25))), VOCAB - 1)
            topical = rng.choice(own_terms, (n_pages, 15))
            terms = list(np.concatenate([common, topical], axis=1))
            vectors = list(_unit(center + 0.8 * _unit(rng.standard_normal((n_pages, DIM)))))
            pages = [_page_text(page_terms, shape) for page_terms in terms]
            doc_id = f"doc{d:06d}"
            outline = [{"title": f"Section {i}", "page": page + 1, "level": level}
                       for i, (page, level) in enumerate(shape["outline"])]
            docs.append(Document(id=doc_id, pages=pages, metadata={"topic": topic}, outline=outline or None))
            doc_vectors[doc_id], doc_terms[doc_id] = vectors, terms
        trees = build_document_trees(docs, config, summarizer)
        records = []
        for tree in trees:
            dense: Dict[str, np.ndarray] = {}
            sparse: Dict[str, Tuple[np.ndarray, np.ndarray]] = {}
            for node in tree.nodes:  # children precede parents
                if node.is_leaf:
                    # Vectors are drawn per page; a leaf is a page or (a long page split by the
                    # builder's passage default) one of its passages: the page's vector moved a
                    # little and a share of the page's terms, so passages of a page stay close.
                    page = node.span.first_page - 1 if node.span.first_page is not None else node.span.first_leaf
                    page_vector, page_terms = doc_vectors[tree.doc_id][page], doc_terms[tree.doc_id][page]
                    if node.span.first_part is None:
                        dense[node.id], sparse[node.id] = page_vector, _bm25(page_terms)
                    else:
                        dense[node.id] = _unit(page_vector + 0.4 * _unit(rng.standard_normal(DIM)))
                        sparse[node.id] = _bm25(rng.choice(page_terms, 25))
                else:
                    dense[node.id] = _unit(np.mean([dense[c] for c in node.child_ids], axis=0))
                    pooled = np.concatenate([sparse[c][0][:15] for c in node.child_ids])
                    sparse[node.id] = _bm25(pooled)
                idx, val = sparse[node.id]
                records.append(NodeRecord(node=node, dense=dense[node.id].astype(np.float32), sparse_indices=idx,
                                          sparse_values=val))
        yield records


def make_queries(records, count: int, seed: int):
    """(question text, QueryVectors) pairs: noisy copies of random leaves' vectors."""
    from drag_knee_retriever.store import QueryVectors

    rng = np.random.default_rng(seed + 1)
    leaves = [r for r in records if r.node.is_leaf]
    out = []
    for i in range(count):
        leaf = leaves[int(rng.integers(len(leaves)))]
        dense = _unit(np.asarray(leaf.dense) + 0.9 * _unit(rng.standard_normal(DIM)))
        terms = rng.choice(np.asarray(leaf.sparse_indices), size=min(5, len(leaf.sparse_indices)), replace=False)
        terms = np.unique(np.concatenate([terms, rng.integers(0, VOCAB, 2)]))
        out.append((QUESTIONS[i % len(QUESTIONS)], QueryVectors(
            dense=tuple(float(x) for x in dense), sparse_indices=tuple(int(t) for t in terms),
            sparse_values=(1.0,) * len(terms))))
    return out


def _nodes_per_doc(config, summarizer, shape: dict) -> int:
    from drag_knee_retriever import Document
    from drag_knee_retriever.build._builder import build_document_trees

    outline = [{"title": f"s{i}", "page": p + 1, "level": lv} for i, (p, lv) in enumerate(shape["outline"])]
    # Pages as long as the corpus's (40 terms and the padding), so that long pages split into
    # passages here as they do there.
    page = _page_text(np.zeros(40, dtype=np.int64), shape)
    (tree,) = build_document_trees([Document(id="probe", pages=[page] * shape["pages"], outline=outline or None)],
                                   config, summarizer)
    return len(tree.nodes)


_FILLER = "Lorem ipsum dolor sit amet. "


def _page_text(terms: np.ndarray, shape: dict) -> str:
    """A synthetic page: its terms as words, padded to the shape's characters per page."""
    return " ".join(f"w{t}" for t in terms) + ". " + _FILLER * max(8, shape["chars"] // len(_FILLER))


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _bm25(terms: np.ndarray, k: float = 1.2, b: float = 0.75, avg_len: float = 40.0):
    """BM25 document-side weights (as fastembed's Qdrant/bm25 computes them), IDF left to the engine."""
    ids, tf = np.unique(terms, return_counts=True)
    values = tf * (k + 1) / (tf + k * (1 - b + b * len(terms) / avg_len))
    return ids.astype(np.int64), values.astype(np.float32)


# -- measurement ---------------------------------------------------------------------------------


def median_ms(samples: Sequence[float]) -> float:
    return statistics.median(samples) * 1e3


def make_store(engine: str, location: str = ":memory:"):
    if engine == "edge":
        from drag_knee_retriever.store import EdgeStore

        return EdgeStore("bench", location=location)
    from drag_knee_retriever.store import QdrantClientStore

    return QdrantClientStore("bench", location=location)


def bench_engine(engine: str, records, queries, encoder, reps: int, explained: bool = True) -> Dict[str, float]:
    """Upsert, then time flat hybrid top-10 and DRAG knee search, interleaved query by query."""
    from drag_knee_retriever import DragKneeIndex

    store = make_store(engine)
    index = DragKneeIndex(store, embedding=encoder)
    try:
        started = time.perf_counter()
        store.upsert(records)
        upsert_s = time.perf_counter() - started
        for text, vectors in queries[:2]:  # warm up
            index.flat_search(text, k=10, query_vectors=vectors)
            index.search(text, method="knee", query_vectors=vectors)
        explain = replace(index.search_config, explain=True)
        flat, knee, knee_enc, knee_explain, requests, returned = [], [], [], [], [], []
        # Searches without encoding first, interleaved so load drift hits them alike; the encoder
        # stays out of this loop (onnxruntime's worker threads keep spinning for a while after an
        # inference and would slow whatever runs next on a 2-core machine). timed_pair alternates
        # which of flat and knee goes first.
        for position, (text, vectors) in enumerate(queries[:reps]):
            result = timed_pair(index, text, vectors, position, flat, knee)
            if explained:
                started = time.perf_counter()
                index.search(text, method="knee", query_vectors=vectors, config=explain)
                knee_explain.append(time.perf_counter() - started)
            requests.append(result.trace.requests)
            returned.append(len(result.nodes))
        for text, vectors in queries[:reps]:
            t0 = time.perf_counter()
            encoder.encode_query(text)  # the real encoder on a real question, then the same search
            index.search(text, method="knee", query_vectors=vectors)
            knee_enc.append(time.perf_counter() - t0)
        return {
            "upsert_per_s": len(records) / upsert_s,
            "flat_ms": median_ms(flat),
            "knee_ms": median_ms(knee),
            "knee_enc_ms": median_ms(knee_enc),
            "knee_explain_ms": median_ms(knee_explain) if explained else float("nan"),
            "requests": statistics.mean(requests),
            "returned": statistics.mean(returned),
            "reps": len(flat),
        }
    finally:
        index.close()


def memory_child(n_nodes: int, seed: int) -> None:
    """Run in a fresh process: build an n-node Edge index in a folder, search it, report memory."""
    os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL))
    from drag_knee_retriever import DragKneeIndex
    from drag_knee_retriever.config import EmbeddingConfig, StoreConfig
    from drag_knee_retriever.embeddings import Encoder

    encoder = Encoder(EmbeddingConfig(model_path=str(MODEL)))
    folder = tempfile.mkdtemp(prefix="drag-knee-bench-", dir=os.environ.get("BENCH_DIR"))
    gc.collect()
    baseline = _status_bytes("VmRSS")
    # Loading the encoder peaks far above its resident size; restart the high-water mark here so
    # that the peak is the index's (Linux: /proc/self/clear_refs "5" resets VmHWM).
    peak_reset = _reset_peak()
    try:
        index = DragKneeIndex(folder, embedding=encoder, store=StoreConfig(collection="bench", engine="edge"))
        written = 0
        started = time.perf_counter()
        sample = []
        for chunk in synthetic_corpus(n_nodes, seed):
            index.store.upsert(chunk)
            written += len(chunk)
            if len(sample) < 5000:
                sample.extend(chunk[:200])
            del chunk
        upsert_s = time.perf_counter() - started
        for text, vectors in make_queries(sample, 20, seed):
            index.flat_search(text, k=10, query_vectors=vectors)
            index.search(text, method="knee", query_vectors=vectors)
        del sample
        gc.collect()
        after = _status_bytes("VmRSS")
        peak = _peak_rss() if peak_reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        index.close()
        # Blocks actually used: Edge preallocates sparse files (apparent size ~7x larger).
        disk = sum(f.stat().st_blocks * 512 for f in Path(folder).rglob("*") if f.is_file())
        print(json.dumps({"peak_since_baseline": peak_reset, "nodes": written, "baseline_mb": baseline / 2**20, "after_mb": after / 2**20,
                          "peak_mb": peak / 2**20, "disk_mb": disk / 2**20, "upsert_per_s": written / upsert_s}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _peak_rss() > 0
    except OSError:
        return False


def _peak_rss() -> int:
    return _status_bytes("VmHWM")


def _status_bytes(field: str) -> int:
    """A memory figure of this process from /proc/self/status (Linux), in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def measure_memory(n_nodes: int, seed: int) -> Optional[dict]:
    out = subprocess.run([sys.executable, __file__, "--memory-child", str(n_nodes), "--seed", str(seed)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(f"memory measurement failed:\n{out.stderr[-2000:]}")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def local_reps_for(n_nodes: int, cap: int) -> int:
    """Local mode scans every point per request (~30 ms per 1,000 nodes): fewer repetitions when large."""
    return min(cap, 10 if n_nodes <= 2_000 else 5 if n_nodes <= 20_000 else 2)


def _num(x: float) -> str:
    return "-" if x != x else f"{x:.2f}"  # NaN: not measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000", help="index sizes in nodes, comma-separated")
    parser.add_argument("--local-max", type=int, default=50_000, help="skip qdrant-client local mode above this size")
    parser.add_argument("--queries", type=int, default=40, help="timed queries per size for Edge")
    parser.add_argument("--local-reps", type=int, default=10, help="at most this many timed queries for local mode")
    parser.add_argument("--memory-nodes", type=int, default=50_000, help="size of the index whose peak memory is measured")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--scale", default="", help="also run the scale benchmark (engine_scale.py) at these sizes, "
                        "e.g. 100000,1000000: Edge folders built once and reopened")
    parser.add_argument("--scale-dir", default=str(CACHE / "scale"),
                        help="where the scale indexes are built (default: %(default)s)")
    parser.add_argument("--reuse", action="store_true", help="reuse a scale index already built in --scale-dir")
    parser.add_argument("--scale-queries", type=int, default=200, help="timed queries per scale size")
    parser.add_argument("--payload-memory", choices=["pinned", "cached", "cold"], default=None,
                        help="EdgeStore(payload_memory=...) of the scale indexes (default: the engine's)")
    parser.add_argument("--hnsw-queries", type=int, default=200,
                        help="queries of the HNSW-on-roots recall table at the largest scale size (0: skip)")
    parser.add_argument("--scale-build", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--scale-search", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--scale-hnsw", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--scale-convert", type=int, help="copy the scale index of this size in --scale-dir into "
                        "--convert-to with the --dense-* storage settings, then exit")
    parser.add_argument("--convert-to", help="where --scale-convert writes")
    parser.add_argument("--dense-in-ram", action="store_true", help="--scale-convert: dense vectors in RAM (the "
                        "engine's default before issue 26), not in a memory-mapped file")
    parser.add_argument("--dense-datatype", choices=["float32", "float16"], default=None,
                        help="--scale-convert: EdgeStore(dense_datatype=...)")
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.seed)
        return
    if args.scale_convert:
        import engine_scale

        engine_scale.convert_child(args.scale_convert, args.scale_dir, args.convert_to, not args.dense_in_ram,
                                   args.dense_datatype)
        return
    if args.scale_build or args.scale_search or args.scale_hnsw:
        import engine_scale

        os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL))
        if args.scale_build:
            engine_scale.build_child(args.scale_build, args.seed, args.scale_dir, None, args.payload_memory)
        elif args.scale_hnsw:
            engine_scale.hnsw_child(args.scale_hnsw, args.scale_dir, args.queries)
        else:
            engine_scale.search_child(args.scale_search, args.scale_dir, args.queries)
        return

    os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL))
    import importlib.metadata as md

    from drag_knee_retriever.config import EmbeddingConfig
    from drag_knee_retriever.embeddings import Encoder

    # qdrant-client warns once that local mode is not meant for more than 20,000 points: the
    # table shows why; keep the warning out of it.
    warnings.filterwarnings("ignore", message="Local mode is not recommended")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    encoder = Encoder(EmbeddingConfig(model_path=str(MODEL)))
    encode_times = []
    for _ in range(20):
        t = time.perf_counter()
        encoder.encode_query(QUESTIONS[0])
        encode_times.append(time.perf_counter() - t)
    print(f"qdrant-edge-py {md.version('qdrant-edge-py')}, qdrant-client {md.version('qdrant-client')}, "
          f"{os.cpu_count()} CPUs; query encoding (MiniLM int8 + BM25) median {median_ms(encode_times):.1f} ms")
    print("vectors: synthetic (topic-clustered 384-d dense, Zipf BM25 terms) on real builder trees; "
          "see the module docstring\n")

    header = (f"{'nodes':>7} {'engine':<6} {'upsert/s':>10} {'flat ms':>9} {'knee ms':>9} {'knee+enc':>9} "
              f"{'knee/flat':>9} {'knee +x':>8} {'req':>4} {'hits':>5} {'reps':>4}")
    print(header)
    print("-" * len(header))
    results: Dict[Tuple[int, str], Dict[str, float]] = {}
    for size in sizes:
        records = [r for chunk in synthetic_corpus(size, args.seed) for r in chunk]
        queries = make_queries(records, max(args.queries, args.local_reps) + 2, args.seed)
        engines = ["edge"] + (["local"] if size <= args.local_max else [])
        for engine in engines:
            reps = args.queries if engine == "edge" else local_reps_for(size, args.local_reps)
            r = bench_engine(engine, records, queries, encoder, reps, explained=engine == "edge")
            results[(size, engine)] = r
            print(f"{len(records):>7} {engine:<6} {r['upsert_per_s']:>10,.0f} {r['flat_ms']:>9.2f} {r['knee_ms']:>9.2f} "
                  f"{r['knee_enc_ms']:>9.2f} {r['knee_ms'] / r['flat_ms']:>9.2f} {_num(r['knee_explain_ms']):>8} {r['requests']:>4.1f} "
                  f"{r['returned']:>5.1f} {r['reps']:>4}", flush=True)
        if "local" in engines:
            e, l = results[(size, "edge")], results[(size, "local")]
            print(f"{'':>7} local/edge: upsert {e['upsert_per_s'] / l['upsert_per_s']:.1f}x slower, "
                  f"flat {l['flat_ms'] / e['flat_ms']:.0f}x, knee {l['knee_ms'] / e['knee_ms']:.0f}x, "
                  f"knee+enc {l['knee_enc_ms'] / e['knee_enc_ms']:.1f}x slower in local mode")
        else:
            print(f"{'':>7} local mode skipped at {len(records)} nodes (--local-max {args.local_max})")
        del records
        gc.collect()
    print("\nflat = index.flat_search(k=10, hybrid, leaves); knee = index.search(method='knee'), default "
          "SearchConfig (explain off), query vectors given; knee+enc = real query encoding + the same search; "
          "knee +x = the same knee search with explain=True (dense and BM25 ranks in the trace, as --trace); "
          "req = store round trips per knee search (roots + one per level + context fetch); "
          "local-mode repetitions capped, see 'reps'.")

    if not args.no_memory:
        mem = measure_memory(args.memory_nodes, args.seed)
        if mem:
            since = "peak after loading" if mem["peak_since_baseline"] else "lifetime peak incl. encoder loading"
            print(f"\npeak memory, Edge index of {mem['nodes']:,} nodes in a folder (fresh process, encoder loaded "
                  f"first): baseline {mem['baseline_mb']:.0f} MB -> {since} {mem['peak_mb']:.0f} MB "
                  f"(+{mem['peak_mb'] - mem['baseline_mb']:.0f} MB), resident after build+search {mem['after_mb']:.0f} MB; "
                  f"on disk {mem['disk_mb']:.0f} MB; folder upsert {mem['upsert_per_s']:,.0f} nodes/s. "
                  "A ':memory:' index keeps the same files in RAM (/dev/shm) on top.")

    ten = results.get((10_000, "edge")) or next((results[k] for k in results if k[0] == 10_000), None)
    local_ten = results.get((10_000, "local"))
    edge_knee = ten["knee_ms"] if ten else float("nan")
    ratio = ten["knee_ms"] / ten["flat_ms"] if ten else float("nan")
    local_knee = local_ten["knee_ms"] if local_ten else float("nan")
    print(f"edge_knee_ms_10k={edge_knee:.2f} knee_vs_flat_ratio_10k={ratio:.2f} local_mode_knee_ms_10k={local_knee:.1f}")

    scale = [int(s) for s in args.scale.split(",") if s.strip()]
    if scale:
        import engine_scale

        print(f"\nscale: Qdrant Edge folders in {args.scale_dir} (payload_memory={args.payload_memory}), tree shapes "
              "of the MMLongBench-Doc PDFs; each figure from a fresh process; latencies exclude query encoding; "
              f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        rows = engine_scale.run_scale(scale, args.seed, args.scale_dir, args.reuse, args.scale_queries,
                                      args.payload_memory, args.hnsw_queries)
        big = rows.get(max(rows))
        print(f"edge_knee_ms_1m={big['knee_p50']:.2f} knee_vs_flat_ratio_1m={big['ratio_p50']:.2f} "
              f"reopened_rss_mb_1m={big['reopened_rss_mb']:.0f}" + ("" if max(rows) == 1_000_000 else
                                                                   f"  (largest size measured: {max(rows):,})"))


if __name__ == "__main__":
    main()
