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
from typing import Any, Optional

from rich.console import Console
from rich.text import Text

from drag_knee_retriever.common._progress import PhaseProgress, throughput  # noqa: F401 - the CLI's names for them

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
