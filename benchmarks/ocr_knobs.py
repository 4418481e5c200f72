"""OCR speed knobs on real image-only slide pages (MMLongBench-Doc's pdfs_image_only/), one run.

Every configuration reads the same sample of pages (the middle page of each of the 20 decks by
default), in the same run, so the machine's load hits them alike; speed is reported as seconds
a page (wall clock, ``--workers`` at once) and as a ratio against the issue's baseline
(pytesseract, scale 2, colour, Tesseract's own OpenMP threads). Quality per knob is measured by
benchmarks/ocr_mmlongbench.py (page recall on the questions); here only the characters read are
printed, as a sanity check. Nothing of the dataset's text is written.

    nice -n 10 python benchmarks/ocr_knobs.py [--pages-per-doc 1] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drag_knee_retriever.build._ocr import OcrConfig, check_engine, recognize, render_page  # noqa: E402

# $DRAG_KNEE_DATASETS, else ../shared/datasets beside the checkout.
DATASETS = Path(os.environ.get("DRAG_KNEE_DATASETS") or Path(__file__).resolve().parents[1].parent / "shared" / "datasets")
PDFS = DATASETS / "mmlongbench_doc" / "raw" / "pdfs_image_only"


def sample_pages(per_doc: int):
    import pypdfium2 as pdfium

    out = []
    for path in sorted(PDFS.glob("*.pdf")):
        n = len(pdfium.PdfDocument(str(path)))
        picks = sorted({min(n - 1, (k + 1) * n // (per_doc + 1)) for k in range(per_doc)})
        out.extend((path, i) for i in picks)
    return out


def run_cli(pages, config: OcrConfig, workers: int):
    """The library's path: render in this thread, engine processes fed PNM on stdin."""
    import pypdfium2 as pdfium

    cmd = check_engine(config)
    started = time.perf_counter()
    chars = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = []
        docs = {}
        for path, index in pages:
            pdf = docs.setdefault(path, pdfium.PdfDocument(str(path)))
            futures.append(pool.submit(recognize, render_page(pdf, index, config), config, cmd))
        for f in futures:
            chars += len(f.result().text)
    return time.perf_counter() - started, chars


def run_pytesseract(pages, scale: float, workers: int, omp_one: bool):
    """The issue's path: pytesseract (PNG written to a temp file per page), colour render."""
    import pypdfium2 as pdfium
    import pytesseract

    if omp_one:
        os.environ["OMP_THREAD_LIMIT"] = "1"
    else:
        os.environ.pop("OMP_THREAD_LIMIT", None)
    started = time.perf_counter()
    chars = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = []
        docs = {}
        for path, index in pages:
            pdf = docs.setdefault(path, pdfium.PdfDocument(str(path)))
            image = pdf[index].render(scale=scale).to_pil()
            futures.append(pool.submit(pytesseract.image_to_string, image, lang="eng"))
        for f in futures:
            chars += len(f.result())
    os.environ.pop("OMP_THREAD_LIMIT", None)
    return time.perf_counter() - started, chars


def cpu_seconds() -> float:
    """CPU time of this process (rendering) and of its finished children (the engine processes).

    On a machine shared with other jobs, wall time depends on their load; CPU time per page does
    not (much), and CPU seconds / 2 is the wall time a page costs on 2 free cores at 2 workers.
    """
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages-per-doc", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    pages = sample_pages(args.pages_per_doc)
    w = args.workers
    configs = [
        ("pytesseract scale 2 colour, OpenMP default (issue)", lambda: run_pytesseract(pages, 2.0, w, False)),
        ("pytesseract scale 2 colour, OMP_THREAD_LIMIT=1", lambda: run_pytesseract(pages, 2.0, w, True)),
        ("stdin PNM scale 2 colour", lambda: run_cli(pages, OcrConfig(scale=2.0, grayscale=False), w)),
        ("stdin PNM scale 2 grey", lambda: run_cli(pages, OcrConfig(scale=2.0), w)),
        ("stdin PNM scale 4/3 grey (default)", lambda: run_cli(pages, OcrConfig(), w)),
        ("stdin PNM scale 4/3 grey, 1 worker", lambda: run_cli(pages, OcrConfig(), 1)),
        ("stdin PNM scale 1 grey", lambda: run_cli(pages, OcrConfig(scale=1.0), w)),
        ("stdin PNM scale 4/3 grey binarised (Otsu)", lambda: run_cli(pages, OcrConfig(binarize=True), w)),
        ("stdin PNM scale 4/3 grey --psm 11 (sparse)", lambda: run_cli(pages, OcrConfig(psm=11), w)),
        ("stdin PNM scale 4/3 grey --psm 6 (one block)", lambda: run_cli(pages, OcrConfig(psm=6), w)),
    ]
    print(f"{len(pages)} pages, {w} workers, load average {os.getloadavg()[0]:.1f}")
    print("| configuration | wall s/page | ratio | CPU s/page (engine + render) | ratio | chars/page |")
    print("|---|---|---|---|---|---|")
    base = base_cpu = None
    for label, fn in configs:
        before = cpu_seconds()
        seconds, chars = fn()
        cpu = (cpu_seconds() - before) / len(pages)
        per_page = seconds / len(pages)
        base = base or per_page
        base_cpu = base_cpu or cpu
        print(f"| {label} | {per_page:.2f} | {per_page / base:.2f}x | {cpu:.2f} | {cpu / base_cpu:.2f}x "
              f"| {chars / len(pages):.0f} |", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
