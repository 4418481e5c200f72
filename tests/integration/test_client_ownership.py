"""Issue 27 item 1: a Qdrant client the user hands in stays theirs.

``DragKneeIndex(client=c)`` used to close ``c`` on ``close()``, at the end of a ``with`` block and
when it refused a collection; with ``QdrantClient(":memory:")`` the user's other collections were
gone (``RuntimeError: QdrantLocal instance is closed``). Real local-mode client, real model.
"""

from __future__ import annotations

import threading

import pytest
from qdrant_client import QdrantClient, models

from drag_knee_retriever import Document, DragKneeIndex, StoreConfig, StoreError


def _user_collection(client: QdrantClient) -> None:
    client.create_collection("users_own", vectors_config=models.VectorParams(size=4, distance=models.Distance.COSINE))
    client.upsert("users_own", points=[models.PointStruct(id=1, vector=[1.0, 0.0, 0.0, 0.0], payload={"x": 1})])


def _still_usable(client: QdrantClient) -> None:
    points = client.query_points("users_own", query=[1.0, 0.0, 0.0, 0.0], limit=1).points
    assert [p.payload for p in points] == [{"x": 1}]


def test_close_and_with_block_leave_the_users_client_open(encoder):
    client = QdrantClient(":memory:")
    _user_collection(client)
    index = DragKneeIndex(client, store=StoreConfig(collection="ours"), embedding=encoder)
    index.add_documents([Document(id="a", text="Tides follow the moon.")])
    index.close()
    _still_usable(client)
    with DragKneeIndex(client, store=StoreConfig(collection="ours"), embedding=encoder) as again:
        assert [h.doc_id for h in again.search("moon tides")] == ["a"]  # the collection survived too
    _still_usable(client)
    client.close()


def test_refusing_a_collection_leaves_the_users_client_open(encoder):
    client = QdrantClient(":memory:")
    _user_collection(client)
    with pytest.raises(StoreError, match="not built by drag-knee-retriever"):
        DragKneeIndex(client, store=StoreConfig(collection="users_own"), embedding=encoder)
    _still_usable(client)
    client.close()


def test_a_client_we_open_is_closed(encoder, tmp_path):
    # The other side of the rule: a folder we opened is released on close (it can be reopened).
    folder = tmp_path / "idx"
    DragKneeIndex(str(folder), store=StoreConfig(engine="local"), embedding=encoder).close()
    DragKneeIndex(str(folder), store=StoreConfig(engine="local"), embedding=encoder).close()


async def test_core_async_ingestion_runs_off_the_event_loop(encoder):
    """Issue 27 item 5: aadd_documents / adelete_document build and encode in a worker thread."""
    import asyncio

    index = DragKneeIndex(embedding=encoder)
    ticks = 0

    async def tick():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    ticker = asyncio.create_task(tick())
    docs = [Document(id=f"d{i}", text=f"Paragraph {i} about tides, lava and bread dough, told at some length.")
            for i in range(12)]
    report = await index.aadd_documents(docs)
    ticker.cancel()
    assert ticks >= 3 and sorted(report.added) == sorted(d.id for d in docs)
    assert (await index.asearch("tides lava")).nodes
    assert await index.adelete_document("d0") and len(index.list_documents()) == 11
    index.close()


@pytest.mark.parametrize("make, engine", [
    (lambda tmp: QdrantClient(":memory:"), "local"),
    (lambda tmp: QdrantClient(path=str(tmp / "local")), "local"),
    (lambda tmp: QdrantClient(url="http://127.0.0.1:1", api_key="s3cret-key", check_compatibility=False), "server"),
    (lambda tmp: QdrantClient(host="127.0.0.1", port=1, check_compatibility=False), "server"),
    (lambda tmp: QdrantClient(check_compatibility=False), "server"),  # no argument: localhost:6333
])
def test_the_store_over_a_users_client_is_decided_from_that_client(make, engine, tmp_path):
    # The index used to build a local-mode store and relabel it "server" afterwards, so a server
    # client kept client-side BM25 IDF (a new collection made without the server's IDF modifier)
    # and a lock serialising every call. Nothing here contacts a server: the store is only built.
    from drag_knee_retriever.facade._index import _open_store

    client = make(tmp_path)
    store, _ = _open_store(client, StoreConfig(collection="ours"))
    assert store.engine == engine
    assert store._idf.enabled is (engine == "local")  # a server keeps its own IDF (other clients write too)
    assert isinstance(store._engine_lock, type(threading.RLock())) is (engine == "local")
    assert "s3cret-key" not in store.describe() + str(store._where)
    if client.init_options.get("api_key"):
        assert "s3cret-key" in store._secrets  # masked in any message about the server
    store.close()
    client.close()  # still the user's: the store left it open
