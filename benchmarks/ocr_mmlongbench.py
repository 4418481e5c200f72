"""OCR on MMLongBench-Doc's 20 image-only PDFs: page recall before and after, and OCR cost per page.

Questions: the dataset's ``all_answerable`` subset on the documents in ``raw/pdfs_image_only/``
(single-document setting: every search is filtered to the question's document). Documents go
through the library's own loader: ``ocr="never"`` for "before" (image-only PDFs are skipped: no
text, recall 0) and the given OCR settings for "after". One in-memory index per side, the real
offline MiniLM model.

Reported (aggregates only: the dataset's license forbids copying its text or questions):
flat hybrid page recall @1 / @5 and tokens, the default DRAG search's recall, tokens and results,
flat hybrid at the default's tokens (interpolated over k), the default minus flat at the nearest
k with a paired bootstrap interval, and the OCR cost: pages, engine calls, wall and CPU seconds
a page (CPU = this process + the engine processes; on a shared machine wall time follows the
load, CPU time does not).

    nice -n 10 python benchmarks/ocr_mmlongbench.py [--scale 1.333] [--psm 3] [--docs 6] [--fresh]

OCR text is cached under --cache (default ``$DRAG_KNEE_BENCH_CACHE/ocr/<settings>``, the cache folder being
``../cache`` beside the checkout unless set), outside git.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drag_knee_retriever.config import EmbeddingConfig, StoreConfig  # noqa: E402
from drag_knee_retriever import DragKneeIndex, EmbeddingConfig, StoreConfig  # noqa: E402
from drag_knee_retriever.build import _ocr as ocr_module  # noqa: E402
from drag_knee_retriever.errors import InvalidDocumentError  # noqa: E402
from drag_knee_retriever.loaders import load_file  # noqa: E402
from drag_knee_retriever.build._ocr import OcrConfig  # noqa: E402

# Beside the checkout unless set: ../shared/datasets, ../shared/models, ../cache.
SHARED = Path(__file__).resolve().parents[1].parent / "shared"
ROOT = Path(os.environ.get("DRAG_KNEE_DATASETS") or SHARED / "datasets") / "mmlongbench_doc"
MODEL = os.environ.get("DRAG_KNEE_MODEL_PATH") or str(SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8")
CACHE = Path(os.environ.get("DRAG_KNEE_BENCH_CACHE") or SHARED.parent / "cache")
KS = (1, 2, 3, 4, 5, 6, 8, 10)


def load_questions(stems):
    spec = importlib.util.spec_from_file_location("mmlb_load", ROOT / "load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _docs, questions = module.load(str(ROOT / "raw"), subset="all_answerable")
    return [q for q in questions if q["doc_id"] in stems]


def cpu_seconds() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class CountingEngine:
    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self._real = ocr_module.recognize

    def __call__(self, *args, **kwargs):
        result = self._real(*args, **kwargs)
        self.calls += 1
        self.seconds += result.seconds
        return result


def load_documents(pdfs, config: OcrConfig):
    counter = CountingEngine()
    ocr_module.recognize = counter
    documents, pages, ocr_pages = [], 0, 0
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    try:
        for pdf in pdfs:
            try:
                doc = load_file(pdf, doc_id=pdf.stem, ocr=config)
            except InvalidDocumentError:
                continue  # before OCR: an image-only PDF has nothing to index
            documents.append(doc)
            pages += len(doc.pages)
            ocr_pages += len(doc.metadata.get("ocr_pages", []))
    finally:
        ocr_module.recognize = counter._real
    return documents, {"documents": len(documents), "pages": pages, "ocr_pages": ocr_pages,
                       "engine_calls": counter.calls, "wall_s": time.perf_counter() - wall0,
                       "cpu_s": cpu_seconds() - cpu0, "engine_s": counter.seconds}


def covered_pages(nodes):
    pages = set()
    for hit in nodes:
        span = hit.node.span
        if span.first_page is not None:
            pages.update(range(span.first_page - 1, span.last_page))  # 0-based, like the gold
    return pages


def evaluate(documents, questions):
    if not documents:
        zero = [0.0] * len(questions)
        return {"flat": {k: (zero, zero) for k in KS}, "default": (zero, zero, zero)}
    index = DragKneeIndex(":memory:", embedding=EmbeddingConfig(model_path=MODEL), store=StoreConfig(collection="ocr_bench", engine="local"))
    index.add_documents(documents)
    have = {d.id for d in documents}
    flat = {k: ([], []) for k in KS}
    default = ([], [], [])
    for q in questions:
        gold = set(q["gold_pages"])
        if q["doc_id"] not in have:
            for k in KS:
                flat[k][0].append(0.0)
                flat[k][1].append(0.0)
            for series in default:
                series.append(0.0)
            continue
        filters = {"doc_id": q["doc_id"]}
        vectors = index.encoder.encode_query(q["question"])
        hits = index.flat_search(q["question"], k=max(KS), filters=filters, query_vectors=vectors)
        for k in KS:
            top = hits[:k]
            flat[k][0].append(len(gold & covered_pages(top)) / len(gold))
            flat[k][1].append(float(sum(len(h.text.split()) for h in top)))
        result = index.search(q["question"], filters=filters, query_vectors=vectors)
        default[0].append(len(gold & covered_pages(result.nodes)) / len(gold))
        default[1].append(float(sum(len(h.text.split()) for h in result.nodes)))
        default[2].append(float(len(result.nodes)))
    return {"flat": flat, "default": default}


def mean(values):
    return sum(values) / len(values) if values else 0.0


def bootstrap(diffs, n=2000, seed=7):
    rng = random.Random(seed)
    means = sorted(mean([diffs[rng.randrange(len(diffs))] for _ in diffs]) for _ in range(n))
    return means[int(0.025 * n)], means[int(0.975 * n) - 1]


def report(label, res):
    flat, (d_rec, d_tok, d_res) = res["flat"], res["default"]
    curve = [(mean(flat[k][1]), mean(flat[k][0])) for k in KS]
    tokens = mean(d_tok)
    at_tokens = None
    for (t0, r0), (t1, r1) in zip(curve, curve[1:]):
        if t0 <= tokens <= t1 and t1 > t0:
            at_tokens = r0 + (r1 - r0) * (tokens - t0) / (t1 - t0)
    nearest = min(KS, key=lambda k: abs(mean(flat[k][1]) - tokens))
    diffs = [a - b for a, b in zip(d_rec, flat[nearest][0])]
    lo, hi = bootstrap(diffs) if any(diffs) else (0.0, 0.0)
    return {
        "side": label,
        "flat_hybrid_recall@1": round(mean(flat[1][0]), 3), "flat_hybrid_recall@5": round(mean(flat[5][0]), 3),
        "flat_tokens@1": round(mean(flat[1][1])), "flat_tokens@5": round(mean(flat[5][1])),
        "default_recall": round(mean(d_rec), 3), "default_tokens": round(tokens), "default_results": round(mean(d_res), 2),
        "flat_recall_at_default_tokens": None if at_tokens is None else round(at_tokens, 3),
        f"default_minus_flat@{nearest}": round(mean(diffs), 3), "bootstrap95": [round(lo, 3), round(hi, 3)],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=OcrConfig().scale)
    ap.add_argument("--psm", type=int, default=3)
    ap.add_argument("--colour", action="store_true", help="render in colour (default: greyscale)")
    ap.add_argument("--binarize", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--languages", default="eng")
    ap.add_argument("--docs", type=int, default=0, help="only the first N documents (0: all 20)")
    ap.add_argument("--cache", default=None, help=f"OCR cache folder (default {CACHE}/ocr/<settings>)")
    ap.add_argument("--fresh", action="store_true", help="empty the cache first, so OCR time is measured")
    ap.add_argument("--json", default=None, help="also write the aggregates to this file")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)

    label = f"s{args.scale:.3f}-psm{args.psm}-{'rgb' if args.colour else 'grey'}{'-bin' if args.binarize else ''}-{args.languages}"
    cache = Path(args.cache) if args.cache else CACHE / "ocr" / label
    if args.fresh and cache.exists():
        import shutil

        shutil.rmtree(cache)
    config = OcrConfig(scale=args.scale, psm=args.psm, grayscale=not args.colour, binarize=args.binarize,
                       workers=args.workers, languages=args.languages, cache_dir=str(cache))
    pdfs = sorted((ROOT / "raw" / "pdfs_image_only").glob("*.pdf"))
    if args.docs:
        pdfs = pdfs[: args.docs]
    questions = load_questions({p.stem for p in pdfs})
    print(f"{len(pdfs)} documents, {len(questions)} all_answerable questions, OCR {label}, "
          f"{args.workers} workers, load average {os.getloadavg()[0]:.1f}", flush=True)

    before_docs, before_cost = load_documents(pdfs, OcrConfig(mode="never"))
    after_docs, cost = load_documents(pdfs, config)
    rows = [report("before (text layer only)", evaluate(before_docs, questions)),
            report(f"after OCR ({label})", evaluate(after_docs, questions))]
    calls = max(cost["engine_calls"], 1)
    cost_row = {"pages": cost["pages"], "ocr_pages": cost["ocr_pages"], "engine_calls": cost["engine_calls"],
                "wall_s_per_page": round(cost["wall_s"] / calls, 3) if cost["engine_calls"] else None,
                "cpu_s_per_page": round(cost["cpu_s"] / calls, 3) if cost["engine_calls"] else None,
                "engine_s_per_call": round(ocr_seconds(cost) / calls, 3) if cost["engine_calls"] else None,
                "documents_before": before_cost["documents"], "documents_after": cost["documents"],
                "load_average_end": round(os.getloadavg()[0], 1)}
    for row in rows:
        print(json.dumps(row))
    print(json.dumps({"ocr": cost_row}))
    if args.json:
        Path(args.json).write_text(json.dumps({"label": label, "questions": len(questions), "documents": len(pdfs),
                                               "rows": rows, "ocr": cost_row}, indent=1))


def ocr_seconds(cost):
    return cost.get("engine_s", 0.0)


if __name__ == "__main__":
    main()
