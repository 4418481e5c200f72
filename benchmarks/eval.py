"""Evaluate on a benchmark dataset: the library's ``drag-knee eval`` run on a dataset loaded here.

    python benchmarks/eval.py --dataset hotpotqa --out runs/hotpot --embedding-cache DIR --json
    python benchmarks/eval.py --dataset covidqa --limit-docs 30 --out runs/covidqa -m 'flat_hybrid_*' -m drag_knee
    python benchmarks/eval.py --dataset mmlongbench --max-doc-pages 20 --out runs/mmlb20
    python benchmarks/eval.py --dataset financebench --single --index-dir DIR --out runs/fb

The dataset options are this script's (``--dataset``, ``--datasets``, ``--limit-docs``,
``--limit-questions``, ``--max-doc-pages``, ``--shared-store`` / ``--single``); every other option is that of
``drag-knee eval`` (``--help`` lists both), and the run is the library's own
(:func:`drag_knee_retriever.eval.cli.main` with the loaded dataset), so the table, JSON and plot
are those a user gets on their corpus. The loaders are :mod:`benchmarks.datasets` (one module per
dataset; adding one is one function there). Run from the repository root.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PROG = "python benchmarks/eval.py"


def dataset_options() -> argparse.ArgumentParser:
    """The options that choose and cut the benchmark dataset (the rest go to ``drag-knee eval``)."""
    from benchmarks.datasets import dataset_names

    parser = argparse.ArgumentParser(
        prog=PROG, add_help=False, allow_abbrev=False,
        usage=f"{PROG} --dataset NAME [dataset options] --out DIR [drag-knee eval options]",
        description="Dataset options (then every option of drag-knee eval, below):")
    parser.add_argument("--dataset", "-d", choices=dataset_names(), help="which benchmark dataset to evaluate on")
    parser.add_argument("--datasets", metavar="DIR", help="the datasets folder (default: $DRAG_KNEE_DATASETS)")
    parser.add_argument("--limit-docs", type=int, metavar="N", help="keep the first N documents")
    parser.add_argument("--limit-questions", type=int, metavar="N",
                        help="keep N questions, evenly spread over those on kept documents")
    parser.add_argument("--max-doc-pages", type=int, metavar="N",
                        help="mmlongbench: only documents of at most N pages (a cheaper run)")
    parser.add_argument("--shared-store", action="store_true", default=None,
                        help="mmlongbench / qmsum: index every document and search them all "
                             "(default: each question filtered to its own document; financebench: the default)")
    parser.add_argument("--single", dest="shared_store", action="store_false",
                        help="financebench: each question filtered to its own filing (default: the shared store)")
    return parser


def main(argv: Optional[Sequence[str]] = None, **run_kwargs: Any) -> int:
    """Load the dataset, then run ``drag-knee eval`` on it. ``run_kwargs`` go to ``run_eval`` as they
    are (benchmarks/prototypes.py adds its research methods this way)."""
    from drag_knee_retriever.eval.cli import main as eval_main

    from benchmarks.datasets import DatasetError, load_dataset

    args_list: List[str] = list(argv) if argv is not None else sys.argv[1:]
    parser = dataset_options()
    if any(a in ("-h", "--help") for a in args_list):
        print(parser.format_help())
        return eval_main(["--help"], prog_name=PROG)
    args, rest = parser.parse_known_args(args_list)
    if args.dataset is None:
        parser.error("--dataset NAME is required (the benchmark dataset to evaluate on)")
    if any(a.split("=")[0] in ("--corpus", "--questions") for a in rest):
        parser.error("--corpus / --questions are drag-knee eval's own-data options; run that command for your corpus")
    try:
        dataset = load_dataset(args.dataset, args.datasets, limit_docs=args.limit_docs,
                               limit_questions=args.limit_questions, max_doc_pages=args.max_doc_pages,
                               shared_store=args.shared_store)
    except DatasetError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    return eval_main(rest, prog_name=PROG, dataset=dataset, **run_kwargs)


if __name__ == "__main__":
    sys.exit(main())
