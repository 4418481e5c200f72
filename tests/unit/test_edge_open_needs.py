"""What opening an Edge index asks of the disk (disk.edge_open_needs), on sparse files made here.

The real measurements are the tmpfs tests (tests/hardening/test_disk_trouble.py); these pin which
files count: every sparse payload-index file of both shards (the nodes' and the roots' own), the
dense chunk files only where the shard keeps its vectors in RAM, never the log or the stores."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from drag_knee_retriever.common._disk import MIB, OPEN_MARGIN, edge_open_needs

SEGMENT = "segments/0a1b"


def sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)


def shard(folder: Path, *, on_disk: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "edge_config.json").write_text(json.dumps({"vectors": {"dense": {"size": 4, "on_disk": on_disk}}}))
    sparse(folder / SEGMENT / "payload_index/abc-level-map/page_0.dat", 2 * MIB)
    sparse(folder / SEGMENT / "payload_index/abc-level-null/is_null/flags_a.dat", 1 * MIB)
    sparse(folder / SEGMENT / "vector_storage-dense/vectors/chunk_0.mmap", 32 * MIB)
    sparse(folder / SEGMENT / "payload_storage/page_0.dat", 32 * MIB)
    sparse(folder / "wal/open-1", 32 * MIB)


def probe_sparse(tmp_path: Path) -> None:
    sparse(tmp_path / "probe", MIB)
    if os.stat(tmp_path / "probe").st_blocks * 512 >= MIB:
        pytest.skip("this file system does not keep sparse files")


def test_memory_mapped_vectors_are_not_counted_and_the_roots_shard_is(tmp_path):
    probe_sparse(tmp_path)
    nodes = tmp_path / "index" / "coll"
    shard(nodes, on_disk=True)
    assert edge_open_needs(nodes) == pytest.approx(3 * MIB + OPEN_MARGIN, abs=64 * 1024)
    shard(nodes / "roots", on_disk=True)
    assert edge_open_needs(nodes) == pytest.approx(6 * MIB + OPEN_MARGIN, abs=128 * 1024)


def test_vectors_held_in_ram_count_their_chunk(tmp_path):
    probe_sparse(tmp_path)
    nodes = tmp_path / "coll"
    shard(nodes, on_disk=False)
    assert edge_open_needs(nodes) == pytest.approx(35 * MIB + OPEN_MARGIN, abs=64 * 1024)
    # Settings that cannot be read: assume RAM, the larger need.
    (nodes / "edge_config.json").write_text("{not json")
    assert edge_open_needs(nodes) == pytest.approx(35 * MIB + OPEN_MARGIN, abs=64 * 1024)


def test_a_new_shard_asks_for_its_log_and_a_margin(tmp_path):
    assert edge_open_needs(tmp_path / "none") > 64 * MIB
    assert edge_open_needs(tmp_path / "none", wal=False) < 32 * MIB
