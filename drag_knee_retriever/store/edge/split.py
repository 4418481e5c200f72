"""When a filtered BM25 ranking is sent as one request per group of documents (Edge only).

The focus step's global list ranks the leaves of the ~50 best-ranked documents
(``search/_global_list.py``: a ``doc_id`` match on many values). Its BM25 side is a sparse
search filtered by that match. Above the shard's ``full_scan_threshold`` (1,000 admitted points,
``engine.SPARSE_FULL_SCAN``) Edge walks the inverted index of the *whole* collection and checks the
filter per posting; below it, it scores the admitted points one by one. So in a large collection
the one request walks every point's postings to keep a few thousand, and the same ranking sent as
one request per group of documents admitting fewer than 1,000 points each, merged here, costs a
fraction of it (``benchmarks/scale_split.py``); in a small one the walk is cheap, and every group
is a request of its own, so the split is slower.

Hence the rule (:meth:`SplitRule.groups`): split only when the filter admits few points relative
to the collection (fewer than ``share`` of it; 1/100 by default) and at least ``min_points``
(1,000: below that one request is already scored point by point). So a collection of fewer than
``min_points / share`` = 100,000 points is never split (:meth:`SplitRule.may_pay`, checked before
any count is read), and no test index is.

"Admitted" counts every node of the filtered documents, not only their leaves: the engine picks
its path by the upper bound of its estimate of the filter's points, which for ``doc_id`` in a
group and ``is_leaf`` is the ``doc_id`` match alone: groups of fewer than 1,000 leaves but more
nodes each walked the inverted index, slower than the one request.

The split returns the same ranking as the one request because the engine's side lists are ordered
by score, then point id, after over-fetching by the tie margin (``base.stable_order``), for one
request and for the merged groups alike: the best ``limit`` of the union of the groups' best
``limit + margin`` are the best ``limit`` of the whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple


@dataclass(frozen=True)
class SplitRule:
    """When and how to split a filtered BM25 ranking by documents (see the module docstring).

    ``share``: split only if the admitted points are fewer than this share of the collection's
    points. ``min_points``: ... and at least this many. ``group_points``: a group admits fewer
    points than this (the shard's ``full_scan_threshold``, so that the engine scores each group's
    points one by one); a document admitting as many alone is a group of its own.
    """

    share: float = 0.01
    min_points: int = 1000
    group_points: int = 1000

    def may_pay(self, collection_points: int) -> bool:
        """Whether a collection this large can ever be split (no count is read otherwise)."""
        return collection_points * self.share > self.min_points

    def groups(self, counts: Sequence[Tuple[str, int]], collection_points: int) -> Optional[List[List[str]]]:
        """The documents in groups (in their given order) admitting < ``group_points`` each, or
        None: send one request. ``counts``: each document and the points the filter admits of it."""
        admitted = sum(n for _, n in counts)
        if admitted < self.min_points or admitted >= collection_points * self.share:
            return None
        groups: List[List[str]] = []
        current: List[str] = []
        size = 0
        for doc, n in counts:
            if current and size + n >= self.group_points:
                groups.append(current)
                current, size = [], 0
            current.append(doc)
            size += n
        if current:
            groups.append(current)
        return groups if len(groups) > 1 else None
