"""The one public score scale: every search method's results scored in [0, 1], higher is better.

The methods rank by values that mean different things: RRF sums (``fixed``, ``branch``, flat
hybrid: ranks only, the top is ~1.0 whatever the query), z-score sums (the default focus: a
magnitude relative to the query's own pool). Neither can be compared across queries, so neither
can carry a threshold. A result's public score is therefore one absolute quantity every method
can give: the cosine similarity between the query's dense vector and the returned node's own
dense vector (what Qdrant returns for a cosine collection, and what langchain-qdrant's dense
search reports), clipped at 0. For a given model it is comparable across queries; with the
default MiniLM a score of 0.5 or more is a close paraphrase, below 0.2 is unrelated.

The ranking itself is untouched: each method orders and cuts on its own raw values (kept as
``ScoredNode.raw_score``, in the trace and in the adapters' ``drag_raw_score``), and the public
score is computed at the end of a search. So a result the hybrid side ranked first for an exact
keyword may score below the one after it; ``min_score`` / ``score_threshold`` keep every result
whose own score reaches the threshold, whichever method found it.

The cosines come from the ranking itself where it read them (the focus step's ``with_scores``;
a region returned whole because most of its leaves won scores as its best leaf, as its raw score
does), else from one dense-only ranking restricted to the results (one more round trip, a handful
of ids: ``fixed``, ``branch``, flat search, the ``"rrf"`` focus).
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from drag_knee_retriever.store import RankRequest

__all__ = ["relevance", "relevance_request", "relevance_scores"]


def relevance(cosine: float) -> float:
    """The public score of a node whose dense cosine with the query is ``cosine``: in [0, 1]."""
    value = float(cosine)
    if value != value:  # NaN (a zero vector): no evidence
        return 0.0
    return min(1.0, max(0.0, value))


def relevance_request(hits: Sequence[Any]) -> "RankRequest | None":
    """The dense-only ranking that scores the hits the walk did not score, or None if all are."""
    missing = tuple(dict.fromkeys(h.node.id for h in hits if getattr(h, "dense_score", None) is None))
    if not missing:
        return None
    return RankRequest(limit=len(missing), candidate_ids=missing, only="dense")


def relevance_scores(hits: Sequence[Any], answered: Sequence[Any] = ()) -> List[float]:
    """Each hit's public score: its own ``dense_score`` if the ranking read one, else the cosine
    from ``answered`` (the hits of :func:`relevance_request`); a node not found there scores 0."""
    cosines: Dict[str, float] = {h.node.id: float(h.score) for h in answered}
    out = []
    for hit in hits:
        cos = getattr(hit, "dense_score", None)
        if cos is None:
            cos = cosines.get(hit.node.id, 0.0)
        out.append(relevance(cos))
    return out
