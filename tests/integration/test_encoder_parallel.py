"""EmbeddingConfig(parallel=n): data-parallel passage encoding on n onnxruntime sessions in one process,
with the real offline MiniLM (listed by name and registered as a custom ONNX folder) and a real index."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from drag_knee_retriever import ConfigError, Document, DragKneeIndex, EmbeddingConfig, EncoderRuntime, StoreConfig
from drag_knee_retriever.embeddings import FastEmbedDense

# Lengths from a few words to past the 512-token window, so batches of several sizes are shared out.
TEXTS = [("Varroa mites spread deformed wing virus through honeybee colonies. " * n).strip()
         for n in (1, 9, 2, 40, 3, 1, 15, 5, 80, 4, 2, 7, 1)]


def _custom_folder(tmp_path: Path, model_path: str, name: str) -> Path:
    """The MiniLM export as a user's own ONNX folder (a model fastembed does not list)."""
    folder = tmp_path / name
    (folder / "onnx").mkdir(parents=True)
    for item in Path(model_path).iterdir():
        os.symlink(item, folder / ("onnx/model.onnx" if item.name == "model.onnx" else item.name))
    return folder


def test_parallel_sessions_match_one_session_in_input_order_for_a_custom_model(tmp_path, model_path, encoder):
    folder = _custom_folder(tmp_path, model_path, "par-minilm")
    dense = FastEmbedDense(EmbeddingConfig(model_name="acme/par-minilm", model_path=str(folder), runtime=EncoderRuntime(parallel=3, batch_size=2)))
    assert len(dense._models) == 3
    # One intra-op thread per session unless threads= says otherwise (no oversubscription).
    assert all(m.model.model.get_session_options().intra_op_num_threads == 1 for m in dense._models)
    seen = []
    vectors = dense.embed_passages(TEXTS, progress=lambda done, total: seen.append((done, total)))
    expected = encoder.dense.embed_passages(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert np.allclose(vectors, expected, atol=1e-5)
    assert seen[-1] == (len(TEXTS), len(TEXTS)) and len(seen) == 7  # 13 texts in batches of 2
    # A single text (one batch) and no text at all take the one-session path.
    assert np.allclose(dense.embed_passages(TEXTS[:1]), expected[:1], atol=1e-5)
    assert dense.embed_passages([]).shape == (0, 384)


def test_max_tokens_reaches_every_session(model_path):
    base = "Varroa mites spread deformed wing virus through honeybee colonies"
    texts = [f"{base} {tail}" for tail in ("in spring.", "and basaltic lava builds shield volcanoes.",
                                           "while sourdough starters are fed flour.", "at night.")] * 2
    short = FastEmbedDense(EmbeddingConfig(model_path=model_path, max_input_tokens=16, runtime=EncoderRuntime(parallel=2, batch_size=1)))
    assert [m.model.tokenizer.truncation["max_length"] for m in short._models] == [16, 16]
    vectors = short.embed_passages(texts)
    # 16 word pieces end inside the shared beginning: every text reads the same and gets one vector.
    assert np.allclose(vectors, vectors[0], atol=1e-5)
    full = FastEmbedDense(EmbeddingConfig(model_path=model_path, runtime=EncoderRuntime(parallel=2, batch_size=1))).embed_passages(texts)
    assert not np.allclose(full[0], full[1], atol=1e-3)


def test_an_index_ingests_and_searches_with_parallel_sessions(model_path):
    docs = [Document(id="bees", pages=["Varroa mites spread deformed wing virus.", "Neonicotinoids impair foraging."]),
            Document(id="volcanoes", pages=["Basaltic lava builds shield volcanoes.", "Andesitic magma erupts."])]
    with DragKneeIndex(embedding=EmbeddingConfig(model_path=model_path, runtime=EncoderRuntime(parallel=2)), store=StoreConfig(engine="local")) as index:
        index.add_documents(docs)
        assert index.search("mites and honeybee viruses").nodes[0].node.doc_id == "bees"


@pytest.mark.parametrize("bad", [0, -1, True, "2", 2.0, 65])
def test_parallel_rejects_what_is_not_a_session_count(bad):
    with pytest.raises(ConfigError, match="parallel must be an integer in \\[1, 64\\]"):
        EmbeddingConfig(runtime=EncoderRuntime(parallel=bad))


def test_an_index_built_with_a_token_limit_refuses_to_open_with_another(tmp_path, model_path):
    from drag_knee_retriever import ModelMismatchError

    folder = tmp_path / "limited"
    doc = Document(id="bees", pages=["Varroa mites spread deformed wing virus through honeybee colonies."])
    with DragKneeIndex(str(folder), embedding=EmbeddingConfig(model_path=model_path, max_input_tokens=128), store=StoreConfig(engine="local")) as index:
        assert index.encoder.model_id.endswith("|max_tokens=128")
        index.add_documents([doc])
    for other in (None, 256):
        with pytest.raises(ModelMismatchError, match=r"EmbeddingConfig\(max_input_tokens=128\)"):
            DragKneeIndex(str(folder), embedding=EmbeddingConfig(model_path=model_path, max_input_tokens=other), store=StoreConfig(engine="local"))
    # the same limit opens it, and a limit at or above the model's own changes nothing (same identity)
    with DragKneeIndex(str(folder), embedding=EmbeddingConfig(model_path=model_path, max_input_tokens=128), store=StoreConfig(engine="local")) as index:
        assert index.search("honeybee viruses").nodes[0].node.doc_id == "bees"
    assert FastEmbedDense(EmbeddingConfig(model_path=model_path, max_input_tokens=4096)).identity == \
        FastEmbedDense(EmbeddingConfig(model_path=model_path)).identity


def test_an_index_opened_without_embedding_settings_keeps_the_window_it_was_built_with(tmp_path, model_path,
                                                                                       monkeypatch):
    monkeypatch.setenv("DRAG_KNEE_MODEL_PATH", model_path)  # the default model, found without embedding=
    doc = Document(id="bees", pages=["Varroa mites spread deformed wing virus through honeybee colonies."])
    for built_with in (128, None):
        folder = tmp_path / f"window-{built_with}"
        with DragKneeIndex(str(folder), embedding=EmbeddingConfig(model_path=model_path, max_input_tokens=built_with),
                           store=StoreConfig(engine="edge")) as index:
            index.add_documents([doc])
            built_id = index.encoder.model_id
        # No embedding= (as the CLI opens it): the stored window, whatever today's default.
        with DragKneeIndex(str(folder), store=StoreConfig(engine="edge")) as index:
            assert index.encoder.model_id == built_id
            assert index.encoder.dense.config.max_input_tokens == built_with
            assert index.search("honeybee viruses").nodes[0].node.doc_id == "bees"
