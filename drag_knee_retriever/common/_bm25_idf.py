"""Collection-wide BM25 IDF kept by the library, in exact arithmetic: same documents, same scores, bit for bit.

Why (issue 16, item 9): with ``Modifier.IDF`` the engine multiplies each query term by its IDF and
sums the products in float32, in an order that changes from one process to the next (Qdrant Edge
0.9: a minimal shard of 6,000 random sparse points, ingested the same way in two processes, scores
its top hit 14.562593 in one and 14.562592 in the other; the order is stable within a process).
One ulp is enough to swap two near-tied BM25 ranks, and RRF turns a swapped rank into a different
fused score: HotpotQA ingested twice gave different ``flat_search(k=20)`` lists for 25 of 100
questions and different scores for 48. Float addition is not associative, so the only cure that
does not depend on the engine's order is arithmetic with no rounding at all:

- document weights (BM25's term-frequency part, below ``k + 1 = 2.2``) are stored on a grid of
  ``1 / TF_SCALE`` (1/1024), with ``Modifier.NONE``: the engine applies no IDF of its own;
- the query's weights are the IDF of each term, ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (Qdrant's
  formula), computed here from document frequencies over the whole collection
  (:class:`DocumentFrequencies`, kept by the store as it writes and rebuilt when a folder is
  opened) and put on a grid of ``1 / IDF_SCALE`` (1/64);
- every product is then a multiple of 2**-16 below 2**6, and every sum of them below
  :data:`EXACT_BELOW` (256) is exact in float32 (24-bit mantissa) and float64: any summation order
  gives the same bits, on Qdrant Edge and in qdrant-client local mode alike.

The grids move a weight by at most 0.05% (tf) and 0.8% (an IDF of 2; 0.2% at 8): BM25's ranking is
kept, its ties are not broken at random.
"""

from __future__ import annotations

import math
import threading
from typing import Dict, Iterable, List, Sequence, Tuple

TF_SCALE = 1 << 10
IDF_SCALE = 1 << 6
#: Sparse scores below this are exact whatever the summation order (2**24 / (TF_SCALE * IDF_SCALE)).
EXACT_BELOW = float((1 << 24) // (TF_SCALE * IDF_SCALE))
#: Written into the collection's bookkeeping point: a collection built this way keeps this way.
SCHEME = "client-idf-v1"


def quantize_document(values: Sequence[float]) -> List[float]:
    """Document weights on the ``1 / TF_SCALE`` grid (a present term never rounds to 0)."""
    return [max(1, round(float(v) * TF_SCALE)) / TF_SCALE for v in values]


def idf(df: int, n: int) -> float:
    """Qdrant's BM25 IDF of a term found in ``df`` of ``n`` documents."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class DocumentFrequencies:
    """How many stored nodes hold each sparse term, and how many nodes there are (thread-safe).

    The store adds a node's term ids when it writes the node and removes them when the node is
    deleted or overwritten; ``version`` changes with every change (query weights cache on it).
    """

    def __init__(self) -> None:
        self._df: Dict[int, int] = {}
        self._n = 0
        self._lock = threading.Lock()
        self.version = 0

    @property
    def n(self) -> int:
        return self._n

    def add(self, term_lists: Iterable[Sequence[int]]) -> None:
        with self._lock:
            for terms in term_lists:
                self._n += 1
                for term in set(int(t) for t in terms):
                    self._df[term] = self._df.get(term, 0) + 1
            self.version += 1

    def remove(self, term_lists: Iterable[Sequence[int]]) -> None:
        with self._lock:
            for terms in term_lists:
                self._n = max(0, self._n - 1)
                for term in set(int(t) for t in terms):
                    left = self._df.get(term, 0) - 1
                    if left > 0:
                        self._df[term] = left
                    else:
                        self._df.pop(term, None)
            self.version += 1

    def clear(self) -> None:
        with self._lock:
            self._df.clear()
            self._n = 0
            self.version += 1

    def df(self, term: int) -> int:
        return self._df.get(int(term), 0)

    def query_weights(self, indices: Sequence[int], values: Sequence[float]) -> Tuple[List[int], List[float]]:
        """The query's terms in ascending order, each weighted by its IDF on the ``1 / IDF_SCALE`` grid.

        Terms no stored node holds are dropped (they match nothing); a term every node holds keeps
        the smallest weight of the grid, so a query never loses all its terms to rounding.
        """
        with self._lock:
            n = self._n
            weights: Dict[int, float] = {}
            for term, value in zip(indices, values):
                term = int(term)
                df = self._df.get(term, 0)
                if df == 0:
                    continue
                steps = max(1, round(float(value) * idf(df, n) * IDF_SCALE))
                weights[term] = weights.get(term, 0.0) + steps / IDF_SCALE
        ordered = sorted(weights)
        return ordered, [weights[t] for t in ordered]


__all__ = ["DocumentFrequencies", "EXACT_BELOW", "IDF_SCALE", "SCHEME", "TF_SCALE", "idf", "quantize_document"]


class ClientIdf:
    """The store side of the scheme: quantised writes, frequencies kept in step, IDF-weighted queries.

    An embedded store owns one and calls it around its engine calls; ``enabled`` is False for a
    collection built before the scheme (its engine keeps applying ``Modifier.IDF``: older indexes
    stay readable, without the bit-for-bit promise). ``stale`` marks frequencies that a failed
    write may have left out of step: the store rebuilds them from the engine before the next query.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.frequencies = DocumentFrequencies()
        self.stale = enabled  # nothing read yet: load from the engine on first use

    def document_values(self, values: Sequence[float]) -> List[float]:
        return quantize_document(values) if self.enabled else [float(v) for v in values]

    def rebuild(self, term_lists: Iterable[Sequence[int]]) -> None:
        self.frequencies.clear()
        self.frequencies.add(term_lists)
        self.stale = False

    def query(self, indices: Sequence[int], values: Sequence[float]) -> Tuple[List[int], List[float]]:
        if not self.enabled:
            return [int(i) for i in indices], [float(v) for v in values]
        terms, weights = self.frequencies.query_weights(indices, values)
        if not terms:  # nothing stored holds any query term: the sparse side matches nothing anyway
            return [int(i) for i in indices][:1], [1.0 / IDF_SCALE] if indices else []
        return terms, weights


__all__ += ["ClientIdf"]
