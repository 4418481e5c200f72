"""What an index records about itself, where it keeps that, and the check run every time it opens.

An index records three things: which models built it (dense model, its dimension, BM25 model: a
search with another model mixes two vector spaces), which format it is written in (so that an
older release never writes a layout it does not know), and, for an embedded folder, how many nodes
and documents it held when it was last closed (so that lost files are noticed).

**Where.** The records live in two bookkeeping points of the collection (``META_ID`` and its copy
``META_COPY_ID``, see :mod:`drag_knee_retriever.model._ids`: no search or count sees them) and, for an embedded folder,
in a file beside the engine's (:data:`RECORD_FILE`: ``<folder>/<collection>/drag_knee_index.json``
for Qdrant Edge, ``<folder>/drag_knee_index.json.<collection>`` for local mode). Any one of them
may be lost (a deleted point, a removed segment, a deleted file): the others still say which model
built the index, the lost ones are written again, and records that disagree are refused. Only when
every record is lost while nodes remain is the model unknown: the index is then refused, never
adopted by the first model that opens it.

**The check on open** (:func:`open_existing`), cheap enough to run every time:

1. the format: an index of a newer format than this release writes is opened read-only (writes
   refused, saying why); one that this release cannot even read is refused;
2. the model, against every record (above);
3. the counts: when the folder was closed cleanly and no write is pending, the engine's own
   count of nodes (its count of points less the bookkeeping points) and of documents (roots,
   through the level index) must be the recorded ones (a truncated or deleted id tracker, a removed segment
   folder: 1 of 20 documents left, answering as if whole);
4. a sample of the stored nodes: the first :data:`SAMPLE` in the engine's id order, and the first
   :data:`ROOTS_SAMPLE` of the roots' own collection (ids are hashes of a document id and a place,
   so these are spread over documents and levels; a scroll from a random id would cost Edge ~9 ms
   at 20,000 nodes, from the first ~1 ms). Each must have its payload's tree fields and a finite
   dense vector of the recorded size and unit length (the engine normalises cosine vectors when
   it stores them): random bytes written over the vector file, or every vector flagged deleted,
   change every ranking without an error. And each must hold the vectors and text written with
   it (the check in its payload, :mod:`.checksums`): a storage folder of another index of the same
   shape, or dense vectors permuted, pass every test above. Nodes of an earlier release (no
   check) are skipped, and the log says so.

A failed check raises :class:`~drag_knee_retriever.errors.IndexDamagedError`: one line, what is
wrong and what to do; nothing is changed. Counts are kept exact cheaply: the record is marked
"writing" (one small file write) before the first write of a session and the counts are recorded
when the store closes; a session that never closes (a crash) leaves "writing", and the next open
skips the count check once (the sample check still runs) and records the counts when it closes.
Measured: ``benchmarks/open_check.py``.

This module is the one place these rules live: a new collection layout (a roots' collection, a
second shard) extends :func:`record_counts` and :func:`check_intact` here.
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import numpy as np

from drag_knee_retriever.errors import IndexDamagedError, StoreError, StoreIOError
from drag_knee_retriever.model._point_schema import library
from drag_knee_retriever.store import checksums

log = logging.getLogger(__name__)

RECORD_FILE = "drag_knee_index.json"
#: Nodes whose payload and dense vector are read on every open (one request).
SAMPLE = 64
#: Roots' copies read on every open from the roots' own collection (one request; the first ranking
#: of a search reads there).
ROOTS_SAMPLE = 16
#: A stored cosine vector's norm is 1 to float32 rounding (float16 storage: ~1e-3); anything
#: further from 1 is not a vector the engine stored.
NORM_TOLERANCE = 0.02
#: The fields without which a stored point is not a node of ours.
NODE_FIELDS = ("doc_id", "level", "is_leaf", "first_leaf", "last_leaf")
#: The bookkeeping fields that say which models built the index.
IDENTITY_FIELDS = ("model_id", "dense_size", "sparse_model")


def identity(meta: Mapping[str, Any]) -> Tuple[Any, ...]:
    """The model identity a bookkeeping payload records (what must match for a search to make sense)."""
    return tuple(meta.get(name) for name in IDENTITY_FIELDS)


@dataclass
class IndexRecord:
    """The file record of an embedded index (see the module docstring)."""

    meta: Dict[str, Any] = field(default_factory=dict)
    #: The nodes the engine held: its own count of points (O(1)) less the bookkeeping points.
    nodes: Optional[int] = None
    documents: Optional[int] = None
    #: True when the counts were recorded by a clean close and nothing was written since.
    clean: bool = False
    written_by: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "IndexRecord":
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("meta", {}), dict):
            raise ValueError("not a record")
        return cls(meta=dict(data.get("meta") or {}), nodes=_int_or_none(data.get("nodes")),
                   documents=_int_or_none(data.get("documents")), clean=bool(data.get("clean")),
                   written_by=str(data.get("written_by") or ""))


def _int_or_none(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class RecordFile:
    """The record file of an embedded index: read once when opened, replaced atomically (fsynced)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lost = False  # a file that was there could not be read (kept aside, never overwritten blindly)

    def load(self) -> Optional[IndexRecord]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("could not read %s (%s); the index's other records are used", self.path, exc)
            self.lost = True
            return None
        try:
            return IndexRecord.from_json(text)
        except (ValueError, TypeError) as exc:
            log.warning("%s is not a valid record (%s); the index's other records are used", self.path, exc)
            self.lost = True
            return None

    def save(self, record: IndexRecord) -> None:
        temp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(temp, "w", encoding="utf-8") as handle:
                handle.write(record.to_json())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except OSError as exc:
            raise StoreIOError(
                f"Could not write the index record {str(self.path)!r} ({exc.strerror or exc}). Nothing else was "
                "written; free disk space or fix the folder's permissions and retry.",
                errno_code=exc.errno,
            ) from exc


def recorded_meta(store: Any) -> Optional[Dict[str, Any]]:
    """The bookkeeping payload of the index from any record that survives (the point, its copy,
    the file), or None for a new collection (or one whose every record is lost)."""
    for meta in list(store._meta_payloads()) + [_file_meta(store)]:
        if meta and meta.get("model_id"):
            return dict(meta)
    return None


def _file_meta(store: Any) -> Optional[Dict[str, Any]]:
    record = getattr(store, "_record_cache", None)
    if record is None and getattr(store, "record", None) is not None:
        record = store.record.load()
        store._record_cache = record
    return record.meta if record is not None else None


def open_existing(store: Any, *, dense_size: int, model_id: str, sparse_model: str, current_format: int,
                  compatible: Callable[..., None]) -> None:
    """Every check of an existing collection before it answers (see the module docstring); restores
    lost records. ``current_format``: the index format this release writes; ``compatible``: the
    model check (``store.base.check_collection_compatible``). Raises :class:`ModelMismatchError`,
    :class:`IndexDamagedError` or :class:`StoreError`."""
    where = describe(store)
    points = list(store._meta_payloads())
    record = store.record.load() if store.record is not None else None
    store._record_cache = record
    metas = [m for m in points if m and m.get("model_id")]
    if record is not None and record.meta.get("model_id"):
        metas.append(record.meta)
    if len({identity(m) for m in metas}) > 1:
        found = "; ".join(sorted({f"{m.get('model_id')!r} ({m.get('dense_size')} dims, {m.get('sparse_model')})"
                                  for m in metas}))
        raise IndexDamagedError(
            f"The index {where} is damaged: its records of the model that built it disagree ({found}), so it "
            "cannot say which one its vectors are from. Nothing was changed; restore the folder from a backup, "
            "or move it aside and ingest the documents again."
        )
    meta = max(metas, key=lambda m: int(m.get("schema_version") or 1)) if metas else None
    if meta is None:
        nodes = store.count()
        if nodes:
            raise IndexDamagedError(
                f"The index {where} holds {nodes:,} nodes but every record of the model that built them is lost "
                "(its bookkeeping points and its record file), so no model can be checked against it and none "
                "is adopted. Nothing was changed; restore the folder from a backup (or its "
                f"{RECORD_FILE}), or move it aside and ingest the documents again."
            )
        store._write_meta(dense_size, model_id, sparse_model)  # an empty collection: nothing to mix up
        _save(store, IndexRecord(meta=_current_meta(store), clean=False))
        return
    _check_format(store, meta, current_format, where)
    compatible(meta, collection=str(getattr(store, "collection", "?")), model_id=model_id,
                                dense_size=dense_size, sparse_model=sparse_model)
    check_intact(store, record, int(meta.get("dense_size") or dense_size), where)
    if store.read_only:
        return
    if len([m for m in points if m and m.get("model_id")]) < 2:
        log.warning("%s: a bookkeeping point was lost; written again from the index's other records", where)
        store._write_meta(int(meta["dense_size"]), str(meta["model_id"]), str(meta.get("sparse_model") or ""),
                          meta=meta)
    if store.record is not None and (record is None or record.meta != meta):
        if record is None and not store.record.lost and store.count():
            log.info("%s: no record file yet (an index of an earlier release); it is written now", where)
        _save(store, IndexRecord(meta=dict(meta), nodes=record.nodes if record else None,
                                 documents=record.documents if record else None,
                                 clean=bool(record and record.clean)))


def _check_format(store: Any, meta: Mapping[str, Any], current: int, where: str) -> None:
    """Refuse an index this release cannot read; open one it cannot write read-only, saying so."""
    written = int(meta.get("schema_version") or 1)
    readable_from = int(meta.get("read_version") or 1)
    by = meta.get("written_by") or "a newer release of drag-knee-retriever"
    if readable_from > current:
        raise StoreError(
            f"The index {where} was written by {by} in index format {written}, which this release "
            f"({library()}, format {current}) cannot read. Nothing was changed; upgrade "
            "(pip install -U drag-knee-retriever) to open it."
        )
    if written > current:
        store.read_only = (
            f"The index {where} was written by {by} in index format {written}; this release ({library()}) "
            f"writes format {current}, so it opens the index read-only: searches and listings work, writes are "
            "refused. Upgrade (pip install -U drag-knee-retriever) to write to it."
        )
        log.warning("%s", store.read_only)


def check_intact(store: Any, record: Optional[IndexRecord], dense_size: int, where: str = "") -> None:
    """Counts against the record (after a clean close, nothing pending), then a sample of nodes."""
    pending = store.pending.snapshot() if store.pending is not None else set()
    where = where or describe(store)
    if record is not None and record.clean and record.nodes is not None and not pending:
        nodes = _engine(store, lambda: node_count(store), where)
        documents = _engine(store, store.count_roots, where)
        if nodes != record.nodes or (record.documents is not None and documents != record.documents):
            was = _count(record.nodes, "node") + (f" of {_count(record.documents, 'document')}"
                                                  if record.documents is not None else "")
            raise IndexDamagedError(
                f"The index {where} is damaged: it holds {_count(nodes, 'node')} of {_count(documents, 'document')}, "
                f"but held {was} when it was last closed (a file of the engine was truncated, deleted or replaced; "
                f"or a release older than this one wrote to it). {_what_to_do(store)}"
            )
    check_sample(store, dense_size, where)


def check_sample(store: Any, dense_size: int, where: str = "") -> None:
    """Up to :data:`SAMPLE` nodes and :data:`ROOTS_SAMPLE` roots' copies: each readable (tree fields, a unit dense vector of the recorded
    size) and holding the vectors and text written with it (its check, :mod:`.checksums`); nodes
    written before checks existed are skipped, and logged."""
    where = where or describe(store)
    read = _engine(store, lambda: store._sample_nodes(SAMPLE) + store._sample_nodes(ROOTS_SAMPLE, roots=True),
                   where)
    sample = [(point_id, payload, None if vector is None else np.asarray(vector, dtype=np.float64), sparse)
              for point_id, payload, vector, sparse in read]
    bad = [(point_id, why) for point_id, payload, vector, _ in sample
           for why in [_node_problem(payload, vector, dense_size)] if why]
    if bad:
        point_id, why = bad[0]
        raise IndexDamagedError(
            f"The index {where} is damaged: {len(bad)} of the {_count(len(sample), 'node')} checked on opening "
            f"{'is' if len(bad) == 1 else 'are'} unreadable (node {point_id}: {why}). {_what_to_do(store)}"
        )
    found = list(zip([node[0] for node in sample], checksums.problems(sample)))
    bad = [(point_id, why) for point_id, why in found if why]
    if bad:
        point_id, why = bad[0]
        raise IndexDamagedError(
            f"The index {where} is damaged: {len(bad)} of the {_count(len(sample), 'node')} checked on opening "
            f"{'does' if len(bad) == 1 else 'do'} not hold the vectors and text written with "
            f"{'it' if len(bad) == 1 else 'them'} (node {point_id}: {why}). {_what_to_do(store)}"
        )
    unchecked = sum(1 for _, why in found if why is None)
    if unchecked:
        log.info("%s: %d of the %d nodes sampled on opening were written before nodes carried a check of their "
                 "vectors (an earlier release); they are checked once their documents are written again",
                 where, unchecked, len(sample))


def _what_to_do(store: Any) -> str:
    if getattr(store, "engine", None) == "server":
        return ("Nothing was changed; restore the collection from a snapshot, or delete it and ingest the "
                "documents again.")
    return ("Nothing was changed; restore the folder from a backup, or move it aside and ingest the "
            "documents again (drag-knee does not repair an engine's files).")


def describe(store: Any) -> str:
    """How messages name an index: its folder and collection (a server: the engine's own words)."""
    location = getattr(store, "location", None) or getattr(store, "_where", None)
    if getattr(store, "engine", None) in ("edge", "local") and location and location != ":memory:":
        return f"in {str(location)!r} (collection {getattr(store, 'collection', '?')!r})"
    return store.describe()


def _count(value: int, noun: str) -> str:
    return f"{value:,} {noun}{'' if value == 1 else 's'}"


def _engine(store: Any, call: Any, where: str) -> Any:
    """An engine call of the check; an engine that fails on its own files means a damaged index."""
    try:
        return call()
    except (IndexDamagedError, StoreIOError):
        raise
    except Exception as exc:
        if getattr(store, "engine", None) == "server":  # a server's failure is not a damaged folder
            raise
        raise IndexDamagedError(
            f"The index {where} is damaged: the engine cannot read it ({type(exc).__name__}: {str(exc)[:200]}). "
            "Nothing was changed; restore the folder from a backup, or move it aside and ingest the documents "
            "again."
        ) from None


def _node_problem(payload: Optional[Mapping[str, Any]], vector: Any, dense_size: int) -> str:
    missing = [name for name in NODE_FIELDS if not payload or name not in payload]
    if missing:
        return f"its payload has no {missing[0]!r}"
    if vector is None:
        return "it has no dense vector (flagged deleted?)"
    if len(vector) != dense_size:
        return f"its dense vector has {len(vector)} values, not {dense_size}"
    norm = float(np.linalg.norm(np.asarray(vector, dtype=np.float64)))
    if not math.isfinite(norm) or abs(norm - 1.0) > NORM_TOLERANCE:
        return f"its dense vector has length {norm:.3g}, not 1 (overwritten?)"
    return ""


def _current_meta(store: Any) -> Dict[str, Any]:
    points = [m for m in store._meta_payloads() if m and m.get("model_id")]
    return dict(points[0]) if points else {}


def _save(store: Any, record: IndexRecord) -> None:
    if store.record is None or store.read_only:
        return
    record.written_by = library()
    store.record.save(record)
    store._record_cache = record


def node_count(store: Any) -> int:
    """The stored nodes, cheaply: the engine's own count of points less the bookkeeping points
    present (a lost bookkeeping point is restored, not counted as a lost node)."""
    return store.count_points() - sum(1 for meta in store._meta_payloads() if meta)


def note_write(store: Any) -> None:
    """Before the first write of a session: the record's counts stop being valid (one file write)."""
    if store.record is None or store.read_only or store._write_noted:
        return
    store._write_noted = True
    record = store._record_cache if store._record_cache is not None else store.record.load()
    record = record or IndexRecord(meta=_current_meta(store))
    record.clean = False
    _save(store, record)


def record_counts(store: Any) -> None:
    """When the store closes after its writes were flushed: the counts it holds, recorded as clean.

    Skipped for a read-only store and one whose record says nothing was written since the last clean
    close (so a search-only session writes nothing)."""
    if store.record is None or store.read_only:
        return
    record = store._record_cache if store._record_cache is not None else store.record.load()
    if record is not None and record.clean and not store._write_noted:
        return
    meta = _current_meta(store) or (record.meta if record is not None else {})
    if not meta:
        return
    if store.pending is not None and store.pending.snapshot():
        return  # rootless leftovers to sweep: the counts are not the index's yet
    _save(store, IndexRecord(meta=meta, nodes=node_count(store), documents=store.count_roots(), clean=True))


__all__ = ["IndexRecord", "RECORD_FILE", "RecordFile", "SAMPLE", "check_intact", "check_sample", "describe", "identity",
           "note_write", "open_existing", "record_counts", "recorded_meta"]
