"""Pictures of a search: the walk as plain text or a rich tree, and the score curve with its knee.

- :func:`trace_text`: the trace as a plain-text tree (no extra needed; what ``Trace.render()``
  returned before the data model lost its presentation methods).
- :func:`trace_tree` / :func:`print_trace`: the trace as a :class:`rich.tree.Tree`: every ranking
  step with its candidates best first, kept ones in green, suppressed ones in red with the node
  that suppressed them, cut ones dimmed, and the knee marked where the list was cut. Needs
  ``rich`` (the ``cli`` extra).
- :func:`plot_knee`: one step's (or any descending list's) score curve, the chord from the first
  to the last point, the point farthest from it and the cut, as a matplotlib figure, optionally
  written to a PNG/SVG/PDF file. :func:`plot_trace` draws every step of a trace side by side.
  Needs ``matplotlib`` (the ``plot`` extra).

- :func:`visible`: document-derived text (names, titles, snippets) with control characters shown
  as escapes (``\\x1b``), so a file cannot drive the terminal; :func:`safe_console` makes a rich
  console that applies it to every piece of text it prints (its own styling is untouched).

Both import their library lazily, so ``import drag_knee_retriever`` never needs either.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.common._knee import knee_distances, knee_index
from drag_knee_retriever.model._nodes import Trace, TraceCandidate, TraceStep

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.figure import Figure
    from rich.console import Console
    from rich.tree import Tree

log = logging.getLogger(__name__)

_OUTCOME_STYLE = {"kept": "green", "suppressed": "red", "cut": "grey50", "merged": "cyan"}
_OUTCOME_MARK = {"kept": "✔", "suppressed": "✘", "cut": "·", "merged": "↑"}
_OUTCOME_COLOUR = {"kept": "#2e9e44", "suppressed": "#d1352b", "cut": "#9a9a9a", "merged": "#2a8fbd"}
_BAR_WIDTH = 10


_TEXT_MARK = {"kept": "+", "suppressed": "x", "cut": "-", "merged": "^"}


def trace_text(trace: Trace) -> str:
    """The walk as a plain-text tree: one line per step, one per candidate (``+`` kept, ``x``
    suppressed, ``-`` cut, ``^`` merged)."""
    lines = [f"trace: method={trace.method} query={trace.query[:80]!r} requests={trace.requests}"]
    for step in trace.steps:
        head = f"step {step.step} [{step.kind}] level {step.level}"
        if step.parent_id:
            head += f" parent {step.parent_id[:8]}"
        if step.knee_index is not None:
            head += f" knee@{step.knee_index}"
        lines.append(head + f" kept {step.kept_count}/{len(step.candidates)}")
        for c in step.candidates:
            mark = _TEXT_MARK.get(c.outcome, "?")
            extra = f" by {c.suppressed_by[:8]}" if c.suppressed_by else ""
            has_ranks = c.dense_rank is not None or c.sparse_rank is not None
            ranks = f" d#{c.dense_rank} s#{c.sparse_rank}" if has_ranks else ""
            lines.append(f"  {mark} {c.fused_score:.4f} {c.doc_id} {c.label} L{c.level}{ranks} {c.outcome}{extra}")
    return "\n".join(lines)


def _import_rich() -> Any:
    try:
        import rich  # noqa: F401
    except ImportError:
        raise ImportError(
            "Rendering a trace as a tree needs rich, a dependency of drag-knee-retriever: "
            "pip install rich (or use drag_knee_retriever.render.trace_text(trace) for plain text)."
        ) from None
    return rich


def _import_matplotlib() -> Any:
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "Plotting the knee needs matplotlib: pip install 'drag-knee-retriever[plot]'."
        ) from None
    return Figure


def _node_names(trace: Trace) -> Dict[str, str]:
    """node id -> "doc label" for every candidate of the trace (to name suppressors)."""
    names: Dict[str, str] = {}
    for step in trace.steps:
        for c in step.candidates:
            names.setdefault(c.node_id, _candidate_name(c))
    return names


def _candidate_name(c: TraceCandidate) -> str:
    label = c.label or ("leaf" if c.is_leaf else f"level {c.level}")
    return visible(f"{c.doc_id} {label}".strip(), single_line=True)


def _bar(score: float, top: float, bottom: float) -> str:
    # A small bar relative to the step's own range, so the shape of the curve (and the drop at
    # the knee) is visible at a glance even though RRF scores are small numbers.
    if not (math.isfinite(score) and math.isfinite(top) and math.isfinite(bottom)) or top <= bottom:
        filled = _BAR_WIDTH
    else:
        filled = 1 + round((score - bottom) / (top - bottom) * (_BAR_WIDTH - 1))
    return "█" * filled + " " * (_BAR_WIDTH - filled)


def _step_title(step: TraceStep, names: Dict[str, str]) -> str:
    parts = [f"step {step.step}", step.kind, f"level {step.level}"]
    if step.parent_id:
        parts.append(f"under {names.get(step.parent_id, step.parent_id[:8])}")
    parts.append(f"kept {step.kept_count}/{len(step.candidates)}")
    if step.knee_index is not None:
        parts.append(f"knee keeps {step.knee_index}")
    if tuple(step.weights) != (1.0, 1.0):
        parts.append(f"weights dense {step.weights[0]:g} / bm25 {step.weights[1]:g}")
    return " · ".join(parts)


def trace_tree(trace: Trace, *, max_candidates: int = 12) -> "Tree":
    """The walk of ``trace`` as a :class:`rich.tree.Tree`.

    Each step lists its candidates best first: a bar for the fused score relative to the step's
    range, the score, the document and span, the dense and BM25 ranks when recorded, and what
    happened (kept / suppressed by which node / cut). Positions and ranks are shown 1-based (the
    trace stores them 0-based). A yellow rule marks the knee. Beyond
    ``max_candidates``, cut candidates are summarised in one line.
    """
    _import_rich()
    from rich.text import Text
    from rich.tree import Tree

    names = _node_names(trace)
    head = Text.assemble(
        ("search ", "bold"),
        (f"method={trace.method} ", "cyan"),
        (repr(trace.query[:100]), "bold"),
        (f"  · {len(trace.steps)} step{'' if len(trace.steps) == 1 else 's'} · {trace.requests} request{'' if trace.requests == 1 else 's'}", "dim"),
    )
    total_ms = trace.timings_ms.get("total") if trace.timings_ms else None
    if total_ms is not None:
        head.append(f" · {total_ms:.1f} ms", "dim")
    tree = Tree(head, guide_style="grey50")
    if not trace.steps:
        tree.add(Text("no steps: the index had nothing to rank (is it empty, or did the filter match nothing?)", "yellow"))
        return tree
    for step in trace.steps:
        branch = tree.add(Text(_step_title(step, names), "bold"))
        candidates = sorted(step.candidates, key=lambda c: c.fused_rank)
        scores = [c.fused_score for c in candidates]
        finite = [s for s in scores if math.isfinite(s)]
        top, bottom = (max(finite), min(finite)) if finite else (0.0, 0.0)
        # Show every candidate that was not cut, and at least max_candidates lines.
        last_interesting = max((i for i, c in enumerate(candidates) if c.outcome != "cut"), default=-1)
        shown = max(max_candidates, last_interesting + 1)
        for position, c in enumerate(candidates[:shown]):
            if step.knee_index is not None and position == step.knee_index and 0 < position:
                branch.add(Text(f"──── knee: the list is cut here (keep {step.knee_index}) ────", "yellow"))
            style = _OUTCOME_STYLE.get(c.outcome, "white")
            line = Text()
            line.append(f"{_OUTCOME_MARK.get(c.outcome, '?')} ", style)
            # 1-based positions, as in the plot (the knee counts items, "keep the first k").
            line.append(f"#{position + 1:<2} ", "dim")
            line.append(_bar(c.fused_score, top, bottom), style)
            line.append(f" {c.fused_score:.4f}  ", style)
            # Names on one line each: a document named "a\nb" shows as such, it adds no line.
            line.append(visible(c.doc_id, single_line=True), "bold" if c.outcome == "kept" else style)
            line.append(f" {visible(c.label, single_line=True)}" if c.label else "", style)
            line.append(f"  L{c.level}{' leaf' if c.is_leaf else ''}", "dim")
            if c.dense_rank is not None or c.sparse_rank is not None:
                dense = "-" if c.dense_rank is None else f"#{c.dense_rank + 1}"
                sparse = "-" if c.sparse_rank is None else f"#{c.sparse_rank + 1}"
                line.append(f"  dense {dense} bm25 {sparse}", "dim")
            if c.outcome == "suppressed":
                by = names.get(c.suppressed_by or "", (c.suppressed_by or "?")[:8])
                line.append(f"  suppressed by {by}", "red")
            elif c.outcome == "merged":
                into = names.get(c.suppressed_by or "", (c.suppressed_by or "?")[:8])
                line.append(f"  kept inside {into} (most of its leaves made the cut)", style)
            elif c.outcome == "cut":
                line.append("  cut", style)
            else:
                line.append("  kept", style)
            branch.add(line)
        if step.knee_index is not None and step.knee_index == len(candidates) and len(candidates) > 0:
            branch.add(Text("──── knee: no cut (the scores have no elbow; all kept) ────", "yellow"))
        hidden = len(candidates) - shown
        if hidden > 0:
            branch.add(Text(f"… {hidden} more candidates, all cut", "grey50"))
    return tree


def print_trace(trace: Trace, console: Optional["Console"] = None, *, max_candidates: int = 12) -> None:
    """Print :func:`trace_tree` of ``trace`` to ``console`` (default: a new stdout console)."""
    _import_rich()
    from rich.console import Console

    (console or Console()).print(trace_tree(trace, max_candidates=max_candidates))


def _step_data(step_or_scores: Union[TraceStep, Sequence[float]], sensitivity: float) -> Tuple[List[float], List[str], int, Optional[str]]:
    if isinstance(step_or_scores, TraceStep):
        step = step_or_scores
        candidates = sorted(step.candidates, key=lambda c: c.fused_rank)
        scores = [float(c.fused_score) for c in candidates]
        outcomes = [c.outcome for c in candidates]
        keep = step.knee_index if step.knee_index is not None else step.kept_count
        title = f"step {step.step} · {step.kind} · level {step.level}"
        return scores, outcomes, int(keep), title
    scores = [float(s) for s in step_or_scores]
    keep = knee_index(scores, sensitivity) if scores else 0
    outcomes = ["kept" if i < keep else "cut" for i in range(len(scores))]
    return scores, outcomes, keep, None


def _draw_knee(ax: Any, scores: List[float], outcomes: List[str], keep: int, title: Optional[str]) -> None:
    n = len(scores)
    positions = list(range(1, n + 1))
    if n == 0:
        ax.text(0.5, 0.5, "no candidates", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    ax.plot(positions, scores, color="#4a4a4a", linewidth=1.2, zorder=1)
    for outcome in ("kept", "merged", "suppressed", "cut"):
        xs = [p for p, o in zip(positions, outcomes) if o == outcome]
        ys = [s for s, o in zip(scores, outcomes) if o == outcome]
        if xs:
            ax.scatter(xs, ys, color=_OUTCOME_COLOUR[outcome], s=28, zorder=3, label=outcome)
    if n >= 3 and scores[0] > scores[-1]:
        # The chord the knee is measured from, and the point farthest from it.
        ax.plot([1, n], [scores[0], scores[-1]], linestyle="--", color="#7a7aff", linewidth=1, label="chord", zorder=2)
        distances = knee_distances(scores)
        far = int(abs(distances).argmax())
        ax.scatter([far + 1], [scores[far]], s=160, facecolors="none", edgecolors="#e6a700", linewidths=2,
                   zorder=4, label="farthest from chord")
    if 0 < keep < n:
        ax.axvline(keep + 0.5, color="#e6a700", linestyle=":", linewidth=1.5, label=f"knee cut: keep {keep}")
    ax.set_xlabel("rank (best first)")
    ax.set_ylabel("fused score")
    ax.set_xticks(positions if n <= 20 else [p for p in positions if p == 1 or p % max(1, n // 10) == 0])
    heading = f"keep {keep} of {n}"
    ax.set_title(f"{title} — {heading}" if title else heading, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")


def _save(fig: "Figure", path: Union[str, Path, None]) -> None:
    if path is None:
        return
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg", ".pdf"):
        raise ConfigError(f"Cannot write a plot to {str(path)!r}: use a .png, .svg or .pdf file name.")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    log.info("wrote %s", path)


def plot_knee(
    step_or_scores: Union[TraceStep, Sequence[float]],
    path: Union[str, Path, None] = None,
    *,
    sensitivity: float = 1.0,
    title: Optional[str] = None,
) -> "Figure":
    """Plot a descending score curve with its knee; write it to ``path`` (.png/.svg/.pdf) if given.

    ``step_or_scores`` is a :class:`~drag_knee_retriever.model._nodes.TraceStep` (points coloured by what
    happened to each candidate, the cut where the search made it) or a plain list of scores (cut
    at ``knee_index(scores, sensitivity)``). The dashed line is the chord from the first point to
    the last; the ringed point is the one farthest from it; the dotted line is the cut. Returns the
    matplotlib :class:`~matplotlib.figure.Figure` (no pyplot state is touched).
    """
    Figure = _import_matplotlib()
    scores, outcomes, keep, default_title = _step_data(step_or_scores, sensitivity)
    fig = Figure(figsize=(6.4, 3.8))
    ax = fig.subplots()
    _draw_knee(ax, scores, outcomes, keep, title or default_title)
    fig.tight_layout()
    _save(fig, path)
    return fig


def plot_trace(trace: Trace, path: Union[str, Path, None] = None, *, max_steps: int = 12) -> "Figure":
    """Plot the score curve and knee of every step of ``trace`` (up to ``max_steps``) in a grid."""
    Figure = _import_matplotlib()
    steps = trace.steps[:max_steps]
    count = max(1, len(steps))
    columns = min(3, count)
    rows = math.ceil(count / columns)
    fig = Figure(figsize=(5.2 * columns, 3.4 * rows))
    axes = fig.subplots(rows, columns, squeeze=False)
    for index in range(rows * columns):
        ax = axes[index // columns][index % columns]
        if index < len(steps):
            scores, outcomes, keep, title = _step_data(steps[index], 1.0)
            _draw_knee(ax, scores, outcomes, keep, title)
        elif index == 0:
            _draw_knee(ax, [], [], 0, None)
        else:
            ax.set_axis_off()
    fig.suptitle(f"{trace.method}: {trace.query[:80]!r}", fontsize=11)
    fig.tight_layout()
    _save(fig, path)
    return fig


# C0 controls (except newline and tab), DEL, C1 controls, the line and paragraph separators
# (U+2028, U+2029: a line break to many terminals, editors and log viewers), and the bidirectional
# overrides and isolates that reorder what a terminal shows ("Trojan source"): none belongs on a
# screen raw. With the newline that ``single_line`` adds, this is every character Python's
# ``str.splitlines`` breaks a line at (\n \r \v \f \x1c-\x1e \x85 U+2028 U+2029).
_INVISIBLE = {c: f"\\x{c:02x}" for c in list(range(0x20)) + [0x7F] + list(range(0x80, 0xA0)) if c not in (0x09, 0x0A)}
_INVISIBLE.update({c: f"\\u{c:04x}" for c in (0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F),
                                               *range(0x2066, 0x206A))})


def visible(text: Any, *, single_line: bool = False) -> str:
    """``text`` with every control character written as an escape (``"\\x1b[2J"``), safe for a terminal.

    Newlines and tabs stay unless ``single_line`` (names and titles: shown as ``\\n`` and ``\\t``):
    with it, the result holds no character that breaks a line, so a file named ``"a\\nb"`` cannot
    print a line of its own.
    """
    text = text if isinstance(text, str) else str(text)
    out = text.translate(_INVISIBLE)
    if single_line:
        out = out.replace("\n", "\\n").replace("\t", "\\t")
    return out


def safe_console(**kwargs: Any) -> "Console":
    """A rich Console that shows control characters in all printed text as escapes (see :func:`visible`).

    Rich's own output (colours, the live progress display) passes through untouched: only the
    text of ordinary segments is rewritten, just before it is written to the terminal.
    """
    _import_rich()
    from rich.console import Console
    from rich.segment import Segment

    class _SafeConsole(Console):  # type: ignore[misc, valid-type]
        def _render_buffer(self, buffer: Any) -> str:
            return super()._render_buffer(
                segment if segment.control else Segment(visible(segment.text), segment.style, None)
                for segment in buffer
            )

    return _SafeConsole(**kwargs)


__all__ = ["plot_knee", "plot_trace", "print_trace", "safe_console", "trace_tree", "visible"]
