"""Re-ingesting a folder of 1,000 files with one changed: does it cost about one file's work?

    python benchmarks/reingest.py [--files 1000] [--cache DIR]

Real files in a folder (two short COVID-QA paragraphs each, deterministic), a real Qdrant Edge
index in a folder, the real offline model. The index is built once into ``--cache`` and reused.
In one process, on the reopened index, reading the folder as ``drag-knee ingest`` does
(``load_paths(..., stored_stamps=index.file_stamps)``: a file whose size and modification time
match the stamp stored with its document is not read; ``--read-all`` reads every file, as before):

1. re-ingest of the unchanged folder: list the folder, the stamp check, the sweep;
2. the same with one file changed (it is replaced);
3. "one file's work": the changed file's text ingested alone as a new file into the same index (then deleted again);
4. for comparison, the full orphan listing the sweep after every ingest used to run.

Each step is timed 3 times (median). Last line:
``reingest_one_changed_s=<x> one_file_s=<y> ratio=<x/y> full_sweep_s=<z> nodes=<n>``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DRAG_KNEE_SHARED", REPO.parent / "shared"))
# Caches live outside the checkout: $DRAG_KNEE_BENCH_CACHE, else ../cache beside it.
CACHE = Path(os.environ.get("DRAG_KNEE_BENCH_CACHE") or REPO.parent / "cache")
COVID = SHARED / "datasets" / "covidqa_200423" / "raw" / "200423_covidQA.json"
MODEL = SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"


def file_texts(n: int):
    """n texts of two consecutive COVID-QA paragraphs (<= 60 words each), in dataset order."""
    data = json.loads(COVID.read_text())
    paragraphs = [" ".join(line.split()[:60]) for article in data["data"]
                  for line in article["paragraphs"][0]["context"].split("\n") if len(line.split()) >= 12]
    if len(paragraphs) < 2 * n:
        raise SystemExit(f"COVID-QA has {len(paragraphs)} usable paragraphs; --files {n} needs {2 * n}")
    return [f"{paragraphs[2 * i]}\n\n{paragraphs[2 * i + 1]}\n" for i in range(n)]


def write_folder(folder: Path, texts) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(texts):
        path = folder / f"f{i:04d}.txt"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def timed(call):
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--cache", default=str(CACHE / "ingest" / "reingest"), help="default: %(default)s")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--read-all", action="store_true", help="read every file (no stamp check), as before")
    args = parser.parse_args()
    os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL))
    from drag_knee_retriever import DragKneeIndex, EmbeddingConfig, EncoderRuntime
    from drag_knee_retriever.loaders import load_paths

    cache = Path(args.cache)
    folder, index_dir = cache / "files", cache / "index"
    texts = file_texts(args.files)
    write_folder(folder, texts)
    embedding = EmbeddingConfig(runtime=EncoderRuntime(threads=1))
    with DragKneeIndex(str(index_dir), embedding=embedding) as index:  # built once, then reused
        seconds, report = timed(lambda: index.add_documents(load_paths([folder]).documents))
        if report.added or report.replaced:
            print(f"(built/updated the index: {len(report.added)} added, {len(report.replaced)} replaced "
                  f"in {seconds:.0f} s)")

    changed = folder / f"f{args.files // 2:04d}.txt"
    # "That file alone": the changed file's own text ingested as a new document (a file of another
    # text costs another encoding: the first version of this script used texts[0], ~half the words).
    extra = cache / "extra" / "new.txt"
    extra.parent.mkdir(exist_ok=True)
    rows = {"unchanged": [], "one_changed": [], "one_file": [], "full_sweep": [], "read": []}
    phases = {}
    with DragKneeIndex(str(index_dir), embedding=embedding) as index:  # reopened, as the CLI does
        nodes = index.store.count()
        stamps = None if args.read_all else index.file_stamps

        def load(paths):
            return load_paths(paths, stored_stamps=stamps)

        def unchanged(load_report, ingest_report) -> int:
            return len(load_report.unchanged) + len(ingest_report.unchanged)

        for run in range(args.repeat):
            read_s, loaded = timed(lambda: load([folder]))
            rows["read"].append(read_s)
            s, report = timed(lambda: index.add_documents(loaded.documents))
            assert unchanged(loaded, report) == args.files, report
            rows["unchanged"].append(read_s + s)

            edited = texts[args.files // 2] + f"Edited, run {run}.\n"
            changed.write_text(edited, encoding="utf-8")
            extra.write_text(edited, encoding="utf-8")

            def one_changed():
                loaded = load([folder])
                return loaded, index.add_documents(loaded.documents)

            s, (loaded, report) = timed(one_changed)
            assert len(report.replaced) == 1 and unchanged(loaded, report) == args.files - 1, report
            rows["one_changed"].append(s)
            phases = report.phase_seconds
            changed.write_text(texts[args.files // 2], encoding="utf-8")
            index.add_documents(load([folder]).documents)  # back to the original

            s, report = timed(lambda: index.add_documents(load([extra]).documents))
            assert report.added, report
            rows["one_file"].append(s)
            index.delete_document(report.added[0])

            s, sweep = timed(index.sweep_orphans)
            assert sweep.doc_ids == []
            rows["full_sweep"].append(s)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"{args.files} files, {nodes} nodes, Qdrant Edge folder reopened, {os.cpu_count()} cores; "
          f"median of {args.repeat} runs; {'every file read' if args.read_all else 'files skipped by stamp'}")
    print(f"  list / read the files (load_paths)     {med['read']:7.3f} s")
    print(f"  re-ingest, nothing changed (read+all)  {med['unchanged']:7.3f} s")
    print(f"  re-ingest, one file changed (read+all) {med['one_changed']:7.3f} s   phases of the last: "
          + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()))
    print(f"  one new file alone (read+all)          {med['one_file']:7.3f} s")
    print(f"  full orphan listing (the old sweep)    {med['full_sweep']:7.3f} s")
    print(f"reingest_one_changed_s={med['one_changed']:.3f} one_file_s={med['one_file']:.3f} "
          f"ratio={med['one_changed'] / med['one_file']:.2f} full_sweep_s={med['full_sweep']:.3f} nodes={nodes}")


if __name__ == "__main__":
    main()
