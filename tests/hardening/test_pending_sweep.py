"""The orphan sweep at the end of an ingest checks only the documents the store lists as mid-write
(store/pending.py), and still finds every rootless leftover: of a write cut short between the body
and the root, across a reopen of the folder; and in a folder written before the list existed."""

from __future__ import annotations

from pathlib import Path

import pytest

from drag_knee_retriever import Document, DragKneeIndex, StoreConfig
from drag_knee_retriever.store.filters import parse_filters
from hardening_support import InjectedFault

LIVE = Document(id="live", pages=[
    "Tide tables predict the height of the sea at a harbour for every hour of the year.",
    "Spring tides follow the new and the full moon; neap tides the quarter moons.",
])
VICTIM = Document(id="victim", pages=[
    "Volcanic ash grounds aircraft because it melts inside jet engines.",
    "Seismometers record the swarm of small earthquakes before an eruption.",
    "Satellite radar measures how the flanks of the volcano swell as magma rises.",
])
OTHER = Document(id="other", pages=["Glaciers flow downhill under their own weight.", "Crevasses open over bumps."])


def _nodes_of(index: DragKneeIndex, doc_id: str):
    return index.store.scroll_nodes(filters=parse_filters({"doc_id": doc_id}))


def _open(engine: str, encoder, folder: Path) -> DragKneeIndex:
    return DragKneeIndex(str(folder), embedding=encoder, store=StoreConfig(collection="pending", engine=engine))


def _full_listings(index: DragKneeIndex) -> list:
    """Count the store's unfiltered node listings (the real method runs)."""
    calls: list = []
    real = index.store.scroll_nodes

    def spy(*args, **kwargs):
        if not kwargs.get("filters"):
            calls.append(kwargs)
        return real(*args, **kwargs)

    index.store.scroll_nodes = spy
    return calls


def test_ingest_sweep_lists_no_node_when_nothing_is_pending(engine, caching_encoder, tmp_path):
    with _open(engine, caching_encoder, tmp_path / "idx") as index:
        index.add_documents([LIVE, VICTIM])
        listings = _full_listings(index)
        report = index.add_documents([OTHER])
        assert report.added == ["other"] and report.orphans_removed == 0
        assert "sweeping" in report.phase_seconds
        assert listings == []  # the old sweep listed every node of the index here
        assert index.store.pending.snapshot() == set()


def test_write_cut_before_the_root_is_swept_by_the_next_ingest_after_reopen(engine, caching_encoder, tmp_path):
    folder = tmp_path / "idx"
    with _open(engine, caching_encoder, folder) as index:
        index.add_documents([LIVE])
        real = index.store.upsert

        def cut_before_roots(records):
            # The body is written, the root is not (whether they come in one call or two).
            body = [r for r in records if r.node.parent_id is not None]
            if len(body) < len(records):
                if body:
                    real(body)
                raise InjectedFault("killed before the roots")
            return real(records)

        index.store.upsert = cut_before_roots
        with pytest.raises(InjectedFault):
            index.add_documents([VICTIM])
        index.store.upsert = real
        left = len(_nodes_of(index, "victim"))
        assert left > 0 and "victim" not in {d.doc_id for d in index.list_documents()}
        assert index.store.pending.snapshot() == {"victim"}
    with _open(engine, caching_encoder, folder) as index:  # a new process would see the same file
        assert index.store.pending.snapshot() == {"victim"}
        listings = _full_listings(index)
        report = index.add_documents([OTHER])
        assert report.orphans_removed == left and listings == []
        assert _nodes_of(index, "victim") == []
        assert index.store.pending.snapshot() == set()
        assert sorted(d.doc_id for d in index.list_documents()) == ["live", "other"]


def test_folder_without_the_list_gets_one_full_sweep(engine, caching_encoder, tmp_path):
    folder = tmp_path / "idx"
    with _open(engine, caching_encoder, folder) as index:
        index.add_documents([LIVE, VICTIM])
        body = [n for n in _nodes_of(index, "victim") if n.level != 0]
        index.store.delete_nodes("victim")
        index.store.upsert(index.vectorizer.records(body))  # rootless, as a killed ingest leaves it
        path = index.store.pending.path
    path.unlink()  # as a folder written by a version without the list
    with _open(engine, caching_encoder, folder) as index:
        assert index.store.pending.known is False
        report = index.add_documents([OTHER])
        assert report.orphans_removed == len(body)
        assert index.store.pending.known is True and path.exists()
        listings = _full_listings(index)
        index.add_documents([Document(id="more", text="Icebergs calve from the glacier's front.")])
        assert listings == []
