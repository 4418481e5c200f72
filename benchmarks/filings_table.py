"""Aggregate rows for benchmarks/RESULTS.md from FinanceBench runs (`python benchmarks/eval.py --dataset financebench
--json` outputs, and optionally `benchmarks/peer_langchain.py --dataset financebench --json`); no
per-question data (FinanceBench is CC BY-NC: aggregate figures only).

    python benchmarks/filings_table.py RUN.json [RUN.json ...] [--peer PEER.json] [--methods drag_knee ...]

Per run and adaptive DRAG method: recall @ mean words, the right-document rate, the gain at equal
words over flat hybrid on the same index with its 95% paired-bootstrap interval, all-gold on
multi-page questions against flat at equal words; then recall within 500 / 1,000 / 1,500 / 2,000 words: the
default given the budget (where the index takes ``max_words``, before issue 40 ``max_tokens``), flat hybrid leaves and pages filled
to it, the peer filled to it, each with its right-document rate.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict, List, Optional


def _f(x: Optional[float], digits: int = 3, sign: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _ci(ci: Optional[List[float]]) -> str:
    return "–" if not ci else f"{ci[0]:+.3f} to {ci[1]:+.3f}"


METHOD_HEADER = ("| setting | method | recall @ words | right document | gain @ equal words (95%) | "
                 "all-gold, multi-page q: method vs flat @ words |\n|---|---|---|---:|---|---|")
BUDGET_HEADER = ("| setting | words | default given the budget | flat hybrid (passages) | flat hybrid (pages) | "
                 "chunked peer | default − flat (95%) |\n|---|---:|---|---|---|---|---|")


def method_rows(payload: Dict[str, Any], methods: Optional[List[str]]) -> List[str]:
    summary, headline = payload["summary"], payload["headline"]
    budget = dict(headline.get("budget", {}))
    budget.update(headline.get("budget_on_own_index", {}))
    own = headline.get("gains_on_own_index", {})
    out = []
    names = [n for n in summary if n.startswith("drag_") and n in budget]
    if methods:
        names = [n for n in names if n.split("[")[0] in methods or n in methods]
    for name in names:
        means, b = summary[name], budget[name]
        if name in own:
            gain, ci = own[name]["gain"], own[name]["ci95"]
        elif name == headline.get("default_method"):
            gain, ci = headline["default_recall_gain_at_equal_tokens"], headline.get("default_recall_gain_ci95")
        else:
            gain = headline.get("gains_at_equal_tokens", {}).get(name)
            ci = headline.get("gains_ci95", {}).get(name)
        multi = b.get("all_gold_multi") or {}
        out.append(f"| {payload['dataset']} | `{name}` | {_f(means['recall'])} @ {means['tokens']:.0f} | "
                   f"{_f(means.get('right_document'))} | **{_f(gain, sign=True)}** ({_ci(ci)}) | "
                   f"{_f(multi.get('rate'))} vs {_f(multi.get('flat_at_tokens'))} |")
    for key in ("flat_hybrid_k5", "flat_hybrid_k10", "flat_hybrid_k20", "flat_hybrid_page_k5"):
        if key in summary:
            v = summary[key]
            out.append(f"| {payload['dataset']} | `{key}` (reference) | {_f(v['recall'])} @ {v['tokens']:.0f} | "
                       f"{_f(v.get('right_document'))} | – | {_f(v['all_gold'])} (all questions) |")
    return out


def budget_rows(payload: Dict[str, Any], peer: Optional[Dict[str, Any]]) -> List[str]:
    setting = "single" if payload["dataset"].endswith("-single") else "shared"
    peer_curves = ((peer or {}).get("settings", {}).get(setting) or {}).get("curves", {})
    out = []
    for words, entry in (payload["headline"].get("word_budgets") or {}).items():
        def cell(name: str) -> str:
            v = entry.get(name)
            return "–" if not v else f"{_f(v['recall'])} @ {v['tokens']:.0f} (right doc {_f(v['right_document'])})"

        p = peer_curves.get(f"peer_w{words}")
        peer_cell = "–" if not p else f"{_f(p['recall'])} @ {p['words']:.0f}"
        gain = entry.get(f"gain_over_flat_hybrid_w{words}") or {}
        out.append(f"| {setting} | {words} | {cell(f'drag_knee_w{words}')} | {cell(f'flat_hybrid_w{words}')} | "
                   f"{cell(f'flat_hybrid_page_w{words}')} | {peer_cell} | "
                   f"{_f(gain.get('gain'), sign=True)} ({_ci(gain.get('ci95'))}) |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--peer", help="benchmarks/peer_langchain.py --dataset financebench --json output")
    parser.add_argument("--methods", nargs="*")
    args = parser.parse_args()
    payloads = []
    for path in args.runs:
        with open(path, encoding="utf-8") as handle:
            payloads.append(json.load(handle))
    peer = None
    if args.peer:
        with open(args.peer, encoding="utf-8") as handle:
            peer = json.load(handle)
    print(METHOD_HEADER)
    for payload in payloads:
        for row in method_rows(payload, args.methods):
            print(row)
    print()
    print(BUDGET_HEADER)
    for payload in payloads:
        for row in budget_rows(payload, peer):
            print(row)
    if peer:
        print()
        for setting, figures in peer.get("settings", {}).items():
            g = figures["ours_gain_vs_peer"]
            print(f"peer ({setting}): ours default {figures['curves']['ours_default']['recall']:.3f} @ "
                  f"{figures['curves']['ours_default']['words']:.0f} words; peer at those words "
                  f"{g['peer_at_ours_words']:.3f}; gain {g['gain']:+.3f} ({_ci(g['ci95'])}); right document "
                  + ", ".join(f"{k} {v:.3f}" for k, v in figures.get("right_document", {}).items()))


if __name__ == "__main__":
    main()
