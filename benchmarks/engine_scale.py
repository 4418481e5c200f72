"""Scale part of the engine benchmark (issue 17): 100k and 1M nodes on Qdrant Edge, in folders reused across runs.

Run through ``python benchmarks/engine.py --scale 100000,1000000 [--scale-dir DIR] [--reuse]``. Each
size is handled by two fresh child processes, so that each memory figure is one process's own:

- **build** (skipped with ``--reuse`` when ``DIR/n<size>/manifest.json`` matches the size, seed and
  shape version): synthetic vectors on real tree shapes, streamed into an Edge folder a few dozen
  documents at a time; it reports upsert throughput (the store's ``upsert`` calls only, and wall
  time with generation), the peak RSS of the building process after the encoder is loaded (the
  node map is the part that grows with the index: see ``NodeCache``), the node map's final state
  and the disk blocks used; it writes queries drawn from leaves all over the corpus.
- **search**: reopens the folder (as a user's second process would), times the first search (it
  rebuilds the BM25 document frequencies from the engine), then flat hybrid top-10 and the default
  ``knee`` search (query vectors given: no encoding), interleaved, p50 and p95, with the time of each
  round trip to the engine; and the process's RSS after the searches.

Tree shapes are real: page counts and bookmark structure (page and level of each entry, not the
titles) of the 83 MMLongBench-Doc PDFs (``$DRAG_KNEE_DATASETS/mmlongbench_doc/raw``), cycled, with
page texts as long as each PDF's characters per page; the builder makes leaves under sections
under roots. Vectors are synthetic as in ``engine.py``'s corpus (topic-clustered dense, Zipf BM25 terms).
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

SHAPE_VERSION = 2  # bump when the corpus changes: --reuse then rebuilds (2: passage leaves)
COLLECTION = "bench"


def real_shapes() -> List[Dict[str, Any]]:
    """Page counts, characters per page and outline positions of the MMLongBench-Doc PDFs (no text)."""
    root = Path(os.environ.get("DRAG_KNEE_DATASETS") or Path(__file__).resolve().parents[1].parent / "shared" / "datasets") / "mmlongbench_doc" / "raw"
    try:
        manifest = json.loads((root / "pdf_manifest.json").read_text())
        outlines = json.loads((root / "outlines.json").read_text())
    except OSError as exc:
        raise SystemExit(f"the scale benchmark takes its tree shapes from MMLongBench-Doc: {exc}; "
                         "set DRAG_KNEE_DATASETS to the folder holding mmlongbench_doc/") from None
    shapes = []
    for stem in sorted(outlines):
        entry = manifest.get(stem + ".pdf") or {}
        pages = int(entry.get("n_pages") or 0)
        if pages < 1:
            continue
        chars = int(entry.get("chars") or 0) / pages
        outline = [(int(e["page"]), int(e["level"])) for e in outlines[stem] if 0 <= int(e["page"]) < pages]
        shapes.append({"pages": pages, "chars": int(min(3000, max(200, chars))), "outline": outline})
    return shapes


def _rss(field: str = "VmRSS") -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _disk_bytes(folder: Path) -> int:
    """Blocks actually used (Edge preallocates sparse files: their apparent size is far larger)."""
    return sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file())


def _encoder():
    from drag_knee_retriever.config import EmbeddingConfig, EncoderRuntime
    from drag_knee_retriever.embeddings import Encoder

    model = os.environ.get("DRAG_KNEE_MODEL_PATH")
    return Encoder(EmbeddingConfig(model_path=model, runtime=EncoderRuntime(threads=1)))


def folder_for(scale_dir: str, size: int) -> Path:
    return Path(scale_dir) / f"n{size}"


def reusable(scale_dir: str, size: int, seed: int, payload_memory: Optional[str]) -> Optional[dict]:
    manifest = folder_for(scale_dir, size) / "manifest.json"
    try:
        built = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    ok = (built.get("target") == size and built.get("seed") == seed and built.get("shape_version") == SHAPE_VERSION
          and built.get("payload_memory") == payload_memory)
    return built if ok else None


def build_child(size: int, seed: int, scale_dir: str, node_map_capacity: Optional[int],
                payload_memory: Optional[str]) -> None:
    """Build one index into ``scale_dir/n<size>`` (fresh process) and write its manifest."""
    from engine import make_queries, synthetic_corpus

    from drag_knee_retriever import DragKneeIndex
    from drag_knee_retriever.store import EdgeStore

    folder = folder_for(scale_dir, size)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    encoder = _encoder()
    gc.collect()
    baseline = _rss()
    reset = _reset_peak()
    store_kw: Dict[str, Any] = {} if node_map_capacity is None else {"node_map_capacity": node_map_capacity}
    if payload_memory:
        store_kw["payload_memory"] = payload_memory
    store = EdgeStore(COLLECTION, location=str(folder / "index"), **store_kw)
    index = DragKneeIndex(store, embedding=encoder)
    rng = np.random.default_rng(seed + 7)
    sample: List[Any] = []
    written = docs = 0
    upsert_s = 0.0
    started = time.perf_counter()
    for chunk in synthetic_corpus(size, seed, shapes=real_shapes()):
        t = time.perf_counter()
        store.upsert(chunk)
        upsert_s += time.perf_counter() - t
        written += len(chunk)
        docs += sum(1 for r in chunk if r.node.level == 0)
        leaves = [r for r in chunk if r.node.is_leaf]
        sample.extend(leaves[i] for i in rng.choice(len(leaves), size=min(4, len(leaves)), replace=False))
        del chunk, leaves
    wall_s = time.perf_counter() - started
    node_map = store._node_map  # the benchmark reads the store's private state to report it
    map_state = {"complete": node_map.complete, "held": len(node_map.nodes), "capacity": node_map.capacity}
    peak = _rss("VmHWM")
    queries = make_queries(sample, 400, seed)
    del sample
    index.close()
    (folder / "queries.json").write_text(json.dumps([
        {"text": text, "dense": list(q.dense), "sparse_indices": list(q.sparse_indices),
         "sparse_values": list(q.sparse_values)} for text, q in queries]))
    built = {"target": size, "seed": seed, "shape_version": SHAPE_VERSION, "payload_memory": payload_memory,
             "nodes": written, "documents": docs,
             "upsert_per_s": written / upsert_s, "wall_per_s": written / wall_s, "wall_s": wall_s,
             "baseline_mb": baseline / 2**20, "peak_mb": peak / 2**20, "peak_since_baseline": reset,
             "node_map": map_state, "disk_mb": _disk_bytes(folder / "index") / 2**20}
    (folder / "manifest.json").write_text(json.dumps(built))
    print(json.dumps(built))


def _pct(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1e3, q))


def search_child(size: int, scale_dir: str, reps: int) -> None:
    """Reopen ``scale_dir/n<size>`` (fresh process), time flat and knee searches, report RSS."""
    from drag_knee_retriever import DragKneeIndex, StoreConfig
    from drag_knee_retriever.store import QueryVectors
    from engine import timed_pair

    folder = folder_for(scale_dir, size)
    queries = [(q["text"], QueryVectors(dense=tuple(q["dense"]), sparse_indices=tuple(q["sparse_indices"]),
                                        sparse_values=tuple(q["sparse_values"])))
               for q in json.loads((folder / "queries.json").read_text())]
    encoder = _encoder()
    encoder.encode_query("warm the encoder up")  # its lazy loading is not the index's memory
    gc.collect()
    baseline = _rss()
    _reset_peak()
    t = time.perf_counter()
    index = DragKneeIndex(str(folder / "index"), embedding=encoder, store=StoreConfig(collection=COLLECTION, engine="edge"))
    open_s = time.perf_counter() - t
    store = index.store
    # Time every round trip to the engine, by kind: the roots (level 0) or a candidate set.
    trips: Dict[str, List[float]] = {"roots": [], "candidates": [], "flat": []}
    rank = store.rank

    def timed_rank(requests, query, **kw):
        started = time.perf_counter()
        out = rank(requests, query, **kw)
        kind = "flat" if any(r.leaves_only and r.candidate_ids is None for r in requests) else \
            "roots" if any(r.level == 0 and r.candidate_ids is None for r in requests) else "candidates"
        trips[kind].append(time.perf_counter() - started)
        return out

    store.rank = timed_rank
    try:
        text, vectors = queries[-1]
        t = time.perf_counter()
        index.search(text, method="knee", query_vectors=vectors)
        first_s = time.perf_counter() - t
        for text, vectors in queries[-6:-1]:  # warm up
            index.flat_search(text, k=10, query_vectors=vectors)
            index.search(text, method="knee", query_vectors=vectors)
        for values in trips.values():
            values.clear()
        flat, knee, returned, requests = [], [], [], []
        for position, (text, vectors) in enumerate(queries[:reps]):
            result = timed_pair(index, text, vectors, position, flat, knee)
            returned.append(len(result.nodes))
            requests.append(result.trace.requests)
        after = _rss()
        peak = _rss("VmHWM")
        out = {"nodes": size, "open_s": open_s, "first_search_s": first_s, "reps": len(knee),
               "flat_p50": _pct(flat, 50), "flat_p95": _pct(flat, 95),
               "knee_p50": _pct(knee, 50), "knee_p95": _pct(knee, 95),
               "ratio_p50": statistics.median(knee) / statistics.median(flat),
               "returned": statistics.mean(returned), "requests": statistics.mean(requests),
               "trip_ms": {k: (_pct(v, 50) if v else float("nan")) for k, v in trips.items()},
               "trips_per_knee": {k: len(v) / max(1, len(knee)) for k, v in trips.items()},
               "baseline_mb": baseline / 2**20, "reopened_rss_mb": after / 2**20, "search_peak_mb": peak / 2**20,
               "node_map_complete": store._node_map.complete}
    finally:
        store.rank = rank
        index.close()
    print(json.dumps(out))


def run_child(args: List[str]) -> dict:
    """Run this benchmark in a fresh process; its last stdout line is its JSON result."""
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("engine.py")), *args],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"child {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_scale(sizes: Sequence[int], seed: int, scale_dir: str, reuse: bool, reps: int,
              payload_memory: Optional[str], hnsw_queries: int) -> Dict[int, dict]:
    """Build (or reuse) and search every size; print the tables; return the search results by size."""
    rows: Dict[int, dict] = {}
    for size in sizes:
        built = reusable(scale_dir, size, seed, payload_memory) if reuse else None
        how = "reused" if built else "built"
        if built is None:
            built = run_child(["--scale-build", str(size), "--seed", str(seed), "--scale-dir", scale_dir]
                              + (["--payload-memory", payload_memory] if payload_memory else []))
        found = run_child(["--scale-search", str(size), "--scale-dir", scale_dir, "--queries", str(reps)])
        rows[size] = {**found, "build": built, "how": how}
        nm = built["node_map"]
        print(f"{built['nodes']:>9,} nodes, {built['documents']:,} documents ({how} in {scale_dir}): upsert "
              f"{built['upsert_per_s']:,.0f} nodes/s ({built['wall_per_s']:,.0f}/s with generation, "
              f"{built['wall_s']:.0f} s); disk {built['disk_mb']:,.0f} MB; build peak RSS {built['peak_mb']:,.0f} MB "
              f"(encoder loaded: {built['baseline_mb']:.0f} MB); node map "
              f"{'complete, ' + format(nm['held'], ',') + ' nodes' if nm['complete'] else 'dropped at its cap'} "
              f"(cap {nm['capacity']:,})", flush=True)
        trip = found["trip_ms"]
        print(f"{'':>9} reopened: open {found['open_s'] * 1e3:.0f} ms, first search {found['first_search_s']:.2f} s "
              f"(BM25 frequencies rebuilt), RSS {found['reopened_rss_mb']:,.0f} MB (before open "
              f"{found['baseline_mb']:.0f} MB, peak {found['search_peak_mb']:,.0f} MB); flat p50/p95 "
              f"{found['flat_p50']:.1f}/{found['flat_p95']:.1f} ms, knee p50/p95 {found['knee_p50']:.1f}/"
              f"{found['knee_p95']:.1f} ms, knee/flat {found['ratio_p50']:.2f}; round trips p50: roots "
              f"{trip['roots']:.2f} ms, candidate sets {trip['candidates']:.2f} ms "
              f"({found['trips_per_knee']['candidates']:.1f} a search), flat {trip['flat']:.2f} ms; "
              f"{found['reps']} queries", flush=True)
    if hnsw_queries:
        size = max(sizes)
        hnsw = run_child(["--scale-hnsw", str(size), "--scale-dir", scale_dir, "--queries", str(hnsw_queries)])
        rows[size]["hnsw"] = hnsw
        print(f"\nHNSW on the roots' dense ranking, {hnsw['roots']:,} roots of the {size:,}-node index, "
              f"{hnsw['queries']} queries: recall@20 against exact search (mean, worst query), median ms per query")
        print(f"{'m':>4} {'ef_construct':>12} {'build s':>8} {'hnsw_ef':>8} {'recall@20':>10} {'worst':>6} {'ms':>7}")
        for r in hnsw["rows"]:
            print(f"{r['m']:>4} {r['ef_construct']:>12} {r['build_s']:>8.1f} {str(r['hnsw_ef']):>8} "
                  f"{r['recall']:>10.4f} {r['min']:>6.2f} {r['ms']:>7.3f}", flush=True)
    return rows


def convert_child(size: int, scale_dir: str, target_dir: str, dense_on_disk: bool, dense_datatype: Optional[str]) -> None:
    """Copy the index in ``scale_dir/n<size>`` into ``target_dir/n<size>`` with other dense-vector
    storage settings (fresh process): the same points, read and written a page at a time, as a
    build with those settings would store them, at a fraction of a build's CPU (no corpus to
    generate, batched writes). The roots' shard is made by the new store from the copied roots."""
    import qdrant_edge as qe

    from drag_knee_retriever.store import EdgeStore
    from drag_knee_retriever.model._ids import META_ID

    source_folder, target = folder_for(scale_dir, size), folder_for(target_dir, size)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    started = time.perf_counter()
    source = EdgeStore(COLLECTION, location=str(source_folder / "index"), node_map_capacity=0)
    info = source.collection_info()
    store = EdgeStore(COLLECTION, location=str(target / "index"), node_map_capacity=0,
                      dense_on_disk=dense_on_disk, dense_datatype=dense_datatype)
    store.open_collection(dense_size=int(info["dense_size"]), model_id=info["model_id"],
                          sparse_model=info["sparse_model"])
    copied, offset = 0, None
    while True:
        page, offset = source.shard.scroll(qe.ScrollRequest(offset=offset, limit=1024, with_payload=True,
                                                             with_vector=True))
        points = [qe.Point(str(r.id), r.vector, r.payload) for r in page if str(r.id) != META_ID]
        store.shard.update(qe.UpdateOperation.upsert_points(points))
        copied += len(points)
        if offset is None:
            break
    store.shard.flush()
    store.sync_roots()
    source.close()
    store.close()
    for name in ("queries.json", "manifest.json"):
        shutil.copy(source_folder / name, target / name)
    built = json.loads((target / "manifest.json").read_text())
    built.update({"converted_from": str(source_folder), "dense_on_disk": dense_on_disk,
                  "dense_datatype": dense_datatype, "convert_s": time.perf_counter() - started,
                  "disk_mb": _disk_bytes(target / "index") / 2**20})
    (target / "manifest.json").write_text(json.dumps(built))
    print(json.dumps({"copied": copied, **built}))


def hnsw_child(size: int, scale_dir: str, reps: int) -> None:
    """Recall and latency of HNSW on the roots' dense ranking against exact search (fresh process).

    The roots of the index in ``scale_dir/n<size>`` (with their dense vectors) go into a shard of
    their own, one per HNSW setting, indexed by ``optimize()``: a stand-in for the graph a filtered
    HNSW search of the roots could use at best (building one over all 1M points was not affordable here).
    Recall@20 is the share of the exact top 20 (``exact=True``) that HNSW returns, over the queries.
    """
    import qdrant_edge as qe

    from drag_knee_retriever.store import EdgeStore

    folder = folder_for(scale_dir, size)
    queries = [np.asarray(q["dense"], dtype=np.float64).tolist()
               for q in json.loads((folder / "queries.json").read_text())][:reps]
    store = EdgeStore(COLLECTION, location=str(folder / "index"))
    roots, offset = [], None
    while True:
        page, offset = store.shard.scroll(qe.ScrollRequest(
            offset=offset, limit=4096, with_payload=False, with_vector=["dense"],
            filter=qe.Filter(must=[qe.FieldCondition(key="level", match=qe.MatchValue(0))])))
        roots.extend((r.id, list(r.vector["dense"])) for r in page)
        if offset is None:
            break
    store.close()
    rows = []
    for m, ef_construct in ((16, 100), (32, 200)):
        path = folder / f"hnsw-m{m}-ef{ef_construct}"
        shutil.rmtree(path, ignore_errors=True)
        config = qe.EdgeConfig(
            vectors={"dense": qe.EdgeVectorParams(size=len(roots[0][1]), distance=qe.Distance.Cosine,
                                                  hnsw_config=qe.HnswIndexConfig(m=m, ef_construct=ef_construct,
                                                                                 full_scan_threshold=1))},
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1), wal_enabled=False)
        shard = qe.EdgeShard.create(str(path), config)
        for start in range(0, len(roots), 256):
            shard.update(qe.UpdateOperation.upsert_points(
                [qe.Point(pid, {"dense": vec}) for pid, vec in roots[start:start + 256]]))
        t = time.perf_counter()
        shard.optimize()
        build_s = time.perf_counter() - t

        def run(params):
            ids, times = [], []
            for q in queries:
                started = time.perf_counter()
                points = shard.query(qe.QueryRequest(query=qe.Query.Nearest(q, using="dense"), limit=20, params=params))
                times.append(time.perf_counter() - started)
                ids.append({str(p.id) for p in points})
            return ids, float(np.median(times) * 1e3)

        run(qe.SearchParams(exact=True))  # warm up
        exact_ids, exact_ms = run(qe.SearchParams(exact=True))
        rows.append({"m": m, "ef_construct": ef_construct, "hnsw_ef": "exact", "recall": 1.0, "min": 1.0,
                     "ms": exact_ms, "build_s": build_s})
        for ef in (20, 40, 64, 128, 256):
            got, ms = run(qe.SearchParams(hnsw_ef=ef))
            recalls = [len(g & e) / max(1, len(e)) for g, e in zip(got, exact_ids)]
            rows.append({"m": m, "ef_construct": ef_construct, "hnsw_ef": ef, "recall": float(np.mean(recalls)),
                         "min": float(np.min(recalls)), "ms": ms, "build_s": build_s})
        shard.close()
        shutil.rmtree(path, ignore_errors=True)
    print(json.dumps({"roots": len(roots), "queries": len(queries), "rows": rows}))
