"""Evidence metrics per question, and their means. Pure Python: no index, no model.

A method's answer to a question is a ranked list of :class:`ContextHit`: the text a model would
read, described by the leaves it covers and how many tokens of each leaf it contains. A returned
leaf covers itself; a returned inner node covers every leaf of its span (its context is the full
text of those leaves); a chunk from another library covers the leaves its characters overlap.

Tokens are whitespace tokens (``len(text.split())``): model-independent and the same for every
method. The formulas, for one question with gold leaves G and hits h_1..h_n in rank order:

- ``covered`` C = the union of the leaves of all hits. A hit that returns only part of a leaf (a
  chunk from another library that cuts it) covers a *gold* leaf only if the part it returns holds
  that leaf's evidence range (the answer's characters, or the whole supporting sentence); a chunk
  that cuts the answer off does not cover it, and its gold tokens do not count.
- ``recall`` (evidence recall) = |G ∩ C| / |G|.
- ``leaf_precision`` = |G ∩ C| / |C| (0 when nothing is returned).
- ``f1`` = 2 · recall · leaf_precision / (recall + leaf_precision) (0 when both are 0).
- ``tokens`` (context tokens) = Σ over hits of the tokens each hit returns (a leaf returned twice
  is read twice, so it counts twice).
- ``gold_tokens`` = Σ over covered gold leaves g of the largest number of g's tokens any one hit
  returns (each gold leaf counted once).
- ``token_precision`` = gold_tokens / tokens (0 when nothing is returned).
- ``all_gold`` = 1 if every gold leaf is covered, else 0.
- ``mrr`` = 1 / r where r is the 1-based rank of the first hit covering a gold leaf (0 if none).
- ``results`` = n, the number of hits; ``latency_ms`` = the method's wall time for the question.
- ``right_document`` = 1 if some hit lies in a document that holds gold, else 0 (mean = the share
  of questions whose results reach the right document: routing, in a store of many documents).

Means are plain averages over questions (each question weighs the same).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Dict, FrozenSet, Iterable, Mapping, Optional, Sequence, Tuple

GoldLeaf = Tuple[str, int]

METRIC_NAMES: Tuple[str, ...] = (
    "recall",
    "leaf_precision",
    "token_precision",
    "f1",
    "all_gold",
    "mrr",
    "results",
    "tokens",
    "gold_tokens",
    "latency_ms",
    "right_document",
)

METRIC_FORMULAS: Dict[str, str] = {
    "recall": "|G ∩ C| / |G|: share of the gold leaves covered by the returned context (an inner node covers every leaf of its span; a chunk cutting a gold leaf covers it only if it holds the answer / supporting sentence)",
    "leaf_precision": "|G ∩ C| / |C|: share of the covered leaves that are gold (0 if nothing returned)",
    "token_precision": "gold tokens / context tokens (whitespace tokens; each covered gold leaf counted once; 0 if nothing returned)",
    "f1": "2·recall·leaf_precision / (recall + leaf_precision)",
    "all_gold": "1 if every gold leaf is covered, else 0 (mean = rate)",
    "mrr": "1 / rank of the first result covering a gold leaf (0 if none)",
    "results": "number of results returned",
    "tokens": "context tokens: whitespace tokens of all returned text (an inner node returns all its leaves)",
    "gold_tokens": "whitespace tokens of the covered gold leaves",
    "latency_ms": "wall time of the method's search call for the question (query already encoded)",
    "right_document": "1 if some result lies in a document holding gold, else 0 (mean = right-document rate)",
}


def count_tokens(text: str) -> int:
    """Whitespace tokens of a text: the token unit of every metric here."""
    return len(text.split())


@dataclass(frozen=True)
class ContextHit:
    """One returned result as the metrics see it.

    ``leaf_tokens`` maps each covered leaf ordinal of ``doc_id`` to the number of its tokens this
    hit returns (all of them for a leaf or an inner node of our trees; part of them for a chunk
    that cuts a leaf). ``node_id`` and ``level`` are kept for the raw report only.
    """

    doc_id: str
    leaf_tokens: Mapping[int, int]
    node_id: str = ""
    level: Optional[int] = None
    # For leaves this hit returns only in part: ordinal -> the unit-local [start, end) it returns.
    char_ranges: Mapping[int, Tuple[int, int]] = field(default_factory=dict)

    def covers(self, leaf: GoldLeaf, evidence: Optional[Tuple[int, int]]) -> bool:
        """Whether this hit covers ``leaf``: it returns the whole leaf, or a part holding ``evidence``
        (no evidence range given: any returned part counts)."""
        if leaf[0] != self.doc_id or leaf[1] not in self.leaf_tokens:
            return False
        part = self.char_ranges.get(leaf[1])
        if part is None or evidence is None:
            return True
        return part[0] <= evidence[0] and evidence[1] <= part[1]

    @property
    def tokens(self) -> int:
        """Tokens of context this hit adds."""
        return sum(self.leaf_tokens.values())

    @property
    def leaves(self) -> FrozenSet[GoldLeaf]:
        """The ``(doc_id, ordinal)`` leaves this hit covers."""
        return frozenset((self.doc_id, ordinal) for ordinal in self.leaf_tokens)

    @classmethod
    def from_span(
        cls,
        doc_id: str,
        first_leaf: int,
        last_leaf: int,
        leaf_token_counts: Sequence[int],
        *,
        node_id: str = "",
        level: Optional[int] = None,
    ) -> "ContextHit":
        """A hit that returns whole leaves ``first_leaf..last_leaf`` (inclusive) of a document."""
        if first_leaf < 0 or last_leaf < first_leaf or last_leaf >= len(leaf_token_counts):
            raise ValueError(
                f"span {first_leaf}..{last_leaf} is outside document {doc_id!r} with "
                f"{len(leaf_token_counts)} leaves; the index and the dataset disagree (rebuild the index)."
            )
        return cls(
            doc_id=doc_id,
            leaf_tokens={i: int(leaf_token_counts[i]) for i in range(first_leaf, last_leaf + 1)},
            node_id=node_id,
            level=level,
        )


@dataclass(frozen=True)
class QuestionMetrics:
    """The metrics of one question (see the module docstring for the formulas)."""

    recall: float
    leaf_precision: float
    token_precision: float
    f1: float
    all_gold: float
    mrr: float
    results: int
    tokens: int
    gold_tokens: int
    latency_ms: float
    right_document: float = 0.0

    def to_dict(self) -> Dict[str, float]:
        """Plain dict of the metric values."""
        return asdict(self)


def question_metrics(
    hits: Sequence[ContextHit],
    gold: Iterable[GoldLeaf],
    *,
    latency_ms: float = 0.0,
    answer_spans: Optional[Mapping[GoldLeaf, Tuple[int, int]]] = None,
) -> QuestionMetrics:
    """Score one question's hits against its gold leaves (``answer_spans``: the evidence range of
    each gold leaf, used only for hits that return part of a leaf)."""
    spans = answer_spans or {}
    gold_set = frozenset(gold)
    if not gold_set:
        raise ValueError("A question needs at least one gold leaf to be scored; drop questions without gold.")
    gold_docs = {doc for doc, _ in gold_set}
    covered: set = set()
    best_gold_tokens: Dict[GoldLeaf, int] = {}
    first_gold_rank: Optional[int] = None
    tokens = 0
    for rank, hit in enumerate(hits, start=1):
        tokens += hit.tokens
        hit_leaves = hit.leaves
        # A gold leaf returned only in part, without its evidence, is not covered by this hit.
        cut_gold = {g for g in hit_leaves & gold_set if not hit.covers(g, spans.get(g))}
        hit_leaves = hit_leaves - cut_gold
        covered |= hit_leaves
        found = hit_leaves & gold_set
        if found and first_gold_rank is None:
            first_gold_rank = rank
        for leaf in found:
            count = int(hit.leaf_tokens[leaf[1]])
            if count > best_gold_tokens.get(leaf, -1):
                best_gold_tokens[leaf] = count
    hit_gold = len(gold_set & covered)
    recall = hit_gold / len(gold_set)
    leaf_precision = hit_gold / len(covered) if covered else 0.0
    gold_tokens = sum(best_gold_tokens.values())
    token_precision = gold_tokens / tokens if tokens else 0.0
    f1 = 2 * recall * leaf_precision / (recall + leaf_precision) if recall + leaf_precision > 0 else 0.0
    return QuestionMetrics(
        recall=recall,
        leaf_precision=leaf_precision,
        token_precision=token_precision,
        f1=f1,
        all_gold=1.0 if hit_gold == len(gold_set) else 0.0,
        mrr=1.0 / first_gold_rank if first_gold_rank else 0.0,
        results=len(hits),
        tokens=tokens,
        gold_tokens=gold_tokens,
        latency_ms=float(latency_ms),
        right_document=1.0 if any(hit.doc_id in gold_docs for hit in hits) else 0.0,
    )


def mean_metrics(rows: Sequence[QuestionMetrics]) -> Dict[str, float]:
    """Average every metric over questions; an empty list gives NaN for each (no questions)."""
    if not rows:
        return {name: math.nan for name in METRIC_NAMES}
    return {name: sum(float(getattr(r, name)) for r in rows) / len(rows) for name in METRIC_NAMES}


def interpolate_curve(points: Sequence[Tuple[float, float]], x: float) -> Tuple[float, bool]:
    """Linear interpolation of y at ``x`` on a curve of ``(x, y)`` points (e.g. tokens, recall).

    The origin (0, 0) is added (returning nothing gives no evidence), points are sorted by x.
    Beyond the last point the curve is extended flat and the second value is ``True``
    (extrapolated): a flat extension favours whatever is compared against it, so report the flag.
    """
    curve = sorted({(0.0, 0.0), *((float(a), float(b)) for a, b in points)})
    if not math.isfinite(x):
        return math.nan, False
    if x <= curve[0][0]:
        return curve[0][1], False
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if x0 <= x <= x1:
            if x1 == x0:
                return max(y0, y1), False
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0), False
    return curve[-1][1], True
