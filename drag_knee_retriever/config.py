"""Frozen, validated settings, grouped by what they shape. Validated when built, never per query.

- :class:`SearchConfig`: how a query walks the trees (the method and its own knobs), with
  :class:`FusionConfig` (how each candidate list is ranked) and :class:`FocusConfig` (the knee
  methods' last step) nested, and what comes back (order, cap, threshold, trace detail).
- :class:`BuildConfig`: how documents become trees: :class:`LeafConfig` (how text is cut into
  leaves), :class:`SectionConfig` (where sections come from), :class:`SummaryConfig` (the extractive
  summariser) and :class:`VectorConfig` (what each node's two vectors encode).
- :class:`EmbeddingConfig`: the fastembed dense model (or your own), the BM25 language, and
  :class:`EncoderRuntime` (speed and memory of encoding).
- :class:`StoreConfig`: how the index talks to Qdrant (collection, engine, credentials, timeout);
  *where* it lives is :class:`~drag_knee_retriever.DragKneeIndex`'s first argument.

Every field is declared with :func:`~drag_knee_retriever.model._settings.setting` (default, doc, rule);
the README's settings tables are generated from those declarations. A setting that does nothing
under the chosen method is refused with a message naming the one that applies. Old flat spellings
(``SearchConfig(focus_pool=20)``, ``BuildConfig(passage_words=None)``, ...) work for one release with
a :class:`DeprecationWarning` naming the new one.
"""

from __future__ import annotations

import math
import re
from dataclasses import fields, replace
from typing import Any, Literal, Optional, Sequence, Tuple, TypedDict, Union

from drag_knee_retriever.errors import ConfigError, InvalidSettingError
from drag_knee_retriever.model._languages import BM25_LANGUAGES, check_bm25_language
from drag_knee_retriever.model._settings import MAX_SETTING, Settings, off_when_none, setting, settings_class

__all__ = [
    "BuildConfig", "EmbeddingConfig", "EncoderRuntime", "FocusConfig", "FusionConfig", "LeafConfig",
    "MAX_SETTING", "MIN_SIDE_LIMIT", "SEARCH_METHODS", "SEARCH_OPTIONS", "SearchConfig", "SearchOptions",
    "SectionConfig", "StoreConfig", "SummaryConfig", "TIE_MARGIN", "VectorConfig", "WalkOptions",
]

SearchMethod = Literal["fixed", "knee", "sensitive_knee", "branch"]
SEARCH_METHODS: Tuple[str, ...] = ("fixed", "knee", "sensitive_knee", "branch")
#: The methods that end with a focus step (``SearchConfig.focus``).
FOCUS_METHODS: Tuple[str, ...] = ("knee", "sensitive_knee")
ResultOrder = Literal["score", "document"]
InnerVectorSource = Literal["summary", "centroid", "both"]
BM25Language = Literal["english", "russian"]
LeafTextSource = Literal["own", "description", "own+description"]
#: What a leaf's indexed text may carry in front of it (VectorConfig.context).
LEAF_CONTEXT_PARTS: Tuple[str, ...] = ("title", "section", "path", "page")
SparseTextSource = Literal["auto", "text+keywords", "keywords", "text"]
InnerSparseSource = Literal["span", "description"]
FocusScores = Literal["rrf", "magnitude"]
GlobalScope = Literal["roots", "collection"]
BudgetOrder = Literal["global", "documents", "pages", "spread"]
DEFAULT_DENSE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_BM25_LANGUAGE = "english"

# -- engine constants that shape a search (not settings; the stores read them from here) ----------

#: A fused ranking over an open set (the roots, the focus step's global leaves, flat search) reads at
#: least this many hits per side (dense, BM25) before fusing: RRF over a short side list would score a
#: node found only on the other side too high. A candidate set (a beam step) reads its own size.
MIN_SIDE_LIMIT = 100
#: Every ranking asks the engine for this many hits beyond its limit and cuts after ordering equal
#: scores by node id: the engines order ties arbitrarily (Qdrant Edge's order changes from process to
#: process), so a limit cutting through a tie would make the walk nondeterministic.
TIE_MARGIN = 16


# -- search --------------------------------------------------------------------------------------


def _weight_schedule(name: str, value: Any) -> Optional[Tuple[Tuple[float, float], ...]]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) == 0:
        raise ConfigError(
            f"{name} must be a non-empty list of (dense, sparse) pairs, e.g. "
            "[(0.2, 0.8), (0.5, 0.5), (1.0, 0.0)], or None."
        )
    return tuple(_weight_pair(name, pair, position) for position, pair in enumerate(value))


def _weight_pair(name: str, pair: object, position: int) -> Tuple[float, float]:
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise ConfigError(f"{name}[{position}] is {pair!r}; give a (dense, sparse) pair such as (0.5, 0.5).")
    try:
        dense, sparse = (float(pair[0]), float(pair[1]))
    except (TypeError, ValueError):
        raise ConfigError(f"{name}[{position}] = {pair!r} is not two numbers.") from None
    if not all(math.isfinite(v) and v >= 0 for v in (dense, sparse)):
        raise ConfigError(f"{name}[{position}] = {pair!r} has a negative or non-finite weight; "
                          "weights must be finite and >= 0.")
    if dense == 0 and sparse == 0:
        raise ConfigError(f"{name}[{position}] = {pair!r} switches both rankings off; at least one weight must be above 0.")
    return dense, sparse


@settings_class
class FusionConfig(Settings):
    """How every ranked list of a search fuses its dense and BM25 rankings (Reciprocal Rank Fusion)."""

    rrf_k: int = setting(
        2, kind=int, low=1, high=MAX_SETTING,
        doc="RRF constant. Qdrant fuses in the engine: a side with weight w adds 1 / ((rank + 1) / w + rrf_k - 1), "
            "rank from 0, which is 1 / (rrf_k + rank) at w = 1 (Qdrant's convention; LangChain's EnsembleRetriever "
            "uses 1 / (60 + rank) with rank from 1). A side with weight 0 adds nothing.")
    weights: Optional[Tuple[Tuple[float, float], ...]] = setting(
        None, kind="any", optional=True, check=_weight_schedule,
        doc="Per-level (dense, sparse) weights, level 0 = the roots; the last pair serves deeper levels and the "
            "focus step's leaves. None weighs both sides equally everywhere.")


@settings_class
class FocusConfig(Settings):
    """The knee methods' last step: the leaves under the regions the walk chose compete once, directly.

    One more round trip: the leaves under the walk's nodes (and with ``global_leaves`` the best leaves
    of the whole filtered collection) are scored, the best ``pool`` are cut at their knee, and those
    leaves are the result; a region most of whose leaves survive is returned whole (``merge_ratio``).
    Why: the walk finds the right documents and sections, but a knee over the few candidates of one
    beam step decides badly between a parent and its children (measured: benchmarks/RESULTS.md).
    """

    pool: int = setting(
        10, kind=int, low=1, high=MAX_SETTING,
        doc="Leaves ranked in the focus step and cut at their knee (SearchConfig(focus=None) skips the step: the "
            "walk's nodes are returned as they are, an inner node with its whole span).")
    region_sensitivity: float = setting(
        0.85, kind=float, low=0.0, low_open=True, high=1.0,
        doc="Knee sensitivity of the walk's own cuts (roots and beam steps) when a focus step follows (or "
            "SearchConfig.sensitivity if smaller): the focus cuts again at the leaves, so the walk keeps more "
            "regions than a walk that has the last word.")
    global_leaves: Optional[int] = setting(
        50, kind=int, low=1, high=MAX_SETTING, optional=True,
        doc="Also rank this many leaves of the whole (filtered) collection in the same round trip and fuse them "
            "with the regions' leaves: a strong leaf whose region the walk cut stays a candidate. None: the "
            "walk's regions alone.")
    merge_ratio: Optional[float] = setting(
        0.5, kind=float, low=0.0, low_open=True, high=1.0, optional=True,
        doc="A region is returned whole (its whole span) when more than this share of its leaves survive the "
            "cut: the evidence is spread over it. None: always return leaves.")
    scores: FocusScores = setting(
        "magnitude", kind="choice", choices=("rrf", "magnitude"),
        doc="How the focus step scores its leaves before the knee: 'magnitude' (each leaf's z-scored dense cosine "
            "plus z-scored BM25 score, plus sibling_weight x its siblings' mean; the knee cuts where the evidence "
            "falls, and a result's score is that sum) or 'rrf' (reciprocal ranks only).")
    sibling_weight: Optional[float] = setting(
        None, kind=float, low=0.0, only=("scores", ("magnitude",), 0.25,
                                         "scores='rrf' ranks by reciprocal rank alone."),
        doc="With scores='magnitude': the weight of the mean score of the leaves under the same parent (the "
            "parent's evidence, read from its leaves; 0 = the leaf's own evidence only).")
    # Scale (issue 26): the global list from the ranked roots' documents.
    global_scope: GlobalScope = setting(
        "roots", kind="choice", choices=("roots", "collection"),
        doc="Where global_leaves come from: 'roots' (the leaves of the global_docs best-ranked documents, ranked "
            "in the roots' round trip: a few thousand leaves at any index size) or 'collection' (every leaf of the "
            "filtered collection, a flat search of its own: ~0.5 s at 1M nodes). The same list when a filter leaves "
            "at most global_docs documents (benchmarks/RESULTS.md, \"scale\").")
    global_docs: int = setting(
        50, kind=int, low=1, high=MAX_SETTING,
        doc="With global_scope='roots': how many best-ranked documents' leaves the global list ranks.")
    # Issue 41: a word budget spent on the best documents' best pages.
    budget_order: BudgetOrder = setting(
        "global", kind="choice", choices=("global", "documents", "pages", "spread"),
        doc="With a word budget (SearchConfig.max_tokens): what fills it after the focus cut's leaves. 'global': "
            "the global leaf ranking; 'documents': the leaves of the documents the cut chose (at most "
            "budget_docs), ranked among themselves, then the global ranking; 'pages': the same documents' pages, "
            "each scored by all its passages, best page first, a page's passages together; 'spread': those pages' "
            "best passages first, then their other passages (drag_knee_retriever.search._page_ranking).")
    budget_docs: int = setting(
        2, kind=int, low=1, high=MAX_SETTING,
        doc="With budget_order other than 'global': how many of the cut's documents the budget reads first.")
    # The document's identity as evidence, and the cut's widening and narrowing from the scores' own
    # scale (issue 24). These shape the magnitude focus (scores='magnitude'); the 'rrf' focus ignores them.
    identity_weight: float = setting(
        4.0, kind=float, low=0.0,
        doc="Each leaf's focus score gains this weight x the z-score over the pool of its document's identity "
            "match (the title or file name and the metadata that names it, against the query's words: "
            "drag_knee_retriever.search._identity): a leaf inherits its document's match. Counts only where the query "
            "names a document (SearchConfig.identity_coverage) and among leaves of several documents. 0: off "
            "(the default before 'filings5').")
    root_weight: float = setting(
        0.0, kind=float, low=0.0,
        doc="Each leaf's focus score gains this weight x the z-score of its document root's score in the walk's "
            "roots ranking (text and identity: the document's evidence as a whole). Experimental; 0: off.")
    near_best: Optional[float] = setting(
        1.0, kind=float, low=0.0, low_open=True, optional=True,
        doc="The cut also keeps every leaf whose focus score is within this much of the best leaf's (sums of "
            "z-scores: 1.0 is about half a standard deviation of the pool), up to near_best_limit: where nothing "
            "stands out the knee's place among near-equal scores is arbitrary and a reader needs them all. None: "
            "the knee alone. Chosen by replaying cuts over every dataset's focus pools (benchmarks/RESULTS.md, "
            "'budget').")
    near_best_limit: int = setting(
        20, kind=int, low=1, high=MAX_SETTING, doc="Leaves the near_best widening may keep at most.")
    standout: Optional[float] = setting(
        4.0, kind=float, low=0.0, low_open=True, optional=True,
        doc="A best leaf whose focus score is ahead of the second's by more than this comes back alone (it is "
            "the answer; the knee would add its runner-up). None: never.")


_DEFAULT_FOCUS = FocusConfig()
_DEFAULT_FUSION = FusionConfig()


@settings_class(moved={
    "rrf_k": ("fusion", "rrf_k", None),
    "fusion_weights": ("fusion", "weights", None),
    "focus_pool": ("focus", "pool", off_when_none),
    "region_sensitivity": ("focus", "region_sensitivity", None),
    "focus_global": ("focus", "global_leaves", None),
    "merge_ratio": ("focus", "merge_ratio", None),
    "focus_scores": ("focus", "scores", None),
    "sibling_weight": ("focus", "sibling_weight", None),
})
class SearchConfig(Settings):
    """How a query walks the trees, and what comes back.

    The method's own knobs sit beside it and are refused under a method they do not shape
    (``beam_width`` outside ``"fixed"``, ``sensitivity`` under ``"knee"``, ...); left ``None`` they take the
    method's default. ``fusion`` says how every ranked list is fused, ``focus`` the knee methods' last step.
    """

    method: SearchMethod = setting(
        "knee", kind="choice", choices=SEARCH_METHODS,
        doc="'knee' (every ranked list cut at its knee, then the focus step), 'sensitive_knee' (the same with "
            "sensitivity), 'fixed' (a beam of beam_width, no focus), 'branch' (each parent against its own "
            "children, no focus).")
    max_roots: Optional[int] = setting(
        None, kind=int, low=1, high=MAX_SETTING,
        only=("method", ("knee", "sensitive_knee", "branch"), 20,
              "method='fixed' ranks beam_width roots; set beam_width."),
        doc="Roots (documents) ranked before the first knee cut.")
    beam_width: Optional[int] = setting(
        None, kind=int, low=1, high=MAX_SETTING,
        only=("method", ("fixed",), 3,
              "the knee methods choose the width at each list's knee (max_roots bounds the roots ranked)."),
        doc="Nodes kept per step by method='fixed' (roots included).")
    sensitivity: Optional[float] = setting(
        None, kind=float, low=0.0, low_open=True, high=1.0,
        only=("method", ("sensitive_knee", "branch"), 0.85,
              "method='knee' cuts at the plain knee (s = 1) and its walk at focus.region_sensitivity: set that, or "
              "use method='sensitive_knee'."),
        hint="1.0 is the plain knee, smaller keeps more",
        doc="Knee sensitivity s of method='sensitive_knee' and 'branch': a cut keeps up to the last point at least "
            "s times as far from the chord as the knee (1.0 is the plain knee; smaller keeps more).")
    max_depth: int = setting(
        64, kind=int, low=1, high=MAX_SETTING,
        doc="Levels the walk descends at most (a guard against malformed trees).")
    fusion: FusionConfig = setting(
        _DEFAULT_FUSION, kind=FusionConfig, doc="How each ranked list fuses dense and BM25 (see FusionConfig).")
    focus: Optional[FocusConfig] = setting(
        _DEFAULT_FOCUS, kind=FocusConfig, optional=True,
        doc="The focus step of 'knee' and 'sensitive_knee' (see FocusConfig); None returns the walk's nodes as "
            "they are. 'fixed' and 'branch' never focus.")
    order: ResultOrder = setting(
        "score", kind="choice", choices=("score", "document"),
        doc="Results by 'score' or by 'document' position.")
    max_results: Optional[int] = setting(
        None, kind=int, low=1, high=MAX_SETTING, optional=True,
        doc="A cap on the number of results (the frameworks' k): the method still decides how many up to the cap; "
            "the best by score are kept. None: no cap.")
    min_score: Optional[float] = setting(
        None, kind=float, optional=True,
        doc="Drop results whose score is below it (LangChain's score_threshold). It reads the public score, "
            "the query's dense cosine with the node clipped to [0, 1], the same for every method.")
    explain: bool = setting(
        False, kind=bool,
        doc="Also record each candidate's dense and BM25 rank in the trace (same round trips, about 10% of a "
            "search). The trace always has the fused scores, the knee and every decision.")
    # The document's identity as evidence and a word budget (issue 24).
    identity_weight: float = setting(
        2.0, kind=float, low=0.0,
        doc="How much a document's identity (its title or file name and the metadata that names it, matched "
            "against the query's words: drag_knee_retriever.search._identity) adds to its root's fused score; a "
            "document the query names fully (a name only it holds, or its company and year) adds the full "
            "weight, and the roots of named documents join the roots ranking. focus.identity_weight passes the "
            "match on to the leaves. 0 (with focus.identity_weight=0): off, the default before 'filings5' "
            "(benchmarks/RESULTS.md).")
    identity_coverage: str = setting(
        "two_fields", kind="choice", choices=("terms", "fields", "two_fields"),
        doc="How a document's identity match is weighed: 'terms', by the query's identity terms alone (their "
            "rarity among the documents' identities); 'fields', also by how many distinct fields of the identity "
            "the query names (a metadata value, a part of a file name such as PEPSICO_2022_10K's PEPSICO / 2022 / "
            "10K): two or more (whose and which) count fully, one half, and not at all for a document with fewer "
            "than two fields it shares with other documents (a company its other filings hold, a year, a kind "
            "of report), such as a title that is an article's or a paper's name: the identity then counts where "
            "many similar documents differ in a few short fields and names no document of a collection of "
            "named articles; 'two_fields', as 'fields' but one field alone counts nothing (a word such as 'paper' "
            "or 'report' that names a kind of document, or a topic, names a family, not a document): only whose "
            "and which name one, except that a query naming no period and a family by a name (a capitalised word "
            "or a short form) names the family's latest document at half (identity.IdentityIndex.coverage; "
            "benchmarks/RESULTS.md, 'filings', 'filings5', 'filings7').")
    identity_keys: Optional[Tuple[str, ...]] = setting(
        None, kind="names", optional=True,
        doc="The metadata keys that name a document, e.g. ('company', 'year'). None: the title / file-name keys "
            "and every metadata value that is a short text or a year (identity.document_identity).")
    max_tokens: Optional[int] = setting(
        None, kind=int, low=1, high=MAX_SETTING, optional=True, hint="the results' word budget, e.g. 1500",
        doc="A word budget for the results (per call: search(q, max_tokens=1500)). The knee methods rank their "
            "focus pool past the knee and fill the budget with the best evidence in order (a leaf that no longer "
            "fits is skipped for a later, shorter one; a page or region most of whose leaves are chosen comes "
            "back whole when it fits, without repeating a passage); the other methods keep the results that "
            "fit. Words, not model tokens (about 1.3 tokens a word of English). None: the method's cut decides.")

    def _check(self) -> None:
        if self.method not in FOCUS_METHODS and self.focus not in (None, _DEFAULT_FOCUS):
            raise ConfigError(
                f"SearchConfig.focus={self.focus!r} does nothing with method={self.method!r} (fixed and branch never "
                "focus; the focus step applies with method='knee' or 'sensitive_knee'); drop focus, or pick a knee method."
            )

    def with_overrides(self, **overrides: Any) -> "SearchConfig":
        """A copy with some settings replaced (``None`` = keep), validated again: a per-search override.

        A change of method drops the old method's own knobs not given again (``beam_width`` of
        ``"fixed"``, ``sensitivity``, ``max_roots``, a focus under fixed/branch), so
        ``search(method="knee")`` on a fixed-width index is the default knee search.
        """
        clean = {k: v for k, v in overrides.items() if v is not None}
        if not clean:
            return self
        try:
            method = clean.get("method", self.method)
            if method != self.method:
                for name in ("beam_width", "sensitivity", "max_roots"):
                    clean.setdefault(name, None)
                if method not in FOCUS_METHODS and "focus" not in clean and self.focus is not None:
                    clean["focus"] = _DEFAULT_FOCUS
            if clean.get("focus") is False:
                clean["focus"] = None
            return replace(self, **clean)
        except ConfigError as exc:
            # A per-search setting is part of the query: an InvalidQueryError (and a ConfigError).
            raise InvalidSettingError(str(exc)) from None



class WalkOptions(TypedDict, total=False):
    """The per-call settings of a walk, spelled the same in ``DragKneeIndex.search`` and both retrievers
    (:class:`SearchConfig`'s fields; ``None`` keeps the index's). The one list of them: ``search`` /
    ``asearch`` take them as typed keywords (a misspelling is a type error and a TypeError naming the
    closest), the retrievers and the CLI read the names from here."""

    method: Optional[str]
    beam_width: Optional[int]
    max_roots: Optional[int]
    sensitivity: Optional[float]
    fusion: Optional[FusionConfig]
    focus: Union[FocusConfig, bool, None]  # False: skip the focus step
    order: Optional[str]
    fusion_weights: Optional[Sequence[Tuple[float, float]]]  # deprecated: fusion=FusionConfig(weights=...)
    max_tokens: Optional[int]  # a word budget for the results (SearchConfig.max_tokens)


class SearchOptions(WalkOptions, total=False):
    """``DragKneeIndex.search``'s per-call settings: the walk's, and what comes back (the retrievers spell
    the last two their frameworks' way: ``k`` / ``similarity_top_k`` and ``score_threshold``)."""

    max_results: Optional[int]
    min_score: Optional[float]
    explain: Optional[bool]


#: The names of :class:`SearchOptions` (for runtime checks; the TypedDict is what type checkers read).
SEARCH_OPTIONS: Tuple[str, ...] = tuple(SearchOptions.__annotations__)


# -- build ---------------------------------------------------------------------------------------


@settings_class
class LeafConfig(Settings):
    """How text is cut into leaves (pages are never merged: a page is what a user cites)."""

    max_chars: int = setting(2000, kind=int, low=50, doc="Paragraphs longer than this are split.")
    min_chars: int = setting(200, kind=int, low=0,
                             doc="Paragraphs shorter than this are merged with the next (must be < max_chars).")
    passage_words: Optional[int] = setting(
        120, kind=int, low=20, optional=True,
        doc="A long page becomes a page node whose leaves are passages of about this many words (consecutive "
            "sentences or lines): the dense side reads the whole page, not only the model's first window, and a "
            "search can return the passage that answers; citations keep the page (p.37 ¶2). None: a page is "
            "always one leaf.")
    split_pages_over: Optional[int] = setting(
        200, kind=int, low=1, optional=True,
        doc="Split only pages longer than this many words (about the 256 word pieces all-MiniLM-L6-v2 was tuned "
            "to read). None: every page longer than passage_words. Both chosen by measurement "
            "(benchmarks/RESULTS.md, 'Passages by default').")

    def _check(self) -> None:
        if not self.min_chars < self.max_chars:
            raise ConfigError(f"LeafConfig.min_chars must be an integer in [0, max_chars), got {self.min_chars!r}.")


@settings_class
class SectionConfig(Settings):
    """Where a document's sections (the tree's inner nodes above the leaves) come from."""

    markdown: bool = setting(True, kind=bool, doc="Markdown headings of a text document become sections.")
    outline: bool = setting(
        False, kind=bool,
        doc="A document's outline (PDF bookmarks) becomes its sections, pages grouped by branching inside each, "
            "and every page is indexed with its section title. Off: not yet measured better.")
    headings: bool = setting(
        False, kind=bool,
        doc="A document without an outline gets sections from headings found in its text (numbered '3.2 Results', "
            "'PART II' / 'Item 7.', Markdown, short title-like lines); tables of contents and running headers open "
            "none (drag_knee_retriever.build._headings).")
    statements: bool = setting(
        True, kind=bool,
        doc="A page of a financial report's primary statement (balance sheet, income statement, cash flows, equity, "
            "comprehensive income: its heading atop a page of figures) is indexed with the statement's heading and "
            "its common names in front, so a question's 'income statement' reaches 'Consolidated Statements of "
            "Operations' (drag_knee_retriever.build._statements). Other pages are unchanged.")


@settings_class
class SummaryConfig(Settings):
    """The extractive (LLM-free) summariser's output size; an LLM summariser's fallback uses it too."""

    sentences: int = setting(3, kind=int, low=1, doc="Central sentences in an inner node's summary.")
    max_chars: int = setting(600, kind=int, low=50, doc="Longest summary of an inner node.")
    keywords: int = setting(8, kind=int, low=0, doc="Distinctive keywords kept per node (0: none).")


def _context_parts(name: str, value: Any) -> Tuple[str, ...]:
    # "title+path+page" (as the eval's --build k=v,... gives it) is the tuple of its parts.
    parts = tuple(p.strip() for p in re.split(r"[+,]", value) if p.strip()) if isinstance(value, str) else value
    if not isinstance(parts, (tuple, list)) or not all(isinstance(p, str) and p.strip() for p in parts):
        raise ConfigError(f"{name} must be a tuple of non-empty strings, got {value!r}.")
    return tuple(parts)


@settings_class
class VectorConfig(Settings):
    """What each node's two vectors (dense and BM25) encode. The text returned stays the leaf's own."""

    leaf_dense: LeafTextSource = setting(
        "own", kind="choice", choices=("own", "description", "own+description"),
        doc="A leaf's dense text: its own text, the summariser's description of it (an LLM summariser's page "
            "description), or both joined.")
    inner_dense: InnerVectorSource = setting(
        "both", kind="choice", choices=("summary", "centroid", "both"),
        doc="An inner node's dense vector: its embedded summary, the normalised centroid of its children's vectors "
            "(no encoding cost), or the mean of both.")
    sparse: SparseTextSource = setting(
        "auto", kind="choice", choices=("auto", "text+keywords", "keywords", "text"),
        doc="Every node's BM25 text: its text plus its keywords (LLM keywords add synonyms), the keywords alone, or "
            "the text alone. 'auto': text + keywords with an LLM summariser, the text alone with the extractive one "
            "(whose keywords are words of the text already).")
    inner_sparse: InnerSparseSource = setting(
        "span", kind="choice", choices=("span", "description"),
        doc="An inner node's BM25 text: 'span', the text of every leaf beneath it (plus keywords: a parent wins "
            "where the query's terms spread over its children), or 'description', its summary as sparse says.")
    context: Tuple[str, ...] = setting(
        ("section",), kind="any", check=_context_parts,
        doc="What a leaf's indexed text carries in front of it, in this order: 'title' (metadata['title'], else the "
            "file name), 'section' (the innermost heading) or 'path' (every heading above it), 'page'.")
    context_metadata: Tuple[str, ...] = setting(
        (), kind="any", check=_context_parts,
        doc="Document metadata keys whose values join the context, e.g. ('company', 'year') -> "
            "'company: ACME | year: 2023'.")

    def _check(self) -> None:
        unknown = [p for p in self.context if p not in LEAF_CONTEXT_PARTS]
        if unknown:
            raise ConfigError(
                f"VectorConfig.context: unknown part(s) {', '.join(map(repr, unknown))}; use any of "
                f"{', '.join(LEAF_CONTEXT_PARTS)}, e.g. ('title', 'path', 'page'), or () for none."
            )
        if "section" in self.context and "path" in self.context:
            raise ConfigError("VectorConfig.context: give 'section' (the innermost heading) or 'path' (every heading "
                              "above the leaf), not both.")

    @property
    def writes_context(self) -> bool:
        """Whether leaves get a context path beyond their section title (the default)."""
        return self.context != ("section",) or bool(self.context_metadata)


#: BuildConfig's flat fields before issue 23, in their order (document fingerprints keep this form).
_FLAT_BUILD = (
    ("branching", None), ("max_leaf_chars", ("leaves", "max_chars")), ("min_leaf_chars", ("leaves", "min_chars")),
    ("summary_sentences", ("summary", "sentences")), ("summary_max_chars", ("summary", "max_chars")),
    ("keywords", ("summary", "keywords")), ("inner_vectors", ("vectors", "inner_dense")),
    ("use_markdown_sections", ("sections", "markdown")), ("leaf_text", ("vectors", "leaf_dense")),
    ("sparse_text", ("vectors", "sparse")), ("inner_sparse", ("vectors", "inner_sparse")),
    ("passage_words", ("leaves", "passage_words")), ("split_pages_over", ("leaves", "split_pages_over")),
    ("use_outline", ("sections", "outline")), ("detect_headings", ("sections", "headings")),
    ("leaf_context", ("vectors", "context")), ("context_metadata", ("vectors", "context_metadata")),
)


@settings_class(moved={old: (path[0], path[1], None) for old, path in _FLAT_BUILD if path})
class BuildConfig(Settings):
    """How documents become trees: leaves, sections, summaries, and what the vectors encode."""

    branching: int = setting(3, kind=int, low=2, doc="Children per parent when grouping consecutive siblings.")
    leaves: LeafConfig = setting(LeafConfig(), kind=LeafConfig, doc="How text is cut into leaves (see LeafConfig).")
    sections: SectionConfig = setting(SectionConfig(), kind=SectionConfig,
                                      doc="Where sections come from (see SectionConfig).")
    summary: SummaryConfig = setting(SummaryConfig(), kind=SummaryConfig,
                                     doc="The extractive summary's size (see SummaryConfig).")
    vectors: VectorConfig = setting(VectorConfig(), kind=VectorConfig,
                                    doc="What each node's dense and BM25 vectors encode (see VectorConfig).")

    def fingerprint(self) -> str:
        """The settings as one string, part of every document's hash (``builder.document_hash``).

        Kept in the flat form of the releases before the settings were grouped, so an index built
        then sees its documents unchanged (a changed fingerprint would rebuild every tree).
        """
        parts = []
        for old, path in _FLAT_BUILD:
            value = getattr(self, old) if path is None else getattr(getattr(self, path[0]), path[1])
            parts.append(f"{old}={value!r}")
        return f"BuildConfig({', '.join(parts)})"

    @property
    def writes_context(self) -> bool:
        """Whether leaves get a context path beyond their section title (the default)."""
        return self.vectors.writes_context


# -- embedding -----------------------------------------------------------------------------------


def _providers(name: str, value: Any) -> Tuple[str, ...]:
    providers = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (tuple, list)) else ()
    if not providers or not all(isinstance(p, str) and p for p in providers):
        raise ConfigError(f"{name} must be onnxruntime provider names, e.g. "
                          f"('CUDAExecutionProvider', 'CPUExecutionProvider'), got {value!r}.")
    return providers


def _optional_text(name: str, value: Any) -> Optional[str]:
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{name} must be a string or None, got {type(value).__name__}.")
    return value


@settings_class
class EncoderRuntime(Settings):
    """How fast, on what and in how much memory passages are encoded."""

    batch_size: int = setting(4, kind=int, low=1, doc="Texts per encoder call at most.")
    max_batch_chars: int = setting(8_000, kind=int, low=100, doc="Characters per encoder call at most (bounds memory).")
    threads: Optional[int] = setting(None, kind=int, low=1, optional=True,
                                     doc="onnxruntime intra-op threads per session (None: onnxruntime's choice).")
    providers: Optional[Tuple[str, ...]] = setting(
        None, kind="any", optional=True, check=_providers,
        doc="onnxruntime execution providers, e.g. ('CUDAExecutionProvider', 'CPUExecutionProvider').")
    parallel: Optional[int] = setting(
        None, kind=int, low=1, high=64, optional=True,
        hint="encoder sessions working side by side, e.g. one per core",
        doc="This many onnxruntime sessions in this process (threads each, 1 if unset) share length-sorted batches "
            "out to as many threads; unlike fastembed's parallel= worker processes, a custom model's registration "
            "and max_tokens reach every session. None: one session (README, 'Encoder budget').")


_EMBEDDING_MOVED = {name: ("runtime", name, None)
                    for name in ("batch_size", "max_batch_chars", "threads", "providers", "parallel")}


@settings_class(moved=_EMBEDDING_MOVED)
class EmbeddingConfig(Settings):
    """Which dense model encodes the nodes (a fastembed model, or your own), and the BM25 language.

    ``model_name`` is any fastembed dense model; ``model_path`` a local fastembed-ready folder (see
    :mod:`drag_knee_retriever.embeddings` for the resolution order). A dense model of your own goes in
    ``dense`` (or straight into ``DragKneeIndex(embedding=...)``); the fastembed settings then stay unset.
    """

    model_name: str = setting(DEFAULT_DENSE_MODEL, kind=str, doc="A fastembed dense model name.")
    model_path: Optional[str] = setting(
        None, kind="any", optional=True, check=lambda name, v: None if v is None else str(v),
        doc="A local fastembed-ready folder (model.onnx + tokenizer files) for model_name.")
    dense: Any = setting(
        None, kind="any", optional=True,
        doc="Your own dense model instead of fastembed's: LangChain Embeddings, a LlamaIndex embedding, a "
            "function texts -> vectors, or a DenseEmbedder.")
    language: Optional[BM25Language] = setting(
        None, kind="any", optional=True, check=check_bm25_language,
        doc=f"The BM25 stemmer and stop words: {' or '.join(repr(n) for n in BM25_LANGUAGES)} (the package's one "
            "language vocabulary: lower-case English names). None: an existing collection's own language, else "
            "'english'; a language given that differs from the collection's is refused (ModelMismatchError).")
    query_prefix: Optional[str] = setting(
        None, kind="any", optional=True, check=_optional_text,
        doc="Text put in front of queries (e5: 'query: '); None: the model's own convention.")
    passage_prefix: Optional[str] = setting(
        None, kind="any", optional=True, check=_optional_text,
        doc="Text put in front of passages (e5: 'passage: '); None: the model's own convention.")
    pooling: Literal["mean", "cls"] = setting(
        "mean", kind="choice", choices=("mean", "cls"),
        doc="For a custom ONNX folder fastembed does not list: how token vectors are pooled.")
    max_tokens: Optional[int] = setting(
        None, kind=int, low=16, optional=True,
        doc="Tokens the dense model reads per text; None keeps the model's own limit (512 for MiniLM in fastembed). "
            "256 ingests ~18% faster on long paragraphs but lost 1 of 133 COVID-QA questions (README, Speed).")
    cache_dir: Optional[str] = setting(
        None, kind="any", optional=True, check=_optional_text,
        doc="Where fastembed keeps downloaded models (fastembed's default: a temp folder).")
    runtime: EncoderRuntime = setting(EncoderRuntime(), kind=EncoderRuntime,
                                      doc="Speed and memory of encoding (see EncoderRuntime).")

    def _check(self) -> None:
        if self.dense is not None:
            defaults = {f.name: f.default for f in fields(self)}
            changed = [n for n in ("model_name", "model_path", "pooling", "max_tokens", "cache_dir")
                       if getattr(self, n) != defaults[n]]
            if changed:
                raise ConfigError(
                    f"EmbeddingConfig.dense is your own dense model, so {', '.join(changed)} (fastembed settings) "
                    "cannot apply too; drop one of them."
                )

    @property
    def bm25_language(self) -> str:
        """The BM25 language this config encodes with (``language``, else ``"english"``)."""
        return self.language or DEFAULT_BM25_LANGUAGE

    def __hash__(self) -> int:  # ``dense`` may be an unhashable model object
        return hash((self.model_name, self.model_path, id(self.dense), self.language, self.runtime))


# -- store ---------------------------------------------------------------------------------------


#: Characters no engine accepts in a collection name (Qdrant's own list: a server refuses them, and
#: the embedded engines use the name as a folder or file name).
INVALID_COLLECTION_CHARS = ("<", ">", ":", '"', "/", "\\", "|", "?", "*", "\0", "\x1f")
#: Longest collection name in UTF-8 bytes: the folder and our files beside it
#: (``drag_knee_pending.json.<name>``) must stay within the usual 255-byte file name limit.
MAX_COLLECTION_BYTES = 200


def check_collection_name(collection: object) -> str:
    """``collection`` if every engine can hold a collection of that name; else :class:`ConfigError`
    saying what is wrong with it (the engines' own errors read as a damaged index)."""
    if not isinstance(collection, str) or not collection.strip():
        raise ConfigError(f"collection must be a non-empty string, got {collection!r}.")
    bad = sorted({c for c in collection if c in INVALID_COLLECTION_CHARS or ord(c) < 0x20 or ord(c) == 0x7f})
    if bad or collection in (".", "..") or len(collection.encode("utf-8", "surrogatepass")) > MAX_COLLECTION_BYTES:
        why = (f"it contains {', '.join(repr(c) for c in bad)}" if bad else
               f"it is {collection!r}" if collection in (".", "..") else
               f"it is {len(collection.encode('utf-8', 'surrogatepass'))} bytes long (at most {MAX_COLLECTION_BYTES})")
        raise ConfigError(
            f"collection {collection[:80]!r} cannot be used: {why}. A collection is a folder of the index "
            "(and a name on a Qdrant server): use letters, digits, '-', '_' or '.', e.g. 'drag_knee'."
        )
    return collection


def _collection_name(name: str, value: Any) -> str:
    return check_collection_name(value)


@settings_class
class StoreConfig(Settings):
    """How the index talks to Qdrant; *where* it lives is ``DragKneeIndex``'s first argument.

    The API key, and credentials written inside a URL (``user:KEY@`` or ``?api_key=KEY``), are never
    shown in reprs or logs.
    """

    collection: str = setting("drag_knee", kind=str, check=_collection_name,
                              doc="The Qdrant collection (one index per collection); a name every engine can "
                                  "hold (no '/', '\\', ':', '*', '?', '\"', '<', '>', '|', controls; at most 200 bytes).")
    engine: Literal["edge", "local", "server", "auto"] = setting(
        "auto", kind="choice", choices=("edge", "local", "server", "auto"),
        doc="'auto': Qdrant Edge (in process) for a folder or ':memory:', a server for a URL; 'local': "
            "qdrant-client local mode for a folder or ':memory:'; 'edge' / 'server' to insist.")
    api_key: Optional[str] = setting(
        None, kind="any", optional=True, check=_optional_text, repr=False,
        doc="A Qdrant server's API key (None: the environment variable QDRANT_API_KEY, for a URL).")
    timeout: float = setting(
        10.0, kind=float, low=0.0, low_open=True, high=3600.0,
        doc="Seconds a server has to answer a request (connecting included) before the call fails with a "
            "StoreError naming the cause.")
    upsert_batch_size: int = setting(256, kind=int, low=1, doc="Points written per upsert request.")
    async_client: Any = setting(
        None, kind="any", optional=True, repr=False,
        doc="Your own qdrant_client.AsyncQdrantClient for asearch(), beside a QdrantClient given as the location "
            "(never closed by the index).")

    def __hash__(self) -> int:
        return hash((self.collection, self.engine, self.timeout, self.upsert_batch_size))
