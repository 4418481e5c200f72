"""``drag-knee eval``: run the evaluation harness from the command line.

``app`` is a one-command typer app; the main ``drag-knee`` CLI forwards ``drag-knee eval ...`` to
it, and ``python -m drag_knee_retriever.eval ...`` runs it directly. Needs the ``cli`` extra
(typer, rich); the plot needs the ``plot`` extra (matplotlib).

    drag-knee eval --corpus docs/ --questions questions.jsonl --out runs/mine
    drag-knee eval --corpus docs/ --questions questions.jsonl --out runs/mine --json | jq .headline

The questions file format (one JSON object per line, gold as documents, pages or passages) is
described in :mod:`drag_knee_retriever.eval.own`. The benchmark datasets are run by the
repository's ``python benchmarks/eval.py --dataset NAME ...``: it loads the dataset and hands it to
:func:`main` (``main(argv, dataset=...)``), so every other option is this command's.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any, List, Optional

import typer

from drag_knee_retriever.errors import DragKneeError
from drag_knee_retriever.render import visible
from drag_knee_retriever.eval.dataset import DatasetError

log = logging.getLogger(__name__)


app = typer.Typer(add_completion=False, help="Evaluate DRAG with KNEE against flat and hierarchical baselines.")


@app.command("eval")
def eval_command(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for table.md, summary.json, questions.jsonl and the plot.")],
    corpus: Annotated[Optional[List[Path]], typer.Option("--corpus", help="Your own documents: a folder or files (repeatable); needs --questions.")] = None,
    questions: Annotated[Optional[Path], typer.Option("--questions", help="JSON Lines: {\"question\": ..., \"gold\": [documents, pages or passages]} per line.")] = None,
    language: Annotated[str, typer.Option("--language", help="BM25 language of your corpus: english or russian.")] = "english",
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object (summary + headline) to stdout.")] = False,
    methods: Annotated[Optional[List[str]], typer.Option("--method", "-m", help="Only methods matching this glob (repeatable), e.g. 'flat_hybrid_*'.")] = None,
    build: Annotated[Optional[str], typer.Option("--build", help="BuildConfig of the main index as key=value,... e.g. 'inner_vectors=summary,branching=4'.")] = None,
    build_variants: Annotated[Optional[List[str]], typer.Option("--build-variant", help="Extra index for DRAG/collapsed methods (repeatable), e.g. 'inner_vectors=centroid'.")] = None,
    search_variants: Annotated[Optional[List[str]], typer.Option("--search-variant", help="The default search with other SearchConfig settings (repeatable), as dotted settings, e.g. 'identity_weight=0.5,focus.identity_weight=1': method drag_knee{identity_weight=0.5,focus.identity_weight=1}.")] = None,
    automerging_k: Annotated[Optional[List[int]], typer.Option("--automerging-k", help="AutoMergingRetriever similarity_top_k (repeatable; default 6).")] = None,
    traces: Annotated[int, typer.Option("--traces", min=0, help="Save DRAG traces of the first N questions to traces.jsonl.")] = 0,
    model_path: Annotated[Optional[str], typer.Option("--model-path", help="fastembed-ready dense model folder.")] = None,
    embedding_cache: Annotated[Optional[Path], typer.Option("--embedding-cache", help="Keep passage vectors in this folder between runs (same model => same vectors).")] = None,
    engine: Annotated[str, typer.Option("--engine", help="Store engine: auto, edge or local.")] = "auto",
    index_dir: Annotated[Optional[Path], typer.Option("--index-dir", help="Keep each build's index in this folder and reuse it next run (unchanged documents are skipped); delete it after changing the build code.")] = None,
    plot: Annotated[bool, typer.Option("--plot/--no-plot", help="Write recall_vs_tokens.png (needs matplotlib).")] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Evaluate every retriever on your corpus and questions; write the table, raw JSON and a recall-vs-tokens plot."""
    from drag_knee_retriever.eval.runner import parse_build_variant, progress_log, run_eval

    if not quiet and not sys.stderr.isatty() and not progress_log.handlers:
        # Without a terminal there are no bars: progress goes to stderr as log lines.
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        progress_log.addHandler(handler)
        progress_log.setLevel(logging.INFO)
        progress_log.propagate = False
    run_kwargs = dict(ctx.obj) if isinstance(ctx.obj, dict) else {}
    given = run_kwargs.pop("dataset", None)  # a dataset the caller loaded (benchmarks/eval.py)
    if given is None and not corpus:
        typer.echo("drag-knee eval: give --corpus DIR --questions FILE.jsonl (the benchmark datasets are run by "
                   "python benchmarks/eval.py --dataset NAME, in the repository).", err=True)
        raise typer.Exit(2)
    if given is not None and corpus:
        typer.echo("drag-knee eval: a dataset was given; drop --corpus / --questions.", err=True)
        raise typer.Exit(2)
    if corpus and questions is None:
        typer.echo("drag-knee eval: --corpus needs --questions FILE.jsonl (one question and its gold per line).", err=True)
        raise typer.Exit(2)
    try:
        base_build = parse_build_variant(build).build if build else None
        variants = [parse_build_variant(v) for v in (build_variants or [])]
        if corpus:
            from drag_knee_retriever.eval.own import load_own_dataset

            if language not in ("english", "russian"):
                raise DatasetError(f"--language must be english or russian, got {language!r}.")
            target: Any = load_own_dataset(corpus, questions, build=base_build, language=language)  # type: ignore[arg-type]
        else:
            target = given
        report = run_eval(
            target, out, methods=methods or None, build=base_build, build_variants=variants,
            automerging_top_ks=tuple(automerging_k or (6,)), model_path=model_path, engine=engine,
            embedding_cache=embedding_cache, traces=traces, progress=not quiet, plot=plot, index_dir=index_dir,
            search_variants=tuple(search_variants or ()), **run_kwargs,
        )
    except (DragKneeError, DatasetError, ValueError, RuntimeError, ImportError) as exc:
        typer.echo(f"drag-knee eval: {visible(exc, single_line=True)}", err=True)
        raise typer.Exit(1)
    if json_output:
        payload = report.to_json_dict()
        typer.echo(json.dumps({k: payload[k] for k in ("dataset", "summary", "headline", "files", "meta")},
                              ensure_ascii=False))
        return
    from drag_knee_retriever.eval.report import headline_markdown

    # Names from the user's files on one line each (a corpus folder named "a\nb" forges no line).
    typer.echo(f"{visible(report.dataset, single_line=True)}: {report.meta['dataset']['questions']} questions, "
               f"{report.meta['dataset']['leaves']} leaves, {report.meta['seconds']} s")
    typer.echo(headline_markdown(report.headline))
    typer.echo(f"table: {visible(report.files.get('table'), single_line=True)}  "
               f"plot: {visible(report.files.get('plot', '-'), single_line=True)}")


def main(argv: Optional[List[str]] = None, *, prog_name: str = "python -m drag_knee_retriever.eval",
         **run_kwargs: Any) -> int:
    """Entry point of ``python -m drag_knee_retriever.eval``. ``run_kwargs`` go to :func:`run_eval`
    as they are (benchmarks/prototypes.py passes ``extra_methods=`` this way); ``dataset=`` (an
    :class:`~drag_knee_retriever.eval.dataset.EvalDataset`) is evaluated instead of ``--corpus``
    (benchmarks/eval.py passes the benchmark dataset it loaded)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="drag-knee eval: %(levelname)s: %(message)s")
    command = typer.main.get_command(app)
    try:
        command.main(args=argv if argv is not None else sys.argv[1:], prog_name=prog_name,
                     standalone_mode=True, obj=run_kwargs or None)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0
