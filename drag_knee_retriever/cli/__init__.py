"""The ``drag-knee`` command: ingest files, search them, see why, manage the index, run a demo.

Needs the ``cli`` extra (typer, rich, platformdirs). Commands::

    drag-knee demo                                  # built-in sample, two queries, their traces
    drag-knee ingest ~/docs --include '*.md'        # into the per-user default index
    drag-knee search "how do I patch a tube" --trace
    drag-knee search "tides" --json --filter kind=pdf
    drag-knee docs list | drag-knee docs delete ID | drag-knee stats
    drag-knee eval ...                              # from drag_knee_retriever.eval (when installed)

The default index folder is the platform's per-user data folder (``drag-knee-retriever/index``);
``--index DIR`` or ``DRAG_KNEE_INDEX`` choose another, ``--url`` a Qdrant server. Results go to
stdout, progress and messages to stderr. Bad input never shows a traceback: one line on stderr
and a non-zero exit code (1: the input or the index; 2: the command line; 130: interrupted).
``--debug`` (or ``DRAG_KNEE_DEBUG=1``) shows tracebacks for bug reports.
"""
# The package: options.py (exit codes, choices, typer apps, shared options), output.py (rendering
# to the terminal), index.py (opening the index), commands.py (the commands), errors.py (exception
# -> one stderr line + exit code). `drag-knee = drag_knee_retriever.cli:main`.

from __future__ import annotations

import sys
from typing import Optional, Sequence

from drag_knee_retriever.errors import CliError
from drag_knee_retriever.cli import commands as _commands  # noqa: F401  (registers the commands on `app`)
from drag_knee_retriever.cli.commands import parse_filter_args
from drag_knee_retriever.cli.errors import run
from drag_knee_retriever.cli.index import default_index_dir
from drag_knee_retriever.cli.options import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, Engine, Language, Method, Order, app
from drag_knee_retriever.cli.output import PhaseProgress, configure_logging, err, out, print_results

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "CliError",
    "Engine",
    "Language",
    "Method",
    "Order",
    "PhaseProgress",
    "app",
    "configure_logging",
    "default_index_dir",
    "err",
    "main",
    "out",
    "parse_filter_args",
    "print_results",
    "run",
]


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of the ``drag-knee`` script: run the app, exit with its code."""
    sys.exit(run(argv))
