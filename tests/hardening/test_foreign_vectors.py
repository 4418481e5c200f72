"""Vectors or payloads that belong to other points are refused on open (issue 38, item 7).

Two real Edge index folders of the same shape (8 notes each, the same ids and tree shapes): one
about volcanoes, one about sourdough. One storage folder of the first index's segment (its dense
vectors, its BM25 vectors or its payloads; or the dense vectors of its roots' shard) is replaced by
the second's, or the dense vectors of one
index are permuted (the rows of the vector file, or rewritten through the engine by a careless
script, on both engines). Before: every one of these opened without a word, every vector still of
unit length and every count right, and a query about volcanoes was answered with a text about
sourdough. Each node now carries a check of its id, text and vectors in its payload
(``store/checksums.py``), compared on open with what the engine gives back for a sample of nodes.

The normal life of an index (replaces, deletes, reopens, adds, an unclosed session, float16 storage)
raises no false alarm, and an index written before the check existed still opens, saying so in the
log; its rewritten documents carry the check.
"""

from __future__ import annotations

import glob
import logging
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from drag_knee_retriever import Document, DragKneeIndex, StoreConfig
from drag_knee_retriever.errors import IndexDamagedError
from hardening_support import cli_all
from support import ENGINES

EDGE_ONLY = pytest.mark.skipif("edge" not in ENGINES, reason="Qdrant Edge is not installed")
DOCS = 8
TOPICS = {
    "volcano": "The volcano erupted at dawn and lava flowed down the slope, ash falling on the villages below",
    "sourdough": "The sourdough starter bubbled in its jar and the baker folded the dough before the long proof",
}
DAMAGED = "is damaged: .* do(es)? not hold the vectors and text written with (it|them).*Nothing was changed; restore"


def _documents(topic: str):
    line = TOPICS[topic]
    return [Document(id=f"note{i}.txt", text="\n\n".join(f"{line} (note {i}, part {j}). " * 5 for j in range(4)))
            for i in range(DOCS)]


@pytest.fixture(scope="module")
def built(tmp_path_factory, caching_encoder):
    """(topic, engine) -> (closed index folder, node count), built once and copied by each test."""
    folders = {}
    for engine in ENGINES:
        for topic in TOPICS:
            folder = tmp_path_factory.mktemp(f"{topic}-{engine}") / "index"
            with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
                index.add_documents(_documents(topic))
                folders[topic, engine] = (folder, index.store.count())
    assert folders["volcano", ENGINES[0]][1] == folders["sourdough", ENGINES[0]][1]  # the same shape
    return folders


def _copy(source: Path, target: Path) -> Path:
    subprocess.run(["cp", "-r", "--sparse=always", str(source), str(target)], check=True)
    return target


def _segment(folder: Path, shard: str = "") -> Path:
    """The one segment of the nodes' shard (``shard="roots"``: of the roots' own shard)."""
    segments = glob.glob(str(folder / "drag_knee" / shard / "segments" / "*"))
    assert len(segments) == 1, segments
    return Path(segments[0])


def _swap(folder: Path, other: Path, part: str) -> None:
    """Replace one storage folder of ``folder``'s segment by ``other``'s (as a bad restore or sync would)."""
    shard, _, part = part.rpartition("/")
    target = _segment(folder, shard) / part
    shutil.rmtree(target)
    shutil.copytree(_segment(other, shard) / part, target)


def _permute_rows(folder: Path, points: int) -> None:
    """Shift the rows of the dense vector file by one: every point holds its neighbour's vector."""
    chunk = _segment(folder) / "vector_storage-dense" / "vectors" / "chunk_0.mmap"
    with open(chunk, "r+b") as handle:
        rows = np.frombuffer(handle.read(points * 384 * 4), dtype=np.float32).reshape(points, 384)
        handle.seek(0)
        handle.write(np.roll(rows, 1, axis=0).tobytes())


def _permute_through_the_engine(folder: Path, engine: str) -> None:
    """A script that rewrites every node with another node's dense vector (payload and BM25 kept)."""
    if engine == "edge":
        import qdrant_edge as qe

        shard = qe.EdgeShard.load(str(folder / "drag_knee"))
        records, _ = shard.scroll(qe.ScrollRequest(limit=10_000, with_payload=True, with_vector=True))
        nodes = [r for r in records if r.payload and "doc_id" in r.payload]
        for record, other in zip(nodes, nodes[1:] + nodes[:1]):
            vectors = dict(record.vector, dense=other.vector["dense"])
            shard.update(qe.UpdateOperation.upsert_points([qe.Point(record.id, vectors, record.payload)]))
        shard.flush()
        shard.close()
    else:
        from qdrant_client import QdrantClient, models

        client = QdrantClient(path=str(folder))
        records, _ = client.scroll("drag_knee", limit=10_000, with_payload=True, with_vectors=True)
        nodes = [r for r in records if r.payload and "doc_id" in r.payload]
        client.upsert("drag_knee", [models.PointStruct(id=r.id, payload=r.payload,
                                                       vector=dict(r.vector, dense=o.vector["dense"]))
                                    for r, o in zip(nodes, nodes[1:] + nodes[:1])])
        client.close()


PARTS = {"dense vectors": "vector_storage-dense", "BM25 vectors": "vector_storage-bm25", "payloads": "payload_storage",
         "roots' dense vectors": "roots/vector_storage-dense"}


@EDGE_ONLY
def test_a_storage_folder_of_another_index_is_refused_on_open(built, tmp_path, caching_encoder):
    """The three storage folders swapped with another index's (and the dense vectors of the roots'
    own shard, which the first ranking of a search reads), and the dense vector file's rows shifted
    by one: each is refused on open, one line naming what is wrong, through the API and
    ``drag-knee stats``/``search`` (main opened all five and answered from the wrong vectors)."""
    volcano, nodes = built["volcano", "edge"]
    sourdough, _ = built["sourdough", "edge"]
    folders = {}
    for number, (what, part) in enumerate(PARTS.items()):
        folders[what] = _copy(volcano, tmp_path / f"swapped{number}")
        _swap(folders[what], sourdough, part)
    folders["permuted rows"] = _copy(volcano, tmp_path / "permuted")
    _permute_rows(folders["permuted rows"], nodes + 2)  # the nodes and the two bookkeeping points
    reasons = {}
    for what, folder in folders.items():
        with pytest.raises(IndexDamagedError, match=DAMAGED) as info:
            DragKneeIndex(folder, embedding=caching_encoder)
        message = str(info.value)
        assert "\n" not in message and str(folder) in message, message
        reasons[what] = message
        print(f"[hardening] foreign vectors: {what}: {message.split(' is damaged: ')[1].split(' Nothing')[0]}")
    assert "dense vector is not the one written" in reasons["dense vectors"]
    assert "BM25 vector is not the one written" in reasons["BM25 vectors"]
    assert "dense vector is not the one written" in reasons["permuted rows"]
    assert "dense vector is not the one written" in reasons["roots' dense vectors"]
    stats = cli_all(tmp_path, [["stats", "--index", str(folder)] for folder in folders.values()])
    search = cli_all(tmp_path, [["search", "volcano lava ash", "--index", str(folders[what])]
                                for what in ("dense vectors", "payloads")])
    for proc in stats + search:
        assert proc.returncode == 1, (proc.args, proc.stdout[-500:], proc.stderr[-1500:])
        assert "Traceback" not in proc.stderr and "sourdough" not in proc.stdout, proc.stderr[-2000:]
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "do not hold the vectors and text written" in lines[0], (proc.args, proc.stderr)


def test_dense_vectors_permuted_through_the_engine_are_refused(built, tmp_path, caching_encoder, engine):
    """Every node rewritten with its neighbour's dense vector by a script using the engine itself
    (counts, norms and payloads all as before): refused on open, on both engines."""
    folder = _copy(built["volcano", engine][0], tmp_path / "index")
    _permute_through_the_engine(folder, engine)
    with pytest.raises(IndexDamagedError, match=DAMAGED + ".*") as info:
        DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine))
    assert "dense vector is not the one written with its text" in str(info.value)


def _every_node_verifies(store) -> int:
    """Every stored node and root's copy (not a sample) carries a check that holds; returns how many
    nodes were checked."""
    from drag_knee_retriever.store.checksums import problem

    nodes = store._sample_nodes(100_000)
    assert nodes and len(nodes) == store.count()
    roots = store._sample_nodes(100_000, roots=True)
    assert len(roots) == len([node for node in nodes if node[1]["level"] == 0])
    found = {(point_id, level): problem(point_id, payload, dense, sparse)
             for level, sample in (("node", nodes), ("root's copy", roots))
             for point_id, payload, dense, sparse in sample}
    assert all(why == "" for why in found.values()), {k: v for k, v in found.items() if v != ""}
    return len(nodes)


def test_no_false_alarm_in_the_life_of_an_index(built, tmp_path, caching_encoder, engine):
    """Replaces, deletes, adds, reopens and an unclosed session: every open passes and every node's
    check holds against what the engine gives back (cosine-normalised, float32, BM25 terms sorted)."""
    folder = _copy(built["volcano", engine][0], tmp_path / "index")
    config = StoreConfig(engine=engine)
    with DragKneeIndex(folder, embedding=caching_encoder, store=config) as index:
        index.delete_document("note0.txt")
        index.add_documents([Document(id="note1.txt", text="A replaced note about a crater lake.\n\nIt is warm.")])
        _every_node_verifies(index.store)
    with DragKneeIndex(folder, embedding=caching_encoder, store=config) as index:
        index.add_documents(_documents("sourdough")[:2] + [Document(id="new.txt", text="Pumice floats on water.")])
        index.store._close_record = lambda: None  # as if killed: the counts stay unrecorded
    for _ in range(3):
        with DragKneeIndex(folder, embedding=caching_encoder, store=config) as index:
            assert len(index.list_documents()) == DOCS + 1
            assert _every_node_verifies(index.store) == index.store.count()
            assert index.search("volcano lava").nodes


@EDGE_ONLY
def test_no_false_alarm_with_float16_vectors(tmp_path, caching_encoder):
    """Edge storing dense vectors as float16 (EdgeStore(dense_datatype="float16")): the check's
    tolerance holds, through writes and reopens."""
    from drag_knee_retriever.store import EdgeStore

    folder = tmp_path / "index"
    for documents in (_documents("volcano"), _documents("sourdough")[:3], None):
        store = EdgeStore("drag_knee", location=str(folder), dense_datatype="float16")
        with DragKneeIndex(store, embedding=caching_encoder) as index:
            if documents:
                index.add_documents(documents)
            assert _every_node_verifies(index.store) == 5 * DOCS


def test_an_index_written_before_the_check_still_opens(built, tmp_path, caching_encoder, engine, monkeypatch, caplog):
    """Nodes without a check (an index of an earlier release: written here with the check switched
    off) are skipped and the log says so; a document written again carries the check."""
    import drag_knee_retriever.store.edge.writes as edge_writes
    import drag_knee_retriever.store.qdrant as qdrant_store

    folder = tmp_path / "index"
    for module in (edge_writes, qdrant_store):
        monkeypatch.setattr(module, "add_checks", lambda *args, **kwargs: None)
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        index.add_documents(_documents("volcano"))
    monkeypatch.undo()
    caplog.set_level(logging.INFO, logger="drag_knee_retriever.store.integrity")
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        assert "written before nodes carried a check" in caplog.text
        index.add_documents([Document(id="note3.txt", text="A rewritten note about obsidian.\n\nSharp glass.")])
        rewritten = [node for node in index.store._sample_nodes(10_000) if node[1]["doc_id"] == "note3.txt"]
    from drag_knee_retriever.store.checksums import problem

    assert rewritten and all(problem(*node) == "" for node in rewritten)
    caplog.clear()
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as index:
        assert index.search("obsidian").nodes
