"""The retrievers under test: flat baselines, collapsed tree, LlamaIndex AutoMerging, DRAG variants.

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
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..knee import knee_cut
from ..nodes import ScoredNode
from .datasets import EvalDataset
from .metrics import ContextHit, count_tokens

log = logging.getLogger(__name__)

FLAT_KS: Tuple[int, ...] = (1, 2, 3, 5, 10)
# The flat sweeps go further than k=10 so that the curve reaches the context sizes of the adaptive
# methods (a gain at equal tokens is then interpolated, not measured against a flat extension).
CURVE_KS: Tuple[int, ...] = FLAT_KS + (20, 50)
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


def leaf_token_table(dataset: EvalDataset) -> Dict[str, List[int]]:
    """Whitespace tokens of every leaf, per document (index = leaf ordinal)."""
    return {doc_id: [count_tokens(u) for u in units] for doc_id, units in dataset.units.items()}


def hits_from_scored(nodes: Sequence[ScoredNode], leaf_tokens: LeafTokens) -> Tuple[List[ContextHit], List[List[Any]]]:
    """Turn our search results into metric hits (a node covers every leaf of its span)."""
    hits: List[ContextHit] = []
    returned: List[List[Any]] = []
    for hit in nodes:
        node = hit.node
        try:
            counts = leaf_tokens[node.doc_id]
        except KeyError:
            raise KeyError(
                f"the index returned document {node.doc_id!r}, which the dataset does not hold; "
                "evaluate on a fresh in-memory index built from the dataset only."
            ) from None
        hits.append(ContextHit.from_span(node.doc_id, node.span.first_leaf, node.span.last_leaf, counts,
                                         node_id=node.id, level=node.level))
        # Compact: [doc_id, first_leaf, last_leaf, level, is_leaf, score] (see RETURNED_FIELDS).
        returned.append([node.doc_id, node.span.first_leaf, node.span.last_leaf, node.level,
                         node.is_leaf, round(float(hit.score), 5)])
    return hits, returned


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


def flat_methods(index: Any, leaf_tokens: LeafTokens, *, ks: Sequence[int] = FLAT_KS,
                 modes: Sequence[str] = ("dense", "sparse", "hybrid")) -> List[Method]:
    """Flat top-k over leaves for each mode (dense, BM25, hybrid RRF)."""
    methods: List[Method] = []
    names = {"dense": "flat_dense", "sparse": "flat_bm25", "hybrid": "flat_hybrid"}
    top = max(ks)
    for mode in modes:
        shared = _SharedCall(
            lambda text, qv, mode=mode: index.flat_search(text, k=top, mode=mode, scope="leaves", query_vectors=qv)
        )
        for k in ks:
            def run(text: str, qv: Any, shared=shared, k=k) -> Retrieval:
                nodes, latency = shared.get(text, qv)
                hits, returned = hits_from_scored(nodes[:k], leaf_tokens)
                return Retrieval(hits, latency, returned)

            methods.append(Method(f"{names[mode]}_k{k}", names[mode], {"mode": mode, "k": k, "scope": "leaves"},
                                  run, curve=names[mode]))
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
                nodes, _ = knee_cut(nodes, [n.score for n in nodes], sensitivity=s)
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
        ("drag_knee_fusion", {"method": "knee", "fusion_weights": [tuple(p) for p in fusion_schedule]}),
        # RRF with k=60 (LangChain's constant) flattens the fused scores the knee is taken on.
        ("drag_knee_rrf60", {"config": "rrf60"}),
        # The knee walk without its focus step (the default before the focus step existed): every
        # node the walk keeps is returned, an inner node with its whole span.
        ("drag_knee_walk_only", {"config": "walk_only"}),
        # Focus without merging: always leaves, never a whole span.
        ("drag_knee_no_merge", {"config": "no_merge"}),
    ]


# SearchConfig changes named by drag_variants' {"config": name} (applied to the index's config).
_CONFIG_VARIANTS: Dict[str, Dict[str, Any]] = {
    "rrf60": {"method": "knee", "rrf_k": 60},
    "walk_only": {"method": "knee", "focus_pool": None},
    "no_merge": {"method": "knee", "merge_ratio": None},
}


def drag_methods(index: Any, leaf_tokens: LeafTokens, *, label: str = "default",
                 variants: Optional[Sequence[Tuple[str, Dict[str, Any]]]] = None) -> List[Method]:
    """DRAG tree search, one method per variant, on ``index`` (a build variant named ``label``)."""
    suffix = "" if label == "default" else f"[{label}]"
    methods = []
    for name, kwargs in variants if variants is not None else drag_variants():
        if isinstance(kwargs.get("config"), str):
            changes = _CONFIG_VARIANTS[kwargs["config"]]
            kwargs = {"config": replace(index.search_config, **changes)}

        def run(text: str, qv: Any, kwargs=kwargs) -> Retrieval:
            start = time.perf_counter()
            result = index.search(text, query_vectors=qv, **kwargs)
            latency = (time.perf_counter() - start) * 1000.0
            hits, returned = hits_from_scored(result.nodes, leaf_tokens)
            return Retrieval(hits, latency, returned, result.trace)

        adaptive = kwargs.get("method") != "fixed"
        family = "drag" + suffix
        params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in kwargs.items() if k != "config"}
        if "config" in kwargs:
            config = kwargs["config"]
            params.update({"method": config.method, "rrf_k": config.rrf_k, "focus_pool": config.focus_pool,
                           "merge_ratio": config.merge_ratio})
        methods.append(Method(name + suffix, family, params, run, adaptive=adaptive, index_label=label,
                              curve=("drag_fixed" + suffix) if not adaptive else None))
    return methods


# ---------------------------------------------------------------------------------------------
# LlamaIndex AutoMergingRetriever
# ---------------------------------------------------------------------------------------------


def llama_index_available() -> bool:
    """Whether llama-index-core can be imported (the AutoMerging baseline needs it)."""
    try:
        import llama_index.core  # noqa: F401
    except ImportError:
        return False
    return True


def make_llamaindex_embedding(encoder: Any) -> Any:
    """Our dense encoder as a LlamaIndex ``BaseEmbedding`` (so both sides use the same vectors)."""
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr

    class DenseEncoderEmbedding(BaseEmbedding):
        """LlamaIndex embedding backed by drag-knee-retriever's fastembed dense encoder."""

        _encoder: Any = PrivateAttr()

        def __init__(self, wrapped: Any, **kwargs: Any) -> None:
            super().__init__(model_name=getattr(wrapped, "model_id", "drag-knee-dense"), embed_batch_size=64, **kwargs)
            self._encoder = wrapped

        @classmethod
        def class_name(cls) -> str:
            return "DragKneeDenseEmbedding"

        def _get_query_embedding(self, query: str) -> List[float]:
            return [float(x) for x in self._encoder.encode_query(query).dense]

        async def _aget_query_embedding(self, query: str) -> List[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> List[float]:
            return self._encoder.encode_dense([text])[0].tolist()

        def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
            return [v.tolist() for v in self._encoder.encode_dense(list(texts))]

    return DenseEncoderEmbedding(encoder)


@dataclass
class AutoMergingSetup:
    """A LlamaIndex hierarchy over a dataset: the storage, the vector index and node offsets."""

    storage_context: Any
    vector_index: Any
    offsets: Dict[str, Tuple[str, int, int]]  # node id -> (doc_id, start, end) in dataset.full_text
    leaf_count: int
    node_count: int
    chunk_sizes: Tuple[int, ...]
    seconds: float


def build_automerging(dataset: EvalDataset, encoder: Any, *, chunk_sizes: Sequence[int] = (2048, 512, 128),
                      progress: Optional[Callable[[str, int, int], None]] = None) -> AutoMergingSetup:
    """Parse every document with ``HierarchicalNodeParser``, embed the leaf nodes with our encoder
    into an in-memory ``VectorStoreIndex``, and keep all nodes in the docstore (for merging).

    LlamaIndex stores a child's ``start_char_idx`` relative to its parent chunk, so absolute offsets
    are rebuilt by adding the parents' offsets, and checked against the document text.
    """
    from llama_index.core import Document as LlamaDocument
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import HierarchicalNodeParser, get_leaf_nodes
    from llama_index.core.schema import MetadataMode

    start = time.perf_counter()
    documents = [LlamaDocument(text=dataset.full_text(d.id), id_=d.id) for d in dataset.documents]
    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=list(chunk_sizes))
    nodes = parser.get_nodes_from_documents(documents)
    by_id = {n.node_id: n for n in nodes}
    offsets: Dict[str, Tuple[str, int, int]] = {}

    def absolute(node: Any) -> int:
        if node.node_id in offsets:
            return offsets[node.node_id][1]
        parent = node.parent_node
        base = absolute(by_id[parent.node_id]) if parent is not None and parent.node_id in by_id else 0
        content = node.get_content(metadata_mode=MetadataMode.NONE)
        doc_id = node.ref_doc_id
        text = dataset.full_text(doc_id)
        position = base + (node.start_char_idx or 0)
        if text[position : position + len(content)] != content:
            # Not where the offsets say: search for it from the parent's start.
            found = text.find(content, base)
            if found < 0:
                found = text.find(content)
            if found < 0:
                raise RuntimeError(
                    f"LlamaIndex node {node.node_id} of document {doc_id!r} is not a substring of the "
                    "document text; cannot map it to leaves (check the llama-index-core version)."
                )
            position = found
        offsets[node.node_id] = (doc_id, position, position + len(content))
        return position

    for node in nodes:
        absolute(node)
    leaves = get_leaf_nodes(nodes)
    storage_context = StorageContext.from_defaults()
    storage_context.docstore.add_documents(nodes)
    embed_model = make_llamaindex_embedding(encoder)
    if progress:
        progress("automerging", 0, len(leaves))
    vector_index = VectorStoreIndex(leaves, storage_context=storage_context, embed_model=embed_model)
    if progress:
        progress("automerging", len(leaves), len(leaves))
    seconds = time.perf_counter() - start
    log.info("AutoMerging hierarchy: %d nodes, %d leaves embedded in %.1fs", len(nodes), len(leaves), seconds)
    return AutoMergingSetup(storage_context, vector_index, offsets, len(leaves), len(nodes),
                            tuple(chunk_sizes), seconds)


def hits_from_chunks(dataset: EvalDataset, spans: Sequence[Tuple[str, int, int]]) -> List[ContextHit]:
    """Map character ranges of ``dataset.full_text`` to hits over the leaves they overlap.

    A leaf is touched when the chunk holds at least one of its tokens; the hit carries only the
    tokens of each leaf that the chunk actually contains, and the character range of every leaf it
    cuts (so the metrics can tell whether the cut part holds the evidence).
    """
    hits = []
    cache: Dict[str, List[Tuple[int, int]]] = {}
    for doc_id, lo, hi in spans:
        units = dataset.units[doc_id]
        offsets = cache.setdefault(doc_id, dataset.unit_offsets(doc_id))
        leaf_tokens: Dict[int, int] = {}
        partial: Dict[int, Tuple[int, int]] = {}
        for ordinal, (a, b) in enumerate(offsets):
            if a < hi and lo < b:
                local = (max(lo, a) - a, min(hi, b) - a)
                tokens = count_tokens(units[ordinal][local[0] : local[1]])
                if tokens:
                    leaf_tokens[ordinal] = tokens
                    if local != (0, b - a):
                        partial[ordinal] = local
        hits.append(ContextHit(doc_id, leaf_tokens, char_ranges=partial))
    return hits


def automerging_methods(setup: AutoMergingSetup, dataset: EvalDataset, *,
                        top_ks: Sequence[int] = (6,), ratio: float = 0.5) -> List[Method]:
    """LlamaIndex ``AutoMergingRetriever`` over the leaf vector index, one method per top-k."""
    from llama_index.core.retrievers import AutoMergingRetriever
    from llama_index.core.schema import QueryBundle

    methods = []
    for k in top_ks:
        base = setup.vector_index.as_retriever(similarity_top_k=k)
        retriever = AutoMergingRetriever(base, setup.storage_context, simple_ratio_thresh=ratio, verbose=False)

        def run(text: str, qv: Any, retriever=retriever) -> Retrieval:
            # The query embedding computed once for the question is handed over, not recomputed.
            bundle = QueryBundle(query_str=text, embedding=[float(x) for x in qv.dense])
            start = time.perf_counter()
            found = retriever.retrieve(bundle)
            latency = (time.perf_counter() - start) * 1000.0
            spans = [setup.offsets[n.node.node_id] for n in found]
            hits = hits_from_chunks(dataset, spans)
            # [doc_id, first_leaf, last_leaf, level (None: a chunk), is_leaf, score], plus char range.
            returned = [[d, min(h.leaf_tokens, default=-1), max(h.leaf_tokens, default=-1), None, False,
                         round(float(n.score or 0.0), 5), a, b]
                        for (d, a, b), h, n in zip(spans, hits, found)]
            return Retrieval(hits, latency, returned)

        methods.append(Method(f"automerging_k{k}", "automerging",
                              {"similarity_top_k": k, "simple_ratio_thresh": ratio,
                               "chunk_sizes": list(setup.chunk_sizes)}, run, adaptive=True))
    return methods


# ---------------------------------------------------------------------------------------------
# Prototypes of core changes (evaluation only): other score fusion for the walk, leaf refinement
# ---------------------------------------------------------------------------------------------
#
# These run the library's own walk (traversal.walk) with a different injected ranker, to measure
# proposals before they are made in the core: the knee on min-max normalised dense/BM25 scores
# instead of RRF scores, and replacing each returned inner node by the knee-cut of its own leaves.
# "proto_knee_rrf" uses the store's RRF ranking and must reproduce drag_knee: it is the control.

FUSIONS = ("rrf", "minmax", "dense")


class FusionRanker:
    """A ranker for :func:`drag_knee_retriever.traversal.walk` with a chosen score fusion.

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

        from ..store import RankRequest

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
        from ..store import RankedHit

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
        from ..builder import node_id
        from ..store import RankedHit

        best: Dict[str, float] = {}
        for hit in leaves:
            best[hit.node.doc_id] = max(best.get(hit.node.doc_id, 0.0), hit.score)
        by_doc = {h.node.doc_id: h for h in roots}
        missing = [doc for doc in best if doc not in by_doc]
        if missing:
            # A one-leaf document's root is its leaf: ask for both ids, keep the level-0 node.
            from ..builder import leaf_id

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
    from ..builder import span_leaf_ids
    from ..store import RankRequest

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


def _fetch_span_texts(store: Any, hits: Sequence[Any]) -> None:
    """Fetch the leaves of the inner nodes returned (one request), like ``index.search``."""
    from ..builder import span_leaf_ids

    ids = sorted({i for h in hits if not h.node.is_leaf for i in span_leaf_ids(h.node)})
    if ids:
        store.retrieve(ids)


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
    from ..nodes import Trace
    from ..traversal import walk

    suffix = "" if label == "default" else f"[{label}]"
    methods = []
    for name, options in variants if variants is not None else prototype_variants():
        # The prototypes refine the walk's own nodes (they predate the focus step, which they
        # led to), so they run the walk without it.
        settings = replace(index.search_config.with_overrides(method=options["method"],
                                                              sensitivity=options.get("sensitivity")),
                           focus_pool=None)

        def run(text: str, qv: Any, options=options, settings=settings) -> Retrieval:
            start = time.perf_counter()
            ranker = FusionRanker(index.store, qv, options["fusion"], settings.rrf_k,
                                  seed_leaves=options.get("seed_leaves", 0))
            trace = Trace(query=text, method=settings.method)
            hits = walk(ranker, settings, (), trace)
            if options.get("refine"):
                hits = refine_to_leaves(hits, ranker, settings.effective_sensitivity,
                                        settings.weights_for_level(settings.max_depth),
                                        merge_ratio=options.get("merge_ratio"))
            _fetch_span_texts(index.store, hits)  # as index.search does: the context is part of the cost
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
    from ..store import RankRequest

    methods = []
    for s in sensitivities:
        def run(text: str, qv: Any, s=s) -> Retrieval:
            start = time.perf_counter()
            ranker = FusionRanker(index.store, qv, fusion, index.search_config.rrf_k)
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
    from ..store import RankRequest, parse_filters

    methods = []
    for fusion in fusions:
        def run(text: str, qv: Any, fusion=fusion) -> Retrieval:
            start = time.perf_counter()
            settings = index.search_config
            ranker = FusionRanker(index.store, qv, fusion, settings.rrf_k)
            roots = ranker([RankRequest(limit=settings.max_roots, level=0, weights=settings.weights_for_level(0))])[0]
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
    from ..nodes import Trace
    from ..store import RankRequest, parse_filters
    from ..traversal import walk

    methods = []
    for do_refine in refine:
        def run(text: str, qv: Any, do_refine=do_refine) -> Retrieval:
            start = time.perf_counter()
            settings = replace(index.search_config.with_overrides(method="knee"), focus_pool=None)
            ranker = FusionRanker(index.store, qv, "rrf", settings.rrf_k)
            roots = ranker([RankRequest(limit=settings.max_roots, level=0, weights=settings.weights_for_level(0))])[0]
            if roots:
                roots, _ = knee_cut(roots, [h.score for h in roots], sensitivity=settings.effective_sensitivity)
            hits: List[Any] = []
            trace = Trace(query=text, method="knee")
            for root in roots:
                found = walk(ranker, settings, parse_filters({"doc_id": root.node.doc_id}), trace)
                if do_refine:
                    found = refine_to_leaves(found, ranker, settings.effective_sensitivity,
                                             settings.weights_for_level(settings.max_depth))
                hits.extend(found)
            _fetch_span_texts(index.store, hits)
            latency = (time.perf_counter() - start) * 1000.0
            scored = [ScoredNode(node=h.node, score=h.score, rank=i, text="") for i, h in enumerate(hits)]
            found_hits, returned = hits_from_scored(scored, leaf_tokens)
            return Retrieval(found_hits, latency, returned, trace)

        name = "proto_knee_perdoc" + ("_refine" if do_refine else "")
        methods.append(Method(name, "drag_proto", {"per_document": True, "refine": do_refine}, run, adaptive=True))
    return methods
