"""Where a default (knee) search's time goes on a scale folder: every store round trip and every
engine call timed, in one process (issue 26).

    python benchmarks/scale_split.py --scale-dir DIR --size 1000000 --queries 100 [--replay 20] [--bm25-groups 1000]

``DIR/n<size>`` is a folder ``benchmarks/engine.py --scale`` built (two processes never open one
folder: copy it for a second run). Query encoding is excluded (the folder's own query vectors).
Printed: knee p50 / p95 and flat p50 (alternated, as ``engine.py``), each round trip's wall time
(median per search), each engine call's time by the trip that made it, engine total and the rest
(Python). ``--replay N``: each request of the first N searches' batches run again alone (min of
3), which splits a batch's engine time by request. ``--bm25-groups CAP``: the focus step's global
BM25 side also sent as one request per group of documents holding fewer than CAP nodes (so that
the engine scores each group's points one by one instead of walking its inverted index with the
filter checked per posting), the groups' hits merged by score, then id; timed against the one
request (ordered the same way), and the two lists compared. The engine's own split
(``store/edge/split.py``, history/RESULTS-2026.md "scale9") is switched off for this option, so the knee figures
printed with it are those of the one request.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import engine_scale  # noqa: E402


class _Timed:
    """An engine shard whose every call is timed into ``log`` under the current trip's name."""

    def __init__(self, shard: Any, name: str, log: List[tuple], state: Dict[str, Any]) -> None:
        self._shard, self._name, self._log, self._state = shard, name, log, state

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._shard, attr)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            out = value(*args, **kwargs)
            self._log.append((self._state["trip"], self._name, attr, time.perf_counter() - started))
            if attr == "query_batch" and self._state["capture"] is not None:
                self._state["capture"].append((self._state["trip"], self._name, args[0]))
            return out
        return call


def trip_kind(requests: Any) -> str:
    """The walk's round trip a rank call is: roots, beam, focus (scored), score (public cosines), flat."""
    if any(r.with_scores for r in requests):
        return "focus"
    if any(r.level == 0 and r.candidate_ids is None for r in requests):
        return "roots"
    if any(r.only == "dense" and r.candidate_ids is not None for r in requests):
        return "score"
    if any(r.leaves_only and r.candidate_ids is None for r in requests):
        return "flat"
    return "beam"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale-dir", required=True)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--replay", type=int, default=0)
    parser.add_argument("--bm25-groups", type=int, default=0)
    args = parser.parse_args()

    import qdrant_edge as qe

    from drag_knee_retriever import DragKneeIndex, StoreConfig
    from drag_knee_retriever.store import QueryVectors

    folder = engine_scale.folder_for(args.scale_dir, args.size)
    queries = [(q["text"], QueryVectors(dense=tuple(q["dense"]), sparse_indices=tuple(q["sparse_indices"]),
                                        sparse_values=tuple(q["sparse_values"])))
               for q in json.loads((folder / "queries.json").read_text())]
    encoder = engine_scale._encoder()
    encoder.encode_query("warm the encoder up")
    started = time.perf_counter()
    index = DragKneeIndex(str(folder / "index"), embedding=encoder,
                          store=StoreConfig(collection=engine_scale.COLLECTION, engine="edge"))
    open_s = time.perf_counter() - started
    store = index.store
    if args.bm25_groups:
        # The engine splits that side itself where it pays (store/edge/split.py); off here, so the
        # batches hold the one request this option times against its groups.
        from drag_knee_retriever.store.edge.split import SplitRule
        store.sparse_split = SplitRule(share=0.0)
    log: List[tuple] = []
    trips: List[tuple] = []
    state: Dict[str, Any] = {"trip": "other", "capture": None}
    rank, retrieve = store.rank, store.retrieve

    def timed_rank(requests, query, **kw):
        state["trip"] = kind = trip_kind(requests)
        if kind == "focus" and state["capture"] is not None:
            state["focus_requests"] = list(requests)
        t = time.perf_counter()
        try:
            return rank(requests, query, **kw)
        finally:
            trips.append((kind, time.perf_counter() - t))
            state["trip"] = "other"

    def timed_retrieve(ids):
        state["trip"] = "fetch"
        t = time.perf_counter()
        try:
            return retrieve(ids)
        finally:
            trips.append(("fetch", time.perf_counter() - t))
            state["trip"] = "other"

    store.rank, store.retrieve = timed_rank, timed_retrieve
    text, vectors = queries[-1]
    t = time.perf_counter()
    index.search(text, method="knee", query_vectors=vectors)  # rebuilds the BM25 frequencies
    first_s = time.perf_counter() - t
    nodes_shard = store._shard  # the benchmark times the store's private shards
    store._shard = _Timed(nodes_shard, "nodes", log, state)
    if store._roots is not None:
        store._roots = _Timed(store._roots, "roots", log, state)
    for text, vectors in queries[-6:-1]:  # warm up
        index.flat_search(text, k=10, query_vectors=vectors)
        index.search(text, method="knee", query_vectors=vectors)

    rows, flat_ms, captured = [], [], []
    for position, (text, vectors) in enumerate(queries[: args.queries]):
        if position % 2:
            t = time.perf_counter()
            index.flat_search(text, k=10, query_vectors=vectors)
            flat_ms.append((time.perf_counter() - t) * 1e3)
        log.clear()
        trips.clear()
        state["capture"] = [] if position < max(args.replay, 1 if args.bm25_groups else 0) else None
        t = time.perf_counter()
        result = index.search(text, method="knee", query_vectors=vectors)
        total = (time.perf_counter() - t) * 1e3
        if state["capture"] is not None:
            captured.append((vectors, state.pop("focus_requests", []), state["capture"]))
        state["capture"] = None
        wall: Dict[str, float] = defaultdict(float)
        for kind, s in trips:
            wall[kind] += s * 1e3
        engine: Dict[str, float] = defaultdict(float)
        calls: Dict[str, int] = defaultdict(int)
        for trip, shard, method, s in log:
            engine[f"{trip}: {shard}.{method}"] += s * 1e3
            calls[f"{trip}: {shard}.{method}"] += 1
        rows.append({"total": total, "wall": wall, "engine": engine, "calls": calls,
                     "candidates": sum(len(s.candidates) for s in result.trace.steps)})
        if position % 2 == 0:
            t = time.perf_counter()
            index.flat_search(text, k=10, query_vectors=vectors)
            flat_ms.append((time.perf_counter() - t) * 1e3)

    def med(values):
        return statistics.median(values) if values else float("nan")

    totals = [r["total"] for r in rows]
    print(f"{args.size:,} nodes: open {open_s:.1f} s, first search {first_s:.1f} s, RSS "
          f"{engine_scale._rss() / 2**20:,.0f} MB; {len(rows)} knee searches p50 {med(totals):.2f} ms, p95 "
          f"{np.percentile(totals, 95):.2f}; flat p50 {med(flat_ms):.2f} ms; trace candidates "
          f"{med([r['candidates'] for r in rows]):.0f}")
    print("round trips, wall ms per search (median / mean):")
    for kind in sorted({k for r in rows for k in r["wall"]}):
        values = [r["wall"].get(kind, 0.0) for r in rows]
        print(f"  {kind:8s} {med(values):8.2f} {statistics.mean(values):8.2f}")
    print("engine calls, ms per search (median / mean, calls a search):")
    for key in sorted({k for r in rows for k in r["engine"]}):
        values = [r["engine"].get(key, 0.0) for r in rows]
        calls = statistics.mean([r["calls"].get(key, 0) for r in rows])
        print(f"  {key:28s} {med(values):8.2f} {statistics.mean(values):8.2f}  {calls:.2f}")
    engine_total = [sum(r["engine"].values()) for r in rows]
    print(f"engine total {med(engine_total):.2f} ms, the rest (Python) "
          f"{med([r['total'] - e for r, e in zip(rows, engine_total)]):.2f} ms (medians per search)")

    shards = {"nodes": nodes_shard, "roots": store._roots._shard if store._roots is not None else None}
    if args.replay:
        alone: Dict[str, List[float]] = defaultdict(list)
        for _, _, batches in captured[: args.replay]:
            for trip, name, batch in batches:
                for number, request in enumerate(batch.queries):
                    best = min(_time(shards[name].query, request) for _ in range(3))
                    alone[f"{trip}: {name} request {number}"].append(best * 1e3)
        print("each request of a batch alone, ms (min of 3, median over searches):")
        for key in sorted(alone):
            print(f"  {key:28s} {med(alone[key]):8.2f}  (n={len(alone[key])})")
    if args.bm25_groups:
        bm25_groups(qe, store, shards["nodes"], captured, args.bm25_groups)
    index.close()


def _time(call: Any, *args: Any) -> float:
    started = time.perf_counter()
    call(*args)
    return time.perf_counter() - started


def bm25_groups(qe: Any, store: Any, shard: Any, captured: List[tuple], cap: int) -> None:
    """The focus batch's global BM25 side (its 4th request: regions dense, regions BM25, global
    dense, global BM25) against the same ranking split into groups of documents of < ``cap`` nodes."""
    from drag_knee_retriever.store.base import TIE_MARGIN

    leaf = qe.FieldCondition(key="is_leaf", match=qe.MatchValue(np.bool_(True)))
    counts: Dict[str, int] = {}
    one, split, same, same_scores, groups_per = [], [], 0, 0, []
    for vectors, focus_requests, batches in captured:
        request = [b for trip, _, b in batches if trip == "focus"][-1].queries[3]
        # The global list's documents: its filter's last condition (traversal._global_filters).
        docs = list([r for r in focus_requests if r.leaves_only][0].filters[-1].values)
        groups, current, size = [], [], 0
        for doc in docs:
            if doc not in counts:
                counts[doc] = shard.count(qe.CountRequest(exact=True, filter=qe.Filter(
                    must=[qe.FieldCondition(key="doc_id", match=qe.MatchValue(doc))])))
            if current and size + counts[doc] >= cap:
                groups.append(current)
                current, size = [], 0
            current.append(doc)
            size += counts[doc]
        groups.append(current)
        groups_per.append(len(groups))
        _, sparse_q = store._query(vectors)
        parts = qe.QueryBatchRequest([qe.QueryRequest(
            limit=request.limit, query=sparse_q, with_payload=False,
            filter=qe.Filter(must=[qe.FieldCondition(key="doc_id", match=qe.MatchAny(g)), leaf])) for g in groups])
        a, b = shard.query(request), shard.query_batch(parts)
        one.append(min(_time(shard.query, request) for _ in range(3)) * 1e3)
        split.append(min(_time(shard.query_batch, parts) for _ in range(3)) * 1e3)
        # Compared as the store cuts a side: ordered by score, then id, the tie margin's points dropped.
        keep = max(request.limit - TIE_MARGIN, 1)
        listed = sorted(((str(p.id), p.score) for p in a), key=lambda t: (-t[1], t[0]))[:keep]
        merged = sorted(((str(p.id), p.score) for part in b for p in part), key=lambda t: (-t[1], t[0]))[:keep]
        same += listed == merged
        same_scores += [s for _, s in listed] == [s for _, s in merged]
    print(f"global BM25 side, {len(one)} searches: one request {statistics.median(one):.2f} ms, "
          f"{statistics.median(groups_per):.0f} groups of < {cap} nodes {statistics.median(split):.2f} ms (min of 3, "
          f"medians); the same list {same}, the same scores in the same order {same_scores}")


if __name__ == "__main__":
    main()
