"""The alternative engine the issue names: RapidOCR (ONNX, models bundled) on the same sample pages.

Run with a Python that has ``rapidocr-onnxruntime`` and ``pypdfium2`` (a separate venv: it pulls
OpenCV and is not a dependency of this project):

    nice -n 10 /path/to/venv/bin/python benchmarks/ocr_rapidocr.py [--pages-per-doc 1] [--scale 1.333]

Prints CPU seconds a page (in-process: rendering + recognition, all ONNX threads), characters a
page, and the share of "words" longer than 20 characters (words glued together without spaces).
Same page sample as benchmarks/ocr_knobs.py. Nothing of the dataset's text is written.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

# $DRAG_KNEE_DATASETS, else ../shared/datasets beside the checkout.
DATASETS = Path(os.environ.get("DRAG_KNEE_DATASETS") or Path(__file__).resolve().parents[1].parent / "shared" / "datasets")
PDFS = DATASETS / "mmlongbench_doc" / "raw" / "pdfs_image_only"


def main() -> None:
    import numpy as np
    import pypdfium2 as pdfium
    from rapidocr_onnxruntime import RapidOCR

    ap = argparse.ArgumentParser()
    ap.add_argument("--pages-per-doc", type=int, default=1)
    ap.add_argument("--scale", type=float, default=4 / 3)
    args = ap.parse_args()
    engine = RapidOCR()
    pages = []
    for path in sorted(PDFS.glob("*.pdf")):
        pdf = pdfium.PdfDocument(str(path))
        n = len(pdf)
        for k in range(args.pages_per_doc):
            pages.append((pdf, min(n - 1, (k + 1) * n // (args.pages_per_doc + 1))))
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    chars = words = glued = 0
    for pdf, index in pages:
        image = np.array(pdf[index].render(scale=args.scale, rev_byteorder=True).to_numpy())[:, :, :3]
        result, _ = engine(image)
        text = "\n".join(r[1] for r in result or [])
        chars += len(text)
        tokens = text.split()
        words += len(tokens)
        glued += sum(len(t) > 20 for t in tokens)
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage.ru_utime + usage.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    print(f"| RapidOCR (onnxruntime) scale {args.scale:.3f} colour | {wall / len(pages):.2f} | "
          f"{cpu / len(pages):.2f} | {chars / len(pages):.0f} | glued words {glued / max(words, 1):.1%} |")


if __name__ == "__main__":
    main()
