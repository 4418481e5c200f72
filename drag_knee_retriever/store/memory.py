"""A small pure-Python reference engine: the :class:`NodeStore` contract in a few hundred lines.

For tests, in the spirit of httpx's ``MockTransport``: a real store (it ranks the vectors it is
given, honours every request field and filter, counts round trips) with no engine underneath, so a
unit test can run the index or the walk without Qdrant. It computes what the Qdrant engines do:

- dense: exact cosine, vectors normalised to float32 on write, the query on search, a float32 dot;
- BM25: the embedded stores' exact scheme (:mod:`~drag_knee_retriever.common._bm25_idf`): stored values
  on the ``1 / TF_SCALE`` grid, the query weighted by ``ln((N - df + 0.5) / (df + 0.5) + 1)`` over
  the live collection (``N`` the points holding a sparse vector, ``df`` those holding the term) on
  the ``1 / IDF_SCALE`` grid, terms no point holds dropped; a point sharing no term with the query
  is not on that side;
- fusion: RRF ``sum_i w_i-term(position_i)`` with ``1 / ((position + 1) / w + k - 1)`` (0 for
  ``w <= 0``) over each side's top :func:`~.base.side_limit` hits, as qdrant-client local mode;
- order: score, then node id (:func:`~.base.stable_order`), as the engines' hits are cut.

Where it can differ from the engines: scores agree to float32 precision (Edge sums in float32,
local mode and this engine in float64), and the engines order equal side scores arbitrarily
while this one orders them by id, so RRF positions inside a side tie may differ (the congruence
tests treat such "side ties" the same way for every pair of engines). Not for production: every
request scans every node in Python.
"""

from __future__ import annotations

import copy
import math
import threading
import uuid
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from drag_knee_retriever.common._bm25_idf import IDF_SCALE, quantize_document
from drag_knee_retriever.errors import ConfigError, StoreError
from drag_knee_retriever.model._ids import META_ID, META_IDS
from drag_knee_retriever.model._nodes import TreeNode
from drag_knee_retriever.model._point_schema import TEXT_FIELDS, collection_info, full_node, is_node, light_node, meta_vector, node_payload
from drag_knee_retriever.store import filters as F
from drag_knee_retriever.store.base import FilterSpec, NodeRecord, NodeStore, QueryVectors, RankedHit, RankRequest, side_limit
from drag_knee_retriever.store.base import check_rrf_k, score_limit, side_scores, stable_order
from drag_knee_retriever.store.integrity import recorded_meta
from drag_knee_retriever.store.journal import WriteJournal


def _canonical(point_id: Any) -> str:
    """A point id as the engines return it: a UUID in its canonical form (other ids unchanged)."""
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError:
        return str(point_id)


class _Point:
    __slots__ = ("payload", "dense", "sparse")

    def __init__(self, payload: Dict[str, Any], dense: np.ndarray, sparse: Dict[int, float]) -> None:
        self.payload = payload
        self.dense = dense
        self.sparse = sparse


class MemoryStore(NodeStore):
    """A node store held in a Python dict; rankings computed as the Qdrant engines compute them."""

    engine = "memory"

    def __init__(self, collection: str = "drag_knee") -> None:
        super().__init__()
        self.collection = collection
        self._points: Dict[str, _Point] = {}
        self._df: Dict[int, int] = {}  # points holding each BM25 term
        self._with_sparse = 0  # points holding a (non-empty) sparse vector
        self._open = False
        self._closed = False
        self._lock = threading.RLock()
        self.journal = WriteJournal(None)  # a failed replacement is replayed by the next write

    def describe(self) -> str:
        return "memory (pure-Python reference engine)"

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("This memory store is closed; make a new one.")
        if not self._open:
            raise StoreError(f"Collection {self.collection!r} does not exist yet; call open_collection() first.")

    # -- schema --------------------------------------------------------------------------------

    def _exists(self) -> bool:
        return self._open

    def _create(self, dense_size: int) -> None:
        if isinstance(dense_size, bool) or not isinstance(dense_size, int) or dense_size < 1:
            raise ConfigError(f"dense_size must be an integer >= 1, got {dense_size!r}.")
        self.dense_size = dense_size
        self._open = True

    def _put_meta(self, payload: Dict[str, Any], dense_size: int) -> None:
        with self._lock:
            for point_id in META_IDS:
                self._put(point_id, dict(payload), meta_vector(dense_size), (), ())

    def _meta_payloads(self) -> List[Optional[Dict[str, Any]]]:
        self._count()
        points = [self._points.get(i) if self._open else None for i in META_IDS]
        return [dict(p.payload) if p is not None else None for p in points]

    def collection_info(self) -> Dict[str, Any]:
        self._count()
        return collection_info(recorded_meta(self), engine=self.engine, collection=self.collection)

    # -- writes --------------------------------------------------------------------------------

    def _put(self, point_id: str, payload: Dict[str, Any], dense: Sequence[float],
             sparse_indices: Sequence[int], sparse_values: Sequence[float]) -> None:
        vector = np.asarray(dense, dtype=np.float32)
        if vector.shape != (self.dense_size,) or not np.all(np.isfinite(vector)):
            raise StoreError(f"point {point_id}: dense vector must hold {self.dense_size} finite numbers.")
        norm = np.linalg.norm(vector)
        vector = vector / (norm if norm != 0.0 else np.float32(1e-8))
        if len(sparse_indices) != len(sparse_values):
            raise StoreError(f"point {point_id}: sparse indices and values differ in length.")
        sparse = {int(i): v for i, v in zip(sparse_indices, quantize_document(sparse_values))}
        self._drop(point_id)
        self._points[point_id] = _Point(copy.deepcopy(payload), vector, sparse)
        if sparse:
            self._with_sparse += 1
            for term in sparse:
                self._df[term] = self._df.get(term, 0) + 1

    def _drop(self, point_id: str) -> None:
        old = self._points.pop(point_id, None)
        if old is not None and old.sparse:
            self._with_sparse -= 1
            for term in old.sparse:
                self._df[term] -= 1

    def upsert(self, records: Sequence[NodeRecord]) -> None:
        self._check_open()
        self._count()
        with self._lock:
            for r in records:
                self._put(_canonical(r.node.id), node_payload(r.node), r.dense, r.sparse_indices, r.sparse_values)

    def set_root_metadata(self, root_id: str, values: Mapping[str, Any]) -> None:
        self._check_open()
        self._count()
        with self._lock:
            point = self._points.get(_canonical(root_id))
            if point is not None and is_node(point.payload):
                point.payload.setdefault("metadata", {}).update(copy.deepcopy(dict(values)))

    def delete_nodes(self, doc_id: str, *, except_hash: Optional[str] = None) -> None:
        self._check_open()
        steps, excluded = F.delete_plan(doc_id, except_hash)
        with self._lock:
            for step in steps:  # the root first, as every engine (filters.delete_plan)
                self._count()
                for pid in [pid for pid, p in self._points.items()
                            if self._matches(pid, p, step) and not (excluded and self._matches(pid, p, excluded))]:
                    self._drop(pid)

    # -- conditions ----------------------------------------------------------------------------

    @staticmethod
    def _matches(point_id: str, point: _Point, conditions: Sequence[F.Condition]) -> bool:
        payload = point.payload
        if not is_node(payload):
            return False  # the bookkeeping point matches no node condition (it has no doc_id or level)
        node: Optional[TreeNode] = None
        for c in conditions:
            if c.kind == F.IDS:
                if point_id not in c.values:  # canonical ids (see _select)
                    return False
            elif c.kind == F.NODES:
                if payload.get("level", -1) < 0:
                    return False
            else:
                node = node or full_node(point_id, payload)
                if not F.node_matches(node, (c,)):
                    return False
        return True

    def _select(self, conditions: Sequence[F.Condition]) -> List[Tuple[str, _Point]]:
        conditions = [F.Condition(F.IDS, "", frozenset(map(_canonical, c.values))) if c.kind == F.IDS else c
                      for c in conditions]
        return [(pid, p) for pid, p in self._points.items() if self._matches(pid, p, conditions)]

    # -- reads ---------------------------------------------------------------------------------

    def retrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        if not ids:
            return []
        self._check_open()
        self._count()
        with self._lock:
            found = [(pid, self._points.get(pid)) for pid in dict.fromkeys(map(_canonical, ids))]
        return [full_node(pid, p.payload) for pid, p in found if p is not None and is_node(p.payload)]

    def _dense_side(self, pool: Sequence[Tuple[str, _Point]], query: np.ndarray) -> List[Tuple[str, float]]:
        scores = [(pid, float(np.dot(p.dense, query))) for pid, p in pool]
        return sorted(scores, key=lambda s: (-s[1], s[0]))

    def _sparse_side(self, pool: Sequence[Tuple[str, _Point]], weighted: Dict[int, float]) -> List[Tuple[str, float]]:
        scores = []
        for pid, p in pool:
            shared = [term for term in weighted if term in p.sparse]
            if shared:
                scores.append((pid, sum(weighted[t] * p.sparse[t] for t in shared)))
        return sorted(scores, key=lambda s: (-s[1], s[0]))

    def rank(self, requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool,
             light: bool = False) -> List[List[RankedHit]]:
        if not requests:
            return []
        check_rrf_k(rrf_k)
        self._check_open()
        self._count()
        dense_q = np.asarray(query.dense, dtype=np.float32)
        norm = np.linalg.norm(dense_q)
        dense_q = dense_q / (norm if norm != 0.0 else np.float32(1e-8))
        with self._lock:
            n = self._with_sparse
            weighted: Dict[int, float] = {}
            for i, v in zip(query.sparse_indices, query.sparse_values):
                df = self._df.get(int(i), 0)
                if df > 0:
                    steps = max(1, round(float(v) * math.log((n - df + 0.5) / (df + 0.5) + 1) * IDF_SCALE))
                    weighted[int(i)] = weighted.get(int(i), 0.0) + steps / IDF_SCALE
            results = []
            for request in requests:
                pool = self._select(F.request_conditions(request))
                results.append(self._rank_one(request, pool, dense_q, weighted, rrf_k, explain, light))
        return results

    def _rank_one(self, request: RankRequest, pool: Sequence[Tuple[str, _Point]], dense_q: np.ndarray,
                  weighted: Dict[int, float], rrf_k: int, explain: bool, light: bool) -> List[RankedHit]:
        payloads = dict(pool)
        build = light_node if light else full_node  # light_node reads the WALK_FIELDS only

        def make(pid: str) -> TreeNode:
            return build(pid, payloads[pid].payload)

        if request.only == "dense":
            return [RankedHit(make(pid), s) for pid, s in self._dense_side(pool, dense_q)[: request.limit]]
        if request.only == "sparse":
            return [RankedHit(make(pid), s) for pid, s in self._sparse_side(pool, weighted)[: request.limit]]
        side = side_limit(request)
        dense_all = self._dense_side(pool, dense_q)
        sparse_all = self._sparse_side(pool, weighted)
        dense, sparse = dense_all[:side], sparse_all[:side]
        fused: Dict[str, float] = {}
        for ranking, weight in ((dense, request.weights[0]), (sparse, request.weights[1])):
            for position, (pid, _) in enumerate(ranking):
                term = 0.0 if weight <= 0 else 1 / ((position + 1.0) / weight + rrf_k - 1.0)
                fused[pid] = fused.get(pid, 0.0) + term
        dense_ranks = {pid: i for i, (pid, _) in enumerate(dense)} if explain else {}
        sparse_ranks = {pid: i for i, (pid, _) in enumerate(sparse)} if explain else {}
        hits = [RankedHit(make(pid), score, dense_ranks.get(pid), sparse_ranks.get(pid)) for pid, score in fused.items()]
        hits = stable_order(hits)[: request.limit]
        if request.with_scores:
            read = score_limit(request)  # as the Qdrant engines read their side rankings
            hits = side_scores(hits, request, dict(dense_all[:read]), dict(sparse_all[:read]))
        return hits

    def scroll_nodes(self, *, filters: FilterSpec = (), level: Optional[int] = None, with_text: bool = True) -> List[TreeNode]:
        self._check_open()
        self._count()
        with self._lock:
            selected = sorted(self._select(F.scroll_conditions(filters, level)), key=lambda item: item[0])
        nodes = []
        for pid, p in selected:
            payload = p.payload if with_text else {k: v for k, v in p.payload.items() if k not in TEXT_FIELDS}
            nodes.append(full_node(pid, payload))
        return nodes

    def scroll_dense(self, *, filters: FilterSpec = ()) -> List[Tuple[TreeNode, Optional[Sequence[float]]]]:
        self._check_open()
        self._count()
        with self._lock:
            selected = sorted(self._select(F.scroll_conditions(filters, None)), key=lambda item: item[0])
        return [(full_node(pid, p.payload), p.dense.copy()) for pid, p in selected]

    def count(self) -> int:
        self._check_open()
        self._count()
        with self._lock:
            return len(self._select(F.count_conditions()))

    def close(self) -> None:
        self._closed = True
        self._points = {}
        self._df = {}
        self._with_sparse = 0
