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
from typing import Any, Dict, Generator, List, Sequence

from drag_knee_retriever.model._nodes import QueryVectors
from drag_knee_retriever.search._ops import Rank, Retrieve
from drag_knee_retriever.store.base import RankedHit, RankRequest
from drag_knee_retriever.store.filters import any_of

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


# -- A word budget spent on the best documents' best pages (issue 41) -------------------------------
#
# The budget's default order (budget_order, at the end) goes from the focus cut's leaves down the
# global leaf ranking, which in a store of many similar documents (a folder of filings) spends most
# of the words on other documents' pages. Here the budget reads the documents the cut chose first:
# their leaves ranked among themselves (one more ranking, in one round trip), and with
# ``budget_order="pages"`` grouped into pages, a page scored by all its passages (the sum of their
# reciprocal ranks: a page whose several passages match beats one lucky passage), its passages
# kept together so that the fill returns the page whole.

#: The reciprocal-rank constant of a page's summed evidence (the RRF literature's 60: flat enough
#: that a page's second and third passages count almost as much as its first).
_PAGE_RRF_K = 60


def budget_documents(ranked: Sequence[RankedHit], keep: int, limit: int) -> List[str]:
    """The documents a budget reads first: those of the focus cut's leaves (the best leaf's if the
    cut kept none), in rank order, at most ``limit``."""
    docs: List[str] = []
    for hit in ranked[: max(keep, 1)]:
        if hit.node.doc_id not in docs:
            docs.append(hit.node.doc_id)
            if len(docs) >= limit:
                break
    return docs


def _page_of(hit: RankedHit) -> Any:
    """The page a ranked leaf lies on, read from its span's pages (a light node, as the walk ranks
    them, carries no passage numbers): ``(document, page)``, or the leaf's own id off a paged document."""
    span = hit.node.span
    if span.first_page is not None and span.first_page == span.last_page:
        return (hit.node.doc_id, span.first_page)
    return hit.node.id


def page_order(hits: Sequence[RankedHit], rrf_k: int = _PAGE_RRF_K, *, spread: bool = False) -> List[RankedHit]:
    """``hits`` (one ranking of leaves, best first) regrouped by page: pages by the sum of their
    leaves' reciprocal ranks, best first, each page's leaves together in their rank order.
    ``spread``: each page's best leaf only, in that page order, then the other leaves as ranked
    (as many pages as the words allow, each by its best passage)."""
    score: Dict[Any, float] = {}
    members: Dict[Any, List[RankedHit]] = {}
    for rank, hit in enumerate(hits):
        key = _page_of(hit)
        score[key] = score.get(key, 0.0) + 1.0 / (rrf_k + rank)
        members.setdefault(key, []).append(hit)
    order = sorted(score, key=lambda key: -score[key])  # stable: ties keep their first leaf's rank
    if spread:
        heads = [members[key][0] for key in order]
        taken = {id(h) for h in heads}
        return heads + [h for h in hits if id(h) not in taken]
    return [hit for key in order for hit in members[key]]


def budget_page_steps(ranked: Sequence[RankedHit], keep: int, config: Any, depth: int,
                      filters: Any) -> Generator[List[RankRequest], Any, List[RankedHit]]:
    """The budget's fill order with ``config.focus.budget_order`` (``config`` a :class:`~.config.SearchConfig`)
    other than ``"global"``, at most ``focus.budget_docs`` documents: the cut's
    ``keep`` leaves, then the leaves of the cut's documents ranked among themselves (``depth`` of
    them; by page with ``"pages"``), then the rest of ``ranked`` (the default order). Yields one list
    of requests (a round trip), receives their hits; each leaf keeps its focus score where
    ``ranked`` has it (else the lowest)."""
    mode, docs = config.focus.budget_order, config.focus.budget_docs
    # The leaves' weights, as the focus ranks them (traversal.level_weights at max_depth; traversal
    # imports this module).
    schedule = config.fusion.weights
    weights = schedule[min(config.max_depth, len(schedule) - 1)] if schedule else (1.0, 1.0)
    chosen = budget_documents(ranked, keep, docs)
    if not chosen or not ranked:
        return list(ranked)
    answer = (yield [RankRequest(limit=depth, weights=weights, leaves_only=True,
                                 filters=tuple(filters) + (any_of("doc_id", chosen),))])[0]
    inside = page_order(answer, spread=mode == "spread") if mode in ("pages", "spread") else list(answer)
    scored = {h.node.id: h for h in ranked}
    lowest = min(h.score for h in ranked)
    order = dict.fromkeys([h.node.id for h in ranked[:keep]] + [h.node.id for h in inside]
                          + [h.node.id for h in ranked[keep:]])
    others = {h.node.id: h for h in inside}
    return [scored[i] if i in scored else replace(others[i], score=lowest) for i in order]


def budget_order(pool: Any, keep: int) -> List[RankedHit]:
    """The order a budget is filled in: the ``keep`` leaves the focus cut keeps, then the global
    ranking and its deeper part, then the rest of the pool (the focus step's ``traversal.FocusPool``);
    each leaf with its pool score (a leaf only the deeper ranking reached: the pool's lowest)."""
    scored = {h.node.id: h for h in pool.ranked}
    lowest = min((h.score for h in pool.ranked), default=0.0)
    order = dict.fromkeys([h.node.id for h in pool.ranked[:keep]] + [h.node.id for h in pool.global_hits]
                          + [h.node.id for h in pool.deeper] + [h.node.id for h in pool.ranked[keep:]])
    others = {h.node.id: h for h in pool.deeper}
    return [scored[i] if i in scored else replace(others[i], score=lowest) for i in order]
