"""Replay focus cuts and word-budget fills over budget_dump.py's per-question pools, scored as the eval scores.

Each rule maps one question's dump to an ordered list of node ids (leaves, pages, regions); the ids
become the eval's own metric hits (``ContextHit``) and ``question_metrics``. The pool is scored by
the library's own ``magnitude_ranking`` (the default focus), so the ``default`` rule reproduces
``index.search()`` exactly (checked per question: the run fails loudly otherwise).

Figures per rule against flat hybrid top-k (k = 1, 2, 3, 5, 10, 20, 50, the eval's curve) on the
same index and questions: recall, tokens (mean, p90), results, the gain at equal mean tokens with its
95% paired bootstrap, the gain over the default replay (paired bootstrap of the per-question
difference at equal tokens is not defined, so: both gains side by side), all-gold on multi-gold
questions, and Spearman of results against the gold count.

    python benchmarks/budget_sim.py hotpotqa xqen ... [--rules PATTERN] [--boot]
    python benchmarks/budget_sim.py RUN ... --budgets 500 1000 2000     # fills at word budgets vs flat
"""

from __future__ import annotations

import argparse
import fnmatch
import math
import os
import pickle
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from drag_knee_retriever.search._budget import Group, fill
from drag_knee_retriever.build._builder import leaf_id
from drag_knee_retriever.eval.budget_metrics import _subset_gain, bootstrap_gain, cut_size_correlation
from drag_knee_retriever.eval.metrics import interpolate_curve, question_metrics
from drag_knee_retriever.common._knee import knee_distances, knee_index
from drag_knee_retriever.search._magnitude import magnitude_ranking
from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.store import RankedHit
from drag_knee_retriever.search._page_ranking import budget_order
from drag_knee_retriever.search._traversal import FocusPool

REPO = Path(__file__).resolve().parents[1]
# Dumps live outside the checkout: $DRAG_KNEE_BENCH_CACHE, else ../cache beside it.
CACHE = Path(os.environ.get("DRAG_KNEE_BENCH_CACHE") or REPO.parent / "cache")

CURVE_KS = (1, 2, 3, 5, 10, 20, 50)
FOCUS_POOL = 10
SIBLING_WEIGHT = 0.25
MERGE_RATIO = 0.5


class Q:
    """One question's dump, with the pool scored as the default focus scores it."""

    def __init__(self, row: Dict[str, Any]) -> None:
        self.row = row
        self.nodes = row["nodes"]
        self.hits = row["hits"]
        self._light: Dict[str, TreeNode] = {}
        self.regions = [rid for rid, _ in row["regions"]]
        self.region_leaves = {rid: self.leaf_ids(rid) for rid in self.regions}
        self.ranked = self.rank(row["region_hits"], row["global50"])
        self.scores = np.array([h.score for h in self.ranked])

    def node(self, nid: str) -> TreeNode:
        if nid not in self._light:
            doc, level, is_leaf, parent, first, last, fp, lp, part = self.nodes[nid]
            self._light[nid] = TreeNode(id=nid, doc_id=doc, level=level, is_leaf=is_leaf,
                                        span=Span(first, last, fp, lp, part), text="", parent_id=parent)
        return self._light[nid]

    def leaf_ids(self, nid: str) -> Tuple[str, ...]:
        doc, _, is_leaf, _, first, last = self.nodes[nid][:6]
        return (nid,) if is_leaf else tuple(leaf_id(doc, i) for i in range(first, last + 1))

    def rank(self, *lists: Sequence[tuple], sibling_weight: float = SIBLING_WEIGHT) -> List[RankedHit]:
        hits = [RankedHit(self.node(i), s, None, None, d, b) for entries in lists for i, s, d, b in entries]
        return magnitude_ranking(hits, sibling_weight)

    def words(self, nid: str) -> int:
        return self.hits[nid].tokens

    def cut(self) -> int:
        """How many of the focus ranking's leaves the default cut keeps (the plain knee of the top 10)."""
        top = [h.score for h in self.ranked[:FOCUS_POOL]]
        return knee_index(top, 1.0) if top else 0


# -- the focus step's ending: cut the top of the ranking, merge into the walk's regions ----------------

def merge_regions(q: Q, survivors: Sequence[str], ratio: Optional[float] = MERGE_RATIO) -> List[str]:
    """The core's merge (traversal._focus): a region more than ``ratio`` of whose leaves survive
    comes back whole, in the place of its best surviving leaf."""
    alive = set(survivors)
    merged_into: Dict[str, str] = {}
    if ratio is not None:
        for region in q.regions:
            leaves = q.region_leaves[region]
            if len(leaves) > 1 and sum(i in alive for i in leaves) / len(leaves) > ratio:
                merged_into.update((i, region) for i in leaves)
    out, placed = [], set()
    for nid in survivors:
        region = merged_into.get(nid)
        if region is None:
            out.append(nid)
        elif region not in placed:
            placed.add(region)
            out.append(region)
    return out


def default_rule(q: Q) -> List[str]:
    top = q.ranked[:FOCUS_POOL]
    if not top:
        return list(q.regions)
    keep = knee_index([h.score for h in top], 1.0)
    return merge_regions(q, [h.node.id for h in top[:keep]])


# -- scoring --------------------------------------------------------------------------------------

def metrics_of(q: Q, ids: Sequence[str]):
    return question_metrics([q.hits[i] for i in ids], q.row["gold"], answer_spans=q.row["answer_spans"])


def flat_rows(qs: Sequence[Q]) -> Dict[str, List[Any]]:
    return {f"flat_hybrid_k{k}": [metrics_of(q, q.row["flat50"][:k]) for q in qs] for k in CURVE_KS}


def check_default(qs: Sequence[Q]) -> int:
    """Questions whose replayed default differs from index.search()'s result (must be 0)."""
    return sum(default_rule(q) != [i for i, _ in q.row["default"]] for q in qs)


def evaluate(qs: Sequence[Q], flat: Dict[str, List[Any]], name: str, picked: Sequence[Sequence[str]],
             boot: bool) -> Dict[str, Any]:
    rows = dict(flat)
    rows[name] = [metrics_of(q, ids) for q, ids in zip(qs, picked)]
    info = {n: {"curve": "flat_hybrid"} for n in flat}
    info[name] = {"curve": None}
    recall = float(np.mean([r.recall for r in rows[name]]))
    tokens = np.array([r.tokens for r in rows[name]], dtype=float)
    points = [(np.mean([r.tokens for r in flat[n]]), np.mean([r.recall for r in flat[n]])) for n in flat]
    at, beyond = interpolate_curve(points, tokens.mean())
    sizes = np.array([len(q.row["gold"]) for q in qs])
    multi = _subset_gain(rows, list(flat), name, sizes > 1, "all_gold")
    corr = cut_size_correlation(rows, list(sizes), name) or {}
    out = {"rule": name, "recall": recall, "tokens": float(tokens.mean()), "p90": float(np.percentile(tokens, 90)),
           "gain": recall - at, "beyond": beyond, "multi_all_gold": multi.get("rate"),
           "multi_flat": multi.get("flat_at_tokens"), "spearman_multi": corr.get("multi"),
           "spearman_all": corr.get("all"), "results": float(np.mean([r.results for r in rows[name]])),
           "rows": rows[name]}
    if boot:
        out["ci"] = bootstrap_gain(rows, info, name, resamples=1000)
    return out


def load(run: str, dump: str) -> List[Q]:
    with open(Path(dump) / f"{run}.pkl", "rb") as fh:
        data = pickle.load(fh)
    return [Q(row) for row in data["rows"]]


Rule = Callable[[Q], List[str]]


def _top(q: Q, pool: int) -> List[float]:
    return [float(h.score) for h in q.ranked[:pool]]


def _ids(q: Q, keep: int) -> List[str]:
    return merge_regions(q, [h.node.id for h in q.ranked[:keep]])


def knee_rule(pool: int = FOCUS_POOL, sens: float = 1.0) -> Rule:
    def rule(q: Q) -> List[str]:
        s = _top(q, pool)
        return _ids(q, knee_index(s, sens)) if s else list(q.regions)
    return rule


def tie_rule(tau: float, limit: int) -> Rule:
    """The plain knee over the top 10, then every leaf within ``tau`` (z units) of the last kept
    one, up to ``limit`` leaves: a cut inside a run of near-equal scores is arbitrary."""
    def rule(q: Q) -> List[str]:
        s = _top(q, max(limit, FOCUS_POOL))
        if not s:
            return list(q.regions)
        keep = knee_index(s[:FOCUS_POOL], 1.0)
        floor = s[keep - 1] - tau
        while keep < min(limit, len(s)) and s[keep] >= floor:
            keep += 1
        return _ids(q, keep)
    return rule


def gap_rule(tau: float, limit: int) -> Rule:
    """The plain knee over the top 10 when the score drops by at least ``tau`` (z units) right
    after it; otherwise the cut moves down to the first such drop, up to ``limit`` leaves: a knee
    whose drop is within noise is no knee."""
    def rule(q: Q) -> List[str]:
        s = _top(q, max(limit, FOCUS_POOL))
        if not s:
            return list(q.regions)
        keep = knee_index(s[:FOCUS_POOL], 1.0)
        while keep < min(limit, len(s)) and s[keep - 1] - s[keep] < tau:
            keep += 1
        return _ids(q, keep)
    return rule


def relgap_rule(ratio: float, limit: int) -> Rule:
    """As :func:`gap_rule` with the noise read from the curve itself: a drop counts when it is at
    least ``ratio`` times the median drop between neighbours of the top ``limit``."""
    def rule(q: Q) -> List[str]:
        s = _top(q, max(limit, FOCUS_POOL))
        if not s:
            return list(q.regions)
        keep = knee_index(s[:FOCUS_POOL], 1.0)
        drops = np.diff(-np.array(s[:limit]))
        noise = float(np.median(drops)) if len(drops) else 0.0
        while keep < min(limit, len(s)) and s[keep - 1] - s[keep] < ratio * noise:
            keep += 1
        return _ids(q, keep)
    return rule


def band_rule(delta: float, limit: int, narrow: Optional[float] = None) -> Rule:
    """At least the plain knee over the top 10, and every leaf of the top ``limit`` within ``delta``
    (z units) of the best: where nothing stands out, many leaves are as good as the best one.
    ``narrow``: a best leaf ahead of the second by more than this is kept alone."""
    def rule(q: Q) -> List[str]:
        s = _top(q, max(limit, FOCUS_POOL))
        if not s:
            return list(q.regions)
        keep = knee_index(s[:FOCUS_POOL], 1.0)
        band = sum(1 for x in s[:limit] if x >= s[0] - delta)
        keep = max(keep, band)
        if narrow is not None and len(s) > 1 and s[0] - s[1] > narrow:
            keep = 1
        return _ids(q, keep)
    return rule


def noise_band_rule(c: float, limit: int, m: Optional[float] = None) -> Rule:
    """:func:`band_rule` in the pool's own noise units: the expected gap between the top order
    statistics of the pool's scores, sd / sqrt(2 ln N) (N leaves in the pool): every leaf within ``c``
    such gaps of the best is kept (at least the knee, at most ``limit``); a best leaf ahead of the
    second by more than ``m`` gaps is kept alone."""
    def rule(q: Q) -> List[str]:
        s = _top(q, max(limit, FOCUS_POOL))
        if not s:
            return list(q.regions)
        keep = knee_index(s[:FOCUS_POOL], 1.0)
        n = len(q.scores)
        if n < 3:
            return _ids(q, keep)
        gap = float(np.std(q.scores)) / math.sqrt(2.0 * math.log(n))
        band = sum(1 for x in s[:limit] if x >= s[0] - c * gap)
        keep = max(keep, band)
        if m is not None and len(s) > 1 and s[0] - s[1] > m * gap:
            keep = 1
        return _ids(q, keep)
    return rule


def spread_rule(tau: float, limit: int, sens: float = 1.0) -> Rule:
    """The plain knee over the top 10 where its scores spread over more than ``tau`` (z units);
    a flatter top (nothing stands out) is cut at its knee over the top ``limit`` instead."""
    def rule(q: Q) -> List[str]:
        s = _top(q, max(limit, FOCUS_POOL))
        if not s:
            return list(q.regions)
        top = s[:FOCUS_POOL]
        if top[0] - top[-1] >= tau:
            return _ids(q, knee_index(top, 1.0))
        return _ids(q, max(knee_index(top, 1.0), knee_index(s[:limit], sens)))
    return rule


# -- word budgets: the library's own fill over the dump ------------------------------------------

def _is_passage(q: Q, nid: str) -> bool:
    return q.nodes[nid][8] is not None


def groups_of(q: Q, leaves: Sequence[str], which: str) -> Dict[str, List[Group]]:
    """The groups budget.fill may merge each leaf into: ``"pages+regions"`` (a passage's page node
    and the walk's regions, as the library does with passages), ``"parents+regions"`` (every
    leaf's parent), ``"regions"`` or ``"none"``."""
    out: Dict[str, List[Group]] = {}
    for leaf in leaves:
        found: Dict[str, Group] = {}
        parent = q.nodes[leaf][3]
        if parent and parent in q.nodes and which in ("pages+regions", "parents+regions") and \
                (which == "parents+regions" or _is_passage(q, leaf)):
            found[parent] = Group(parent, q.leaf_ids(parent))
        if which != "none":
            doc, first = q.nodes[leaf][0], q.nodes[leaf][4]
            for region in q.regions:
                info = q.nodes[region]
                if not info[2] and info[0] == doc and info[4] <= first <= info[5]:
                    found.setdefault(region, Group(region, q.region_leaves[region]))
        out[leaf] = sorted(found.values(), key=lambda g: len(g.leaves))
    return out


def _words(q: Q, ids: Sequence[str]) -> Dict[str, int]:
    out = {}
    for leaf in ids:
        out[leaf] = q.words(leaf)
    return out


def budget_rule(budget: int, pool: str = "default", groups: str = "pages+regions",
                ratio: Optional[float] = MERGE_RATIO) -> Rule:
    """``search(max_words=budget)``: the focus ranking (``pool`` "default": regions + the global
    50, as the library ranks it; "deep": regions + the global ``--deep`` scored together; "extend":
    the default ranking, then the rest of the global ``--deep`` in its own order) filled by
    budget.fill with ``ratio`` as the merge ratio."""
    def rule(q: Q) -> List[str]:
        if pool == "default":
            ranked = q.ranked
        elif pool == "library":
            # the library's own order (traversal.budget_order): the focus cut's leaves, the global
            # ranking and its deeper part, the rest of the pool
            light = lambda entries: [RankedHit(q.node(i), sc) for i, sc, *_ in entries]  # noqa: E731
            fp = FocusPool(q.ranked, light(q.row["global50"]), light(q.row["global_deep"]))
            ranked = budget_order(fp, q.cut())
        elif pool in ("kneeflat", "kneenosib"):
            # the knee's own leaves first (its ranking's top), then another ranking past the knee
            top = q.ranked[:FOCUS_POOL]
            keep = knee_index([h.score for h in top], 1.0) if top else 0
            head = list(top[:keep])
            if pool == "kneeflat":
                rest_ids = list(q.row["flat50"]) + [i for i, *_ in q.row["global_deep"]]
                rest = [RankedHit(q.node(i), -1e9 - n) for n, i in enumerate(dict.fromkeys(rest_ids))]
            else:
                rest = q.rank(q.row["region_hits"], q.row["global_deep"], sibling_weight=0.0)
            seen = {h.node.id for h in head}
            ranked = head + [h for h in rest if h.node.id not in seen]
        elif pool == "deep":
            ranked = q.rank(q.row["region_hits"], q.row["global_deep"])
        else:
            seen = {h.node.id for h in q.ranked}
            tail = [RankedHit(q.node(i), -1e9 - n) for n, (i, *_rest) in enumerate(q.row["global_deep"])
                    if i not in seen]
            ranked = list(q.ranked) + tail
        order = [(h.node.id, h.score) for h in ranked]
        leaves = [i for i, _ in order]
        every = set(leaves) | {m for g in groups_of(q, leaves, groups).values() for x in g for m in x.leaves}
        words = {i: q.words(i) for i in every if i in q.hits}
        outcome = fill(order, words, groups_of(q, leaves, groups), budget, ratio)
        return [e.node_id for e in outcome.entries]
    return rule


def flat_budget_rule(budget: int, unit: str = "leaf") -> Rule:
    """Flat hybrid at a word budget as the eval fills it: its top-50 ranking (the flat curve's
    ``flat_search(k=50)``, read on in the deeper ranking where it holds fewer words than the budget)
    packed first fit; ``unit="page"``: passages grouped into their page,
    pages packed whole (as ``flat_search(unit="page")`` groups them)."""
    def rule(q: Q) -> List[str]:
        ids = list(q.row["flat50"])
        if sum(q.words(i) for i in ids) < budget:  # read on, as the eval does (short leaves)
            ids = list(dict.fromkeys(ids + list(q.row["flat_deep"])))
        if unit == "page":
            ids = list(dict.fromkeys(q.nodes[i][3] if _is_passage(q, i) else i for i in ids))
        outcome = fill([(i, 0.0) for i in ids], {i: q.words(i) for i in ids}, {}, budget, None)
        return [e.node_id for e in outcome.entries]
    return rule


def library_rule(q: Q) -> List[str]:
    """The library's own cut (traversal.focus_cut with today's SearchConfig()), merged as the core merges."""
    from drag_knee_retriever.config import SearchConfig
    from drag_knee_retriever.search._traversal import focus_cut

    if not q.ranked:
        return list(q.regions)
    return _ids(q, focus_cut(SearchConfig(), q.ranked))


def rules() -> Dict[str, Rule]:
    R: Dict[str, Rule] = {"default": default_rule, "library": library_rule}
    for pool, sens in ((10, 0.85), (10, 0.5), (20, 1.0), (20, 0.85)):
        R[f"knee_p{pool}_s{sens}"] = knee_rule(pool, sens)
    for tau in (0.25, 0.5, 0.75, 1.0):
        for limit in (10, 20):
            R[f"tie{tau}_L{limit}"] = tie_rule(tau, limit)
    for tau in (0.25, 0.5, 0.75, 1.0):
        for limit in (10, 15, 20):
            R[f"gap{tau}_L{limit}"] = gap_rule(tau, limit)
    for ratio in (1.0, 2.0, 3.0):
        for limit in (10, 15, 20):
            R[f"relgap{ratio}_L{limit}"] = relgap_rule(ratio, limit)
    for delta in (0.5, 1.0, 1.5, 2.0):
        for limit in (10, 15, 20):
            R[f"band{delta}_L{limit}"] = band_rule(delta, limit)
    for narrow in (2.0, 3.0, 4.0):
        R[f"narrow{narrow}"] = band_rule(0.0, 1, narrow)
    for delta in (0.75, 1.0, 1.25):
        for limit in (10, 20):
            for narrow in (3.0, 4.0, 5.0):
                R[f"band{delta}_L{limit}_narrow{narrow}"] = band_rule(delta, limit, narrow)
    for delta in (0.75, 1.25):
        for limit in (10, 15, 20):
            R[f"band{delta}_L{limit}"] = band_rule(delta, limit)
    for c in (1.0, 1.5, 2.0, 2.5, 3.0):
        for limit in (10, 20):
            R[f"nband{c}_L{limit}"] = noise_band_rule(c, limit)
            for m in (6.0, 8.0, 10.0):
                R[f"nband{c}_L{limit}_m{m}"] = noise_band_rule(c, limit, m)
    for tau in (2.0, 3.0, 4.0):
        for limit, sens in ((20, 1.0), (20, 0.5), (10, 0.5)):
            R[f"spread{tau}_L{limit}_s{sens}"] = spread_rule(tau, limit, sens)
    for budget in (500, 1000, 2000):
        R[f"flat_budget{budget}"] = flat_budget_rule(budget)
        R[f"flatpage_budget{budget}"] = flat_budget_rule(budget, "page")
        for pool in ("default", "deep", "extend", "kneeflat", "kneenosib", "library"):
            for groups in ("pages+regions", "parents+regions", "none"):
                R[f"budget{budget}_{pool}_{groups}"] = budget_rule(budget, pool, groups)
        for ratio in (0.67, 0.8):
            for groups in ("pages+regions", "parents+regions"):
                R[f"budget{budget}_extend_{groups}_r{ratio}"] = budget_rule(budget, "extend", groups, ratio)
                R[f"budget{budget}_kneeflat_{groups}_r{ratio}"] = budget_rule(budget, "kneeflat", groups, ratio)
    return R


def budget_summary(runs: Sequence[str], dump: str, names: Sequence[str], R: Dict[str, Rule]) -> int:
    """For each budget rule ``budget{B}_*``: recall against flat's at the same budget
    (``flat_budget{B}``), paired per question, with a 95% bootstrap interval, per run."""
    from drag_knee_retriever.eval.budget_metrics import _paired_interval

    lines: Dict[str, List[str]] = {}
    for run in runs:
        qs = load(run, dump)
        flat: Dict[int, np.ndarray] = {}
        for n in names:
            budget = int(n.split("_")[0].replace("budget", ""))
            if budget not in flat:
                flat[budget] = np.array([metrics_of(q, R[f"flat_budget{budget}"](q)).recall for q in qs])
            ours = [metrics_of(q, R[n](q)) for q in qs]
            rec = np.array([r.recall for r in ours])
            lo, hi = _paired_interval(rec - flat[budget], resamples=1000)
            lines.setdefault(n, []).append(f"{rec.mean():.3f} vs {flat[budget].mean():.3f} "
                                           f"{(rec - flat[budget]).mean():+.3f} ({lo:+.3f}..{hi:+.3f})")
    print("| rule | " + " | ".join(runs) + " |")
    print("|---|" + "---|" * len(runs))
    for n, cells in lines.items():
        print(f"| {n} | " + " | ".join(cells) + " |")
    return 0


def delta_interval(qs: Sequence[Q], flat: Dict[str, List[Any]], a: Sequence[Any], b: Sequence[Any],
                   resamples: int = 1000, seed: int = 0) -> Tuple[float, float, float]:
    """The change of the gain at equal tokens from rows ``b`` to rows ``a`` (same questions), with
    its 95% paired bootstrap: each resample rebuilds the flat curve and both gains."""
    rng = np.random.default_rng(seed)
    ft = {n: np.array([r.tokens for r in v], dtype=float) for n, v in flat.items()}
    fr = {n: np.array([r.recall for r in v], dtype=float) for n, v in flat.items()}
    at, ar = np.array([r.tokens for r in a], dtype=float), np.array([r.recall for r in a])
    bt, br = np.array([r.tokens for r in b], dtype=float), np.array([r.recall for r in b])

    def change(idx):
        points = [(ft[n][idx].mean(), fr[n][idx].mean()) for n in flat]
        ga = ar[idx].mean() - interpolate_curve(points, at[idx].mean())[0]
        gb = br[idx].mean() - interpolate_curve(points, bt[idx].mean())[0]
        return ga - gb

    point = change(np.arange(len(qs)))
    draws = [change(rng.integers(0, len(qs), len(qs))) for _ in range(resamples)]
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(point), float(low), float(high)


def summary(runs: Sequence[str], dump: str, names: Sequence[str], R: Dict[str, Rule],
            with_ci: bool = False) -> int:
    """Gain at equal tokens per run for each rule, its change from the default rule, and the
    smallest change over the runs (a rule becomes a default only where that is >= 0)."""
    table: Dict[str, List[Tuple[float, float, float]]] = {n: [] for n in names}
    for run in runs:
        qs = load(run, dump)
        flat = flat_rows(qs)
        base = evaluate(qs, flat, "default", [default_rule(q) for q in qs], False)
        for n in names:
            f = evaluate(qs, flat, n, [R[n](q) for q in qs], False)
            ci = ""
            if with_ci:
                _, low, high = delta_interval(qs, flat, f["rows"], base["rows"])
                ci = f" [{low:+.3f}..{high:+.3f}]"
            table[n].append((f["gain"], f["gain"] - base["gain"], f["tokens"], ci))
    print("| rule | " + " | ".join(runs) + " | min change |")
    print("|---|" + "---:|" * (len(runs) + 1))
    for n in sorted(names, key=lambda n: -min(c for _, c, _, _ in table[n])):
        cells = [f"{g:+.4f} ({c:+.4f}{ci}) @{t:.0f}" for g, c, t, ci in table[n]]
        print(f"| {n} | " + " | ".join(cells) + f" | {min(c for _, c, _, _ in table[n]):+.4f} |")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--dump", default=str(CACHE / "budget" / "dump"),
                        help="budget_dump.py's --out (default: %(default)s)")
    parser.add_argument("--rules", action="append", help="glob patterns of rule names (default: all)")
    parser.add_argument("--boot", action="store_true", help="bootstrap intervals (slower)")
    parser.add_argument("--summary", action="store_true",
                        help="one row per rule: its gain on every run and its change from the default's")
    parser.add_argument("--ci", action="store_true", help="with --summary: a 95%% paired bootstrap of each change")
    args = parser.parse_args(argv)
    R = rules()
    names = [n for n in R if not args.rules or any(fnmatch.fnmatchcase(n, p) for p in args.rules)]
    if args.summary and names and all(n.startswith("budget") for n in names):
        return budget_summary(args.runs, args.dump, names, R)
    if args.summary:
        return summary(args.runs, args.dump, names, R, args.ci)
    for run in args.runs:
        qs = load(run, args.dump)
        flat = flat_rows(qs)
        wrong = check_default(qs)
        print(f"## {run}: {len(qs)} questions; default replay differs from index.search() on {wrong}; "
              f"flat k=5 recall {np.mean([r.recall for r in flat['flat_hybrid_k5']]):.3f} at "
              f"{np.mean([r.tokens for r in flat['flat_hybrid_k5']]):.0f} tokens")
        print("| rule | recall | tokens | p90 | results | gain | 95% | all-gold multi vs flat | spearman multi / all |")
        print("|---|---:|---:|---:|---:|---:|---|---|---|")
        for n in names:
            f = evaluate(qs, flat, n, [R[n](q) for q in qs], args.boot)
            ci = f.get("ci")
            ci_s = f"{ci[0]:+.3f}..{ci[1]:+.3f}" if ci else "–"
            mg = (f"{f['multi_all_gold']:.3f} vs {f['multi_flat']:.3f}" if f["multi_all_gold"] is not None else "–")
            sp = "/".join("–" if f[k] is None else f"{f[k]:.2f}" for k in ("spearman_multi", "spearman_all"))
            print(f"| {n} | {f['recall']:.3f} | {f['tokens']:.0f} | {f['p90']:.0f} | {f['results']:.1f} | "
                  f"{f['gain']:+.3f}{'*' if f['beyond'] else ''} | {ci_s} | {mg} | {sp} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
