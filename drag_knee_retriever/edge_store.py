"""The embedded default store: Qdrant Edge (``qdrant-edge-py``), the Qdrant engine in process.

Every ``qdrant_edge`` call of the library lives in this module, so an API change of the (beta)
package touches one file. The semantics are those of :class:`~drag_knee_retriever.store.QdrantClientStore`
(same vector names, payload, bookkeeping point, fusion and tie-breaking), which the congruence tests
check request by request.

Decisions, each measured on the 2-core development machines (see ``benchmarks/engine.py``):

- **Exact search, no HNSW.** Edge builds HNSW graphs only when ``optimize()`` runs over a segment
  above ``indexing_threshold``. Measured on real MiniLM embeddings (COVID-QA paragraphs + HotpotQA
  sentences: 9,406 leaves, 1,092 document roots as centroids, 1,480 real questions), default HNSW
  (m=16, ef_construct=100) against exact search:

  - root ranking (``level=0``, 1,092 roots): recall@10 1.000, because a filter that small is
    below the planner's full-scan threshold (~6,600 384-d vectors) and is scanned exactly anyway;
  - flat top-10 over the 9,406 leaves: recall@10 0.992, only 94.6% of questions got the exact top
    10 and some got none of it (min 0.0); hnsw_ef=512 reaches 0.999 at 1.4 ms; m=32,
    ef_construct=200 reaches 0.9987 at 1.2 ms, while the exact scan takes 2.0 ms;
  - building the graph took 6.8 s for those 10.5k points (57 s for 50k random points) and raised
    resident memory by ~70% at 50k (357 -> 603 MB).

  Saving about a millisecond per flat query is not worth a wrong top 10 for one question in
  twenty, seconds of optimisation after every ingest and the memory; candidate-set rankings (the
  walk below the roots) are exact in any case. So indexing is off (``indexing_threshold=0``), every
  request is an exact scan in Rust, and both engines agree. A flat scan over 50k nodes costs ~7 ms;
  above ~100k nodes, move to a Qdrant server (``url=``), which indexes with HNSW.
- **Booleans in filters.** qdrant-edge-py 0.9.0 converts ``MatchValue(True)`` to the integer 1 (a
  Python bool is an int), so it matches no boolean payload; ``numpy.bool_`` reaches the engine as a
  boolean. :func:`_match_value` does that conversion for every bool (``is_leaf`` and metadata).
- **RRF.** Edge's ``Fusion.Rrf(k, weights)`` gives the scores of qdrant-client local mode exactly,
  ``sum_i 1 / ((rank_i + 1) / w_i + k - 1)`` with 0-based ranks (= ``w / (k + rank)`` only when
  ``w = 1``), including a weight of 0 (that side contributes 0 and its points still appear with
  score 0). ``k = 0`` is rejected by qdrant-client and gives infinite scores in Edge, so this store
  rejects it too.
- **One process per folder.** Edge's own WAL lock makes a second ``load`` fail with an opaque
  "WouldBlock"; we hold an ``fcntl.flock`` on ``<folder>/<collection>/drag_knee.lock`` while open
  and raise :class:`StoreLockedError` naming the holder's pid.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .errors import ConfigError, InvalidQueryError, ModelMismatchError, StoreError, StoreLockedError
from .nodes import TreeNode
from .store import (
    _META_ID,
    DENSE,
    SCHEMA_VERSION,
    SPARSE,
    FilterSpec,
    NodeRecord,
    NodeStore,
    QueryVectors,
    RankedHit,
    RankRequest,
    _stable_order,
)

try:  # POSIX advisory locks; elsewhere Edge's own WAL lock is the only guard.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

EDGE_PACKAGE = "qdrant-edge-py"
EDGE_VERSION = "0.9.0"  # pinned in pyproject.toml; the API of this beta package drifts between releases
LOCK_FILE = "drag_knee.lock"
_MEMORY_PREFIX = "drag-knee-edge-"  # folders of ":memory:" stores (in /dev/shm or TMPDIR)
_ORPHAN_AGE_S = 60.0
_MIN_SHM_FREE = 2 << 30  # bytes of /dev/shm that must be free to hold a ":memory:" index there
_SHARD_MARKER = "edge_config.json"  # written by EdgeShard.create; its presence means "load, not create"

# Payload indexes: they let the query planner resolve level / leaf / document conditions without
# scanning payloads (and are what a future HNSW would need for filtered search).
_PAYLOAD_INDEXES = (
    ("doc_id", "Keyword"),
    ("level", "Integer"),
    ("is_leaf", "Bool"),
    ("parent_id", "Keyword"),
    ("doc_hash", "Keyword"),
)

def _import_edge() -> Any:
    try:
        import qdrant_edge
    except ImportError as exc:  # pragma: no cover - it is a core dependency
        raise StoreError(
            f"Qdrant Edge is not installed ({exc}). Install it with `pip install {EDGE_PACKAGE}=={EDGE_VERSION}`, "
            "or choose engine='local' (qdrant-client local mode) or engine='server' (url=...)."
        ) from None
    return qdrant_edge


def _match_value(qe: Any, value: Any) -> Any:
    """A MatchValue the engine reads with the right type (see the module docstring on booleans)."""
    if isinstance(value, bool):
        return qe.MatchValue(np.bool_(value))
    return qe.MatchValue(value)


@contextlib.contextmanager
def _engine_errors(what: str) -> Iterator[None]:
    """Turn the engine's bare exceptions into a StoreError that says what was being done."""
    try:
        yield
    except (StoreError, StoreLockedError, ModelMismatchError, InvalidQueryError):
        raise
    except Exception as exc:
        raise StoreError(f"Qdrant Edge failed to {what}: {exc}") from exc


class _FolderLock:
    """An exclusive ``flock`` on a file inside the shard folder, held while the store is open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: Optional[int] = None

    def acquire(self, describe: str) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = ""
            with contextlib.suppress(OSError, ValueError):
                text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                if text:
                    holder = f" (pid {int(text)})"
            os.close(fd)
            raise StoreLockedError(
                f"The index folder {describe} is open in another process{holder} or another index in this "
                "process. Close that process (or its DragKneeIndex) first; for shared access from several "
                "processes, use a Qdrant server (url=...)."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            os.close(fd)


def _memory_dir() -> Optional[str]:
    """Where a ":memory:" index keeps its files: a RAM file system when one has room.

    Edge needs a folder and syncs its files on every schema change; on a disk that made creating
    an empty index take 0.3-1 s, on /dev/shm (tmpfs) about 50 ms. Small shared-memory mounts (as in
    some containers) are skipped, since an index that outgrows them would fail mid-write.
    """
    shm = "/dev/shm"
    try:
        if os.path.isdir(shm) and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= _MIN_SHM_FREE:
            return shm
    except OSError:
        pass
    return None  # the system temporary folder (TMPDIR)


def _sweep_orphans(parent: str) -> None:
    """Delete the folders of ":memory:" stores whose process died without closing them.

    A store removes its folder on close() and at interpreter exit, but a killed process cannot,
    and on /dev/shm the files would hold RAM until reboot. A folder is an orphan when it is older
    than a minute (so a store being created right now is never touched) and no lock inside it is
    held: a live store holds its flock for as long as it is open.
    """
    if fcntl is None:  # pragma: no cover - Windows: no way to tell a live store from a dead one
        return
    now = time.time()
    try:
        candidates = [p for p in Path(parent).glob(_MEMORY_PREFIX + "*") if p.is_dir()]
    except OSError:
        return
    for folder in candidates:
        try:
            if now - folder.stat().st_mtime < _ORPHAN_AGE_S or any(_is_held(lock) for lock in folder.glob("*/" + LOCK_FILE)):
                continue
        except OSError:
            continue
        log.info("removing %s, left behind by a process that did not close its in-memory index", folder)
        shutil.rmtree(folder, ignore_errors=True)


def _is_held(lock: Path) -> bool:
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing the descriptor also drops the probe's own lock
    return False


def _uuid_ranks(points: Sequence[Any]) -> Dict[Any, int]:
    return {p.id: rank for rank, p in enumerate(points)}


def _cleanup(lock: _FolderLock, temp_dir: Optional[str]) -> None:
    # Runs at close() or, if the store was never closed, when it is garbage-collected / at exit.
    lock.release()
    if temp_dir:
        shutil.rmtree(temp_dir, ignore_errors=True)


class EdgeStore(NodeStore):
    """A node store on Qdrant Edge: in process, persistent in a folder or ephemeral (``":memory:"``).

    ``location`` is a folder (the shard lives in ``<folder>/<collection>/``) or ``":memory:"`` /
    ``None`` (a temporary folder, deleted on :meth:`close`: Edge always needs a path). A folder is
    locked to one open store; a second one, in this or another process, raises
    :class:`~drag_knee_retriever.errors.StoreLockedError`.
    """

    engine = "edge"

    def __init__(self, collection: str, *, location: Optional[str] = ":memory:", upsert_batch_size: int = 256) -> None:
        super().__init__()
        if not isinstance(collection, str) or not collection.strip() or collection in (".", "..") or any(
            sep in collection for sep in ("/", "\\", "\0")
        ):
            raise ConfigError(
                f"collection {collection!r} is used as a folder name by the Edge engine; give a plain name "
                "without path separators, e.g. 'drag_knee'."
            )
        if not isinstance(upsert_batch_size, int) or upsert_batch_size < 1:
            raise ConfigError(f"upsert_batch_size must be an integer >= 1, got {upsert_batch_size!r}.")
        self._qe = _import_edge()
        self.collection = collection
        self.upsert_batch_size = upsert_batch_size
        self.in_memory = location in (None, ":memory:")
        self._temp_dir: Optional[str] = None
        if self.in_memory:
            base_dir = _memory_dir()
            _sweep_orphans(base_dir or tempfile.gettempdir())
            self._temp_dir = tempfile.mkdtemp(prefix=_MEMORY_PREFIX, dir=base_dir)
            base = Path(self._temp_dir)
        else:
            base = Path(os.fspath(location)).expanduser()
            if base.exists() and not base.is_dir():
                raise ConfigError(f"location {str(base)!r} is a file; give a folder path (or ':memory:').")
            if (base / "collection" / collection / "storage.sqlite").exists() and not (base / collection / _SHARD_MARKER).exists():
                # Opening it as Edge would silently show an empty index next to the real one.
                raise StoreError(
                    f"The folder {str(base)!r} holds a qdrant-client local-mode index of collection {collection!r}, "
                    "not a Qdrant Edge index. Open it with engine='local', or re-ingest the documents into a "
                    "new folder to use the (faster) Edge engine."
                )
        self.location = ":memory:" if self.in_memory else str(base)
        self.path = base / collection
        self._shard: Any = None
        self._deleted = False
        self._closed = False
        self._lock = _FolderLock(self.path / LOCK_FILE)
        self._finalizer = weakref.finalize(self, _cleanup, self._lock, self._temp_dir)
        self._lock.acquire(f"{str(base)!r} (collection {collection!r})")
        try:
            if (self.path / _SHARD_MARKER).exists():
                with _engine_errors(f"load the index in {str(self.path)!r} (is it a drag-knee Edge index?)"):
                    self._shard = self._qe.EdgeShard.load(str(self.path))
        except Exception:
            self._finalizer()
            raise

    def describe(self) -> str:
        return f"qdrant-edge {EDGE_VERSION} ({self.location})"

    @property
    def shard(self) -> Any:
        """The open ``EdgeShard`` (after :meth:`open_collection` or when loaded from a folder)."""
        if self._closed:
            raise StoreError("This Edge store is closed; open a new DragKneeIndex to use the index again.")
        if self._shard is None:
            raise StoreError(
                f"Collection {self.collection!r} does not exist yet in {self.location!r}; "
                "call open_collection() (DragKneeIndex does) before reading or writing."
            )
        return self._shard

    # -- schema --------------------------------------------------------------------------------

    def open_collection(self, *, dense_size: int, model_id: str, sparse_model: str) -> None:
        qe = self._qe
        self._count()
        if self._shard is not None:
            self._check_existing_collection(dense_size=dense_size, model_id=model_id, sparse_model=sparse_model)
            return
        config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=dense_size, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            # indexing_threshold=0 switches HNSW building off: every search stays exact (module docstring).
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=0),
            # An ephemeral index needs no write-ahead log (upserts ~35% faster without it).
            wal_enabled=not self.in_memory,
        )
        with _engine_errors(f"create the index in {str(self.path)!r}"):
            self._shard = qe.EdgeShard.create(str(self.path), config)
            for field, schema in _PAYLOAD_INDEXES:
                self._shard.update(qe.UpdateOperation.create_field_index(field, getattr(qe.PayloadSchemaType, schema)))
        self._write_meta(dense_size, model_id, sparse_model)

    def _write_meta(self, dense_size: int, model_id: str, sparse_model: str) -> None:
        qe = self._qe
        # Same bookkeeping point as QdrantClientStore: no doc_id / level / is_leaf, so no search
        # (always restricted by level, leaf flag or ids) and no count sees it.
        payload = {"kind": "meta", "model_id": model_id, "dense_size": dense_size,
                   "sparse_model": sparse_model, "schema_version": SCHEMA_VERSION}
        vector = [1.0] + [0.0] * (dense_size - 1)
        with _engine_errors("write the collection's bookkeeping point"):
            self.shard.update(qe.UpdateOperation.upsert_points([qe.Point(_META_ID, {DENSE: vector}, payload)]))
            self.shard.flush()

    def collection_info(self) -> Dict[str, Any]:
        self._count()
        info: Dict[str, Any] = {}
        if self._shard is not None and not self._closed:
            with _engine_errors("read the collection's bookkeeping point"):
                found = self._shard.retrieve([_META_ID], with_payload=True, with_vector=False)
            if found and found[0].payload:
                info = dict(found[0].payload)
        info.pop("kind", None)
        info["engine"] = self.engine
        info["collection"] = self.collection
        info["location"] = self.location
        info["edge_version"] = EDGE_VERSION
        return info

    # -- writes --------------------------------------------------------------------------------

    def upsert(self, records: Sequence[NodeRecord]) -> None:
        qe = self._qe
        shard = self.shard
        for start in range(0, len(records), self.upsert_batch_size):
            chunk = records[start : start + self.upsert_batch_size]
            # numpy's tolist() converts a whole vector in C: 5x faster than float() per element.
            points = [
                qe.Point(
                    r.node.id,
                    {
                        DENSE: np.asarray(r.dense, dtype=np.float64).tolist(),
                        SPARSE: qe.SparseVector(np.asarray(r.sparse_indices, dtype=np.int64).tolist(),
                                                np.asarray(r.sparse_values, dtype=np.float64).tolist()),
                    },
                    r.node.to_payload(),
                )
                for r in chunk
            ]
            self._count()
            with _engine_errors(f"write {len(points)} nodes (vector size or payload rejected?)"):
                shard.update(qe.UpdateOperation.upsert_points(points))
        if records:
            # Durable on return, like qdrant-client's wait=True (a WAL replays it anyway, but a
            # flush also bounds the time a reopen spends replaying).
            with _engine_errors("flush written nodes to disk"):
                shard.flush()

    def delete_nodes(self, doc_id: str, *, except_hash: Optional[str] = None) -> None:
        qe = self._qe
        must_not = [qe.FieldCondition(key="doc_hash", match=_match_value(qe, except_hash))] if except_hash else None
        of_doc = qe.FieldCondition(key="doc_id", match=_match_value(qe, doc_id))
        is_root = qe.FieldCondition(key="level", match=_match_value(qe, 0))
        with _engine_errors(f"delete the nodes of document {doc_id!r}"):
            # The index clears every document before writing it, new ones included: a count on
            # the doc_id index spares those the two deletes and the flush to disk.
            self._count()
            if not self.shard.count(qe.CountRequest(exact=True, filter=qe.Filter(must=[of_doc], must_not=must_not))):
                return
            # The root first (the NodeStore contract): it is the tree's commit point, so a delete
            # cut short leaves only rootless nodes, which no search reaches and the next ingest removes.
            for must in ([of_doc, is_root], [of_doc]):
                self._count()
                self.shard.update(qe.UpdateOperation.delete_points_by_filter(qe.Filter(must=must, must_not=must_not)))
            self.shard.flush()
        self._deleted = True

    # -- reads ---------------------------------------------------------------------------------

    def retrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        if not ids:
            return []
        self._count()
        with _engine_errors("fetch nodes by id"):
            records = self.shard.retrieve(list(ids), with_payload=True, with_vector=False)
        return [TreeNode.from_payload(str(r.id), r.payload) for r in records if r.payload and "doc_id" in r.payload]

    def _filter(self, request: RankRequest) -> Any:
        qe = self._qe
        must: List[Any] = []
        if request.candidate_ids is not None:
            must.append(qe.HasIdCondition(set(request.candidate_ids)))
        if request.level is not None:
            must.append(qe.FieldCondition(key="level", match=_match_value(qe, request.level)))
        if request.leaves_only:
            must.append(qe.FieldCondition(key="is_leaf", match=_match_value(qe, True)))
        must.extend(self._conditions(request.filters))
        if request.candidate_ids is None and request.level is None and not request.leaves_only:
            # An unrestricted request (flat search over every level) must not meet the bookkeeping
            # point (a dense vector, no level): nodes only, as QdrantClientStore does.
            must.append(qe.FieldCondition(key="level", range=qe.RangeFloat(gte=0)))
        return qe.Filter(must=must) if must else None

    def _conditions(self, spec: FilterSpec) -> List[Any]:
        qe = self._qe
        out = []
        for field, values in spec:
            if len(values) == 1:
                out.append(qe.FieldCondition(key=field, match=_match_value(qe, values[0])))
            else:  # parse_filters allows lists of str or int only (a single bool otherwise)
                out.append(qe.FieldCondition(key=field, match=qe.MatchAny(list(values))))
        return out

    def rank(self, requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool) -> List[List[RankedHit]]:
        if not requests:
            return []
        if isinstance(rrf_k, bool) or not isinstance(rrf_k, int) or rrf_k < 1:
            raise InvalidQueryError(
                f"rrf_k must be an integer >= 1 (k = 0 makes the top rank's score infinite), got {rrf_k!r}."
            )
        qe = self._qe
        dense_q = np.asarray(query.dense, dtype=np.float64).tolist()
        sparse_q = qe.SparseVector(np.asarray(query.sparse_indices, dtype=np.int64).tolist(),
                                   np.asarray(query.sparse_values, dtype=np.float64).tolist())
        exact = qe.SearchParams(exact=True)

        def dense(flt: Any, limit: int) -> Dict[str, Any]:
            # exact=True: a no-op while indexing is off, and a guarantee if a folder ever holds an
            # HNSW graph (e.g. optimised by another tool): rankings stay those of brute force.
            return dict(query=qe.Query.Nearest(dense_q, using=DENSE), filter=flt, limit=limit, params=exact)

        def sparse(flt: Any, limit: int) -> Dict[str, Any]:
            # The sparse inverted index is exact; exact=True would force a slower full scan.
            return dict(query=qe.Query.Nearest(sparse_q, using=SPARSE), filter=flt, limit=limit)

        batch: List[Any] = []
        layout: List[Tuple[int, Optional[int], Optional[int]]] = []
        for request in requests:
            flt = self._filter(request)
            side_limit = request.limit if request.candidate_ids is not None else max(request.limit, 100)
            main_index = len(batch)
            if request.only == "dense":
                batch.append(qe.QueryRequest(with_payload=True, **dense(flt, request.limit)))
            elif request.only == "sparse":
                batch.append(qe.QueryRequest(with_payload=True, **sparse(flt, request.limit)))
            else:
                batch.append(qe.QueryRequest(
                    prefetches=[qe.Prefetch(**dense(flt, side_limit)), qe.Prefetch(**sparse(flt, side_limit))],
                    query=qe.Fusion.Rrf(k=rrf_k, weights=[float(w) for w in request.weights]),
                    filter=flt, limit=request.limit, with_payload=True,
                ))
            dense_index = sparse_index = None
            if explain and request.only is None:
                dense_index = len(batch)
                batch.append(qe.QueryRequest(with_payload=False, **dense(flt, side_limit)))
                sparse_index = len(batch)
                batch.append(qe.QueryRequest(with_payload=False, **sparse(flt, side_limit)))
            layout.append((main_index, dense_index, sparse_index))
        self._count()
        with _engine_errors(f"rank {len(requests)} candidate sets"):
            responses = self.shard.query_batch(qe.QueryBatchRequest(batch))
        results: List[List[RankedHit]] = []
        for main_index, dense_index, sparse_index in layout:
            # Edge returns ids as uuid.UUID; side ranks are keyed by those objects (hashing a UUID
            # is cheap, formatting one as str is not), and only the returned hits are formatted.
            dense_ranks = _uuid_ranks(responses[dense_index]) if dense_index is not None else {}
            sparse_ranks = _uuid_ranks(responses[sparse_index]) if sparse_index is not None else {}
            hits = []
            for point in responses[main_index]:
                payload = point.payload
                if not payload or "doc_id" not in payload:
                    continue  # the bookkeeping point is never a node
                pid = point.id  # the binding builds a new UUID object on every access
                hits.append(RankedHit(
                    node=TreeNode.from_payload(str(pid), payload),
                    score=float(point.score),
                    dense_rank=dense_ranks.get(pid) if dense_ranks else None,
                    sparse_rank=sparse_ranks.get(pid) if sparse_ranks else None,
                ))
            results.append(_stable_order(hits))
        return results

    def scroll_nodes(self, *, filters: FilterSpec = (), level: Optional[int] = None, with_text: bool = True) -> List[TreeNode]:
        qe = self._qe
        must = self._conditions(filters)
        if level is not None:
            must.append(qe.FieldCondition(key="level", match=_match_value(qe, level)))
        # Every node has level >= 0; the bookkeeping point has no level.
        must.append(qe.FieldCondition(key="level", range=qe.RangeFloat(gte=0)))
        with_payload: Any = True if with_text else qe.PayloadSelector.Exclude(["text"])
        nodes: List[TreeNode] = []
        offset = None
        while True:
            self._count()
            with _engine_errors("list nodes"):
                records, offset = self.shard.scroll(qe.ScrollRequest(
                    offset=offset, limit=1024, filter=qe.Filter(must=must), with_payload=with_payload, with_vector=False))
            nodes.extend(TreeNode.from_payload(str(r.id), r.payload) for r in records)
            if offset is None:
                return nodes

    def count(self) -> int:
        qe = self._qe
        self._count()
        with _engine_errors("count nodes"):
            return int(self.shard.count(qe.CountRequest(exact=True, filter=qe.Filter(
                must=[qe.FieldCondition(key="level", range=qe.RangeFloat(gte=0))]))))

    def close(self) -> None:
        """Flush, vacuum deleted nodes (persistent folders), close the shard, release the lock.

        An in-memory store's temporary folder is deleted. Closing twice is harmless.
        """
        if self._closed:
            return
        self._closed = True
        shard, self._shard = self._shard, None
        try:
            if shard is not None:
                if self._deleted and not self.in_memory:
                    # Replaced documents leave deleted points behind; optimize() rewrites only
                    # segments above the vacuum threshold (indexing is off, so no HNSW is built).
                    shard.optimize()
                shard.flush()
                shard.close()
        except Exception:  # closing at interpreter exit or after an engine error must not raise
            log.warning("closing the Qdrant Edge shard in %s failed", self.path, exc_info=True)
        finally:
            self._finalizer()
