"""Child process of test_reproducible.py (not a test module): ingest, search, write the rankings as JSON.

argv: engine, mode ("record" or "replay"), vectors.npz, limit_docs, out.json, datasets root.
"record" encodes with the real MiniLM model and saves every dense vector (documents and queries);
"replay" reuses them, saving the second process the minutes of encoding: the model's output is
the same in every process, and what differed between runs was the store side. BM25 is always
computed here by the real encoder, and everything store-side runs fresh in each process.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import numpy as np


class Dense:
    """The real encoder; records its dense outputs, or replays recorded ones."""

    def __init__(self, inner, recorded=None):
        self.inner = inner
        self.recording = recorded is None
        self.dense = {} if recorded is None else dict(zip(recorded["texts"], recorded["vectors"]))
        self.queries = {} if recorded is None else dict(zip(recorded["queries"], recorded["query_vectors"]))

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def encode_dense(self, texts, progress=None):
        if self.recording:
            for text, vector in zip(texts, self.inner.encode_dense(list(texts))):
                self.dense[text] = np.asarray(vector, dtype=np.float32)
        return np.stack([self.dense[t] for t in texts]).astype(np.float32)

    def encode_query(self, text):
        vectors = self.inner.encode_query(text)
        if self.recording:
            self.queries[text] = np.asarray(vectors.dense, dtype=np.float32)
            return vectors
        return replace(vectors, dense=tuple(float(x) for x in self.queries[text]))

    def save(self, path):
        np.savez(path, texts=np.array(list(self.dense)), vectors=np.stack(list(self.dense.values())),
                 queries=np.array(list(self.queries)), query_vectors=np.stack(list(self.queries.values())))


def main() -> None:
    engine, mode, vectors_path, limit, out_path, root = sys.argv[1:7]
    from drag_knee_retriever import DragKneeIndex
    from drag_knee_retriever.config import EmbeddingConfig, StoreConfig
    from drag_knee_retriever.embeddings import Encoder
    from benchmarks.datasets.hotpotqa import load_hotpotqa

    recorded = None if mode == "record" else np.load(vectors_path, allow_pickle=False)
    encoder = Dense(Encoder(EmbeddingConfig()), recorded)
    dataset = load_hotpotqa(root, limit_docs=int(limit))
    index = DragKneeIndex(":memory:", embedding=encoder, store=StoreConfig(engine=engine))
    index.add_documents(dataset.documents)
    out = {}
    for question in dataset.questions:
        flat = index.flat_search(question.text, k=20)
        walk = index.search(question.text)
        out[question.id] = {"flat": [[h.node.id, h.score] for h in flat],
                            "knee": [[h.node.id, h.score] for h in walk.nodes]}
    index.close()
    if mode == "record":
        encoder.save(vectors_path)
    with open(out_path, "w") as handle:
        json.dump(out, handle)


if __name__ == "__main__":
    main()
