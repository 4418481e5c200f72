"""The Qdrant Edge node store: the engine protocol of :class:`NodeStore`, on Qdrant Edge shards.

See the package docstring for the decisions and their measurements. :class:`EdgeStore` is made of
one module per job, each a mixin of it, and this one:

- ``engine.py`` (here): opening (folder, lock, shard settings, the check on open), the bookkeeping
  points, reads by id, listings, counts and closing;
- ``rank.py``: rankings, as plan, execute, read;
- ``writes.py``: upserts, deletes, flushes, the BM25 frequencies;
- ``roots.py``: the roots' own shard (made, read, kept in step);
- ``maps.py``: loading the maps of the walk's fields (``node_map.py`` is the map itself);
- ``calls.py``: the pinned release, the engine's import and its errors in ours;
- ``fast.py``, ``split.py``, ``lock.py``: the fast path of the walk's rankings, the split BM25 side,
  the folder lock.

Every ``qdrant_edge`` call of the library is in this package (``test_store_layering.py``); the
filter translation is the one both Qdrant engines share,
:class:`~drag_knee_retriever.store.filters.QdrantFilters`, given this package's classes.
"""

from __future__ import annotations

import errno
import logging
import os
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from drag_knee_retriever.common._bm25_idf import SCHEME as IDF_SCHEME, ClientIdf
from drag_knee_retriever.common._disk import check_free_space, edge_open_needs, io_error
from drag_knee_retriever.errors import ConfigError, IndexDamagedError, StoreError, StoreIOError
from drag_knee_retriever.model._ids import META_IDS
from drag_knee_retriever.model._nodes import FILE_STAMP_KEY, TreeNode
from drag_knee_retriever.model._point_schema import (
    DENSE,
    ROOT_FIELDS,
    SPARSE,
    TEXT_FIELDS,
    WALK_FIELDS,
    collection_info,
    full_node,
    is_node,
    meta_vector,
    root_node,
)
from drag_knee_retriever.store import filters as F
from drag_knee_retriever.store.base import (
    PENDING_FILE,
    FilterSpec,
    NodeStore,
    PendingDocs,
    QueryVectors,
    check_collection_name,
    detect_engine,
)
from drag_knee_retriever.store.base import EDGE_MARKER as _SHARD_MARKER  # its presence means "load, not create"
from drag_knee_retriever.store.base import EDGE_ROOTS_DIR
from drag_knee_retriever.store.checksums import SAMPLE_FIELDS, Sample, sparse_pair
from drag_knee_retriever.store.integrity import RECORD_FILE, RecordFile, describe, recorded_meta
from drag_knee_retriever.store.journal import JOURNAL_DIR, WriteJournal
from drag_knee_retriever.store.edge.calls import EDGE_PACKAGE, EDGE_VERSION, engine_errors, import_edge, match_value
from drag_knee_retriever.store.edge.fast import point_id_set
from drag_knee_retriever.store.edge.lock import LOCK_FILE, MEMORY_PREFIX, FolderLock, cleanup, memory_dir, sweep_orphans
from drag_knee_retriever.store.edge.maps import WalkMaps
from drag_knee_retriever.store.edge.node_map import NodeCache
from drag_knee_retriever.store.edge.rank import EdgeRanking
from drag_knee_retriever.store.edge.roots import EdgeRoots
from drag_knee_retriever.store.edge.split import SplitRule
from drag_knee_retriever.store.edge.writes import EdgeWrites

log = logging.getLogger(__name__)

__all__ = ["EDGE_PACKAGE", "EDGE_VERSION", "SPARSE_FULL_SCAN", "EdgeStore"]

# Payload indexes: they let the query planner resolve level / leaf / document conditions without
# scanning payloads (and are what a future HNSW would need for filtered search). No index on
# parent_id: no request filters by it, and at 1M nodes it held ~100 MB resident.
_PAYLOAD_INDEXES = (
    ("doc_id", "Keyword"),
    ("level", "Integer"),
    ("is_leaf", "Bool"),
    ("doc_hash", "Keyword"),
    # A question naming a financial statement ranks that statement's leaves (search/_statement_route.py).
    ("statement", "Keyword"),
)


# Where the engine keeps payloads (page texts): its Memory placements, by our name for them.
_MEMORY = {None: None, "pinned": "Pinned", "cached": "Cached", "cold": "Cold"}
# How dense vectors are stored (EdgeStore(dense_datatype=...)): the engine's datatypes.
_DATATYPES = {None: None, "float32": "Float32", "float16": "Float16"}

#: Points a filtered BM25 ranking scores one by one at most (see :meth:`EdgeStore._shard_config`).
SPARSE_FULL_SCAN = 1000


class EdgeStore(EdgeRanking, EdgeWrites, EdgeRoots, WalkMaps, NodeStore):
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
    _idf: ClientIdf  # set in __init__ (decided again per collection when opened)

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
        self._qe = qe = import_edge()
        self._filters = F.QdrantFilters(
            filter=qe.Filter, field=qe.FieldCondition, range=qe.RangeFloat, match_any=qe.MatchAny,
            has_id=lambda ids: qe.HasIdCondition(point_id_set(ids)), match_value=lambda value: match_value(qe, value))
        self.payload_memory = payload_memory
        # New shards only (an existing folder keeps how it was made): dense vectors in a file the
        # engine memory-maps once (True), instead of in RAM, where the engine mapped every chunk
        # twice (resident ~2.2x the vectors' size after a full scan);
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
        # BM25 IDF kept here, in exact arithmetic (common/_bm25_idf.py); decided per collection when opened.
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
            # The marker checks too run inside engine_errors: a sub-folder this user may not read
            # (chmod 000 roots/) raised a bare PermissionError here, which the CLI called "damaged".
            with engine_errors(f"load the index in {str(self.path)!r} (is it a drag-knee Edge index?)", str(base)):
                if (self.path / _SHARD_MARKER).exists():
                    self._shard = self._qe.EdgeShard.load(str(self.path))
            roots = self.path / EDGE_ROOTS_DIR
            if self._shard is not None:
                with engine_errors("load the roots of the index (its roots/ folder)", str(roots)):
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

    def _exists(self) -> bool:
        return self._shard is not None

    def _load_existing(self) -> None:
        self._idf = ClientIdf(enabled=self.collection_info().get("bm25_idf") == IDF_SCHEME)

    def _create(self, dense_size: int) -> None:
        qe = self._qe
        config = self._shard_config(dense_size)
        check_free_space(self.path, edge_open_needs(self.path, wal=not self.in_memory), "create the index")
        with engine_errors(f"create the index in {str(self.path)!r}", self.location):
            self._shard = qe.EdgeShard.create(str(self.path), config)
            # An empty shard made here: this store sees every write from now on.
            self._node_map = NodeCache(self._node_map.capacity, complete=True)
            self._roots_map = NodeCache(self._roots_map.capacity, complete=True, roots_only=True)
            self._idf = ClientIdf(enabled=True)
            self._idf.rebuild([])
            self._create_indexes(self._shard)
            self._roots = self._create_roots_shard(dense_size)

    def _opened(self, dense_size: int, *, created: bool) -> None:
        if created:
            return
        # An index of a newer format is searched as it is; one of format 1 whose roots' shard
        # cannot be made for want of space is searched as format 1 did (see _room_for_roots).
        if not self.read_only and self._room_for_roots():
            self._sync_roots(dense_size)
            self._record_format()
        self._start_roots_map()

    def _shard_config(self, dense_size: int) -> Any:
        """The engine settings of a new shard (the nodes' and the roots' alike)."""
        qe = self._qe
        dense = qe.EdgeVectorParams(
            size=dense_size, distance=qe.Distance.Cosine, on_disk=self.dense_on_disk,
            datatype=getattr(qe.VectorStorageDatatype, _DATATYPES[self.dense_datatype]) if self.dense_datatype else None)
        return qe.EdgeConfig(
            vectors={DENSE: dense},
            # No engine IDF: the store weighs the query by a collection-wide IDF itself, on exact grids,
            # because Edge sums IDF-weighted terms in a per-process order (common/_bm25_idf.py).
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

    def _put_meta(self, payload: Dict[str, Any], dense_size: int) -> None:
        qe = self._qe
        points = [qe.Point(point_id, {DENSE: meta_vector(dense_size)}, payload) for point_id in META_IDS]
        with engine_errors("write the collection's bookkeeping point"):
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
        with engine_errors("count points"):
            return int(self.shard.info().points_count)

    def count_roots(self) -> int:
        qe = self._qe
        self._count()
        with engine_errors("count documents"):
            return int(self.shard.count(qe.CountRequest(exact=True, filter=qe.Filter(
                must=[qe.FieldCondition(key="level", match=qe.MatchValue(0))]))))

    # -- reads ---------------------------------------------------------------------------------

    def retrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        if not ids:
            return []
        self._count()
        with engine_errors("fetch nodes by id"):
            records = self.shard.retrieve(list(ids), with_payload=True, with_vector=False)
        return [full_node(str(r.id), r.payload) for r in records if is_node(r.payload)]

    def retrieve_roots(self, ids: Sequence[str]) -> List[TreeNode]:
        if not ids:
            return []
        self._count()
        with engine_errors("fetch roots by id"):  # the walk's fields and the file stamp only
            records = self.shard.retrieve(list(ids), with_payload=self._root_payload, with_vector=False)
        return [root_node(str(r.id), r.payload) for r in records if is_node(r.payload) and r.payload.get("level") == 0]

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
            with engine_errors("list nodes"):
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
            with engine_errors("read vectors"):
                records, offset = self.shard.scroll(qe.ScrollRequest(
                    offset=offset, limit=256, filter=qe.Filter(must=must), with_payload=True, with_vector=[DENSE]))
            out.extend((full_node(str(r.id), r.payload), (r.vector or {}).get(DENSE)) for r in records)
            if offset is None:
                return out

    def count(self) -> int:
        qe = self._qe
        self._count()
        with engine_errors("count nodes"):
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

