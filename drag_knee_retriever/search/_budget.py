"""A budget for a search's results (``SearchConfig.max_tokens`` / ``max_words``): the best evidence that fits.

A reader with a context window thinks in tokens, not in results: "give me the best 1,500 tokens".
With a budget the knee methods do not stop at their focus cut: they take the leaves the cut keeps,
then go down the global hybrid ranking of the leaves (:func:`~drag_knee_retriever.search._page_ranking.budget_order`),
and fill the budget:

- a leaf that fits is taken; one that no longer fits is skipped, and a later, shorter one may
  still fit (first fit, in rank order);
- where the evidence clusters, the cluster comes back whole: when more than ``merge_ratio`` of a
  group's leaves are taken, the group replaces them (its whole span, in the place of its best
  leaf) if the rest of it fits. The groups are a leaf's parent (the page of a passage, the
  paragraphs' group) and the walk's regions (a section or page range the walk chose), innermost
  first, so passages become their page and pages their page range;
- nothing is returned twice: a leaf inside a group already taken costs nothing and is not listed
  again, and a group replaces the leaves it holds;
- when even the best leaf is longer than the whole budget, it comes back cut to its first
  ``budget`` units (the only case a returned text is not a whole node's).

The unit (:class:`BudgetUnit`) is the budget's: ``max_tokens`` counts model tokens with a tokenizer
(:func:`token_unit`: the index encoder's own, or one the user gives in
``EmbeddingConfig(token_counter=...)``), ``max_words`` counts whitespace-separated words
(:data:`WORDS`, the unit of every figure in benchmarks/RESULTS.md and of ``drag_knee_retriever.eval``).
An LLM reads about 1.3 tokens per English word and up to 2 per word of biomedical text.

The leaves' lengths are in their text, which a light walk does not read: :func:`fill_steps` is a
sans-IO generator (as the walk is) that yields the ids it needs and receives the nodes, a step of
the one search pipeline (:mod:`~drag_knee_retriever.search._pipeline`) that ``search`` and
``asearch`` share; its reads also bring every document root the final liveness
check needs, so a budgeted search costs the walk's round trips plus two or three reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Generator, List, Mapping, Optional, Sequence, Set, Tuple

# The units live beside the encoders (a model's tokenizer is the encoder's); re-exported here.
from drag_knee_retriever.embeddings.tokens import WORDS, BudgetUnit, TokenUnit, count_words, first_words, token_unit  # noqa: F401
from drag_knee_retriever.model._ids import leaf_id, node_id, span_leaf_ids
from drag_knee_retriever.model._nodes import TraceStep, TreeNode
from drag_knee_retriever.store import RankedHit

__all__ = ["BudgetFill", "BudgetUnit", "Group", "WORDS", "count_words", "fill", "fill_steps", "first_words",
           "mark_trace", "pack", "token_unit"]

# The fill reads the ranked leaves' texts in growing prefixes: the first read guesses this many
# words per leaf (passages are ~120 words, paragraphs fewer), later reads double the prefix.
_WORDS_PER_LEAF_GUESS = 40
_MAX_READS = 6


@dataclass(frozen=True)
class Group:
    """A node that may come back whole in place of its leaves: ``leaves`` in document order."""

    node_id: str
    leaves: Tuple[str, ...]


@dataclass
class Entry:
    """One result of a fill: a leaf, or a group standing for the leaves it covers."""

    node_id: str
    score: float
    leaves: Tuple[str, ...]
    words: int


@dataclass
class FillOutcome:
    """What :func:`fill` made of the known prefix of a ranking."""

    entries: List[Entry]
    used: int
    # Leaves whose words are needed (a group's other leaves) but not known yet.
    missing: Set[str] = field(default_factory=set)
    # Whether the ranking's known prefix ran out before the budget did.
    wants_more: bool = False
    # The best leaf alone is longer than the budget: it is returned cut (entries holds it).
    cut_to_budget: bool = False


def fill(ranked: Sequence[Tuple[str, float]], words: Mapping[str, int], groups: Mapping[str, Sequence[Group]],
         budget: int, merge_ratio: Optional[float]) -> FillOutcome:
    """Fill ``budget`` words from ``ranked`` (leaf id, score), best first (see the module docstring).

    ``words`` holds the length of every leaf known so far; the fill stops at the first ranked leaf
    whose length is unknown (``wants_more``). ``groups[leaf]``: the groups a leaf may merge into,
    innermost first; a merge whose other leaves' lengths are unknown is left out and those leaves
    are reported in ``missing``. ``merge_ratio`` ``None``: never merge.
    """
    entries: List[Entry] = []
    covered: Dict[str, Entry] = {}  # leaf id -> the entry holding it
    used = 0
    missing: Set[str] = set()
    wants_more = False
    for leaf, score in ranked:
        if leaf in covered:
            continue  # inside a page or region already taken: its text is there
        size = words.get(leaf)
        if size is None:
            wants_more = True
            break
        if used + size > budget:
            continue  # a later, shorter leaf may still fit
        entry = Entry(leaf, score, (leaf,), size)
        entries.append(entry)
        covered[leaf] = entry
        used += size
        if merge_ratio is None:
            continue
        for group in groups.get(leaf, ()):
            inside = [i for i in group.leaves if i in covered]
            if len(group.leaves) < 2 or len(inside) / len(group.leaves) <= merge_ratio:
                continue
            unknown = [i for i in group.leaves if i not in covered and i not in words]
            if unknown:
                missing.update(unknown)
                continue
            extra = sum(words[i] for i in group.leaves if i not in covered)
            if used + extra > budget:
                continue
            # The group takes the place (and score) of the first entry it absorbs.
            absorbed = {id(covered[i]) for i in inside}
            at = next(n for n, e in enumerate(entries) if id(e) in absorbed)
            merged = Entry(group.node_id, entries[at].score, group.leaves,
                           sum(words[i] for i in group.leaves))
            entries = [e for n, e in enumerate(entries) if id(e) not in absorbed or n == at]
            entries[at] = merged
            used += extra
            for i in group.leaves:
                covered[i] = merged
    cut = False
    if not entries and ranked and not wants_more and ranked[0][0] in words:
        first, score = ranked[0]
        entries = [Entry(first, score, (first,), min(words[first], budget))]
        used = entries[0].words
        cut = True
    return FillOutcome(entries, used, missing, wants_more, cut)


@dataclass
class BudgetFill:
    """A finished fill: the chosen hits (whole nodes), every node read, and whether the single
    best leaf must be cut to the budget (:func:`first_words`)."""

    hits: List[RankedHit]
    fetched: List[TreeNode]
    cut_to_budget: bool = False
    outcome: Optional[FillOutcome] = None


FillSteps = Generator[List[str], List[TreeNode], BudgetFill]


def _roots(doc_ids: Sequence[str]) -> List[str]:
    return [i for d in dict.fromkeys(doc_ids) for i in (node_id(d, "r"), leaf_id(d, 0))]


def fill_steps(ranked: Sequence[RankedHit], regions: Sequence[RankedHit], budget: int,
               merge_ratio: Optional[float], *, root_docs: Sequence[str] = (),
               count: Callable[[str], int] = count_words) -> FillSteps:
    """Fill ``budget`` from the focus ranking ``ranked`` (leaves, best first) and the walk's
    ``regions``, reading the nodes it needs: yields lists of node ids, receives those nodes
    (any order, missing ones left out). ``root_docs``: documents whose roots the caller's liveness
    check also needs (read in the first request)."""
    nodes: Dict[str, TreeNode] = {}
    words: Dict[str, int] = {}
    asked: Set[str] = set()
    region_groups = [(r.node, Group(r.node.id, span_leaf_ids(r.node))) for r in regions if not r.node.is_leaf]
    groups: Dict[str, List[Group]] = {}  # leaf id -> its groups, innermost first (once its parent is read)
    parents: Dict[str, Group] = {}
    prefix = min(len(ranked), max(1, math.ceil(budget / _WORDS_PER_LEAF_GUESS)))
    wanted: List[str] = [group.node_id for _, group in region_groups]
    wanted += _roots(list(root_docs) + [r.node.doc_id for r in regions])
    outcome = FillOutcome([], 0)
    for _ in range(_MAX_READS):
        head = [h.node for h in ranked[:prefix]]
        wanted += [n.id for n in head]
        wanted += [n.parent_id for n in head if n.parent_id]
        wanted += _roots([n.doc_id for n in head])
        wanted += sorted(outcome.missing)
        ask = [i for i in dict.fromkeys(wanted) if i not in asked]
        wanted = []
        if ask:
            asked.update(ask)
            for node in (yield ask):
                nodes[node.id] = node
                if node.is_leaf:
                    words[node.id] = count(node.text)
        for leaf in head:
            if leaf.id not in groups:
                groups[leaf.id] = _groups_of(leaf, nodes, region_groups, parents)
        # A ranked leaf the read did not find (its document was deleted meanwhile) is not a candidate.
        order = [(n.id, h.score) for n, h in zip(head, ranked) if n.id in nodes or n.id not in asked]
        outcome = fill(order, words, groups, budget, merge_ratio)
        if outcome.missing - asked:
            continue  # read the groups' other leaves, then fill again
        if prefix < len(ranked) and not _full(outcome, budget, words):
            prefix = min(len(ranked), prefix * 2)
            continue
        break
    # The walk's own (light) node where it has one, so that the liveness check compares the version
    # the walk ranked with the one read now (a document replaced meanwhile is dropped).
    light = {h.node.id: h.node for h in list(ranked) + list(regions)}
    # A result's public score comes from its dense cosine (made monotone along the order,
    # search/_relevance.py): a leaf keeps the one the focus pool read, a group the best of its leaves' (as a region the focus returns whole does); only
    # a result none of whose leaves the pool scored costs the dense ranking after the fill.
    cosine = {h.node.id: h.dense_score for h in ranked if h.dense_score is not None}
    hits = [RankedHit(node=light.get(e.node_id) or nodes[e.node_id], score=e.score,
                      dense_score=max((cosine[i] for i in e.leaves if i in cosine), default=None))
            for e in outcome.entries if e.node_id in nodes]
    return BudgetFill(hits=hits, fetched=list(nodes.values()), cut_to_budget=outcome.cut_to_budget, outcome=outcome)


def _full(outcome: FillOutcome, budget: int, words: Mapping[str, int]) -> bool:
    """Whether the budget is as full as reading on would make it: what is left is shorter than a
    typical leaf (the median of those read), so most leaves further down would not fit either."""
    left = budget - outcome.used
    if left <= 0 or not words:
        return left <= 0
    sizes = sorted(words.values())
    return left < sizes[len(sizes) // 2]


def _groups_of(leaf: TreeNode, nodes: Mapping[str, TreeNode], region_groups: Sequence[Tuple[TreeNode, Group]],
               parents: Dict[str, Group]) -> List[Group]:
    """The groups a leaf may merge into: its parent (read with it; ``parents`` remembers each
    parent's group) and the walk's regions holding it, innermost first."""
    found: Dict[str, Group] = {}
    parent = nodes.get(leaf.parent_id) if leaf.parent_id else None
    if parent is not None and not parent.is_leaf:
        if parent.id not in parents:
            parents[parent.id] = Group(parent.id, span_leaf_ids(parent))
        found[parent.id] = parents[parent.id]
    for region, group in region_groups:
        if region.doc_id == leaf.doc_id and region.span.contains(leaf.span):
            found.setdefault(region.id, group)
    return sorted(found.values(), key=lambda g: len(g.leaves))


def pack(hits: Sequence[RankedHit], texts: Mapping[str, str], budget: int,
         unit: BudgetUnit = WORDS) -> Tuple[List[RankedHit], Dict[str, str]]:
    """A method's own results within ``budget`` (in ``unit``): each in order if it fits (first fit),
    the best one cut to the budget when none does. Returns the kept hits and their texts."""
    kept: List[RankedHit] = []
    used = 0
    for hit in hits:
        size = unit.count(texts[hit.node.id])
        if used + size <= budget:
            kept.append(hit)
            used += size
    if not kept and hits:
        best = hits[0]
        return [best], {best.node.id: unit.cut(texts[best.node.id], budget)}
    return kept, {h.node.id: texts[h.node.id] for h in kept}


def mark_trace(step: TraceStep, hits: Sequence[RankedHit]) -> None:
    """Write a fill's outcome into the trace's focus step: a candidate is ``"kept"`` (returned as
    itself), ``"merged"`` (inside a returned page or region, named by ``suppressed_by``) or
    ``"cut"`` (left out: it did not fit, or the budget was full)."""
    returned = {h.node.id for h in hits}
    inside: Dict[str, str] = {}
    for hit in hits:
        if not hit.node.is_leaf:
            for leaf in span_leaf_ids(hit.node):
                inside.setdefault(leaf, hit.node.id)
    for candidate in step.candidates:
        if candidate.node_id in returned:
            candidate.outcome, candidate.suppressed_by = "kept", None
        elif candidate.node_id in inside:
            candidate.outcome, candidate.suppressed_by = "merged", inside[candidate.node_id]
        else:
            candidate.outcome, candidate.suppressed_by = "cut", None
    step.kept_count = len(hits)
