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
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.config import BuildConfig, SearchConfig
from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.eval.automerging import automerging_methods, build_automerging, llama_index_available
from drag_knee_retriever.eval.baselines import (
    CURVE_KS,
    DEFAULT_FUSION_SCHEDULE,
    FLAT_KS,
    WORD_BUDGETS,
    LeafTokens,
    Method,
    ScopedIndex,
    collapsed_methods,
    drag_budget_methods,
    drag_methods,
    drag_variants,
    flat_knee_methods,
    flat_methods,
    leaf_token_table,
)
from drag_knee_retriever.eval.dataset import EvalDataset
from drag_knee_retriever.eval.encoding import CachingEncoder, encoder_fingerprint
from drag_knee_retriever.eval.errors import EvalConsistencyError, EvalSetupError
from drag_knee_retriever.eval.headline import HEADLINE_METHOD, REFERENCE_CURVE, bootstrap_headline_gain, compute_headline, curve_points
from drag_knee_retriever.eval.metrics import QuestionMetrics, interpolate_curve, mean_metrics, question_metrics
from drag_knee_retriever.eval.progress import ProgressBars, progress_log

#: Extra methods for an index: ``factory(index, leaf_tokens, label)`` (label "default" or a build
#: variant's); benchmarks/prototypes.py adds its research walks this way.
MethodFactory = Callable[[Any, LeafTokens, str], List[Method]]

# Re-exported: the runner was their home before the split.
__all__ = ["BuildVariant", "CachingEncoder", "EvalReport", "HEADLINE_METHOD", "MethodFactory", "REFERENCE_CURVE",
           "bootstrap_headline_gain", "check_leaf_mapping", "code_version", "compute_headline", "curve_points",
           "encoder_fingerprint", "machine_info", "parse_build_variant", "progress_log", "run_eval"]

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
    """``"vectors.inner_dense=centroid,branching=4"`` -> a variant labelled as written.

    Keys are BuildConfig's settings as dotted paths (``leaves.passage_words``, ``vectors.context``);
    the flat names of earlier releases (``inner_vectors``) still work, with a DeprecationWarning.
    """
    from drag_knee_retriever.model._settings import iter_settings

    build = BuildConfig()
    known = [name for name, _, _ in iter_settings(BuildConfig)]
    for part in spec.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise EvalSetupError(f"build variant part {part!r} is not key=value (e.g. vectors.inner_dense=centroid).")
        key, raw = (x.strip() for x in part.split("=", 1))
        if key not in known and key not in getattr(BuildConfig, "_moved", {}):
            raise EvalSetupError(f"unknown BuildConfig setting {key!r}; use one of {', '.join(known)}.")
        build = build.with_path(key, _parse_value(raw, floats=False))
    return BuildVariant(label=spec.replace(" ", ""), build=build)


def _parse_value(raw: str, *, floats: bool = True) -> Any:
    """A variant's value as written: true/false, none, an integer, a number (``floats``), else the text."""
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    if raw.lower() == "none":
        return None
    if raw.lstrip("-").isdigit():
        return int(raw)
    if floats:
        try:
            return float(raw)
        except ValueError:
            pass
    return raw


def parse_search_variant(spec: str) -> Tuple[str, Dict[str, Any]]:
    """``"identity_weight=0.5,focus.pool=20"`` -> (``"drag_knee{identity_weight=0.5,focus.pool=20}"``,
    the changes as dotted settings): the default search with those settings, on every index.

    Keys are SearchConfig's settings as dotted paths (``focus.near_best``, ``fusion.rrf_k``); each
    value is checked here (on the default SearchConfig), before any index is built.
    """
    from drag_knee_retriever.model._settings import iter_settings

    known = [name for name, _, _ in iter_settings(SearchConfig)]
    changes: Dict[str, Any] = {}
    config = SearchConfig()
    for part in spec.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise EvalSetupError(f"search variant part {part!r} is not key=value (e.g. focus.identity_weight=1).")
        key, raw = (x.strip() for x in part.split("=", 1))
        if key not in known:
            raise EvalSetupError(f"unknown SearchConfig setting {key!r}; use one of {', '.join(known)}.")
        changes[key] = _parse_value(raw)
        try:
            config = config.with_path(key, changes[key])
        except ConfigError as exc:
            raise EvalSetupError(f"search variant {spec!r}: {exc}") from None
    return "drag_knee{" + spec.replace(" ", "") + "}", changes


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
# The run
# ---------------------------------------------------------------------------------------------


def _wanted(name: str, patterns: Optional[Sequence[str]]) -> bool:
    if not patterns:
        return True
    return any(fnmatch.fnmatchcase(name, p) or name == p for p in patterns)


def _open_index(dataset: EvalDataset, build: BuildConfig, *, encoder: Any, model_path: Optional[str],
                engine: str, collection: str, folder: Optional[Path] = None) -> Any:
    from drag_knee_retriever import DragKneeIndex

    from drag_knee_retriever.config import EmbeddingConfig, StoreConfig

    if encoder is None:
        encoder = EmbeddingConfig(language=dataset.language, model_path=model_path or None)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    return DragKneeIndex(str(folder) if folder is not None else ":memory:", embedding=encoder, build=build,
                         store=StoreConfig(engine=engine, collection=collection))  # type: ignore[arg-type]


def _index_folder(index_dir: Optional[os.PathLike | str], ds: EvalDataset, label: str) -> Optional[Path]:
    """Where a run keeps the index of one build (``index_dir``/<corpus>/<label>), or None (in memory).

    The corpus folder is named by the dataset and a hash of its document ids, so two settings of
    the same documents (FinanceBench shared and single) share an index and two different document
    sets never do. A kept index is reopened by the next run and every unchanged document is skipped
    (its content, metadata and build settings hash the same), so search variants over a long
    dataset cost no re-build; a document whose tree would differ is rebuilt. Code changes that alter
    a tree without changing its settings are not seen: delete the folder after such a change."""
    if index_dir is None:
        return None
    import hashlib

    corpus = hashlib.sha1("\x1f".join(sorted(d.id for d in ds.documents)).encode()).hexdigest()[:10]
    safe = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in label)[:120] or "default"
    return Path(index_dir) / f"{ds.name.split('-')[0]}-{corpus}" / safe


def check_leaf_mapping(index: Any, dataset: EvalDataset) -> None:
    """Fail loudly unless every document has exactly one leaf per dataset unit."""
    infos = {info.doc_id: info for info in index.list_documents()}
    wrong = []
    for doc_id, units in dataset.units.items():
        info = infos.get(doc_id)
        # A long page split into passages (BuildConfig.passage_words) has several leaves; its
        # pages still map one to one onto the units.
        paged = info is not None and info.leaves > len(units) and info.first_page == 1 and info.last_page == len(units)
        if info is None or (info.leaves != len(units) and not paged):
            wrong.append((doc_id, len(units), None if info is None else info.leaves))
    if wrong:
        sample = ", ".join(f"{d}: {u} units vs {l} leaves" for d, u, l in wrong[:5])
        raise EvalConsistencyError(
            f"{len(wrong)} documents do not map one leaf per unit ({sample}). The evaluation passes each "
            "unit as a page so the builder must keep pages 1:1; check build/_builder.py's page handling."
        )


def _build(index: Any, dataset: EvalDataset, progress: ProgressBars, label: str) -> Dict[str, Any]:
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
    dataset: EvalDataset,
    out_dir: Optional[os.PathLike | str] = None,
    *,
    methods: Optional[Sequence[str]] = None,
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
    trace_methods: Sequence[str] = ("drag_knee", "drag_branch"),
    extra_methods: Optional[MethodFactory] = None,
    progress: bool = True,
    plot: bool = True,
    index_dir: Optional[os.PathLike | str] = None,
    budgets: Sequence[int] = WORD_BUDGETS,
    search_variants: Sequence[str] = (),
) -> EvalReport:
    """Evaluate every method on ``dataset`` and (with ``out_dir``) write the report files.

    ``dataset``: your corpus and questions (:func:`~drag_knee_retriever.eval.own.load_own_dataset`)
    or a benchmark dataset (the repository's ``benchmarks/datasets``); its ``load_options`` (how it
    was loaded) go into the report's meta.

    ``methods`` keeps only method names matching any of the given glob patterns (e.g.
    ``["flat_hybrid_*", "drag_knee*"]``); the headline needs ``flat_hybrid_*`` and ``drag_knee``.
    ``build_variants`` adds indexes built with other settings (``"inner_vectors=centroid"``).
    ``extra_methods`` adds methods of your own to the default index and every build variant (see
    :data:`MethodFactory`; benchmarks/prototypes.py adds the ``proto_*`` research walks this way).
    ``traces`` saves the traces of the first N questions to ``traces.jsonl.gz``, for the methods
    matching ``trace_methods`` (glob patterns).
    ``encoder`` reuses an already loaded :class:`~drag_knee_retriever.embeddings.Encoder`
    (it must use the dataset's BM25 language). ``embedding_cache`` keeps passage vectors on disk
    between runs (see :class:`CachingEncoder`). ``index_dir`` keeps each build's index in a folder and reuses it in later
    runs (see :func:`_index_folder`). ``budgets``: word budgets at which flat hybrid (and the
    default search, where it takes ``max_tokens``) is also read (:data:`WORD_BUDGETS`).
    ``search_variants``: the default search with other :class:`SearchConfig` settings as dotted paths
    (``"focus.identity_weight=1"`` -> method ``drag_knee{focus.identity_weight=1}``), on every index.
    """
    started = time.perf_counter()
    if not isinstance(dataset, EvalDataset):
        raise EvalSetupError(
            f"run_eval takes an EvalDataset, got {type(dataset).__name__} {dataset!r:.60}: load your corpus with "
            "drag_knee_retriever.eval.own.load_own_dataset (benchmark datasets: benchmarks/datasets in the repository).")
    ds = dataset
    # The single-document setting: each question's searches are filtered to its own document.
    scoped = any(q.metadata.get("filters") for q in ds.questions)
    if not ds.questions:
        raise EvalSetupError(
            f"{ds.name}: no questions left on the {len(ds.documents)} kept documents; raise --limit-docs."
        )
    variants = [parse_build_variant(v) if isinstance(v, str) else v for v in build_variants]
    searches = [parse_search_variant(v) for v in search_variants]
    leaf_tokens = leaf_token_table(ds)
    bar = ProgressBars(progress)
    meta: Dict[str, Any] = {"dataset": ds.describe(), "dataset_notes": ds.notes, **ds.load_options,
                            "budgets": list(budgets),
                            "machine": machine_info(), "code": code_version(), "indexes": {}}
    if meta.get("shared_store") is None:  # not said when loaded: every document in one store unless filtered
        meta["shared_store"] = not scoped
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
        if encoder is not None and getattr(getattr(encoder, "config", None), "bm25_language", ds.language) != ds.language:
            raise EvalSetupError(f"the encoder given uses BM25 language {encoder.config.bm25_language!r} but {ds.name} "
                             f"needs {ds.language!r}; pass encoder=None or an encoder for that language.")
        if encoder is None:
            from drag_knee_retriever.config import EmbeddingConfig
            from drag_knee_retriever.embeddings import Encoder

            emb = EmbeddingConfig(language=ds.language, model_path=model_path or None)
            encoder = Encoder(emb)
        encoder = caching = CachingEncoder(encoder, embedding_cache)
        index = _open_index(ds, base_build, encoder=encoder, model_path=None, engine=engine,
                            collection="eval_default", folder=_index_folder(index_dir, ds, "default"))
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
            scope = ScopedIndex(index) if scoped else None
            if scoped:
                # Extra methods (proto_*) and AutoMerging rank outside the index's search API and
                # cannot take the per-question filter: they would search every document.
                meta["per_question_filters"] = True
                if extra_methods is not None or automerging_top_ks:
                    log.warning("%s filters each question to its document: extra methods and AutoMerging "
                                "are skipped", ds.name)
                extra_methods = None
                automerging_top_ks = ()
                index = scope  # type: ignore[assignment]
            default_methods += flat_methods(index, leaf_tokens, ks=flat_ks, budgets=budgets)
            default_methods += flat_knee_methods(index, leaf_tokens)
            default_methods += collapsed_methods(index, leaf_tokens, ks=FLAT_KS)
            default_methods += drag_methods(index, leaf_tokens, variants=drag_variants(fusion_schedule) + searches)
            default_methods += drag_budget_methods(index, leaf_tokens, budgets=budgets)
            if extra_methods is not None:
                default_methods += extra_methods(index, leaf_tokens, "default")
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
                       trace_methods, scope=scope)

            for variant in variants:
                vindex = _open_index(ds, variant.build, encoder=encoder, model_path=None, engine=engine,
                                     collection="eval_variant", folder=_index_folder(index_dir, ds, variant.label))
                indexes.append(vindex)
                vscope = ScopedIndex(vindex) if scoped else None
                searched = vscope if vscope is not None else vindex
                meta["indexes"][variant.label] = {"build": _build_dict(variant.build),
                                                  **_build(vindex, ds, bar, variant.label)}
                vmethods = collapsed_methods(searched, leaf_tokens, ks=FLAT_KS, label=variant.label)
                vmethods += drag_methods(searched, leaf_tokens, label=variant.label,
                                         variants=drag_variants(fusion_schedule) + searches)
                vmethods += drag_budget_methods(searched, leaf_tokens, budgets=budgets, label=variant.label)
                # The flat sweep on the variant's own index: its leaves may differ (passages).
                vmethods += [replace(m, name=f"{m.name}[{variant.label}]", family=f"{m.family}[{variant.label}]",
                                     curve=f"{m.curve}[{variant.label}]", index_label=variant.label)
                             for m in flat_methods(searched, leaf_tokens, ks=flat_ks, modes=("hybrid",))]
                if extra_methods is not None:
                    vmethods += extra_methods(vindex, leaf_tokens, variant.label)
                keep = [m for m in vmethods
                        if any(fnmatch.fnmatchcase(m.name.split("[")[0], p) for p in variant.methods + ("flat_hybrid_*",))
                        and _wanted(m.name, methods)]
                _run_stage((variant.label, keep), ds, vectors, per_question, rows, method_info,
                           trace_rows, traces, bar, trace_methods, scope=vscope)
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
    headline.update(default_headline(rows, method_info, summary, headline, ds, variants))
    for name, gain in headline.get("gains_at_equal_tokens", {}).items():
        summary[name]["recall_gain_at_equal_tokens"] = gain
    meta["seconds"] = round(time.perf_counter() - started, 1)
    report = EvalReport(ds.name, meta, summary, method_info, headline, per_question)
    if out_dir is not None:
        from drag_knee_retriever.eval.report import write_report

        report.files = write_report(report, Path(out_dir), trace_rows=trace_rows, plot=plot)
    return report


def _build_dict(build: BuildConfig) -> Dict[str, Any]:
    return build.to_dict()


def _run_stage(stage: Tuple[str, List[Method]], ds: EvalDataset, vectors: Sequence[Any],
               per_question: List[Dict[str, Any]], rows: Dict[str, List[QuestionMetrics]],
               method_info: Dict[str, Dict[str, Any]], trace_rows: List[Dict[str, Any]],
               traces: int, bar: ProgressBars, trace_methods: Sequence[str] = (),
               scope: Optional[ScopedIndex] = None) -> None:
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
        if scope is not None:
            scope.filters = q.metadata.get("filters")
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


DEFAULT_METHOD = "drag_knee"  # index.search() with the default SearchConfig (method "knee")


def default_headline(rows: Mapping[str, Sequence[Any]], method_info: Mapping[str, Mapping[str, Any]],
                     summary: Mapping[str, Mapping[str, float]], headline: Mapping[str, Any], ds: EvalDataset,
                     variants: Sequence[BuildVariant] = ()) -> Dict[str, Any]:
    """The headline every dataset carries: the default method's recall gain at equal tokens over
    flat hybrid on the same index (``default_recall_gain_at_equal_tokens``, 95% paired bootstrap),
    plus the figures of :mod:`~drag_knee_retriever.eval.budget_metrics` for the adaptive methods
    (all-gold on multi-gold questions, recall at a matched per-question budget, p90 tokens).

    A build variant's DRAG methods are also measured against the flat sweep on the variant's own
    index (``gains_on_own_index``): a variant may change the leaves (passages), and flat hybrid
    on those same leaves is the fair reference there.
    """
    from drag_knee_retriever.eval.budget_metrics import bootstrap_gain, budget_figures, cut_size_correlation, word_budget_figures

    out: Dict[str, Any] = {"default_method": DEFAULT_METHOD,
                           "default_recall_gain_at_equal_tokens": headline.get("knee_recall_gain_at_equal_tokens"),
                           "default_recall_gain_ci95": headline.get("knee_recall_gain_ci95")}
    gold_sizes = [len(q.gold) for q in ds.questions]
    adaptive = [n for n, info in method_info.items() if info.get("adaptive")]
    out["budget"] = budget_figures(rows, method_info, gold_sizes, adaptive)
    budgets = sorted({int(n.rsplit("_w", 1)[1]) for n in rows if "[" not in n and n.rsplit("_w", 1)[-1].isdigit()
                      and n.startswith(("flat_hybrid_w", "flat_hybrid_page_w", "drag_knee_w"))})
    if budgets:
        out["word_budgets"] = word_budget_figures(rows, budgets, gold_sizes)
    out["cut_size_vs_gold_spearman"] = {n: cut_size_correlation(rows, gold_sizes, n) for n in adaptive
                                        if n.startswith("drag_knee")}
    # Every adaptive DRAG method of the default index gets its interval too (a candidate default
    # is judged by its interval, not its point estimate).
    out["gains_ci95"] = {n: bootstrap_gain(rows, method_info, n) for n in adaptive
                         if n.startswith("drag") and "[" not in n}
    own: Dict[str, Any] = {}
    for variant in variants:
        suffix = f"[{variant.label}]"
        sub_info = {n.replace(suffix, ""): dict(info, curve=(info.get("curve") or "").replace(suffix, "") or None)
                    for n, info in method_info.items() if n.endswith(suffix)}
        sub_rows = {n.replace(suffix, ""): rows[n + suffix] for n in sub_info if n + suffix in rows}
        if not any(i.get("curve") == REFERENCE_CURVE for i in sub_info.values()):
            continue
        sub_summary = {n: summary[n + suffix] for n in sub_rows}
        flat = curve_points(sub_summary, sub_info, REFERENCE_CURVE)
        for name in sub_rows:
            if not sub_info[name].get("adaptive"):
                continue
            at, extra = interpolate_curve(flat, sub_summary[name]["tokens"])
            own[name + suffix] = {"gain": sub_summary[name]["recall"] - at, "beyond_flat_curve": extra,
                                  "ci95": bootstrap_gain(sub_rows, sub_info, name)}
        out.setdefault("budget_on_own_index", {}).update(
            {n + suffix: v for n, v in budget_figures(sub_rows, sub_info, gold_sizes,
                                                        [n for n in sub_rows if sub_info[n].get("adaptive")]).items()})
    if own:
        out["gains_on_own_index"] = own
    return out


def _round(values: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in values.items()}


def code_version() -> Dict[str, Any]:
    """Which code produced a run, as the caller says: ``DRAG_KNEE_CODE_COMMIT`` (a commit) and
    ``DRAG_KNEE_CODE_CHANGED`` (files changed since, space-separated), which benchmarks/run_eval.sh
    sets. The package never runs git itself; without them this is ``{}``."""
    info: Dict[str, Any] = {}
    if os.environ.get("DRAG_KNEE_CODE_COMMIT"):
        info["commit"] = os.environ["DRAG_KNEE_CODE_COMMIT"]
        info["changed_files"] = [f for f in os.environ.get("DRAG_KNEE_CODE_CHANGED", "").split() if f]
        if os.environ.get("DRAG_KNEE_CODE_SNAPSHOT"):
            info["snapshot"] = os.environ["DRAG_KNEE_CODE_SNAPSHOT"]
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
