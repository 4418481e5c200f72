"""Focus scores with magnitude: a leaf's z-scored dense cosine and BM25 score, plus its siblings'.

RRF scores depend on ranks only, so a knee over them sees the same 1/rank curve whether the best
leaf stands far above the rest or barely; the cut then cannot track how much evidence there is
(issue 14: cut size vs gold count, Spearman 0.08). Here each side's raw score (from the store's
``RankRequest.with_scores``) is z-scored over the focus candidates, the two are summed, and the
mean of that sum over the candidates that share the leaf's parent is added with a weight: the
parent's evidence read from its own leaves (a page whose passages all match lifts each of them),
with no extra round trip. Chosen by replaying rules over per-question dumps
(benchmarks/cut_sim.py); the figures are in benchmarks/RESULTS.md ("## cut: ...").

The other way the focus pool is scored, ``focus.scores="rrf"``, fuses its rankings by their ranks
alone: :func:`combine_rankings`.
"""

from __future__ import annotations

import math
from typing import Dict, List, Mapping, Optional, Sequence

from drag_knee_retriever.store.base import RankedHit


def _z(values: Sequence[float]) -> List[float]:
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / n)
    # No spread beyond float32 rounding (the engines score in float32: a constant embedding such as
    # a mock model gives cosines that differ only in the last bits): this side says nothing about
    # the candidates, and z-scoring its rounding noise would let the noise outvote the other side.
    if sd <= 1e-6 * max(1.0, abs(mean)):
        return [0.0] * n
    return [(v - mean) / sd for v in values]


def _filled(values: Sequence[Optional[float]], missing: float) -> List[float]:
    return [missing if v is None else float(v) for v in values]


def magnitude_ranking(hits: Sequence[RankedHit], sibling_weight: float,
                      document_scores: Optional[Mapping[str, float]] = None,
                      document_weight: float = 0.0, root_scores: Optional[Mapping[str, float]] = None,
                      root_weight: float = 0.0) -> List[RankedHit]:
    """``hits`` (each with ``dense_score`` / ``sparse_score``) re-scored and ordered best first.

    Score = z(dense) + z(BM25) + ``sibling_weight`` x the mean of that sum over the hits with the
    same ``parent_id`` (the hit itself included; a hit without a parent counts alone), plus
    ``document_weight`` x z(its document's score in ``document_scores``, 0 where absent): a leaf
    inherits its document's evidence (e.g. how strongly the query names the document,
    :mod:`~drag_knee_retriever.search._identity`); with every hit in one document that term is 0. Likewise
    ``root_weight`` x z(its document root's score in the walk's roots ranking, ``root_scores``; a
    document the ranking did not reach takes its lowest score). A missing
    side score (a global hit below that side's limit) takes the lowest score seen on that side.
    Ties by node id, as the stores order them. Duplicated nodes keep their first hit.
    """
    unique: Dict[str, RankedHit] = {}
    for hit in hits:
        unique.setdefault(hit.node.id, hit)
    pool = list(unique.values())
    if not pool:
        return []
    dense_raw = [h.dense_score for h in pool]
    sparse_raw = [h.sparse_score for h in pool]
    dense = _filled(dense_raw, min((v for v in dense_raw if v is not None), default=0.0))
    sparse = _filled(sparse_raw, min((v for v in sparse_raw if v is not None), default=0.0))
    own = [a + b for a, b in zip(_z(dense), _z(sparse))]
    if sibling_weight:
        totals: Dict[Optional[str], List[float]] = {}
        for hit, value in zip(pool, own):
            key = hit.node.parent_id
            if key is None:
                continue
            entry = totals.setdefault(key, [0.0, 0.0])
            entry[0] += value
            entry[1] += 1.0
        score = [value + sibling_weight * (totals[h.node.parent_id][0] / totals[h.node.parent_id][1]
                                           if h.node.parent_id is not None else value)
                 for h, value in zip(pool, own)]
    else:
        score = own
    if document_weight and document_scores:
        inherited = _z([float(document_scores.get(h.node.doc_id, 0.0)) for h in pool])
        score = [value + document_weight * extra for value, extra in zip(score, inherited)]
    if root_weight and root_scores:
        lowest = min(root_scores.values())
        inherited = _z([float(root_scores.get(h.node.doc_id, lowest)) for h in pool])
        score = [value + root_weight * extra for value, extra in zip(score, inherited)]
    scored = [RankedHit(h.node, s, h.dense_rank, h.sparse_rank, h.dense_score, h.sparse_score)
              for h, s in zip(pool, score)]
    scored.sort(key=lambda h: (-h.score, h.node.id))
    return scored


def combine_rankings(rankings: Sequence[Sequence[RankedHit]], rrf_k: int) -> List[RankedHit]:
    """Fuse ranked lists of the same kind of nodes: each node scores ``sum 1 / (rrf_k + rank)``
    over the lists it appears in (rank from 0, Qdrant's convention); ties by node id."""
    scores: Dict[str, float] = {}
    first: Dict[str, RankedHit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking):
            nid = hit.node.id
            scores[nid] = scores.get(nid, 0.0) + 1.0 / (rrf_k + rank)
            first.setdefault(nid, hit)
    order = sorted(scores, key=lambda nid: (-scores[nid], nid))
    return [RankedHit(node=first[n].node, score=scores[n], dense_rank=first[n].dense_rank,
                      sparse_rank=first[n].sparse_rank) for n in order]
