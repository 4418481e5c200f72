"""Replay cut and ranking rules over cut_dump.py's per-question candidates, scored as the eval scores.

Every rule maps one question's dump (pool leaves with dense cosine, BM25 and RRF scores, their
ancestors' scores, the walk's regions) to an ordered list of node ids; the ids become the eval's own
metric hits (``ContextHit``) and ``question_metrics``. Figures per rule, against flat hybrid top-k
(k = 1, 2, 3, 5, 10, 20, 50) on the same index and questions: recall, mean and p90 tokens, the gain
at equal mean tokens with its 95% paired bootstrap, all-gold on multi-gold questions against flat
at the same tokens, Spearman of the number of results with the gold count (multi-gold questions),
and the mean distance of the cut from the oracle cut of the rule's own ranking (the fewest results
that reach the best recall of its first 20).

    python benchmarks/cut_sim.py mmlb20 qmsum ... [--rules PATTERN] [--dump DIR]

The ``default`` rule replays today's focus step (RRF top 10 of the regions' leaves, knee, merge at
0.5) to check that the dump reproduces ``drag_knee`` of the eval harness.
"""

from __future__ import annotations

import argparse
import fnmatch
import math
import os
import pickle
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from drag_knee_retriever.eval.budget_metrics import _subset_gain, bootstrap_gain, cut_size_correlation
from drag_knee_retriever.eval.metrics import interpolate_curve, question_metrics
from drag_knee_retriever.common._knee import knee_index

REPO = Path(__file__).resolve().parents[1]
# Dumps live outside the checkout: $DRAG_KNEE_BENCH_CACHE, else ../cache beside it.
CACHE = Path(os.environ.get("DRAG_KNEE_BENCH_CACHE") or REPO.parent / "cache")

FLAT_KS = (1, 2, 3, 5, 10, 20, 50)
RRF_K = 2


# -- per-question helpers ------------------------------------------------------------------------

def _z(values: np.ndarray) -> np.ndarray:
    sd = values.std()
    return (values - values.mean()) / sd if sd > 1e-12 else np.zeros_like(values)


def _minmax(values: np.ndarray) -> np.ndarray:
    span = values.max() - values.min() if len(values) else 0.0
    return (values - values.min()) / span if span > 1e-12 else np.zeros_like(values)


class Q:
    """One question's dump with numpy views."""

    def __init__(self, row: Dict[str, Any]) -> None:
        self.row = row
        pool = row["pool"]
        self.ids = [p[0] for p in pool]
        self.rrf = np.array([p[1] for p in pool], dtype=float)
        self.dense = np.array([p[2] if p[2] is not None else 0.0 for p in pool], dtype=float)
        self.bm25 = np.array([p[3] if p[3] is not None else 0.0 for p in pool], dtype=float)
        region_leaves = {i for i, _ in row["focus"]}
        self.in_region = np.array([i in region_leaves for i in self.ids])
        self.chains = row["chains"]
        self.anc = row["ancestors"]
        self.nodes = row["nodes"]

    def ancestor_scores(self, depth: int) -> Tuple[np.ndarray, np.ndarray]:
        """Dense cosine and BM25 of each pool leaf's ancestor ``depth`` up (1 = parent); the root
        where the chain is shorter; NaN where the leaf has no ancestor at all."""
        d = np.full(len(self.ids), np.nan)
        b = np.full(len(self.ids), np.nan)
        for i, nid in enumerate(self.ids):
            chain = self.chains.get(nid) or []
            if not chain:
                continue
            a = chain[min(depth, len(chain)) - 1] if depth > 0 else chain[-1]
            ds, bs = self.anc.get(a, (None, None))
            d[i] = ds if ds is not None else np.nan
            b[i] = bs if bs is not None else 0.0
        return d, b


def fused_magnitude(q: Q, wd: float = 1.0, wb: float = 1.0, norm: str = "z") -> np.ndarray:
    f = _z if norm == "z" else _minmax
    return wd * f(q.dense) + wb * f(q.bm25)


def with_ancestors(q: Q, base: np.ndarray, weight: float, which: str = "parent", norm: str = "z") -> np.ndarray:
    """base + weight x the ancestor's fused magnitude (normalised over the pool's ancestors)."""
    if weight == 0:
        return base
    f = _z if norm == "z" else _minmax
    total = np.zeros(len(base))
    depths = {"parent": [1], "root": [0], "both": [1, 0]}[which]
    for depth in depths:
        d, b = q.ancestor_scores(depth)
        ok = ~np.isnan(d)
        if ok.sum() < 2:
            continue
        s = np.zeros(len(base))
        s[ok] = f(d[ok]) + f(b[ok])
        total += s
    return base + weight * total / len(depths)


# -- cuts over a score vector ---------------------------------------------------------------------

def order_of(scores: np.ndarray, mask: np.ndarray = None) -> np.ndarray:
    idx = np.arange(len(scores)) if mask is None else np.nonzero(mask)[0]
    return idx[np.argsort(-scores[idx], kind="mergesort")]


def cut_topk(scores, order, k):
    return order[:k]


def cut_relative(scores, order, tau, pool=20):
    """Keep the leaves within tau (in pool z units) of the best: s >= s_top - tau."""
    top = order[:pool]
    s = scores[top]
    return top[s >= s[0] - tau]


def cut_knee(scores, order, pool=10, sens=1.0):
    top = order[:pool]
    if len(top) == 0:
        return top
    return top[: knee_index([float(x) for x in scores[top]], sens)]


def cut_mass(scores, order, mass, temp=1.0, pool=20):
    """Softmax over the pool's best scores (temperature in score units); keep until ``mass``."""
    top = order[:pool]
    if len(top) == 0:
        return top
    s = scores[top] / temp
    p = np.exp(s - s.max())
    p /= p.sum()
    keep = int(np.searchsorted(np.cumsum(p), mass) + 1)
    return top[: max(1, min(keep, len(top)))]


def cut_gap(scores, order, pool=10, minimum=1):
    top = order[:pool]
    if len(top) <= minimum:
        return top
    s = scores[top]
    gaps = s[:-1] - s[1:]
    at = int(np.argmax(gaps[minimum - 1:]) + minimum)
    return top[:at]


# -- merge-up and the default replay ---------------------------------------------------------------

def merge_up(q: Q, ids: List[str], ratio: float, levels: int = 1) -> List[str]:
    """Selected leaves come back as their parent (then grandparent, ``levels`` times) when they
    cover more than ``ratio`` of its leaves; the parent takes the place of its best leaf."""
    out = list(ids)
    for _ in range(levels):
        chosen = set(out)
        covered: Dict[str, int] = {}
        for nid in out:
            info = q.nodes.get(nid)
            if info is None or not info[3]:
                continue
            covered[info[3]] = covered.get(info[3], 0) + (info[5] - info[4] + 1)
        merged = {}
        for parent, count in covered.items():
            pinfo = q.nodes.get(parent)
            if pinfo is None:
                continue
            size = pinfo[5] - pinfo[4] + 1
            if size > 1 and count / size > ratio:
                merged[parent] = True
        if not merged:
            break
        new: List[str] = []
        placed = set()
        for nid in out:
            parent = q.nodes.get(nid, (None,) * 4)[3]
            if parent in merged:
                if parent not in placed:
                    placed.add(parent)
                    new.append(parent)
            elif nid not in placed:
                new.append(nid)
        out = new
    return out


def replay_default(q: Q, pool: int = 10, merge: float = 0.5) -> List[str]:
    focus = q.row["focus"][:pool]
    if not focus:
        return [r for r, _ in q.row["regions"]]
    keep = knee_index([s for _, s in focus], 1.0)
    survivors = [i for i, _ in focus[:keep]]
    merged_into = {}
    for region, _ in q.row["regions"]:
        info = q.nodes[region]
        leaves = [i for i in q.row["hits"] if False]  # (unused)
        size = info[5] - info[4] + 1
        if info[2] or size <= 1:
            continue
        inside = [s for s in survivors if q.nodes[s][0] == info[0] and info[4] <= q.nodes[s][4] <= info[5]]
        if len(inside) / size > merge:
            merged_into.update((s, region) for s in inside)
    out, placed = [], set()
    for s in survivors:
        r = merged_into.get(s)
        if r is None:
            out.append(s)
        elif r not in placed:
            placed.add(r)
            out.append(r)
    return out


# -- the rules -----------------------------------------------------------------------------------

Rule = Callable[[Q], List[str]]


def _ids(q: Q, picked: Sequence[int]) -> List[str]:
    return [q.ids[i] for i in picked]


def rules() -> Dict[str, Rule]:
    R: Dict[str, Rule] = {"default": replay_default}
    R["default_pool20"] = lambda q: replay_default(q, pool=20)
    R["default_nomerge"] = lambda q: replay_default(q, merge=2.0)
    # Ranking by magnitude (z-scored dense + BM25 over the pool), fixed k (ranking quality only).
    for k in (1, 2, 3, 5, 10):
        R[f"mag_k{k}"] = lambda q, k=k: _ids(q, order_of(fused_magnitude(q))[:k])
    # Cuts over magnitudes on the whole pool (walk + global).
    for tau in (0.25, 0.5, 0.75, 1.0, 1.5):
        R[f"mag_rel{tau}"] = lambda q, t=tau: _ids(q, cut_relative(fused_magnitude(q), order_of(fused_magnitude(q)), t))
    for sens in (1.0, 0.85, 0.5):
        for pool in (10, 20):
            R[f"mag_knee_s{sens}_p{pool}"] = lambda q, s=sens, p=pool: _ids(
                q, cut_knee(fused_magnitude(q), order_of(fused_magnitude(q)), p, s))
    for mass in (0.5, 0.7, 0.8, 0.9):
        for temp in (0.5, 1.0):
            R[f"mag_mass{mass}_t{temp}"] = lambda q, m=mass, t=temp: _ids(
                q, cut_mass(fused_magnitude(q), order_of(fused_magnitude(q)), m, t))
    R["mag_gap_p10"] = lambda q: _ids(q, cut_gap(fused_magnitude(q), order_of(fused_magnitude(q)), 10))
    # Knee on RRF over the pool (walk + global), for comparison with the magnitude cuts.
    R["rrf_knee_p10"] = lambda q: _ids(q, cut_knee(q.rrf, order_of(q.rrf), 10))
    # Walk-only pool (the regions' leaves) with magnitude cuts.
    for tau in (0.5, 1.0):
        R[f"walk_mag_rel{tau}"] = lambda q, t=tau: _ids(q, cut_relative(
            fused_magnitude(q), order_of(fused_magnitude(q), q.in_region), t)) if q.in_region.any() else replay_default(q)
    # Ancestor evidence.
    for which in ("parent", "root", "both"):
        for w in (0.25, 0.5, 1.0):
            def score(q, w=w, which=which):
                return with_ancestors(q, fused_magnitude(q), w, which)
            for k in (1, 3, 5):
                R[f"anc_{which}{w}_k{k}"] = lambda q, s=score, k=k: _ids(q, order_of(s(q))[:k])
            for tau in (0.5, 1.0):
                R[f"anc_{which}{w}_rel{tau}"] = lambda q, s=score, t=tau: _ids(q, cut_relative(s(q), order_of(s(q)), t))
            for mass in (0.7, 0.8):
                R[f"anc_{which}{w}_mass{mass}"] = lambda q, s=score, m=mass: _ids(q, cut_mass(s(q), order_of(s(q)), m, 1.0))
    # Ancestor evidence (parent) with the knee on magnitudes, and floors under the relative cut.
    for w in (0.25, 0.5, 1.0):
        def pscore(q, w=w):
            return with_ancestors(q, fused_magnitude(q), w, "parent")
        for sens in (1.0, 0.85, 0.5):
            R[f"ancknee_parent{w}_s{sens}"] = lambda q, s=pscore, se=sens: _ids(q, cut_knee(s(q), order_of(s(q)), 10, se))
        R[f"ancrel_parent{w}_1.5"] = lambda q, s=pscore: _ids(q, cut_relative(s(q), order_of(s(q)), 1.5))
        R[f"ancrel_parent{w}_2.0"] = lambda q, s=pscore: _ids(q, cut_relative(s(q), order_of(s(q)), 2.0))
    for tau in (1.25, 2.0, 2.5):
        R[f"mag_rel{tau}"] = lambda q, t=tau: _ids(q, cut_relative(fused_magnitude(q), order_of(fused_magnitude(q)), t))
    for wb in (0.5, 2.0):
        R[f"magb{wb}_rel1.5"] = lambda q, wb=wb: _ids(q, cut_relative(fused_magnitude(q, 1.0, wb),
                                                                        order_of(fused_magnitude(q, 1.0, wb)), 1.5))
    R["magmm_rel0.5"] = lambda q: _ids(q, cut_relative(fused_magnitude(q, norm="mm"), order_of(fused_magnitude(q, norm="mm")), 0.5))
    R["magmm_knee_p10"] = lambda q: _ids(q, cut_knee(fused_magnitude(q, norm="mm"), order_of(fused_magnitude(q, norm="mm")), 10))
    # Sibling evidence (no ancestor scores needed): the mean magnitude of the pool's leaves under
    # the same parent stands in for the parent's own score.
    for w in (0.25, 0.5, 1.0):
        def sscore(q, w=w):
            base = fused_magnitude(q)
            parents = [(q.chains.get(i) or [None])[0] for i in q.ids]
            groups: Dict[Any, List[int]] = {}
            for i, p in enumerate(parents):
                groups.setdefault(p, []).append(i)
            mean = np.array([base[groups[p]].mean() if p is not None else base[i] for i, p in enumerate(parents)])
            return base + w * mean
        for sens in (1.0, 0.85):
            R[f"sibknee{w}_s{sens}"] = lambda q, s=sscore, se=sens: _ids(q, cut_knee(s(q), order_of(s(q)), 10, se))
    # Merge-up on top of a few cuts.
    base_rules = [n for n in list(R) if n.startswith(("mag_rel", "mag_knee", "ancknee_", "ancrel_", "sibknee"))
                  and not n.split("_")[-1].startswith("k")]
    for n in base_rules:
        for ratio in (0.5,):
            R[f"{n}+merge{ratio}"] = lambda q, r=R[n], ratio=ratio: merge_up(q, r(q), ratio)
    return R


# -- scoring --------------------------------------------------------------------------------------

def metrics_of(q: Q, ids: Sequence[str]):
    hits = [q.row["hits"][i] for i in ids if i in q.row["hits"]]
    return question_metrics(hits, q.row["gold"], answer_spans=q.row["answer_spans"])


def flat_rows(qs: Sequence[Q]) -> Dict[str, List[Any]]:
    out = {}
    for k in FLAT_KS:
        out[f"flat_hybrid_k{k}"] = [metrics_of(q, [f[0] for f in q.row["flat"][:k]]) for q in qs]
    return out


def oracle_k(q: Q, ids: Sequence[str], limit: int = 20) -> int:
    """The fewest of ``ids`` (a rule's own ranking) that reach the best recall of its first ``limit``."""
    best, at = -1.0, 1
    for k in range(1, min(limit, len(ids)) + 1):
        r = metrics_of(q, ids[:k]).recall
        if r > best + 1e-12:
            best, at = r, k
    return at


def evaluate(qs: Sequence[Q], flat: Dict[str, List[Any]], name: str, rule: Rule, boot: bool,
             oracle: bool = False) -> Dict[str, Any]:
    picked = [rule(q) for q in qs]
    rows = dict(flat)
    rows[name] = [metrics_of(q, ids) for q, ids in zip(qs, picked)]
    info = {n: {"curve": "flat_hybrid"} for n in flat}
    info[name] = {"curve": None}
    recall = np.mean([r.recall for r in rows[name]])
    tokens = np.array([r.tokens for r in rows[name]], dtype=float)
    points = [(np.mean([r.tokens for r in flat[n]]), np.mean([r.recall for r in flat[n]])) for n in flat]
    at, beyond = interpolate_curve(points, tokens.mean())
    sizes = np.array([len(q.row["gold"]) for q in qs])
    multi = _subset_gain(rows, list(flat), name, sizes > 1, "all_gold")
    corr = cut_size_correlation(rows, list(sizes), name) or {}
    out = {"rule": name, "recall": recall, "tokens": tokens.mean(), "p90": float(np.percentile(tokens, 90)),
           "gain": recall - at, "beyond": beyond, "multi_all_gold": multi.get("rate"),
           "multi_flat": multi.get("flat_at_tokens"), "spearman_multi": corr.get("multi"),
           "results": float(np.mean([r.results for r in rows[name]]))}
    if boot:
        out["ci"] = bootstrap_gain(rows, info, name, resamples=1000)
    if oracle:
        # The oracle cut of the flat ranking: the fewest flat results that reach flat top-20's recall.
        best = np.array([oracle_k(q, [f[0] for f in q.row["flat"]]) for q in qs], dtype=float)
        got = np.array([r.results for r in rows[name]], dtype=float)
        out["oracle_k"] = float(best.mean())
        out["oracle_abs_diff"] = float(np.abs(got - best).mean())
        out["oracle_spearman"] = float(np.corrcoef(np.argsort(np.argsort(got)), np.argsort(np.argsort(best)))[0, 1]) \
            if got.std() > 0 and best.std() > 0 else None
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--dump", default=str(CACHE / "cut" / "dump"),
                        help="cut_dump.py's --out (default: %(default)s)")
    parser.add_argument("--rules", action="append", help="glob patterns of rule names (default: all)")
    parser.add_argument("--boot", action="store_true", help="bootstrap intervals (slower)")
    parser.add_argument("--oracle", action="store_true", help="distance of the cut from the oracle cut")
    args = parser.parse_args(argv)
    R = rules()
    names = [n for n in R if not args.rules or any(fnmatch.fnmatchcase(n, p) for p in args.rules)]
    for run in args.runs:
        with open(Path(args.dump) / f"{run}.pkl", "rb") as fh:
            data = pickle.load(fh)
        qs = [Q(row) for row in data["rows"]]
        flat = flat_rows(qs)
        print(f"## {run}: {len(qs)} questions; flat k=5 recall "
              f"{np.mean([r.recall for r in flat['flat_hybrid_k5']]):.3f} at "
              f"{np.mean([r.tokens for r in flat['flat_hybrid_k5']]):.0f} tokens")
        print("| rule | recall | tokens | p90 | results | gain | 95% | all-gold multi vs flat | spearman multi |")
        print("|---|---:|---:|---:|---:|---:|---|---|---:|")
        for n in names:
            f = evaluate(qs, flat, n, R[n], args.boot, args.oracle)
            ci = f.get("ci")
            ci_s = f"{ci[0]:+.3f}..{ci[1]:+.3f}" if ci else "–"
            mg = (f"{f['multi_all_gold']:.3f} vs {f['multi_flat']:.3f}" if f["multi_all_gold"] is not None else "–")
            sp = f"{f['spearman_multi']:.2f}" if f["spearman_multi"] is not None else "–"
            print(f"| {n} | {f['recall']:.3f} | {f['tokens']:.0f} | {f['p90']:.0f} | {f['results']:.1f} | "
                  f"{f['gain']:+.3f}{'*' if f['beyond'] else ''} | {ci_s} | {mg} | {sp} |"
                  + (f" oracle k {f['oracle_k']:.1f}, |results - oracle| {f['oracle_abs_diff']:.1f}, "
                     f"spearman {f['oracle_spearman'] if f['oracle_spearman'] is None else round(f['oracle_spearman'], 2)} |"
                     if args.oracle else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
