"""The engine a folder holds is kept (issue 16, item 10): ``--engine local`` on an Edge folder silently
created a second, empty index beside the real one; now both directions are a clear error."""

from __future__ import annotations

import pytest

from drag_knee_retriever import Document, DragKneeIndex, StoreConfig
from drag_knee_retriever.errors import StoreError


@pytest.mark.parametrize("built, other", [("edge", "local"), ("local", "edge")])
def test_an_engine_contradicting_the_folder_is_an_error(built, other, tmp_path, caching_encoder):
    folder = tmp_path / "index"
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=built)) as index:
        index.add_documents([Document(id="a.txt", text="A note about lighthouses.")])
    with pytest.raises(StoreError, match=f"holds a .*index of collection 'drag_knee'.*engine="):
        DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=other))
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=built)) as index:  # nothing was created beside it
        assert [d.doc_id for d in index.list_documents()] == ["a.txt"]


def test_close_waits_for_searches_in_flight(tmp_path, caching_encoder, engine):
    """``close()`` while threads search logged "Already borrowed" from inside the engine."""
    import logging
    import threading

    index = DragKneeIndex(":memory:", embedding=caching_encoder, store=StoreConfig(engine=engine))
    index.add_documents([Document(id=f"d{i}.txt", text=f"Note {i} about lighthouses and tides.") for i in range(20)])
    errors, stop = [], threading.Event()

    def searcher():
        while not stop.is_set():
            try:
                index.search("lighthouses tides")
            except StoreError as exc:  # after close: the clear refusal, never an engine error
                assert "closed" in str(exc)
                return
            except Exception as exc:  # noqa: BLE001 - the test reports it
                errors.append(exc)
                return

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger().addHandler(handler)
    try:
        threads = [threading.Thread(target=searcher) for _ in range(4)]
        for thread in threads:
            thread.start()
        threading.Event().wait(1.0)
        index.close()
        stop.set()
        for thread in threads:
            thread.join(30)
    finally:
        logging.getLogger().removeHandler(handler)
    assert not errors, errors
    assert not [r for r in records if "borrowed" in r.getMessage().lower()]
