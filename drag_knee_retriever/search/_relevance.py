"""The one public score scale: every search method's results scored in [0, 1], higher is better,
never rising along the ranking.

The methods rank by values that mean different things: RRF sums (``fixed``, ``branch``, flat
hybrid: ranks only, the top is ~1.0 whatever the query), z-score sums (the default focus: a
magnitude relative to the query's own pool). Neither can be compared across queries, so neither
can carry a threshold. What every method can give is one absolute quantity: the cosine similarity
between the query's dense vector and the returned node's own dense vector (what Qdrant returns for
a cosine collection), clipped at 0. For a given model it is comparable across queries; with the
default MiniLM a cosine of 0.5 or more is a close paraphrase, below 0.2 is unrelated.

But the ranking is the fused one (dense and BM25), so the cosines of the returned results are not
in rank order: ``[0.477, 0.522, 0.573]`` is usual. Reported as they are, a knee over them raises
(not best first) and ``score_threshold=0.5`` drops the top result while keeping ranks 2 and 3. So
the public score (``ScoredNode.score``, the adapters' ``drag_score``, LangChain's and LlamaIndex's
scores) is the cosines made monotone along the ranking by isotonic regression
(:func:`monotone_scores`): the non-increasing sequence closest to them (least squares), where a
run of results whose cosines disagree with their order shares the run's mean cosine. So:

- scores never rise along the method's order (``ScoredNode.rank``; the list order, unless
  ``order="document"``), and stay in [0, 1];
- a threshold keeps a prefix of the ranking, and the knee of another library runs on them;
- a result whose cosine agrees with its rank keeps its cosine; the raw cosine of every result
  stays available: ``ScoredNode.cosine``, the adapters' ``drag_cosine``, the trace's results.

The ranking itself is untouched: each method orders and cuts on its own raw values (kept as
``ScoredNode.raw_score``, in the trace and in the adapters' ``drag_raw_score``).

The cosines come from the ranking itself where it read them (the focus step's ``with_scores``;
a region returned whole because most of its leaves won scores as its best leaf, as its raw score
does), else from one dense-only ranking restricted to the results (one more round trip, a handful
of ids: ``fixed``, ``branch``, flat search, the ``"rrf"`` focus).
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from drag_knee_retriever.store import RankRequest

__all__ = ["monotone_scores", "relevance", "relevance_request", "relevance_scores"]


def relevance(cosine: float) -> float:
    """A node's dense cosine with the query, clipped to [0, 1] (NaN: 0): what :func:`monotone_scores`
    makes the public score of."""
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
    """Each hit's cosine in [0, 1] (:func:`relevance`): its own ``dense_score`` if the ranking read one, else the cosine
    from ``answered`` (the hits of :func:`relevance_request`); a node not found there scores 0."""
    cosines: Dict[str, float] = {h.node.id: float(h.score) for h in answered}
    out = []
    for hit in hits:
        cos = getattr(hit, "dense_score", None)
        if cos is None:
            cos = cosines.get(hit.node.id, 0.0)
        out.append(relevance(cos))
    return out


def monotone_scores(values: Sequence[float]) -> List[float]:
    """The non-increasing sequence closest to ``values`` in least squares (isotonic regression by
    pooling adjacent violators): a run of values that rises is replaced by its mean. Values in
    [0, 1] stay in [0, 1]; a sequence already non-increasing comes back as it is. O(n)."""
    blocks: List[List[float]] = []  # [sum, count] of each pooled run, best first
    for value in values:
        blocks.append([float(value), 1.0])
        # A later run averaging above the one before it violates the order: pool them.
        while len(blocks) > 1 and blocks[-1][0] / blocks[-1][1] > blocks[-2][0] / blocks[-2][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    out: List[float] = []
    for total, count in blocks:
        mean = min(1.0, max(0.0, total / count))
        out.extend([mean] * int(count))
    # A pooled mean can differ from its neighbour by a rounding error: never let it rise.
    for i in range(1, len(out)):
        if out[i] > out[i - 1]:
            out[i] = out[i - 1]
    return out
