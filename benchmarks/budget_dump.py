"""Dump, once per dataset of the frozen-default table, what the focus step and a word budget see.

Why: a cut that widens when the curve has no clear knee, and the fill of a word budget, are rules
over numbers the store already returns (issue 24, item 3); a rule tried through the eval harness
costs a full run, replayed over a dump (benchmarks/budget_sim.py) it costs seconds. Per question,
on the eval harness's own index (``BuildConfig()``, the same vectors, the same per-question
filters), this records:

- the default walk's regions (``SearchConfig()``'s roots and beam steps) and the leaves under them;
- the focus step's own requests: the regions' leaves and the global top 50 leaves, each with its
  dense cosine and BM25 score (what ``magnitude_ranking`` scores), and the same global ranking
  ``--deep`` leaves long (a budget reads past the default pool);
- the flat baseline's rankings as ``flat_search`` asks for them: top 50 (the eval's flat curve) and
  top ``--deep`` (flat at a word budget);
- ``index.search()``'s own result ids (the replay of the default must reproduce them);
- for every node named (leaves, their ancestors up to the root, the regions): its place in the tree,
  its metric hit (``ContextHit``: units and whitespace tokens, as the eval counts) and the gold.

Output: one pickle per run under ``--out`` (default ``$DRAG_KNEE_BENCH_CACHE/budget/dump``, the cache folder
being ``../cache`` beside the checkout unless set). MMLongBench, QMSum
and FinanceBench questions and texts must never enter git: the pickles stay outside the repository.

    python benchmarks/budget_dump.py hotpotqa xqen xqru covidqa30 mmlb-all mmlb20 mmlb-shared qmsum
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
REPO = Path(__file__).resolve().parents[1]
# Dumps and vector caches live outside the checkout: $DRAG_KNEE_BENCH_CACHE, else ../cache beside it.
CACHE = Path(os.environ.get("DRAG_KNEE_BENCH_CACHE") or REPO.parent / "cache")

from cut_dump import drive  # noqa: E402

from drag_knee_retriever import DragKneeIndex  # noqa: E402
from drag_knee_retriever.model._ids import span_leaf_ids  # noqa: E402
from drag_knee_retriever.config import BuildConfig, EmbeddingConfig, SearchConfig  # noqa: E402
from drag_knee_retriever.embeddings import Encoder  # noqa: E402
from drag_knee_retriever.eval.baselines import _unit_hit, leaf_token_table  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.datasets import load_dataset  # noqa: E402
from drag_knee_retriever.eval.encoding import CachingEncoder  # noqa: E402
from drag_knee_retriever.model._nodes import ScoredNode, Trace  # noqa: E402
from drag_knee_retriever.store import RankRequest, parse_filters  # noqa: E402
from drag_knee_retriever.search._traversal import _beam, _rank_roots, level_weights  # noqa: E402

log = logging.getLogger("budget_dump")

# name: (dataset, load_dataset keyword arguments): the runs of benchmarks/run_default.sh.
RUNS: Dict[str, Any] = {
    "mmlb-all": ("mmlongbench", {}),
    "mmlb20": ("mmlongbench", {"max_doc_pages": 20}),
    "mmlb-shared": ("mmlongbench", {"shared_store": True}),
    "qmsum": ("qmsum", {}),
    "covidqa30": ("covidqa", {"limit_docs": 30}),
    "hotpotqa": ("hotpotqa", {}),
    "xqen": ("xquad-en", {"limit_questions": 400}),
    "xqru": ("xquad-ru", {"limit_questions": 400}),
}


def _entries(hits) -> List[tuple]:
    return [(h.node.id, h.score, h.dense_score, h.sparse_score) for h in hits]


def dump(name: str, out: Path, cache: Path, deep: int) -> None:
    dataset, load_kwargs = RUNS[name]
    ds = load_dataset(dataset, **load_kwargs)
    encoder = CachingEncoder(Encoder(EmbeddingConfig(language=ds.language)), cache)
    index = DragKneeIndex(":memory:", encoder=encoder, language=ds.language, build=BuildConfig(),
                          collection=f"budget_{name.replace('-', '_')}")
    t0 = time.perf_counter()
    index.add_documents(ds.documents)
    encoder.save()
    log.info("%s: %d documents indexed in %.0f s", name, len(ds.documents), time.perf_counter() - t0)
    table = leaf_token_table(ds)
    config = SearchConfig()
    store = index.store
    node_cache: Dict[str, Any] = {}

    def nodes(ids):
        missing = [i for i in dict.fromkeys(ids) if i not in node_cache]
        if missing:
            for node in store.retrieve(missing):
                node_cache[node.id] = node
        return [node_cache[i] for i in dict.fromkeys(ids) if i in node_cache]

    def hit_of(node):
        return _unit_hit(ScoredNode(node=node, score=0.0, rank=0, text=node.text), table[node.doc_id],
                         getattr(table, "texts", None))

    rows: List[Dict[str, Any]] = []
    weights = level_weights(config.fusion.weights, config.max_depth)
    for qi, q in enumerate(ds.questions):
        qv = encoder.encode_query(q.text)
        filters = q.metadata.get("filters")
        spec = parse_filters(filters)

        def rank(requests, light=True):
            return store.rank(requests, qv, rrf_k=config.fusion.rrf_k, explain=False, light=light)

        trace = Trace(query=q.text, method=config.method)
        roots, _ = drive(_rank_roots(config, spec, trace), rank)
        regions = drive(_beam(config, spec, trace, roots), rank) if roots else []
        region_leaves = tuple(dict.fromkeys(i for h in regions for i in span_leaf_ids(h.node)))
        requests = [
            RankRequest(limit=config.focus.global_leaves, weights=weights, leaves_only=True, filters=spec, with_scores=True),
            RankRequest(limit=deep, weights=weights, leaves_only=True, filters=spec, with_scores=True),
        ]
        if region_leaves:
            requests.append(RankRequest(limit=len(region_leaves), weights=weights, candidate_ids=region_leaves,
                                        filters=spec, with_scores=True))
        answers = rank(requests)
        global50, global_deep = answers[0], answers[1]
        region_hits = answers[2] if region_leaves else []
        # flat_search's own requests (k=50 is the eval's flat curve; deep: flat at a word budget).
        flat50, flat_deep = store.rank([RankRequest(limit=50, leaves_only=True, filters=spec),
                                        RankRequest(limit=deep, leaves_only=True, filters=spec)],
                                       qv, rrf_k=config.fusion.rrf_k, explain=False)
        result = index.search(q.text, query_vectors=qv, filters=filters)
        leaf_ids = {h.node.id for hits in (global_deep, region_hits, flat_deep, global50, flat50) for h in hits}
        # Every leaf's ancestors up to its root.
        chains: Dict[str, List[str]] = {i: [] for i in leaf_ids}
        frontier = {n.id: n.parent_id for n in nodes(sorted(leaf_ids))}
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
        all_ids = leaf_ids | {a for c in chains.values() for a in c} | {h.node.id for h in regions} | \
            {n.node.id for n in result.nodes}
        fetched = nodes(sorted(all_ids))
        rows.append({
            "id": q.id, "gold": sorted(q.gold), "answer_spans": dict(q.answer_spans),
            "regions": [(h.node.id, h.score) for h in regions],
            "region_hits": _entries(region_hits), "global50": _entries(global50),
            "global_deep": _entries(global_deep),
            "flat50": [h.node.id for h in flat50], "flat_deep": [h.node.id for h in flat_deep],
            "default": [(n.node.id, n.score) for n in result.nodes],
            "chains": chains,
            "hits": {n.id: hit_of(n) for n in fetched},
            "nodes": {n.id: (n.doc_id, n.level, n.is_leaf, n.parent_id, n.span.first_leaf, n.span.last_leaf,
                             n.span.first_page, n.span.last_page, n.span.first_part) for n in fetched},
        })
        if qi % 50 == 0:
            log.info("%s: question %d/%d", name, qi, len(ds.questions))
    meta = {"run": name, "dataset": dataset, "load": load_kwargs, "deep": deep, "questions": len(rows),
            "config": repr(config), "build": repr(BuildConfig())}
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{name}.pkl", "wb") as fh:
        pickle.dump({"meta": meta, "rows": rows}, fh)
    index.close()
    log.info("%s: %d questions dumped", name, len(rows))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", choices=sorted(RUNS))
    parser.add_argument("--out", default=str(CACHE / "budget" / "dump"))
    parser.add_argument("--embedding-cache", default=str(CACHE / "emb"))
    parser.add_argument("--deep", type=int, default=200)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    os.environ.setdefault("DRAG_KNEE_DATASETS", str(REPO.parent / "shared" / "datasets"))
    for name in args.runs:
        dump(name, Path(args.out), Path(args.embedding_cache), args.deep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
