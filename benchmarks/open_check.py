"""What the integrity check costs when an index opens and closes (issue 25, item 4).

Builds Qdrant Edge folders of synthetic trees (engine.py's corpus: real tree shapes, random unit
vectors, no encoding) once under ``--dir`` and measures, per size, alternating A/B in one run:

- ``open``: ``EdgeStore(...)`` + ``open_collection(...)`` with every check of store/integrity.py,
  against the same open with the damage check (counts + sample) switched off;
- the check alone (``check_intact``: two counts and one scroll of 64 nodes with vectors);
- the sample alone (``check_sample``: that scroll, of 64 nodes' walk fields, text, check and both
  vectors, each verified against its check, store/checksums.py; run against a release before
  issue 38, what its check did after the counts: walk fields and dense vectors, norms checked);
- ``record``: what ``close()`` adds (two counts and one small file write), timed alone.

``--write N`` (issue 38, item 7) also times the write path: N synthetic nodes upserted into a
fresh folder with each node's check computed (``add_checks``) and without, alternating.

    python benchmarks/open_check.py --sizes 200,20000 --reps 11 --write 3000
    # before: the same script on the release before issue 38 (its own folders: no checks in them)
    PYTHONPATH=<a checkout of that release> python benchmarks/open_check.py --sizes 200,20000 --reps 11 \
        --dir /tmp/drag-knee-open-check-before

Times are medians in milliseconds; the machine's load shows in the spread, not in the ratio. The
"alone" timings run once the store's node map has loaded (during an open, its loader thread
competes for the interpreter: a check then costs more, as the open columns show).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

MODEL, SPARSE, DIM = "synthetic/unit-vectors", "Qdrant/bm25:english", 384


def build(folder: Path, nodes: int) -> int:
    from engine import synthetic_corpus

    from drag_knee_retriever.store import EdgeStore

    store = EdgeStore("drag_knee", location=str(folder))
    store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model=SPARSE)
    for records in synthetic_corpus(nodes, seed=25):
        with store.writing(sorted({r.node.doc_id for r in records})):
            store.upsert(records)
    count = store.count()
    store.close()
    return count


def open_store(folder: Path, check: bool):
    import drag_knee_retriever.store.integrity as integrity
    from drag_knee_retriever.store import EdgeStore

    original = integrity.check_intact
    if not check:
        integrity.check_intact = lambda *args, **kwargs: None
    try:
        started = time.perf_counter()
        store = EdgeStore("drag_knee", location=str(folder))
        store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model=SPARSE)
        return store, time.perf_counter() - started
    finally:
        integrity.check_intact = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,100000", help="index sizes in nodes, comma-separated")
    parser.add_argument("--dir", default="/tmp/drag-knee-open-check", help="where the folders are built (reused)")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--write", type=int, default=0, help="also time writing this many nodes, checks on/off")
    args = parser.parse_args()
    from drag_knee_retriever.store.integrity import check_intact, record_counts

    sample = _sample_check()
    print("| nodes | open with check (ms) | open without (ms) | check alone (ms) | sample alone (ms) | "
          "record on close (ms) |")
    print("|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",") if s):
        folder = Path(args.dir) / f"edge-{size}"
        if not (folder / "drag_knee" / "edge_config.json").exists():
            started = time.perf_counter()
            built = build(folder, size)
            print(f"(built {built:,} nodes in {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        with_check, without, alone, sampled, record = [], [], [], [], []
        nodes = 0
        for rep in range(args.reps):
            for check in ((True, False) if rep % 2 == 0 else (False, True)):  # alternate A/B
                store, seconds = open_store(folder, check)
                (with_check if check else without).append(seconds)
                if check:
                    nodes = store.count()
                    if hasattr(store, "wait_for_node_map"):  # the "alone" timings without the map's loader
                        store.wait_for_node_map(60)
                    started = time.perf_counter()
                    check_intact(store, store.record.load(), DIM)
                    alone.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    sample(store, DIM)
                    sampled.append(time.perf_counter() - started)
                    store._write_noted = True  # as after a write: close() records the counts
                    started = time.perf_counter()
                    record_counts(store)
                    record.append(time.perf_counter() - started)
                store.close()
        ms = lambda values: f"{statistics.median(values) * 1e3:.1f}"  # noqa: E731
        print(f"| {nodes:,} | {ms(with_check)} | {ms(without)} | {ms(alone)} | {ms(sampled)} | {ms(record)} |",
              flush=True)
    if args.write:
        write_cost(Path(args.dir), args.write, args.reps)


def _sample_check():
    """The sample check alone; in a release before issue 38, what its check_intact did after the counts."""
    import drag_knee_retriever.store.integrity as integrity

    if hasattr(integrity, "check_sample"):
        return integrity.check_sample
    return lambda store, dim: [integrity._node_problem(payload, vector, dim)
                               for _, payload, vector in store._sample_nodes(integrity.SAMPLE)]


def write_cost(base: Path, nodes: int, reps: int) -> None:
    """Seconds to upsert ``nodes`` synthetic nodes (built beforehand) into a fresh folder (one
    ``writing`` block per batch of documents, as an ingest does), each node's check computed or not."""
    import shutil

    from engine import synthetic_corpus

    import drag_knee_retriever.store.edge.engine as edge_engine
    from drag_knee_retriever.store import EdgeStore

    try:  # where the Edge store's upsert calls it (edge/writes.py since issue 39; engine.py before)
        import drag_knee_retriever.store.edge.writes as edge_engine  # noqa: F811
    except ImportError:
        pass

    batches = list(synthetic_corpus(nodes, seed=38))
    has_checks = hasattr(edge_engine, "add_checks")
    original = getattr(edge_engine, "add_checks", None)
    timings = {True: [], False: []}
    cpu = {True: [], False: []}
    for rep in range(reps):
        for checks in ((True, False) if rep % 2 == 0 else (False, True)):
            if has_checks and not checks:
                edge_engine.add_checks = lambda *args, **kwargs: None
            folder = base / "write"
            shutil.rmtree(folder, ignore_errors=True)
            try:
                store = EdgeStore("drag_knee", location=str(folder))
                store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model=SPARSE)
                started, started_cpu = time.perf_counter(), time.process_time()
                for records in batches:
                    with store.writing(sorted({r.node.doc_id for r in records})):
                        store.upsert(records)
                timings[checks].append(time.perf_counter() - started)
                cpu[checks].append(time.process_time() - started_cpu)
                store.close()
            finally:
                if has_checks:
                    edge_engine.add_checks = original
    s = lambda values: f"{statistics.median(values):.2f}"  # noqa: E731
    name = "this release" if has_checks else "a release without checks"
    print(f"\n| write {nodes:,} nodes (s) | with checks | without |\n|---|---|---|\n"
          f"| {name}, wall | {s(timings[True])} | {s(timings[False])} |\n"
          f"| {name}, CPU of the process | {s(cpu[True])} | {s(cpu[False])} |", flush=True)


if __name__ == "__main__":
    main()
