"""`drag-knee ingest` shows pages/s and the time left from the measured throughput, and
IngestReport carries the per-phase times: the real index and model (the offline MiniLM)."""

from __future__ import annotations

import io

from rich.console import Console

from drag_knee_retriever import Document, DragKneeIndex
from drag_knee_retriever.cli.output import PhaseProgress, throughput
from drag_knee_retriever.build._ingest import PHASES, page_count

DOCS = [
    Document(id="tides", pages=["Tide tables predict the sea's height at a harbour.", "Spring tides follow the full moon.",
                                "Pilots plan deep ships around high water."]),
    Document(id="ash", pages=["Volcanic ash melts inside jet engines.", "Seismometers record earthquake swarms."]),
    Document(id="notes", text="Glaciers flow downhill under their own weight.\n\nCrevasses open over bumps in the bed."),
]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_throughput_says_rate_and_time_left():
    assert throughput(0, 10, 5.0) == "measuring pages/s"
    assert throughput(5, 20, 10.0) == "0.5 pages/s, about 0:30 left"
    assert throughput(1, 7201, 1.0) == "1.0 pages/s, about 2:00:00 left"
    assert throughput(20, 20, 4.0) == "5.0 pages/s"


def test_plain_lines_when_not_a_terminal_show_pages_per_s_and_eta():
    buffer, clock = io.StringIO(), Clock()
    console = Console(file=buffer, force_terminal=False, width=200)
    with PhaseProgress(console, clock=clock) as progress:
        progress("pages", 0, 40)
        clock.now += 10
        progress("pages", 20, 40)
        progress("pages", 21, 40)  # same tenth: no new line
        clock.now += 10
        progress("pages", 40, 40)
    lines = buffer.getvalue().splitlines()
    assert lines == ["pages: 0/40, measuring pages/s", "pages: 20/40, 2.0 pages/s, about 0:10 left",
                     "pages: 40/40, 2.0 pages/s"]


def test_terminal_bar_shows_pages_per_s():
    buffer, clock = io.StringIO(), Clock()
    console = Console(file=buffer, force_terminal=True, width=160)
    with PhaseProgress(console, clock=clock) as progress:
        progress("building", 3, 3)
        progress("pages", 0, 30)
        clock.now += 4
        progress("pages", 12, 30)
        progress("embedding", 5, 10)
    assert "3.0 pages/s, about 0:06 left" in buffer.getvalue()
    assert progress.phase == "embedding" and (progress.done, progress.total) == (5, 10)


def test_add_documents_reports_pages_and_phase_times_with_the_real_model(encoder):
    ticks = []

    class Recorder:
        wants_pages = True

        def __call__(self, phase, done, total):
            ticks.append((phase, done, total))

    plain = []
    with DragKneeIndex(":memory:", embedding=encoder) as index:
        report = index.add_documents(DOCS, progress=Recorder())
        again = index.add_documents(DOCS, progress=lambda *tick: plain.append(tick))
    total = sum(page_count(d) for d in DOCS)
    pages = [(done, of) for phase, done, of in ticks if phase == "pages"]
    assert pages[0] == (0, total) and pages[-1] == (total, total)
    assert [d for d, _ in pages] == sorted(d for d, _ in pages)
    assert report.pages == total == 6
    assert set(report.phase_seconds) == set(PHASES)
    assert all(v >= 0 for v in report.phase_seconds.values())
    assert sum(report.phase_seconds.values()) <= report.seconds
    # A callback that did not ask for pages hears the three chunk phases only; unchanged: no pages.
    assert again.unchanged == ["tides", "ash", "notes"] and again.pages == 0
    assert all(phase != "pages" for phase, _, _ in plain)
