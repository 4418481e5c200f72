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

from __future__ import annotations

import enum
import json
import logging
import os
import signal
import sys
import textwrap
import time
import warnings
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any, Dict, List, Optional, Sequence, Tuple

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .errors import DragKneeError

log = logging.getLogger(__name__)

APP_NAME = "drag-knee-retriever"
INDEX_ENV = "DRAG_KNEE_INDEX"
DEBUG_ENV = "DRAG_KNEE_DEBUG"
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

# Results to stdout; progress, warnings and errors to stderr, so `--json | jq` stays clean.
out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)


class CliError(Exception):
    """A user-facing failure: one line on stderr, then exit with ``code``."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


class Method(str, enum.Enum):
    knee = "knee"
    sensitive_knee = "sensitive_knee"
    fixed = "fixed"
    branch = "branch"


class Language(str, enum.Enum):
    english = "english"
    russian = "russian"


class Engine(str, enum.Enum):
    auto = "auto"
    edge = "edge"
    local = "local"
    server = "server"


class Order(str, enum.Enum):
    score = "score"
    document = "document"


app = typer.Typer(
    name="drag-knee",
    help="Hierarchical, adaptive hybrid retrieval (DRAG with KNEE) over Qdrant: ingest documents, "
    "search them, and see why each result was chosen.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
docs_app = typer.Typer(help="List or delete indexed documents.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")


# -- shared options ---------------------------------------------------------------------------

IndexOption = Annotated[
    Optional[Path],
    typer.Option(
        "--index",
        help="Index folder (embedded Qdrant). Default: the per-user data folder; env DRAG_KNEE_INDEX.",
        show_default=False,
    ),
]
UrlOption = Annotated[
    Optional[str],
    typer.Option("--url", envvar="DRAG_KNEE_URL", help="Qdrant server or cluster URL instead of a folder.", show_default=False),
]
ApiKeyOption = Annotated[
    Optional[str],
    typer.Option("--api-key", envvar="QDRANT_API_KEY", help="API key for --url (env QDRANT_API_KEY).", show_default=False),
]
CollectionOption = Annotated[
    str, typer.Option("--collection", envvar="DRAG_KNEE_COLLECTION", help="Collection name.")
]
ModelOption = Annotated[
    Optional[str],
    typer.Option("--model", envvar="DRAG_KNEE_MODEL", help="fastembed dense model name (default all-MiniLM-L6-v2).", show_default=False),
]
ModelPathOption = Annotated[
    Optional[Path],
    typer.Option("--model-path", help="A local fastembed-ready model folder (or env DRAG_KNEE_MODEL_PATH).", show_default=False),
]
EngineOption = Annotated[
    Engine,
    typer.Option("--engine", envvar="DRAG_KNEE_ENGINE", case_sensitive=False,
                 help="Store engine: auto (Qdrant Edge for a folder, the server for --url), edge, local (qdrant-client local mode) or server."),
]
LanguageOption = Annotated[
    Optional[Language],
    typer.Option("--language", case_sensitive=False, show_default=False,
                 help="BM25 stemmer and stop words (default: the collection's; english for a new one)."),
]


def default_index_dir() -> Path:
    """The per-user index folder: ``<user data dir>/drag-knee-retriever/index``."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "index"


def _index_location(index: Optional[Path], url: Optional[str]) -> Tuple[Optional[Path], Optional[str]]:
    """(folder, None) or (None, url). --index beats DRAG_KNEE_INDEX beats the per-user default.

    DRAG_KNEE_INDEX is read here rather than by the option, so that --url can override a folder
    set in the environment while --index and --url on the same command line are refused.
    """
    if url:
        if index is not None:
            raise CliError("Give either --index DIR (a local folder) or --url URL (a server), not both.", EXIT_USAGE)
        return None, url
    if index is None and os.environ.get(INDEX_ENV):
        index = Path(os.environ[INDEX_ENV])
    return (index.expanduser() if index is not None else default_index_dir()), None


def _check_folder(folder: Path, collection: str, *, must_exist: bool) -> None:
    """Refuse folders that cannot be an index, with a message saying what to do.

    Commands that only read (search, docs, stats) must not create an empty index as a side
    effect, so they check that the collection's folder is there: ``<folder>/<collection>``
    (Qdrant Edge) or ``<folder>/collection/<collection>`` (qdrant-client local mode).
    """
    if folder.exists() and not folder.is_dir():
        raise CliError(f"The index path {folder} is a file, not a folder; give --index a folder.")
    if not must_exist:
        return
    if not folder.exists() or not any(folder.iterdir()):
        raise CliError(
            f"No index at {folder} yet; run `drag-knee ingest PATH` first (or point --index at an existing index)."
        )
    if not (folder / collection).is_dir() and not (folder / "collection" / collection).is_dir():
        raise CliError(
            f"The folder {folder} holds no collection {collection!r}; run `drag-knee ingest PATH` first, "
            "or pass the right --collection / --index."
        )


def _quiet_native_logs(verbose: int) -> None:
    # onnxruntime writes its own warnings to stderr from C++; keep them unless asked (-v).
    if verbose:
        return
    try:
        import onnxruntime

        onnxruntime.set_default_logger_severity(3)
    except Exception:  # onnxruntime missing or older: nothing to quiet
        pass


def _open_index(
    *,
    index: Optional[Path],
    url: Optional[str],
    api_key: Optional[str],
    collection: str,
    engine: Optional[Engine] = None,
    model: Optional[str] = None,
    model_path: Optional[Path] = None,
    language: Optional[Language] = None,
    branching: Optional[int] = None,
    must_exist: bool,
) -> Any:
    folder, url = _index_location(index, url)
    if folder is not None:
        _check_folder(folder, collection, must_exist=must_exist)
        if not must_exist:
            folder.mkdir(parents=True, exist_ok=True)
    _quiet_native_logs(_state["verbose"])
    from . import DragKneeIndex
    from .config import BuildConfig

    kwargs: Dict[str, Any] = {"collection": collection}
    if engine is not None and engine is not Engine.auto:
        kwargs["engine"] = engine.value
    elif folder is not None and (folder / "collection" / collection).is_dir() and not (folder / collection).exists():
        # A folder written by qdrant-client local mode (engine="local" in Python): open it with
        # that engine rather than starting an empty Edge collection beside it.
        kwargs["engine"] = Engine.local.value
    if url:
        kwargs["url"] = url
        kwargs["api_key"] = api_key
    else:
        kwargs["location"] = str(folder)
    if model:
        kwargs["model_name"] = model
    if model_path is not None:
        kwargs["model_path"] = str(model_path.expanduser())
    if language is not None:
        kwargs["language"] = language.value
    if branching is not None:
        kwargs["build"] = BuildConfig(branching=branching)
    where = kwargs.get("url") or kwargs.get("location")
    log.debug("opening index %s", where)
    # Loading the model takes a few seconds: say so on a terminal instead of sitting silent.
    status = err.status("opening the index and loading the embedding model…") if err.is_terminal else nullcontext()
    try:
        with status:
            idx = DragKneeIndex(**kwargs)
    except (DragKneeError, ImportError, KeyboardInterrupt):
        raise
    except Exception as exc:
        # The engines raise assorted errors (JSON, SQLite, Rust panics) on a folder they cannot
        # read; for the user they all mean the same thing.
        if folder is None:
            raise CliError(
                f"Cannot open collection {collection!r} at {where} ({type(exc).__name__}: {exc}); "
                "check the URL, the API key and that the server is running."
            ) from None
        raise CliError(
            f"Cannot open the index at {where}: it is damaged or not a drag-knee index "
            f"({type(exc).__name__}: {exc}). Move the folder aside and run `drag-knee ingest` again, "
            "or point --index at another folder."
        ) from None
    return _match_language(idx, kwargs, language)


def _match_language(idx: Any, kwargs: Dict[str, Any], language: Optional[Language]) -> Any:
    """Use the BM25 language the collection was built with (a query stemmed for another language
    matches nothing). Reopen with it when the user did not choose one; refuse a conflicting one."""
    from . import DragKneeIndex

    try:
        stored = str(idx.store.collection_info().get("sparse_model") or "")
    except Exception:  # no metadata to compare with: keep what we have
        return idx
    current = str(getattr(idx.encoder, "sparse_model", ""))
    if not stored or stored == current or ":" not in stored:
        return idx
    stored_language = stored.rsplit(":", 1)[1]
    if language is not None:
        idx.close()
        raise CliError(
            f"This collection was built with BM25 language {stored_language!r}, not {language.value!r}; "
            f"use --language {stored_language} or another --collection."
        )
    if stored_language not in {m.value for m in Language}:
        return idx
    log.info("collection uses BM25 language %s; reopening with it", stored_language)
    idx.close()
    return DragKneeIndex(**{**kwargs, "language": stored_language})


def _where(index: Optional[Path], url: Optional[str]) -> str:
    folder, url = _index_location(index, url)
    return url if url else str(folder.resolve())


# -- progress ---------------------------------------------------------------------------------


class PhaseProgress:
    """A progress bar per phase on a terminal; one line per finished phase otherwise.

    Used as the ``progress(phase, done, total)`` callback of the loaders and of
    ``DragKneeIndex.add_documents``.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.phase: Optional[str] = None
        self.done = 0
        self.total = 0
        self._progress: Any = None
        self._tasks: Dict[str, Any] = {}
        self._reported: set = set()

    def __enter__(self) -> "PhaseProgress":
        if self.console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description:<10}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=False,
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __call__(self, phase: str, done: int, total: int) -> None:
        self.phase, self.done, self.total = phase, done, total
        if self._progress is not None:
            if phase not in self._tasks:
                # A new phase means the earlier ones are over, even if their last tick was not sent.
                for task, task_total in self._tasks.values():
                    self._progress.update(task, completed=task_total)
                self._tasks[phase] = (self._progress.add_task(phase, total=max(total, 1)), max(total, 1))
            task, _ = self._tasks[phase]
            self._tasks[phase] = (task, max(total, 1))
            self._progress.update(task, completed=done, total=max(total, 1))
        elif done >= total and phase not in self._reported:
            self._reported.add(phase)
            self.console.print(f"{phase}: {done}/{total}", style="dim")


# -- ingest -----------------------------------------------------------------------------------


def _count(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return len(value)
    return int(value)


@app.command()
def ingest(
    paths: Annotated[List[str], typer.Argument(help="Files or folders to ingest ('-' reads standard input).", show_default=False)],
    index: IndexOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    collection: CollectionOption = "drag_knee",
    engine: EngineOption = Engine.auto,
    branching: Annotated[Optional[int], typer.Option("--branching", min=2, help="Children per parent node (default 3).", show_default=False)] = None,
    include: Annotated[Optional[List[str]], typer.Option("--include", help="Glob of files to take from folders (repeatable), e.g. '*.md'.", show_default=False)] = None,
    exclude: Annotated[Optional[List[str]], typer.Option("--exclude", help="Glob of files to leave out (repeatable), e.g. 'drafts/*'.", show_default=False)] = None,
    language: LanguageOption = None,
    stdin_name: Annotated[str, typer.Option("--stdin-name", help="Document id for text read from '-' (its suffix picks the kind, e.g. notes.md).")] = "stdin",
    strict: Annotated[bool, typer.Option("--strict", help="Fail (exit 1) if any file is skipped, instead of ingesting the rest.")] = False,
    model: ModelOption = None,
    model_path: ModelPathOption = None,
) -> None:
    """Read files (text, Markdown, PDF) and add them to the index; changed files replace their old version."""
    from .loaders import load_paths

    started = time.perf_counter()
    with PhaseProgress(err) as progress:
        report = load_paths(
            paths, include=include or (), exclude=exclude or (), stdin_name=stdin_name, progress=progress
        )
    for skipped in report.skipped:
        err.print(f"skipped {escape(skipped.path)}: {escape(skipped.reason)}", style="yellow")
    if not report.documents:
        if report.skipped:
            raise CliError(
                f"Nothing to ingest: all {len(report.skipped)} file(s) were skipped (reasons above)."
            )
        hint = " (files of other types were ignored; add them with --include GLOB)" if report.ignored else ""
        raise CliError(
            f"Nothing to ingest: no .txt, .md or .pdf files found in {', '.join(paths)}{hint}."
        )
    if strict and report.skipped:
        raise CliError(f"{len(report.skipped)} file(s) skipped and --strict was given; nothing was ingested.")

    idx = _open_index(
        index=index, url=url, api_key=api_key, collection=collection, engine=engine, model=model, model_path=model_path,
        language=language, branching=branching, must_exist=False,
    )
    progress = PhaseProgress(err)
    try:
        with progress:
            result = idx.add_documents(report.documents, progress=progress)
    except KeyboardInterrupt:
        # Close the store without being interrupted again, so what was written stays readable.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            idx.close()
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        phase = f" (last progress: {progress.phase} {progress.done}/{progress.total})" if progress.phase else ""
        raise CliError(
            f"Interrupted{phase}. The index is still usable: documents written before the interrupt are "
            "kept; run the same command again to finish (unchanged documents are skipped).",
            EXIT_INTERRUPTED,
        ) from None
    except BaseException:
        idx.close()
        raise
    idx.close()
    seconds = time.perf_counter() - started
    added, replaced, unchanged = _count(getattr(result, "added", 0)), _count(getattr(result, "replaced", 0)), _count(getattr(result, "unchanged", 0))
    nodes = _count(getattr(result, "nodes_written", 0))
    out.print(
        f"[bold green]Ingested {len(report.documents)} document(s)[/] into {escape(_where(index, url))} "
        f"(collection {escape(collection)}): {added} added, {replaced} replaced, {unchanged} unchanged; "
        f"{nodes} nodes written{f'; {report.pages} PDF pages' if report.pages else ''}; {seconds:.1f} s."
    )
    if report.skipped:
        out.print(f"[yellow]{len(report.skipped)} file(s) skipped[/] (see the messages above).")


# -- search -----------------------------------------------------------------------------------


_STRING_FIELDS = {"doc_id", "path", "source", "kind", "title"}


def parse_filter_args(items: Sequence[str]) -> Optional[Dict[str, Any]]:
    """``["kind=pdf", "kind=md", "level=1"]`` -> ``{"kind": ["pdf", "md"], "level": 1}``.

    Values that look like integers or ``true``/``false`` become int / bool, except for the fields
    the loaders always store as strings (doc_id, path, source, kind, title). Repeating a key means
    "any of these values".
    """
    if not items:
        return None
    parsed: Dict[str, List[Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CliError(f"--filter {item!r} is not KEY=VALUE; e.g. --filter kind=pdf --filter doc_id=notes.md", EXIT_USAGE)
        value: Any = raw
        if key not in _STRING_FIELDS:
            if raw.lower() in ("true", "false"):
                value = raw.lower() == "true"
            else:
                try:
                    value = int(raw)
                except ValueError:
                    value = raw
        parsed.setdefault(key, []).append(value)
    return {k: (v[0] if len(v) == 1 else v) for k, v in parsed.items()}


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
        line.append(node.doc_id, "bold cyan")
        line.append(f"  {node.span}", "magenta")
        line.append(f"  score {hit.score:.4f}", "green")
        line.append(f"  {kind}", "dim")
        if title:
            line.append(f"  “{title}”", "italic")
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


def _search_kwargs(
    method: Optional[Method], sensitivity: Optional[float], beam_width: Optional[int],
    max_roots: Optional[int], order: Optional[Order], filters: Optional[List[str]],
) -> Dict[str, Any]:
    kwargs: Dict[str, Any] = {}
    if method is not None:
        kwargs["method"] = method.value
    if sensitivity is not None:
        kwargs["sensitivity"] = sensitivity
    if beam_width is not None:
        kwargs["beam_width"] = beam_width
    if max_roots is not None:
        kwargs["max_roots"] = max_roots
    if order is not None:
        kwargs["order"] = order.value
    parsed = parse_filter_args(filters or [])
    if parsed:
        kwargs["filters"] = parsed
    return kwargs


def _ensure_not_empty(idx: Any, where: str) -> None:
    if not idx.list_documents():
        raise CliError(f"The index at {where} has no documents yet; run `drag-knee ingest PATH` first.")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.", show_default=False)],
    method: Annotated[Optional[Method], typer.Option("--method", "-m", help="knee (default), sensitive_knee, fixed or branch.", show_default=False)] = None,
    sensitivity: Annotated[Optional[float], typer.Option("--sensitivity", help="For sensitive_knee: in (0, 1]; smaller keeps more (default 0.85).", show_default=False)] = None,
    beam_width: Annotated[Optional[int], typer.Option("--beam-width", help="For fixed: nodes kept per step (default 3).", show_default=False)] = None,
    max_roots: Annotated[Optional[int], typer.Option("--max-roots", help="Documents ranked at the first step (default 20).", show_default=False)] = None,
    order: Annotated[Optional[Order], typer.Option("--order", help="Results by score (default) or by document position.", show_default=False)] = None,
    filter_: Annotated[Optional[List[str]], typer.Option("--filter", help="KEY=VALUE on document metadata or doc_id (repeatable; a repeated key means any of).", show_default=False)] = None,
    trace: Annotated[bool, typer.Option("--trace", help="Draw the walk: candidates per step, kept / suppressed / cut, the knee.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the SearchResult as JSON (with its trace) for scripts.")] = False,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the score curve of every step, knee marked, to a .png/.svg/.pdf file (needs the plot extra).", show_default=False)] = None,
    chars: Annotated[int, typer.Option("--chars", help="Snippet length in characters (0: the whole text).")] = 240,
    index: IndexOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    collection: CollectionOption = "drag_knee",
    engine: EngineOption = Engine.auto,
    model: ModelOption = None,
    model_path: ModelPathOption = None,
) -> None:
    """Search the index and print the results (with --trace: why they were chosen)."""
    if not query.strip():
        raise CliError("The query is empty; give some words to search for, e.g. drag-knee search \"tide turbines\".", EXIT_USAGE)
    if plot is not None and plot.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise CliError(f"--plot {plot}: use a file name ending in .png, .svg or .pdf.", EXIT_USAGE)
    kwargs = _search_kwargs(method, sensitivity, beam_width, max_roots, order, filter_)
    idx = _open_index(index=index, url=url, api_key=api_key, collection=collection, engine=engine, model=model,
                      model_path=model_path, must_exist=True)
    try:
        # The per-side (dense / BM25) ranks are shown only in a trace or JSON: ask for them then.
        explained = idx.search_config.with_overrides(explain=True) if (trace or as_json) else None
        result = idx.search(query, config=explained, **kwargs)
        if not result.nodes:
            # Only now look at the whole index: listing it on every search would cost a scan.
            _ensure_not_empty(idx, _where(index, url))
    finally:
        idx.close()
    if plot is not None:
        from .render import plot_trace

        plot_trace(result.trace, plot)
        err.print(f"wrote the knee plot to {escape(str(plot))}")
    if as_json:
        typer.echo(result.to_json(indent=2))
        return
    print_results(result, chars=chars)
    if trace:
        from .render import trace_tree

        out.print()
        out.print(trace_tree(result.trace))


# -- docs, stats --------------------------------------------------------------------------------


@docs_app.command("list")
def docs_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
    index: IndexOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    collection: CollectionOption = "drag_knee",
    engine: EngineOption = Engine.auto,
) -> None:
    """List the indexed documents: id, kind, leaves (pages or sections/paragraphs), title."""
    idx = _open_index(index=index, url=url, api_key=api_key, collection=collection, engine=engine, must_exist=True)
    try:
        infos = idx.list_documents()
    finally:
        idx.close()
    if as_json:
        typer.echo(json.dumps([_info_dict(i) for i in infos], indent=2, ensure_ascii=False))
        return
    if not infos:
        err.print("The index has no documents; run `drag-knee ingest PATH` to add some.")
        return
    table = Table(title=f"{len(infos)} document(s) in {escape(_where(index, url))}", title_justify="left")
    for column, justify in (("id", "left"), ("kind", "left"), ("leaves", "right"), ("pages", "right"), ("title", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for info in infos:
        meta = dict(info.metadata or {})
        pages = f"{info.first_page}-{info.last_page}" if info.first_page is not None else ""
        table.add_row(
            escape(str(info.doc_id)), escape(str(meta.get("kind", ""))), str(info.leaves), pages,
            escape(str(meta.get("title") or "")),
        )
    out.print(table)


def _info_dict(info: Any) -> Dict[str, Any]:
    from dataclasses import asdict, is_dataclass

    return asdict(info) if is_dataclass(info) else dict(vars(info))


@docs_app.command("delete")
def docs_delete(
    doc_id: Annotated[str, typer.Argument(metavar="ID", help="Document id, as shown by `drag-knee docs list`.", show_default=False)],
    index: IndexOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    collection: CollectionOption = "drag_knee",
    engine: EngineOption = Engine.auto,
) -> None:
    """Delete one document (its whole tree) from the index."""
    idx = _open_index(index=index, url=url, api_key=api_key, collection=collection, engine=engine, must_exist=True)
    try:
        deleted = idx.delete_document(doc_id)
    finally:
        idx.close()
    if not deleted:
        raise CliError(f"No document {doc_id!r} in the index; see `drag-knee docs list` for the ids.")
    out.print(f"Deleted {escape(doc_id)}.")


@app.command()
def stats(
    as_json: Annotated[bool, typer.Option("--json", help="Print the statistics as JSON.")] = False,
    index: IndexOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    collection: CollectionOption = "drag_knee",
    engine: EngineOption = Engine.auto,
) -> None:
    """Show what the index holds: documents, nodes, model, engine, location."""
    idx = _open_index(index=index, url=url, api_key=api_key, collection=collection, engine=engine, must_exist=True)
    try:
        data = idx.stats()
    finally:
        idx.close()
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
        return
    table = Table(show_header=False, title=f"index {escape(_where(index, url))}", title_justify="left")
    table.add_column("key", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in data.items():
        shown = json.dumps(value, ensure_ascii=False, default=str) if isinstance(value, (dict, list)) else str(value)
        table.add_row(escape(str(key)), escape(shown))
    out.print(table)


# -- demo -------------------------------------------------------------------------------------


@app.command()
def demo(
    method: Annotated[Method, typer.Option("--method", "-m", help="Search method for the example queries.")] = Method.knee,
    query: Annotated[Optional[List[str]], typer.Option("--query", "-q", help="Your own query instead of the two examples (repeatable).", show_default=False)] = None,
    trace: Annotated[bool, typer.Option("--trace/--no-trace", help="Show each query's walk.")] = True,
    engine: EngineOption = Engine.auto,
    model: ModelOption = None,
    model_path: ModelPathOption = None,
) -> None:
    """Index a small built-in sample in memory, run two example queries and show why they answered.

    Works offline: nothing is downloaded and nothing is written to disk.
    """
    from . import DragKneeIndex
    from .render import trace_tree
    from .sample import EXAMPLE_QUERIES, sample_documents

    documents = sample_documents()
    out.print(
        f"[bold]drag-knee demo[/]: indexing {len(documents)} sample documents in memory "
        f"({', '.join(d.id for d in documents)})"
    )
    _quiet_native_logs(_state["verbose"])
    kwargs: Dict[str, Any] = {}
    if engine is not Engine.auto:
        kwargs["engine"] = engine.value
    if model:
        kwargs["model_name"] = model
    if model_path is not None:
        kwargs["model_path"] = str(model_path.expanduser())
    started = time.perf_counter()
    status = err.status("loading the embedding model…") if err.is_terminal else nullcontext()
    with status:
        idx = DragKneeIndex(":memory:", **kwargs)
    with idx:
        with PhaseProgress(err) as progress:
            report = idx.add_documents(documents, progress=progress)
        out.print(
            f"indexed {len(documents)} documents, {_count(getattr(report, 'nodes_written', 0))} nodes, "
            f"in {time.perf_counter() - started:.1f} s\n"
        )
        for number, text in enumerate(query or EXAMPLE_QUERIES, start=1):
            out.rule(f"query {number}: {escape(text)}")
            result = idx.search(text, method=method.value, config=idx.search_config.with_overrides(explain=trace))
            print_results(result)
            _print_walk_only(idx, text, result)
            if trace:
                out.print()
                out.print(trace_tree(result.trace))
            out.print()
    out.print(
        "Next: [bold]drag-knee ingest ~/your/docs[/] then [bold]drag-knee search \"your question\" --trace[/] "
        "(see drag-knee --help)."
    )


def _print_walk_only(idx: Any, text: str, result: Any) -> None:
    """Show what the walk itself chose when the focus step changed it (the demo's second query:
    the walk keeps the whole document, the focus picks the paragraph that answers)."""
    from dataclasses import replace

    settings = idx.search_config.with_overrides(method=result.method)
    if not settings.focuses:
        return
    walk_only = idx.search(text, config=replace(settings, focus_pool=None))
    if [h.node.id for h in walk_only.nodes] == [h.node.id for h in result.nodes]:
        return
    chosen = ", ".join(
        f"{h.node.doc_id} {h.node.span}" + ("" if h.node.is_leaf else " (whole span)") for h in walk_only.nodes
    )
    note = (f"the walk chose {chosen}; the focus step kept the leaves above "
            "(SearchConfig(focus_pool=None) returns the walk's choice)")
    for piece in textwrap.wrap(note, width=max(40, (out.width or 80) - 3)):
        out.print(Text("   " + piece, "dim"))


# -- eval (provided by drag_knee_retriever.eval.cli) -------------------------------------------


@app.command(
    "eval",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
def eval_command(ctx: typer.Context) -> None:
    """Evaluate retrieval quality on benchmark datasets (see `drag-knee eval --help`)."""
    try:
        from .eval import cli as eval_cli  # type: ignore[attr-defined]
    except ImportError as exc:
        if exc.name and exc.name.startswith("drag_knee_retriever.eval"):
            raise CliError(
                "`drag-knee eval` is not available in this installation (drag_knee_retriever.eval.cli "
                "is missing); install the full package from source to evaluate."
            ) from None
        raise CliError(f"`drag-knee eval` needs a package that is not installed: {exc}. Try pip install 'drag-knee-retriever[all]'.") from None
    target = getattr(eval_cli, "app", None)
    if target is None:
        raise CliError("drag_knee_retriever.eval.cli defines no `app`; cannot run `drag-knee eval`.")
    command = typer.main.get_command(target) if isinstance(target, typer.Typer) else target
    if not callable(getattr(command, "main", None)):
        raise CliError("drag_knee_retriever.eval.cli.app is not a typer or click app; cannot run `drag-knee eval`.")
    try:
        code = command.main(args=list(ctx.args), prog_name="drag-knee eval", standalone_mode=False)
    except Exception as exc:
        # A plain click app raises click's own exception classes: show them the way click would.
        if callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            raise typer.Exit(exc.exit_code) from None
        raise
    if isinstance(code, int) and code != 0:
        raise typer.Exit(code)


# -- top level --------------------------------------------------------------------------------

_state: Dict[str, Any] = {"verbose": 0, "debug": False}


@app.callback()
def _root(
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More log output (-vv for debug).")] = 0,
    debug: Annotated[bool, typer.Option("--debug", envvar=DEBUG_ENV, help="Show tracebacks (for bug reports).")] = False,
) -> None:
    _state["verbose"] = max(_state["verbose"], verbose)
    _state["debug"] = _state["debug"] or debug
    configure_logging(_state["verbose"])


_NOISY_LOGGERS = (
    "qdrant_client", "qdrant_edge", "fastembed", "httpx", "httpcore", "urllib3", "pypdf",
    "huggingface_hub", "onnxruntime", "drag_knee_retriever.loaders",
)


def configure_logging(verbose: int = 0) -> None:
    """Warnings from this library on stderr; third-party chatter only with -v, everything with -vv."""
    level = logging.DEBUG if verbose >= 2 else logging.INFO if verbose == 1 else logging.WARNING
    root = logging.getLogger()
    if not any(getattr(h, "_drag_knee", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("drag-knee: %(levelname)s: %(message)s"))
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


def _os_error_message(exc: OSError) -> str:
    name = getattr(exc, "filename", None)
    reason = exc.strerror or str(exc)
    if isinstance(exc, PermissionError):
        return f"Permission denied: {name or ''}; check the permissions, or choose another --index folder.".replace(": ;", ";")
    if getattr(exc, "errno", None) == 28:
        return f"No space left on the device{f' ({name})' if name else ''}; free some space and run the command again."
    return f"{reason}{f': {name}' if name else ''}."


def _click_class(name: str) -> type:
    # Typer >= 0.20 vendors its own copy of click; earlier versions use click itself. Take the
    # classes from typer's public exceptions so both work.
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == name:
            return cls
    raise RuntimeError(f"typer.BadParameter has no {name} base")  # pragma: no cover


_CLICK_ERROR = _click_class("ClickException")
_EXIT = typer.Exit
_ABORT = typer.Abort


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of the ``drag-knee`` script: run the app, turn every known failure into one line."""
    _state["debug"] = os.environ.get(DEBUG_ENV, "").lower() in ("1", "true", "yes")
    configure_logging(0)
    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = command.main(args=args, prog_name="drag-knee", standalone_mode=False)
    except _EXIT as exc:  # pragma: no cover - returned, not raised, in non-standalone mode
        code = exc.exit_code
    except _CLICK_ERROR as exc:  # bad options or arguments: exit code 2
        code = exc.exit_code
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show(file=sys.stderr)  # a bare `drag-knee` or `drag-knee docs`: show the help
        else:
            ctx = getattr(exc, "ctx", None)
            hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            _fail(f"{exc.format_message()}{hint}", code, exc)
    except (_ABORT, KeyboardInterrupt):
        err.print("drag-knee: interrupted.", style="red")
        code = EXIT_INTERRUPTED
    except CliError as exc:
        code = _fail(str(exc), exc.code, exc)
    except DragKneeError as exc:
        code = _fail(str(exc), EXIT_ERROR, exc)
    except ImportError as exc:
        code = _fail(str(exc), EXIT_ERROR, exc)
    except OSError as exc:
        code = _fail(_os_error_message(exc), EXIT_ERROR, exc)
    except Exception as exc:  # a bug: still one line, with the way to get the details
        code = _fail(
            f"unexpected {type(exc).__name__}: {exc} (run with --debug for the traceback and please report it).",
            EXIT_ERROR,
            exc,
        )
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int, exc: BaseException) -> int:
    if _state["debug"]:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    # One line: messages may quote multi-line library errors; keep the first meaningful line.
    line = " ".join(message.split())
    err.print(f"drag-knee: error: {escape(line)}", style="red", soft_wrap=True)
    return code


if __name__ == "__main__":
    main()
