"""Raw exceptions and misleading advice (issue 25, items 8 and 9): one clear line that says what is
wrong and what to do, never a bare Python exception and never "the index is damaged" when it is not.

Each case is reproduced as an outsider met it: a bad ``--collection`` on the command line, a filter
nested 2,000 deep, a zeroed payload tracker in a real index folder, a lock file replaced by a
folder, a folder changing while it is walked.
"""

from __future__ import annotations

import pytest

from drag_knee_retriever import DragKneeIndex, StoreConfig
from drag_knee_retriever.errors import ConfigError
from hardening_support import cli_all


@pytest.mark.parametrize("name", ["a/b", "..", "a:b", "x" * 300])
def test_a_bad_collection_name_is_named_not_a_damaged_index(name, tmp_path):
    """Item 9: ``drag-knee ingest d --engine local --collection a/b`` said the index "is damaged or
    not a drag-knee index ... Move the folder aside"; the folder was new and fine."""
    with pytest.raises(ConfigError, match="collection .* cannot be used"):
        DragKneeIndex(tmp_path / "api", store=StoreConfig(engine="local", collection=name))


def test_cli_bad_collection_names_on_both_engines(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "note.txt").write_text("A note about lighthouses.\n")
    commands = [["ingest", "d", "--index", f"i-{engine}", "--engine", engine, "--collection", name]
                for engine in ("local", "edge") for name in ("a/b", "a:b")]
    for proc in cli_all(tmp_path, commands):
        assert proc.returncode == 1, (proc.args, proc.stderr[-1500:])
        line = proc.stderr.strip().splitlines()[-1]
        assert "collection " in line and "cannot be used" in line, (proc.args, proc.stderr[-1500:])
        assert "damaged" not in proc.stderr and "aside" not in proc.stderr, (proc.args, proc.stderr[-1500:])


def _small_index(folder, engine, encoder):
    from drag_knee_retriever import Document

    index = DragKneeIndex(folder, embedding=encoder, store=StoreConfig(engine=engine))
    index.add_documents([Document(id="a.txt", text="Lighthouses guide ships.\n\nKeepers log the tides.")])
    return index


def test_a_filter_nested_2000_deep_is_a_clear_error(engine, tmp_path, caching_encoder):
    """Item 8: ``{"$and": [{"$and": [... 2,000 deep]}]}`` raised a bare RecursionError (and a
    qdrant-client Filter nested as deep too)."""
    from qdrant_client import models

    from drag_knee_retriever.errors import InvalidQueryError

    deep = {"doc_id": "a.txt"}
    for _ in range(2000):
        deep = {"$and": [deep]}
    nested = models.Filter(must=[models.FieldCondition(key="doc_id", match=models.MatchValue(value="a.txt"))])
    for _ in range(2000):
        nested = models.Filter(must=[nested])
    with _small_index(tmp_path / "index", engine, caching_encoder) as index:
        for filters in (deep, nested):
            for run in (index.search, index.flat_search):
                with pytest.raises(InvalidQueryError, match="nested more than 32 levels deep.*flatten it"):
                    run("lighthouse", filters=filters)
        shallow = {"doc_id": "a.txt"}
        for _ in range(20):
            shallow = {"$and": [shallow]}
        assert index.search("lighthouse", filters=shallow).nodes  # deep enough for anyone, still runs


def test_a_lock_file_replaced_by_a_folder_is_named(engine, tmp_path, caching_encoder):
    """Item 8: a lock file replaced by a folder raised IsADirectoryError (both engines)."""
    from drag_knee_retriever.errors import StoreError

    folder = tmp_path / "index"
    _small_index(folder, engine, caching_encoder).close()
    lock = folder / "drag_knee" / "drag_knee.lock" if engine == "edge" else folder / ".lock"
    lock.unlink()
    lock.mkdir()
    with pytest.raises(StoreError, match="lock file .* is a folder.*Nothing was changed; if no other program"):
        DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine))
    (proc,) = cli_all(tmp_path, [["stats", "--index", str(folder), "--engine", engine]])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-1500:]
    assert "is a folder" in proc.stderr.strip().splitlines()[-1], proc.stderr[-1500:]
    lock.rmdir()  # the fix the message gives
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        assert index.list_documents()
