"""Orphans: nodes of a document whose root is not stored (an ingest killed before its root landed,
or a delete killed after the root went). The root is the commit point, so nothing reaches them;
here they are made on each embedded engine (and the memory engine) and must not count as
documents, must go at the end of any later ingest, and ``sweep_orphans()`` / ``docs gc`` remove
them, leaving every live document whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from drag_knee_retriever import Document, DragKneeIndex, StoreConfig
from drag_knee_retriever.store.filters import parse_filters
from hardening_support import WritePlan, fail_at, install_write_hook, raises_injected
from support.engines import make_store

LIVE = Document(id="live", pages=[
    "Tide tables predict the height of the sea at a harbour for every hour of the year.",
    "Spring tides follow the new and the full moon; neap tides the quarter moons.",
    "Harbour pilots plan the passage of deep ships around high water.",
])
VICTIM = Document(id="victim", pages=[
    "Volcanic ash grounds aircraft because it melts inside jet engines.",
    "Seismometers record the swarm of small earthquakes before an eruption.",
    "Satellite radar measures how the flanks of the volcano swell as magma rises.",
    "After the eruption, ash falls thickest downwind of the vent.",
])
OTHER = Document(id="other", pages=["Glaciers flow downhill under their own weight.", "Crevasses open over bumps."])


def _nodes_of(index: DragKneeIndex, doc_id: str):
    return index.store.scroll_nodes(filters=parse_filters({"doc_id": doc_id}))


def orphan(index: DragKneeIndex, doc_id: str, how: str) -> int:
    """Leave ``doc_id`` rootless as a killed run would; returns how many nodes are left."""
    nodes = _nodes_of(index, doc_id)
    body = [n for n in nodes if n.level != 0]
    assert body and len(body) < len(nodes)
    if how == "killed_ingest":
        # Nothing of it stored, then every body node written and the process killed before the root.
        index.store.delete_nodes(doc_id)
        index.store.upsert(index.vectorizer.records(body))
    elif getattr(index.store, "engine", None) in ("edge", "local"):
        # A delete cut short after the root went (the roots' copy goes first, then the root:
        # store/filters.delete_plan), before the rest of the tree.
        plan = install_write_hook(index.store, WritePlan(hook=fail_at(2, "before")))
        with raises_injected():
            index.delete_document(doc_id)
        plan.hook = None
    else:
        index.store._drop(next(n.id for n in nodes if n.level == 0))  # the memory engine: root only
    assert sorted(n.id for n in _nodes_of(index, doc_id)) == sorted(n.id for n in body)
    assert doc_id not in {n.doc_id for n in index.store.scroll_nodes(level=0)}
    return len(body)


def _engine_index(engine: str, encoder, folder: Path) -> DragKneeIndex:
    if engine == "memory":
        return DragKneeIndex(make_store("memory", "orphans"), embedding=encoder, store=StoreConfig(collection="orphans"))
    return DragKneeIndex(str(folder), embedding=encoder, store=StoreConfig(collection="orphans", engine=engine))


@pytest.fixture(params=["killed_ingest", "root_deleted_first"])
def how(request) -> str:
    return request.param


@pytest.mark.parametrize("which", ["embedded", "memory"])
def test_orphans_not_counted_then_swept_by_next_ingest_and_sweep(engine, which, how, caching_encoder, tmp_path):
    eng = engine if which == "embedded" else "memory"
    if which == "memory" and engine != "edge":
        pytest.skip("the memory engine runs once")
    with _engine_index(eng, caching_encoder, tmp_path / "idx") as index:
        index.add_documents([LIVE, VICTIM])
        live_before = sorted(n.id for n in _nodes_of(index, "live"))
        left = orphan(index, "victim", how)

        stats = index.stats()
        assert stats["documents"] == 1 and stats["orphan_documents"] == 1
        assert [d.doc_id for d in index.list_documents()] == ["live"]
        assert index.delete_document("victim") is False  # not a document, though its nodes go

        assert _nodes_of(index, "victim") == []
        # Make them again and let an ingest of another file sweep them.
        index.add_documents([VICTIM])
        left = orphan(index, "victim", how)
        report = index.add_documents([OTHER])
        assert report.added == ["other"] and report.orphans_removed == left
        assert _nodes_of(index, "victim") == []
        assert sorted(n.id for n in _nodes_of(index, "live")) == live_before

        # And the explicit sweep: removes exactly the orphan, then finds nothing.
        index.add_documents([VICTIM])
        left = orphan(index, "victim", how)
        sweep = index.sweep_orphans()
        assert sweep.doc_ids == ["victim"] and sweep.nodes == left
        assert index.sweep_orphans().doc_ids == []
        stats = index.stats()
        assert stats["documents"] == 2 and stats["orphan_documents"] == 0
        assert sorted(n.id for n in _nodes_of(index, "live")) == live_before
        assert index.search("harbour tides").nodes


def test_sweep_keeps_whole_documents_untouched(engine, caching_encoder, tmp_path):
    with _engine_index(engine, caching_encoder, tmp_path / "idx") as index:
        index.add_documents([LIVE, OTHER])
        before = sorted(n.id for n in index.store.scroll_nodes(with_text=False))
        assert index.sweep_orphans().doc_ids == []
        assert sorted(n.id for n in index.store.scroll_nodes(with_text=False)) == before


def _cli(*args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("drag-knee")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "drag_knee_retriever.cli"]
    env = dict(os.environ)
    env.pop("DRAG_KNEE_INDEX", None)
    proc = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=240, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_cli_docs_gc_removes_orphans(engine, caching_encoder, tmp_path):
    folder = tmp_path / "idx"
    with DragKneeIndex(str(folder), embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        index.add_documents([LIVE, VICTIM])
        left = orphan(index, "victim", "killed_ingest")
    common = ("--index", str(folder), "--engine", engine)

    stats = _cli("stats", "--json", *common)
    assert stats.returncode == 0, stats.stderr
    assert '"documents": 1' in stats.stdout and '"orphan_documents": 1' in stats.stdout

    gc = _cli("docs", "gc", *common)
    assert gc.returncode == 0, gc.stderr
    assert f"Removed {left} orphaned node(s) of 1 document(s): victim." in gc.stdout

    again = _cli("docs", "gc", *common)
    assert again.returncode == 0 and "nothing to remove" in again.stdout

    with DragKneeIndex(str(folder), embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        assert [d.doc_id for d in index.list_documents()] == ["live"]
        assert index.stats()["orphan_documents"] == 0
        assert len(_nodes_of(index, "live")) > 1
