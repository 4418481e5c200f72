"""Encoder budget: recall bought per encode-second by the encoding defaults (issue 17 item 3, issue 14 item 2).

    nice -n 10 python benchmarks/encoder_budget.py --out CACHE/encbudget/budget \\
        --embedding-cache CACHE/encbudget/emb [--datasets mmlb20 covidqa xqen xqru] [--variants default mt256 ...]

For every dataset and every encoding variant (``EmbeddingConfig.max_tokens``, ``BuildConfig.passage_words``,
``BuildConfig.inner_vectors``) it builds the index through the eval harness (``run_eval`` with the variant
as the index's build, methods ``flat_hybrid_*`` and ``drag_knee``) and prints one table row:

- the dense texts the index encodes (leaves, and inner summaries unless ``inner_vectors=centroid``) and
  their tokens as the encoder reads them (after truncation at ``max_tokens``);
- **encode CPU-seconds**: process CPU time of ``Encoder.encode_dense`` (the ingest code path: length
  sorted, character-bounded batches) on exactly those texts, measured in this run on a systematic
  sample of them (``--time-fraction``, every n-th text by length) and scaled up; ``threads=1``, so CPU
  seconds are close to one core's wall seconds and hardly move with the machine's load;
- flat hybrid recall@5 and flat hybrid recall at a fixed token budget (interpolated on its k=1..20 sweep;
  leaves of other sizes return other tokens at k=5), each with its paired 95% bootstrap difference
  against the default row of the same dataset;
- the default method's (``drag_knee``) recall and tokens, and its gain at equal tokens over flat hybrid
  on the same index with its 95% interval (the eval headline).

The vectors come from ``--embedding-cache`` (one file per encoder fingerprint; a new ``max_tokens`` is a
new fingerprint and encodes once); the timing always encodes. Per-variant results (aggregates plus
per-question recall/tokens for the bootstrap) are kept in ``--out`` and reused on a second run
(``--fresh`` to redo); MMLongBench's licence keeps them out of git. The default row is timed twice
(first and last) so the table shows the timing noise of the run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from drag_knee_retriever.config import BuildConfig, EmbeddingConfig, EncoderRuntime  # noqa: E402
from drag_knee_retriever.eval.metrics import interpolate_curve  # noqa: E402

log = logging.getLogger("encoder_budget")


@dataclass(frozen=True)
class Variant:
    """One encoding setting: the encoder's token limit and the build fields that change what is encoded."""

    label: str
    max_tokens: Optional[int] = None
    build: Tuple[Tuple[str, Any], ...] = ()

    def build_config(self) -> BuildConfig:
        return BuildConfig(**dict(self.build))


#: In priority order (a run cut short still has the main ones). ``default`` is today's setting:
#: max_tokens None (fastembed reads 512 word pieces of MiniLM), pages as leaves, inner_vectors="both".
VARIANTS: Dict[str, Variant] = {v.label: v for v in (
    Variant("default"),
    Variant("mt256", 256),
    Variant("mt128", 128),
    Variant("pw120", None, (("passage_words", 120),)),
    Variant("pw200", None, (("passage_words", 200),)),
    Variant("pw300", None, (("passage_words", 300),)),
    Variant("centroid", None, (("inner_vectors", "centroid"),)),
    Variant("summary", None, (("inner_vectors", "summary"),)),
    Variant("pw120+centroid", None, (("passage_words", 120), ("inner_vectors", "centroid"))),
    Variant("pw200+mt256", 256, (("passage_words", 200),)),
    Variant("mt256+centroid", 256, (("inner_vectors", "centroid"),)),
)}

#: dataset label -> (eval dataset name, load_dataset keywords, token budget for "flat recall @ T").
DATASETS: Dict[str, Tuple[str, Dict[str, Any], int]] = {
    "mmlb20": ("mmlongbench", {"max_doc_pages": 20}, 1000),
    "covidqa": ("covidqa", {"limit_docs": 30}, 400),
    # Paragraphs of ~100-250 word pieces: the set where a 128-token window cuts most leaves.
    "xqen": ("xquad-en", {"limit_questions": 400}, 200),
    # The same paragraphs in Russian: MiniLM's English word pieces split Russian words finely.
    "xqru": ("xquad-ru", {"limit_questions": 400}, 300),
    # Meeting transcripts (run_default.sh's ``qmsum``): long spoken turns, passages of ~150-200 words.
    "qmsum": ("qmsum", {}, 1000),
}


class RecordingEncoder:
    """Passes everything to ``inner`` and keeps the texts ``encode_dense`` was asked for (the eval
    runner puts its own in-memory cache in front, so each distinct text arrives once)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.texts: List[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def encode_dense(self, texts: Sequence[str], progress: Any = None) -> Any:
        self.texts.extend(texts)
        return self._inner.encode_dense(texts, progress=progress)

    def encode_query(self, text: str) -> Any:
        return self._inner.encode_query(text)

    def encode_sparse(self, texts: Sequence[str]) -> Any:
        return self._inner.encode_sparse(texts)


def _sample(texts: Sequence[str], fraction: float) -> List[str]:
    """Every n-th text by length (a systematic sample: the batches keep the full run's shape)."""
    ordered = sorted(texts, key=len)
    if fraction >= 1.0 or len(ordered) < 8:
        return ordered
    step = max(1, int(round(1.0 / fraction)))
    return ordered[step // 2::step]


def time_encoding(encoder: Any, texts: Sequence[str], fraction: float) -> Dict[str, float]:
    """Process CPU seconds (and wall seconds) of ``encoder.encode_dense`` on ``texts``, from a sample."""
    sample = _sample(texts, fraction)
    scale = len(texts) / len(sample) if sample else 0.0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    encoder.encode_dense(sample)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {"encode_cpu_s": cpu * scale, "encode_wall_s": wall * scale, "timed_texts": len(sample),
            "timed_cpu_s": cpu}


def count_tokens(model_folder: str, texts: Sequence[str], max_tokens: int) -> int:
    """Word pieces the encoder reads (special tokens included, truncated at ``max_tokens``)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(model_folder) / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=max_tokens)
    return int(sum(len(e.ids) for e in tok.encode_batch(list(texts))))


def _per_question(report: Any) -> Dict[str, Dict[str, List[float]]]:
    out: Dict[str, Dict[str, List[float]]] = {}
    for q in report.questions:
        for name, rec in q["methods"].items():
            entry = out.setdefault(name, {"recall": [], "tokens": []})
            entry["recall"].append(float(rec["metrics"]["recall"]))
            entry["tokens"].append(float(rec["metrics"]["tokens"]))
    return out


def run_variant(dataset: str, variant: Variant, ds: Any, cache_dir: Optional[Path], out_dir: Path,
                time_fraction: float, threads: int) -> Tuple[Dict[str, Any], List[str]]:
    """Index ``ds`` with ``variant`` through the eval harness, time its encoding, return the row."""
    from drag_knee_retriever.embeddings import Encoder
    from drag_knee_retriever.eval.encoding import CachingEncoder
    from drag_knee_retriever.eval.runner import run_eval

    emb = EmbeddingConfig(language=ds.language, max_input_tokens=variant.max_tokens, runtime=EncoderRuntime(threads=threads))
    raw = Encoder(emb)
    recorder = RecordingEncoder(CachingEncoder(raw, cache_dir))
    started = time.perf_counter()
    report = run_eval(ds, out_dir / dataset / variant.label.replace("+", "_"), methods=["flat_hybrid_*", "drag_knee"],
                      build=variant.build_config(), encoder=recorder, progress=False, plot=False)
    recorder._inner.save()
    timing = time_encoding(raw, recorder.texts, time_fraction)
    from drag_knee_retriever.embeddings.fastembed import resolve_model_path

    model_folder, _ = resolve_model_path(emb.model_name, emb.model_path)
    limit = variant.max_tokens or 512
    summary, headline = report.summary, report.headline
    stats = report.meta["indexes"]["default"].get("stats", {})
    row = {
        "dataset": dataset, "variant": variant.label, "max_tokens": limit,
        "build": dict(variant.build), "questions": len(report.questions),
        "leaves": stats.get("leaves"), "nodes": stats.get("nodes"),
        "dense_texts": len(recorder.texts),
        "tokens_encoded": count_tokens(model_folder, recorder.texts, limit) if model_folder else None,
        **timing, "time_fraction": time_fraction, "threads": threads,
        "flat_k5_recall": summary["flat_hybrid_k5"]["recall"], "flat_k5_tokens": summary["flat_hybrid_k5"]["tokens"],
        "flat_curve": [(summary[n]["tokens"], summary[n]["recall"]) for n in summary if n.startswith("flat_hybrid_k")],
        "knee_recall": summary["drag_knee"]["recall"], "knee_tokens": summary["drag_knee"]["tokens"],
        "knee_gain": headline.get("default_recall_gain_at_equal_tokens"),
        "knee_gain_ci95": headline.get("default_recall_gain_ci95"),
        "run_seconds": round(time.perf_counter() - started, 1),
        "per_question": _per_question(report),
    }
    return row, recorder.texts


def _curve_at(per_q: Dict[str, Dict[str, np.ndarray]], idx: np.ndarray, budget: float) -> float:
    points = [(v["tokens"][idx].mean(), v["recall"][idx].mean()) for n, v in per_q.items()
              if n.startswith("flat_hybrid_k")]
    return interpolate_curve(points, budget)[0]


def paired_differences(row: Dict[str, Any], base: Dict[str, Any], budget: float, resamples: int = 2000,
                       seed: int = 0) -> Dict[str, Any]:
    """Variant minus default: flat recall@5 and flat recall at ``budget`` tokens, 95% paired bootstrap."""
    def arrays(r: Dict[str, Any]) -> Dict[str, Dict[str, np.ndarray]]:
        return {n: {k: np.asarray(v[k]) for k in ("recall", "tokens")} for n, v in r["per_question"].items()
                if n.startswith("flat_hybrid_k")}

    a, b = arrays(row), arrays(base)
    size = len(a["flat_hybrid_k5"]["recall"])
    every = np.arange(size)
    d5 = a["flat_hybrid_k5"]["recall"] - b["flat_hybrid_k5"]["recall"]
    rng = np.random.default_rng(seed)
    boot5, bootT = [], []
    for _ in range(resamples):
        idx = rng.integers(0, size, size)
        boot5.append(d5[idx].mean())
        bootT.append(_curve_at(a, idx, budget) - _curve_at(b, idx, budget))
    return {"flat_at_budget": _curve_at(a, every, budget), "d_k5": float(d5.mean()),
            "d_k5_ci95": [float(x) for x in np.percentile(boot5, [2.5, 97.5])],
            "d_budget": _curve_at(a, every, budget) - _curve_at(b, every, budget),
            "d_budget_ci95": [float(x) for x in np.percentile(bootT, [2.5, 97.5])]}


def _ci(ci: Optional[Sequence[float]]) -> str:
    return "–" if not ci else f"{ci[0]:+.3f}..{ci[1]:+.3f}"


def table(rows: List[Dict[str, Any]], base_retime: Dict[str, Dict[str, float]]) -> str:
    """The markdown table: one line per (dataset, variant); aggregates only."""
    lines = ["| dataset | variant | max_tokens | leaves | dense texts | tokens encoded | encode CPU-s | x default "
             "| flat R@5 (tokens) | Δ R@5 vs default (95%) | flat R@T | Δ R@T vs default (95%) "
             "| knee recall @ tokens | knee gain @ equal tokens (95%) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---|"]
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        part = [r for r in rows if r["dataset"] == dataset]
        base = next((r for r in part if r["variant"] == "default"), None)
        budget = DATASETS[dataset][2]
        for r in part:
            diff = paired_differences(r, base, budget) if base else {}
            ratio = r["encode_cpu_s"] / base["encode_cpu_s"] if base and base["encode_cpu_s"] else float("nan")
            is_base = r is base
            d5 = "–" if is_base else f"{diff['d_k5']:+.3f} ({_ci(diff['d_k5_ci95'])})"
            dT = "–" if is_base else f"{diff['d_budget']:+.3f} ({_ci(diff['d_budget_ci95'])})"
            lines.append(
                f"| {dataset} | `{r['variant']}` | {r['max_tokens']} | {r['leaves']} | {r['dense_texts']} "
                f"| {r['tokens_encoded']:,} | {r['encode_cpu_s']:.1f} | {ratio:.2f} "
                f"| {r['flat_k5_recall']:.3f} ({r['flat_k5_tokens']:.0f}) "
                f"| {d5} "
                f"| {diff.get('flat_at_budget', float('nan')):.3f} "
                f"| {dT} "
                f"| {r['knee_recall']:.3f} @ {r['knee_tokens']:.0f} "
                f"| {r['knee_gain']:+.3f} ({_ci(r['knee_gain_ci95'])}) |")
        again = base_retime.get(dataset)
        if base and again:
            lines.append(f"<!-- {dataset}: default re-timed at the end: {again['encode_cpu_s']:.1f} CPU-s "
                         f"(first {base['encode_cpu_s']:.1f}) -->")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="Folder for per-variant results (outside git).")
    parser.add_argument("--embedding-cache", type=Path, default=None, help="Passage-vector cache folder.")
    parser.add_argument("--datasets", nargs="+", default=["mmlb20", "covidqa"], choices=list(DATASETS))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--time-fraction", type=float, default=0.25,
                        help="Share of each variant's dense texts encoded for the timing (1 = all).")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads of the encoder.")
    parser.add_argument("--fresh", action="store_true", help="Redo variants already in --out.")
    parser.add_argument("--no-retime", action="store_true", help="Do not time the default row again at the end.")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    for noisy in ("drag_knee_retriever", "fastembed", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from benchmarks.datasets import load_dataset

    variants = list(dict.fromkeys(["default"] + args.variants))
    rows: List[Dict[str, Any]] = []
    retime: Dict[str, Dict[str, float]] = {}
    texts_by_dataset: Dict[str, List[str]] = {}
    for dataset in args.datasets:
        name, kwargs, _ = DATASETS[dataset]
        ds = load_dataset(name, None, **kwargs)
        for label in variants:
            path = args.out / dataset / f"{label.replace('+', '_')}.json"
            if path.is_file() and not args.fresh:
                rows.append(json.loads(path.read_text()))
                log.info("%s %s: reused %s", dataset, label, path)
                continue
            log.info("%s %s: building and timing", dataset, label)
            row, texts = run_variant(dataset, VARIANTS[label], ds, args.embedding_cache, args.out,
                                     args.time_fraction, args.threads)
            if label == "default":
                texts_by_dataset[dataset] = texts
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(row))
            rows.append(row)
            log.info("%s %s: %.1f encode CPU-s, flat R@5 %.3f, knee gain %+.3f (%.0f s)", dataset, label,
                     row["encode_cpu_s"], row["flat_k5_recall"], row["knee_gain"], row["run_seconds"])
        if not args.no_retime and len(variants) > 1:
            # The default's encoding timed again after the other variants: the run's timing noise.
            from drag_knee_retriever.embeddings import Encoder

            base = next(r for r in rows if r["dataset"] == dataset and r["variant"] == "default")
            texts = texts_by_dataset.get(dataset) or _default_texts(ds, args.embedding_cache, args.threads)
            encoder = Encoder(EmbeddingConfig(language=ds.language, runtime=EncoderRuntime(threads=args.threads)))
            retime[dataset] = time_encoding(encoder, texts, base["time_fraction"])
    print(table(rows, retime))
    return 0


def _default_texts(ds: Any, cache_dir: Optional[Path], threads: int) -> List[str]:
    """The default build's dense texts (vectors from the cache), when the default row was reused."""
    from drag_knee_retriever.embeddings import Encoder
    from drag_knee_retriever.eval.encoding import CachingEncoder
    from drag_knee_retriever.eval.runner import _open_index

    recorder = RecordingEncoder(CachingEncoder(Encoder(EmbeddingConfig(language=ds.language, runtime=EncoderRuntime(threads=threads))),
                                               cache_dir))
    index = _open_index(ds, BuildConfig(), encoder=recorder, model_path=None, engine="auto", collection="texts")
    try:
        index.add_documents(ds.documents)
    finally:
        index.close()
    return recorder.texts


if __name__ == "__main__":
    raise SystemExit(main())
