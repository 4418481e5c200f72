"""What the integrity check costs when an index opens and closes (issue 25, item 4).

Builds Qdrant Edge folders of synthetic trees (engine.py's corpus: real tree shapes, random unit
vectors, no encoding) once under ``--dir`` and measures, per size, alternating A/B in one run:

- ``open``: ``EdgeStore(...)`` + ``open_collection(...)`` with every check of store/integrity.py,
  against the same open with the damage check (counts + sample) switched off;
- the check alone (``check_intact``: two counts and one scroll of 64 nodes with vectors);
- ``record``: what ``close()`` adds (two counts and one small file write), timed alone.

    python benchmarks/open_check.py --sizes 200,100000 --reps 7

Times are medians in milliseconds; the machine's load shows in the spread, not in the ratio.
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
    args = parser.parse_args()
    from drag_knee_retriever.store.integrity import check_intact, record_counts

    print("| nodes | open with check (ms) | open without (ms) | check alone (ms) | record on close (ms) |")
    print("|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        folder = Path(args.dir) / f"edge-{size}"
        if not (folder / "drag_knee" / "edge_config.json").exists():
            started = time.perf_counter()
            built = build(folder, size)
            print(f"(built {built:,} nodes in {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        with_check, without, alone, record = [], [], [], []
        nodes = 0
        for rep in range(args.reps):
            for check in ((True, False) if rep % 2 == 0 else (False, True)):  # alternate A/B
                store, seconds = open_store(folder, check)
                (with_check if check else without).append(seconds)
                if check:
                    nodes = store.count()
                    started = time.perf_counter()
                    check_intact(store, store.record.load(), DIM)
                    alone.append(time.perf_counter() - started)
                    store._write_noted = True  # as after a write: close() records the counts
                    started = time.perf_counter()
                    record_counts(store)
                    record.append(time.perf_counter() - started)
                store.close()
        ms = lambda values: f"{statistics.median(values) * 1e3:.1f}"  # noqa: E731
        print(f"| {nodes:,} | {ms(with_check)} | {ms(without)} | {ms(alone)} | {ms(record)} |",
              flush=True)


if __name__ == "__main__":
    main()
