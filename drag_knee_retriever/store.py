"""The node store: one interface, two engines (qdrant-client here, Qdrant Edge in ``edge_store``).

Every method that talks to the engine counts one request in ``self.requests``: a search makes one
round trip per tree level, so the count is what tests and benchmarks check.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import operator
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .errors import InvalidQueryError, ModelMismatchError, StoreError, StoreLockedError
from .nodes import Span, TreeNode, check_unicode

log = logging.getLogger(__name__)

DENSE = "dense"
SPARSE = "bm25"
SCHEMA_VERSION = 1
_META_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "drag-knee-retriever/collection-meta"))
# Payload fields a filter may name directly; any other key is looked up in the document metadata.
TOP_LEVEL_FIELDS = ("doc_id", "level", "is_leaf")
FilterSpec = Tuple[Tuple[str, Tuple[Any, ...]], ...]
# What a walk reads of a ranked node: its place in the tree, its span and its version. A "light"
# ranking (``rank(..., light=True)``) returns only these; the text, keywords, metadata and
# descriptions (most of a payload's bytes, and most of the engine's cost per hit) are fetched
# once, for the chosen nodes only, by ``retrieve``.
WALK_FIELDS = ("doc_id", "level", "is_leaf", "parent_id", "child_ids", "first_leaf", "last_leaf",
               "first_page", "last_page", "doc_hash")


@dataclass(frozen=True)
class QueryVectors:
    """A query encoded once: dense vector and BM25 sparse vector (indices, values)."""

    dense: Tuple[float, ...]
    sparse_indices: Tuple[int, ...]
    sparse_values: Tuple[float, ...]


@dataclass(frozen=True)
class NodeRecord:
    """A node with its vectors, ready to upsert."""

    node: TreeNode
    dense: Sequence[float]
    sparse_indices: Sequence[int]
    sparse_values: Sequence[float]


@dataclass(frozen=True)
class RankRequest:
    """Rank a candidate set by hybrid RRF.

    ``candidate_ids`` restricts the ranking to those nodes (``None``: no restriction);
    ``level`` / ``leaves_only`` restrict by tree position; ``filters`` by payload.
    """

    limit: int
    weights: Tuple[float, float] = (1.0, 1.0)
    candidate_ids: Optional[Tuple[str, ...]] = None
    level: Optional[int] = None
    leaves_only: bool = False
    filters: FilterSpec = ()
    # None: fuse both sides by RRF; "dense" / "sparse": one side only (for baselines).
    only: Optional[str] = None


@dataclass(frozen=True)
class RankedHit:
    """One ranked node: fused score, its rank on each side (0-based; None = not matched)."""

    node: TreeNode
    score: float
    dense_rank: Optional[int] = None
    sparse_rank: Optional[int] = None


# A light ranking asks the engine for this many hits beyond its limit and cuts here, by
# (score, id): engines order equal scores arbitrarily (Edge's differs from one shard instance to
# the next), so a limit cutting through a tie would make the walk itself nondeterministic.
TIE_MARGIN = 16


def fetch_limit(request: "RankRequest", light: bool) -> int:
    """How many hits to ask the engine for: the limit, plus :data:`TIE_MARGIN` for a light ranking.

    Only light rankings (the walk's) over-fetch: their hits carry no payload to speak of, while
    a full ranking (flat search) would read the extra hits' whole payloads.
    """
    if not light:
        return request.limit
    more = request.limit + TIE_MARGIN
    if request.candidate_ids is not None:
        more = min(more, len(request.candidate_ids))
    return max(request.limit, more)


def light_node(node_id: str, payload: Mapping[str, Any]) -> TreeNode:
    """A node from a payload holding only :data:`WALK_FIELDS`: text, keywords, metadata empty."""
    return TreeNode(
        id=node_id,
        doc_id=payload["doc_id"],
        level=int(payload["level"]),
        is_leaf=bool(payload["is_leaf"]),
        span=Span(int(payload["first_leaf"]), int(payload["last_leaf"]), payload.get("first_page"), payload.get("last_page")),
        text="",
        parent_id=payload.get("parent_id"),
        child_ids=tuple(payload.get("child_ids") or ()),
        doc_hash=payload.get("doc_hash", ""),
    )


def parse_filters(filters: Optional[Mapping[str, Any]]) -> FilterSpec:
    """Turn a user's ``{"doc_id": [...], "lang": "ru"}`` into typed conditions.

    Values must be str, int or bool, or a non-empty list of those (any of them matches). Keys other
    than ``doc_id``, ``level`` and ``is_leaf`` name document metadata fields.
    """
    if filters is None:
        return ()
    if not isinstance(filters, Mapping):
        raise InvalidQueryError(
            f"filters must be a mapping like {{'doc_id': ['a', 'b'], 'lang': 'ru'}}, got {type(filters).__name__}."
        )
    spec: List[Tuple[str, Tuple[Any, ...]]] = []
    for key, value in filters.items():
        if not isinstance(key, str) or not key.strip() or any(ch in key for ch in "[]\"'"):
            raise InvalidQueryError(f"filter key {key!r} must be a plain field name string.")
        check_unicode(key, "filter key", InvalidQueryError)
        values = tuple(value) if isinstance(value, (list, tuple, set, frozenset)) else (value,)
        if not values:
            raise InvalidQueryError(f"filter {key!r} has an empty list; give at least one value.")
        kinds = set()
        for item in values:
            if isinstance(item, bool):
                kinds.add(bool)
            elif isinstance(item, int):
                if not -(2**63) <= item <= 2**63 - 1:
                    raise InvalidQueryError(f"filter {key!r} value {item} does not fit in int64 (64-bit integers).")
                kinds.add(int)
            elif isinstance(item, str):
                check_unicode(item, f"filter {key!r} value", InvalidQueryError)
                kinds.add(str)
            else:
                raise InvalidQueryError(
                    f"filter {key!r} has value {item!r} of type {type(item).__name__}; "
                    "use str, int or bool (or a list of them)."
                )
        if len(kinds) > 1:
            raise InvalidQueryError(f"filter {key!r} mixes value types {sorted(k.__name__ for k in kinds)}; use one type.")
        if bool in kinds and len(values) > 1:
            raise InvalidQueryError(f"filter {key!r}: give a single bool, not a list.")
        field = key if key in TOP_LEVEL_FIELDS else f"metadata.{key}"
        spec.append((field, values))
    return tuple(spec)


def _lookup(value: Any, parts: Sequence[str]) -> Any:
    """Follow a dotted path through nested metadata as the engines do (a list: any element)."""
    if not parts:
        return value
    if isinstance(value, list):
        found = [_lookup(item, parts) for item in value]
        flat = [x for f in found for x in (f if isinstance(f, list) else [f]) if x is not _MISSING]
        return flat if flat else _MISSING
    if isinstance(value, Mapping):
        return _lookup(value.get(parts[0], _MISSING), parts[1:]) if parts[0] in value else _MISSING
    return _MISSING


def node_matches(node: TreeNode, spec: FilterSpec) -> bool:
    """Whether a node satisfies a parsed filter (the same rule the engines apply)."""
    for field, values in spec:
        if field.startswith("metadata."):
            actual = _lookup(node.metadata, field[len("metadata.") :].split("."))
        else:
            actual = getattr(node, field)
        if isinstance(actual, list):
            if not any(_same(a, v) for a in actual for v in values):
                return False
        elif not any(_same(actual, v) for v in values):
            return False
    return True


_MISSING = object()


def _same(actual: Any, wanted: Any) -> bool:
    return type(actual) is type(wanted) and actual == wanted if isinstance(wanted, bool) else (
        not isinstance(actual, bool) and actual == wanted
    )


class NodeStore(abc.ABC):
    """What the index needs from a vector store. Implementations: qdrant-client, Qdrant Edge."""

    engine: str = "abstract"

    def __init__(self) -> None:
        self.requests = 0
        self._count_lock = threading.Lock()

    def _count(self, n: int = 1) -> None:
        with self._count_lock:
            self.requests += n

    @abc.abstractmethod
    def open_collection(self, *, dense_size: int, model_id: str, sparse_model: str) -> None:
        """Create the collection, or check that an existing one was built with the same model."""

    @abc.abstractmethod
    def upsert(self, records: Sequence[NodeRecord]) -> None:
        """Write nodes with their vectors (in batches)."""

    @abc.abstractmethod
    def delete_nodes(self, doc_id: str, *, except_hash: Optional[str] = None) -> None:
        """Delete a document's nodes (all, or those whose doc_hash differs from ``except_hash``).

        The root goes first: it is the commit point of a tree (written last), so a delete cut short
        leaves only rootless nodes, which no search walks to and the next ingest removes.
        """

    @abc.abstractmethod
    def retrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        """Fetch nodes by id (missing ids are skipped), in one request."""

    @abc.abstractmethod
    def rank(self, requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool,
             light: bool = False) -> List[List[RankedHit]]:
        """Run several hybrid rankings in one round trip; one hit list per request, best first.

        ``explain``: fill each hit's dense and sparse rank. ``light``: the hits' nodes carry only
        :data:`WALK_FIELDS` (see there); rankings and scores are the same either way.
        """

    @abc.abstractmethod
    def scroll_nodes(self, *, filters: FilterSpec = (), level: Optional[int] = None, with_text: bool = True) -> List[TreeNode]:
        """Every node matching the conditions (used for stats and listings, not for search)."""

    @abc.abstractmethod
    def count(self) -> int:
        """Number of nodes stored (the collection's own bookkeeping excluded)."""

    @abc.abstractmethod
    def collection_info(self) -> Dict[str, Any]:
        """What the collection records about itself: model, vector size, schema, engine."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the engine (and any folder lock)."""

    def describe(self) -> str:
        return self.engine

    def _check_existing_collection(self, *, dense_size: int, model_id: str, sparse_model: str) -> None:
        """An existing collection must have been built with this model; an old one gets recorded."""
        info = self.collection_info()
        if info.get("model_id") and (info["model_id"] != model_id or info.get("dense_size") != dense_size):
            raise ModelMismatchError(
                f"Collection {getattr(self, 'collection', '?')!r} was built with model {info['model_id']!r} "
                f"({info.get('dense_size')} dims) but this index uses {model_id!r} ({dense_size} dims). "
                "Open it with the same model, or choose another collection name."
            )
        if not info.get("model_id"):
            self._write_meta(dense_size, model_id, sparse_model)

    @abc.abstractmethod
    def _write_meta(self, dense_size: int, model_id: str, sparse_model: str) -> None:
        """Record which model built the collection (a bookkeeping point no search can see)."""

    # Async variants: an in-process engine answers in microseconds, so a worker thread is enough;
    # a store that talks to a server overrides these with its native async client.

    async def arank(self, requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool,
                    light: bool = False) -> List[List[RankedHit]]:
        """:meth:`rank` without blocking the event loop."""
        return await asyncio.to_thread(self.rank, requests, query, rrf_k=rrf_k, explain=explain, light=light)

    async def aretrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        """:meth:`retrieve` without blocking the event loop."""
        return await asyncio.to_thread(self.retrieve, ids)


# ---------------------------------------------------------------------------------------------
# qdrant-client: local mode (":memory:" or a folder) and servers / clusters (url=)
# ---------------------------------------------------------------------------------------------


class QdrantClientStore(NodeStore):
    """A store over qdrant-client: the same code for local mode and for a server or cluster."""

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
    ) -> None:
        super().__init__()
        from qdrant_client import QdrantClient, models

        self._m = models
        self.collection = collection
        self.upsert_batch_size = upsert_batch_size
        self.engine = "server" if url else "local"
        self._where = url or location
        # Local mode is pure Python and not thread-safe (a reader can see a payload mid-replace);
        # it runs under the GIL anyway, so serialising its calls costs no parallelism.
        self._engine_lock: Any = threading.RLock() if self.engine == "local" else contextlib.nullcontext()
        # Servers also get qdrant-client's async client, so that asearch never blocks the event loop.
        self.async_client: Any = async_client
        if client is not None:
            self.client = client
        elif url:
            from qdrant_client import AsyncQdrantClient

            self.client = QdrantClient(url=url, api_key=api_key)
            if self.async_client is None:
                self.async_client = AsyncQdrantClient(url=url, api_key=api_key)
        else:
            try:
                if location in (None, ":memory:"):
                    self.client = QdrantClient(location=":memory:")
                else:
                    self.client = QdrantClient(path=str(location))
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

    def open_collection(self, *, dense_size: int, model_id: str, sparse_model: str) -> None:
        self._count()
        try:
            with self._engine_lock:
                exists = self.client.collection_exists(self.collection)
        except Exception as exc:
            if self.engine != "server":
                raise
            # Never format the exception's request (headers carry the API key); name the URL only.
            reason = getattr(exc, "reason_phrase", None) or type(exc).__name__
            status = getattr(exc, "status_code", None)
            raise StoreError(
                f"Could not reach the Qdrant server at {self._where} ({status or ''} {reason}). Check that it "
                "runs and the URL and port; for 401/403 check the API key (api_key= or QDRANT_API_KEY)."
            ) from None
        with self._engine_lock:
            self._open_existing_or_create(exists, dense_size=dense_size, model_id=model_id, sparse_model=sparse_model)

    def _open_existing_or_create(self, exists: bool, *, dense_size: int, model_id: str, sparse_model: str) -> None:
        m = self._m
        if exists:
            self._check_existing_collection(dense_size=dense_size, model_id=model_id, sparse_model=sparse_model)
            return
        self.client.create_collection(
            self.collection,
            vectors_config={DENSE: m.VectorParams(size=dense_size, distance=m.Distance.COSINE)},
            sparse_vectors_config={SPARSE: m.SparseVectorParams(modifier=m.Modifier.IDF)},
        )
        if self.engine == "server":
            for field, schema in (("doc_id", m.PayloadSchemaType.KEYWORD), ("level", m.PayloadSchemaType.INTEGER),
                                  ("is_leaf", m.PayloadSchemaType.BOOL), ("parent_id", m.PayloadSchemaType.KEYWORD)):
                self.client.create_payload_index(self.collection, field, field_schema=schema)
        self._write_meta(dense_size, model_id, sparse_model)

    def _write_meta(self, dense_size: int, model_id: str, sparse_model: str) -> None:
        m = self._m
        # The collection records which model built it in a bookkeeping point. It has no doc_id,
        # level or is_leaf, so no search (always restricted by level, leaf flag or ids) sees it.
        payload = {"kind": "meta", "model_id": model_id, "dense_size": dense_size,
                   "sparse_model": sparse_model, "schema_version": SCHEMA_VERSION}
        vector = [1.0] + [0.0] * (dense_size - 1)
        self.client.upsert(self.collection, [m.PointStruct(id=_META_ID, vector={DENSE: vector}, payload=payload)])

    def collection_info(self) -> Dict[str, Any]:
        self._count()
        with self._engine_lock:
            found = self.client.retrieve(self.collection, [_META_ID], with_payload=True)
        info: Dict[str, Any] = dict(found[0].payload) if found else {}
        info.pop("kind", None)
        info["engine"] = self.engine
        info["collection"] = self.collection
        return info

    # -- writes --------------------------------------------------------------------------------

    def upsert(self, records: Sequence[NodeRecord]) -> None:
        m = self._m
        for start in range(0, len(records), self.upsert_batch_size):
            chunk = records[start : start + self.upsert_batch_size]
            points = [
                m.PointStruct(
                    id=r.node.id,
                    vector={
                        DENSE: [float(x) for x in r.dense],
                        SPARSE: m.SparseVector(indices=list(map(int, r.sparse_indices)), values=list(map(float, r.sparse_values))),
                    },
                    payload=r.node.to_payload(),
                )
                for r in chunk
            ]
            self._count()
            with self._engine_lock:
                self.client.upsert(self.collection, points, wait=True)

    def delete_nodes(self, doc_id: str, *, except_hash: Optional[str] = None) -> None:
        m = self._m
        must_not = [m.FieldCondition(key="doc_hash", match=m.MatchValue(value=except_hash))] if except_hash else None
        of_doc = m.FieldCondition(key="doc_id", match=m.MatchValue(value=doc_id))
        is_root = m.FieldCondition(key="level", match=m.MatchValue(value=0))
        # Local mode deletes point by point: the root first, so no cut leaves a root without children.
        for must in ([of_doc, is_root], [of_doc]):
            self._count()
            with self._engine_lock:
                self.client.delete(self.collection, points_selector=m.FilterSelector(
                    filter=m.Filter(must=must, must_not=must_not)), wait=True)

    # -- reads ---------------------------------------------------------------------------------

    def retrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        if not ids:
            return []
        self._count()
        with self._engine_lock:
            points = self.client.retrieve(self.collection, list(ids), with_payload=True, with_vectors=False)
        return _nodes(points)

    async def aretrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        if self.async_client is None:
            return await super().aretrieve(ids)
        if not ids:
            return []
        self._count()
        return _nodes(await self.async_client.retrieve(self.collection, list(ids), with_payload=True, with_vectors=False))

    def _filter(self, request: RankRequest) -> Any:
        m = self._m
        must: List[Any] = []
        if request.candidate_ids is not None:
            must.append(m.HasIdCondition(has_id=list(request.candidate_ids)))
        if request.level is not None:
            must.append(m.FieldCondition(key="level", match=m.MatchValue(value=request.level)))
        if request.leaves_only:
            must.append(m.FieldCondition(key="is_leaf", match=m.MatchValue(value=True)))
        if request.candidate_ids is None and request.level is None and not request.leaves_only:
            must.append(m.FieldCondition(key="level", range=m.Range(gte=0)))  # nodes only, never bookkeeping
        must.extend(self._conditions(request.filters))
        return m.Filter(must=must) if must else None

    def _conditions(self, spec: FilterSpec) -> List[Any]:
        m = self._m
        out = []
        for field, values in spec:
            if len(values) == 1:
                out.append(m.FieldCondition(key=field, match=m.MatchValue(value=values[0])))
            else:
                out.append(m.FieldCondition(key=field, match=m.MatchAny(any=list(values))))
        return out

    def rank(self, requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool,
             light: bool = False) -> List[List[RankedHit]]:
        if not requests:
            return []
        batch, layout = self._batch(requests, query, rrf_k=rrf_k, explain=explain, light=light)
        self._count()
        with self._engine_lock:
            responses = self.client.query_batch_points(self.collection, batch)
        return _parse_batch(responses, layout, light)

    async def arank(self, requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool,
                    light: bool = False) -> List[List[RankedHit]]:
        if self.async_client is None:
            return await super().arank(requests, query, rrf_k=rrf_k, explain=explain, light=light)
        if not requests:
            return []
        batch, layout = self._batch(requests, query, rrf_k=rrf_k, explain=explain, light=light)
        self._count()
        return _parse_batch(await self.async_client.query_batch_points(self.collection, batch), layout, light)

    def _batch(self, requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool, light: bool):
        """The query_batch_points requests of one round trip, and where each answer sits in it."""
        m = self._m
        with_payload: Any = list(WALK_FIELDS) if light else True
        dense_q = list(query.dense)
        sparse_q = m.SparseVector(indices=list(query.sparse_indices), values=list(query.sparse_values))
        batch: List[Any] = []
        layout: List[Tuple[int, Optional[int], Optional[int], int]] = []
        for request in requests:
            flt = self._filter(request)
            side_limit = request.limit if request.candidate_ids is not None else max(request.limit, 100)
            limit = fetch_limit(request, light)
            main_index = len(batch)
            if request.only == "dense":
                batch.append(m.QueryRequest(query=dense_q, using=DENSE, filter=flt, limit=limit,
                                            with_payload=with_payload))
            elif request.only == "sparse":
                batch.append(m.QueryRequest(query=sparse_q, using=SPARSE, filter=flt, limit=limit,
                                            with_payload=with_payload))
            else:
                batch.append(m.QueryRequest(
                    prefetch=[
                        m.Prefetch(query=dense_q, using=DENSE, filter=flt, limit=side_limit),
                        m.Prefetch(query=sparse_q, using=SPARSE, filter=flt, limit=side_limit),
                    ],
                    query=m.RrfQuery(rrf=m.Rrf(k=rrf_k, weights=list(request.weights))),
                    filter=flt, limit=limit, with_payload=with_payload,
                ))
            dense_index = sparse_index = None
            if explain and request.only is None:
                dense_index = len(batch)
                batch.append(m.QueryRequest(query=dense_q, using=DENSE, filter=flt, limit=side_limit, with_payload=False))
                sparse_index = len(batch)
                batch.append(m.QueryRequest(query=sparse_q, using=SPARSE, filter=flt, limit=side_limit, with_payload=False))
            layout.append((main_index, dense_index, sparse_index, request.limit))
        return batch, layout

    def scroll_nodes(self, *, filters: FilterSpec = (), level: Optional[int] = None, with_text: bool = True) -> List[TreeNode]:
        m = self._m
        must = self._conditions(filters)
        if level is not None:
            must.append(m.FieldCondition(key="level", match=m.MatchValue(value=level)))
        must.append(m.FieldCondition(key="level", range=m.Range(gte=0)))
        nodes: List[TreeNode] = []
        offset = None
        while True:
            self._count()
            with self._engine_lock:
                points, offset = self.client.scroll(self.collection, scroll_filter=m.Filter(must=must), limit=1024,
                                                    offset=offset, with_payload=True, with_vectors=False)
            nodes.extend(TreeNode.from_payload(p.id, p.payload) for p in points)
            if offset is None:
                return nodes

    def count(self) -> int:
        m = self._m
        self._count()
        with self._engine_lock:
            return self.client.count(self.collection, count_filter=m.Filter(
                must=[m.FieldCondition(key="level", range=m.Range(gte=0))]), exact=True).count

    def close(self) -> None:
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


def _nodes(points: Iterable[Any]) -> List[TreeNode]:
    # The bookkeeping point has no doc_id: it is never a node.
    return [TreeNode.from_payload(p.id, p.payload) for p in points if p.payload and "doc_id" in p.payload]


def _parse_batch(responses: Sequence[Any], layout: Sequence[Tuple[int, Optional[int], Optional[int], int]],
                 light: bool = False) -> List[List[RankedHit]]:
    make_node = light_node if light else TreeNode.from_payload
    results: List[List[RankedHit]] = []
    for main_index, dense_index, sparse_index, limit in layout:
        dense_ranks = _ranks(responses[dense_index].points) if dense_index is not None else {}
        sparse_ranks = _ranks(responses[sparse_index].points) if sparse_index is not None else {}
        hits = []
        for point in responses[main_index].points:
            if not point.payload or "doc_id" not in point.payload:
                continue  # the bookkeeping point is never a node
            pid = str(point.id)
            hits.append(RankedHit(
                node=make_node(pid, point.payload),
                score=float(point.score),
                dense_rank=dense_ranks.get(pid),
                sparse_rank=sparse_ranks.get(pid),
            ))
        results.append(_stable_order(hits)[:limit])  # over-fetched by fetch_limit: cut here, ties by id
    return results


def _ranks(points: Iterable[Any]) -> Dict[str, int]:
    return {str(p.id): rank for rank, p in enumerate(points)}


def _stable_order(hits: List[RankedHit]) -> List[RankedHit]:
    """Order by score, ties broken by node id, so both engines agree on tied candidates."""
    # By id, then a stable sort by score (reverse=True keeps equal scores in id order): the same
    # order as the key (-score, id), with C-level keys instead of a Python lambda per hit.
    ordered = sorted(hits, key=_NODE_ID)
    ordered.sort(key=_HIT_SCORE, reverse=True)
    return ordered


_NODE_ID = operator.attrgetter("node.id")
_HIT_SCORE = operator.attrgetter("score")
