"""Progress reports of an ingest: :class:`PhaseProgress`, rich's bars (one per phase) on a terminal
and a line per finished phase otherwise; what ``progress=True`` draws in ``add_documents`` and both
``from_documents``, and what ``drag-knee ingest`` draws.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from rich.console import Console

__all__ = ["PhaseProgress", "throughput"]


def throughput(done: float, total: float, seconds: float) -> str:
    """``"5.9 pages/s, about 0:31 left"`` from what was measured so far (pages done in ``seconds``)."""
    if done <= 0 or seconds <= 0:
        return "measuring pages/s"
    rate = done / seconds
    left = max(0.0, total - done) / rate
    minutes, secs = divmod(int(round(left)), 60)
    hours, minutes = divmod(minutes, 60)
    clock = f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
    return f"{rate:.1f} pages/s, about {clock} left" if done < total else f"{rate:.1f} pages/s"


class PhaseProgress:
    """A progress bar per phase on a terminal; one line per finished phase otherwise.

    Used as the ``progress(phase, done, total)`` callback of the loaders and of
    ``DragKneeIndex.add_documents``. The ingest's ``pages`` phase (pages written over the whole
    call) also shows pages/s and the time left from the throughput measured since its first
    tick: in the bar on a terminal, else as a plain line at every tenth of the pages.
    """

    wants_pages = True  # add_documents: report the "pages" phase too

    def __init__(self, console: Console, clock: Any = None) -> None:
        import time

        self.console = console
        self.clock = clock or time.perf_counter
        self.phase: Optional[str] = None
        self.done = 0
        self.total = 0
        self._progress: Any = None
        self._tasks: Dict[str, Any] = {}
        self._reported: set = set()
        self._ocr = [0, 0, 0]  # pages of earlier PDFs, done and total of the current one
        self.pages_done = 0
        self.pages_total = 0
        self._pages_started: Optional[float] = None
        self._pages_tenth = -1

    def __enter__(self) -> "PhaseProgress":
        if self.console.is_terminal:
            from rich.progress import (
                BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
            )

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description:<10}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                # OCR takes seconds a page: the remaining time is what a user waits for.
                TimeRemainingColumn(),
                # Pages/s and time left of the ingest, from its measured throughput ("pages" only).
                TextColumn("{task.fields[rate]}"),
                console=self.console,
                transient=False,
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()

    def pages_rate(self) -> str:
        """Pages/s and time left of the ``pages`` phase so far."""
        seconds = self.clock() - self._pages_started if self._pages_started is not None else 0.0
        return throughput(self.pages_done, self.pages_total, seconds)

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase == "ocr":
            # The loader counts OCR pages per PDF; one bar counts them over the batch.
            if self._ocr[2] and self._ocr[1] >= self._ocr[2]:  # the previous PDF was finished: a new one
                self._ocr[0] += self._ocr[2]
            self._ocr[1:] = [done, total]
            if self._progress is None and done >= total:
                self.console.print(f"ocr: {done}/{total} pages", style="dim")
            done, total = self._ocr[0] + done, self._ocr[0] + total
        if phase == "pages":
            if self._pages_started is None:
                self._pages_started = self.clock()
            self.pages_done, self.pages_total = done, total
        else:
            self.phase, self.done, self.total = phase, done, total
        rate = self.pages_rate() if phase == "pages" else ""
        if self._progress is not None:
            if phase not in self._tasks:
                # A new phase means the earlier ones are over, even if their last tick was not sent
                # ("ocr" runs inside "reading", one PDF at a time, and "pages" spans the whole
                # ingest: they end nothing).
                if phase not in ("ocr", "pages"):
                    for name, (task, task_total) in self._tasks.items():
                        if name != "pages":
                            self._progress.update(task, completed=task_total)
                self._tasks[phase] = (self._progress.add_task(phase, total=max(total, 1), rate=rate), max(total, 1))
            task, _ = self._tasks[phase]
            self._tasks[phase] = (task, max(total, 1))
            self._progress.update(task, completed=done, total=max(total, 1), rate=rate)
        elif phase == "pages":
            tenth = int(10 * done / total) if total else 10
            if tenth != self._pages_tenth:
                self._pages_tenth = tenth
                self.console.print(f"pages: {done}/{total}, {rate}", style="dim")
        elif done >= total and phase not in self._reported and phase != "ocr":
            self._reported.add(phase)
            self.console.print(f"{phase}: {done}/{total}", style="dim")
