"""The constructor (issue 23): where the index lives as one argument, four settings objects, and the spellings of
the release before (each with a DeprecationWarning naming the new one), on the real engines and the real model."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from drag_knee_retriever import (
    BuildConfig,
    ConfigError,
    Document,
    DragKneeIndex,
    EmbeddingConfig,
    FocusConfig,
    LeafConfig,
    SearchConfig,
    StoreConfig,
)
from drag_knee_retriever.store import EdgeStore, QdrantClientStore
from drag_knee_retriever.store.memory import MemoryStore

DOCS = [Document(id="bees", text="Honeybees pollinate crops.\n\nA hive winters as a cluster."),
        Document(id="tides", text="Spring tides follow the new and the full moon.")]


def _quiet(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new spelling warns nothing
        return DragKneeIndex(**kwargs)


@pytest.mark.parametrize("where", [":memory:", "folder", "path"])
def test_the_location_is_one_argument(where, encoder, tmp_path):
    location = {"folder": str(tmp_path / "ix"), "path": tmp_path / "ix2", ":memory:": ":memory:"}[where]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index = DragKneeIndex(location, embedding=encoder, search=SearchConfig(focus=FocusConfig(pool=5)),
                              build=BuildConfig(leaves=LeafConfig(passage_words=None)), store=StoreConfig(collection="c1"))
    with index:
        assert isinstance(index.store, EdgeStore) and index.store_config.collection == "c1"
        index.add_documents(DOCS)
        assert index.search("when do spring tides come?").nodes[0].node.doc_id == "tides"
    if where != ":memory:":
        assert Path(location).is_dir()


def test_local_mode_a_client_and_a_node_store_as_the_location(encoder):
    from qdrant_client import QdrantClient

    with DragKneeIndex(":memory:", embedding=encoder, store=StoreConfig(engine="local")) as index:
        assert isinstance(index.store, QdrantClientStore) and index.store.engine == "local"
    client = QdrantClient(":memory:")
    with DragKneeIndex(client, embedding=encoder) as index:
        index.add_documents(DOCS)
        assert index.store.client is client
    assert client.get_collections() is not None  # the caller's client is not closed
    store = MemoryStore("mine")
    with DragKneeIndex(store, embedding=encoder) as index:
        assert index.store is store


def test_your_own_dense_model_with_a_bm25_language(encoder):
    def dense(texts):
        return [[1.0, float(len(t) % 7), 0.5] for t in texts]

    with DragKneeIndex(embedding=EmbeddingConfig(dense=dense, language="russian")) as index:
        assert index.encoder.sparse_model.endswith("russian") and index.encoder.dense_size == 3
    with DragKneeIndex(embedding=dense) as index:  # the shorthand: english BM25
        assert index.encoder.sparse_model.endswith("english")


@pytest.mark.parametrize("location, store, message", [
    ("localhost:6333", None, r"looks like a server address; write it as a URL \('http://localhost:6333'\)"),
    ("./folder", StoreConfig(engine="server"), "engine='server' needs a URL as the location"),
    ("http://127.0.0.1:9", StoreConfig(engine="edge"), "engine='edge' is embedded but location"),
    (":memory:", StoreConfig(async_client=object()), "goes with your own QdrantClient"),
    (42, None, "location must be a folder, ':memory:', a URL, a QdrantClient or a NodeStore, got int"),
])
def test_a_location_that_cannot_work_is_refused_before_anything_opens(location, store, message, encoder):
    with pytest.raises(ConfigError, match=message):
        DragKneeIndex(location, embedding=encoder, store=store)


def test_an_async_client_alone_and_wrong_objects_are_refused(encoder):
    from qdrant_client import AsyncQdrantClient

    with pytest.raises(ConfigError, match="An AsyncQdrantClient alone cannot serve an index"):
        DragKneeIndex(AsyncQdrantClient(":memory:"), embedding=encoder)
    with pytest.raises(ConfigError, match="store= takes a StoreConfig"):
        DragKneeIndex(embedding=encoder, store={"collection": "x"})
    with pytest.raises(TypeError, match="unexpected keyword argument.*'colection' \\(did you mean 'collection'\\?\\)"):
        DragKneeIndex(embedding=encoder, colection="x")


def test_a_misspelled_keyword_names_the_one_meant_and_old_spellings_still_work(encoder, tmp_path):
    with pytest.raises(TypeError, match="'serach' \\(did you mean 'search'\\?\\)"):
        DragKneeIndex(":memory:", embedding=encoder, serach=SearchConfig())
    with pytest.raises(TypeError, match="'embeding' \\(did you mean 'embedding'\\?\\)"):
        DragKneeIndex(":memory:", embeding=encoder)
    with pytest.raises(TypeError, match="'xyzzy';"):  # nothing close: named, no guess
        DragKneeIndex(":memory:", embedding=encoder, xyzzy=1)
    with pytest.warns(DeprecationWarning, match=r"store=StoreConfig\(collection="):
        old = DragKneeIndex(embedding=encoder, collection="old_spelling")
    with old:
        assert old.store_config.collection == "old_spelling"
        with pytest.raises(TypeError, match="'max_result' \\(did you mean 'max_results'\\?\\)"):
            old.search("bees", max_result=2)


def test_the_api_key_comes_from_the_config_or_the_environment(encoder, monkeypatch):
    from drag_knee_retriever.facade._index import _open_store

    monkeypatch.setenv("QDRANT_API_KEY", "from-env")
    store, config = _open_store("http://127.0.0.1:9", StoreConfig(timeout=1))
    store.close()
    assert config.api_key == "from-env"
    store, config = _open_store("http://127.0.0.1:9", StoreConfig(api_key="given", timeout=1))
    store.close()
    assert config.api_key == "given" and "given" not in repr(config)
    store, config = _open_store(":memory:", StoreConfig(engine="local"))
    store.close()
    assert config.api_key is None  # an embedded index never reads the server key


# -- the spellings of the release before -------------------------------------------------------------


def test_old_store_keywords_warn_naming_the_new_spelling(encoder, tmp_path):
    with pytest.warns(DeprecationWarning) as caught:
        index = DragKneeIndex(path=str(tmp_path / "old"), collection="old", engine="local", encoder=encoder)
    messages = " | ".join(str(w.message) for w in caught)
    assert "DragKneeIndex(path=...) is deprecated" in messages and "DragKneeIndex(location)" in messages
    assert "store=StoreConfig(collection=, engine=" in messages
    assert "DragKneeIndex(embedding=<the encoder>)" in messages
    with index:
        assert isinstance(index.store, QdrantClientStore) and index.store_config == StoreConfig(collection="old",
                                                                                                  engine="local")
        index.add_documents(DOCS)
    with DragKneeIndex(str(tmp_path / "old"), embedding=encoder, store=StoreConfig(collection="old", engine="local")) as again:
        assert [d.doc_id for d in again.list_documents()] == ["bees", "tides"]  # the same index, new spelling


def test_old_model_and_client_keywords_warn_and_map(encoder, model_path):
    from qdrant_client import QdrantClient

    with pytest.warns(DeprecationWarning, match=r"embedding=EmbeddingConfig\(model_path=, language=...\)"):
        index = DragKneeIndex(model_path=model_path, language="russian")
    with index:
        assert index.encoder.sparse_model.endswith("russian")
    with pytest.warns(DeprecationWarning, match=r"DragKneeIndex\(client=...\)"):
        index = DragKneeIndex(client=QdrantClient(":memory:"), embedding=encoder)
    index.close()
    with pytest.warns(DeprecationWarning, match=r"DragKneeIndex\(store=...\)"):
        index = DragKneeIndex(store=MemoryStore("m"), embedding=encoder)
    index.close()
    with pytest.raises(ConfigError, match="not also url="):
        DragKneeIndex("./here", url="http://127.0.0.1:9", embedding=encoder)


def test_old_per_search_fusion_weights_warn(encoder):
    with DragKneeIndex(embedding=encoder) as index:
        index.add_documents(DOCS)
        new = index.search("bees", fusion=__import__("drag_knee_retriever").FusionConfig(weights=[(0.2, 0.8)]))
        with pytest.warns(DeprecationWarning, match=r"search\(fusion=FusionConfig\(weights=...\)\)"):
            old = index.search("bees", fusion_weights=[(0.2, 0.8)])
        assert [(h.node.id, h.score) for h in old.nodes] == [(h.node.id, h.score) for h in new.nodes]
        with pytest.raises(TypeError, match="unexpected keyword argument.*focus_pool"):
            index.search("bees", focus_pool=3)
