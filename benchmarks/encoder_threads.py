"""Intra-op threads against data-parallel workers for the dense encoder, on the same MMLongBench pages.

    nice -n 10 python benchmarks/encoder_threads.py [--pages 300] [--rounds 2]

Every setting encodes the same ~300 text pages (the first pages of the mmlb20 documents: MMLongBench
single-document, documents of <= 20 pages), length-sorted in batches of 4 as ingestion does, and reports
pages/s (wall) and CPU seconds; settings alternate over ``--rounds`` rounds and the median is shown:

- ``threads=1``: one onnxruntime session, one intra-op thread (the baseline: one core);
- ``threads=2``: one session, two intra-op threads (``EmbeddingConfig(threads=2)``);
- ``fastembed parallel=2``: fastembed's data-parallel workers (two processes, one thread each; one
  ``passage_embed`` call over all pages, its pool started inside the call);
- ``sessions=2``: ``EmbeddingConfig(parallel=2)``: two sessions of one thread each in this process,
  the length-sorted batches shared out to two Python threads (onnxruntime releases the GIL while it runs).

The vectors of every setting are checked against the baseline's (max |cos - 1|). The last line reads
``best=<setting> speedup_vs_threads1=<x> threads2_speedup=<y> parallel2_speedup=<z> sessions2_speedup=<w>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from drag_knee_retriever.config import EmbeddingConfig, EncoderRuntime  # noqa: E402
from drag_knee_retriever.embeddings.fastembed import FastEmbedDense  # noqa: E402


def pages(limit: int) -> List[str]:
    """The first ``limit`` non-empty text pages of the mmlb20 documents, in document order."""
    from benchmarks.datasets import load_dataset

    ds = load_dataset("mmlongbench", None, max_doc_pages=20)
    texts = [p for doc in ds.documents for p in doc.pages if p.strip()]
    return texts[:limit]


def single(threads: int) -> Callable[[Sequence[str]], np.ndarray]:
    model = FastEmbedDense(EmbeddingConfig(runtime=EncoderRuntime(threads=threads)))
    return model.embed_passages


def fastembed_parallel(workers: int) -> Callable[[Sequence[str]], np.ndarray]:
    model = FastEmbedDense(EmbeddingConfig(runtime=EncoderRuntime(threads=1)))

    def run(texts: Sequence[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = list(model._model.passage_embed([texts[i] for i in order], batch_size=4, parallel=workers))
        out = np.zeros((len(texts), model.dimension), dtype=np.float32)
        for i, v in zip(order, vectors):
            out[i] = v
        return out

    return run


def sessions(count: int) -> Callable[[Sequence[str]], np.ndarray]:
    """``EmbeddingConfig(parallel=count)``: the package's in-process data-parallel sessions."""
    return FastEmbedDense(EmbeddingConfig(runtime=EncoderRuntime(threads=1, parallel=count))).embed_passages


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    texts = pages(args.pages)
    settings: Dict[str, Callable[[Sequence[str]], np.ndarray]] = {
        "threads=1": single(1), "threads=2": single(2),
        "fastembed parallel=2": fastembed_parallel(2), "sessions=2": sessions(2),
    }
    walls: Dict[str, List[float]] = {k: [] for k in settings}
    cpus: Dict[str, List[float]] = {k: [] for k in settings}
    reference = None
    drift: Dict[str, float] = {}
    for r in range(args.rounds):
        for name, run in settings.items():
            load = os.getloadavg()[0]
            c0, w0 = time.process_time(), time.perf_counter()
            vectors = run(texts)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            walls[name].append(wall)
            cpus[name].append(cpu)
            if reference is None:
                reference = vectors
            cos = np.sum(vectors * reference, axis=1) / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1))
            drift[name] = max(drift.get(name, 0.0), float(np.max(np.abs(cos - 1.0))))
            print(f"round {r + 1} {name}: {len(texts) / wall:.2f} pages/s ({wall:.1f} s wall, "
                  f"{cpu:.1f} s CPU in this process, load {load:.1f})", file=sys.stderr, flush=True)
    chars = sum(len(t) for t in texts)
    print(f"{len(texts)} pages ({chars:,} characters), {args.rounds} rounds, median of each; load average "
          f"now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| setting | pages/s | x threads=1 | wall s | CPU s (this process) | max abs(cos-1) vs threads=1 |")
    print("|---|---:|---:|---:|---:|---:|")
    base = statistics.median(walls["threads=1"])
    speed = {}
    for name in settings:
        wall = statistics.median(walls[name])
        speed[name] = base / wall
        print(f"| {name} | {len(texts) / wall:.2f} | {base / wall:.2f} | {wall:.1f} | {statistics.median(cpus[name]):.1f} "
              f"| {drift[name]:.1e} |")
    best = max(speed, key=speed.get)
    print(f"best={best.replace(' ', '_')} speedup_vs_threads1={speed[best]:.2f} threads2_speedup={speed['threads=2']:.2f} "
          f"parallel2_speedup={speed['fastembed parallel=2']:.2f} sessions2_speedup={speed['sessions=2']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
