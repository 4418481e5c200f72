"""The Qdrant Edge node store (see the package docstring for the decisions and their measurements).

(One module on purpose: every qdrant_edge class is named here and nowhere else, so
that the pinned engine's API is one file to review on an upgrade. What needs no engine call is
split out: the fast path (``fast.py``), the folder lock (``lock.py``), the node map
(``node_map.py``); the filter translation is the one both Qdrant engines share,
:class:`~drag_knee_retriever.store.filters.QdrantFilters`, given this module's classes.)
"""

from __future__ import annotations

import contextlib
import errno
import logging
import operator
import os
import tempfile
import threading
import time
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ...bm25_idf import SCHEME as IDF_SCHEME, ClientIdf
from ...disk import MIB, BYTES_PER_NODE, MARGIN, WRITE_MARGIN, check_free_space, edge_open_needs, free_bytes, io_error
from ...errors import (ConfigError, IndexDamagedError, InvalidQueryError, ModelMismatchError, StoreError, StoreIOError,
                       StoreLockedError)
from ...ids import META_ID, META_IDS
from ...nodes import FILE_STAMP_KEY, TreeNode
from ...point_schema import (
    DENSE,
    ROOT_FIELDS,
    SCHEMA_VERSION,
    SPARSE,
    STAMP_FIELDS,
    TEXT_FIELDS,
    WALK_FIELDS,
    collection_info,
    full_node,
    is_node,
    light_node,
    meta_payload,
    meta_vector,
    node_payload,
    root_node,
)
from .. import filters as F
from ..journal import JOURNAL_DIR, WriteJournal
from ..base import (
    PAIR_ID,
    PENDING_FILE,
    TIE_MARGIN,
    PendingDocs,
    FilterSpec,
    check_collection_name,
    NodeRecord,
    NodeStore,
    QueryVectors,
    RankedHit,
    RankRequest,
    detect_engine,
    fetch_limit,
    payload_stamp,
    root_version,
    roots_ranking,
    stamp_ids,
    score_limit,
    side_limit,
    side_order,
    side_scores,
    stable_order,
)
from ..base import EDGE_MARKER as _SHARD_MARKER  # its presence means "load, not create"
from ..base import EDGE_ROOTS_DIR
from ..checksums import Sample, SAMPLE_FIELDS, add_checks, sparse_pair
from ..integrity import RECORD_FILE, RecordFile, describe, recorded_meta
from .fast import fuse_rrf, point_id_set, hits_from_map, point_ids
from .lock import LOCK_FILE, MEMORY_PREFIX, FolderLock, cleanup, memory_dir, sweep_orphans
from .node_map import NodeCache
from .split import SplitRule

log = logging.getLogger(__name__)

EDGE_PACKAGE = "qdrant-edge-py"
EDGE_VERSION = "0.9.0"  # pinned in pyproject.toml; the API of this beta package drifts between releases

# Payload indexes: they let the query planner resolve level / leaf / document conditions without
# scanning payloads (and are what a future HNSW would need for filtered search). No index on
# parent_id: no request filters by it, and at 1M nodes it held 114 MB resident (issue 26).
_PAYLOAD_INDEXES = (
    ("doc_id", "Keyword"),
    ("level", "Integer"),
    ("is_leaf", "Bool"),
    ("doc_hash", "Keyword"),
)


# Where the engine keeps payloads (page texts): its Memory placements, by our name for them.
_MEMORY = {None: None, "pinned": "Pinned", "cached": "Cached", "cold": "Cold"}
# How dense vectors are stored (EdgeStore(dense_datatype=...)): the engine's datatypes.
_DATATYPES = {None: None, "float32": "Float32", "float16": "Float16"}

# Points per scroll call when every node's sparse vector is read (the frequencies of a reopened index).
_SCROLL_PAGE = 4096
# Points per retrieve / upsert when the roots' shard is filled from the nodes' shard.
_COPY_BATCH = 256


def _import_edge() -> Any:
    try:
        import qdrant_edge
    except ImportError as exc:  # pragma: no cover - it is a core dependency
        raise StoreError(
            f"Qdrant Edge is not installed ({exc}). Install it with `pip install {EDGE_PACKAGE}=={EDGE_VERSION}`, "
            "or choose engine='local' (qdrant-client local mode) or engine='server' (url=...)."
        ) from None
    return qdrant_edge


#: Points a filtered BM25 ranking scores one by one at most (see :meth:`EdgeStore._shard_config`).
SPARSE_FULL_SCAN = 1000


_score_of = operator.attrgetter("score")


def _side_prefix(points: Sequence[Any], limit: int) -> Tuple[Sequence[Any], List[float]]:
    """The points of a side ranking that can survive its cut at ``limit``, and their scores.

    A list the engine returned best first keeps its first ``limit`` and those tied with the last
    of them (the rest of the tie margin's points need no id read); a merged list (a split side) is
    not in order and is kept whole, for :func:`~drag_knee_retriever.store.base.side_order` to sort.
    """
    scores = list(map(float, map(_score_of, points)))
    count = len(scores)
    if count <= limit or not all(map(operator.ge, scores, scores[1:])):
        return points, scores
    end = limit
    if end:
        boundary = scores[end - 1]
        while end < count and scores[end] == boundary:
            end += 1
    return points[:end], scores[:end]


def _str_ids(points: Sequence[Any]) -> List[str]:
    """The ids of ranked points returned *with* payload (their repr would format the payload)."""
    return [str(p.id) for p in points]


def _match_value(qe: Any, value: Any) -> Any:
    """A MatchValue the engine reads with the right type (see the package docstring on booleans)."""
    if isinstance(value, bool):
        return qe.MatchValue(np.bool_(value))
    return qe.MatchValue(value)


@contextlib.contextmanager
def _engine_errors(what: str, where: Optional[str] = None) -> Iterator[None]:
    """Turn the engine's bare exceptions into a StoreError that says what was being done."""
    try:
        yield
    except (StoreError, StoreLockedError, ModelMismatchError, InvalidQueryError):
        raise
    except Exception as exc:
        refused = io_error(exc, what, where or "the index folder")
        if refused is not None:  # the disk said no (full, read-only, permissions): the index is intact
            raise refused from exc
        raise StoreError(f"Qdrant Edge failed to {what}: {exc}") from exc


class _Plan(NamedTuple):
    """How one ranking request went into a batch: its engine requests' positions (None: not sent)
    and the map its nodes come from (None: from the payloads the engine returns)."""

    request: RankRequest
    main_index: Optional[int]
    dense_index: Optional[int]
    sparse_index: Optional[int]
    mapped_by: Optional[NodeCache]


def _waited(loader: Optional[threading.Thread], cache: NodeCache, timeout: Optional[float]) -> bool:
    """Wait for a map's background load to end (if one runs); whether the map is complete."""
    if loader is not None:
        loader.join(timeout)
    return cache.complete


class EdgeStore(NodeStore):
    """A node store on Qdrant Edge: in process, persistent in a folder or ephemeral (``":memory:"``).

    ``location`` is a folder (the shard lives in ``<folder>/<collection>/``) or ``":memory:"`` /
    ``None`` (a temporary folder, deleted on :meth:`close`: Edge always needs a path). A folder is
    locked to one open store; a second one, in this or another process, raises
    :class:`~drag_knee_retriever.errors.StoreLockedError`.

    ``node_map_capacity``: the most nodes whose walk fields this store keeps in memory (~500 bytes
    each), so the walk's rankings read no payload; above it, none. ``roots_map_capacity`` (default
    ``node_map_capacity // 10``): the same for the roots alone, kept where the node map is not (a
    root's walk fields hold its children's ids: ~2.6 KB each, measured at 1M nodes); 0: none.
    """

    engine = "edge"

    def __init__(self, collection: str, *, location: Optional[str] = ":memory:", upsert_batch_size: int = 256,
                 node_map_capacity: int = 200_000, payload_memory: Optional[str] = None,
                 dense_on_disk: bool = True, dense_datatype: Optional[str] = None,
                 roots_map_capacity: Optional[int] = None) -> None:
        super().__init__()
        check_collection_name(collection)
        if not isinstance(upsert_batch_size, int) or upsert_batch_size < 1:
            raise ConfigError(f"upsert_batch_size must be an integer >= 1, got {upsert_batch_size!r}.")
        if isinstance(node_map_capacity, bool) or not isinstance(node_map_capacity, int) or node_map_capacity < 0:
            raise ConfigError(f"node_map_capacity must be an integer >= 0 (0: no node map), got {node_map_capacity!r}.")
        if roots_map_capacity is None:
            roots_map_capacity = node_map_capacity // 10
        if isinstance(roots_map_capacity, bool) or not isinstance(roots_map_capacity, int) or roots_map_capacity < 0:
            raise ConfigError("roots_map_capacity must be an integer >= 0 (0: no roots map) or None "
                              f"(node_map_capacity // 10), got {roots_map_capacity!r}.")
        if payload_memory not in _MEMORY:
            raise ConfigError(f"payload_memory must be one of {sorted(k for k in _MEMORY if k)} or None (the engine's "
                              f"default), got {payload_memory!r}.")
        if not isinstance(dense_on_disk, bool):
            raise ConfigError(f"dense_on_disk must be True or False, got {dense_on_disk!r}.")
        if dense_datatype not in _DATATYPES:
            raise ConfigError(f"dense_datatype must be 'float32', 'float16' or None (float32), got {dense_datatype!r}.")
        self._qe = qe = _import_edge()
        self._filters = F.QdrantFilters(
            filter=qe.Filter, field=qe.FieldCondition, range=qe.RangeFloat, match_any=qe.MatchAny,
            has_id=lambda ids: qe.HasIdCondition(point_id_set(ids)), match_value=lambda value: _match_value(qe, value))
        self.payload_memory = payload_memory
        # New shards only (an existing folder keeps how it was made): dense vectors in a file the
        # engine memory-maps once (True), instead of in RAM, where the engine mapped every chunk
        # twice (resident ~2.2x the vectors' size after a full scan; measured in RESULTS "scale");
        # float16 halves them again, at ~1e-3 of cosine precision (not exact: opt-in).
        self.dense_on_disk = dense_on_disk
        self.dense_datatype = dense_datatype
        self.collection = collection
        self.upsert_batch_size = upsert_batch_size
        self.in_memory = location in (None, ":memory:")
        self._temp_dir: Optional[str] = None
        if self.in_memory:
            base_dir = memory_dir()
            sweep_orphans(base_dir or tempfile.gettempdir())
            self._temp_dir = tempfile.mkdtemp(prefix=MEMORY_PREFIX, dir=base_dir)
            base = Path(self._temp_dir)
        else:
            base = Path(os.fspath(location)).expanduser()
            if base.exists() and not base.is_dir():
                raise ConfigError(f"location {str(base)!r} is a file; give a folder path (or ':memory:').")
            if detect_engine(base, collection) == "local":
                # Opening it as Edge would silently show an empty index next to the real one.
                raise StoreError(
                    f"The folder {str(base)!r} holds a qdrant-client local-mode index of collection {collection!r}, "
                    "not a Qdrant Edge index. Open it with engine='local', or re-ingest the documents into a "
                    "new folder to use the (faster) Edge engine."
                )
        self.location = ":memory:" if self.in_memory else str(base)
        self.path = base / collection
        # Rootless leftovers can only be among these documents (store/pending.py); an ephemeral
        # index keeps the list in memory.
        self.pending = PendingDocs(None if self.in_memory else self.path / PENDING_FILE)
        # The new versions of documents being replaced through the vector stores (store/journal.py).
        self.journal = WriteJournal(None if self.in_memory else self.path / JOURNAL_DIR)
        # What the index records about itself beside the engine's files (store/integrity.py).
        self.record = None if self.in_memory else RecordFile(self.path / RECORD_FILE)
        self._shard: Any = None
        # The roots' own shard (``<folder>/<collection>/roots/``): a copy of every root, same id,
        # vectors and payload, so that ranking the roots scans the roots only (base.roots_ranking).
        self._roots: Any = None
        self._flush_deferred = 0  # inside writing(): flushes wait for its end
        self._flush_owed = False
        self._roots_dirty = False  # a write to the roots' shard not flushed yet (see _flush)
        self._roots_deferred = False  # a format-1 index opened read-only: no roots' shard (_room_for_roots)
        self._last_query: Optional[Tuple[QueryVectors, Any, Any, int]] = None
        self._exact = self._qe.SearchParams(exact=True)
        self._walk_payload = self._qe.PayloadSelector.Include(list(WALK_FIELDS))
        self._root_payload = self._qe.PayloadSelector.Include(list(ROOT_FIELDS))
        self._stamp_payload = self._qe.PayloadSelector.Include([f"metadata.{FILE_STAMP_KEY}"])
        # Complete only once this store creates the shard (open_collection); see NodeCache.
        self._node_map = NodeCache(node_map_capacity, complete=False)
        # The roots' walk fields by id, for an index whose node map is not complete (above its
        # capacity, or still loading): the roots ranking then reads no payload (see _load_roots_map).
        # Kept in step by the same writes as the node map; bounded by roots_map_capacity.
        self._roots_map = NodeCache(roots_map_capacity, complete=False, roots_only=True)
        self._roots_loader: Optional[threading.Thread] = None
        # When a filtered BM25 side is sent per group of documents (split.py; a no-op below 100k
        # points), and each document's node count it groups by (read once, dropped on a write).
        self.sparse_split = SplitRule(group_points=SPARSE_FULL_SCAN)
        self._node_counts: Dict[str, int] = {}
        self._node_counts_filled = False
        self._loader_stop = threading.Event()
        self._loader: Optional[threading.Thread] = None
        # BM25 IDF kept here, in exact arithmetic (bm25_idf.py); decided per collection when opened.
        self._idf = ClientIdf(enabled=True)
        self._deleted = False
        self._closed = False
        self._lock = FolderLock(self.path / LOCK_FILE)
        self._finalizer = weakref.finalize(self, cleanup, self._lock, self._temp_dir)
        if not self.in_memory and base.exists() and not os.access(base, os.W_OK):
            self._finalizer()
            raise StoreIOError(
                f"The index folder {str(base)!r} is read-only (or not writable by this user). Qdrant Edge writes "
                "its log whenever it opens an index, so it cannot open one there, not even to search. The index "
                "is intact: copy the folder to a writable disk (cp -r) and open the copy.",
                errno_code=errno.EROFS,
            )
        # Edge memory-maps its files: on a full disk it dies by SIGBUS instead of raising, so look first.
        check_free_space(base, edge_open_needs(self.path, wal=not self.in_memory), "open the index")
        self._lock.acquire(f"{str(base)!r} (collection {collection!r})")
        try:
            # The marker checks too run inside _engine_errors: a sub-folder this user may not read
            # (chmod 000 roots/) raised a bare PermissionError here, which the CLI called "damaged".
            with _engine_errors(f"load the index in {str(self.path)!r} (is it a drag-knee Edge index?)", str(base)):
                if (self.path / _SHARD_MARKER).exists():
                    self._shard = self._qe.EdgeShard.load(str(self.path))
            roots = self.path / EDGE_ROOTS_DIR
            if self._shard is not None:
                with _engine_errors("load the roots of the index (its roots/ folder)", str(roots)):
                    if (roots / _SHARD_MARKER).exists():
                        self._roots = self._qe.EdgeShard.load(str(roots))
        except Exception:
            self._finalizer()
            raise
        # A loaded index fills its node map in the background (see NodeCache); close() stops it.
        if self._shard is not None and node_map_capacity > 0:
            self._loader = threading.Thread(target=self._load_node_map, name="drag-knee-node-map", daemon=True)
            self._loader.start()

    def describe(self) -> str:
        return f"qdrant-edge {EDGE_VERSION} ({self.location})"

    def _load_node_map(self) -> None:
        """Read every node's walk fields, a page at a time, and install them as the node map
        (the loader thread of a loaded index). Gives up when the index holds more than the map's
        capacity, when the store closes, or when a write comes in meanwhile (NodeCache.finish_load)."""
        qe, shard, cache = self._qe, self._shard, self._node_map
        try:
            token = cache.begin_load()
            nodes_only = qe.Filter(must=self._filters.conditions(F.count_conditions()))
            if int(shard.count(qe.CountRequest(exact=True, filter=nodes_only))) > cache.capacity:
                log.info("this Edge index holds more than %d nodes: no node map (rankings read payloads)",
                         cache.capacity)
                return
            self._fill(cache, token, shard, nodes_only, "node map")
        except Exception:  # the store closed under it, or the engine failed: rankings read payloads
            log.debug("loading the node map stopped", exc_info=True)

    def _start_roots_map(self) -> None:
        """Fill the roots map of a loaded index in the background, once its roots' shard is in step."""
        if self._roots is None or self._roots_deferred or self._roots_map.capacity == 0 or self._roots_loader:
            return
        self._roots_loader = threading.Thread(target=self._load_roots_map, name="drag-knee-roots-map", daemon=True)
        self._roots_loader.start()

    def _load_roots_map(self) -> None:
        """Read every root's walk fields from the roots' shard and install them as the roots map.

        Why: without a complete node map (an index above its capacity: 1M nodes) the roots ranking
        read the walk's payload of its ~66 hits, ~0.9 ms of a ~1.8 ms request on Qdrant Edge at 1M
        nodes (7,024 roots, pages in memory; benchmarks/RESULTS.md, "scale10"). Reading them once
        costs about what ~100 searches saved. The same rules as the node map: a write during the
        read discards it (NodeCache.finish_load), and more roots than ``roots_map_capacity`` keep none."""
        cache = self._roots_map
        try:
            self._fill(cache, cache.begin_load(), self._roots, None, "roots map")
        except Exception:  # the store closed under it, or the engine failed: rankings read payloads
            log.debug("loading the roots map stopped", exc_info=True)

    def _fill(self, cache: NodeCache, token: int, shard: Any, flt: Any, what: str) -> None:
        """Scroll the walk's fields of ``shard``'s points (``flt``), a page at a time, into ``cache``;
        stops when the store closes or the points outgrow the cache's capacity."""
        qe = self._qe
        started = time.perf_counter()
        pairs: List[Tuple[str, Dict[str, Any]]] = []
        offset = None
        while not self._loader_stop.is_set():
            records, offset = shard.scroll(qe.ScrollRequest(
                offset=offset, limit=1024, filter=flt, with_payload=self._walk_payload, with_vector=False))
            pairs.extend((str(r.id), r.payload) for r in records if is_node(r.payload))
            if len(pairs) > cache.capacity:  # grown since any count: the map would not fit
                return
            if offset is None:
                installed = cache.finish_load(token, pairs)
                log.debug("%s of %d nodes %s in %.2f s", what, len(pairs),
                          "loaded" if installed else "discarded (a write came in meanwhile)",
                          time.perf_counter() - started)
                return

    def wait_for_roots_map(self, timeout: Optional[float] = None) -> bool:
        """Wait until the background roots map load ends; True if the roots map is complete."""
        return _waited(self._roots_loader, self._roots_map, timeout)

    def wait_for_node_map(self, timeout: Optional[float] = None) -> bool:
        """Wait until the background node map load (of a loaded index) ends; True if the map is
        complete. Rankings are the same either way; only their speed differs."""
        return _waited(self._loader, self._node_map, timeout)

    @property
    def _maps(self) -> Tuple[NodeCache, NodeCache]:
        """Both maps of the walk's fields (every node's, the roots'): every write keeps both in step."""
        return self._node_map, self._roots_map

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

    @property
    def roots_shard(self) -> Any:
        """The roots' own ``EdgeShard`` (made or brought in step by :meth:`open_collection`)."""
        self.shard  # a closed or unopened store says so
        if self._roots is None:
            raise StoreError(f"The roots of collection {self.collection!r} are not open; call open_collection() "
                             "(DragKneeIndex does) before reading or writing.")
        return self._roots

    # -- schema --------------------------------------------------------------------------------

    def open_collection(self, *, dense_size: int, model_id: str, sparse_model: str) -> None:
        qe = self._qe
        self._count()
        if self._shard is not None:
            self._idf = ClientIdf(enabled=self.collection_info().get("bm25_idf") == IDF_SCHEME)
            self._check_existing_collection(dense_size=dense_size, model_id=model_id, sparse_model=sparse_model)
            # An index of a newer format is searched as it is; one of format 1 whose roots' shard
            # cannot be made for want of space is searched as format 1 did (see _room_for_roots).
            if not self.read_only and self._room_for_roots():
                self._sync_roots(dense_size)
                self._record_format()
            self._start_roots_map()
            return
        config = self._shard_config(dense_size)
        check_free_space(self.path, edge_open_needs(self.path, wal=not self.in_memory), "create the index")
        with _engine_errors(f"create the index in {str(self.path)!r}", self.location):
            self._shard = qe.EdgeShard.create(str(self.path), config)
            # An empty shard made here: this store sees every write from now on.
            self._node_map = NodeCache(self._node_map.capacity, complete=True)
            self._roots_map = NodeCache(self._roots_map.capacity, complete=True, roots_only=True)
            self._idf = ClientIdf(enabled=True)
            self._idf.rebuild([])
            self._create_indexes(self._shard)
            self._roots = self._create_roots_shard(dense_size)
        self._checked = True  # made here: nothing to check
        self._write_meta(dense_size, model_id, sparse_model)
        self.pending.reset()  # a new shard: the list covers every write from here on

    def _room_for_roots(self) -> bool:
        """Whether the roots' shard is there, or there is room to make it (bringing a format-1
        index to format 2 on open). Where there is not, the index opens read-only, saying why:
        making the shard maps its log (2 x 32 MiB) and copies every root, and Edge dies by SIGBUS
        on a full disk. Searches and listings then rank the roots by the level filter on the nodes'
        shard, as format 1 did."""
        if self._roots is not None or self.in_memory:
            return True
        roots = self.count_roots()
        needed = edge_open_needs(self.path / EDGE_ROOTS_DIR) + 2 * roots * BYTES_PER_NODE
        free = free_bytes(self.path)
        if free is None or free >= needed:
            return True
        self._roots_deferred = True
        self.read_only = (
            f"The index {describe(self)} is in index format 1; bringing it to format {SCHEMA_VERSION} (a shard of "
            f"its {roots:,} roots) needs about {needed / MIB:.0f} MB of free disk space and {free / MIB:.0f} MB are "
            "free, so it opens read-only: searches and listings work, writes are refused. The index is intact; "
            "free some space and open it again to bring it to the new format."
        )
        log.warning("%s", self.read_only)
        return False

    def _roots_to_read(self) -> Any:
        """The shard that answers rankings and listings of the roots: the roots' own, or the nodes'
        shard (by its ``level = 0`` filter) for a format-1 index opened read-only (_room_for_roots)."""
        if self._roots_deferred:
            return self.shard
        return self.roots_shard

    def _shard_config(self, dense_size: int) -> Any:
        """The engine settings of a new shard (the nodes' and the roots' alike)."""
        qe = self._qe
        dense = qe.EdgeVectorParams(
            size=dense_size, distance=qe.Distance.Cosine, on_disk=self.dense_on_disk,
            datatype=getattr(qe.VectorStorageDatatype, _DATATYPES[self.dense_datatype]) if self.dense_datatype else None)
        return qe.EdgeConfig(
            vectors={DENSE: dense},
            # No engine IDF: the store weighs the query by a collection-wide IDF itself, on exact grids,
            # because Edge sums IDF-weighted terms in a per-process order (bm25_idf.py).
            # full_scan_threshold: a filtered BM25 ranking over more points than this walks the
            # inverted index (checking the filter per posting) instead of scoring every admitted
            # point's vector. The engine's default (5,000) scored the focus step's global list (the
            # leaves of the 50 best documents: ~1,500 points at 10k nodes, ~5,000 at 100k) point by
            # point at 3-4x the cost of the index walk; candidate sets below it stay point by point.
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=getattr(qe.Modifier, "None"),
                                                              full_scan_threshold=SPARSE_FULL_SCAN)},
            # indexing_threshold=0 switches HNSW building off: every search stays exact (package docstring).
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=0),
            # An ephemeral index needs no write-ahead log (upserts ~35% faster without it).
            wal_enabled=not self.in_memory,
            payload_memory=getattr(qe.Memory, _MEMORY[self.payload_memory]) if self.payload_memory else None,
        )

    def _create_indexes(self, shard: Any) -> None:
        qe = self._qe
        for field, schema in _PAYLOAD_INDEXES:
            shard.update(qe.UpdateOperation.create_field_index(field, getattr(qe.PayloadSchemaType, schema)))

    def _create_roots_shard(self, dense_size: int) -> Any:
        """A new, empty roots' shard (call inside _engine_errors)."""
        roots = self._qe.EdgeShard.create(str(self.path / EDGE_ROOTS_DIR), self._shard_config(dense_size))
        self._create_indexes(roots)
        return roots

    def _root_versions(self, shard: Any, *, level_filter: bool) -> Dict[str, str]:
        """Point id -> :func:`root_version` of every root a shard holds (the nodes' shard: ``level = 0``)."""
        qe = self._qe
        flt = qe.Filter(must=[qe.FieldCondition(key="level", match=qe.MatchValue(0))]) if level_filter else None
        found: Dict[str, str] = {}
        offset = None
        while True:
            self._count()
            page, offset = shard.scroll(qe.ScrollRequest(
                offset=offset, limit=_SCROLL_PAGE, filter=flt, with_payload=qe.PayloadSelector.Include(list(STAMP_FIELDS)),
                with_vector=False))
            found.update((str(r.id), root_version(r.payload)) for r in page)
            if offset is None:
                return found

    def _sync_roots(self, dense_size: Optional[int]) -> None:
        """Bring the roots' shard in step with the roots of the nodes' shard.

        A folder written before the roots had a shard of their own (or by an older release, which
        writes the nodes' shard only) gets it here, when it is opened: every root is copied (7,024
        roots of a 1M-node index: a few seconds), a root the copy lacks or holds in another version
        is copied again, and a copy whose root is gone is deleted. Two scrolls of the roots' ids and
        hashes otherwise (milliseconds). The folder lock means no other writer runs meanwhile.
        """
        qe = self._qe
        with _engine_errors("bring the roots' shard in step with the index", self.location):
            if self._roots is None:
                if dense_size is None:
                    raise StoreError("open_collection() makes the roots' shard; call it first.")
                self._roots = self._create_roots_shard(dense_size)
            wanted = self._root_versions(self.shard, level_filter=True)
            held = self._root_versions(self._roots, level_filter=False)
            stale = [pid for pid, version in wanted.items() if held.get(pid) != version]
            extra = [pid for pid in held if pid not in wanted]
            for start in range(0, len(stale), _COPY_BATCH):
                self._count()
                records = self.shard.retrieve(stale[start:start + _COPY_BATCH], with_payload=True, with_vector=True)
                points = [qe.Point(str(r.id), r.vector, r.payload) for r in records if is_node(r.payload)]
                self._count()
                self._roots.update(qe.UpdateOperation.upsert_points(points))
            if extra:
                self._count()
                self._roots.update(qe.UpdateOperation.delete_points(extra))
            if stale or extra:
                self._roots.flush()
                log.info("roots' shard of %s brought in step: %d root(s) copied, %d removed", self.path,
                         len(stale), len(extra))

    def _write_meta(self, dense_size: int, model_id: str, sparse_model: str,
                    meta: Optional[Dict[str, Any]] = None) -> None:
        qe = self._qe
        self._note_write()
        # The same bookkeeping points as every engine (see point_schema.meta_payload), the point and its copy.
        payload = dict(meta) if meta else meta_payload(dense_size, model_id, sparse_model,
                                                       IDF_SCHEME if self._idf.enabled else None)
        points = [qe.Point(point_id, {DENSE: meta_vector(dense_size)}, payload) for point_id in META_IDS]
        with _engine_errors("write the collection's bookkeeping point"):
            self.shard.update(qe.UpdateOperation.upsert_points(points))
            self.shard.flush()

    def _meta_payloads(self) -> List[Optional[Dict[str, Any]]]:
        if self._shard is None or self._closed:
            return [None, None]
        self._count()
        try:
            found = {str(r.id): r.payload for r in self._shard.retrieve(list(META_IDS), with_payload=True,
                                                                        with_vector=False)}
        except Exception as exc:
            refused = io_error(exc, "read the index", self.location)
            if refused is not None:
                raise refused from exc
            # The shard loaded but cannot read its own first points: its files are damaged.
            raise IndexDamagedError(
                f"The index {describe(self)} is damaged: the engine cannot read its bookkeeping points "
                f"({type(exc).__name__}: {str(exc)[:200]}). Nothing was changed; restore the folder from a "
                "backup, or move it aside and ingest the documents again.") from None
        return [dict(found[i]) if found.get(i) else None for i in META_IDS]

    def collection_info(self) -> Dict[str, Any]:
        meta = recorded_meta(self) if self._shard is not None and not self._closed else None
        return collection_info(meta, engine=self.engine, collection=self.collection, location=self.location,
                               edge_version=EDGE_VERSION)

    def _sample_nodes(self, limit: int, roots: bool = False) -> List[Sample]:
        qe = self._qe
        shard = self.shard if not roots else self._roots
        if shard is None:  # no roots' shard yet (an index of format 1)
            return []
        self._count()
        records, _ = shard.scroll(qe.ScrollRequest(
            limit=limit, filter=qe.Filter(must=self._filters.conditions(F.count_conditions())),
            with_payload=qe.PayloadSelector.Include(list(SAMPLE_FIELDS)), with_vector=[DENSE, SPARSE]))
        vectors = [r.vector or {} for r in records]  # each read of .vector converts it again
        return [(str(r.id), r.payload, v.get(DENSE), sparse_pair(v.get(SPARSE))) for r, v in zip(records, vectors)]

    def count_points(self) -> int:
        self._count()
        with _engine_errors("count points"):
            return int(self.shard.info().points_count)

    def count_roots(self) -> int:
        qe = self._qe
        self._count()
        with _engine_errors("count documents"):
            return int(self.shard.count(qe.CountRequest(exact=True, filter=qe.Filter(
                must=[qe.FieldCondition(key="level", match=qe.MatchValue(0))]))))

    # -- writes --------------------------------------------------------------------------------

    def upsert(self, records: Sequence[NodeRecord]) -> None:
        qe = self._qe
        shard = self.shard
        self._begin_records(records)
        for start in range(0, len(records), self.upsert_batch_size):
            chunk = records[start : start + self.upsert_batch_size]
            payloads = [(r.node.id, node_payload(r.node)) for r in chunk]
            # numpy's tolist() converts a whole vector in C: 5x faster than float() per element.
            sparse = [(np.asarray(r.sparse_indices, dtype=np.int64).tolist(),
                       self._idf.document_values(r.sparse_values)) for r in chunk]
            add_checks([p for _, p in payloads], [r.node.id for r in chunk], [r.dense for r in chunk], sparse)
            points = [
                qe.Point(node_id, {DENSE: np.asarray(r.dense, dtype=np.float64).tolist(),
                                   SPARSE: qe.SparseVector(*terms)}, payload)
                for r, (node_id, payload), terms in zip(chunk, payloads, sparse)
            ]
            # Twice each node's estimate: the WAL and the segment hold it.
            check_free_space(self.path, (MARGIN if self.in_memory else WRITE_MARGIN) + 2 * sum(
                BYTES_PER_NODE + 4 * len(p[1].get("text") or "") for p in payloads), f"write {len(points)} nodes")
            for cache in self._maps:
                cache.put(payloads)  # before the engine write: see NodeCache
            replaced = self._sparse_terms(ids=[p[0] for p in payloads]) if self._idf.enabled else []
            self._count()
            with self._dropping_node_map_on_error(), self._idf_in_step(), \
                    _engine_errors(f"write {len(points)} nodes (vector size or payload rejected?)", self.location):
                # One point per operation: within one operation Edge gives the points internal offsets
                # in an order that changes from process to process, and equal scores are returned in
                # offset order, so the same ingest ranked ties differently every run. Point by point
                # costs the same (3,000 points: 0.15 s either way).
                for point, record in zip(points, chunk):
                    shard.update(qe.UpdateOperation.upsert_points([point]))
                    if record.node.level == 0:
                        # The copy after the root (the commit point): the walk reaches no
                        # partial tree; a write cut between the two leaves the document pending,
                        # and the next ingest's sweep (or the next open) copies the root.
                        self.roots_shard.update(qe.UpdateOperation.upsert_points([point]))
                        self._roots_dirty = True
            if self._idf.enabled:
                self._idf.frequencies.remove(replaced)
                self._idf.frequencies.add([r.sparse_indices for r in chunk])
        if records:
            # Durable on return, like qdrant-client's wait=True (a WAL replays it anyway, but a
            # flush also bounds the time a reopen spends replaying).
            self._flush()
            self._forget_node_counts({r.node.doc_id for r in records})
        self._end_records(records)

    def _flush(self) -> None:
        """Make the writes durable now, or at the end of the :meth:`writing` block around them."""
        if self._flush_deferred:
            self._flush_owed = True
            return
        with self._dropping_node_map_on_error(), _engine_errors("flush written nodes to disk", self.location):
            if self._roots_dirty:  # a tree's body touches only the nodes' shard: one fsync, not two
                self.roots_shard.flush()
                self._roots_dirty = False
            self.shard.flush()

    @contextlib.contextmanager
    def writing(self, doc_ids: Sequence[str]) -> Iterator[None]:
        """The index's replace-a-batch sequence (delete old trees, body, roots) with one flush at
        its end instead of one per step: on a 2,620-node folder each flush after a delete cost
        ~0.5 s, 3 of them per changed file (benchmarks/reingest.py). Order is still safe without
        the middle flushes: the write-ahead log replays operations in order, root last."""
        with super().writing(doc_ids):
            self._flush_deferred += 1
            try:
                yield
            finally:
                self._flush_deferred -= 1
            if self._flush_owed and not self._flush_deferred:
                self._flush_owed = False
                self._flush()  # before the pending list forgets these documents

    @contextlib.contextmanager
    def _idf_in_step(self) -> Iterator[None]:
        """A write that fails may or may not have landed: count the frequencies again before the next query."""
        try:
            yield
        except BaseException:
            self._idf.stale = self._idf.enabled
            raise

    def _sparse_terms(self, *, ids: Optional[Sequence[str]] = None, must: Optional[List[Any]] = None,
                      must_not: Optional[List[Any]] = None) -> List[List[int]]:
        """The BM25 term ids of stored nodes: by id, or by filter (every node: ``level >= 0``)."""
        if ids is None:
            return list(self._iter_sparse_terms(must=must, must_not=must_not))
        self._count()
        with _engine_errors("read BM25 terms", self.location):
            records = self.shard.retrieve(list(ids), with_payload=False, with_vector=[SPARSE]) if ids else []
        return [list(r.vector[SPARSE].indices) for r in records if r.vector and SPARSE in r.vector]

    def _iter_sparse_terms(self, *, must: Optional[List[Any]] = None,
                           must_not: Optional[List[Any]] = None) -> Iterator[List[int]]:
        """The BM25 term ids of the nodes a filter selects, one page of the engine's scroll at a time.

        Why a generator: rebuilding the frequencies of a reopened index reads every node's sparse
        vector, and holding them all at once (as Python lists of ints) cost more memory than the
        index itself at 1M nodes (``benchmarks/engine_scale.py``); page by page, only one page is held.
        """
        qe = self._qe
        offset = None
        while True:
            self._count()
            with _engine_errors("read BM25 terms", self.location):
                page, offset = self.shard.scroll(qe.ScrollRequest(
                    offset=offset, limit=_SCROLL_PAGE, with_payload=False, with_vector=[SPARSE],
                    filter=qe.Filter(must=must or None, must_not=must_not)))
            for r in page:
                if r.vector and SPARSE in r.vector:
                    yield r.vector[SPARSE].indices
            del page
            if offset is None:
                return

    def _fresh_idf(self) -> None:
        if self._idf.enabled and self._idf.stale and self._shard is not None:
            self._idf.rebuild(self._iter_sparse_terms(must=self._filters.conditions(F.count_conditions())))

    @contextlib.contextmanager
    def _dropping_node_map_on_error(self) -> Iterator[None]:
        """A write that fails leaves the engine in an unknown state: stop trusting the node map."""
        try:
            yield
        except BaseException:
            for cache in self._maps:
                cache.drop()
            raise

    def delete_nodes(self, doc_id: str, *, except_hash: Optional[str] = None) -> None:
        qe = self._qe
        self._note_write()
        steps, excluded = F.delete_plan(doc_id, except_hash)
        must_not = self._filters.conditions(excluded) or None
        of_doc = self._filters.conditions(steps[-1])
        with self._dropping_node_map_on_error(), _engine_errors(f"delete the nodes of document {doc_id!r}", self.location):
            # The index clears every document before writing it, new ones included: a count on
            # the doc_id index spares those the two deletes and the flush to disk.
            self._count()
            if not self.shard.count(qe.CountRequest(exact=True, filter=qe.Filter(must=of_doc, must_not=must_not))):
                return
            self.pending.begin([doc_id])
            # The root first (the NodeStore contract): it is the tree's commit point, so a delete
            # cut short leaves only rootless nodes, which no search reaches and the next ingest removes.
            gone = self._sparse_terms(must=of_doc, must_not=must_not) if self._idf.enabled else []
            with self._idf_in_step():
                # The roots' copy first (the walk stops reaching the tree), then the root, then the rest.
                self._count()
                self._roots_dirty = True
                self.roots_shard.update(qe.UpdateOperation.delete_points_by_filter(
                    qe.Filter(must=of_doc, must_not=must_not)))
                for step in steps:
                    self._count()
                    self.shard.update(qe.UpdateOperation.delete_points_by_filter(
                        qe.Filter(must=self._filters.conditions(step), must_not=must_not)))
                self._flush()
            if self._idf.enabled:
                self._idf.frequencies.remove(gone)
        for cache in self._maps:
            cache.remove(doc_id, except_hash)  # after the engine delete: see NodeCache
        self._forget_node_counts((doc_id,))
        self._deleted = True
        self.pending.end([doc_id])

    # -- reads ---------------------------------------------------------------------------------

    def retrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        if not ids:
            return []
        self._count()
        with _engine_errors("fetch nodes by id"):
            records = self.shard.retrieve(list(ids), with_payload=True, with_vector=False)
        return [full_node(str(r.id), r.payload) for r in records if is_node(r.payload)]

    def retrieve_roots(self, ids: Sequence[str]) -> List[TreeNode]:
        if not ids:
            return []
        self._count()
        with _engine_errors("fetch roots by id"):  # the walk's fields and the file stamp only
            records = self.shard.retrieve(list(ids), with_payload=self._root_payload, with_vector=False)
        return [root_node(str(r.id), r.payload) for r in records if is_node(r.payload) and r.payload.get("level") == 0]

    def _copied_stamps(self, doc_ids: Sequence[str]) -> Optional[Dict[str, str]]:
        # The roots' copy answers: only roots come back, with the stamp alone (a retrieve of both
        # possible root ids from the nodes' shard also returned each document's first leaf, and
        # the walk's fields of each: ~75 ms for 1,000 files, RESULTS.md "scale"). The folder lock
        # and the sync on open make the copy the roots (written after its root, deleted before
        # it); a count of those documents' roots in the nodes' shard (~2 ms) confirms it anyway.
        if self._roots is None or self._roots_deferred:  # format 1 read as it is: the nodes' roots
            return None
        by_id = stamp_ids(doc_ids)
        self._count()
        with _engine_errors("fetch the roots' file stamps"):
            records = self._roots.retrieve(list(by_id), with_payload=self._stamp_payload, with_vector=False)
        found: Dict[str, str] = {}
        for record in records:
            stamp = payload_stamp(record.payload)
            if stamp is not None:
                found[by_id[str(record.id)]] = stamp
        if found and self._count_roots_of(list(found)) != len(found):
            return None
        return found

    def _count_roots_of(self, doc_ids: Sequence[str]) -> int:
        """How many roots of ``doc_ids`` the nodes' shard holds (one count on its payload indexes)."""
        qe = self._qe
        self._count()
        with _engine_errors("count the roots of documents"):
            return self.shard.count(qe.CountRequest(exact=True, filter=qe.Filter(must=[
                qe.FieldCondition(key="doc_id", match=qe.MatchAny(list(doc_ids))),
                qe.FieldCondition(key="level", match=qe.MatchValue(0))])))

    def sync_roots(self) -> None:
        self._sync_roots(None)

    def set_root_metadata(self, root_id: str, values: Mapping[str, Any]) -> None:
        qe = self._qe
        self._count()
        with _engine_errors("update a root's metadata", self.location):
            for shard in (self.shard, self.roots_shard):
                shard.update(qe.UpdateOperation.set_payload([root_id], dict(values), key="metadata"))
            self._roots_dirty = True
            self._flush()

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
        # Without it, a roots ranking the roots' shard answers takes its nodes from the roots map.
        roots_map = (self._roots_map if light and node_map is None and self._roots_map.complete
                     and not self._roots_deferred else None)
        make_node = light_node if light else full_node

        batch: List[Any] = []
        targets: List[bool] = []  # per engine request: True when the roots' shard answers it
        plans: List[_Plan] = []
        carried: Dict[int, bool] = {}  # engine request -> whether it brings the walk's payload fields
        reads: Dict[int, int] = {}  # side ranking's engine request -> its length once ordered
        merged: Dict[int, int] = {}  # a split BM25 side's first engine request -> its groups' requests
        for request in requests:
            on_roots = roots_ranking(request)
            mapped_by = node_map if node_map is not None else roots_map if on_roots else None
            with_payload: Any = False if mapped_by is not None else self._walk_payload if light else True
            if on_roots and not self._roots_deferred:  # every point of the roots' shard is a root
                flt = self._filters.filter_of(F.roots_copy_conditions(request))
            else:
                flt = self._filters.request_filter(request)
            side = side_limit(request)
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
                # With explain or with_scores in a light ranking, the two side rankings are all we
                # ask for and the fusion is done here (fuse_rrf: bit for bit the engine's); otherwise
                # the engine fuses. (A fused request would scan both sides a second time: the default
                # focus's global list cost ~3 ms more per search over 6,500 leaves, and at 1M nodes,
                # where no node map is kept, each filtered scan of the global list costs tens of ms.)
                # Without the node map the sides bring the walk's payload fields themselves.
                fuse_here = (explain or request.with_scores) and light
                if not fuse_here:
                    main_index = len(batch)
                    batch.append(qe.QueryRequest(
                        prefetches=[qe.Prefetch(query=dense_q, filter=flt, limit=side, params=exact),
                                    qe.Prefetch(query=sparse_q, filter=flt, limit=side)],
                        query=qe.Fusion.Rrf(k=rrf_k, weights=[float(w) for w in request.weights]),
                        filter=flt, limit=limit, with_payload=with_payload,
                    ))
                if explain or request.with_scores:
                    # Side rankings in the same batch: ranks within `side`, scores of every hit.
                    read = score_limit(request) if request.with_scores else side
                    # Without the node map the sides bring the walk's payload fields where the
                    # fusion keeps what they return: the dense side of a candidate set (it returns
                    # every candidate), both sides of a roots ranking (explain). An open ranking of
                    # the nodes brings none: each side reads ``read`` hits (100 for the focus step's
                    # global list) of which the fusion keeps ``limit`` (50), and a payload read on
                    # cold pages costs ~40 us a point; the kept hits' fields come from a candidate
                    # set of the batch if it holds them, else from one engine call after the batch
                    # (measured at 100k nodes without the map: benchmarks/RESULTS.md, "scale6").
                    carry = fuse_here and mapped_by is None and (request.candidate_ids is not None or on_roots)
                    # Each side over-fetched by the tie margin, then ordered by score and id and
                    # cut at `read` (base.side_order): the engine's order of ties is arbitrary.
                    dense_index = len(batch)
                    batch.append(qe.QueryRequest(query=dense_q, filter=flt, limit=read + TIE_MARGIN, params=exact,
                                                 with_payload=with_payload if carry else False))
                    sparse_index = len(batch)
                    sparse_carry = carry and request.candidate_ids is None
                    groups = None if sparse_carry or on_roots else self._sparse_groups(request)
                    if groups:  # the BM25 side per group of documents, merged below (split.py)
                        batch.extend(qe.QueryRequest(query=sparse_q, filter=self._filters.request_filter(group),
                                                     limit=read + TIE_MARGIN, with_payload=False) for group in groups)
                        merged[sparse_index] = len(groups)
                    else:
                        batch.append(qe.QueryRequest(query=sparse_q, filter=flt, limit=read + TIE_MARGIN,
                                                     with_payload=with_payload if sparse_carry else False))
                    carried[dense_index], carried[sparse_index] = carry, sparse_carry
                    reads[dense_index] = reads[sparse_index] = read
            targets.extend([on_roots] * (len(batch) - len(targets)))
            plans.append(_Plan(request, main_index, dense_index, sparse_index, mapped_by))
        responses = self._query_batches(batch, targets)
        for position, parts in merged.items():  # a split side: its groups' points, ordered below
            responses[position] = [p for part in responses[position : position + parts] for p in part]
        # Each side ranking's ids and scores, read once and ordered by score, then id; the payloads
        # the carrying sides brought, by id.
        side_ids: Dict[int, List[str]] = {}
        side_pairs: Dict[int, List[Tuple[str, float]]] = {}
        payloads_of: Dict[str, Any] = {}
        for position, carries in carried.items():
            points, scores = _side_prefix(responses[position], reads[position])
            if carries:
                ids = _str_ids(points)
                payloads_of.update(zip(ids, (p.payload for p in points)))
            else:
                ids = point_ids(points)
            side_pairs[position] = pairs = side_order(list(zip(ids, scores)), reads[position])
            side_ids[position] = list(map(PAIR_ID, pairs))
        # The rankings fused here, each cut at its limit; without the node map, the fields of their
        # kept hits that no side brought are read in one engine call for the whole batch.
        fused: Dict[int, List[Tuple[str, float]]] = {}
        for number, (request, main_index, dense_index, sparse_index, _) in enumerate(plans):
            if main_index is None and dense_index is not None and sparse_index is not None:
                side = side_limit(request)
                fused[number] = fuse_rrf(side_ids[dense_index][:side], side_ids[sparse_index][:side], rrf_k,
                                         request.weights)[: request.limit]
        if node_map is None and fused:
            missing = list(dict.fromkeys(pid for number, scored in fused.items() if plans[number].mapped_by is None
                                         for pid, _ in scored if pid not in payloads_of))
            if missing:  # an open ranking's kept hits (or a candidate set that explain ranks short)
                payloads_of.update(self._walk_payloads(missing))

        results: List[List[RankedHit]] = []
        for number, (request, main_index, dense_index, sparse_index, mapped_by) in enumerate(plans):
            if mapped_by is not None and main_index is not None and dense_index is None:
                # The default walk (light, explain off): ids, scores and the node map only.
                quiet = hits_from_map(responses[main_index], request.limit, mapped_by)
                if quiet is not None:
                    results.append(quiet)
                    continue
            # Side rankings without payload: their ids are read cheaply (see point_ids); a side with
            # the walk's payload (no node map) as a payload ranking's are.
            dense_all = side_ids[dense_index] if dense_index is not None else None
            sparse_all = side_ids[sparse_index] if sparse_index is not None else None
            # A with_scores side may read past the side limit: ranks and fusion use its first `side`.
            side = side_limit(request)
            dense_ids = dense_all[:side] if dense_all is not None else None
            sparse_ids = sparse_all[:side] if sparse_all is not None else None
            # Ranks only with explain (a with_scores request reads the sides for their scores).
            dense_ranks = dict(zip(dense_ids, range(len(dense_ids)))) if explain and dense_ids is not None else None
            sparse_ranks = dict(zip(sparse_ids, range(len(sparse_ids)))) if explain and sparse_ids is not None else None
            if main_index is None:  # fused here, from the side rankings
                scored = fused[number]
                if mapped_by is not None:
                    payloads: List[Any] = [None] * len(scored)
                else:  # each hit's payload from a side of this batch that brought it, or read after it
                    payloads = [payloads_of.get(pid) for pid, _ in scored]
            else:
                points = responses[main_index]
                ids = point_ids(points) if mapped_by is not None else [str(p.id) for p in points]
                scored = [(pid, float(p.score)) for pid, p in zip(ids, points)]
                payloads = [None] * len(points) if mapped_by is not None else [p.payload for p in points]
            hits = []
            mapped = mapped_by.nodes.get if mapped_by is not None else None
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
                    if not is_node(payload):
                        continue  # the bookkeeping point is never a node
                    node = make_node(pid, payload)
                hits.append(RankedHit(  # positional: ~0.6 us less per hit than keywords
                    node,
                    score,
                    dense_ranks.get(pid) if dense_ranks is not None else None,
                    sparse_ranks.get(pid) if sparse_ranks is not None else None,
                ))
            if main_index is not None:  # (fuse_rrf already ordered its hits so)
                hits = stable_order(hits)
            hits = hits[: request.limit]  # over-fetched: cut here, ties by id
            if request.with_scores and dense_all is not None and sparse_all is not None:
                hits = side_scores(hits, request, dict(side_pairs[dense_index]), dict(side_pairs[sparse_index]))
            results.append(hits)
        return results

    def _sparse_groups(self, request: RankRequest) -> Optional[List[RankRequest]]:
        """The requests of ``request``'s BM25 side split per group of documents, or None: one request.

        Only an open ranking of leaves filtered by a ``doc_id`` match on several documents (the
        focus step's global list), and only where :class:`.split.SplitRule` says it pays: never in a
        collection under 100,000 points (no count is read there). The collection's points are the
        BM25 frequencies' count (kept by this store, no engine call); each document's nodes are
        counted once (one facet call for the documents not counted yet) and forgotten when written.
        Nodes, not leaves: the engine picks its path by the upper bound of its estimate of the
        filter's points, which is the ``doc_id`` match alone (groups of < 1,000 leaves but more
        nodes walked the inverted index: 7 groups cost ~100 ms against ~13 ms for one request at 1M).
        """
        rule = self.sparse_split
        if not request.leaves_only or request.candidate_ids is not None or request.level is not None:
            return None
        total = self._idf.frequencies.n if self._idf.enabled else 0
        if not rule.may_pay(total):
            return None
        conditions = F.spec_conditions(request.filters)
        at = next((i for i in range(len(conditions) - 1, -1, -1) if conditions[i].kind == F.MATCH
                   and conditions[i].field == "doc_id" and len(conditions[i].values) > 1), None)
        if at is None:
            return None
        docs = conditions[at].values
        counts = self._doc_node_counts(docs)
        groups = rule.groups([(d, counts.get(d, 0)) for d in docs], total)
        if groups is None:
            return None
        before, after = tuple(conditions[:at]), tuple(conditions[at + 1 :])
        return [replace(request, filters=before + (F.any_of("doc_id", group),) + after) for group in groups]

    def _doc_node_counts(self, doc_ids: Sequence[str]) -> Dict[str, int]:
        """How many nodes each document holds, from a cache: filled for every document by the first
        call (one facet over the ``doc_id`` index, ~8 ms at 1M nodes; ``exact=True`` cost ~350 ms),
        then one exact facet for the documents written since (a write forgets its documents'
        counts). A count that lags a concurrent write only makes a split less even, never wrong."""
        qe = self._qe
        cache = self._node_counts
        if not self._node_counts_filled:
            if self._roots is not None and not self._roots_deferred:
                self._count()
                with _engine_errors("count documents"):
                    documents = int(self._roots.info().points_count)
            else:
                documents = self.count_roots()
            self._count()
            with _engine_errors("count the nodes of documents"):
                response = self.shard.facet(qe.FacetRequest(key="doc_id", limit=max(1, documents), exact=False))
            cache.update((str(hit.value), int(hit.count)) for hit in response.hits)
            self._node_counts_filled = True
        missing = [d for d in doc_ids if d not in cache]
        if missing:
            self._count()
            with _engine_errors("count the nodes of documents"):
                response = self.shard.facet(qe.FacetRequest(key="doc_id", limit=len(missing), exact=True, filter=qe.Filter(
                    must=[qe.FieldCondition(key="doc_id", match=qe.MatchAny(list(missing)))])))
            found = {str(hit.value): int(hit.count) for hit in response.hits}
            for d in missing:
                cache[d] = found.get(d, 0)
        return {d: cache.get(d, 0) for d in doc_ids}

    def _forget_node_counts(self, doc_ids: Any) -> None:
        for d in doc_ids:
            self._node_counts.pop(d, None)

    def _query_batches(self, batch: Sequence[Any], targets: Sequence[bool]) -> List[Any]:
        """Run a ranking batch: its roots' requests on the roots' shard, the rest on the nodes'
        shard (one engine call each kind present), answers in the batch's order."""
        qe = self._qe
        responses: List[Any] = [None] * len(batch)
        for on_roots in (True, False):
            positions = [i for i, t in enumerate(targets) if t is on_roots]
            if not positions:
                continue
            shard = self._roots_to_read() if on_roots else self.shard
            self._count()
            with _engine_errors(f"rank {len(positions)} {'root' if on_roots else 'candidate'} sets"):
                answers = shard.query_batch(qe.QueryBatchRequest([batch[i] for i in positions]))
            for i, answer in zip(positions, answers):
                responses[i] = answer
        return responses

    def _walk_payloads(self, point_ids: Sequence[str]) -> Dict[str, Any]:
        """The walk's payload fields of ranked points, by id (one engine call)."""
        self._count()
        with _engine_errors("fetch ranked nodes"):
            records = self.shard.retrieve(list(point_ids), with_payload=self._walk_payload, with_vector=False)
        return {str(record.id): record.payload for record in records}

    def _fetch_light(self, point_id: str) -> Optional[TreeNode]:
        """A ranked point the node map does not hold, read from the engine (None: not a node)."""
        log.debug("point %s not in the node map; reading its payload", point_id)
        self._count()
        with _engine_errors("fetch a ranked node"):
            records = self.shard.retrieve([point_id], with_payload=self._walk_payload, with_vector=False)
        for record in records:
            if is_node(record.payload):
                return light_node(str(record.id), record.payload)
        return None

    def _query(self, query: QueryVectors) -> Tuple[Any, Any]:
        """The engine's dense and sparse query objects for ``query``, built once per search.

        A walk sends the same query in every round trip; converting 384 floats to the engine's
        types each time cost ~40 us per request. The last query's objects are kept (one tuple,
        replaced atomically, so concurrent searches at worst rebuild them).
        """
        self._fresh_idf()
        version = self._idf.frequencies.version
        cached = self._last_query
        if cached is not None and cached[0] is query and cached[3] == version:
            return cached[1], cached[2]
        qe = self._qe
        dense_q = qe.Query.Nearest(np.asarray(query.dense, dtype=np.float64).tolist(), using=DENSE)
        terms, weights = self._idf.query(query.sparse_indices, query.sparse_values)
        sparse_q = qe.Query.Nearest(qe.SparseVector(terms, weights), using=SPARSE)
        self._last_query = (query, dense_q, sparse_q, version)
        return dense_q, sparse_q

    def scroll_nodes(self, *, filters: FilterSpec = (), level: Optional[int] = None, with_text: bool = True) -> List[TreeNode]:
        qe = self._qe
        must = self._filters.conditions(F.scroll_conditions(filters, level))
        with_payload: Any = True if with_text else qe.PayloadSelector.Exclude(list(TEXT_FIELDS))
        # A listing of roots reads the roots' shard: the documents of a 1M-node index, not a filter over it.
        shard = self._roots_to_read() if level == 0 else self.shard
        nodes: List[TreeNode] = []
        offset = None
        while True:
            self._count()
            with _engine_errors("list nodes"):
                records, offset = shard.scroll(qe.ScrollRequest(
                    offset=offset, limit=1024, filter=qe.Filter(must=must), with_payload=with_payload, with_vector=False))
            nodes.extend(full_node(str(r.id), r.payload) for r in records)
            if offset is None:
                return nodes

    def scroll_dense(self, *, filters: FilterSpec = ()) -> List[Tuple[TreeNode, Optional[Sequence[float]]]]:
        qe = self._qe
        must = self._filters.conditions(F.scroll_conditions(filters, None))
        out: List[Tuple[TreeNode, Optional[Sequence[float]]]] = []
        offset = None
        while True:
            self._count()
            with _engine_errors("read vectors"):
                records, offset = self.shard.scroll(qe.ScrollRequest(
                    offset=offset, limit=256, filter=qe.Filter(must=must), with_payload=True, with_vector=[DENSE]))
            out.extend((full_node(str(r.id), r.payload), (r.vector or {}).get(DENSE)) for r in records)
            if offset is None:
                return out

    def count(self) -> int:
        qe = self._qe
        self._count()
        with _engine_errors("count nodes"):
            return int(self.shard.count(qe.CountRequest(exact=True, filter=qe.Filter(
                must=self._filters.conditions(F.count_conditions())))))

    def close(self) -> None:
        """Flush, vacuum deleted nodes (persistent folders), close the shard, release the lock.

        An in-memory store's temporary folder is deleted. Closing twice is harmless.
        """
        if self._closed:
            return
        self._loader_stop.set()
        for loader in (self._loader, self._roots_loader):
            if loader is not None:
                loader.join()  # at most one scroll page: the shard closes only after it
        shard, roots = self._shard, self._roots
        try:
            for one in (roots, shard):
                if one is None:
                    continue
                if self._deleted and not self.in_memory:
                    # Replaced documents leave deleted points behind; optimize() rewrites only
                    # segments above the vacuum threshold (indexing is off, so no HNSW is built).
                    one.optimize()
                one.flush()
            if shard is not None:
                self._close_record()  # the counts, once the writes are on disk (store/integrity.py)
        except Exception:  # closing at interpreter exit or after an engine error must not raise
            log.warning("flushing the Qdrant Edge shard in %s failed", self.path, exc_info=True)
        self._closed = True
        for cache in self._maps:
            cache.drop()
        self._shard = self._roots = None
        try:
            for one in (roots, shard):
                if one is not None:
                    one.close()
        except Exception:  # closing at interpreter exit or after an engine error must not raise
            log.warning("closing the Qdrant Edge shard in %s failed", self.path, exc_info=True)
        finally:
            self._finalizer()

