"""The commands: ingest, search, docs list / delete / gc, stats, demo, eval (delegated to
:mod:`drag_knee_retriever.eval.cli`). Rendering lives in :mod:`.output`, index opening in
:mod:`.index`, the exception -> exit code mapping in :mod:`.errors`."""

from __future__ import annotations

import json
import signal
import textwrap
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any, Dict, List, Optional, Sequence

import typer
from rich.table import Table
from rich.text import Text

from drag_knee_retriever.config import SEARCH_OPTIONS
from drag_knee_retriever.errors import CliError
from drag_knee_retriever.cli.index import index_exists, ocr_cache_dir, open_index, where
from drag_knee_retriever.cli.options import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    ApiKeyOption,
    CollectionOption,
    DEBUG_ENV,
    Engine,
    EngineOption,
    IndexOption,
    LanguageOption,
    Method,
    ModelOption,
    ModelPathOption,
    Ocr,
    OcrLanguagesOption,
    OcrOption,
    Order,
    UrlOption,
    app,
    docs_app,
    state,
)
from drag_knee_retriever.cli.output import PhaseProgress, configure_logging, count, err, one_line, out, print_results, quiet_native_logs, shown


def _print_version(value: bool) -> None:
    if value:
        from drag_knee_retriever import __version__

        typer.echo(f"drag-knee-retriever {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More log output (-vv for debug).")] = 0,
    debug: Annotated[bool, typer.Option("--debug", envvar=DEBUG_ENV, help="Show tracebacks (for bug reports).")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the package version and exit.")] = False,
) -> None:
    state["verbose"] = max(state["verbose"], verbose)
    state["debug"] = state["debug"] or debug
    configure_logging(state["verbose"])


@app.command()
def ingest(
    paths: Annotated[List[str], typer.Argument(help="Files or folders to ingest ('-' reads standard input).", show_default=False)],
    index: IndexOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    collection: CollectionOption = "drag_knee",
    engine: EngineOption = Engine.auto,
    branching: Annotated[Optional[int], typer.Option("--branching", min=2, help="Children per parent node (default 3).", show_default=False)] = None,
    passage_words: Annotated[Optional[int], typer.Option("--passage-words", min=0, help="Words per passage of a long page (default 120); 0 keeps every page one leaf.", show_default=False)] = None,
    split_pages_over: Annotated[Optional[int], typer.Option("--split-pages-over", min=1, help="Split only pages longer than this many words (default 200).", show_default=False)] = None,
    include: Annotated[Optional[List[str]], typer.Option("--include", help="Glob of files to take from folders (repeatable), e.g. '*.md'.", show_default=False)] = None,
    exclude: Annotated[Optional[List[str]], typer.Option("--exclude", help="Glob of files to leave out (repeatable), e.g. 'drafts/*'.", show_default=False)] = None,
    language: LanguageOption = None,
    stdin_name: Annotated[str, typer.Option("--stdin-name", help="Document id for text read from '-' (its suffix picks the kind, e.g. notes.md).")] = "stdin",
    strict: Annotated[bool, typer.Option("--strict", help="Fail (exit 1) at the first file that cannot be read, ingesting nothing, instead of skipping it.")] = False,
    follow_links: Annotated[bool, typer.Option("--follow-links", help="Follow links that point out of the folders given (never followed by default).")] = False,
    max_file_mb: Annotated[float, typer.Option("--max-file-mb", min=0.001, help="Skip files larger than this, before reading them.")] = 256.0,
    max_text_mb: Annotated[float, typer.Option("--max-text-mb", min=0.001, help="Skip documents whose text is larger than this (UTF-8).")] = 8.0,
    model: ModelOption = None,
    model_path: ModelPathOption = None,
    ocr: OcrOption = Ocr.auto,
    ocr_languages: OcrLanguagesOption = None,
) -> None:
    """Read files (text, Markdown, PDF) and add them to the index; changed files replace their old version."""
    from drag_knee_retriever.loaders import load_paths

    started = time.perf_counter()

    def opened() -> Any:
        return open_index(
            index=index, url=url, api_key=api_key, collection=collection, engine=engine, model=model,
            model_path=model_path, language=language, branching=branching, passage_words=passage_words,
            split_pages_over=split_pages_over, must_exist=False,
        )

    # An index that exists already is opened first: files whose size and modification time match
    # what it stored are then not read at all (a re-ingest of a folder costs what changed).
    idx = opened() if index_exists(index, url, collection) else None
    try:
        with PhaseProgress(err) as progress:
            report = load_paths(
                paths, include=include or (), exclude=exclude or (), stdin_name=stdin_name, progress=progress,
                ocr=ocr.value, ocr_languages=ocr_languages, ocr_cache_dir=ocr_cache_dir(index, url),
                strict=strict, follow_links=follow_links, max_file_bytes=int(max_file_mb * 1024 * 1024),
                max_text_bytes=int(max_text_mb * 1024 * 1024),
                stored_stamps=idx.file_stamps if idx is not None else None,
            )
        for skipped in report.skipped:
            err.print(f"skipped {shown(skipped.path)}: {shown(skipped.reason)}", style="yellow")
        if not report.documents and not report.unchanged:
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
        if idx is None:
            idx = opened()
    except BaseException:
        if idx is not None:
            idx.close()
        raise
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
    added, replaced = count(getattr(result, "added", 0)), count(getattr(result, "replaced", 0))
    unchanged = count(getattr(result, "unchanged", 0)) + len(report.unchanged)  # read and unchanged + not read
    nodes = count(getattr(result, "nodes_written", 0))
    pages_written, ingest_s = getattr(result, "pages", 0), getattr(result, "seconds", 0.0)
    rate = f" ({pages_written} pages at {pages_written / ingest_s:.1f} pages/s)" if pages_written and ingest_s else ""
    out.print(
        f"[bold green]Ingested {len(report.documents) + len(report.unchanged)} document(s)[/] into {shown(where(index, url))} "
        f"(collection {shown(collection)}): {added} added, {replaced} replaced, {unchanged} unchanged; "
        f"{nodes} nodes written{rate}{f'; {report.pages} PDF pages' if report.pages else ''}; {seconds:.1f} s."
    )
    if report.skipped:
        out.print(f"[yellow]{len(report.skipped)} file(s) skipped[/] (see the messages above).")


# -- search -----------------------------------------------------------------------------------


_STRING_FIELDS = {"doc_id", "path", "source", "kind", "title"}


def parse_filter_args(items: Sequence[str]) -> Optional[Dict[str, Any]]:
    """``["kind=pdf", "kind=md", "level=1"]`` -> ``{"kind": ["pdf", "md"], "level": 1}``.

    An item starting with ``{`` is a JSON object in the Python filter dialect (``$gte``, ``$in``,
    ``$or``, ``$and``, ``$not`` ...: :mod:`drag_knee_retriever.store.filters`); several items must
    all hold.

    Values that look like integers or ``true``/``false`` become int / bool, except for the fields
    the loaders always store as strings (doc_id, path, source, kind, title). Repeating a key means
    "any of these values".
    """
    if not items:
        return None
    parsed: Dict[str, List[Any]] = {}
    documents: List[Any] = []  # --filter '{"year": {"$gte": 2020}}': the Python dialect, as JSON
    for item in items:
        if item.lstrip().startswith("{"):
            try:
                value = json.loads(item)
            except json.JSONDecodeError as exc:
                raise CliError(f"--filter {item!r} is not valid JSON ({exc.msg} at character {exc.pos}); e.g. "
                               "--filter '{\"year\": {\"$gte\": 2020}}'", EXIT_USAGE) from None
            if not isinstance(value, dict):
                raise CliError(f"--filter {item!r}: a JSON filter is an object, e.g. '{{\"kind\": \"pdf\"}}'.", EXIT_USAGE)
            documents.append(value)
            continue
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
    simple = {k: (v[0] if len(v) == 1 else v) for k, v in parsed.items()}
    parts = ([simple] if simple else []) + documents
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _search_kwargs(params: Dict[str, Any]) -> Dict[str, Any]:
    """``index.search``'s keywords from the ``search`` command's parameters: every option named as a
    per-search setting (:data:`~drag_knee_retriever.config.SEARCH_OPTIONS`: ``--method``, ``--beam-width``,
    ...) goes through under its own name, so a new setting needs only its option here; the CLI's own
    spellings are ``--top-k`` (max_results), ``--score-threshold`` (min_score) and ``--filter``."""
    kwargs: Dict[str, Any] = {}
    for name, value in params.items():
        if name in SEARCH_OPTIONS and value is not None:
            kwargs[name] = getattr(value, "value", value)  # an option's Enum -> the setting's string
    if params.get("top_k") is not None:
        kwargs["max_results"] = params["top_k"]
    if params.get("score_threshold") is not None:
        kwargs["min_score"] = params["score_threshold"]
    parsed = parse_filter_args(params.get("filter_") or [])
    if parsed:
        kwargs["filters"] = parsed
    return kwargs


def _ensure_not_empty(idx: Any, where: str) -> None:
    if not idx.list_documents():
        raise CliError(f"The index at {where} has no documents yet; run `drag-knee ingest PATH` first.")


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.", show_default=False)],
    method: Annotated[Optional[Method], typer.Option("--method", "-m", help="knee (default), sensitive_knee, fixed or branch.", show_default=False)] = None,
    sensitivity: Annotated[Optional[float], typer.Option("--sensitivity", help="For sensitive_knee and branch: in (0, 1]; smaller keeps more (default 0.85).", show_default=False)] = None,
    beam_width: Annotated[Optional[int], typer.Option("--beam-width", help="For fixed: nodes kept per step (default 3).", show_default=False)] = None,
    max_roots: Annotated[Optional[int], typer.Option("--max-roots", help="Documents ranked at the first step (default 20).", show_default=False)] = None,
    order: Annotated[Optional[Order], typer.Option("--order", help="Results by score (default) or by document position.", show_default=False)] = None,
    filter_: Annotated[Optional[List[str]], typer.Option("--filter", help="KEY=VALUE on document metadata or doc_id (repeatable; a repeated key means any of), or a JSON object in the Python dialect: '{\"year\": {\"$gte\": 2020}}', '{\"$or\": [...]}'.", show_default=False)] = None,
    top_k: Annotated[Optional[int], typer.Option("--top-k", "-k", help="At most this many results (a cap: the method still decides how many up to it).", show_default=False)] = None,
    score_threshold: Annotated[Optional[float], typer.Option("--score-threshold", help="Drop results scoring below this (scores are in [0, 1], higher is better).", show_default=False)] = None,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", help="Word budget for the results: the best evidence in order until N words (whole pages where passages cluster).", show_default=False)] = None,
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
    if max_tokens is not None and max_tokens < 1:
        raise CliError(f"--max-tokens {max_tokens}: give a word budget of at least 1, e.g. --max-tokens 1500.", EXIT_USAGE)
    kwargs = _search_kwargs(ctx.params)
    with open_index(index=index, url=url, api_key=api_key, collection=collection, engine=engine, model=model,
                   model_path=model_path, must_exist=True) as idx:
        # The per-side (dense / BM25) ranks are shown only in a trace or JSON: ask for them then.
        explained = idx.search_config.with_overrides(explain=True) if (trace or as_json) else None
        result = idx.search(query, config=explained, **kwargs)
        if not result.nodes:
            # Only now look at the whole index: listing it on every search would cost a scan.
            _ensure_not_empty(idx, where(index, url))
    if plot is not None:
        from drag_knee_retriever.render import plot_trace

        plot_trace(result.trace, plot)
        err.print(f"wrote the knee plot to {shown(plot)}")
    if as_json:
        typer.echo(result.to_json(indent=2))
        return
    print_results(result, chars=chars)
    if trace:
        from drag_knee_retriever.render import trace_tree

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
    with open_index(index=index, url=url, api_key=api_key, collection=collection, engine=engine,
                    must_exist=True) as idx:
        infos = idx.list_documents()
    if as_json:
        typer.echo(json.dumps([_info_dict(i) for i in infos], indent=2, ensure_ascii=False))
        return
    if not infos:
        err.print("The index has no documents; run `drag-knee ingest PATH` to add some.")
        return
    table = Table(title=f"{len(infos)} document(s) in {shown(where(index, url))}", title_justify="left")
    for column, justify in (("id", "left"), ("kind", "left"), ("leaves", "right"), ("pages", "right"), ("title", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for info in infos:
        meta = dict(info.metadata or {})
        pages = f"{info.first_page}-{info.last_page}" if info.first_page is not None else ""
        table.add_row(
            shown(info.doc_id), shown(meta.get("kind", "")), str(info.leaves), pages,
            shown(meta.get("title") or ""),
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
    with open_index(index=index, url=url, api_key=api_key, collection=collection, engine=engine,
                    must_exist=True) as idx:
        deleted = idx.delete_document(doc_id)
    if not deleted:
        raise CliError(f"No document {doc_id!r} in the index; see `drag-knee docs list` for the ids.")
    out.print(f"Deleted {shown(doc_id)}.")


@docs_app.command("gc")
def docs_gc(
    index: IndexOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    collection: CollectionOption = "drag_knee",
    engine: EngineOption = Engine.auto,
) -> None:
    """Remove rootless leftovers of an interrupted ingest or delete (no search reaches them).

    On a shared server, run it while nobody is ingesting: a tree being written is rootless too.
    """
    with open_index(index=index, url=url, api_key=api_key, collection=collection, engine=engine,
                    must_exist=True) as idx:
        sweep = idx.sweep_orphans()
    if not sweep.doc_ids:
        out.print("No orphaned nodes; nothing to remove.")
        return
    out.print(f"Removed {sweep.nodes} orphaned node(s) of {len(sweep.doc_ids)} document(s): "
              f"{', '.join(shown(d) for d in sweep.doc_ids)}.")


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
    with open_index(index=index, url=url, api_key=api_key, collection=collection, engine=engine,
                    must_exist=True) as idx:
        data = idx.stats()
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
        return
    table = Table(show_header=False, title=f"index {shown(where(index, url))}", title_justify="left")
    table.add_column("key", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in data.items():
        value_text = json.dumps(value, ensure_ascii=False, default=str) if isinstance(value, (dict, list)) else str(value)
        table.add_row(shown(key), shown(value_text))
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
    from drag_knee_retriever.facade._index import DragKneeIndex
    from drag_knee_retriever.render import trace_tree
    from drag_knee_retriever.sample import EXAMPLE_QUERIES, sample_documents

    documents = sample_documents()
    out.print(
        f"[bold]drag-knee demo[/]: indexing {len(documents)} sample documents in memory "
        f"({', '.join(d.id for d in documents)})"
    )
    quiet_native_logs(state["verbose"])
    from drag_knee_retriever.config import EmbeddingConfig, StoreConfig

    embedding = EmbeddingConfig(**({"model_name": model} if model else {}),
                                **({"model_path": str(model_path.expanduser())} if model_path is not None else {}))
    store = StoreConfig(engine=engine.value) if engine is not Engine.auto else None
    started = time.perf_counter()
    status = err.status("loading the embedding model…") if err.is_terminal else nullcontext()
    with status:
        idx = DragKneeIndex(":memory:", embedding=embedding, store=store)
    with idx:
        with PhaseProgress(err) as progress:
            report = idx.add_documents(documents, progress=progress)
        out.print(
            f"indexed {len(documents)} documents, {count(getattr(report, 'nodes_written', 0))} nodes, "
            f"in {time.perf_counter() - started:.1f} s\n"
        )
        for number, text in enumerate(query or EXAMPLE_QUERIES, start=1):
            out.rule(f"query {number}: {shown(text)}")
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

    from drag_knee_retriever.search._traversal import focuses

    settings = idx.search_config.with_overrides(method=result.method)
    if not focuses(settings):
        return
    walk_only = idx.search(text, config=replace(settings, focus=None))
    if [h.node.id for h in walk_only.nodes] == [h.node.id for h in result.nodes]:
        return
    chosen = ", ".join(
        f"{one_line(h.node.doc_id)} {h.node.span}" + ("" if h.node.is_leaf else " (whole span)") for h in walk_only.nodes
    )
    note = (f"the walk chose {chosen}; the focus step kept the leaves above "
            "(SearchConfig(focus=None) returns the walk's choice)")
    for piece in textwrap.wrap(note, width=max(40, (out.width or 80) - 3)):
        out.print(Text("   " + piece, "dim"))


# -- eval (provided by drag_knee_retriever.eval.cli) -------------------------------------------


@app.command(
    "eval",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
def eval_command(ctx: typer.Context) -> None:
    """Evaluate retrieval quality on your corpus and questions (see `drag-knee eval --help`)."""
    try:
        from drag_knee_retriever.eval import cli as eval_cli  # type: ignore[attr-defined]
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


