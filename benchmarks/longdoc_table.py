"""Aggregate rows for benchmarks/RESULTS.md from `drag-knee eval --json` outputs (no per-question data).

    python benchmarks/longdoc_table.py RUN.json [RUN.json ...] [--methods drag_knee drag_knee_global ...]
    python benchmarks/longdoc_table.py RUN.json ... --against passage_words=none
    python benchmarks/longdoc_table.py RUN.json ... --budgets

``--budgets``: instead, per run, the default's own curve point (recall @ words, gain over flat) and, at
each word budget of the run (``headline["word_budgets"]``), ``search(max_words=B)`` against flat
hybrid's leaves filled to B words on the same questions (paired difference, 95% bootstrap), and flat
pages ranked by their passages filled to B.

``--against LABEL``: instead, each run's default method against the flat hybrid curve of the build
variant ``LABEL`` (another index of the same documents, e.g. whole pages) at the default's mean tokens:
what a reader gets per token from one index against the other (below the variant's k=1 the curve is
the line from zero to k=1, as everywhere in the harness).

For every run and adaptive DRAG method: recall and mean / p90 tokens, the gain at equal tokens over
flat hybrid on the same index with its 95% paired-bootstrap interval (a build variant's methods
against the flat sweep on the variant's own index), the gain at a matched per-question budget, and
the all-gold rate on multi-gold questions next to flat's at equal tokens. MMLongBench's and QMSum's
licenses allow aggregate figures only: this prints nothing else.
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


def rows(payload: Dict[str, Any], methods: Optional[List[str]]) -> List[str]:
    summary, headline = payload["summary"], payload["headline"]
    budget = dict(headline.get("budget", {}))
    budget.update(headline.get("budget_on_own_index", {}))
    own = headline.get("gains_on_own_index", {})
    dataset = payload["dataset"]
    questions = payload["meta"]["dataset"]["questions"]
    out = []
    names = [n for n in summary if n.startswith("drag_") and n in budget]
    if methods:
        names = [n for n in names if n.split("[")[0] in methods]
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
        out.append(
            f"| {dataset} | {questions} | `{name}` | {_f(means['recall'])} | {means['tokens']:.0f} | {b['tokens_p90']:.0f} "
            f"| **{_f(gain, sign=True)}** | {_ci(ci)} | {_f(b.get('recall_gain_at_matched_budget'), sign=True)} "
            f"({_ci(b.get('recall_gain_at_matched_budget_ci95'))}) | {_f(multi.get('rate'))} vs {_f(multi.get('flat_at_tokens'))} |"
        )
    flat5 = summary.get("flat_hybrid_k5")
    if flat5:
        out.append(f"| {dataset} | {questions} | `flat_hybrid_k5` (reference) | {_f(flat5['recall'])} | {flat5['tokens']:.0f} "
                   f"| – | – | – | – | {_f(flat5['all_gold'])} (all questions) |")
    for key, value in summary.items():
        # flat_search(unit="page"): k=5 distinct pages ranked by their best passage (listed where
        # the index has passages, i.e. where it differs from flat_hybrid_k5)
        plain = summary.get(key.replace("flat_hybrid_page_k5", "flat_hybrid_k5"), {})
        if key.split("[")[0] == "flat_hybrid_page_k5" and plain.get("tokens") != value["tokens"]:
            out.append(f"| {dataset} | {questions} | `{key}` (pages ranked by passages) | {_f(value['recall'])} "
                       f"| {value['tokens']:.0f} | – | – | – | – | {_f(value['all_gold'])} (all questions) |")
    for key, value in summary.items():
        if key.startswith("flat_hybrid_k5["):
            out.append(f"| {dataset} | {questions} | `{key}` (reference) | {_f(value['recall'])} | {value['tokens']:.0f} "
                       f"| – | – | – | – | {_f(value['all_gold'])} (all questions) |")
    return out


def against(payload: Dict[str, Any], label: str) -> str:
    """One line: the run's default method against flat hybrid on the variant ``label``'s index."""
    from drag_knee_retriever.eval.metrics import interpolate_curve

    summary = payload["summary"]
    default = payload["headline"].get("default_method", "drag_knee")
    curve = sorted((v["tokens"], v["recall"]) for k, v in summary.items()
                   if k.startswith("flat_hybrid_k") and k.endswith(f"[{label}]"))
    if not curve or default not in summary:
        return f"{payload['dataset']}: no flat_hybrid_k*[{label}] rows or no {default} in this run"
    means = summary[default]
    at, beyond = interpolate_curve(curve, means["tokens"])
    k1 = summary.get(f"flat_hybrid_k1[{label}]")
    smallest = f"; flat k=1 there: {k1['recall']:.3f} @ {k1['tokens']:.0f}" if k1 else ""
    return (f"{payload['dataset']} ({payload['meta']['dataset']['questions']} q): {default} {means['recall']:.3f} @ "
            f"{means['tokens']:.0f} tokens vs flat hybrid on [{label}] at those tokens {at:.3f}"
            f"{' (beyond its curve)' if beyond else ''}: {means['recall'] - at:+.3f}{smallest}")


def budget_row(payload: Dict[str, Any]) -> str:
    """One row: the default's curve point, then each budget's recall against flat's at that budget."""
    headline, summary = payload["headline"], payload["summary"]
    default = headline.get("default_method", "drag_knee")
    cells = [payload["dataset"], str(payload["meta"]["dataset"]["questions"])]
    if default in summary:
        means = summary[default]
        cells.append(f"{_f(means['recall'])} @ {means['tokens']:.0f}: "
                     f"{_f(headline.get('default_recall_gain_at_equal_tokens'), sign=True)} "
                     f"({_ci(headline.get('default_recall_gain_ci95'))})")
    else:
        cells.append("–")
    for budget, entry in headline.get("word_budgets", {}).items():
        ours, flat = entry.get(f"drag_knee_w{budget}", {}), entry.get(f"flat_hybrid_w{budget}", {})
        pages = entry.get(f"flat_hybrid_page_w{budget}", {})
        gain = entry.get(f"gain_over_flat_hybrid_w{budget}", {})
        cells.append(f"{_f(ours.get('recall'))} vs {_f(flat.get('recall'))}: **{_f(gain.get('gain'), sign=True)}** "
                     f"({_ci(gain.get('ci95'))}); pages {_f(pages.get('recall'))}")
    return "| " + " | ".join(cells) + " |"


def budget_header(payload: Dict[str, Any]) -> str:
    budgets = list(payload["headline"].get("word_budgets", {}))
    head = "| dataset | questions | default: recall @ words, gain over flat (95%) | " + " | ".join(
        f"{b} words: max_words vs flat leaves, gain (95%); flat pages" for b in budgets) + " |"
    return head + "\n|---|---:|---|" + "---|" * len(budgets)


HEADER = ("| dataset | questions | method | recall | tokens | p90 tokens | gain @ equal tokens | 95% interval "
          "| gain @ matched budget (95%) | all-gold, multi-gold q: method vs flat @ tokens |\n"
          "|---|---:|---|---:|---:|---:|---:|---|---|---|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--methods", nargs="*")
    parser.add_argument("--against", help="a build variant's label: the default against its flat curve")
    parser.add_argument("--budgets", action="store_true", help="recall within each word budget against flat's")
    args = parser.parse_args()
    if args.budgets:
        payloads = []
        for path in args.runs:
            with open(path, encoding="utf-8") as handle:
                payloads.append(json.load(handle))
        if payloads:
            print(budget_header(payloads[0]))
        for payload in payloads:
            print(budget_row(payload))
        return
    if args.against:
        for path in args.runs:
            with open(path, encoding="utf-8") as handle:
                print(against(json.load(handle), args.against))
        return
    print(HEADER)
    for path in args.runs:
        with open(path, encoding="utf-8") as handle:
            payload = json.load(handle)
        for row in rows(payload, args.methods):
            print(row)


if __name__ == "__main__":
    main()
