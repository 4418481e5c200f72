"""Search settings: :class:`SearchConfig` (how a query walks the trees, and what comes back), with
:class:`FusionConfig` (how each candidate list is ranked) and :class:`FocusConfig` (the knee methods'
last step) nested; and the one list of the per-call search options (:class:`WalkOptions`,
:class:`SearchOptions`) that ``DragKneeIndex.search``, both retrievers and the CLI derive theirs from.

Re-exported by :mod:`drag_knee_retriever.config`, where the other settings live.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Literal, Optional, Sequence, Tuple, TypedDict, Union

from drag_knee_retriever.errors import ConfigError, InvalidSettingError
from drag_knee_retriever.model._settings import MAX_SETTING, Settings, off_when_none, setting, settings_class

SearchMethod = Literal["fixed", "knee", "sensitive_knee", "branch"]
SEARCH_METHODS: Tuple[str, ...] = ("fixed", "knee", "sensitive_knee", "branch")
#: The methods that end with a focus step (``SearchConfig.focus``).
FOCUS_METHODS: Tuple[str, ...] = ("knee", "sensitive_knee")
ResultOrder = Literal["score", "document"]
FocusScores = Literal["rrf", "magnitude"]
GlobalScope = Literal["roots", "collection"]
BudgetOrder = Literal["global", "documents", "pages", "spread"]

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
        default=2, kind=int, low=1, high=MAX_SETTING,
        doc="RRF constant. Qdrant fuses in the engine: a side with weight w adds 1 / ((rank + 1) / w + rrf_k - 1), "
            "rank from 0, which is 1 / (rrf_k + rank) at w = 1 (Qdrant's convention; LangChain's EnsembleRetriever "
            "uses 1 / (60 + rank) with rank from 1). A side with weight 0 adds nothing.")
    weights: Optional[Sequence[Tuple[float, float]]] = setting(
        default=None, kind="any", optional=True, check=_weight_schedule,
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
        default=10, kind=int, low=1, high=MAX_SETTING,
        doc="Leaves ranked in the focus step and cut at their knee (SearchConfig(focus=None) skips the step: the "
            "walk's nodes are returned as they are, an inner node with its whole span).")
    region_sensitivity: float = setting(
        default=0.85, kind=float, low=0.0, low_open=True, high=1.0,
        doc="Knee sensitivity of the walk's own cuts (roots and beam steps) when a focus step follows (or "
            "SearchConfig.sensitivity if smaller): the focus cuts again at the leaves, so the walk keeps more "
            "regions than a walk that has the last word.")
    global_leaves: Optional[int] = setting(
        default=50, kind=int, low=1, high=MAX_SETTING, optional=True,
        doc="Also rank this many leaves of the whole (filtered) collection in the same round trip and fuse them "
            "with the regions' leaves: a strong leaf whose region the walk cut stays a candidate. None: the "
            "walk's regions alone.")
    merge_ratio: Optional[float] = setting(
        default=0.5, kind=float, low=0.0, low_open=True, high=1.0, optional=True,
        doc="A region is returned whole (its whole span) when more than this share of its leaves survive the "
            "cut: the evidence is spread over it. None: always return leaves.")
    scores: FocusScores = setting(
        default="magnitude", kind="choice", choices=("rrf", "magnitude"),
        doc="How the focus step scores its leaves before the knee: 'magnitude' (each leaf's z-scored dense cosine "
            "plus z-scored BM25 score, plus sibling_weight x its siblings' mean; the knee cuts where the evidence "
            "falls, and a result's score is that sum) or 'rrf' (reciprocal ranks only).")
    sibling_weight: Optional[float] = setting(
        default=None, kind=float, low=0.0, only=("scores", ("magnitude",), 0.25,
                                         "scores='rrf' ranks by reciprocal rank alone."),
        doc="With scores='magnitude': the weight of the mean score of the leaves under the same parent (the "
            "parent's evidence, read from its leaves; 0 = the leaf's own evidence only).")
    # Scale: the global list from the ranked roots' documents.
    global_scope: GlobalScope = setting(
        default="roots", kind="choice", choices=("roots", "collection"),
        doc="Where global_leaves come from: 'roots' (the leaves of the global_docs best-ranked documents, ranked "
            "in the roots' round trip: a few thousand leaves at any index size) or 'collection' (every leaf of the "
            "filtered collection, a flat search of its own: ~0.5 s at 1M nodes). The same list when a filter leaves "
            "at most global_docs documents (benchmarks/RESULTS.md, \"scale\").")
    global_docs: int = setting(
        default=50, kind=int, low=1, high=MAX_SETTING,
        doc="With global_scope='roots': how many best-ranked documents' leaves the global list ranks.")
    # A budget spent on the best documents' best pages (opt-in until it wins on every set).
    budget_order: BudgetOrder = setting(
        default="global", kind="choice", choices=("global", "documents", "pages", "spread"),
        doc="With a budget (SearchConfig.max_tokens or max_words): what fills it after the focus cut's leaves. "
            "'global': the global leaf ranking; 'documents': the leaves of the documents the cut chose (at most "
            "budget_docs), ranked among themselves, then the global ranking; 'pages': the same documents' pages, "
            "each scored by all its passages, best page first, a page's passages together; 'spread': those pages' "
            "best passages first, then their other passages.")
    budget_docs: int = setting(
        default=2, kind=int, low=1, high=MAX_SETTING,
        doc="With budget_order other than 'global': how many of the cut's documents the budget reads first.")
    # A question that names a financial statement reads that statement's pages (search/_statement_route.py).
    statement_pages: Optional[int] = setting(
        default=2, kind=int, low=1, high=MAX_SETTING, optional=True,
        doc="A query that names a primary financial statement ('the balance sheet', 'the statement of cash flows', "
            "'the P&L') also returns the best passage of this many of that statement's best pages in its best "
            "document, first (the build marks a statement's pages: BuildConfig.sections.statements). None: off.")
    # The document's identity as evidence, and the cut's widening and narrowing from the scores' own
    # scale. These shape the magnitude focus (scores='magnitude'); the 'rrf' focus ignores them.
    identity_weight: float = setting(
        default=4.0, kind=float, low=0.0,
        doc="Each leaf's focus score gains this weight x the z-score over the pool of its document's identity "
            "match (the title or file name and the metadata that names it, against the query's words: "
            "drag_knee_retriever.search._identity): a leaf inherits its document's match. Counts only where the query "
            "names a document (SearchConfig.identity_coverage) and among leaves of several documents. 0: off "
            "(the default before 'filings5').")
    root_weight: float = setting(
        default=0.0, kind=float, low=0.0,
        doc="Each leaf's focus score gains this weight x the z-score of its document root's score in the walk's "
            "roots ranking (text and identity: the document's evidence as a whole). Experimental; 0: off.")
    near_best: Optional[float] = setting(
        default=1.0, kind=float, low=0.0, low_open=True, optional=True,
        doc="The cut also keeps every leaf whose focus score is within this much of the best leaf's (sums of "
            "z-scores: 1.0 is about half a standard deviation of the pool), up to near_best_limit: where nothing "
            "stands out the knee's place among near-equal scores is arbitrary and a reader needs them all. None: "
            "the knee alone. Chosen by replaying cuts over every dataset's focus pools.")
    near_best_limit: int = setting(
        default=20, kind=int, low=1, high=MAX_SETTING, doc="Leaves the near_best widening may keep at most.")
    standout: Optional[float] = setting(
        default=4.0, kind=float, low=0.0, low_open=True, optional=True,
        doc="A best leaf whose focus score is ahead of the second's by more than this comes back alone (it is "
            "the answer; the knee would add its runner-up). None: never.")


_DEFAULT_FOCUS = FocusConfig()
_DEFAULT_FUSION = FusionConfig()


# The flat spellings the README taught before the settings were grouped, kept until
# settings.REMOVED_IN; those it never taught (rrf_k=) were dropped before the first tagged release.
@settings_class(moved={
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
        default="knee", kind="choice", choices=SEARCH_METHODS,
        doc="'knee' (every ranked list cut at its knee, then the focus step), 'sensitive_knee' (the same with "
            "sensitivity), 'fixed' (a beam of beam_width, no focus), 'branch' (each parent against its own "
            "children, no focus).")
    max_roots: Optional[int] = setting(
        default=None, kind=int, low=1, high=MAX_SETTING,
        only=("method", ("knee", "sensitive_knee", "branch"), 20,
              "method='fixed' ranks beam_width roots; set beam_width."),
        doc="Roots (documents) ranked before the first knee cut.")
    beam_width: Optional[int] = setting(
        default=None, kind=int, low=1, high=MAX_SETTING,
        only=("method", ("fixed",), 3,
              "the knee methods choose the width at each list's knee (max_roots bounds the roots ranked)."),
        doc="Nodes kept per step by method='fixed' (roots included).")
    sensitivity: Optional[float] = setting(
        default=None, kind=float, low=0.0, low_open=True, high=1.0,
        only=("method", ("sensitive_knee", "branch"), 0.85,
              "method='knee' cuts at the plain knee (s = 1) and its walk at focus.region_sensitivity: set that, or "
              "use method='sensitive_knee'."),
        hint="1.0 is the plain knee, smaller keeps more",
        doc="Knee sensitivity s of method='sensitive_knee' and 'branch': a cut keeps up to the last point at least "
            "s times as far from the chord as the knee (1.0 is the plain knee; smaller keeps more).")
    max_depth: int = setting(
        default=64, kind=int, low=1, high=MAX_SETTING,
        doc="Levels the walk descends at most (a guard against malformed trees).")
    fusion: FusionConfig = setting(
        default=_DEFAULT_FUSION, kind=FusionConfig, doc="How each ranked list fuses dense and BM25 (see FusionConfig).")
    focus: Optional[FocusConfig] = setting(
        default=_DEFAULT_FOCUS, kind=FocusConfig, optional=True,
        doc="The focus step of 'knee' and 'sensitive_knee' (see FocusConfig); None returns the walk's nodes as "
            "they are. 'fixed' and 'branch' never focus.")
    order: ResultOrder = setting(
        default="score", kind="choice", choices=("score", "document"),
        doc="Results by 'score' or by 'document' position.")
    max_results: Optional[int] = setting(
        default=None, kind=int, low=1, high=MAX_SETTING, optional=True,
        doc="A cap on the number of results (the frameworks' k): the method still decides how many up to the cap; "
            "the best by score are kept. None: no cap.")
    min_score: Optional[float] = setting(
        default=None, kind=float, optional=True,
        doc="Drop results whose score is below it (LangChain's score_threshold). It reads the public score, "
            "the query's dense cosine with the node clipped to [0, 1], the same for every method.")
    explain: bool = setting(
        default=False, kind=bool,
        doc="Also record each candidate's dense and BM25 rank in the trace (same round trips, about 10% of a "
            "search). The trace always has the fused scores, the knee and every decision.")
    # The document's identity as evidence, and a budget.
    identity_weight: float = setting(
        default=2.0, kind=float, low=0.0,
        doc="How much a document's identity (its title or file name and the metadata that names it, matched "
            "against the query's words: drag_knee_retriever.search._identity) adds to its root's fused score; a "
            "document the query names fully (a name only it holds, or its company and year) adds the full "
            "weight, and the roots of named documents join the roots ranking. focus.identity_weight passes the "
            "match on to the leaves. 0 (with focus.identity_weight=0): off, the default before 'filings5' "
            "(benchmarks/RESULTS.md).")
    identity_coverage: str = setting(
        default="two_fields", kind="choice", choices=("terms", "fields", "two_fields"),
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
            "or a short form) names the family's latest document at half (IdentityIndex.coverage).")
    identity_keys: Union[str, Sequence[str], None] = setting(
        default=None, kind="names", optional=True,
        doc="The metadata keys that name a document, e.g. ('company', 'year'). None: the title / file-name keys "
            "and every metadata value that is a short text or a year (identity.document_identity).")
    max_tokens: Optional[int] = setting(
        default=None, kind=int, low=1, high=MAX_SETTING, optional=True, hint="the results' token budget, e.g. 2000",
        doc="A budget in model tokens for the results (per call: search(q, max_tokens=2000)), counted by the "
            "encoder's tokenizer (or EmbeddingConfig.token_counter). The knee methods rank their focus pool past "
            "the knee and fill the budget with the best evidence in order (a leaf that no longer fits is skipped "
            "for a later, shorter one; a page or region most of whose leaves are chosen comes back whole when it "
            "fits, without repeating a passage); the other methods keep the results that fit. None: the method's "
            "cut decides (or max_words).")
    max_words: Optional[int] = setting(
        default=None, kind=int, low=1, high=MAX_SETTING, optional=True, hint="the results' word budget, e.g. 1500",
        doc="The same budget in whitespace-separated words (what max_tokens counted before 0.1.0a1; the unit of "
            "benchmarks/RESULTS.md). Give max_tokens or max_words, not both.")

    def _check(self) -> None:
        if self.max_tokens is not None and self.max_words is not None:
            raise ConfigError(
                f"SearchConfig: max_tokens={self.max_tokens!r} (model tokens) and max_words={self.max_words!r} "
                "(words) are two units of one budget; give one of them."
            )
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
            # A budget given per call replaces the configured one in either unit.
            if "max_tokens" in clean and "max_words" not in clean:
                clean["max_words"] = None
            elif "max_words" in clean and "max_tokens" not in clean:
                clean["max_tokens"] = None
            return replace(self, **clean)
        except ConfigError as exc:
            # A per-search setting is part of the query: an InvalidQueryError (and a ConfigError).
            raise InvalidSettingError(str(exc)) from None

    @property
    def budget(self) -> Optional[int]:
        """The results' budget in its unit (``max_tokens`` or ``max_words``), None without one."""
        return self.max_tokens if self.max_tokens is not None else self.max_words



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
    max_tokens: Optional[int]  # a budget in model tokens for the results (SearchConfig.max_tokens)
    max_words: Optional[int]  # the same budget in words (SearchConfig.max_words)
    explain: Optional[bool]  # also record each candidate's dense and BM25 rank in the trace


class SearchOptions(WalkOptions, total=False):
    """``DragKneeIndex.search``'s per-call settings: the walk's, and what comes back (the retrievers spell
    the last two their frameworks' way: ``k`` / ``similarity_top_k`` and ``score_threshold``)."""

    max_results: Optional[int]
    min_score: Optional[float]


#: The names of :class:`SearchOptions` (for runtime checks; the TypedDict is what type checkers read).
SEARCH_OPTIONS: Tuple[str, ...] = tuple(SearchOptions.__annotations__)


def option_help(name: str) -> str:
    """The first sentence of a :class:`SearchConfig` setting's doc: the CLI's ``--help`` and the
    retrievers' field descriptions read it from the one declaration."""
    doc = " ".join(SearchConfig.__dataclass_fields__[name].metadata["rule"].doc.split())  # type: ignore[attr-defined]
    head, dot, _ = doc.partition(". ")
    return head + "." if dot else doc
