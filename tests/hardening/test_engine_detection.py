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


def test_asearch_is_tracked_in_flight_like_search(caching_encoder, engine):
    """``asearch`` counts as in flight as ``search`` does: ``close()`` from another thread waits for
    it, and an ``asearch`` after ``close()`` is refused clearly; a ``close()`` on the event loop's own
    thread does not wait for that loop's searches (they could not finish while it blocks)."""
    import asyncio
    import threading
    import time

    index = DragKneeIndex(":memory:", embedding=caching_encoder, store=StoreConfig(engine=engine))
    index.add_documents([Document(id=f"d{i}.txt", text=f"Note {i} about lighthouses and tides.") for i in range(5)])
    entered, release = threading.Event(), threading.Event()
    store_arank = index.store.arank

    async def slow_arank(*args, **kwargs):  # holds the search in flight until released
        entered.set()
        await asyncio.to_thread(release.wait, 10)
        return await store_arank(*args, **kwargs)

    index.store.arank = slow_arank  # type: ignore[method-assign]
    results, closed_at = [], []

    def loop_thread():
        results.append(asyncio.run(index.asearch("lighthouses tides")))

    searcher = threading.Thread(target=loop_thread)
    searcher.start()
    assert entered.wait(10)
    closer = threading.Thread(target=lambda: (index.close(), closed_at.append(time.perf_counter())))
    closer.start()
    time.sleep(0.3)
    assert not closed_at, "close() did not wait for the asearch in flight"
    released_at = time.perf_counter()
    release.set()
    searcher.join(30)
    closer.join(30)
    assert results and results[0].nodes and closed_at and closed_at[0] >= released_at
    with pytest.raises(StoreError, match="closed"):
        asyncio.run(index.asearch("lighthouses"))

    other = DragKneeIndex(":memory:", embedding=caching_encoder, store=StoreConfig(engine=engine))
    other.add_documents([Document(id="a.txt", text="A note about lighthouses.")])

    async def close_on_the_loop():
        started = asyncio.Event()
        gate = asyncio.Event()
        other_arank = other.store.arank

        async def waiting_arank(*args, **kwargs):
            started.set()
            await gate.wait()
            return await other_arank(*args, **kwargs)

        other.store.arank = waiting_arank  # type: ignore[method-assign]
        task = asyncio.ensure_future(other.asearch("lighthouses"))
        await started.wait()
        t = time.perf_counter()
        other.close(timeout=5)  # on the loop's thread: returns at once
        assert time.perf_counter() - t < 2
        task.cancel()

    asyncio.run(close_on_the_loop())
