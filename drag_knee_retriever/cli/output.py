"""Rendering to the terminal: the two consoles, progress bars, result lists and logging setup.

Results go to stdout (``out``); progress, warnings and errors to stderr (``err``), so
``drag-knee search --json | jq`` stays clean.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
import textwrap
import warnings
from typing import Any, Dict, Optional

from rich.console import Console
from rich.text import Text

class CliConsole(Console):
    """The CLI's consoles: text made safe for a terminal, and a closed stream is not an error.

    - Every printed segment goes through :func:`~drag_knee_retriever.render.visible`: a file name,
      title or snippet holding ``ESC]0;...BEL`` or ``ESC[2J`` is shown as ``\\x1b]0;...``, never
      executed by the terminal. Rich's own styling and live display (control segments) pass.
    - A stream closed under us (``drag-knee ingest corpus 2>&1 | head -n 1``: the reader is gone)
      silences this console instead of raising BrokenPipeError out of a progress tick, which ended
      the ingest half-way. JSON output (``--json``) is written with ``typer.echo``, exact.
    """

    def _render_buffer(self, buffer: Any) -> str:
        from rich.segment import Segment

        from drag_knee_retriever.render import visible

        return super()._render_buffer(
            segment if segment.control else Segment(visible(segment.text), segment.style, None) for segment in buffer
        )

    def on_broken_pipe(self) -> None:
        # Rich's default exits (SystemExit(1)): here the work goes on, unheard. The stream's fd
        # points at /dev/null from now on, so the interpreter's last flush does not fail either.
        self.quiet = True
        stream = self.file
        with contextlib.suppress(Exception):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)

    def _check_buffer(self) -> None:
        try:
            super()._check_buffer()
        except (BrokenPipeError, ValueError, OSError) as exc:
            if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError) and exc.errno not in (errno.EPIPE, errno.EBADF):
                raise
            # Nobody reads this stream any more: drop what was buffered and print nothing from now on.
            del self._buffer[:]
            self.quiet = True


def one_line(value: Any) -> str:
    """A name or text from a file or the index (file name, document id, title, skip reason,
    folder) as one line: every line-breaking character (``\\n \\r \\v \\f \\x1c-\\x1e \\x85 U+2028
    U+2029``) and tab shown as an escape, so a file named ``"a\\nIngested 999 document(s)"`` cannot
    print a forged line, or a row of its own in a table. For :class:`rich.text.Text` pieces."""
    from drag_knee_retriever.render import visible

    return visible(value, single_line=True)


def shown(value: Any) -> str:
    """:func:`one_line` for rich markup strings (``[`` escaped too): what every ``print`` of a
    name in an f-string uses."""
    from rich.markup import escape

    return escape(one_line(value))


# Results to stdout; progress, warnings and errors to stderr, so `--json | jq` stays clean.
out = CliConsole(highlight=False, soft_wrap=False)
err = CliConsole(stderr=True, highlight=False, soft_wrap=True)


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


def count(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return len(value)
    return int(value)


def _snippet(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    if chars <= 0 or len(flat) <= chars:
        return flat
    cut = flat[:chars].rsplit(" ", 1)[0]
    return cut + " …"


def print_results(result: Any, *, chars: int = 240, console: Optional[Console] = None) -> None:
    """Print a SearchResult as a numbered list: document, span, score, title and a snippet."""
    console = console or out
    if not result.nodes:
        console.print("[yellow]No results.[/] (the filter matched nothing, or the index is empty)")
        return
    for position, hit in enumerate(result.nodes, start=1):
        node = hit.node
        title = node.title or node.metadata.get("title")
        kind = "leaf" if node.is_leaf else f"level {node.level} (whole span)"
        line = Text()
        line.append(f"{position}. ", "bold")
        line.append(one_line(node.doc_id), "bold cyan")
        line.append(f"  {one_line(node.span)}", "magenta")
        line.append(f"  score {hit.score:.4f}", "green")
        line.append(f"  {kind}", "dim")
        if title:
            line.append(f"  “{one_line(title)}”", "italic")
        console.print(line)
        # Indented as a block, so wrapped lines stay under their heading (wrapped here rather than
        # by rich, which would pad every line with trailing spaces).
        width = max(40, (console.width or 80) - 3)
        for piece in textwrap.wrap(_snippet(hit.text, chars), width=width) or [""]:
            console.print(Text("   " + piece))
    trace = result.trace
    total = trace.timings_ms.get("total") if trace.timings_ms else None
    timing = f", {total:.1f} ms" if total is not None else ""
    console.print(
        f"[dim]{len(result.nodes)} result(s) · method {result.method} · {trace.requests} store request(s){timing}[/]"
    )


_NOISY_LOGGERS = (
    "qdrant_client", "qdrant_edge", "fastembed", "httpx", "httpcore", "urllib3", "pypdf",
    "huggingface_hub", "onnxruntime", "drag_knee_retriever.loaders",
)


class _OneLineFormatter(logging.Formatter):
    """Log lines on stderr, each message one line (:func:`one_line`): a warning quoting a file name
    (``skipped %s: %s``, an OCR failure) neither forges a line nor reaches the terminal's control
    codes. A traceback (``exc_info``) keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        message = record.message
        record.message = one_line(message)
        try:
            return super().formatMessage(record)
        finally:
            record.message = message


def configure_logging(verbose: int = 0) -> None:
    """Warnings from this library on stderr; third-party chatter only with -v, everything with -vv."""
    level = logging.DEBUG if verbose >= 2 else logging.INFO if verbose == 1 else logging.WARNING
    root = logging.getLogger()
    if not any(getattr(h, "_drag_knee", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_OneLineFormatter("drag-knee: %(levelname)s: %(message)s"))
        handler._drag_knee = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(level)
    for name in _NOISY_LOGGERS:
        # The loaders' per-file warnings are printed by `ingest` itself; don't say them twice.
        logging.getLogger(name).setLevel(logging.DEBUG if verbose >= 2 else logging.ERROR if verbose == 0 else logging.WARNING)
    logging.captureWarnings(True)
    if verbose == 0:
        warnings.simplefilter("ignore")
        try:  # fastembed logs through loguru
            from loguru import logger as loguru_logger

            loguru_logger.disable("fastembed")
        except ImportError:
            pass


def quiet_native_logs(verbose: int) -> None:
    # onnxruntime writes its own warnings to stderr from C++; keep them unless asked (-v).
    if verbose:
        return
    try:
        import onnxruntime

        onnxruntime.set_default_logger_severity(3)
    except Exception:  # onnxruntime missing or older: nothing to quiet
        pass
