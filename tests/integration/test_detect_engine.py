"""detect_engine tells which engine holds a collection in a folder, from folders the real engines wrote."""

from __future__ import annotations

import pytest

from drag_knee_retriever.errors import StoreError
from drag_knee_retriever.store import EdgeStore, QdrantClientStore, detect_engine


def _create(store):
    try:
        store.open_collection(dense_size=4, model_id="m", sparse_model="bm25")
    finally:
        store.close()


def test_each_engine_folder_is_recognised(tmp_path):
    assert detect_engine(tmp_path / "missing", "c") is None
    assert detect_engine(tmp_path, "c") is None
    _create(EdgeStore("c", location=str(tmp_path / "edge")))
    _create(QdrantClientStore("c", location=str(tmp_path / "local")))
    assert detect_engine(tmp_path / "edge", "c") == "edge"
    assert detect_engine(str(tmp_path / "local"), "c") == "local"
    assert detect_engine(tmp_path / "edge", "other") is None and detect_engine(tmp_path / "local", "other") is None


def test_edge_refuses_a_local_mode_folder(tmp_path):
    _create(QdrantClientStore("c", location=str(tmp_path)))
    with pytest.raises(StoreError, match="qdrant-client local-mode index"):
        EdgeStore("c", location=str(tmp_path))
    # An Edge store opened without a collection yet (its folder only) is still Edge's.
    EdgeStore("d", location=str(tmp_path)).close()
    assert detect_engine(tmp_path, "d") == "edge"
