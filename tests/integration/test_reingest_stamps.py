"""Re-ingesting a folder reads only what changed: files whose size and modification time match the
stamp stored with their document are not opened (``load_paths(stored_stamps=index.file_stamps)``,
as ``drag-knee ingest`` does on an index that exists).

Real files in a temporary folder, real indexes on both embedded engines, the session's real encoder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from drag_knee_retriever import BuildConfig
from drag_knee_retriever.loaders import load as load_module
from drag_knee_retriever.loaders import load_paths
from drag_knee_retriever.model._nodes import FILE_STAMP_KEY

TEXTS = {
    "bees.txt": "Honey bees dance to tell the hive where the flowers are.\n\nThe waggle run points to the sun.",
    "tides.md": "# Tides\n\nSpring tides follow the new and the full moon.\n\nNeap tides the quarter moons.",
    "notes/ice.txt": "Glaciers flow downhill under their own weight.\n\nCrevasses open over bumps in the bed.",
}


@pytest.fixture
def folder(tmp_path) -> Path:
    root = tmp_path / "docs"
    for name, text in TEXTS.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def opened_files(monkeypatch):
    """The paths ``load_paths`` reads (every file it found goes through ``load.py``'s ``_load_file``)."""
    seen = []
    real = load_module._load_file

    def spy(path, **kwargs):
        seen.append(Path(path).name)
        return real(path, **kwargs)

    monkeypatch.setattr(load_module, "_load_file", spy)
    return seen


def _bump_mtime(path: Path) -> None:
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 5_000_000_000))


def test_an_unchanged_folder_is_not_read_and_a_changed_file_is(engine, make_index, folder, opened_files):
    index = make_index(collection="stamps", engine=engine)
    first = load_paths([folder], stored_stamps=index.file_stamps)
    assert sorted(opened_files) == sorted(Path(n).name for n in TEXTS) and first.unchanged == []
    assert all(FILE_STAMP_KEY in d.metadata for d in first.documents)
    assert len(index.add_documents(first.documents).added) == 3

    opened_files.clear()
    again = load_paths([folder], stored_stamps=index.file_stamps)
    assert opened_files == [] and again.documents == []
    assert sorted(again.unchanged) == sorted(TEXTS)
    index.add_documents(again.documents)  # nothing to do, and nothing lost
    assert sorted(d.doc_id for d in index.list_documents()) == sorted(TEXTS)

    # A changed file (new size and time) is read and replaced; the others are not opened.
    (folder / "bees.txt").write_text(TEXTS["bees.txt"] + "\n\nDrones do not forage.", encoding="utf-8")
    opened_files.clear()
    changed = load_paths([folder], stored_stamps=index.file_stamps)
    assert opened_files == ["bees.txt"] and sorted(changed.unchanged) == ["notes/ice.txt", "tides.md"]
    report = index.add_documents(changed.documents)
    assert report.replaced == ["bees.txt"]
    assert "Drones" in index.get_documents(["bees.txt"])[0].text

    # Touched, same bytes: read (its time moved), found unchanged by its hash, nothing encoded,
    # and its new stamp stored: the next re-ingest does not read it.
    _bump_mtime(folder / "tides.md")
    opened_files.clear()
    touched = load_paths([folder], stored_stamps=index.file_stamps)
    assert opened_files == ["tides.md"]
    report = index.add_documents(touched.documents)
    assert report.unchanged == ["tides.md"] and report.nodes_written == 0
    opened_files.clear()
    assert load_paths([folder], stored_stamps=index.file_stamps).documents == [] and opened_files == []
    assert index.search("spring tides and the moon").nodes  # the tree is whole after the stamp update


def test_other_build_settings_read_every_file_again(make_index, folder, opened_files, tmp_path):
    location = str(tmp_path / "idx")
    index = make_index(collection="stamps_build", store=location)
    index.add_documents(load_paths([folder], stored_stamps=index.file_stamps).documents)
    index.close()
    # The same folder and index, other build settings: the stored trees are not what this index
    # would build, so no stamp counts and every file is read (and its tree rebuilt).
    other = make_index(collection="stamps_build", store=location, build=BuildConfig(branching=4))
    opened_files.clear()
    report = load_paths([folder], stored_stamps=other.file_stamps)
    assert sorted(opened_files) == sorted(Path(n).name for n in TEXTS) and report.unchanged == []
    assert sorted(other.add_documents(report.documents).replaced) == sorted(TEXTS)


def test_the_stamp_is_not_part_of_the_document_hash(make_index, folder):
    index = make_index(collection="stamps_hash")
    docs = load_paths([folder]).documents
    index.add_documents(docs)
    from dataclasses import replace

    moved = [replace(d, metadata={**d.metadata, FILE_STAMP_KEY: "1:2"}) for d in docs]
    report = index.add_documents(moved)
    assert sorted(report.unchanged) == sorted(TEXTS) and report.nodes_written == 0
    assert index.file_stamps(list(TEXTS)) == {d: "1:2" for d in TEXTS}  # only the stamps were written


def _found_stamps(folder: Path) -> dict:
    from drag_knee_retriever.loaders.discover import discover

    return {f.doc_id: f.stamp for f in discover([folder])[0]}


def _root_of(index, doc_id: str):
    return next(n for n in index.store.scroll_nodes(level=0, with_text=False) if n.doc_id == doc_id)


def _drop_root_from_the_nodes_only(store, root_id: str) -> None:
    """What an older release's delete leaves (it writes the nodes' collection only): the copy without its root."""
    if store.engine == "edge":
        store.shard.update(store._qe.UpdateOperation.delete_points([root_id]))
        store.shard.flush()
    else:
        from qdrant_client import models

        store.client.delete(store.collection, points_selector=models.PointIdsList(points=[root_id]))


def _stamp_on_the_nodes_only(store, root_id: str, stamp: str) -> None:
    """A stamp update cut between the root and its copy: the copy keeps the old stamp."""
    if store.engine == "edge":
        store.shard.update(store._qe.UpdateOperation.set_payload([root_id], {FILE_STAMP_KEY: stamp}, key="metadata"))
        store.shard.flush()
    else:
        store.client.set_payload(store.collection, payload={FILE_STAMP_KEY: stamp}, points=[root_id], key="metadata")


def test_the_stamp_lookup_answers_what_the_stored_roots_hold(engine, make_index, folder, opened_files, tmp_path):
    """``file_stamps`` reads the roots' own collection (the stamp alone): it must say what the
    stored roots say, never a copy's stale stamp (a root gone, a stamp update cut short) nor a
    stamp of other build settings, on a new folder and on one of the old layout alike."""
    location = str(tmp_path / "idx")
    index = make_index(collection="stamps_lookup", engine=engine, store=location)
    index.add_documents(load_paths([folder]).documents)
    assert index.file_stamps(list(TEXTS) + ["never-stored.txt"]) == _found_stamps(folder)

    # A root the nodes' collection lost (an older release deleted the document there only): its
    # copy's stamp must not count, or the file would be skipped and the document stay gone.
    gone = _root_of(index, "bees.txt")
    _drop_root_from_the_nodes_only(index.store, gone.id)
    stamps = index.file_stamps(list(TEXTS))
    assert "bees.txt" not in stamps and stamps == {k: v for k, v in _found_stamps(folder).items() if k != "bees.txt"}
    opened_files.clear()
    report = load_paths([folder], stored_stamps=index.file_stamps)
    assert opened_files == ["bees.txt"]
    index.add_documents(report.documents)  # the leftovers swept, the document whole again
    assert sorted(d.doc_id for d in index.list_documents()) == sorted(TEXTS)
    assert index.file_stamps(list(TEXTS)) == _found_stamps(folder)

    # A stamp update that reached the root but not its copy (cut between the two): the next open
    # brings the copy in step, so the file is not read again and again.
    _bump_mtime(folder / "tides.md")
    root = _root_of(index, "tides.md")
    new_stamp = f"{_found_stamps(folder)['tides.md']}|{index._ingestor.build_key()}"
    _stamp_on_the_nodes_only(index.store, root.id, new_stamp)
    index.close()
    index = make_index(collection="stamps_lookup", engine=engine, store=location)
    assert index.file_stamps(list(TEXTS)) == _found_stamps(folder)
    opened_files.clear()
    assert load_paths([folder], stored_stamps=index.file_stamps).documents == [] and opened_files == []

    # Other build settings: no stored stamp counts, whichever collection answers.
    index.close()
    other = make_index(collection="stamps_lookup", engine=engine, store=location, build=BuildConfig(branching=4))
    assert other.file_stamps(list(TEXTS)) == {}
    other.close()

    # The old layout (index format 1: no roots' copy): opened, it is brought to the new one, and
    # the stamps are the roots' own.
    index = make_index(collection="stamps_lookup", engine=engine, store=location)
    store = index.store
    meta = dict(store._meta_payloads()[0])
    meta["schema_version"] = 1
    from drag_knee_retriever.model._ids import META_IDS

    if engine == "edge":
        import shutil

        from drag_knee_retriever.store.base import EDGE_ROOTS_DIR

        for point_id in META_IDS:
            store.shard.update(store._qe.UpdateOperation.set_payload([point_id], meta))
        store.shard.flush()
        index.close()
        shutil.rmtree(store.path / EDGE_ROOTS_DIR)
    else:
        store.client.set_payload(store.collection, payload=meta, points=list(META_IDS))
        store.client.delete_collection(store.roots_collection)
        index.close()
    index = make_index(collection="stamps_lookup", engine=engine, store=location)
    assert index.store.collection_info()["schema_version"] == 2
    assert index.file_stamps(list(TEXTS)) == _found_stamps(folder)
    index.close()


def test_a_format_1_edge_index_opened_read_only_reads_the_stamps_of_its_roots(make_index, folder, tmp_path,
                                                                                monkeypatch):
    """Without room to make the roots' shard, a format-1 Edge index opens read-only and ranks its
    roots by the level filter: the stamp lookup reads the nodes' roots there too (a document's
    first leaf, fetched with its root's other possible id, never counts)."""
    import shutil

    from drag_knee_retriever.model._ids import META_IDS
    from drag_knee_retriever.store.base import EDGE_ROOTS_DIR
    from drag_knee_retriever.store.edge import roots as edge_roots  # where the free-space check is (_room_for_roots)

    location = str(tmp_path / "idx")
    index = make_index(collection="stamps_v1", engine="edge", store=location)
    index.add_documents(load_paths([folder]).documents)
    store = index.store
    meta = dict(store._meta_payloads()[0])
    meta["schema_version"] = 1
    for point_id in META_IDS:
        store.shard.update(store._qe.UpdateOperation.set_payload([point_id], meta))
    store.shard.flush()
    index.close()
    shutil.rmtree(store.path / EDGE_ROOTS_DIR)
    monkeypatch.setattr(edge_roots, "free_bytes", lambda path: 0)
    reopened = make_index(collection="stamps_v1", engine="edge", store=location)
    assert reopened.store.read_only and reopened.store._roots is None
    assert reopened.file_stamps(list(TEXTS)) == _found_stamps(folder)
