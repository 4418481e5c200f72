"""Progress of an evaluation run: rich bars on a terminal, log lines otherwise."""

from __future__ import annotations

import logging
import sys
from typing import Optional

progress_log = logging.getLogger("drag_knee_retriever.eval.progress")


class ProgressBars:
    """Progress bars (rich) on an interactive stderr; otherwise one log line per 10 % of a stage
    on the ``drag_knee_retriever.eval.progress`` logger (the CLI shows it at INFO)."""

    def __init__(self, enabled: bool) -> None:
        self._rich = None
        self._task = None
        self._enabled = enabled
        self._last_logged = -1
        self._total = 0
        self._name = ""
        if enabled and sys.stderr.isatty():
            try:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

                self._rich = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), console=Console(stderr=True), transient=False)
                self._rich.start()
            except ImportError:
                self._rich = None

    def stage(self, name: str, total: int) -> None:
        self._name, self._total, self._last_logged = name, total, -1
        if self._rich is not None:
            self._task = self._rich.add_task(name, total=total)
        else:
            progress_log.info("%s: 0/%d", name, total)

    def update(self, done: int, total: Optional[int] = None) -> None:
        if total is not None and total != self._total:
            self._total = total
            if self._rich is not None and self._task is not None:
                self._rich.update(self._task, total=total)
        if self._rich is not None and self._task is not None:
            self._rich.update(self._task, completed=done)
            return
        decile = int(10 * done / self._total) if self._total else 10
        if decile != self._last_logged and (self._enabled or done == self._total):
            self._last_logged = decile
            progress_log.info("%s: %d/%d", self._name, done, self._total)

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
