"""Run every method on one dataset and collect per-question metrics, means and the headline.

One in-memory index per build variant (the default one serves the flat baselines too), all sharing
one encoder; every question is encoded once and its vectors are handed to every method
(``search(query_vectors=...)`` / ``flat_search(query_vectors=...)``). The run checks both: that
each document became exactly one leaf per dataset unit, and that the encoder encoded exactly one
query per question.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..config import BuildConfig
from .baselines import (
    CURVE_KS,
    DEFAULT_FUSION_SCHEDULE,
    FLAT_KS,
    Method,
    automerging_methods,
    build_automerging,
    collapsed_methods,
    drag_methods,
    drag_variants,
    flat_fusion_knee_methods,
    flat_knee_methods,
    flat_methods,
    leaf_token_table,
    llama_index_available,
    per_document_methods,
    prototype_methods,
    routed_methods,
)
from .datasets import EvalDataset, load_dataset
from .metrics import QuestionMetrics, interpolate_curve, mean_metrics, question_metrics

log = logging.getLogger(__name__)

HEADLINE_METHOD = "drag_knee"
REFERENCE_CURVE = "flat_hybrid"


@dataclass(frozen=True)
class BuildVariant:
    """An extra index built with other :class:`BuildConfig` settings; DRAG and collapsed-tree
    methods run on it under names suffixed ``[label]``."""

    label: str
    build: BuildConfig
    methods: Tuple[str, ...] = ("drag_*", "collapsed_*", "proto_*")


def parse_build_variant(spec: str) -> BuildVariant:
    """``"inner_vectors=centroid,branching=4"`` -> a variant labelled ``inner_vectors=centroid,branching=4``."""
    kwargs: Dict[str, Any] = {}
    for part in spec.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise ValueError(f"build variant part {part!r} is not key=value (e.g. inner_vectors=centroid).")
        key, value = (x.strip() for x in part.split("=", 1))
        if key not in BuildConfig.__dataclass_fields__:
            raise ValueError(f"unknown BuildConfig field {key!r}; use one of {', '.join(BuildConfig.__dataclass_fields__)}.")
        kwargs[key] = int(value) if value.lstrip("-").isdigit() else value
    return BuildVariant(label=spec.replace(" ", ""), build=BuildConfig(**kwargs))


@dataclass
class EvalReport:
    """Everything a run produced: per-method means, the headline, the raw rows and file paths."""

    dataset: str
    meta: Dict[str, Any]
    summary: Dict[str, Dict[str, float]]
    methods: Dict[str, Dict[str, Any]]
    headline: Dict[str, Any]
    questions: List[Dict[str, Any]] = field(default_factory=list)
    files: Dict[str, str] = field(default_factory=dict)

    def to_json_dict(self) -> Dict[str, Any]:
        """The one JSON object ``drag-knee eval --json`` prints."""
        return _finite({
            "dataset": self.dataset,
            "meta": self.meta,
            "summary": self.summary,
            "methods": self.methods,
            "headline": self.headline,
            "files": self.files,
        })


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------
# Passage-vector cache: build variants and AutoMerging re-encode the same texts
# ---------------------------------------------------------------------------------------------


# Long enough to pass any truncation limit a dense model may be given (MiniLM reads 256 or 512
# word pieces), so a changed limit changes the fingerprint.
_PROBE = " ".join(f"probe{i} evidence retrieval context" for i in range(200))


def encoder_fingerprint(encoder: Any) -> str:
    """A short hash of what the encoder makes of fixed texts: same model, weights and truncation
    give the same fingerprint; any change (another model, another token limit) gives another, so a
    passage-vector cache can never mix vectors of two encoder settings."""
    import hashlib

    import numpy as np

    vectors = np.asarray(encoder.encode_dense(["drag knee retriever", _PROBE]), dtype=np.float32)
    digest = hashlib.sha1(f"{getattr(encoder, 'model_id', '')}:{vectors.shape}".encode())
    digest.update(np.round(vectors, 4).tobytes())
    return digest.hexdigest()[:16]


def _is_sha1(key: str) -> bool:
    return len(key) == 40 and all(c in "0123456789abcdef" for c in key)


class CachingEncoder:
    """Wraps an :class:`~drag_knee_retriever.embeddings.Encoder` and remembers passage vectors by text.

    Build variants re-encode the same leaves (and AutoMerging the same chunks across runs); the
    vectors are the same, so they are computed once. With ``cache_dir`` the cache is kept on disk
    (one ``.npz`` per :func:`encoder_fingerprint`, keyed by the SHA-1 of the text) and reused by
    later runs of the same encoder settings. Queries are
    never cached: each question is encoded once per run, and ``query_encodings`` counts that.
    """

    def __init__(self, inner: Any, cache_dir: Optional[os.PathLike | str] = None) -> None:
        self._inner = inner
        self._vectors: Dict[str, Any] = {}
        self._path: Optional[Path] = None
        self.hits = 0
        self.misses = 0
        if cache_dir is not None:
            import hashlib

            import numpy as np

            self._path = Path(cache_dir) / f"dense-{encoder_fingerprint(inner)}.npz"
            if self._path.is_file():
                with np.load(self._path) as data:
                    for key, vector in zip(data["keys"], data["vectors"]):
                        key = key.decode() if isinstance(key, bytes) else str(key)
                        if _is_sha1(key):
                            self._vectors[key] = vector
                log.info("embedding cache: %d vectors from %s", len(self._vectors), self._path)

    def __getattr__(self, name: str) -> Any:
        # dense_size, model_id, sparse_model, config, model_source, query_encodings, ...
        return getattr(self._inner, name)

    def encode_query(self, text: str) -> Any:
        """Encoded by the wrapped encoder every time (never cached)."""
        return self._inner.encode_query(text)

    def encode_sparse(self, texts: Sequence[str]) -> Any:
        return self._inner.encode_sparse(texts)

    def encode_dense(self, texts: Sequence[str], progress: Any = None) -> Any:
        """Passage vectors in input order; only texts not seen before reach the model."""
        import hashlib

        import numpy as np

        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        missing: Dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in self._vectors and key not in missing:
                missing[key] = text
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            vectors = self._inner.encode_dense(list(missing.values()), progress=progress)
            for key, vector in zip(missing, vectors):
                self._vectors[key] = vector
        elif progress:
            progress(len(texts), len(texts))
        if not texts:
            return np.zeros((0, self._inner.dense_size), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys])

    def save(self) -> None:
        """Write the cache to disk (when a cache folder was given)."""
        if self._path is None:
            return
        import numpy as np

        self._path.parent.mkdir(parents=True, exist_ok=True)
        if self._path.is_file():
            # Another run may have saved since this one loaded: keep its vectors too.
            with np.load(self._path) as data:
                for key, vector in zip(data["keys"], data["vectors"]):
                    key = key.decode() if isinstance(key, bytes) else str(key)
                    if _is_sha1(key):
                        self._vectors.setdefault(key, vector)
        keys = np.array(list(self._vectors), dtype="S40")
        vectors = np.stack(list(self._vectors.values())) if self._vectors else np.zeros((0, self._inner.dense_size))
        tmp = self._path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=vectors.astype(np.float32))
        tmp.replace(self._path)


# ---------------------------------------------------------------------------------------------
# Progress: rich when available, logging otherwise
# ---------------------------------------------------------------------------------------------


progress_log = logging.getLogger("drag_knee_retriever.eval.progress")


class _Progress:
    """Progress bars (rich) on an interactive stderr; otherwise one log line per 10 % of a stage
    on the ``drag_knee_retriever.eval.progress`` logger (the CLI shows it at INFO)."""

    def __init__(self, enabled: bool) -> None:
        self._rich = None
        self._task = None
        self._enabled = enabled
        self._last_logged = -1
        self._total = 0
        self._name = ""
        if enabled and sys.stderr.isatty():
            try:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

                self._rich = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), console=Console(stderr=True), transient=False)
                self._rich.start()
            except ImportError:
                self._rich = None

    def stage(self, name: str, total: int) -> None:
        self._name, self._total, self._last_logged = name, total, -1
        if self._rich is not None:
            self._task = self._rich.add_task(name, total=total)
        else:
            progress_log.info("%s: 0/%d", name, total)

    def update(self, done: int, total: Optional[int] = None) -> None:
        if total is not None and total != self._total:
            self._total = total
            if self._rich is not None and self._task is not None:
                self._rich.update(self._task, total=total)
        if self._rich is not None and self._task is not None:
            self._rich.update(self._task, completed=done)
            return
        decile = int(10 * done / self._total) if self._total else 10
        if decile != self._last_logged and (self._enabled or done == self._total):
            self._last_logged = decile
            progress_log.info("%s: %d/%d", self._name, done, self._total)

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


def _wanted(name: str, patterns: Optional[Sequence[str]]) -> bool:
    if not patterns:
        return True
    return any(fnmatch.fnmatchcase(name, p) or name == p for p in patterns)


def _open_index(dataset: EvalDataset, build: BuildConfig, *, encoder: Any, model_path: Optional[str],
                engine: str, collection: str) -> Any:
    from .. import DragKneeIndex

    kwargs: Dict[str, Any] = {"language": dataset.language, "build": build, "engine": engine,
                              "collection": collection}
    if encoder is not None:
        kwargs["encoder"] = encoder
    elif model_path:
        kwargs["model_path"] = model_path
    return DragKneeIndex(":memory:", **kwargs)


def check_leaf_mapping(index: Any, dataset: EvalDataset) -> None:
    """Fail loudly unless every document has exactly one leaf per dataset unit."""
    infos = {info.doc_id: info for info in index.list_documents()}
    wrong = []
    for doc_id, units in dataset.units.items():
        info = infos.get(doc_id)
        if info is None or info.leaves != len(units):
            wrong.append((doc_id, len(units), None if info is None else info.leaves))
    if wrong:
        sample = ", ".join(f"{d}: {u} units vs {l} leaves" for d, u, l in wrong[:5])
        raise RuntimeError(
            f"{len(wrong)} documents do not map one leaf per unit ({sample}). The evaluation passes each "
            "unit as a page so the builder must keep pages 1:1; check builder.py's page handling."
        )


def _build(index: Any, dataset: EvalDataset, progress: _Progress, label: str) -> Dict[str, Any]:
    phases: Dict[str, float] = {}

    def on_progress(phase: str, done: int, total: int) -> None:
        if phase not in phases:
            phases[phase] = time.perf_counter()
            progress.stage(f"index[{label}] {phase}", total)
        progress.update(done, total)

    start = time.perf_counter()
    report = index.add_documents(dataset.documents, progress=on_progress)
    seconds = time.perf_counter() - start
    check_leaf_mapping(index, dataset)
    stats = {}
    try:
        stats = dict(index.stats())
    except Exception:  # stats are informative only
        log.debug("index.stats() failed", exc_info=True)
    return {"seconds": round(seconds, 2), "nodes_written": getattr(report, "nodes_written", None),
            "stats": _finite(json.loads(json.dumps(stats, default=str)))}


def run_eval(
    dataset: str | EvalDataset,
    out_dir: Optional[os.PathLike | str] = None,
    *,
    limit_docs: Optional[int] = None,
    limit_questions: Optional[int] = None,
    methods: Optional[Sequence[str]] = None,
    datasets_root: Optional[os.PathLike | str] = None,
    build: Optional[BuildConfig] = None,
    build_variants: Sequence[BuildVariant | str] = (),
    flat_ks: Sequence[int] = CURVE_KS,
    fusion_schedule: Sequence[Tuple[float, float]] = DEFAULT_FUSION_SCHEDULE,
    automerging_top_ks: Sequence[int] = (6,),
    automerging_chunk_sizes: Sequence[int] = (2048, 512, 128),
    model_path: Optional[str] = None,
    encoder: Any = None,
    embedding_cache: Optional[os.PathLike | str] = None,
    engine: str = "auto",
    traces: int = 0,
    trace_methods: Sequence[str] = ("drag_knee", "drag_branch", "proto_knee_minmax_refine"),
    prototypes: bool = True,
    progress: bool = True,
    plot: bool = True,
) -> EvalReport:
    """Evaluate every method on ``dataset`` and (with ``out_dir``) write the report files.

    ``methods`` keeps only method names matching any of the given glob patterns (e.g.
    ``["flat_hybrid_*", "drag_knee*"]``); the headline needs ``flat_hybrid_*`` and ``drag_knee``.
    ``build_variants`` adds indexes built with other settings (``"inner_vectors=centroid"``).
    ``prototypes`` adds the evaluation-only prototypes of core changes (``proto_*``, see
    :func:`~drag_knee_retriever.eval.baselines.prototype_methods`).
    ``traces`` saves the traces of the first N questions to ``traces.jsonl.gz``, for the methods
    matching ``trace_methods`` (glob patterns).
    ``encoder`` reuses an already loaded :class:`~drag_knee_retriever.embeddings.Encoder`
    (it must use the dataset's BM25 language). ``embedding_cache`` keeps passage vectors on disk
    between runs (see :class:`CachingEncoder`).
    """
    started = time.perf_counter()
    ds = dataset if isinstance(dataset, EvalDataset) else load_dataset(
        dataset, datasets_root, limit_docs=limit_docs, limit_questions=limit_questions)
    if not ds.questions:
        raise ValueError(
            f"{ds.name}: no questions left on the {len(ds.documents)} kept documents; raise --limit-docs."
        )
    variants = [parse_build_variant(v) if isinstance(v, str) else v for v in build_variants]
    leaf_tokens = leaf_token_table(ds)
    bar = _Progress(progress)
    meta: Dict[str, Any] = {"dataset": ds.describe(), "dataset_notes": ds.notes,
                            "limit_docs": limit_docs, "limit_questions": limit_questions,
                            "machine": machine_info(), "code": code_version(), "indexes": {}}
    per_question: List[Dict[str, Any]] = [
        {"id": q.id, "question": q.text, "gold": sorted([d, o] for d, o in q.gold),
         "answer_spans": sorted([d, o, a, b] for (d, o), (a, b) in q.answer_spans.items()), "methods": {}}
        for q in ds.questions
    ]
    rows: Dict[str, List[QuestionMetrics]] = {}
    method_info: Dict[str, Dict[str, Any]] = {}
    trace_rows: List[Dict[str, Any]] = []
    caching: Optional[CachingEncoder] = None
    try:
        base_build = build or BuildConfig()
        if encoder is not None and getattr(getattr(encoder, "config", None), "language", ds.language) != ds.language:
            raise ValueError(f"the encoder given uses BM25 language {encoder.config.language!r} but {ds.name} "
                             f"needs {ds.language!r}; pass encoder=None or an encoder for that language.")
        if encoder is None:
            from ..config import EmbeddingConfig
            from ..embeddings import Encoder

            emb = EmbeddingConfig(language=ds.language, **({"model_path": model_path} if model_path else {}))
            encoder = Encoder(emb)
        encoder = caching = CachingEncoder(encoder, embedding_cache)
        index = _open_index(ds, base_build, encoder=encoder, model_path=None, engine=engine,
                            collection="eval_default")
        indexes = [index]
        try:
            meta["indexes"]["default"] = {"build": _build_dict(base_build), **_build(index, ds, bar, "default")}
            meta["model"] = {"id": getattr(encoder, "model_id", None),
                             "source": getattr(encoder, "model_source", None),
                             "dense_size": getattr(encoder, "dense_size", None),
                             "engine": getattr(index.store, "engine", None)}
            # Every question is encoded once, here; all methods reuse these vectors.
            bar.stage("encoding questions", len(ds.questions))
            before = getattr(encoder, "query_encodings", None)
            t0 = time.perf_counter()
            vectors = []
            for i, q in enumerate(ds.questions, 1):
                vectors.append(encoder.encode_query(q.text))
                bar.update(i)
            meta["query_encoding_ms"] = round((time.perf_counter() - t0) * 1000.0 / len(ds.questions), 2)

            stages: List[Tuple[str, List[Method]]] = []
            default_methods: List[Method] = []
            default_methods += flat_methods(index, leaf_tokens, ks=flat_ks)
            default_methods += flat_knee_methods(index, leaf_tokens)
            default_methods += collapsed_methods(index, leaf_tokens, ks=FLAT_KS)
            default_methods += drag_methods(index, leaf_tokens, variants=drag_variants(fusion_schedule))
            if prototypes:
                default_methods += prototype_methods(index, leaf_tokens)
                default_methods += flat_fusion_knee_methods(index, leaf_tokens)
                default_methods += routed_methods(index, leaf_tokens)
                default_methods += per_document_methods(index, leaf_tokens)
            if any(_wanted(f"automerging_k{k}", methods) for k in automerging_top_ks):
                if llama_index_available():
                    bar.stage("AutoMerging: parse + embed", 1)
                    setup = build_automerging(ds, encoder, chunk_sizes=automerging_chunk_sizes)
                    bar.update(1)
                    meta["indexes"]["automerging"] = {"nodes": setup.node_count, "leaves": setup.leaf_count,
                                                      "chunk_sizes": list(setup.chunk_sizes),
                                                      "seconds": round(setup.seconds, 2)}
                    default_methods += automerging_methods(setup, ds, top_ks=automerging_top_ks)
                else:
                    log.warning("llama-index-core is not installed: AutoMerging baseline skipped "
                                "(pip install 'drag-knee-retriever[llamaindex]').")
                    meta["automerging_skipped"] = "llama-index-core not installed"
            stages.append(("default", [m for m in default_methods if _wanted(m.name, methods)]))
            _run_stage(stages[-1], ds, vectors, per_question, rows, method_info, trace_rows, traces, bar,
                       trace_methods)

            for variant in variants:
                vindex = _open_index(ds, variant.build, encoder=encoder, model_path=None, engine=engine,
                                     collection="eval_variant")
                indexes.append(vindex)
                meta["indexes"][variant.label] = {"build": _build_dict(variant.build),
                                                  **_build(vindex, ds, bar, variant.label)}
                vmethods = collapsed_methods(vindex, leaf_tokens, ks=FLAT_KS, label=variant.label)
                vmethods += drag_methods(vindex, leaf_tokens, label=variant.label,
                                         variants=drag_variants(fusion_schedule))
                if prototypes:
                    vmethods += prototype_methods(vindex, leaf_tokens, label=variant.label)
                keep = [m for m in vmethods
                        if any(fnmatch.fnmatchcase(m.name.split("[")[0], p) for p in variant.methods)
                        and _wanted(m.name, methods)]
                _run_stage((variant.label, keep), ds, vectors, per_question, rows, method_info,
                           trace_rows, traces, bar, trace_methods)
                vindex.close()
                indexes.remove(vindex)
            meta["embedding_cache"] = {"hits": encoder.hits, "misses": encoder.misses,
                                       "folder": str(embedding_cache) if embedding_cache else None}
            after = getattr(encoder, "query_encodings", None)
            if before is not None and after is not None:
                meta["query_encodings"] = after - before
                if after - before != len(ds.questions):
                    log.warning("the encoder encoded %d queries for %d questions: some method re-encoded "
                                "its query", after - before, len(ds.questions))
        finally:
            for open_index in indexes:
                open_index.close()
            caching.save()
    finally:
        bar.close()

    summary = {name: mean_metrics(values) for name, values in rows.items()}
    headline = compute_headline(summary, method_info)
    headline.update(bootstrap_headline_gain(rows, method_info))
    for name, gain in headline.get("gains_at_equal_tokens", {}).items():
        summary[name]["recall_gain_at_equal_tokens"] = gain
    meta["seconds"] = round(time.perf_counter() - started, 1)
    report = EvalReport(ds.name, meta, summary, method_info, headline, per_question)
    if out_dir is not None:
        from .report import write_report

        report.files = write_report(report, Path(out_dir), trace_rows=trace_rows, plot=plot)
    return report


def _build_dict(build: BuildConfig) -> Dict[str, Any]:
    return {k: getattr(build, k) for k in BuildConfig.__dataclass_fields__}


def _run_stage(stage: Tuple[str, List[Method]], ds: EvalDataset, vectors: Sequence[Any],
               per_question: List[Dict[str, Any]], rows: Dict[str, List[QuestionMetrics]],
               method_info: Dict[str, Dict[str, Any]], trace_rows: List[Dict[str, Any]],
               traces: int, bar: _Progress, trace_methods: Sequence[str] = ()) -> None:
    label, methods = stage
    if not methods:
        return
    for m in methods:
        method_info[m.name] = {"family": m.family, "params": m.params, "curve": m.curve,
                               "adaptive": m.adaptive, "index": m.index_label}
        rows.setdefault(m.name, [])
    bar.stage(f"searching [{label}] ({len(methods)} methods)", len(ds.questions))
    for i, (q, qv) in enumerate(zip(ds.questions, vectors)):
        record = per_question[i]["methods"]
        for m in methods:
            result = m.run(q.text, qv)
            metrics = question_metrics(result.hits, q.gold, latency_ms=result.latency_ms,
                                       answer_spans=q.answer_spans)
            rows[m.name].append(metrics)
            record[m.name] = {"metrics": _round(metrics.to_dict()), "returned": result.returned}
            if result.trace is not None and i < traces and _wanted(m.name, trace_methods):
                trace_rows.append({"question": q.id, "method": m.name, "gold": sorted([d, o] for d, o in q.gold),
                                   "trace": result.trace.to_dict()})
        bar.update(i + 1)


def _round(values: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in values.items()}


# ---------------------------------------------------------------------------------------------
# Headline
# ---------------------------------------------------------------------------------------------


def curve_points(summary: Mapping[str, Mapping[str, float]], method_info: Mapping[str, Mapping[str, Any]],
                 curve: str) -> List[Tuple[float, float]]:
    """(mean tokens, mean recall) of every method of a sweep, by tokens."""
    return sorted((summary[n]["tokens"], summary[n]["recall"]) for n, info in method_info.items()
                  if info.get("curve") == curve and n in summary)


def compute_headline(summary: Mapping[str, Mapping[str, float]],
                     method_info: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """DRAG knee recall minus flat hybrid recall at equal mean tokens, and the per-token comparison
    with AutoMerging. Also the same gain for every method, so the table can show it."""
    flat = curve_points(summary, method_info, REFERENCE_CURVE)
    headline: Dict[str, Any] = {"reference_curve": REFERENCE_CURVE, "flat_hybrid_curve": flat}
    gains: Dict[str, float] = {}
    extrapolated: Dict[str, bool] = {}
    if flat:
        for name, means in summary.items():
            at, extra = interpolate_curve(flat, means["tokens"])
            gains[name] = means["recall"] - at
            extrapolated[name] = extra
    headline["gains_at_equal_tokens"] = gains
    headline["beyond_flat_curve"] = sorted(n for n, extra in extrapolated.items() if extra)
    knee = summary.get(HEADLINE_METHOD)
    if knee is not None and flat:
        at, extra = interpolate_curve(flat, knee["tokens"])
        headline.update({
            "knee_recall_gain_at_equal_tokens": knee["recall"] - at,
            "knee_recall": knee["recall"],
            "knee_tokens": knee["tokens"],
            "flat_hybrid_recall_at_knee_tokens": at,
            "knee_tokens_beyond_flat_curve": extra,
        })
    else:
        headline["knee_recall_gain_at_equal_tokens"] = None
    automerging = sorted(n for n, info in method_info.items() if info.get("family") == "automerging" and n in summary)
    if knee is not None and automerging:
        # The AutoMerging setting closest to the knee in context size: recall per token falls as
        # context grows, so only points of similar size compare fairly.
        am = min(automerging, key=lambda n: abs(summary[n]["tokens"] - knee["tokens"]))
        knee_rpt = _per_1k(knee)
        am_rpt = _per_1k(summary[am])
        headline.update({
            "automerging_method": am,
            "automerging_recall": summary[am]["recall"],
            "automerging_tokens": summary[am]["tokens"],
            "knee_recall_per_1k_tokens": knee_rpt,
            "automerging_recall_per_1k_tokens": am_rpt,
            "knee_vs_automerging_recall_per_token_ratio": (knee_rpt / am_rpt) if am_rpt else None,
            "automerging_recall_gain_at_equal_tokens": gains.get(am),
            # Both measured against the same flat curve: > 0 means DRAG knee gets more evidence
            # per token than AutoMerging does.
            "knee_minus_automerging_gain": (gains[HEADLINE_METHOD] - gains[am])
            if HEADLINE_METHOD in gains and am in gains else None,
        })
    adaptive = [(gains[n], n) for n, info in method_info.items() if info.get("adaptive") and n in gains
                and info.get("family", "").startswith("drag")]
    if adaptive:
        best_gain, best = max(adaptive)
        headline["best_drag_variant"] = best
        headline["best_drag_variant_gain_at_equal_tokens"] = best_gain
    return headline


def bootstrap_headline_gain(rows: Mapping[str, Sequence[Any]], method_info: Mapping[str, Mapping[str, Any]],
                            *, resamples: int = 2000, seed: int = 0) -> Dict[str, Any]:
    """A 95% interval for ``knee_recall_gain_at_equal_tokens`` by the paired bootstrap.

    The questions are resampled with replacement (the same sample for every method, so the pairing
    of DRAG knee and the flat sweep on each question is kept); on each sample the flat hybrid curve
    is rebuilt from its means and the knee's gain at its mean tokens is recomputed. The 2.5th and
    97.5th percentiles of those gains are the interval; if it contains 0, the sign of the gain is
    not established by these questions.
    """
    import numpy as np

    curve = [n for n, info in method_info.items() if info.get("curve") == REFERENCE_CURVE and rows.get(n)]
    knee = rows.get(HEADLINE_METHOD)
    if not curve or not knee:
        return {}
    size = len(knee)
    if size < 2 or any(len(rows[n]) != size for n in curve):
        return {}
    recall = {n: np.array([float(r.recall) for r in rows[n]]) for n in curve + [HEADLINE_METHOD]}
    tokens = {n: np.array([float(r.tokens) for r in rows[n]]) for n in curve + [HEADLINE_METHOD]}
    rng = np.random.default_rng(seed)
    gains = []
    for _ in range(resamples):
        sample = rng.integers(0, size, size)
        points = [(tokens[n][sample].mean(), recall[n][sample].mean()) for n in curve]
        at, _extra = interpolate_curve(points, tokens[HEADLINE_METHOD][sample].mean())
        gains.append(recall[HEADLINE_METHOD][sample].mean() - at)
    low, high = np.percentile(gains, [2.5, 97.5])
    return {"knee_recall_gain_ci95": [float(low), float(high)], "knee_recall_gain_bootstrap_resamples": resamples}


def _per_1k(means: Mapping[str, float]) -> Optional[float]:
    return 1000.0 * means["recall"] / means["tokens"] if means.get("tokens") else None


def code_version() -> Dict[str, Any]:
    """The git commit of the package and the files changed since (read-only git; empty outside a
    checkout), so a results page can say which code produced it. A pinned snapshot names its
    commit in ``DRAG_KNEE_CODE_COMMIT`` (and its changed files in ``DRAG_KNEE_CODE_CHANGED``)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    info: Dict[str, Any] = {}
    if os.environ.get("DRAG_KNEE_CODE_COMMIT"):
        # A pinned copy of the package (benchmarks/run_eval.sh with SNAPSHOT=1) is no checkout:
        # the script says which commit it copied and what it added.
        info["commit"] = os.environ["DRAG_KNEE_CODE_COMMIT"]
        info["changed_files"] = [f for f in os.environ.get("DRAG_KNEE_CODE_CHANGED", "").split() if f]
        info["snapshot"] = str(root)
        return info
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        status = subprocess.run(["git", "status", "--porcelain", "--", "drag_knee_retriever"], cwd=root,
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return info
    if commit.returncode == 0:
        info["commit"] = commit.stdout.strip()
    if status.returncode == 0:
        info["changed_files"] = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    return info


def machine_info() -> Dict[str, Any]:
    """The machine a run happened on (for the results page)."""
    info: Dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(),
                            "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo", encoding="utf-8") as handle:
            info["memory_gb"] = round(int(handle.readline().split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    try:
        from importlib.metadata import version

        for package in ("qdrant-client", "qdrant-edge-py", "fastembed", "onnxruntime", "llama-index-core"):
            try:
                info[package] = version(package)
            except Exception:
                pass
    except ImportError:
        pass
    return info
