"""Dump, once per dataset, each question's candidate leaves with magnitude scores, for cut_sim.py.

Why: the cut and the ancestor evidence of issue 14 (items 5-7) are rules over numbers the store
already returns; trying a rule through the eval harness costs a full run, replaying it over a dump
costs seconds. Per question this records, on the real index of the eval harness (same build, same
vectors, same filters):

- the default walk's regions (roots + beam steps of ``SearchConfig()``), and the leaves under them
  ranked by RRF as the focus step ranks them;
- the global flat hybrid top ``--global`` leaves (the flat baseline's own ranking, filtered);
- for the union of both (the pool): each leaf's dense cosine and BM25 score (one ``with_scores``
  request), its ancestors (page node, sections, root) with their dense cosine and BM25 score;
- each node's metric hit (``ContextHit``: its units and tokens) and the question's gold.

Output: one pickle per run under ``--out`` (default ``$DRAG_KNEE_BENCH_CACHE/cut/dump``, the cache folder being
``../cache`` beside the checkout unless set). MMLongBench and QMSum
questions and texts must never enter git: the pickles stay outside the repository.

    python benchmarks/cut_dump.py mmlb20 mmlb20-p120 qmsum xqen covidqa30 hotpotqa
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: benchmarks.datasets
REPO = Path(__file__).resolve().parents[1]
# Dumps and vector caches live outside the checkout: $DRAG_KNEE_BENCH_CACHE, else ../cache beside it.
CACHE = Path(os.environ.get("DRAG_KNEE_BENCH_CACHE") or REPO.parent / "cache")

from benchmarks.datasets import load_dataset  # noqa: E402
from drag_knee_retriever import DragKneeIndex, EncoderRuntime, StoreConfig  # noqa: E402
from drag_knee_retriever.model._ids import span_leaf_ids
from drag_knee_retriever.config import BuildConfig, EmbeddingConfig, SearchConfig
from drag_knee_retriever.embeddings import Encoder
from drag_knee_retriever.eval.baselines import _unit_hit, leaf_token_table
from drag_knee_retriever.eval.encoding import CachingEncoder
from drag_knee_retriever.model._nodes import ScoredNode, Trace
from drag_knee_retriever.store import RankRequest, parse_filters
from drag_knee_retriever.search._traversal import _beam, _rank_roots, level_weights

log = logging.getLogger("cut_dump")

# name: (dataset, load_dataset keyword arguments, BuildConfig keyword arguments)
RUNS: Dict[str, Any] = {
    "mmlb20": ("mmlongbench", {"max_doc_pages": 20}, {"use_outline": False}),
    "mmlb20-p120": ("mmlongbench", {"max_doc_pages": 20}, {"use_outline": False, "passage_words": 120}),
    "mmlb20-p300": ("mmlongbench", {"max_doc_pages": 20}, {"use_outline": False, "passage_words": 300}),
    "qmsum": ("qmsum", {}, {}),
    "qmsum-p120": ("qmsum", {}, {"passage_words": 120}),
    "xqen": ("xquad-en", {"limit_questions": 400}, {}),
    "covidqa30": ("covidqa", {"limit_docs": 30}, {}),
    "hotpotqa": ("hotpotqa", {}, {}),
}


def drive(gen, rank):
    """Run a traversal generator (yields requests, receives hits) to its return value."""
    try:
        requests = next(gen)
        while True:
            requests = gen.send(rank(requests))
    except StopIteration as done:
        return done.value


def dump(name: str, out: Path, cache: Path, global_k: int) -> None:
    dataset, load_kwargs, build_kwargs = RUNS[name]
    ds = load_dataset(dataset, **load_kwargs)
    encoder = CachingEncoder(Encoder(EmbeddingConfig(language=ds.language, runtime=EncoderRuntime(threads=1))), cache)
    index = DragKneeIndex(":memory:", embedding=encoder, build=BuildConfig(**build_kwargs),
                          store=StoreConfig(collection=f"cut_{name}"))
    t0 = time.perf_counter()
    index.add_documents(ds.documents)
    encoder.save()
    log.info("%s: %d documents indexed in %.0f s", name, len(ds.documents), time.perf_counter() - t0)
    table = leaf_token_table(ds)
    config = SearchConfig()
    store = index.store
    node_cache: Dict[str, Any] = {}

    def nodes(ids):
        missing = [i for i in ids if i not in node_cache]
        if missing:
            for node in store.retrieve(missing):
                node_cache[node.id] = node
        return [node_cache[i] for i in ids if i in node_cache]

    def hit_of(node):
        return _unit_hit(ScoredNode(node=node, score=0.0, rank=0, text=node.text), table[node.doc_id],
                         getattr(table, "texts", None))

    rows: List[Dict[str, Any]] = []
    for qi, q in enumerate(ds.questions):
        qv = encoder.encode_query(q.text)
        spec = parse_filters(q.metadata.get("filters"))

        def rank(requests, light=True):
            return store.rank(requests, qv, rrf_k=config.fusion.rrf_k, explain=False, light=light)

        trace = Trace(query=q.text, method=config.method)
        roots, _ = drive(_rank_roots(config, spec, trace), rank)
        regions = drive(_beam(config, spec, trace, roots), rank) if roots else []
        region_leaves = tuple(dict.fromkeys(i for h in regions for i in span_leaf_ids(h.node)))
        weights = level_weights(config.fusion.weights, config.max_depth)
        requests = [RankRequest(limit=global_k, weights=weights, leaves_only=True, filters=spec, with_scores=True)]
        if region_leaves:
            requests.append(RankRequest(limit=len(region_leaves), weights=weights, candidate_ids=region_leaves,
                                        filters=spec, with_scores=True))
        answers = rank(requests)
        flat = answers[0]
        focus = answers[1] if region_leaves else []
        pool_ids = tuple(dict.fromkeys([h.node.id for h in focus] + [h.node.id for h in flat]))
        (pool,) = rank([RankRequest(limit=len(pool_ids), weights=weights, candidate_ids=pool_ids, filters=spec,
                                    with_scores=True)]) if pool_ids else ([],)
        # Ancestors of every pool leaf, up to its root.
        leaf_nodes = {n.id: n for n in nodes(list(pool_ids))}
        chains: Dict[str, List[str]] = {}
        frontier = {i: leaf_nodes[i].parent_id for i in leaf_nodes}
        for i in leaf_nodes:
            chains[i] = []
        while True:
            want = sorted({p for p in frontier.values() if p})
            if not want:
                break
            parents = {n.id: n for n in nodes(want)}
            nxt = {}
            for i, p in frontier.items():
                if p and p in parents:
                    chains[i].append(p)
                    nxt[i] = parents[p].parent_id
            frontier = nxt
        anc_ids = tuple(sorted({a for c in chains.values() for a in c}))
        anc_hits = rank([RankRequest(limit=len(anc_ids), candidate_ids=anc_ids, filters=spec, with_scores=True)])[0] \
            if anc_ids else []
        all_ids = set(pool_ids) | set(anc_ids) | {h.node.id for h in regions}
        metric_hits = {n.id: hit_of(n) for n in nodes(sorted(all_ids))}
        node_info = {n.id: (n.doc_id, n.level, n.is_leaf, n.parent_id, n.span.first_leaf, n.span.last_leaf,
                            n.span.first_page, n.span.last_page) for n in nodes(sorted(all_ids))}
        rows.append({
            "id": q.id, "gold": sorted(q.gold), "answer_spans": dict(q.answer_spans),
            "regions": [(h.node.id, h.score) for h in regions],
            "focus": [(h.node.id, h.score) for h in focus],
            "flat": [(h.node.id, h.score, h.dense_score, h.sparse_score) for h in flat],
            "pool": [(h.node.id, h.score, h.dense_score, h.sparse_score) for h in pool],
            "ancestors": {h.node.id: (h.dense_score, h.sparse_score) for h in anc_hits},
            "chains": chains, "hits": metric_hits, "nodes": node_info,
        })
        if qi % 50 == 0:
            log.info("%s: question %d/%d", name, qi, len(ds.questions))
    meta = {"run": name, "dataset": dataset, "load": load_kwargs, "build": build_kwargs, "global_k": global_k,
            "questions": len(rows), "config": repr(config)}
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{name}.pkl", "wb") as fh:
        pickle.dump({"meta": meta, "rows": rows}, fh)
    index.close()
    log.info("%s: %d questions dumped", name, len(rows))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", choices=sorted(RUNS))
    parser.add_argument("--out", default=str(CACHE / "cut" / "dump"))
    parser.add_argument("--embedding-cache", default=str(CACHE / "cut" / "emb"))
    parser.add_argument("--global", dest="global_k", type=int, default=50)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    os.environ.setdefault("DRAG_KNEE_DATASETS", str(REPO.parent / "shared" / "datasets"))
    for name in args.runs:
        dump(name, Path(args.out), Path(args.embedding_cache), args.global_k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
