"""The Edge store's rankings, in three steps: plan, execute, read.

- **plan** (:meth:`EdgeRanking._plan`): each :class:`RankRequest` becomes the engine requests of one
  batch: a fused request (the engine's RRF), or its two side rankings fused here (explain or
  with_scores in a light ranking), a BM25 side split per group of documents (``split.py``), and
  where its nodes come from (a map of the walk's fields, or payloads the engine returns);
- **execute** (:meth:`EdgeRanking._execute`): the batch in one engine call per shard (the roots'
  rankings on the roots' shard), a split side's groups merged;
- **read** (:meth:`EdgeRanking._read`): each side ranking ordered by score then id, the fusion done
  here where planned, the walk's payload of kept hits no side brought read in one more call, and
  each request's hits built, cut at its limit (ties by id) and scored.

The package docstring says why each choice was made and what it measured. A mixin of
:class:`~.engine.EdgeStore`.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from drag_knee_retriever.model._nodes import TreeNode
from drag_knee_retriever.model._point_schema import DENSE, SPARSE, full_node, is_node, light_node
from drag_knee_retriever.store import filters as F
from drag_knee_retriever.store.base import (PAIR_ID, TIE_MARGIN, check_rrf_k, QueryVectors, RankedHit, RankRequest, fetch_limit, roots_ranking,
                    score_limit, side_limit, side_order, side_scores, stable_order)
from drag_knee_retriever.store.edge.calls import engine_errors
from drag_knee_retriever.store.edge.fast import fuse_rrf, hits_from_map, point_ids
from drag_knee_retriever.store.edge.node_map import NodeCache

#: The class these methods are mixed into (EdgeStore), Any to a type checker: mypy
#: cannot check a mixin against its host class.
_Host = Any

log = logging.getLogger("drag_knee_retriever.store.edge.engine")

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


class _Plan(NamedTuple):
    """How one ranking request went into a batch: its engine requests' positions (None: not sent)
    and the map its nodes come from (None: from the payloads the engine returns)."""

    request: RankRequest
    main_index: Optional[int]
    dense_index: Optional[int]
    sparse_index: Optional[int]
    mapped_by: Optional[NodeCache]


@dataclass
class _Batch:
    """One round trip as planned: the engine requests, and how to read their answers."""

    #: The node map when complete and the ranking light (every hit's node from it), else None.
    node_map: Optional[NodeCache]
    make_node: Callable[[str, Any], TreeNode]
    requests: List[Any] = field(default_factory=list)
    targets: List[bool] = field(default_factory=list)  # per engine request: True when the roots' shard answers it
    plans: List[_Plan] = field(default_factory=list)
    carried: Dict[int, bool] = field(default_factory=dict)  # engine request -> whether it brings the walk's fields
    reads: Dict[int, int] = field(default_factory=dict)  # side ranking's engine request -> its length once ordered
    merged: Dict[int, int] = field(default_factory=dict)  # a split BM25 side's first request -> its groups' count


class EdgeRanking:
    """``rank`` and what it needs (a mixin of ``EdgeStore``)."""

    #: The last query's engine objects (see _query): (query, dense, sparse, frequencies' version).
    _last_query: Optional[Tuple[QueryVectors, Any, Any, int]]

    def rank(self: "_Host", requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool,
             light: bool = False) -> List[List[RankedHit]]:
        if not requests:
            return []
        check_rrf_k(rrf_k)
        batch = self._plan(requests, query, rrf_k=rrf_k, explain=explain, light=light)
        return self._read(batch, self._execute(batch), rrf_k=rrf_k, explain=explain)

    # -- plan --------------------------------------------------------------------------------

    def _plan(self: "_Host", requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool,
              light: bool) -> _Batch:
        """The engine requests of one round trip for ``requests`` (no engine call, but the facet a
        split BM25 side may need once, see :meth:`_sparse_groups`)."""
        qe = self._qe
        dense_q, sparse_q = self._query(query)
        exact = self._exact
        # A light ranking takes its nodes from the node map when that is complete (no payload at
        # all), else asks for the walk's fields only (Edge then skips text, keywords, metadata).
        node_map = self._node_map if light and self._node_map.complete else None
        # Without it, a roots ranking the roots' shard answers takes its nodes from the roots map.
        roots_map = (self._roots_map if light and node_map is None and self._roots_map.complete
                     and not self._roots_deferred else None)
        out = _Batch(node_map, light_node if light else full_node)
        batch, carried, reads, merged = out.requests, out.carried, out.reads, out.merged
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
            out.targets.extend([on_roots] * (len(batch) - len(out.targets)))
            out.plans.append(_Plan(request, main_index, dense_index, sparse_index, mapped_by))
        return out

    def _query(self: "_Host", query: QueryVectors) -> Tuple[Any, Any]:
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

    def _sparse_groups(self: "_Host", request: RankRequest) -> Optional[List[RankRequest]]:
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

    def _doc_node_counts(self: "_Host", doc_ids: Sequence[str]) -> Dict[str, int]:
        """How many nodes each document holds, from a cache: filled for every document by the first
        call (one facet over the ``doc_id`` index, ~8 ms at 1M nodes; ``exact=True`` cost ~350 ms),
        then one exact facet for the documents written since (a write forgets its documents'
        counts). A count that lags a concurrent write only makes a split less even, never wrong."""
        qe = self._qe
        cache = self._node_counts
        if not self._node_counts_filled:
            if self._roots is not None and not self._roots_deferred:
                self._count()
                with engine_errors("count documents"):
                    documents = int(self._roots.info().points_count)
            else:
                documents = self.count_roots()
            self._count()
            with engine_errors("count the nodes of documents"):
                response = self.shard.facet(qe.FacetRequest(key="doc_id", limit=max(1, documents), exact=False))
            cache.update((str(hit.value), int(hit.count)) for hit in response.hits)
            self._node_counts_filled = True
        missing = [d for d in doc_ids if d not in cache]
        if missing:
            self._count()
            with engine_errors("count the nodes of documents"):
                response = self.shard.facet(qe.FacetRequest(key="doc_id", limit=len(missing), exact=True, filter=qe.Filter(
                    must=[qe.FieldCondition(key="doc_id", match=qe.MatchAny(list(missing)))])))
            found = {str(hit.value): int(hit.count) for hit in response.hits}
            for d in missing:
                cache[d] = found.get(d, 0)
        return {d: cache.get(d, 0) for d in doc_ids}

    def _forget_node_counts(self: "_Host", doc_ids: Any) -> None:
        for d in doc_ids:
            self._node_counts.pop(d, None)

    # -- execute -----------------------------------------------------------------------------

    def _execute(self: "_Host", batch: _Batch) -> List[Any]:
        """The planned batch's answers, in its order (a split side's groups merged at its first position)."""
        responses = self._query_batches(batch.requests, batch.targets)
        for position, parts in batch.merged.items():  # a split side: its groups' points, ordered in _read
            responses[position] = [p for part in responses[position : position + parts] for p in part]
        return responses

    def _query_batches(self: "_Host", batch: Sequence[Any], targets: Sequence[bool]) -> List[Any]:
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
            with engine_errors(f"rank {len(positions)} {'root' if on_roots else 'candidate'} sets"):
                answers = shard.query_batch(qe.QueryBatchRequest([batch[i] for i in positions]))
            for i, answer in zip(positions, answers):
                responses[i] = answer
        return responses

    # -- read --------------------------------------------------------------------------------

    def _read(self: "_Host", batch: _Batch, responses: List[Any], *, rrf_k: int,
              explain: bool) -> List[List[RankedHit]]:
        """Each planned request's hits from the batch's answers (see the module docstring)."""
        side_ids, side_pairs, payloads_of = self._read_sides(batch, responses)
        fused = self._fuse_here(batch, side_ids, payloads_of, rrf_k)
        results: List[List[RankedHit]] = []
        for number, plan in enumerate(batch.plans):
            request, main_index, dense_index, sparse_index, mapped_by = plan
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
            make_node = batch.make_node
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

    @staticmethod
    def _read_sides(batch: _Batch, responses: List[Any]) -> Tuple[Dict[int, List[str]],
                                                                   Dict[int, List[Tuple[str, float]]], Dict[str, Any]]:
        """Each side ranking's ids and scores, read once and ordered by score, then id; and the
        payloads the carrying sides brought, by id."""
        side_ids: Dict[int, List[str]] = {}
        side_pairs: Dict[int, List[Tuple[str, float]]] = {}
        payloads_of: Dict[str, Any] = {}
        for position, carries in batch.carried.items():
            points, scores = _side_prefix(responses[position], batch.reads[position])
            if carries:
                ids = _str_ids(points)
                payloads_of.update(zip(ids, (p.payload for p in points)))
            else:
                ids = point_ids(points)
            side_pairs[position] = pairs = side_order(list(zip(ids, scores)), batch.reads[position])
            side_ids[position] = list(map(PAIR_ID, pairs))
        return side_ids, side_pairs, payloads_of

    def _fuse_here(self: "_Host", batch: _Batch, side_ids: Dict[int, List[str]], payloads_of: Dict[str, Any],
                   rrf_k: int) -> Dict[int, List[Tuple[str, float]]]:
        """The rankings fused here, each cut at its limit; without the node map, the fields of their
        kept hits that no side brought are read into ``payloads_of`` in one engine call for the batch."""
        plans = batch.plans
        fused: Dict[int, List[Tuple[str, float]]] = {}
        for number, (request, main_index, dense_index, sparse_index, _) in enumerate(plans):
            if main_index is None and dense_index is not None and sparse_index is not None:
                side = side_limit(request)
                fused[number] = fuse_rrf(side_ids[dense_index][:side], side_ids[sparse_index][:side], rrf_k,
                                         request.weights)[: request.limit]
        if batch.node_map is None and fused:
            missing = list(dict.fromkeys(pid for number, scored in fused.items() if plans[number].mapped_by is None
                                         for pid, _ in scored if pid not in payloads_of))
            if missing:  # an open ranking's kept hits (or a candidate set that explain ranks short)
                payloads_of.update(self._walk_payloads(missing))
        return fused

    def _walk_payloads(self: "_Host", point_ids: Sequence[str]) -> Dict[str, Any]:
        """The walk's payload fields of ranked points, by id (one engine call)."""
        self._count()
        with engine_errors("fetch ranked nodes"):
            records = self.shard.retrieve(list(point_ids), with_payload=self._walk_payload, with_vector=False)
        return {str(record.id): record.payload for record in records}

    def _fetch_light(self: "_Host", point_id: str) -> Optional[TreeNode]:
        """A ranked point the node map does not hold, read from the engine (None: not a node)."""
        log.debug("point %s not in the node map; reading its payload", point_id)
        self._count()
        with engine_errors("fetch a ranked node"):
            records = self.shard.retrieve([point_id], with_payload=self._walk_payload, with_vector=False)
        for record in records:
            if is_node(record.payload):
                return light_node(str(record.id), record.payload)
        return None
