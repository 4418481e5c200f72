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
- **The walk's rankings read no payload.** Loading and converting a payload costs Edge ~10 us per
  hit, and a knee walk ranks ~100 candidates in 5 round trips: a store that created its shard keeps
  every node's structure in a :class:`_NodeCache` (exact: it sees every write), light rankings ask
  for ids and scores only, and with explain on they ask for the two side rankings only and fuse
  them here (:func:`_fuse`, the engine's float32 RRF bit for bit) instead of scanning both sides
  twice; without explain (the default) only the hits that can survive a request's limit are
  read (:func:`_map_hits`). Measured at 10k nodes (``benchmarks/engine.py``): the knee search
  10.3 -> ~4.5 ms, ~1.1x a flat top-10 (explain on: ~1.15-1.2x).
- **One process per folder.** Edge's own WAL lock makes a second ``load`` fail with an opaque
  "WouldBlock"; we hold an ``fcntl.flock`` on ``<folder>/<collection>/drag_knee.lock`` while open
  and raise :class:`StoreLockedError` naming the holder's pid.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import operator
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

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
    WALK_FIELDS,
    NodeStore,
    QueryVectors,
    RankedHit,
    RankRequest,
    _stable_order,
    fetch_limit,
    light_node,
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


_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class _NodeCache:
    """The walk's view of every stored node: light nodes (:data:`WALK_FIELDS`) by point id.

    Why: Edge spends ~10 us per hit loading and converting a payload, and a knee walk ranks
    ~100 candidates; with this map its rankings ask for ids and scores only (measured at 10k
    nodes: the knee search 12 -> 7 ms). It is exact, not a guess, because an Edge folder has
    one writer, this store (the folder lock), and every write updates the map:

    - upsert puts the new nodes here *before* the engine write and delete removes them *after*
      the engine delete, so at every moment each node the engine can return is in the map (a
      concurrent search may see a newer structure than the scores it ranked; the index's final
      liveness check drops such hits, as it drops any hit of a document that changed mid-search);
    - a failed write drops the map (``complete`` turns False): the engine's state is then unknown,
      and rankings go back to asking the engine for the walk's payload fields.

    Only a store that created its shard keeps a complete map: an index loaded from a folder
    starts without one (reading every node at open time would slow down one-off searches), and so
    does one above ``capacity`` nodes (~500 bytes each). Reads take no lock (one dict lookup);
    writers serialise on ``_lock``.
    """

    def __init__(self, capacity: int, complete: bool) -> None:
        self.capacity = capacity
        self.complete = complete and capacity > 0
        self._nodes: Dict[str, TreeNode] = {}  # by the id's canonical form (see _point_ids)
        self._by_doc: Dict[str, Set[str]] = {}
        self._lock = threading.Lock()

    def get(self, point_id: str) -> Optional[TreeNode]:
        return self._nodes.get(point_id)

    def put(self, nodes: Sequence[Tuple[str, Dict[str, Any]]]) -> None:
        """Record (id, payload) pairs about to be written."""
        if not self.complete:
            return
        with self._lock:
            if len(self._nodes) + len(nodes) > self.capacity:
                log.info("the node map of this Edge index is full (%d nodes); rankings read payloads instead",
                         self.capacity)
                self._drop()
                return
            nodes_by_id, by_doc = self._nodes, self._by_doc
            for node_id, payload in nodes:
                # The id as the engine returns it (canonical form), as a payload ranking gives it;
                # the builder's ids already are (parsing 10k of them would cost 30 ms per ingest).
                key = node_id
                if not (isinstance(node_id, str) and _CANONICAL_UUID.fullmatch(node_id)):
                    try:
                        key = str(uuid.UUID(node_id))
                    except (TypeError, ValueError, AttributeError):  # the engine will say what is wrong
                        self._drop()
                        return
                nodes_by_id[key] = light_node(key, payload)
                by_doc.setdefault(payload["doc_id"], set()).add(key)

    def remove(self, doc_id: str, except_hash: Optional[str]) -> None:
        """Forget a document's nodes (those whose version differs from ``except_hash``, if given)."""
        with self._lock:
            keys = self._by_doc.get(doc_id, set())
            for key in list(keys):
                node = self._nodes.get(key)
                if node is None or except_hash is None or node.doc_hash != except_hash:
                    self._nodes.pop(key, None)
                    keys.discard(key)
            if not keys:
                self._by_doc.pop(doc_id, None)

    def drop(self) -> None:
        """Give the map up: after a failed write (or at close) the engine's state is not known here."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        self.complete = False
        self._nodes = {}
        self._by_doc = {}


_REPR_HEAD = 'ScoredPoint(id="'
_REPR_END = len(_REPR_HEAD) + 36


def _point_ids(points: Sequence[Any]) -> List[str]:
    """The ids of ranked points *returned without payload*, as strings (``str(point.id)``).

    Why not ``str(point.id)``: the binding builds a ``uuid.UUID`` in Python on every ``.id``,
    formatting it costs more, and a UUID-keyed dict calls Python-level ``__hash__`` and ``__eq__``
    on every lookup. The binding's ``repr`` is built in Rust and starts with the canonical id,
    ``ScoredPoint(id="<36 chars>", ...``: slicing it is ~35% cheaper per id, and a knee walk with
    explain reads ~500 ids. If any repr has another shape (an integer id, a changed binding), the
    whole list falls back to ``str(point.id)``; the tests check that both agree. Only for points
    without payload: their repr stays short.
    """
    texts = list(map(repr, points))
    # C-level slicing (itemgetter): a Python-level check per id would cost what the repr saves.
    if set(map(_HEAD, texts)) <= {_REPR_HEAD} and set(map(_QUOTE, texts)) <= {'"'}:
        return list(map(_ID, texts))
    return [str(p.id) for p in points]


# The binding converts a HasIdCondition's ids one by one in Python: ~3.3 us per id given as a
# string, ~2.1 us given as a uuid.UUID (measured, qdrant-edge-py 0.9.0). The walk sends ~100
# candidate ids per search, mostly the same nodes query after query, so their UUIDs are kept.
_uuid = functools.lru_cache(maxsize=1 << 14)(uuid.UUID)


def _id_set(ids: Sequence[Any]) -> Set[Any]:
    """Point ids for a HasIdCondition, as UUID objects where they are UUID strings (same points)."""
    try:
        return set(map(_uuid, ids))
    except (TypeError, ValueError, AttributeError):  # integer ids, or not ids at all: the engine says
        return set(ids)


_SCORE = operator.itemgetter(1)
_POINT_SCORE = operator.attrgetter("score")
_HEAD = operator.itemgetter(slice(0, len(_REPR_HEAD)))
_ID = operator.itemgetter(slice(len(_REPR_HEAD), _REPR_END))
_QUOTE = operator.itemgetter(slice(_REPR_END, _REPR_END + 1))


def _map_hits(points: Sequence[Any], limit: int, node_map: "_NodeCache") -> Optional[List[RankedHit]]:
    """A light ranking's hits (no explain) from the engine's points and the node map, best first.

    The same list as the general path of :meth:`EdgeStore.rank` (every point a mapped node, sorted
    by score then id, cut at ``limit``) for less: the engine returns its points best first, so
    only the first ``limit`` and those tied with the last of them can survive the cut, and only
    their ids are read (the tie margin's extra points cost nothing); without equal scores the
    engine's order already is the stable order. None (use the general path) when a point is not
    in the map (the bookkeeping point, a dropped map) or the scores are not descending.
    """
    scores = list(map(_POINT_SCORE, points))
    count = len(scores)
    if not all(map(operator.ge, scores, scores[1:])):
        return None
    end = count
    if count > limit:
        end = limit
        if limit:
            boundary = scores[limit - 1]
            while end < count and scores[end] == boundary:
                end += 1
    nodes = list(map(node_map._nodes.get, _point_ids(points[:end])))
    if not all(nodes):
        return None
    hits = list(map(RankedHit, nodes, scores[:end]))
    if any(map(operator.eq, scores[: end - 1], scores[1:end])):
        hits = _stable_order(hits)
    return hits[:limit]


@functools.lru_cache(maxsize=512)
def _rrf_terms(length: int, k: int, weight: float) -> Tuple[float, ...]:
    """Each position's RRF term as Qdrant computes it, in float32 (the engine's arithmetic).

    ``1 / ((position + 1) / w + k - 1)`` with 0-based positions, every operation rounded to
    float32, and 0 for a weight <= 0 (``position_score`` in Qdrant's reciprocal_rank_fusion.rs).
    """
    w = np.float32(weight)
    if w <= 0:
        return (0.0,) * length
    positions = np.arange(1, length + 1, dtype=np.float32)
    return tuple((np.float32(1.0) / (positions / w + np.float32(k) - np.float32(1.0))).astype(np.float64).tolist())


def _fuse(dense_ids: Sequence[str], sparse_ids: Sequence[str], k: int,
          weights: Tuple[float, float]) -> List[Tuple[str, float]]:
    """RRF of two side rankings, bit for bit as Edge's ``Fusion.Rrf`` computes it, best first.

    Why here: with explain on, the walk needs both side rankings anyway; fusing them in Python
    spares the engine a third request that would scan both sides again (measured: explain then
    costs ~1 ms less per knee search at 10k nodes). The engine sums a point's terms in float32,
    dense first: a float64 sum of two float32 values rounded once to float32 is that same number.
    Ties are ordered by id (as ``_stable_order`` does), where the engine's order is arbitrary.
    """
    scores = dict(zip(dense_ids, _rrf_terms(len(dense_ids), k, float(weights[0]))))
    both: List[str] = []
    for pid, term in zip(sparse_ids, _rrf_terms(len(sparse_ids), k, float(weights[1]))):
        if pid in scores:
            both.append(pid)
            scores[pid] += term
        else:
            scores[pid] = term
    if both:
        rounded = np.asarray([scores[pid] for pid in both], dtype=np.float64).astype(np.float32).astype(np.float64)
        scores.update(zip(both, rounded.tolist()))
    # By score descending, ties by id: sorted by id, then a stable sort by score (reverse=True
    # keeps equal scores in their id order). Two C-level sorts cost less than a Python key per item.
    ordered = sorted(scores.items())
    ordered.sort(key=_SCORE, reverse=True)
    return ordered


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

    def __init__(self, collection: str, *, location: Optional[str] = ":memory:", upsert_batch_size: int = 256,
                 node_map_capacity: int = 200_000) -> None:
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
        if isinstance(node_map_capacity, bool) or not isinstance(node_map_capacity, int) or node_map_capacity < 0:
            raise ConfigError(f"node_map_capacity must be an integer >= 0 (0: no node map), got {node_map_capacity!r}.")
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
        self._last_query: Optional[Tuple[QueryVectors, Any, Any]] = None
        self._exact = self._qe.SearchParams(exact=True)
        self._walk_payload = self._qe.PayloadSelector.Include(list(WALK_FIELDS))
        # Complete only once this store creates the shard (open_collection); see _NodeCache.
        self._node_map = _NodeCache(node_map_capacity, complete=False)
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
            # An empty shard made here: this store sees every write from now on.
            self._node_map = _NodeCache(self._node_map.capacity, complete=True)
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
            payloads = [(r.node.id, r.node.to_payload()) for r in chunk]
            # numpy's tolist() converts a whole vector in C: 5x faster than float() per element.
            points = [
                qe.Point(
                    node_id,
                    {
                        DENSE: np.asarray(r.dense, dtype=np.float64).tolist(),
                        SPARSE: qe.SparseVector(np.asarray(r.sparse_indices, dtype=np.int64).tolist(),
                                                np.asarray(r.sparse_values, dtype=np.float64).tolist()),
                    },
                    payload,
                )
                for r, (node_id, payload) in zip(chunk, payloads)
            ]
            self._node_map.put(payloads)  # before the engine write: see _NodeCache
            self._count()
            with self._dropping_node_map_on_error(), \
                    _engine_errors(f"write {len(points)} nodes (vector size or payload rejected?)"):
                shard.update(qe.UpdateOperation.upsert_points(points))
        if records:
            # Durable on return, like qdrant-client's wait=True (a WAL replays it anyway, but a
            # flush also bounds the time a reopen spends replaying).
            with self._dropping_node_map_on_error(), _engine_errors("flush written nodes to disk"):
                shard.flush()

    @contextlib.contextmanager
    def _dropping_node_map_on_error(self) -> Iterator[None]:
        """A write that fails leaves the engine in an unknown state: stop trusting the node map."""
        try:
            yield
        except BaseException:
            self._node_map.drop()
            raise

    def delete_nodes(self, doc_id: str, *, except_hash: Optional[str] = None) -> None:
        qe = self._qe
        must_not = [qe.FieldCondition(key="doc_hash", match=_match_value(qe, except_hash))] if except_hash else None
        of_doc = qe.FieldCondition(key="doc_id", match=_match_value(qe, doc_id))
        is_root = qe.FieldCondition(key="level", match=_match_value(qe, 0))
        with self._dropping_node_map_on_error(), _engine_errors(f"delete the nodes of document {doc_id!r}"):
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
        self._node_map.remove(doc_id, except_hash)  # after the engine delete: see _NodeCache
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
            must.append(qe.HasIdCondition(_id_set(request.candidate_ids)))
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

    def rank(self, requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool,
             light: bool = False) -> List[List[RankedHit]]:
        if not requests:
            return []
        if isinstance(rrf_k, bool) or not isinstance(rrf_k, int) or rrf_k < 1:
            raise InvalidQueryError(
                f"rrf_k must be an integer >= 1 (k = 0 makes the top rank's score infinite), got {rrf_k!r}."
            )
        qe = self._qe
        dense_q, sparse_q = self._query(query)
        exact = self._exact
        # A light ranking takes its nodes from the node map when that is complete (no payload at
        # all), else asks for the walk's fields only (Edge then skips text, keywords, metadata).
        node_map = self._node_map if light and self._node_map.complete else None
        with_payload: Any = False if node_map is not None else self._walk_payload if light else True
        make_node = light_node if light else TreeNode.from_payload

        batch: List[Any] = []
        plans: List[Tuple[RankRequest, Optional[int], Optional[int], Optional[int]]] = []
        for request in requests:
            flt = self._filter(request)
            side_limit = request.limit if request.candidate_ids is not None else max(request.limit, 100)
            limit = fetch_limit(request, light)
            main_index = dense_index = sparse_index = None
            # exact=True on dense requests: a no-op while indexing is off, and a guarantee if a folder
            # ever holds an HNSW graph (e.g. optimised by another tool): rankings stay those of brute
            # force. The sparse inverted index is exact; exact=True there would force a slower scan.
            if request.only == "dense":
                main_index = len(batch)
                batch.append(qe.QueryRequest(query=dense_q, filter=flt, limit=limit, params=exact,
                                             with_payload=with_payload))
            elif request.only == "sparse":
                main_index = len(batch)
                batch.append(qe.QueryRequest(query=sparse_q, filter=flt, limit=limit, with_payload=with_payload))
            else:
                # With explain and the node map, the two side rankings are all we ask for and the
                # fusion is done here (_fuse: bit for bit the engine's); otherwise the engine fuses.
                if not (explain and node_map is not None):
                    main_index = len(batch)
                    batch.append(qe.QueryRequest(
                        prefetches=[qe.Prefetch(query=dense_q, filter=flt, limit=side_limit, params=exact),
                                    qe.Prefetch(query=sparse_q, filter=flt, limit=side_limit)],
                        query=qe.Fusion.Rrf(k=rrf_k, weights=[float(w) for w in request.weights]),
                        filter=flt, limit=limit, with_payload=with_payload,
                    ))
                if explain:
                    dense_index = len(batch)
                    batch.append(qe.QueryRequest(query=dense_q, filter=flt, limit=side_limit, params=exact,
                                                 with_payload=False))
                    sparse_index = len(batch)
                    batch.append(qe.QueryRequest(query=sparse_q, filter=flt, limit=side_limit, with_payload=False))
            plans.append((request, main_index, dense_index, sparse_index))
        self._count()
        with _engine_errors(f"rank {len(requests)} candidate sets"):
            responses = self.shard.query_batch(qe.QueryBatchRequest(batch))

        results: List[List[RankedHit]] = []
        for request, main_index, dense_index, sparse_index in plans:
            if node_map is not None and main_index is not None and dense_index is None:
                # The default walk (light, explain off): ids, scores and the node map only.
                quiet = _map_hits(responses[main_index], request.limit, node_map)
                if quiet is not None:
                    results.append(quiet)
                    continue
            # Side rankings come without payload: their ids are read cheaply (see _point_ids).
            dense_ids = _point_ids(responses[dense_index]) if dense_index is not None else None
            sparse_ids = _point_ids(responses[sparse_index]) if sparse_index is not None else None
            dense_ranks = dict(zip(dense_ids, range(len(dense_ids)))) if dense_ids is not None else None
            sparse_ranks = dict(zip(sparse_ids, range(len(sparse_ids)))) if sparse_ids is not None else None
            if main_index is None:  # fused here, from the side rankings
                assert node_map is not None and dense_ids is not None and sparse_ids is not None
                scored = _fuse(dense_ids, sparse_ids, rrf_k, request.weights)[: request.limit]
                payloads: List[Any] = [None] * len(scored)
            else:
                points = responses[main_index]
                ids = _point_ids(points) if node_map is not None else [str(p.id) for p in points]
                scored = [(pid, float(p.score)) for pid, p in zip(ids, points)]
                payloads = [None] * len(points) if node_map is not None else [p.payload for p in points]
            hits = []
            mapped = node_map._nodes.get if node_map is not None else None
            for (pid, score), payload in zip(scored, payloads):
                if mapped is not None:
                    node = mapped(pid)
                    if node is None:
                        # Not a node (the bookkeeping point, which no ranking filter lets through),
                        # or the map was dropped during this call: read it from the engine.
                        node = self._fetch_light(pid)
                        if node is None:
                            continue
                else:
                    if not payload or "doc_id" not in payload:
                        continue  # the bookkeeping point is never a node
                    node = make_node(pid, payload)
                hits.append(RankedHit(  # positional: ~0.6 us less per hit than keywords
                    node,
                    score,
                    dense_ranks.get(pid) if dense_ranks is not None else None,
                    sparse_ranks.get(pid) if sparse_ranks is not None else None,
                ))
            if main_index is not None:  # (_fuse already ordered its hits so)
                hits = _stable_order(hits)
            results.append(hits[: request.limit])  # over-fetched: cut here, ties by id
        return results

    def _fetch_light(self, point_id: str) -> Optional[TreeNode]:
        """A ranked point the node map does not hold, read from the engine (None: not a node)."""
        log.debug("point %s not in the node map; reading its payload", point_id)
        self._count()
        with _engine_errors("fetch a ranked node"):
            records = self.shard.retrieve([point_id], with_payload=self._walk_payload, with_vector=False)
        for record in records:
            if record.payload and "doc_id" in record.payload:
                return light_node(str(record.id), record.payload)
        return None

    def _query(self, query: QueryVectors) -> Tuple[Any, Any]:
        """The engine's dense and sparse query objects for ``query``, built once per search.

        A walk sends the same query in every round trip; converting 384 floats to the engine's
        types each time cost ~40 us per request. The last query's objects are kept (one tuple,
        replaced atomically, so concurrent searches at worst rebuild them).
        """
        cached = self._last_query
        if cached is not None and cached[0] is query:
            return cached[1], cached[2]
        qe = self._qe
        dense_q = qe.Query.Nearest(np.asarray(query.dense, dtype=np.float64).tolist(), using=DENSE)
        sparse_q = qe.Query.Nearest(qe.SparseVector(np.asarray(query.sparse_indices, dtype=np.int64).tolist(),
                                                    np.asarray(query.sparse_values, dtype=np.float64).tolist()),
                                    using=SPARSE)
        self._last_query = (query, dense_q, sparse_q)
        return dense_q, sparse_q

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
        self._node_map.drop()
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
