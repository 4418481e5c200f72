"""Flat ranking by page: leaves ranked as usual, passages of one page grouped into that page.

With ``BuildConfig(passage_words=...)`` a long page is a page node over its passage leaves. A flat
top-k over leaves then returns passages; ``flat_search(unit="page")`` returns the top ``k`` distinct
*pages* instead, each scored by its best passage (what LangChain's ParentDocumentRetriever does with
small chunks and their parents, and "MaxP" in the passage-ranking literature): the ranking reads
passages, the reader gets whole pages. Leaves that are not passages (a page kept whole, a
paragraph of a text document) are their own group, so on an index without passages this is the
plain leaf ranking.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, Generator, List

from drag_knee_retriever.model._nodes import QueryVectors
from drag_knee_retriever.search._ops import Rank, Retrieve
from drag_knee_retriever.store.base import RankedHit, RankRequest

# The leaf ranking is asked for k leaves first, then four times more until k pages are found or
# the ranking runs out; the cap bounds one search's cost on a store of very long pages. Starting
# at k keeps an index without passages exactly on the leaf ranking: RRF fuses each side's top
# ``limit`` hits, so a larger first request would reorder it slightly.
_GROWTH = 4
_MAX_LEAVES = 4096


def page_key(hit: RankedHit) -> str:
    """The page a leaf belongs to: its page node for a passage, else the leaf itself."""
    node = hit.node
    return node.parent_id if node.span.first_part is not None and node.parent_id else node.id


def group_by_page(hits: List[RankedHit]) -> Dict[str, RankedHit]:
    """First (best) hit per page, in rank order."""
    best: Dict[str, RankedHit] = {}
    for hit in hits:
        best.setdefault(page_key(hit), hit)
    return best


def page_steps(request: RankRequest, query_vectors: QueryVectors, *, k: int, rrf_k: int) -> Generator[Any, Any, List[RankedHit]]:
    """The top ``k`` pages for ``request`` (a leaves-only ranking), each carrying its best leaf's
    scores: a generator of :mod:`~drag_knee_retriever.search._ops` operations (run by a driver of
    :mod:`~drag_knee_retriever.search._drivers`)."""
    limit = k
    while True:
        hits = (yield Rank([replace(request, limit=limit)], query_vectors, rrf_k, False, False))[0]
        best = group_by_page(hits)
        if len(best) >= k or len(hits) < limit or limit >= _MAX_LEAVES:
            break
        limit = min(limit * _GROWTH, max(_MAX_LEAVES, k))
    chosen = list(best.items())[:k]
    pages = {n.id: n for n in (yield Retrieve([key for key, hit in chosen if key != hit.node.id]))}
    out: List[RankedHit] = []
    for key, hit in chosen:
        node = hit.node if key == hit.node.id else pages.get(key)
        if node is None or node.doc_hash != hit.node.doc_hash:
            continue  # the document was replaced between the ranking and this read
        out.append(replace(hit, node=node))
    return out
