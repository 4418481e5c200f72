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
from drag_knee_retriever.nodes import FILE_STAMP_KEY

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
