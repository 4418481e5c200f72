"""Draw the docs' pictures: docs/assets/how-it-works.svg (the walk down two document trees, a knee cut)
and docs/assets/gains.svg (the default's recall gain over flat search, benchmarks summary).

Run from the repository root (matplotlib, the `plot` extra):

    python docs/scripts/make_diagram.py

how-it-works.svg is a schematic of docs/how-it-works.md's text diagram, not a measurement: the scores of
the knee panel are made up to show the shape of a cut. gains.svg plots the figures of GAINS below, copied
from benchmarks/RESULTS.md (the default's rows); change both together.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "assets" / "how-it-works.svg"
GAINS_OUT = OUT.with_name("gains.svg")

#: (dataset, gain over flat hybrid at equal words, 95% interval low, high, gain over the LangChain chunk
#: pipeline or None): benchmarks/RESULTS.md, the default's rows ("statements41", "Passages by default",
#: "peer").
GAINS = (
    ("FinanceBench, 48 filings in one index", 0.301, 0.190, 0.420, 0.316),
    ("FinanceBench, inside the question's filing", 0.100, 0.010, 0.190, 0.200),
    ("MMLongBench-Doc, one long PDF at a time", 0.030, -0.007, 0.064, 0.094),
    ("COVID-QA, 30 papers", 0.038, 0.003, 0.071, None),
    ("HotpotQA, 994 documents", 0.039, 0.002, 0.077, None),
    ("XQuAD en", 0.024, 0.011, 0.038, None),
    ("XQuAD ru (Russian BM25)", 0.030, 0.016, 0.045, None),
)

KEPT, CUT, REGION, ANSWER = "#2e7d32", "#9e9e9e", "#1565c0", "#ef6c00"


def _node(ax, x, y, label, color, filled=False):
    ax.add_patch(plt.Circle((x, y), 0.33, facecolor=color if filled else "white", edgecolor=color, lw=2, zorder=3))
    ax.text(x, y, label, ha="center", va="center", fontsize=9, zorder=4,
            color="white" if filled else color, fontweight="bold")


def _edge(ax, a, b, color="#bdbdbd"):
    ax.plot([a[0], b[0]], [a[1], b[1]], color=color, lw=1.5, zorder=1)


def draw(path: Path = OUT) -> Path:
    plt.rcParams["svg.hashsalt"] = "drag-knee"  # the same picture gives the same file
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: small, searchable, in the reader's fonts
    fig, (tree, knee) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.6, 1]})

    # -- the walk ----------------------------------------------------------------------------
    roots = {"A": (2.5, 3.2), "B": (6.5, 3.2)}
    sections = {"A1": (1.5, 2.0), "A2": (3.5, 2.0), "B1": (5.5, 2.0), "B2": (7.5, 2.0)}
    pages = {"p1": (1.0, 0.8), "p2": (2.0, 0.8), "p3": (3.0, 0.8), "p4": (4.0, 0.8),
             "p5": (5.0, 0.8), "p6": (6.0, 0.8), "p7": (7.0, 0.8), "p8": (8.0, 0.8)}
    for s, r in (("A1", "A"), ("A2", "A"), ("B1", "B"), ("B2", "B")):
        _edge(tree, roots[r], sections[s])
    for p, s in zip(pages, ("A1", "A1", "A2", "A2", "B1", "B1", "B2", "B2")):
        _edge(tree, sections[s], pages[p])
    for name, xy in roots.items():
        _node(tree, *xy, name, KEPT)
    for name, xy in sections.items():
        _node(tree, *xy, name, REGION if name in ("A1", "B1") else CUT, filled=name in ("A1", "B1"))
    for name, xy in pages.items():
        _node(tree, *xy, name, ANSWER if name in ("p2", "p5") else CUT, filled=name in ("p2", "p5"))
    tree.text(0.3, 3.85, "1  rank the roots (dense + BM25, fused by RRF), cut at the knee", fontsize=9)
    tree.text(0.3, 2.6, "2  each step ranks the beam with its children in one round trip:\n"
                        "    a child that outranks its parent replaces it", fontsize=9, va="center",
              bbox={"fc": "white", "ec": "none", "alpha": 0.85}, zorder=5)
    tree.text(0.3, 0.05, "3  focus: rank the pages under the regions together, cut at the knee", fontsize=9)
    handles = [plt.Line2D([], [], marker="o", ls="", ms=9, mfc=c, mec=c, label=t) for c, t in
               ((KEPT, "kept by the walk"), (REGION, "region the walk chose"), (ANSWER, "answer (focus step)"),
                (CUT, "cut"))]
    tree.legend(handles=handles, loc="upper right", fontsize=8, frameon=False, bbox_to_anchor=(1.02, 1.12))
    tree.set_xlim(0.2, 8.8)
    tree.set_ylim(-0.2, 4.1)
    tree.set_aspect("equal")
    tree.axis("off")
    tree.set_title("The walk: documents, then sections, then pages", fontsize=11, loc="left")

    # -- the knee ----------------------------------------------------------------------------
    scores = [7.9, 7.1, 3.3, 2.9, 2.6, 2.4, 2.2, 2.1, 2.0, 1.9]
    ranks = list(range(1, len(scores) + 1))
    knee_at = 2
    knee.plot(ranks, scores, "-", color="#616161", lw=1.5)
    knee.plot(ranks[:knee_at], scores[:knee_at], "o", color=ANSWER, ms=8, label="kept")
    knee.plot(ranks[knee_at:], scores[knee_at:], "o", color=CUT, ms=7, label="cut")
    knee.plot([ranks[0], ranks[-1]], [scores[0], scores[-1]], ":", color="#9e9e9e", lw=1)
    knee.axvline(knee_at + 0.5, color=ANSWER, ls="--", lw=1.2)
    knee.annotate("knee: farthest point\nfrom the chord", xy=(knee_at + 1, scores[knee_at]), xytext=(5, 6.2),
                  fontsize=9, arrowprops={"arrowstyle": "->", "color": "#616161"})
    knee.set_xlabel("rank")
    knee.set_ylabel("score")
    knee.set_xticks(ranks)
    knee.legend(fontsize=8, frameon=False)
    knee.set_title("Every ranked list is cut at its knee", fontsize=11, loc="left")
    for side in ("top", "right"):
        knee.spines[side].set_visible(False)

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return path


def draw_gains(path: Path = GAINS_OUT) -> Path:
    plt.rcParams["svg.hashsalt"] = "drag-knee"
    plt.rcParams["svg.fonttype"] = "none"
    fig, ax = plt.subplots(figsize=(9, 3.6))
    rows = list(reversed(GAINS))
    ys = range(len(rows))
    for y, (name, gain, low, high, peer) in zip(ys, rows):
        ax.plot([low, high], [y, y], color="#9fa8da", lw=6, solid_capstyle="butt", zorder=1)
        ax.plot([gain], [y], "o", color=KEPT, ms=8, zorder=3)
        if peer is not None:
            ax.plot([peer], [y], "D", color=ANSWER, ms=7, zorder=3)
    ax.axvline(0, color="#616161", lw=1)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([row[0] for row in rows], fontsize=9)
    ax.set_xlabel("recall gain at equal context words (share of gold evidence)")
    handles = [plt.Line2D([], [], marker="o", ls="", color=KEPT, label="over flat hybrid top-k, same index"),
               plt.Line2D([], [], color="#9fa8da", lw=6, label="95% paired bootstrap interval"),
               plt.Line2D([], [], marker="D", ls="", color=ANSWER, label="over a LangChain chunk pipeline")]
    ax.legend(handles=handles, fontsize=8, frameon=False, loc="lower right")
    ax.set_title("The default search against flat search, at the same context size", fontsize=11, loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return path


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT.parent
    print(draw(folder / OUT.name))
    print(draw_gains(folder / GAINS_OUT.name))
