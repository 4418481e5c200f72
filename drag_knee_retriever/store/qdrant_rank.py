"""The qdrant-client store's rankings, in three steps: plan, execute, read.

- **plan** (:meth:`QdrantRanking._plan`): each :class:`RankRequest` becomes one ``QueryRequest``
  (the engine's RRF over two prefetches, or one side), and with explain or ``with_scores`` its two
  side rankings in the same batch;
- **execute** (:meth:`QdrantRanking._execute`): one ``query_batch_points`` per collection (the
  roots' rankings on the roots' copy), with the sync client or, on a server, the async one;
- **read** (:func:`read_batch`): each side ordered by score, then id, each request's hits built,
  ordered and cut at its limit (ties by id), ranked and scored.

A mixin of :class:`~drag_knee_retriever.store.qdrant.QdrantClientStore` (which alone imports
qdrant-client: the request classes come from its ``models``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from drag_knee_retriever.model._point_schema import DENSE, SPARSE, WALK_FIELDS, full_node, is_node, light_node
from drag_knee_retriever.store.base import (TIE_MARGIN, check_rrf_k, QueryVectors, RankedHit, RankRequest, fetch_limit, roots_ranking, score_limit,
                   side_limit, side_order, side_scores, stable_order)

#: The class these methods are mixed into (QdrantClientStore), Any to a type checker: mypy
#: cannot check a mixin against its host class.
_Host = Any

#: Where each request's answers sit in a batch: (main, dense side, sparse side, request, ranks within).
Layout = List[Tuple[int, Optional[int], Optional[int], RankRequest, int]]


class QdrantRanking:
    """``rank`` / ``arank`` of the qdrant-client store (a mixin of ``QdrantClientStore``)."""

    def rank(self: "_Host", requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int,
             explain: bool, light: bool = False) -> List[List[RankedHit]]:
        if not requests:
            return []
        check_rrf_k(rrf_k)
        batch, layout, targets = self._plan(requests, query, rrf_k=rrf_k, explain=explain, light=light)
        return read_batch(self._execute(batch, targets), layout, light)

    async def arank(self: "_Host", requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int,
                    explain: bool, light: bool = False) -> List[List[RankedHit]]:
        if self.async_client is None:
            return await super().arank(requests, query, rrf_k=rrf_k, explain=explain,  # type: ignore[misc]
                                       light=light)
        if not requests:
            return []
        check_rrf_k(rrf_k)
        batch, layout, targets = self._plan(requests, query, rrf_k=rrf_k, explain=explain, light=light)
        return read_batch(await self._aexecute(batch, targets), layout, light)

    # -- plan --------------------------------------------------------------------------------

    def _plan(self: "_Host", requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int,
              explain: bool, light: bool) -> Tuple[List[Any], Layout, List[bool]]:
        """The query_batch_points requests of one round trip, where each answer sits in it, and
        per request whether the roots' copy answers it."""
        m = self._m
        with_payload: Any = list(WALK_FIELDS) if light else True
        dense_q = list(query.dense)
        self._fresh_idf()
        terms, weights = self._idf.query(query.sparse_indices, query.sparse_values)
        sparse_q = m.SparseVector(indices=terms, values=weights)
        batch: List[Any] = []
        layout: Layout = []
        targets: List[bool] = []  # per query: True when the roots' copy answers it
        for request in requests:
            flt = self._filters.request_filter(request)
            side = side_limit(request)
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
                        m.Prefetch(query=dense_q, using=DENSE, filter=flt, limit=side),
                        m.Prefetch(query=sparse_q, using=SPARSE, filter=flt, limit=side),
                    ],
                    query=m.RrfQuery(rrf=m.Rrf(k=rrf_k, weights=list(request.weights))),
                    filter=flt, limit=limit, with_payload=with_payload,
                ))
            dense_index = sparse_index = None
            if (explain or request.with_scores) and request.only is None:
                # The side rankings (same round trip): ranks within `side`, scores of every hit;
                # over-fetched by the tie margin and ordered by score, then id (read_batch).
                read = _side_read(request)
                dense_index = len(batch)
                batch.append(m.QueryRequest(query=dense_q, using=DENSE, filter=flt, limit=read + TIE_MARGIN,
                                            with_payload=False))
                sparse_index = len(batch)
                batch.append(m.QueryRequest(query=sparse_q, using=SPARSE, filter=flt, limit=read + TIE_MARGIN,
                                            with_payload=False))
            # Ranks only with explain (a with_scores request reads the sides for their scores).
            layout.append((main_index, dense_index, sparse_index, request, side if explain else 0))
            targets.extend([roots_ranking(request)] * (len(batch) - len(targets)))
        return batch, layout, targets

    # -- execute -----------------------------------------------------------------------------

    def _by_collection(self: "_Host", targets: Sequence[bool]) -> List[Tuple[str, List[int]]]:
        """The batch's positions per collection: the roots' rankings on the roots' copy (one call
        per collection present)."""
        out = []
        for on_roots, name in ((True, self.roots_collection), (False, self.collection)):
            positions = [i for i, t in enumerate(targets) if t is on_roots]
            if positions:
                out.append((name, positions))
        return out

    def _execute(self: "_Host", batch: List[Any], targets: Sequence[bool]) -> List[Any]:
        """The batch's answers in its order: one request per collection, in turn."""
        responses: List[Any] = [None] * len(batch)
        for name, positions in self._by_collection(targets):
            self._count()
            with self._engine_lock:
                answers = self.client.query_batch_points(name, [batch[i] for i in positions])
            for i, answer in zip(positions, answers):
                responses[i] = answer
        return responses

    async def _aexecute(self: "_Host", batch: List[Any], targets: Sequence[bool]) -> List[Any]:
        """:meth:`_execute` with the async client: the collections' requests at once."""
        parts = self._by_collection(targets)
        self._count(len(parts))
        answers = await asyncio.gather(*(self.async_client.query_batch_points(name, [batch[i] for i in positions])
                                         for name, positions in parts))
        responses: List[Any] = [None] * len(batch)
        for (_, positions), part in zip(parts, answers):
            for i, answer in zip(positions, part):
                responses[i] = answer
        return responses


# -- read ------------------------------------------------------------------------------------

def read_batch(responses: Sequence[Any], layout: Sequence[Tuple[int, Optional[int], Optional[int], RankRequest, int]],
                 light: bool = False) -> List[List[RankedHit]]:
    """Each request's hits from the batch's answers (``layout``: where they sit, see :meth:`QdrantRanking._plan`)."""
    make_node = light_node if light else full_node
    results: List[List[RankedHit]] = []
    for main_index, dense_index, sparse_index, request, side in layout:
        limit = request.limit
        # Each side ordered by score, then id (the engine's order of ties is arbitrary), cut at what
        # it was read for; ranks count within the side limit only (a with_scores side may read further).
        dense = _side(responses[dense_index].points, request) if dense_index is not None else []
        sparse = _side(responses[sparse_index].points, request) if sparse_index is not None else []
        dense_ranks = _ranks(dense[:side])
        sparse_ranks = _ranks(sparse[:side])
        hits = []
        for point in responses[main_index].points:
            if not is_node(point.payload):
                continue  # the bookkeeping point is never a node
            pid = str(point.id)
            hits.append(RankedHit(
                node=make_node(pid, point.payload),
                score=float(point.score),
                dense_rank=dense_ranks.get(pid),
                sparse_rank=sparse_ranks.get(pid),
            ))
        hits = stable_order(hits)[:limit]  # over-fetched by fetch_limit: cut here, ties by id
        if request.with_scores and dense_index is not None and sparse_index is not None:
            hits = side_scores(hits, request, dict(dense), dict(sparse))
        results.append(hits)
    return results


def _side_read(request: RankRequest) -> int:
    """How many hits a side ranking keeps once ordered (its engine request asks for TIE_MARGIN more)."""
    return score_limit(request) if request.with_scores else side_limit(request)


def _side(points: Iterable[Any], request: RankRequest) -> List[Tuple[str, float]]:
    """A side ranking's ``(id, score)`` pairs, ordered by score, then id (base.side_order)."""
    return side_order([(str(p.id), float(p.score)) for p in points], _side_read(request))


def _ranks(pairs: Iterable[Tuple[str, float]]) -> Dict[str, int]:
    return {pid: rank for rank, (pid, _) in enumerate(pairs)}
