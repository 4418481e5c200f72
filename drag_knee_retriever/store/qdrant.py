"""The qdrant-client engine: local mode (``":memory:"`` or a folder) and servers / clusters (``url=``).

One module per job, this one the only one that imports qdrant-client (``test_store_layering.py``):
here opening (clients, the collection's check), the bookkeeping points, writes, reads by id,
listings and closing; :mod:`.qdrant_rank` the rankings (plan, execute, read); :mod:`.qdrant_roots`
the roots' copy. What every engine shares is :class:`~drag_knee_retriever.store.base.NodeStore`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import threading
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.common._bm25_idf import SCHEME as IDF_SCHEME, ClientIdf
from drag_knee_retriever.common._disk import io_error
from drag_knee_retriever.errors import ConfigError, DragKneeError, StoreError, StoreLockedError
from drag_knee_retriever.model._ids import META_IDS
from drag_knee_retriever.model._nodes import TreeNode
from drag_knee_retriever.model._point_schema import (DENSE, ROOT_FIELDS, SPARSE, collection_info, full_node, is_node, meta_vector, node_payload,
                            root_node)
from drag_knee_retriever.common._redact import protect, redact_text, redact_url
from drag_knee_retriever.store import filters as F
from drag_knee_retriever.store.base import (EDGE_MARKER, PENDING_FILE, ROOTS_SUFFIX, FilterSpec, NodeRecord, NodeStore, PendingDocs,
                   check_collection_name, lock_file_error)
from drag_knee_retriever.store.checksums import SAMPLE_FIELDS, Sample, add_checks, sparse_pair
from drag_knee_retriever.store.integrity import RECORD_FILE, RecordFile, recorded_meta
from drag_knee_retriever.store.journal import JOURNAL_DIR, WriteJournal
from drag_knee_retriever.store.qdrant_rank import QdrantRanking
from drag_knee_retriever.store.qdrant_roots import QdrantRoots

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# qdrant-client: local mode (":memory:" or a folder) and servers / clusters (url=)
# ---------------------------------------------------------------------------------------------


def _client_engine(client: Any) -> Tuple[str, Optional[str], Optional[str], Optional[str]]:
    """(engine, url, api key, local location) of a user's ``QdrantClient``, read without a request.

    Its ``init_options`` decide as ``QdrantClient.__init__`` does: ``":memory:"`` or ``path=`` is local
    mode, anything else (``url=``, ``host=``, a URL as ``location``, or no argument: localhost) a server."""
    options = getattr(client, "init_options", None)
    if not isinstance(options, dict):  # not a QdrantClient of the versions we know: ask its backend's type
        remote = type(getattr(client, "_client", None)).__name__ == "QdrantRemote"
        return ("server", None, None, None) if remote else ("local", None, None, "<your QdrantClient>")
    if options.get("location") == ":memory:":
        return "local", None, None, ":memory:"
    if options.get("path") is not None:
        return "local", None, None, str(options["path"])
    url = options.get("url") or options.get("location") or options.get("host")
    return "server", (str(url) if url else None), options.get("api_key"), None


class QdrantClientStore(QdrantRanking, QdrantRoots, NodeStore):
    """A store over qdrant-client: the same code for local mode and for a server or cluster.

    ``collection_options``: extra ``create_collection`` settings for the collections this store
    creates (the nodes' and the roots' copy), e.g. on a cluster
    ``{"shard_number": 6, "replication_factor": 2, "write_consistency_factor": 1, "on_disk_payload": True}``
    (docs/guides/qdrant-server.md, "Sharding and replication"). An existing collection keeps the
    settings it was created with.
    """

    _idf: ClientIdf  # set in __init__ (decided again per collection when opened)

    def __init__(
        self,
        collection: str,
        *,
        location: Optional[str] = ":memory:",
        url: Optional[str] = None,
        api_key: Optional[str] = None,
        upsert_batch_size: int = 256,
        client: Any = None,
        async_client: Any = None,
        timeout: float = 10.0,
        collection_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__()
        from qdrant_client import QdrantClient, models

        if collection_options is not None and not isinstance(collection_options, Mapping):
            raise ConfigError(f"collection_options takes a mapping of create_collection settings, e.g. "
                              f"{{'shard_number': 2}}, got {type(collection_options).__name__}.")
        self.collection_options: Dict[str, Any] = dict(collection_options or {})

        self._m = models
        self._filters = F.QdrantFilters(
            filter=models.Filter, field=models.FieldCondition, range=models.Range,
            has_id=lambda ids: models.HasIdCondition(has_id=list(ids)),
            match_value=lambda value: models.MatchValue(value=value), match_any=lambda values: models.MatchAny(any=values),
            on_range=self._ensure_range_index)
        self.collection = check_collection_name(collection)
        # Every root is also kept in a collection of its own (see base.roots_ranking).
        self.roots_collection = self.collection + ROOTS_SUFFIX
        self.upsert_batch_size = upsert_batch_size
        # A client handed in says itself whether it is local mode or a server (a QdrantClient() with
        # no arguments is localhost:6333): everything below is decided from that, never patched later.
        if client is not None:
            self.engine, url, api_key, location = _client_engine(client)
        else:
            self.engine = "server" if url else "local"
        self._range_indexes: set = set()  # payload fields given a float index for range filters
        self._roots_synced = False  # open_collection brought the roots' copy in step (root_stamps reads it)
        self.timeout = timeout
        # Local mode: BM25 IDF kept here in exact arithmetic (common/_bm25_idf.py), like Qdrant Edge, so both
        # engines give the same bits every run. A server keeps its own IDF (other clients write too).
        self._idf = ClientIdf(enabled=self.engine == "local")
        # Credentials written into the URL never reach a message or a log line (see common/_redact.py).
        self._secrets = protect(url, [api_key] if api_key else []) if url else []
        self._where = redact_url(url) if url else (location if self.engine == "local" else "<your QdrantClient>")
        # Local mode is pure Python and not thread-safe (a reader can see a payload mid-replace);
        # it runs under the GIL anyway, so serialising its calls costs no parallelism.
        self._engine_lock: Any = threading.RLock() if self.engine == "local" else contextlib.nullcontext()
        # Servers also get qdrant-client's async client, so that asearch never blocks the event loop.
        self.async_client: Any = async_client
        # A client handed in stays the caller's: close() leaves it (and its async twin) open.
        self._owns_clients = client is None
        if client is not None:
            self.client = client
        elif url:
            from qdrant_client import AsyncQdrantClient

            # A bounded timeout: an unreachable server fails within it, with the cause named. No
            # version probe at construction: against an unreachable server it cost ~4 s per client
            # before our own first request could name the cause.
            seconds = max(1, math.ceil(timeout))
            self.client = QdrantClient(url=url, api_key=api_key, timeout=seconds, check_compatibility=False)
            if self.async_client is None:
                self.async_client = AsyncQdrantClient(url=url, api_key=api_key, timeout=seconds,
                                                      check_compatibility=False)
        else:
            try:
                if location in (None, ":memory:"):
                    self.client = QdrantClient(location=":memory:")
                    self.pending = PendingDocs(None)
                    self.journal = WriteJournal(None)
                else:
                    if (Path(os.fspath(location)).expanduser() / collection / EDGE_MARKER).exists():
                        # Opening it in local mode would silently start a second, empty index beside it.
                        raise StoreError(
                            f"The folder {str(location)!r} holds a Qdrant Edge index of collection {collection!r}, "
                            "not a qdrant-client local-mode one. Open it with engine='edge' (the default; "
                            "--engine edge or auto), or use another folder for local mode."
                        )
                    self.client = QdrantClient(path=str(location))
                    folder = Path(os.fspath(location)).expanduser()
                    # Rootless leftovers can only be among these documents (store/pending.py).
                    self.pending = PendingDocs(folder / f"{PENDING_FILE}.{collection}")
                    # The new versions of documents being replaced (store/journal.py).
                    self.journal = WriteJournal(folder / f"{JOURNAL_DIR}.{collection}")
                    # What the index records about itself beside the engine's files (store/integrity.py).
                    self.record = RecordFile(folder / f"{RECORD_FILE}.{collection}")
            except OSError as exc:  # e.g. its lock file replaced by a folder
                problem = lock_file_error(Path(os.fspath(location)).expanduser() / ".lock", exc)
                if problem is not None:
                    raise problem from None
                refused = io_error(exc, "open the index", location)
                if refused is not None:
                    raise refused from None
                raise
            except RuntimeError as exc:
                if "already accessed" in str(exc) or "lock" in str(exc).lower():
                    raise StoreLockedError(
                        f"The index folder {location!r} is open in another process. Close that process "
                        "(or its DragKneeIndex), or use a Qdrant server (url=...) for shared access."
                    ) from None
                raise

    def describe(self) -> str:
        where = self._where if self.engine == "local" else "<server>"
        return f"qdrant-client {self.engine} ({where})"

    # -- schema --------------------------------------------------------------------------------

    def _exists(self) -> bool:
        try:
            with self._engine_lock:
                return bool(self.client.collection_exists(self.collection))
        except Exception as exc:
            if self.engine != "server":
                raise
            raise self._unreachable(exc) from None

    def _engine_held(self) -> Any:
        return self._engine_lock

    def _opened(self, dense_size: int, *, created: bool) -> None:
        if self.read_only:  # an index of a newer format is searched as it is
            return
        self._sync_roots(dense_size, created=created)
        self._roots_synced = True  # the roots' copy holds the roots: it answers root_stamps
        if not created:
            self._record_format()

    def _unreachable(self, exc: BaseException) -> StoreError:
        """The server did not answer as a Qdrant server: why, in words (never the request itself,
        whose headers carry the API key; the cause is masked too)."""
        return StoreError(
            f"Could not reach the Qdrant server at {self._where}: {_server_failure(exc, self.timeout, self._secrets)}. "
            "Check that it runs and the URL and port; for 401/403 check the API key (api_key= or "
            "QDRANT_API_KEY)."
        )

    def _check_own_schema(self) -> None:
        """Refuse a collection this library did not build (e.g. langchain-qdrant's: one unnamed
        vector) before anything is written to it."""
        params = self.client.get_collection(self.collection).config.params
        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        sparse = params.sparse_vectors or {}
        if DENSE not in vectors or SPARSE not in sparse:
            found = sorted(vectors) if isinstance(params.vectors, dict) else ["<one unnamed vector>"]
            raise StoreError(
                f"Collection {self.collection!r} exists but was not built by drag-knee-retriever: it has the "
                f"vectors {found + sorted(sparse)}, not {DENSE!r} + {SPARSE!r} (e.g. it was made by "
                "langchain-qdrant or another tool). Nothing was written to it; open another collection name."
            )

    def _load_existing(self) -> None:
        self._check_own_schema()
        self._idf = ClientIdf(enabled=self.engine == "local" and self.collection_info().get("bm25_idf") == IDF_SCHEME)

    def _create(self, dense_size: int) -> None:
        self._create_collection(self.collection, dense_size)
        if self._idf.enabled:
            self._idf.rebuild([])

    def _create_collection(self, name: str, dense_size: int) -> None:
        """A collection of nodes (the nodes' or the roots' copy), with a server's payload indexes."""
        m = self._m
        self.client.create_collection(
            name,
            vectors_config={DENSE: m.VectorParams(size=dense_size, distance=m.Distance.COSINE)},
            sparse_vectors_config={SPARSE: m.SparseVectorParams(
                modifier=m.Modifier.NONE if self._idf.enabled else m.Modifier.IDF)},
            **self.collection_options,
        )
        if self.engine == "server":
            # (No parent_id index: no request filters by it.)
            for field, schema in (("doc_id", m.PayloadSchemaType.KEYWORD), ("level", m.PayloadSchemaType.INTEGER),
                                  ("is_leaf", m.PayloadSchemaType.BOOL), ("doc_hash", m.PayloadSchemaType.KEYWORD),
                                  ("statement", m.PayloadSchemaType.KEYWORD)):
                self.client.create_payload_index(name, field, field_schema=schema)

    def _put_meta(self, payload: Dict[str, Any], dense_size: int) -> None:
        m = self._m
        points = [m.PointStruct(id=point_id, vector={DENSE: meta_vector(dense_size)}, payload=payload)
                  for point_id in META_IDS]
        with self._engine_lock:
            self.client.upsert(self.collection, points)

    def _meta_payloads(self) -> List[Optional[Dict[str, Any]]]:
        self._count()
        try:
            with self._engine_lock:
                found = {str(p.id): p.payload for p in self.client.retrieve(self.collection, list(META_IDS),
                                                                            with_payload=True)}
        except Exception as exc:
            # A server that does not answer fails here, once: the caller must not wait out the
            # timeout again on its next request (a silent server cost twice the timeout).
            if self.engine == "server" and getattr(exc, "status_code", None) != 404:
                raise self._unreachable(exc) from None
            raise
        return [dict(found[i]) if found.get(i) else None for i in META_IDS]

    def collection_info(self) -> Dict[str, Any]:
        return collection_info(recorded_meta(self), engine=self.engine, collection=self.collection)

    def _sample_nodes(self, limit: int, roots: bool = False) -> List[Sample]:
        m = self._m
        self._count()
        with self._engine_lock:
            if roots and not self.client.collection_exists(self.roots_collection):
                return []  # an index of format 1
            points, _ = self.client.scroll(self.roots_collection if roots else self.collection, scroll_filter=m.Filter(
                must=self._filters.conditions(F.count_conditions())), limit=limit,
                with_payload=list(SAMPLE_FIELDS), with_vectors=[DENSE, SPARSE])
        vectors = [p.vector if isinstance(p.vector, dict) else {} for p in points]
        return [(str(p.id), p.payload, v.get(DENSE), sparse_pair(v.get(SPARSE))) for p, v in zip(points, vectors)]

    def count_points(self) -> int:
        self._count()
        with self._engine_lock:
            return self.client.count(self.collection, exact=True).count

    def count_roots(self) -> int:
        m = self._m
        self._count()
        with self._engine_lock:
            return self.client.count(self.collection, count_filter=m.Filter(must=[
                m.FieldCondition(key="level", match=m.MatchValue(value=0))]), exact=True).count

    # -- writes --------------------------------------------------------------------------------

    def upsert(self, records: Sequence[NodeRecord]) -> None:
        m = self._m
        self._begin_records(records)
        for start in range(0, len(records), self.upsert_batch_size):
            chunk = records[start : start + self.upsert_batch_size]
            sparse = [(list(map(int, r.sparse_indices)), self._idf.document_values(r.sparse_values)) for r in chunk]
            payloads = [node_payload(r.node) for r in chunk]
            add_checks(payloads, [r.node.id for r in chunk], [r.dense for r in chunk], sparse)
            points = [
                m.PointStruct(id=r.node.id, payload=payload, vector={
                    DENSE: [float(x) for x in r.dense], SPARSE: m.SparseVector(indices=indices, values=values)})
                for r, payload, (indices, values) in zip(chunk, payloads, sparse)
            ]
            self._count()
            roots = [p for p, r in zip(points, chunk) if r.node.level == 0]
            with self._engine_lock, self._disk_errors(f"write {len(points)} nodes"), self._idf_in_step():
                replaced = self._sparse_terms(ids=[p.id for p in points]) if self._idf.enabled else []
                self.client.upsert(self.collection, points, wait=True)
                if roots:
                    # The copy after the root (the commit point): the walk reaches no partial
                    # tree; a write cut between the two leaves the document pending, and the next
                    # ingest's sweep (or the next open) copies the root.
                    self.client.upsert(self.roots_collection, roots, wait=True)
                if self._idf.enabled:
                    self._idf.frequencies.remove(replaced)
                    self._idf.frequencies.add([r.sparse_indices for r in chunk])
        self._end_records(records)

    def _sparse_terms(self, *, ids: Optional[Sequence[str]] = None, flt: Any = None) -> List[List[int]]:
        """The BM25 term ids of stored nodes, by id or by filter (call under the engine lock)."""
        if ids is not None:
            points = self.client.retrieve(self.collection, list(ids), with_payload=False, with_vectors=[SPARSE]) if ids else []
        else:
            points, offset = [], None
            while True:
                page, offset = self.client.scroll(self.collection, scroll_filter=flt, limit=1024, offset=offset,
                                                  with_payload=False, with_vectors=[SPARSE])
                points.extend(page)
                if offset is None:
                    break
        out = []
        for point in points:
            vector = point.vector.get(SPARSE) if isinstance(point.vector, dict) else None
            if vector is not None:
                out.append(list(vector.indices))
        return out

    def _fresh_idf(self) -> None:
        if self._idf.enabled and self._idf.stale:
            m = self._m
            with self._engine_lock:
                self._idf.rebuild(self._sparse_terms(flt=m.Filter(must=self._filters.conditions(F.count_conditions()))))

    @contextlib.contextmanager
    def _disk_errors(self, what: str) -> Iterator[None]:
        """A write the disk refused (full, read-only, permissions; SQLite's words too) as StoreIOError."""
        try:
            yield
        except DragKneeError:
            raise
        except Exception as exc:
            refused = io_error(exc, what, self._where if self.engine == "local" else "the server")
            if refused is None:
                raise
            raise refused from exc

    def delete_nodes(self, doc_id: str, *, except_hash: Optional[str] = None) -> None:
        m = self._m
        self._note_write()
        steps, excluded = F.delete_plan(doc_id, except_hash)
        must_not = self._filters.conditions(excluded) or None
        with self._engine_lock:
            gone = self._sparse_terms(flt=m.Filter(must=self._filters.conditions(steps[-1]), must_not=must_not)) \
                if self._idf.enabled else []
        self._begin_delete(doc_id)
        # The roots' copy first (the walk stops reaching the tree), then the root, then the rest.
        self._count()
        with self._engine_lock, self._disk_errors(f"delete the nodes of document {doc_id!r}"):
            self.client.delete(self.roots_collection, points_selector=m.FilterSelector(
                filter=m.Filter(must=self._filters.conditions(steps[-1]), must_not=must_not)), wait=True)
        # Local mode deletes point by point: the root first, so no cut leaves a root without children.
        for step in steps:
            self._count()
            with self._engine_lock, self._disk_errors(f"delete the nodes of document {doc_id!r}"), self._idf_in_step():
                self.client.delete(self.collection, points_selector=m.FilterSelector(
                    filter=m.Filter(must=self._filters.conditions(step), must_not=must_not)), wait=True)
        if self._idf.enabled:
            self._idf.frequencies.remove(gone)
        self._end_delete(doc_id)

    # -- reads ---------------------------------------------------------------------------------

    def retrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        if not ids:
            return []
        self._count()
        with self._engine_lock:
            points = self.client.retrieve(self.collection, list(ids), with_payload=True, with_vectors=False)
        return _nodes(points)

    def retrieve_roots(self, ids: Sequence[str]) -> List[TreeNode]:
        if not ids:
            return []
        self._count()
        with self._engine_lock:  # the walk's fields and the file stamp only
            points = self.client.retrieve(self.collection, list(ids), with_payload=list(ROOT_FIELDS),
                                          with_vectors=False)
        return [root_node(str(p.id), p.payload) for p in points if is_node(p.payload) and p.payload.get("level") == 0]

    def set_root_metadata(self, root_id: str, values: Mapping[str, Any]) -> None:
        self._count()
        with self._engine_lock, self._disk_errors("update a root's metadata"):
            for name in (self.collection, self.roots_collection):
                self.client.set_payload(name, payload=dict(values), points=[root_id], key="metadata", wait=True)

    async def aretrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        if self.async_client is None:
            return await super().aretrieve(ids)
        if not ids:
            return []
        self._count()
        return _nodes(await self.async_client.retrieve(self.collection, list(ids), with_payload=True, with_vectors=False))

    def _ensure_range_index(self, field: str) -> None:
        """A server filters a numeric range through a float payload index (in strict mode it
        requires one): created once per field, the first time a range names it."""
        if self.engine != "server" or field in self._range_indexes:
            return
        self._range_indexes.add(field)
        for name in (self.collection, self.roots_collection):
            try:
                self.client.create_payload_index(name, field, field_schema=self._m.PayloadSchemaType.FLOAT)
            except Exception as exc:  # e.g. an index of another type exists: the range still runs
                log.warning("could not create a float payload index on %s of %s (%s); the range filter runs "
                            "without it", field, name, type(exc).__name__)

    def scroll_nodes(self, *, filters: FilterSpec = (), level: Optional[int] = None, with_text: bool = True) -> List[TreeNode]:
        m = self._m
        must = self._filters.conditions(F.scroll_conditions(filters, level))
        # A listing of roots reads the roots' copy: the documents, not a filter over every node.
        name = self.roots_collection if level == 0 else self.collection
        nodes: List[TreeNode] = []
        offset = None
        while True:
            self._count()
            with self._engine_lock:
                points, offset = self.client.scroll(name, scroll_filter=m.Filter(must=must), limit=1024,
                                                    offset=offset, with_payload=True, with_vectors=False)
            nodes.extend(full_node(p.id, p.payload) for p in points)
            if offset is None:
                return nodes

    def scroll_dense(self, *, filters: FilterSpec = ()) -> List[Tuple[TreeNode, Optional[Sequence[float]]]]:
        m = self._m
        must = self._filters.conditions(F.scroll_conditions(filters, None))
        out: List[Tuple[TreeNode, Optional[Sequence[float]]]] = []
        offset = None
        while True:
            self._count()
            with self._engine_lock:
                points, offset = self.client.scroll(self.collection, scroll_filter=m.Filter(must=must), limit=256,
                                                    offset=offset, with_payload=True, with_vectors=[DENSE])
            out.extend((full_node(p.id, p.payload), (p.vector or {}).get(DENSE) if isinstance(p.vector, dict) else None)
                       for p in points)
            if offset is None:
                return out

    def count(self) -> int:
        m = self._m
        self._count()
        with self._engine_lock:
            return self.client.count(self.collection, count_filter=m.Filter(
                must=self._filters.conditions(F.count_conditions())), exact=True).count

    def close(self) -> None:
        if self.record is not None and not getattr(self, "_closed", False):
            self._closed = True
            self._close_record()  # the counts, before the client lets the folder go (store/integrity.py)
        if not self._owns_clients:
            return
        try:
            self.client.close()
        except Exception:  # closing twice or at interpreter exit is harmless
            log.debug("qdrant client close failed", exc_info=True)
        if self.async_client is not None:
            try:
                asyncio.run(self.async_client.close())
            except RuntimeError:  # called from inside a running loop: the loop's owner closes it
                log.debug("async qdrant client left open (running event loop)", exc_info=True)
            except Exception:
                log.debug("async qdrant client close failed", exc_info=True)


def _server_failure(exc: BaseException, timeout: float, secrets: Sequence[str]) -> str:
    """Why a server request failed, in words, with no credential in it (never the request itself)."""
    status = getattr(exc, "status_code", None)
    text = " ".join(str(e) for e in (exc, exc.__cause__, getattr(exc, "source", None)) if e is not None and str(e))
    low = text.lower()
    if status:
        cause = f"HTTP {status} {getattr(exc, 'reason_phrase', '') or ''}".strip()
    elif "refused" in low:
        cause = "connection refused (nothing listens at that address and port)"
    elif "timed out" in low or "timeout" in low or "deadline" in low:
        cause = f"no answer within the {timeout:g} s timeout"
    elif "name or service not known" in low or "nodename nor servname" in low or "getaddrinfo" in low:
        cause = "the host name does not resolve"
    elif "ssl" in low or "certificate" in low:
        cause = f"a TLS error ({text[:200]})"
    else:
        cause = f"{type(exc).__name__}: {text[:200] or 'no reason given'}"
    return redact_text(cause, secrets)


def _nodes(points: Iterable[Any]) -> List[TreeNode]:
    return [full_node(p.id, p.payload) for p in points if is_node(p.payload)]
