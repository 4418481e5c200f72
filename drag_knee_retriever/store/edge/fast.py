"""The fast path of Edge rankings: point ids without payload, cached id sets, hits from the node map,
and RRF computed here bit for bit as the engine does (see the package docstring for measurements)."""

from __future__ import annotations

import functools
import operator
import uuid
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Set, Tuple

import numpy as np

from drag_knee_retriever.store.base import RankedHit, stable_order

if TYPE_CHECKING:
    from drag_knee_retriever.store.edge.node_map import NodeCache

_REPR_HEAD = 'ScoredPoint(id="'
_REPR_END = len(_REPR_HEAD) + 36


def point_ids(points: Sequence[Any]) -> List[str]:
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


def point_id_set(ids: Sequence[Any]) -> Set[Any]:
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


def hits_from_map(points: Sequence[Any], limit: int, node_map: "NodeCache") -> Optional[List[RankedHit]]:
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
    nodes = list(map(node_map.nodes.get, point_ids(points[:end])))
    if not all(nodes):
        return None
    hits = list(map(RankedHit, nodes, scores[:end]))
    if any(map(operator.eq, scores[: end - 1], scores[1:end])):
        hits = stable_order(hits)
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


def fuse_rrf(dense_ids: Sequence[str], sparse_ids: Sequence[str], k: int,
             weights: Tuple[float, float]) -> List[Tuple[str, float]]:
    """RRF of two side rankings, bit for bit as Edge's ``Fusion.Rrf`` computes it, best first.

    Why here: with explain on, the walk needs both side rankings anyway; fusing them in Python
    spares the engine a third request that would scan both sides again (measured: explain then
    costs ~1 ms less per knee search at 10k nodes). The engine sums a point's terms in float32,
    dense first: a float64 sum of two float32 values rounded once to float32 is that same number.
    Ties are ordered by id (as ``base.stable_order`` does), where the engine's order is arbitrary.
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
