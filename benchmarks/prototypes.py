"""Research prototypes of core changes, run by the evaluation harness (benchmarks/run_eval.sh).

Not part of the package: these run the library's own walk (``traversal.walk``) with a different
injected ranker, to measure proposals before they are made in the core: the knee on min-max
normalised dense/BM25 scores instead of RRF scores, and replacing each returned inner node by the
knee-cut of its own leaves. ``proto_knee_rrf`` uses the store's RRF ranking and must reproduce
``drag_knee``: it is the control. Their figures and verdicts are in
benchmarks/history/RESULTS-2026.md.

    python benchmarks/prototypes.py --dataset covidqa --out runs/covidqa ...   # = benchmarks/eval.py + proto_*

takes every option of ``python benchmarks/eval.py`` and adds the ``proto_*`` methods
(:func:`prototype_factory`) to the default index and to every build variant.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: benchmarks.eval

from drag_knee_retriever.search._context import fetch_context
from drag_knee_retriever.eval.baselines import LeafTokens, Method, Retrieval, hits_from_scored
from drag_knee_retriever.common._knee import knee_cut
from drag_knee_retriever.model._nodes import ScoredNode

#: Traced on the first questions, with the runner's defaults.
TRACE_METHODS = ("drag_knee", "drag_branch", "proto_knee_minmax_refine")

#
# These run the library's own walk (traversal.walk) with a different injected ranker, to measure
# proposals before they are made in the core: the knee on min-max normalised dense/BM25 scores
# instead of RRF scores, and replacing each returned inner node by the knee-cut of its own leaves.
# "proto_knee_rrf" uses the store's RRF ranking and must reproduce drag_knee: it is the control.

FUSIONS = ("rrf", "minmax", "dense")


class FusionRanker:
    """A ranker for :func:`drag_knee_retriever.search._traversal.walk` with a chosen score fusion.

    ``"rrf"``: the store's own RRF ranking (what the index uses). ``"minmax"``: dense cosine and
    BM25 score each min-max normalised over the candidate list, combined with the request's
    (dense, sparse) weights; a candidate without a BM25 match scores 0 on that side. ``"dense"``:
    cosine only. Both sides of every request travel in the same single round trip.
    """

    def __init__(self, store: Any, vectors: Any, fusion: str, rrf_k: int, *, seed_leaves: int = 0) -> None:
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got {fusion!r}.")
        if seed_leaves and fusion == "rrf":
            raise ValueError("seed_leaves needs comparable scores: use fusion 'minmax' or 'dense'.")
        self.store, self.vectors, self.fusion, self.rrf_k = store, vectors, fusion, rrf_k
        self.seed_leaves = seed_leaves

    def __call__(self, requests: Sequence[Any]) -> List[List[Any]]:
        from dataclasses import replace

        from drag_knee_retriever.store import RankRequest

        if self.fusion == "rrf":
            return self.store.rank(requests, self.vectors, rrf_k=self.rrf_k, explain=True)
        requests = list(requests)
        # The root request (level 0, no candidate set) may be seeded by a flat leaf ranking.
        seeded = [i for i, r in enumerate(requests) if self.seed_leaves and r.level == 0 and r.candidate_ids is None]
        all_requests = requests + [RankRequest(limit=self.seed_leaves, weights=requests[i].weights, leaves_only=True,
                                               filters=requests[i].filters) for i in seeded]
        sides = []
        for request in all_requests:
            sides.append(replace(request, only="dense"))
            if self.fusion == "minmax":
                sides.append(replace(request, only="sparse"))
        answers = self.store.rank(sides, self.vectors, rrf_k=self.rrf_k, explain=False)
        step = 2 if self.fusion == "minmax" else 1
        fused = [self._fuse(r, answers[i * step], answers[i * step + 1] if step == 2 else [])
                 for i, r in enumerate(all_requests)]
        out = fused[: len(requests)]
        for j, i in enumerate(seeded):
            out[i] = self._seed_roots(requests[i], out[i], fused[len(requests) + j])
        return [hits[: r.limit] for hits, r in zip(out, requests)]

    def _fuse(self, request: Any, dense: Sequence[Any], sparse: Sequence[Any]) -> List[Any]:
        from drag_knee_retriever.store import RankedHit

        nodes = {h.node.id: h.node for h in list(dense) + list(sparse)}
        d = _minmax({h.node.id: h.score for h in dense}, nodes)
        s = _minmax({h.node.id: h.score for h in sparse}, nodes) if self.fusion == "minmax" else {}
        wd, ws = request.weights if self.fusion == "minmax" else (1.0, 0.0)
        d_rank = {h.node.id: r for r, h in enumerate(dense)}
        s_rank = {h.node.id: r for r, h in enumerate(sparse)}
        hits = [RankedHit(node=nodes[n], score=(wd * d.get(n, 0.0) + ws * s.get(n, 0.0)) / (wd + ws),
                          dense_rank=d_rank.get(n), sparse_rank=s_rank.get(n)) for n in nodes]
        hits.sort(key=lambda h: (-h.score, h.node.id))
        return hits

    def _seed_roots(self, request: Any, roots: List[Any], leaves: List[Any]) -> List[Any]:
        """A document scores as the better of its root and its best leaf (MaxP); documents found
        only through a leaf have their root fetched (one more request, only when needed)."""
        from drag_knee_retriever.model._ids import node_id
        from drag_knee_retriever.store import RankedHit

        best: Dict[str, float] = {}
        for hit in leaves:
            best[hit.node.doc_id] = max(best.get(hit.node.doc_id, 0.0), hit.score)
        by_doc = {h.node.doc_id: h for h in roots}
        missing = [doc for doc in best if doc not in by_doc]
        if missing:
            # A one-leaf document's root is its leaf: ask for both ids, keep the level-0 node.
            from drag_knee_retriever.model._ids import leaf_id

            wanted = [i for doc in missing for i in (node_id(doc, "r"), leaf_id(doc, 0))]
            for node in self.store.retrieve(wanted):
                if node.level == 0:
                    by_doc[node.doc_id] = RankedHit(node=node, score=0.0)
        hits = [RankedHit(node=h.node, score=max(h.score, best.get(doc, 0.0)), dense_rank=h.dense_rank,
                          sparse_rank=h.sparse_rank) for doc, h in by_doc.items()]
        hits.sort(key=lambda h: (-h.score, h.node.id))
        return hits


def _minmax(scores: Mapping[str, float], nodes: Mapping[str, Any]) -> Dict[str, float]:
    if not scores:
        return {}
    values = list(scores.values())
    # Candidates missing from one side (no BM25 term match) score the floor of that side.
    low = min(values + [0.0]) if len(scores) < len(nodes) else min(values)
    high = max(values)
    if high - low <= 1e-12:
        return {n: 1.0 for n in scores}
    return {n: (v - low) / (high - low) for n, v in scores.items()}


def refine_to_leaves(hits: Sequence[Any], ranker: FusionRanker, sensitivity: float,
                     weights: Tuple[float, float] = (1.0, 1.0), merge_ratio: Optional[float] = None) -> List[Any]:
    """Replace every inner node by its own leaves ranked for the query and cut at the knee
    (one extra round trip for all of them); leaves stay as they are, in result order.

    With ``merge_ratio`` an inner node stays whole when more than that share of its leaves
    survive the knee (AutoMerging's rule: the evidence is spread over the node)."""
    from drag_knee_retriever.model._ids import span_leaf_ids
    from drag_knee_retriever.store import RankRequest

    inner = [h for h in hits if not h.node.is_leaf]
    if not inner:
        return list(hits)
    requests = []
    for h in inner:
        ids = span_leaf_ids(h.node)
        requests.append(RankRequest(limit=len(ids), weights=weights, candidate_ids=ids))
    ranked = dict(zip((h.node.id for h in inner), ranker(requests)))
    out: List[Any] = []
    seen: set = set()
    for h in hits:
        if h.node.is_leaf:
            chosen = [h]
        else:
            leaves = ranked[h.node.id]
            chosen, _ = knee_cut(leaves, [x.score for x in leaves], sensitivity=sensitivity) if leaves else ([], 0)
            span = h.node.span.last_leaf - h.node.span.first_leaf + 1
            if merge_ratio is not None and chosen and len(chosen) / span > merge_ratio:
                chosen = [h]
        for leaf in chosen:
            if leaf.node.id not in seen:
                seen.add(leaf.node.id)
                out.append(leaf)
    return out


def prototype_variants() -> List[Tuple[str, Dict[str, Any]]]:
    """(name, options) of the prototype searches: fusion, method, sensitivity, refine."""
    return [
        ("proto_knee_rrf", {"fusion": "rrf", "method": "knee", "refine": False}),
        ("proto_knee_rrf_refine", {"fusion": "rrf", "method": "knee", "refine": True}),
        ("proto_knee_rrf_refine_merge", {"fusion": "rrf", "method": "knee", "refine": True, "merge_ratio": 0.5}),
        ("proto_knee_minmax", {"fusion": "minmax", "method": "knee", "refine": False}),
        ("proto_knee_minmax_refine", {"fusion": "minmax", "method": "knee", "refine": True}),
        ("proto_sensitive_0.85_minmax_refine", {"fusion": "minmax", "method": "sensitive_knee",
                                                "sensitivity": 0.85, "refine": True}),
        ("proto_knee_minmax_refine_maxp", {"fusion": "minmax", "method": "knee", "refine": True, "seed_leaves": 50}),
        ("proto_knee_dense", {"fusion": "dense", "method": "knee", "refine": False}),
        ("proto_knee_dense_refine", {"fusion": "dense", "method": "knee", "refine": True}),
    ]


def prototype_methods(index: Any, leaf_tokens: LeafTokens, *, label: str = "default",
                      variants: Optional[Sequence[Tuple[str, Dict[str, Any]]]] = None) -> List[Method]:
    """DRAG walks with a prototype ranker (see :class:`FusionRanker`) and optional leaf refinement."""
    from drag_knee_retriever.model._nodes import Trace
    from drag_knee_retriever.search._traversal import knee_sensitivity, level_weights, walk

    suffix = "" if label == "default" else f"[{label}]"
    methods = []
    for name, options in variants if variants is not None else prototype_variants():
        # The prototypes refine the walk's own nodes (they predate the focus step, which they
        # led to), so they run the walk without it.
        settings = replace(index.search_config.with_overrides(method=options["method"],
                                                              sensitivity=options.get("sensitivity")),
                           focus=None)

        def run(text: str, qv: Any, options=options, settings=settings) -> Retrieval:
            start = time.perf_counter()
            ranker = FusionRanker(index.store, qv, options["fusion"], settings.fusion.rrf_k,
                                  seed_leaves=options.get("seed_leaves", 0))
            trace = Trace(query=text, method=settings.method)
            hits = walk(ranker, settings, (), trace)
            if options.get("refine"):
                hits = refine_to_leaves(hits, ranker, knee_sensitivity(settings),
                                        level_weights(settings.fusion.weights, settings.max_depth),
                                        merge_ratio=options.get("merge_ratio"))
            fetch_context(index.store, hits)  # as index.search does: the context is part of the cost
            latency = (time.perf_counter() - start) * 1000.0
            scored = [ScoredNode(node=h.node, score=h.score, rank=i, text="") for i, h in enumerate(hits)]
            found, returned = hits_from_scored(scored, leaf_tokens)
            return Retrieval(found, latency, returned, trace)

        methods.append(Method(name + suffix, "drag_proto" + suffix, dict(options), run, adaptive=True,
                              index_label=label))
    return methods


def flat_fusion_knee_methods(index: Any, leaf_tokens: LeafTokens, *, pool: int = 20,
                             fusion: str = "minmax", sensitivities: Sequence[float] = (1.0,)) -> List[Method]:
    """Prototype: flat top-``pool`` leaves fused by :class:`FusionRanker` and cut at the knee of
    those scores (separates "the knee on better scores" from "the tree")."""
    from drag_knee_retriever.store import RankRequest

    methods = []
    for s in sensitivities:
        def run(text: str, qv: Any, s=s) -> Retrieval:
            start = time.perf_counter()
            ranker = FusionRanker(index.store, qv, fusion, index.search_config.fusion.rrf_k)
            hits = ranker([RankRequest(limit=pool, leaves_only=True)])[0]
            if hits:
                hits, _ = knee_cut(hits, [h.score for h in hits], sensitivity=s)
            latency = (time.perf_counter() - start) * 1000.0
            scored = [ScoredNode(node=h.node, score=h.score, rank=i, text="") for i, h in enumerate(hits)]
            found, returned = hits_from_scored(scored, leaf_tokens)
            return Retrieval(found, latency, returned)

        name = f"proto_flat_{fusion}_knee" + ("" if s == 1.0 else f"_s{s:g}")
        methods.append(Method(name, "flat_proto", {"pool": pool, "fusion": fusion, "sensitivity": s}, run,
                              adaptive=True))
    return methods


def routed_methods(index: Any, leaf_tokens: LeafTokens, *, pool: int = 20,
                   fusions: Sequence[str] = ("rrf", "minmax")) -> List[Method]:
    """Prototype "tree-routed flat": the roots pick the documents (ranked, cut at the knee), then
    the leaves of those documents are ranked flat (top ``pool``) and cut at their knee. The tree
    is used for routing only; the context is leaves. Two round trips."""
    from drag_knee_retriever.store import RankRequest, parse_filters
    from drag_knee_retriever.search._traversal import level_weights

    methods = []
    for fusion in fusions:
        def run(text: str, qv: Any, fusion=fusion) -> Retrieval:
            start = time.perf_counter()
            settings = index.search_config
            ranker = FusionRanker(index.store, qv, fusion, settings.fusion.rrf_k)
            roots = ranker([RankRequest(limit=settings.max_roots, level=0, weights=level_weights(settings.fusion.weights, 0))])[0]
            if roots:
                roots, _ = knee_cut(roots, [h.score for h in roots])
            docs = sorted({h.node.doc_id for h in roots})
            hits: List[Any] = []
            if docs:
                spec = parse_filters({"doc_id": docs})
                hits = ranker([RankRequest(limit=pool, leaves_only=True, filters=spec)])[0]
                if hits:
                    hits, _ = knee_cut(hits, [h.score for h in hits])
            latency = (time.perf_counter() - start) * 1000.0
            scored = [ScoredNode(node=h.node, score=h.score, rank=i, text="") for i, h in enumerate(hits)]
            found, returned = hits_from_scored(scored, leaf_tokens)
            return Retrieval(found, latency, returned)

        methods.append(Method(f"proto_route_{fusion}", "drag_proto", {"fusion": fusion, "pool": pool}, run,
                              adaptive=True))
    return methods


def per_document_methods(index: Any, leaf_tokens: LeafTokens, *, refine: Sequence[bool] = (False, True)) -> List[Method]:
    """Prototype "documents stay once chosen": the roots are ranked and cut at the knee as usual,
    then the knee walk runs inside each chosen document separately (a ``doc_id`` filter), so a
    beam step can no longer drop a whole document that the root step kept (multi-document
    questions need both). Optionally each returned inner node is refined to its knee leaves.
    One walk per chosen document (sequential here; the core could batch them per level)."""
    from drag_knee_retriever.model._nodes import Trace
    from drag_knee_retriever.store import RankRequest, parse_filters
    from drag_knee_retriever.search._traversal import level_weights
    from drag_knee_retriever.search._traversal import knee_sensitivity, level_weights, walk

    methods = []
    for do_refine in refine:
        def run(text: str, qv: Any, do_refine=do_refine) -> Retrieval:
            start = time.perf_counter()
            settings = replace(index.search_config.with_overrides(method="knee"), focus=None)
            ranker = FusionRanker(index.store, qv, "rrf", settings.fusion.rrf_k)
            roots = ranker([RankRequest(limit=settings.max_roots, level=0, weights=level_weights(settings.fusion.weights, 0))])[0]
            if roots:
                roots, _ = knee_cut(roots, [h.score for h in roots], sensitivity=knee_sensitivity(settings))
            hits: List[Any] = []
            trace = Trace(query=text, method="knee")
            for root in roots:
                found = walk(ranker, settings, parse_filters({"doc_id": root.node.doc_id}), trace)
                if do_refine:
                    found = refine_to_leaves(found, ranker, knee_sensitivity(settings),
                                             level_weights(settings.fusion.weights, settings.max_depth))
                hits.extend(found)
            fetch_context(index.store, hits)
            latency = (time.perf_counter() - start) * 1000.0
            scored = [ScoredNode(node=h.node, score=h.score, rank=i, text="") for i, h in enumerate(hits)]
            found_hits, returned = hits_from_scored(scored, leaf_tokens)
            return Retrieval(found_hits, latency, returned, trace)

        name = "proto_knee_perdoc" + ("_refine" if do_refine else "")
        methods.append(Method(name, "drag_proto", {"per_document": True, "refine": do_refine}, run, adaptive=True))
    return methods


def prototype_factory(index: Any, leaf_tokens: LeafTokens, label: str) -> List[Method]:
    """Every prototype on the default index (``label == "default"``); the tree walks on a variant."""
    methods = prototype_methods(index, leaf_tokens, label=label)
    if label == "default":
        methods += flat_fusion_knee_methods(index, leaf_tokens)
        methods += routed_methods(index, leaf_tokens)
        methods += per_document_methods(index, leaf_tokens)
    return methods


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python benchmarks/eval.py`` with the prototypes added."""
    from benchmarks.eval import main as eval_main

    return eval_main(list(argv) if argv is not None else sys.argv[1:],
                     extra_methods=prototype_factory, trace_methods=TRACE_METHODS)


if __name__ == "__main__":
    sys.exit(main())
