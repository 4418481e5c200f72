"""Write an evaluation's files: Markdown table, JSON summary, raw JSON per question, PNG plot."""

from __future__ import annotations

import gzip
import itertools
import json
import logging
import math
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from drag_knee_retriever.eval.baselines import RETURNED_FIELDS
from drag_knee_retriever.eval.metrics import METRIC_FORMULAS

log = logging.getLogger(__name__)

FAMILY_ORDER = ("flat_dense", "flat_bm25", "flat_hybrid", "flat_hybrid_knee", "flat_proto", "collapsed", "automerging", "drag",
                "drag_proto")
TABLE_COLUMNS = (
    ("recall", "recall", 3),
    ("recall_gain_at_equal_tokens", "Δrecall@tokens", 3),
    ("all_gold", "all-gold", 3),
    ("right_document", "right doc", 3),
    ("mrr", "MRR", 3),
    ("leaf_precision", "leaf P", 3),
    ("token_precision", "token P", 3),
    ("f1", "F1", 3),
    ("results", "results", 2),
    ("tokens", "tokens", 0),
    ("latency_ms", "ms", 1),
)


def _family_rank(family: str) -> int:
    base = family.split("[")[0]
    return FAMILY_ORDER.index(base) if base in FAMILY_ORDER else len(FAMILY_ORDER)


def _method_order(methods: Mapping[str, Mapping[str, Any]]) -> List[str]:
    def key(name: str):
        info = methods[name]
        fam = info.get("family", "")
        k = info.get("params", {}).get("k", 0) or 0
        return (("[" in fam), _family_rank(fam), fam, k, name)

    return sorted(methods, key=key)


def _fmt(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.{digits}f}"


def markdown_table(summary: Mapping[str, Mapping[str, float]], methods: Mapping[str, Mapping[str, Any]],
                   *, highlight: Optional[str] = "drag_knee", beyond: Sequence[str] = (),
                   select: Optional[Sequence[str]] = None) -> str:
    """One row per method (``select``: only these, in this order), the columns of
    :data:`TABLE_COLUMNS`; a gain marked ``*`` was measured beyond the end of the flat curve
    (against its last point)."""
    head = "| method | " + " | ".join(label for _, label, _ in TABLE_COLUMNS) + " |"
    rule = "|---|" + "|".join("---:" for _ in TABLE_COLUMNS) + "|"
    lines = [head, rule]
    order = [n for n in select if n in methods] if select is not None else _method_order(methods)
    for name in order:
        if name not in summary:
            continue
        means = summary[name]
        cells = []
        for key, _, digits in TABLE_COLUMNS:
            value = means.get(key)
            text = _fmt(value, digits)
            if key == "recall_gain_at_equal_tokens" and value is not None and math.isfinite(value):
                if value > 0:
                    text = "+" + text
                if name in beyond:
                    text += "*"
            cells.append(text)
        label = f"**{name}**" if name == highlight else name
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def formulas_markdown() -> str:
    """The metric definitions, for the report."""
    lines = ["G = gold leaves of the question, C = leaves covered by the returned context; "
             "tokens are whitespace tokens; means are over questions."]
    lines += [f"- `{name}`: {text}" for name, text in METRIC_FORMULAS.items()]
    lines.append("- `recall_gain_at_equal_tokens` (Δrecall@tokens): the method's recall minus the flat hybrid "
                 "top-k recall interpolated linearly, at the method's mean tokens, on the curve through "
                 "(0 tokens, 0 recall) and the flat hybrid points k=1, 2, 3, 5, 10, 20, 50. `*`: the method "
                 "uses more tokens than flat k=50; compared with k=50's recall (flat extension, favours the method).")
    lines.append("- 95% interval of the knee gain: paired bootstrap over questions (2,000 resamples; each "
                 "resample recomputes the flat hybrid curve and the knee's recall and tokens on the same "
                 "questions). An interval containing 0 means these questions do not establish the sign.")
    return "\n".join(lines)


def _ci_text(headline: Mapping[str, Any]) -> str:
    interval = headline.get("knee_recall_gain_ci95")
    if not interval:
        return ""
    return f" (95% paired-bootstrap interval {interval[0]:+.3f} to {interval[1]:+.3f})"


def headline_markdown(headline: Mapping[str, Any]) -> str:
    """The headline figures as a short list."""
    def f(key: str, digits: int = 3) -> str:
        value = headline.get(key)
        if value is None:
            return "–"
        return f"{value:+.{digits}f}" if "gain" in key else f"{value:.{digits}f}"

    lines = [
        f"- DRAG `knee` recall **{f('knee_recall')}** at {f('knee_tokens', 0)} mean tokens; flat hybrid at the "
        f"same tokens: {f('flat_hybrid_recall_at_knee_tokens')} → **knee_recall_gain_at_equal_tokens = "
        f"{f('knee_recall_gain_at_equal_tokens')}**"
        + _ci_text(headline)
        + (" (knee uses more tokens than the largest flat k: flat curve extended flat)"
           if headline.get("knee_tokens_beyond_flat_curve") else ""),
    ]
    if headline.get("automerging_method"):
        lines.append(
            f"- AutoMerging (`{headline['automerging_method']}`): recall {f('automerging_recall')} at "
            f"{f('automerging_tokens', 0)} tokens; recall per 1k tokens: DRAG knee {f('knee_recall_per_1k_tokens')} vs "
            f"AutoMerging {f('automerging_recall_per_1k_tokens')} (ratio {f('knee_vs_automerging_recall_per_token_ratio', 2)}); "
            f"gain at equal tokens over flat hybrid: AutoMerging {f('automerging_recall_gain_at_equal_tokens')}, "
            f"DRAG knee minus AutoMerging **{f('knee_minus_automerging_gain')}**"
        )
    if headline.get("best_drag_variant"):
        lines.append(f"- Best adaptive DRAG variant at equal tokens: `{headline['best_drag_variant']}` "
                     f"({f('best_drag_variant_gain_at_equal_tokens')})")
    return "\n".join(lines)


def word_budget_markdown(headline: Mapping[str, Any]) -> str:
    """Recall within each word budget (the headline's ``word_budgets``): the default search given
    the budget next to flat hybrid leaves and pages filled to it; empty when the run has none."""
    budgets = headline.get("word_budgets") or {}
    if not budgets:
        return ""
    lines = ["| words | method | recall | words used | right doc | all-gold, multi-gold q | default's gain (95% interval) |",
             "|---:|---|---:|---:|---:|---:|---|"]
    for budget, entry in budgets.items():
        for name, figures in entry.items():
            if name.startswith("gain_over_"):
                continue
            gain = entry.get(f"gain_over_{name}") or {}
            ci = gain.get("ci95")
            gain_text = (f"{gain['gain']:+.3f} ({ci[0]:+.3f} to {ci[1]:+.3f})" if ci else f"{gain['gain']:+.3f}") if gain else "–"
            lines.append(f"| {budget} | {name} | {_fmt(figures.get('recall'), 3)} | {_fmt(figures.get('tokens'), 0)} | "
                         f"{_fmt(figures.get('right_document'), 3)} | {_fmt(figures.get('all_gold_multi'), 3)} | {gain_text} |")
    return "\n".join(lines)


def plot_recall_vs_tokens(summary: Mapping[str, Mapping[str, float]], methods: Mapping[str, Mapping[str, Any]],
                          path: Path, *, title: str) -> Optional[Path]:
    """Evidence recall against mean context tokens: a line per top-k sweep, a point per adaptive
    method. Needs matplotlib (the ``plot`` extra); returns None without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed: no plot (pip install 'drag-knee-retriever[plot]').")
        return None
    fig, ax = plt.subplots(figsize=(12, 7))
    curves: Dict[str, List[str]] = {}
    points: List[str] = []
    for name in _method_order(methods):
        if name not in summary:
            continue
        curve = methods[name].get("curve")
        if curve:
            curves.setdefault(curve, []).append(name)
        else:
            points.append(name)
    styles = {"flat_hybrid": ("tab:blue", "-", 2.5), "flat_dense": ("tab:green", "--", 1.5),
              "flat_bm25": ("tab:olive", ":", 1.5), "collapsed": ("tab:purple", "-.", 1.5),
              "drag_fixed": ("tab:red", "-", 1.5)}
    extra_colors = iter(["tab:pink", "tab:brown", "tab:cyan", "tab:gray", "gold", "navy", "teal", "coral"])
    for curve, names in curves.items():
        xs_ys = sorted((summary[n]["tokens"], summary[n]["recall"], n) for n in names)
        color, style, width = styles.get(curve, (None, "-.", 1.0))
        if color is None:
            color = next(extra_colors, "black")
        ax.plot([p[0] for p in xs_ys], [p[1] for p in xs_ys], style, color=color, linewidth=width,
                marker="o", markersize=4, label=curve)
        for x, y, n in xs_ys:
            tag = n.split("_")[-1].split("[")[0]
            ax.annotate(tag, (x, y), textcoords="offset points", xytext=(3, -9), fontsize=7, color=color)
    markers = itertools.cycle("DPXs^v<>ph8dH")
    colors = itertools.cycle(["tab:red", "tab:orange", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
                              "tab:olive", "tab:cyan", "black", "gold", "navy", "teal", "coral"])
    for name in points:
        x, y = summary[name]["tokens"], summary[name]["recall"]
        if name == "drag_knee":  # the headline method: one unmistakable marker
            ax.scatter([x], [y], marker="*", s=380, zorder=6, color="red", edgecolors="black", label=name)
            continue
        hollow = name.startswith("proto_")  # prototypes of core changes: open markers
        color = next(colors)
        ax.scatter([x], [y], marker=next(markers), s=55, zorder=5, label=name,
                   color="none" if hollow else color, edgecolors=color)
    ax.set_xscale("log")
    ax.set_xlabel("mean context tokens per question (whitespace tokens, log scale)")
    ax.set_ylabel("evidence recall (share of gold leaves in the context)")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=6 if len(points) > 20 else 7, loc="center left", bbox_to_anchor=(1.01, 0.5),
              ncol=2 if len(points) > 30 else 1)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_plots(dataset: str, meta: Mapping[str, Any], summary: Mapping[str, Mapping[str, float]],
                methods: Mapping[str, Mapping[str, Any]], out_dir: Path) -> Dict[str, str]:
    """``recall_vs_tokens.png`` (default index) and ``recall_vs_tokens_variants.png`` (every
    adaptive DRAG method of every build variant, against the flat curves)."""
    files: Dict[str, str] = {}
    described = meta.get("dataset", {})
    base = (f"{dataset}: {described.get('documents')} docs, {described.get('leaves')} leaves, "
            f"{described.get('questions')} questions")
    main = {n: i for n, i in methods.items() if "[" not in n}
    png = plot_recall_vs_tokens(summary, main, out_dir / "recall_vs_tokens.png", title=base)
    if png is not None:
        files["plot"] = str(png)
    variants = {n: i for n, i in methods.items()
                if i.get("curve") in ("flat_hybrid", "flat_bm25", "flat_dense")
                or (i.get("adaptive") and i.get("family", "").startswith("drag"))}
    if any("[" in n for n in variants):
        png = plot_recall_vs_tokens(summary, variants, out_dir / "recall_vs_tokens_variants.png",
                                    title=base + " (build variants, prototypes)")
        if png is not None:
            files["plot_variants"] = str(png)
    return files


def replot(out_dir: Path) -> Dict[str, str]:
    """Redraw the plots of a finished run from its ``summary.json``."""
    data = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    return write_plots(data["dataset"], data["meta"], data["summary"], data["methods"], out_dir)


def write_report(report: Any, out_dir: Path, *, trace_rows: Sequence[Mapping[str, Any]] = (),
                 plot: bool = True) -> Dict[str, str]:
    """Write ``summary.json``, ``questions.jsonl``, ``table.md``, ``recall_vs_tokens.png`` (and
    ``traces.jsonl`` when traces were kept); return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files: Dict[str, str] = {}
    questions_path = out_dir / "questions.jsonl.gz"
    with gzip.open(questions_path, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"returned_fields": list(RETURNED_FIELDS)}) + "\n")
        for row in report.questions:
            handle.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    files["questions"] = str(questions_path)
    if trace_rows:
        traces_path = out_dir / "traces.jsonl.gz"
        with gzip.open(traces_path, "wt", encoding="utf-8") as handle:
            for row in trace_rows:
                handle.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
        files["traces"] = str(traces_path)
    # Write the summary before plotting, so a plotting failure loses no results.
    summary_path = out_dir / "summary.json"
    summary_path.write_text(json.dumps(report.to_json_dict(), ensure_ascii=False, indent=1), encoding="utf-8")
    if plot:
        files.update(write_plots(report.dataset, report.meta, report.summary, report.methods, out_dir))
    table_path = out_dir / "table.md"
    files["table"] = str(table_path)
    files["summary"] = str(summary_path)
    report.files = files
    described = report.meta.get("dataset", {})
    text = [
        f"# {report.dataset}: evidence per context token",
        "",
        f"{described.get('documents')} documents, {described.get('leaves')} leaves, "
        f"{described.get('questions')} questions ({described.get('multi_gold_questions')} with more than one gold leaf). "
        f"Run time {report.meta.get('seconds')} s.",
        "",
        "## Headline",
        "",
        headline_markdown(report.headline),
        "",
        *(["## Recall within a word budget", "", word_budget_markdown(report.headline), ""]
          if report.headline.get("word_budgets") else []),
        "## All methods",
        "",
        markdown_table(report.summary, report.methods, beyond=report.headline.get("beyond_flat_curve", ())),
        "",
        "## Metrics",
        "",
        formulas_markdown(),
        "",
    ]
    if "plot" in files:
        text[-1:-1] = ["## Plot", "", "![recall vs tokens](recall_vs_tokens.png)", ""]
    if "plot_variants" in files:
        text[-1:-1] = ["![variants](recall_vs_tokens_variants.png)", ""]
    table_path.write_text("\n".join(text), encoding="utf-8")
    summary_path.write_text(json.dumps(report.to_json_dict(), ensure_ascii=False, indent=1), encoding="utf-8")
    return files
