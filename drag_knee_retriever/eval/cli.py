"""``drag-knee eval``: run the evaluation harness from the command line.

``app`` is a one-command typer app; the main ``drag-knee`` CLI forwards ``drag-knee eval ...`` to
it, and ``python -m drag_knee_retriever.eval ...`` runs it directly. Needs the ``cli`` extra
(typer, rich); the plot needs the ``plot`` extra (matplotlib).

    drag-knee eval --dataset covidqa --out runs/covidqa --limit-docs 20
    drag-knee eval --dataset hotpotqa --out runs/hotpot --json | jq .headline
    drag-knee eval --dataset financebench --out runs/fb            # all filings in one store
    drag-knee eval --dataset financebench --single --out runs/fb1  # each question in its own filing
    drag-knee eval --corpus docs/ --questions questions.jsonl --out runs/mine   # your own data

The questions file format (one JSON object per line, gold as documents, pages or passages) is
described in :mod:`drag_knee_retriever.eval.own`.
"""

from __future__ import annotations

import enum
import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any, List, Optional

import typer

from ..errors import DragKneeError
from .datasets import DatasetError

log = logging.getLogger(__name__)


class DatasetName(str, enum.Enum):
    covidqa = "covidqa"
    xquad_en = "xquad-en"
    xquad_ru = "xquad-ru"
    hotpotqa = "hotpotqa"
    mmlongbench = "mmlongbench"
    qmsum = "qmsum"
    financebench = "financebench"


app = typer.Typer(add_completion=False, help="Evaluate DRAG with KNEE against flat and hierarchical baselines.")


@app.command("eval")
def eval_command(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for table.md, summary.json, questions.jsonl and the plot.")],
    dataset: Annotated[Optional[DatasetName], typer.Option("--dataset", "-d", help="Which benchmark dataset to evaluate on.")] = None,
    corpus: Annotated[Optional[List[Path]], typer.Option("--corpus", help="Your own documents: a folder or files (repeatable); needs --questions.")] = None,
    questions: Annotated[Optional[Path], typer.Option("--questions", help="JSON Lines: {\"question\": ..., \"gold\": [documents, pages or passages]} per line.")] = None,
    language: Annotated[str, typer.Option("--language", help="BM25 language of your corpus: english or russian.")] = "english",
    limit_docs: Annotated[Optional[int], typer.Option("--limit-docs", min=1, help="Keep the first N documents.")] = None,
    limit_questions: Annotated[Optional[int], typer.Option("--limit-questions", min=1, help="Keep N questions, evenly spread over those on kept documents.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object (summary + headline) to stdout.")] = False,
    methods: Annotated[Optional[List[str]], typer.Option("--method", "-m", help="Only methods matching this glob (repeatable), e.g. 'flat_hybrid_*'.")] = None,
    build: Annotated[Optional[str], typer.Option("--build", help="BuildConfig of the main index as key=value,... e.g. 'inner_vectors=summary,branching=4'.")] = None,
    build_variants: Annotated[Optional[List[str]], typer.Option("--build-variant", help="Extra index for DRAG/collapsed methods (repeatable), e.g. 'inner_vectors=centroid'.")] = None,
    automerging_k: Annotated[Optional[List[int]], typer.Option("--automerging-k", help="AutoMergingRetriever similarity_top_k (repeatable; default 6).")] = None,
    traces: Annotated[int, typer.Option("--traces", min=0, help="Save DRAG traces of the first N questions to traces.jsonl.")] = 0,
    datasets_dir: Annotated[Optional[Path], typer.Option("--datasets", help="Datasets folder (default: $DRAG_KNEE_DATASETS).")] = None,
    model_path: Annotated[Optional[str], typer.Option("--model-path", help="fastembed-ready dense model folder.")] = None,
    embedding_cache: Annotated[Optional[Path], typer.Option("--embedding-cache", help="Keep passage vectors in this folder between runs (same model => same vectors).")] = None,
    engine: Annotated[str, typer.Option("--engine", help="Store engine: auto, edge or local.")] = "auto",
    index_dir: Annotated[Optional[Path], typer.Option("--index-dir", help="Keep each build's index in this folder and reuse it next run (unchanged documents are skipped); delete it after changing the build code.")] = None,
    plot: Annotated[bool, typer.Option("--plot/--no-plot", help="Write recall_vs_tokens.png (needs matplotlib).")] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
    max_doc_pages: Annotated[Optional[int], typer.Option("--max-doc-pages", min=1, help="mmlongbench: only documents of at most N pages (a cheaper run).")] = None,
    shared_store: Annotated[Optional[bool], typer.Option("--shared-store/--single", help="mmlongbench / qmsum / financebench: index every document and search them all, or filter each question to its own document (default: --single for mmlongbench and qmsum, --shared-store for financebench).")] = None,
) -> None:
    """Evaluate every retriever on one dataset; write the table, raw JSON and a recall-vs-tokens plot."""
    from .runner import parse_build_variant, progress_log, run_eval

    if not quiet and not sys.stderr.isatty() and not progress_log.handlers:
        # Without a terminal there are no bars: progress goes to stderr as log lines.
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        progress_log.addHandler(handler)
        progress_log.setLevel(logging.INFO)
        progress_log.propagate = False
    if (dataset is None) == (not corpus):
        typer.echo("drag-knee eval: give either --dataset NAME or --corpus DIR --questions FILE.jsonl.", err=True)
        raise typer.Exit(2)
    if corpus and questions is None:
        typer.echo("drag-knee eval: --corpus needs --questions FILE.jsonl (one question and its gold per line).", err=True)
        raise typer.Exit(2)
    try:
        base_build = parse_build_variant(build).build if build else None
        variants = [parse_build_variant(v) for v in (build_variants or [])]
        if corpus:
            from .own import load_own_dataset

            if language not in ("english", "russian"):
                raise DatasetError(f"--language must be english or russian, got {language!r}.")
            target: Any = load_own_dataset(corpus, questions, build=base_build, language=language)  # type: ignore[arg-type]
        else:
            target = dataset.value  # type: ignore[union-attr]
        report = run_eval(
            target, out, limit_docs=limit_docs, limit_questions=limit_questions, methods=methods or None,
            datasets_root=datasets_dir, build=base_build, build_variants=variants,
            automerging_top_ks=tuple(automerging_k or (6,)), model_path=model_path, engine=engine,
            embedding_cache=embedding_cache, traces=traces, progress=not quiet, plot=plot,
            shared_store=shared_store, max_doc_pages=max_doc_pages, index_dir=index_dir,
            **(ctx.obj if isinstance(ctx.obj, dict) else {}),
        )
    except (DragKneeError, DatasetError, ValueError, RuntimeError, ImportError) as exc:
        typer.echo(f"drag-knee eval: {exc}", err=True)
        raise typer.Exit(1)
    if json_output:
        payload = report.to_json_dict()
        typer.echo(json.dumps({k: payload[k] for k in ("dataset", "summary", "headline", "files", "meta")},
                              ensure_ascii=False))
        return
    from .report import headline_markdown

    typer.echo(f"{report.dataset}: {report.meta['dataset']['questions']} questions, "
               f"{report.meta['dataset']['leaves']} leaves, {report.meta['seconds']} s")
    typer.echo(headline_markdown(report.headline))
    typer.echo(f"table: {report.files.get('table')}  plot: {report.files.get('plot', '-')}")


def main(argv: Optional[List[str]] = None, **run_kwargs: Any) -> int:
    """Entry point of ``python -m drag_knee_retriever.eval``. ``run_kwargs`` go to :func:`run_eval`
    as they are (benchmarks/prototypes.py passes ``extra_methods=`` this way)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="drag-knee eval: %(levelname)s: %(message)s")
    command = typer.main.get_command(app)
    try:
        command.main(args=argv if argv is not None else sys.argv[1:], prog_name="python -m drag_knee_retriever.eval",
                     standalone_mode=True, obj=run_kwargs or None)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0
