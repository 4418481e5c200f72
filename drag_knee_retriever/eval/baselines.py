"""The retrievers under test: flat baselines, collapsed tree and DRAG variants (AutoMerging: automerging.py).

Every method answers ``run(question_text, query_vectors)`` with a :class:`Retrieval`: the hits as
the metrics see them (:class:`~drag_knee_retriever.eval.metrics.ContextHit`), the wall time of the
search call, and a compact record of what was returned. All methods except AutoMerging use the
same index (same encoders, same Qdrant collection) and the query vectors encoded once per question.

Flat top-k sweeps share one call per retriever family: the top-k list of a k-sweep is the prefix of
the top-max(k) list (the store orders ties by node id, so prefixes are stable), and every k of the
sweep reports the latency of that one call.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.config import FusionConfig
from drag_knee_retriever.common._knee import knee_cut
from drag_knee_retriever.model._nodes import ScoredNode
from drag_knee_retriever.eval.dataset import EvalDataset
from drag_knee_retriever.eval.errors import UnknownDocumentError
from drag_knee_retriever.eval.metrics import ContextHit, count_tokens

log = logging.getLogger(__name__)

FLAT_KS: Tuple[int, ...] = (1, 2, 3, 5, 10)
# The flat sweeps go further than k=10 so that the curve reaches the context sizes of the adaptive
# methods (a gain at equal tokens is then interpolated, not measured against a flat extension).
CURVE_KS: Tuple[int, ...] = FLAT_KS + (20, 50)
#: Word budgets at which recall is also read (a reader's context window, not a k): flat hybrid
#: filled up to each budget from its top-50 list, and the default search given the budget where it
#: takes one (``search(max_tokens=...)``).
WORD_BUDGETS: Tuple[int, ...] = (500, 1000, 1500, 2000)
# How far flat's ranking is read when its top-50 list holds fewer words than a budget.
_FLAT_BUDGET_DEPTH = 250
DEFAULT_FUSION_SCHEDULE: Tuple[Tuple[float, float], ...] = ((0.2, 0.8), (0.5, 0.5), (0.8, 0.2), (1.0, 0.0))

LeafTokens = Mapping[str, Sequence[int]]
#: The fields of one entry of ``Retrieval.returned`` (AutoMerging adds the chunk's start, end).
RETURNED_FIELDS: Tuple[str, ...] = ("doc_id", "first_leaf", "last_leaf", "level", "is_leaf", "score")


@dataclass
class Retrieval:
    """One method's answer to one question."""

    hits: List[ContextHit]
    latency_ms: float
    returned: List[List[Any]] = field(default_factory=list)
    # The search's Trace object (DRAG only); the runner serialises it for the first questions.
    trace: Any = None


class LeafTable(Dict[str, List[int]]):
    """Whitespace tokens of every dataset unit per document, with the units' texts (``texts``):
    a passage leaf returns part of a unit, and the metrics need to know which part."""

    texts: Mapping[str, Sequence[str]]


def leaf_token_table(dataset: EvalDataset) -> Dict[str, List[int]]:
    """Whitespace tokens of every leaf, per document (index = leaf ordinal)."""
    table = LeafTable({doc_id: [count_tokens(u) for u in units] for doc_id, units in dataset.units.items()})
    table.texts = dataset.units
    return table


def _unit_hit(hit: ScoredNode, counts: Sequence[int], texts: Optional[Mapping[str, Sequence[str]]]) -> ContextHit:
    """A hit in dataset units. Every dataset passes its units as pages (unit i = page i + 1), so a
    node's pages name its units whether or not the index split long pages into passages; a passage
    (a part of one page) returns only its own tokens and characters of that unit."""
    node = hit.node
    span = node.span
    if span.first_page is None:
        return ContextHit.from_span(node.doc_id, span.first_leaf, span.last_leaf, counts, node_id=node.id,
                                    level=node.level)
    first, last = span.first_page - 1, span.last_page - 1
    if span.first_part is None:
        return ContextHit.from_span(node.doc_id, first, last, counts, node_id=node.id, level=node.level)
    text = hit.text if hit.text else node.text
    ranges: Dict[int, Tuple[int, int]] = {}
    unit = texts[node.doc_id][first] if texts is not None else None
    if unit is not None:
        at = unit.find(text)
        if at >= 0:
            ranges[first] = (at, at + len(text))
    return ContextHit(doc_id=node.doc_id, leaf_tokens={first: count_tokens(text)}, node_id=node.id,
                      level=node.level, char_ranges=ranges)


def hits_from_scored(nodes: Sequence[ScoredNode], leaf_tokens: LeafTokens) -> Tuple[List[ContextHit], List[List[Any]]]:
    """Turn our search results into metric hits (a node covers every leaf of its span)."""
    hits: List[ContextHit] = []
    returned: List[List[Any]] = []
    texts = getattr(leaf_tokens, "texts", None)
    for hit in nodes:
        node = hit.node
        try:
            counts = leaf_tokens[node.doc_id]
        except KeyError:
            raise UnknownDocumentError(
                f"the index returned document {node.doc_id!r}, which the dataset does not hold; "
                "evaluate on a fresh in-memory index built from the dataset only."
            ) from None
        hits.append(_unit_hit(hit, counts, texts))
        # Compact: [doc_id, first_leaf, last_leaf, level, is_leaf, score] (see RETURNED_FIELDS).
        returned.append([node.doc_id, node.span.first_leaf, node.span.last_leaf, node.level,
                         node.is_leaf, round(float(hit.raw_score if getattr(hit, "raw_score", None) is not None else hit.score), 5)])
    return hits, returned


class ScopedIndex:
    """An index whose searches all carry the current question's filters.

    The single-document setting (MMLongBench, QMSum) filters every search to the question's
    document; the runner sets ``filters`` before each question and every method built on this
    object (flat, collapsed, DRAG) searches within it. Everything else passes through.
    """

    def __init__(self, index: Any) -> None:
        self._index = index
        self.filters: Optional[Mapping[str, Any]] = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)

    def search(self, query: str, **kwargs: Any) -> Any:
        if self.filters is not None:
            kwargs.setdefault("filters", self.filters)
        return self._index.search(query, **kwargs)

    def flat_search(self, query: str, **kwargs: Any) -> Any:
        if self.filters is not None:
            kwargs.setdefault("filters", self.filters)
        return self._index.flat_search(query, **kwargs)


# ---------------------------------------------------------------------------------------------
# Method descriptions
# ---------------------------------------------------------------------------------------------


@dataclass
class Method:
    """A named retriever configuration.

    ``family`` groups methods in the table; ``curve`` names the sweep a method belongs to (flat
    top-k: one line in the plot), ``None`` for an adaptive method (one point). ``adaptive`` marks
    methods whose context size is not fixed by a k (they get a gain-at-equal-tokens figure).
    """

    name: str
    family: str
    params: Dict[str, Any]
    run: Callable[[str, Any], Retrieval]
    curve: Optional[str] = None
    adaptive: bool = False
    index_label: str = "default"


class _SharedCall:
    """Runs one expensive call per question and lets several methods slice its result."""

    def __init__(self, call: Callable[[str, Any], List[ScoredNode]]):
        self._call = call
        self._key: Optional[Tuple[str, int]] = None
        self._value: List[ScoredNode] = []
        self._latency = 0.0

    def get(self, text: str, vectors: Any) -> Tuple[List[ScoredNode], float]:
        key = (text, id(vectors))
        if key != self._key:
            start = time.perf_counter()
            self._value = self._call(text, vectors)
            self._latency = (time.perf_counter() - start) * 1000.0
            self._key = key
        return self._value, self._latency


def fill_budget(hits: Sequence[ContextHit], budget: int) -> List[ContextHit]:
    """The ranked hits that fit in ``budget`` words, in rank order: each hit is taken whole if it
    fits in what is left and skipped if not (a later, shorter one may still fit). What a flat
    retriever given a word budget instead of a k returns."""
    kept: List[ContextHit] = []
    left = budget
    for hit in hits:
        if hit.tokens <= left:
            kept.append(hit)
            left -= hit.tokens
    return kept


def flat_methods(index: Any, leaf_tokens: LeafTokens, *, ks: Sequence[int] = FLAT_KS,
                 modes: Sequence[str] = ("dense", "sparse", "hybrid"), pages: bool = True,
                 budgets: Sequence[int] = ()) -> List[Method]:
    """Flat top-k over leaves for each mode (dense, BM25, hybrid RRF); ``pages``: also hybrid top-k
    *pages* (``flat_search(unit="page")``: passages grouped into their page, the page returned
    whole; the same as ``flat_hybrid`` on an index without passages). ``budgets``: also flat hybrid
    (leaves and pages) filled up to each word budget from the same top-max(k) list
    (``flat_hybrid_w500``: :func:`fill_budget`), read on in a longer ranking where that list holds
    fewer words than the budget (short leaves: HotpotQA's 50 best paragraphs are ~1,200 words), so
    that flat is measured at the budget and not below it."""
    methods: List[Method] = []
    names = {"dense": "flat_dense", "sparse": "flat_bm25", "hybrid": "flat_hybrid"}
    top = max(ks)
    runs = [(names[mode], mode, "leaf") for mode in modes]
    if pages and "hybrid" in modes:
        runs.append(("flat_hybrid_page", "hybrid", "page"))
    for name, mode, unit in runs:
        shared = _SharedCall(
            lambda text, qv, mode=mode, unit=unit: index.flat_search(text, k=top, mode=mode, scope="leaves",
                                                                     query_vectors=qv, unit=unit)
        )
        for k in ks:
            def run(text: str, qv: Any, shared=shared, k=k) -> Retrieval:
                nodes, latency = shared.get(text, qv)
                hits, returned = hits_from_scored(nodes[:k], leaf_tokens)
                return Retrieval(hits, latency, returned)

            params = {"mode": mode, "k": k, "scope": "leaves", **({"unit": unit} if unit != "leaf" else {})}
            methods.append(Method(f"{name}_k{k}", name, params, run, curve=name))
        deeper = _SharedCall(
            lambda text, qv, mode=mode, unit=unit: index.flat_search(text, k=_FLAT_BUDGET_DEPTH, mode=mode,
                                                                     scope="leaves", query_vectors=qv, unit=unit)
        )
        for budget in budgets if mode == "hybrid" else ():
            def run_budget(text: str, qv: Any, shared=shared, deeper=deeper, budget=budget) -> Retrieval:
                nodes, latency = shared.get(text, qv)
                if sum(count_tokens(n.text) for n in nodes) < budget:
                    more, extra = deeper.get(text, qv)
                    seen = {n.node.id for n in nodes}
                    nodes = list(nodes) + [n for n in more if n.node.id not in seen]
                    latency += extra
                hits, returned = hits_from_scored(nodes, leaf_tokens)
                kept = fill_budget(hits, budget)
                ids = {id(h) for h in kept}
                return Retrieval(kept, latency, [r for h, r in zip(hits, returned) if id(h) in ids])

            params = {"mode": mode, "top": top, "budget_words": budget, **({"unit": unit} if unit != "leaf" else {})}
            methods.append(Method(f"{name}_w{budget}", f"{name}_budget", params, run_budget))
    return methods


def flat_knee_methods(index: Any, leaf_tokens: LeafTokens, *, pool: int = 20,
                      sensitivities: Sequence[float] = (1.0, 0.5)) -> List[Method]:
    """Flat hybrid top-``pool`` over leaves cut at the knee of its RRF scores (the knee, no tree)."""
    shared = _SharedCall(
        lambda text, qv: index.flat_search(text, k=pool, mode="hybrid", scope="leaves", query_vectors=qv)
    )
    methods = []
    for s in sensitivities:
        def run(text: str, qv: Any, s=s) -> Retrieval:
            nodes, latency = shared.get(text, qv)
            if nodes:
                nodes, _ = knee_cut(nodes, [n.raw_score for n in nodes], sensitivity=s)  # the RRF values, not the public scale
            hits, returned = hits_from_scored(nodes, leaf_tokens)
            return Retrieval(hits, latency, returned)

        name = "flat_hybrid_knee" if s == 1.0 else f"flat_hybrid_knee_s{s:g}"
        methods.append(Method(name, "flat_hybrid_knee", {"pool": pool, "sensitivity": s}, run, adaptive=True))
    return methods


def drop_covered(nodes: Sequence[ScoredNode], k: int) -> List[ScoredNode]:
    """Walk a ranked list of tree nodes and keep up to ``k``, skipping any node an already kept
    node of the same document contains (its ancestor was returned: its text is already there)."""
    kept: List[ScoredNode] = []
    for hit in nodes:
        if len(kept) >= k:
            break
        if any(o.doc_id == hit.doc_id and o.span.contains(hit.span) for o in kept):
            continue
        kept.append(hit)
    return kept


def collapsed_methods(index: Any, leaf_tokens: LeafTokens, *, ks: Sequence[int] = FLAT_KS,
                      label: str = "default") -> List[Method]:
    """Collapsed tree (RAPTOR): every node of every level ranked flat by hybrid RRF, top-k kept."""
    top = max(ks)
    # Descendants of a kept node are skipped, so look further down the list than k.
    shared = _SharedCall(
        lambda text, qv: index.flat_search(text, k=top * 3, mode="hybrid", scope="all", query_vectors=qv)
    )
    suffix = "" if label == "default" else f"[{label}]"
    methods = []
    for k in ks:
        def run(text: str, qv: Any, k=k) -> Retrieval:
            nodes, latency = shared.get(text, qv)
            hits, returned = hits_from_scored(drop_covered(nodes, k), leaf_tokens)
            return Retrieval(hits, latency, returned)

        methods.append(Method(f"collapsed_k{k}{suffix}", "collapsed" + suffix, {"k": k, "scope": "all"}, run,
                              curve="collapsed" + suffix, index_label=label))
    return methods


def drag_variants(fusion_schedule: Sequence[Tuple[float, float]] = DEFAULT_FUSION_SCHEDULE) -> List[Tuple[str, Dict[str, Any]]]:
    """The DRAG search variants: (name, keyword arguments of ``index.search``)."""
    return [
        ("drag_fixed_w1", {"method": "fixed", "beam_width": 1}),
        ("drag_fixed_w3", {"method": "fixed", "beam_width": 3}),
        ("drag_fixed_w5", {"method": "fixed", "beam_width": 5}),
        ("drag_knee", {"method": "knee"}),
        ("drag_sensitive_0.5", {"method": "sensitive_knee", "sensitivity": 0.5}),
        ("drag_sensitive_0.85", {"method": "sensitive_knee", "sensitivity": 0.85}),
        ("drag_branch", {"method": "branch"}),
        ("drag_knee_fusion", {"method": "knee", "fusion": FusionConfig(weights=[tuple(p) for p in fusion_schedule])}),
        # RRF with k=60 (LangChain's constant) flattens the fused scores the knee is taken on.
        ("drag_knee_rrf60", {"config": "rrf60"}),
        # The default before the magnitude focus (benchmarks/RESULTS.md "## cut"): the focus on RRF.
        ("drag_knee_rrf", {"config": "rrf"}),
        # The knee walk without its focus step (the default before the focus step existed): every
        # node the walk keeps is returned, an inner node with its whole span.
        ("drag_knee_walk_only", {"config": "walk_only"}),
        # Focus without merging: always leaves, never a whole span.
        ("drag_knee_no_merge", {"config": "no_merge"}),
        # The tree as evidence: the walk's region leaves fused with a global leaf ranking.
        ("drag_knee_global", {"config": "global"}),
        # A deeper focus pool (broad questions: many gold leaves), alone and with the global list.
        ("drag_knee_pool20", {"config": "pool20"}),
        ("drag_knee_global_pool20", {"config": "global_pool20"}),
        # Scores with magnitude (issue 14, items 5-6): the focus pool (region leaves + the best 50
        # leaves of the collection) ranked by z-scored cosine + BM25 with the siblings' evidence, cut
        # at its knee (benchmarks/cut_sim.py chose it; RESULTS.md "## cut"). Variants: no sibling
        # evidence, the walk's regions only, and merged into the walk's regions.
        ("drag_knee_mag", {"config": "mag"}),
        ("drag_knee_mag_nosib", {"config": "mag_nosib"}),
        ("drag_knee_mag_walk", {"config": "mag_walk"}),
        ("drag_knee_mag_merge", {"config": "mag_merge"}),
        # The default with the global list over every leaf of the collection (the default before
        # issue 26 scoped it to the ranked roots' documents).
        ("drag_knee_global_collection", {"config": "global_collection"}),
        # ... and over the leaves of the 20 best documents only (the default covers 50).
        ("drag_knee_global_docs20", {"config": "global_docs20"}),
    ]


# SearchConfig changes named by drag_variants' {"config": name} (dotted settings, applied in order
# to the index's config). The variants named *rrf*, walk_only, no_merge, global, pool20 keep their
# meaning from before the magnitude default: the focus on RRF, with no global leaves unless they
# name some.
_RRF = {"focus.scores": "rrf", "focus.global_leaves": None}
_MAG = {"focus.scores": "magnitude", "focus.sibling_weight": 0.25}
_CONFIG_VARIANTS: Dict[str, Dict[str, Any]] = {
    "rrf": {"method": "knee", **_RRF},
    "rrf60": {"method": "knee", "fusion.rrf_k": 60, **_RRF},
    "walk_only": {"method": "knee", "focus": None},
    "no_merge": {"method": "knee", "focus.merge_ratio": None, **_RRF},
    "global": {"method": "knee", **_RRF, "focus.global_leaves": 20},
    "pool20": {"method": "knee", "focus.pool": 20, **_RRF},
    "global_pool20": {"method": "knee", "focus.pool": 20, **_RRF, "focus.global_leaves": 20},
    "mag": {"method": "knee", **_MAG, "focus.global_leaves": 50, "focus.merge_ratio": None},
    "mag_nosib": {"method": "knee", **_MAG, "focus.global_leaves": 50, "focus.merge_ratio": None,
                  "focus.sibling_weight": 0.0},
    "mag_walk": {"method": "knee", **_MAG, "focus.global_leaves": None, "focus.merge_ratio": None},
    "mag_merge": {"method": "knee", **_MAG, "focus.global_leaves": 50, "focus.merge_ratio": 0.5},
    "global_collection": {"focus.global_scope": "collection"},
    "global_docs20": {"focus.global_docs": 20},
}


def _variant_config(base: Any, changes: Mapping[str, Any]) -> Any:
    for path, value in changes.items():
        base = base.with_path(path, value)
    return base


def drag_methods(index: Any, leaf_tokens: LeafTokens, *, label: str = "default",
                 variants: Optional[Sequence[Tuple[str, Dict[str, Any]]]] = None) -> List[Method]:
    """DRAG tree search, one method per variant, on ``index`` (a build variant named ``label``)."""
    suffix = "" if label == "default" else f"[{label}]"
    methods = []
    for name, kwargs in variants if variants is not None else drag_variants():
        if isinstance(kwargs.get("config"), str):
            changes = _CONFIG_VARIANTS[kwargs["config"]]
            kwargs = {"config": _variant_config(index.search_config, changes)}
        elif name.startswith("drag_knee{"):  # a search variant (runner.parse_search_variant): dotted settings
            kwargs = {"config": _variant_config(index.search_config, kwargs)}

        def run(text: str, qv: Any, kwargs=kwargs) -> Retrieval:
            start = time.perf_counter()
            result = index.search(text, query_vectors=qv, **kwargs)
            latency = (time.perf_counter() - start) * 1000.0
            hits, returned = hits_from_scored(result.nodes, leaf_tokens)
            return Retrieval(hits, latency, returned, result.trace)

        adaptive = kwargs.get("method") != "fixed"
        family = "drag" + suffix
        params = {k: (list(v) if isinstance(v, tuple) else v.to_dict() if hasattr(v, "to_dict") else v)
                  for k, v in kwargs.items() if k != "config"}
        if "config" in kwargs:
            config = kwargs["config"]
            focus = config.focus
            params.update({"method": config.method, "rrf_k": config.fusion.rrf_k,
                           "focus_pool": focus.pool if focus else None,
                           "merge_ratio": focus.merge_ratio if focus else None,
                           "focus_global": focus.global_leaves if focus else None,
                           "focus_scores": focus.scores if focus else None,
                           "sibling_weight": focus.sibling_weight if focus else None,
                           "focus_global_scope": focus.global_scope if focus else None,
                           "focus_global_docs": focus.global_docs if focus else None,
                           "identity_weight": config.identity_weight,
                           "identity_focus_weight": focus.identity_weight if focus else None})
        methods.append(Method(name + suffix, family, params, run, adaptive=adaptive, index_label=label,
                              curve=("drag_fixed" + suffix) if not adaptive else None))
    return methods


def search_takes(index: Any, option: str) -> bool:
    """Whether ``index.search`` (through a :class:`ScopedIndex` too) takes the keyword ``option``."""
    import inspect

    target = getattr(index, "_index", index)
    try:
        parameters = inspect.signature(target.search).parameters
    except (TypeError, ValueError):
        return False
    if option in parameters:
        return True
    # ``**options: Unpack[SearchOptions]`` (DragKneeIndex.search since its keywords are checked):
    # the per-call settings are the names the index checks them against.
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        from drag_knee_retriever.config import SEARCH_OPTIONS

        return option in SEARCH_OPTIONS
    return False


def drag_budget_methods(index: Any, leaf_tokens: LeafTokens, *, budgets: Sequence[int] = WORD_BUDGETS,
                        label: str = "default") -> List[Method]:
    """The default search given each word budget (``search(max_tokens=B)``, ``drag_knee_w500``...),
    where the index's search takes one; its results are held to the budget as flat's are
    (:func:`fill_budget`), so every ``_w`` row reads at most that many words. None otherwise."""
    if not budgets or not search_takes(index, "max_tokens"):
        return []
    suffix = "" if label == "default" else f"[{label}]"
    methods = []
    for budget in budgets:
        def run(text: str, qv: Any, budget=budget) -> Retrieval:
            start = time.perf_counter()
            result = index.search(text, query_vectors=qv, max_tokens=budget)
            latency = (time.perf_counter() - start) * 1000.0
            hits, returned = hits_from_scored(result.nodes, leaf_tokens)
            kept = fill_budget(hits, budget)
            ids = {id(h) for h in kept}
            return Retrieval(kept, latency, [r for h, r in zip(hits, returned) if id(h) in ids], result.trace)

        methods.append(Method(f"drag_knee_w{budget}{suffix}", "drag_budget" + suffix,
                              {"method": "knee", "max_tokens": budget}, run, index_label=label))
    return methods
