"""Issue 27 item 1: a Qdrant client the user hands in stays theirs.

``DragKneeIndex(client=c)`` used to close ``c`` on ``close()``, at the end of a ``with`` block and
when it refused a collection; with ``QdrantClient(":memory:")`` the user's other collections were
gone (``RuntimeError: QdrantLocal instance is closed``). Real local-mode client, real model.
"""

from __future__ import annotations

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
