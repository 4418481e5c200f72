"""The engine a folder holds is kept (issue 16, item 10): ``--engine local`` on an Edge folder silently
created a second, empty index beside the real one; now both directions are a clear error."""

from __future__ import annotations

import pytest

from drag_knee_retriever import Document, DragKneeIndex
from drag_knee_retriever.errors import StoreError


@pytest.mark.parametrize("built, other", [("edge", "local"), ("local", "edge")])
def test_an_engine_contradicting_the_folder_is_an_error(built, other, tmp_path, caching_encoder):
    folder = tmp_path / "index"
    with DragKneeIndex(folder, engine=built, encoder=caching_encoder) as index:
        index.add_documents([Document(id="a.txt", text="A note about lighthouses.")])
    with pytest.raises(StoreError, match=f"holds a .*index of collection 'drag_knee'.*engine="):
        DragKneeIndex(folder, engine=other, encoder=caching_encoder)
    with DragKneeIndex(folder, engine=built, encoder=caching_encoder) as index:  # nothing was created beside it
        assert [d.doc_id for d in index.list_documents()] == ["a.txt"]
