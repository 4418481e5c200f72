"""A damaged index never answers as if whole; its model cannot be taken over; a newer format is not
written by an older release (issue 25, items 4, 5, 8 and 10).

Real index folders, damaged the way a disk, a sync tool or a careless hand damages them: the id
tracker truncated or deleted, the segment folder removed, random bytes over the vector file, every
vector flagged deleted, the payload tracker zeroed (before: ``stats`` exited 0 and showed 1 of the
documents, rankings changed without a word, or "unexpected KeyError: 'doc_id'"). Opening now
checks the counts recorded at the last clean close and a sample of nodes, and says in one line
what is wrong and what to do (``store/integrity.py``).

A lost bookkeeping point let the first model to open the index record itself as the owner; the
identity is now kept in two points and the record file, restored from the survivors, and a
mismatch is refused. An index written by a newer release (a higher format) is opened read-only.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from drag_knee_retriever import Document, DragKneeIndex, StoreConfig
from drag_knee_retriever.errors import IndexDamagedError, ModelMismatchError, StoreError
from drag_knee_retriever.model._point_schema import SCHEMA_VERSION
from drag_knee_retriever.model._ids import META_COPY_ID, META_ID
from hardening_support import cli, cli_all
from support import ENGINES

EDGE_ONLY = pytest.mark.skipif("edge" not in ENGINES, reason="Qdrant Edge is not installed")
DOCS = 8


def _documents():
    return [Document(id=f"note{i}.txt", text="\n\n".join(
        f"Paragraph {j} of note {i}: the keeper of lighthouse {i} logs tides, storms and ships ({j}). " * 5
        for j in range(4))) for i in range(DOCS)]


@pytest.fixture(scope="module")
def built(tmp_path_factory, caching_encoder):
    """One closed index folder per engine, built once (copied by each test before it is damaged)."""
    folders = {}
    for engine in ENGINES:
        folder = tmp_path_factory.mktemp(f"built-{engine}") / "index"
        with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
            index.add_documents(_documents())
            folders[engine] = (folder, index.store.count())
    return folders


def _copy(source: Path, target: Path) -> Path:
    subprocess.run(["cp", "-r", "--sparse=always", str(source), str(target)], check=True)
    return target


def _segment(folder: Path) -> Path:
    segments = sorted(glob.glob(str(folder / "drag_knee" / "segments" / "*")), key=lambda p: -_size(p))
    return Path(segments[0])


def _size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _overwrite(path: Path, data: bytes) -> None:
    with open(path, "r+b") as handle:
        handle.write(data)


def _damage(folder: Path, kind: str, nodes: int) -> None:
    segment = _segment(folder)
    if kind == "id tracker truncated":
        tracker = segment / "mutable_id_tracker.mappings"
        os.truncate(tracker, tracker.stat().st_size // 3)
    elif kind == "id tracker deleted":
        (segment / "mutable_id_tracker.mappings").unlink()
    elif kind == "segment folder removed":
        shutil.rmtree(segment)
    elif kind == "random bytes in the vector file":
        _overwrite(segment / "vector_storage-dense" / "vectors" / "chunk_0.mmap",
                   np.random.default_rng(25).bytes((nodes + 2) * 384 * 4))
    elif kind == "every vector flagged deleted":
        flags = segment / "vector_storage-dense" / "deleted" / "flags_a.dat"
        _overwrite(flags, b"\xff" * flags.stat().st_size)
    elif kind == "payload tracker zeroed":
        for name in ("tracker.dat", "tracker_journal.dat"):
            tracker = segment / "payload_storage" / name
            _overwrite(tracker, b"\0" * tracker.stat().st_size)
    else:  # pragma: no cover
        raise AssertionError(kind)


DAMAGES = ["id tracker truncated", "id tracker deleted", "segment folder removed", "random bytes in the vector file",
           "every vector flagged deleted", "payload tracker zeroed"]


@EDGE_ONLY
def test_a_damaged_edge_index_says_so_on_open(built, tmp_path, caching_encoder):
    """Item 4 (and 8: the zeroed payload tracker's "unexpected KeyError: 'doc_id'"): each damage is
    refused on open with one line naming it, through the API and ``drag-knee stats``/``search``."""
    source, nodes = built["edge"]
    copies = {}
    for number, kind in enumerate(DAMAGES):
        copies[kind] = _copy(source, tmp_path / f"damaged{number}")
        _damage(copies[kind], kind, nodes)
    for kind, folder in copies.items():
        with pytest.raises(IndexDamagedError, match="is damaged.*Nothing was changed; restore the folder") as info:
            DragKneeIndex(folder, embedding=caching_encoder)
        assert str(folder) in str(info.value), (kind, str(info.value))
    # One command per folder at a time (a folder is locked to one process).
    stats = cli_all(tmp_path, [["stats", "--index", str(folder)] for folder in copies.values()])
    search = cli_all(tmp_path, [["search", "lighthouse tides", "--index", str(folder)] for folder in copies.values()])
    for proc in stats + search:
        assert proc.returncode == 1, (proc.args, proc.stdout[-500:], proc.stderr[-1500:])
        assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr, proc.stderr[-2000:]
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "is damaged" in lines[0] and "backup" in lines[0], (proc.args, proc.stderr[-1500:])


def test_an_undamaged_index_opens_after_writes_reopens_and_a_kill(built, tmp_path, caching_encoder, engine):
    """No false alarm: replaced and deleted documents, reopen after reopen, and a session that never
    closed (its counts are not recorded: the next open checks the sample only, then records)."""
    folder = _copy(built[engine][0], tmp_path / "index")
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        index.delete_document("note0.txt")
        index.add_documents([Document(id="note1.txt", text="A replaced note about fog horns.")])
        count = index.store.count()
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        assert index.store.count() == count and len(index.list_documents()) == DOCS - 1
        index.add_documents([Document(id="new.txt", text="A new note about harbours.")])
        index.store._close_record = lambda: None  # as if killed: the counts stay unrecorded
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        assert len(index.list_documents()) == DOCS
    record = _record_path(folder, engine)
    assert json.loads(record.read_text())["clean"] is True


def _record_path(folder: Path, engine: str) -> Path:
    return folder / "drag_knee" / "drag_knee_index.json" if engine == "edge" else folder / "drag_knee_index.json.drag_knee"


def test_lost_nodes_in_local_mode_are_noticed(built, tmp_path, caching_encoder):
    """Local mode keeps points in SQLite: half of its rows deleted by hand (a bad restore)."""
    if "local" not in ENGINES:
        pytest.skip("qdrant-client local mode is not installed")
    import sqlite3

    folder = _copy(built["local"][0], tmp_path / "index")
    with sqlite3.connect(folder / "collection" / "drag_knee" / "storage.sqlite") as db:
        db.execute("DELETE FROM points WHERE rowid % 2 = 0")
    with pytest.raises(IndexDamagedError, match=r"holds \d+ nodes? of \d+ documents?, but held"):
        DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine="local"))


# -- item 5: the model's identity -----------------------------------------------------------------


class OtherModel:
    """A stand-in dense model (not MiniLM): same dimension, another vector space (named as fake)."""

    model_id = "fake/other-model"

    def embed_documents(self, texts):
        return [self._vector(t) for t in texts]

    def embed_query(self, text):
        return self._vector(text)

    @staticmethod
    def _vector(text):
        raw = np.frombuffer(hashlib.sha512(text.encode()).digest() * 12, dtype=np.uint8)[:384].astype(float) - 127.5
        return list(raw / np.linalg.norm(raw))


def _drop_points(folder: Path, engine: str, ids) -> None:
    """Delete bookkeeping points the way a careless script would: through the engine itself."""
    if engine == "edge":
        import qdrant_edge as qe

        shard = qe.EdgeShard.load(str(folder / "drag_knee"))
        shard.update(qe.UpdateOperation.delete_points(list(ids)))
        shard.flush()
        shard.close()
    else:
        from qdrant_client import QdrantClient, models

        client = QdrantClient(path=str(folder))
        client.delete("drag_knee", points_selector=models.PointIdsList(points=list(ids)))
        client.close()


@pytest.mark.parametrize("lost", ["the point", "both points", "the record file"])
def test_a_lost_record_never_lets_another_model_take_over(lost, built, tmp_path, caching_encoder, engine):
    """Item 5, with a fake second model: after any one record is lost (here even both points),
    another model is refused and the real one opens, the lost records written again."""
    folder = _copy(built[engine][0], tmp_path / "index")
    if lost == "the record file":
        _record_path(folder, engine).unlink()
    else:
        _drop_points(folder, engine, [META_ID] if lost == "the point" else [META_ID, META_COPY_ID])
    with pytest.raises(ModelMismatchError, match="fake/other-model"):
        DragKneeIndex(folder, embedding=OtherModel(), store=StoreConfig(engine=engine))
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        assert index.stats()["stored_model"] == caching_encoder.model_id
        assert index.search("lighthouse tides").nodes
        payloads = index.store._meta_payloads()
    assert all(p and p["model_id"] == caching_encoder.model_id for p in payloads), payloads
    assert json.loads(_record_path(folder, engine).read_text())["meta"]["model_id"] == caching_encoder.model_id


def test_every_record_lost_or_records_that_disagree_are_refused(built, tmp_path, caching_encoder, engine):
    folder = _copy(built[engine][0], tmp_path / "index")
    _drop_points(folder, engine, [META_ID, META_COPY_ID])
    _record_path(folder, engine).unlink()
    with pytest.raises(IndexDamagedError, match="every record of the model that built them is lost"):
        DragKneeIndex(folder, embedding=OtherModel(), store=StoreConfig(engine=engine))
    other = _copy(built[engine][0], tmp_path / "other")
    record = _record_path(other, engine)
    data = json.loads(record.read_text())
    data["meta"]["model_id"] = "someone/else"
    record.write_text(json.dumps(data))
    with pytest.raises(IndexDamagedError, match="records of the model that built it disagree"):
        DragKneeIndex(other, embedding=caching_encoder, store=StoreConfig(engine=engine))


# -- item 10: an index of a newer format ----------------------------------------------------------


def _as_newer_release(folder: Path, engine: str, encoder, *, write: int, read: int) -> None:
    with DragKneeIndex(folder, embedding=encoder, store=StoreConfig(engine=engine)) as index:
        meta = dict(index.store._meta_payloads()[0])
        meta.update(schema_version=write, read_version=read, written_by="drag-knee-retriever 9.9.9")
        index.store._write_meta(meta["dense_size"], meta["model_id"], meta["sparse_model"], meta=meta)
        index.store._record_cache.meta = meta
    record = _record_path(folder, engine)
    data = json.loads(record.read_text())
    data["meta"] = meta
    record.write_text(json.dumps(data))


def test_an_index_of_a_newer_format_opens_read_only(built, tmp_path, caching_encoder, engine, caplog):
    """Item 10: an older release opened and wrote a newer index without a word. Now a release
    opens an index of a format it does not write read-only (searches work, writes are refused,
    saying so), and refuses one it cannot read."""
    folder = _copy(built[engine][0], tmp_path / "index")
    _as_newer_release(folder, engine, caching_encoder, write=SCHEMA_VERSION + 1, read=SCHEMA_VERSION)
    caplog.set_level(logging.WARNING)
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        assert "opens the index read-only" in caplog.text and "9.9.9" in caplog.text
        assert index.search("lighthouse tides").nodes and len(index.list_documents()) == DOCS
        for write in (lambda: index.add_documents([Document(id="x.txt", text="A note.")]),
                      lambda: index.delete_document("note0.txt"), index.sweep_orphans):
            with pytest.raises(StoreError, match="read-only.*writes are refused.*Upgrade"):
                write()
    unreadable = _copy(built[engine][0], tmp_path / "unreadable")
    _as_newer_release(unreadable, engine, caching_encoder, write=SCHEMA_VERSION + 2, read=SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match="cannot read. Nothing was changed; upgrade"):
        DragKneeIndex(unreadable, embedding=caching_encoder, store=StoreConfig(engine=engine))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "n.txt").write_text("A note about buoys.\n")
    ingest = cli(tmp_path, "ingest", "d", "--index", str(folder), "--engine", engine)
    search = cli(tmp_path, "search", "lighthouse", "--index", str(folder), "--engine", engine)
    assert ingest.returncode == 1 and "read-only" in ingest.stderr.strip().splitlines()[-1], ingest.stderr[-1500:]
    assert search.returncode == 0, search.stderr[-1500:]
