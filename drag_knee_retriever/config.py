"""Frozen, validated settings. Validation happens when a config is built, never per query."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Literal, Optional, Sequence, Tuple

from .errors import ConfigError, InvalidSettingError

SearchMethod = Literal["fixed", "knee", "sensitive_knee", "branch"]
SEARCH_METHODS: Tuple[str, ...] = ("fixed", "knee", "sensitive_knee", "branch")
ResultOrder = Literal["score", "document"]
InnerVectorSource = Literal["summary", "centroid", "both"]
BM25Language = Literal["english", "russian"]
LeafTextSource = Literal["own", "description", "own+description"]
#: What a leaf's indexed text may carry in front of it (BuildConfig.leaf_context).
LEAF_CONTEXT_PARTS: Tuple[str, ...] = ("title", "section", "path", "page")
SparseTextSource = Literal["auto", "text+keywords", "keywords", "text"]
InnerSparseSource = Literal["span", "description"]
FocusScores = Literal["rrf", "magnitude"]
DEFAULT_DENSE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: The largest count or constant a search setting may take: the engines take 32-bit (Edge: Rust
#: usize / u32) values, and 2**70 raised OverflowError inside Qdrant Edge. A billion is accepted.
MAX_SETTING = 2**31 - 1


def _check_count(name: str, value: object, low: int = 1, high: int = MAX_SETTING, extra: str = "") -> None:
    """Raise ConfigError unless ``value`` is an int (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{name} must be an integer >= {low} (at most {high:,}){extra}, got {value!r}.")


def _check_weight_pair(pair: object, position: int) -> Tuple[float, float]:
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise ConfigError(
            f"fusion_weights[{position}] is {pair!r}; give a (dense, sparse) pair such as (0.5, 0.5)."
        )
    dense, sparse = (float(pair[0]), float(pair[1]))
    for value in (dense, sparse):
        if not math.isfinite(value) or value < 0:
            raise ConfigError(
                f"fusion_weights[{position}] = {pair!r} has a negative or non-finite weight; "
                "weights must be finite and >= 0."
            )
    if dense == 0 and sparse == 0:
        raise ConfigError(
            f"fusion_weights[{position}] = {pair!r} switches both rankings off; "
            "at least one weight must be above 0."
        )
    return dense, sparse


@dataclass(frozen=True)
class SearchConfig:
    """How a query walks the trees.

    - ``method``: ``"fixed"`` (beam of ``beam_width``), ``"knee"`` (every ranked list cut at its
      knee), ``"sensitive_knee"`` (knee with ``sensitivity``), ``"branch"`` (each parent against its
      own children).
    - ``rrf_k``: Reciprocal Rank Fusion constant (>= 1). Qdrant fuses in the engine: a side with
      weight ``w`` adds ``1 / ((rank + 1) / w + rrf_k - 1)`` with rank counted from 0, which is
      ``1 / (rrf_k + rank)`` at ``w = 1`` (Qdrant's convention; LangChain's EnsembleRetriever uses
      ``1 / (60 + rank)`` with rank from 1). A side with weight 0 adds nothing.
    - ``fusion_weights``: optional per-level ``(dense, sparse)`` weights, level 0 = roots; the last
      pair is reused for deeper levels. ``None`` weighs both sides equally everywhere.
    - ``order``: results by ``"score"`` or by ``"document"`` position.
    - ``explain``: also record each candidate's dense and BM25 rank in the trace (same round
      trips; the fused ranking is then computed from the two sides). Off by default: the trace
      always has the fused scores, the knee and every kept / suppressed / cut decision; the
      per-side ranks are a diagnostic that costs about 10% of a search (``drag-knee search --trace``
      and the demo switch it on).
    - ``focus_pool``: the knee methods end with a *focus* step (one more round trip): the leaves
      under the nodes the walk chose are ranked together, the best ``focus_pool`` of them are cut
      at their knee, and those leaves are the result. ``None`` skips it and returns the walk's
      nodes as they are (an inner node then always brings its whole span). ``fixed`` and
      ``branch`` never focus.
    - ``region_sensitivity``: with a focus step, the walk's own cuts use this sensitivity (or
      ``sensitivity`` if smaller): the focus cuts again at the leaves, so the walk keeps more
      regions than a walk that has the last word (measured: ``benchmarks/RESULTS.md``).
    - ``focus_global``: with a focus step, also rank this many leaves of the whole (filtered)
      collection in the same round trip and fuse both lists by reciprocal rank: a leaf under the
      walk's regions that the global ranking also likes wins, and a strong leaf whose region the
      walk cut stays a candidate. ``None``: the walk's regions alone.
    - ``merge_ratio``: a node the walk chose is returned whole (its whole span) when more than
      this share of its leaves survive the focus cut: the evidence is spread over it, and the
      model reads the passage in one piece. ``None``: always return leaves.
    - ``max_results``: a cap on the number of results (the frameworks' ``k``); the method still
      decides how many up to the cap, the best ones by score are kept. ``None``: no cap.
    - ``min_score``: drop results whose fused score is below it (LangChain's ``score_threshold``;
      scores follow the RRF convention above, e.g. at most ``2 / rrf_k`` with both sides at rank 0;
      with ``focus_scores="magnitude"`` the leaves' scores are magnitudes, see below).
    - ``focus_scores``: how the focus step scores its leaves before the knee. ``"rrf"``: reciprocal
      ranks (rank only: the knee then sees the shape of 1/rank, whatever the evidence).
      ``"magnitude"``: each candidate's dense cosine and BM25 score (the store's ``with_scores``, same
      round trip), z-scored over the candidates and summed, plus ``sibling_weight`` times the mean of
      that sum over the candidates under the same parent (the parent's evidence, read from its
      leaves: no extra round trip). The knee then cuts where the evidence falls, and a result's score
      is that sum. Measured in benchmarks/RESULTS.md ("## cut: ...").
    - ``sibling_weight``: see ``focus_scores`` (>= 0; 0 is the leaf's own evidence only).
    - ``identity_weight``: how much a document's *identity* (its title or file name and the
      metadata that names it, matched against the query's words: :mod:`~drag_knee_retriever.identity`)
      adds to its root's fused score, a document the query names fully (a name only it holds, or
      its company and year) adding the full weight; the roots of named documents join the roots
      ranking. 0 switches it off.
    - ``identity_focus_weight``: with the magnitude focus, each leaf's score gains this weight x
      the z-score of its document's identity match over the pool (a leaf inherits its document's
      match). 0 switches it off.
    - ``root_focus_weight``: with the magnitude focus, each leaf's score gains this weight x the
      z-score of its document root's score in the walk's roots ranking (text and identity: the
      document's evidence as a whole). 0 switches it off.
    - ``identity_keys``: the metadata keys that name a document, e.g. ``("company", "year")``;
      ``None``: the title / file-name keys and every metadata value that is a short text or a year
      (:func:`~drag_knee_retriever.identity.document_identity`).
    - ``near_best`` (magnitude focus): the focus cut also keeps every leaf whose focus score is
      within this much of the best leaf's (the scores are sums of z-scores, so 1.0 is about half a
      standard deviation of the pool), up to ``near_best_limit`` leaves: where nothing stands out,
      the knee's position among near-equal scores is arbitrary and a reader needs them all. A knee
      that already keeps more is kept. ``None``: the knee alone.
    - ``standout`` (magnitude focus): a best leaf whose focus score is ahead of the second's by more
      than this comes back alone (it is the answer; the knee would add its runner-up). ``None``: never.
      Both chosen by replaying cuts over every dataset's focus pools (benchmarks/RESULTS.md, "budget").
    - ``max_tokens``: a word budget for the results (per call: ``search(q, max_tokens=1500)``).
      The knee methods then rank their focus pool past the knee and fill the budget with the best
      evidence in order: a leaf that no longer fits is skipped for a later, shorter one, and a page
      (or a region the walk chose) more than ``merge_ratio`` of whose leaves are chosen comes back
      whole when it fits, without repeating a passage it holds. The other methods keep their walk's
      results that fit. "Tokens" are words (whitespace-separated), the unit every figure of this
      project counts; an LLM reads about 1.3 tokens a word of English. When even the best leaf is
      longer than the budget it comes back cut to its first ``max_tokens`` words. ``None``: no budget
      (the method's cut decides).
    """

    method: SearchMethod = "knee"
    beam_width: int = 3
    max_roots: int = 20
    sensitivity: float = 0.85
    rrf_k: int = 2
    fusion_weights: Optional[Tuple[Tuple[float, float], ...]] = None
    order: ResultOrder = "score"
    max_depth: int = 64
    explain: bool = False
    focus_pool: Optional[int] = 10
    region_sensitivity: float = 0.85
    merge_ratio: Optional[float] = 0.5
    focus_global: Optional[int] = 50
    max_results: Optional[int] = None
    min_score: Optional[float] = None
    # Focus on scores with magnitude (issue 14, items 5-6; branch cut): added at the end.
    focus_scores: FocusScores = "magnitude"
    sibling_weight: float = 0.25
    # The document's identity as evidence (issue 24, item 1): added at the end.
    identity_weight: float = 0.0
    identity_focus_weight: float = 0.0
    identity_keys: Optional[Tuple[str, ...]] = None
    root_focus_weight: float = 0.0
    # A word budget for the results, and the cut's widening and narrowing from the scores' own
    # scale (issue 24, item 3; branch budget): added at the end.
    max_tokens: Optional[int] = None
    near_best: Optional[float] = 1.0
    near_best_limit: int = 20
    standout: Optional[float] = 4.0

    def __post_init__(self) -> None:
        for name in ("near_best", "standout"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"{name} must be a positive number (focus-score units, e.g. "
                                  f"{1.0 if name == 'near_best' else 4.0}) or None to switch it off, got {value!r}.")
            object.__setattr__(self, name, float(value))
        _check_count("near_best_limit", self.near_best_limit, extra=" (leaves the near-best widening may keep)")
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int)
                                            or not 1 <= self.max_tokens <= MAX_SETTING):
            raise ConfigError(f"max_tokens (the results' word budget, e.g. 1500) must be an integer from 1 to "
                              f"{MAX_SETTING:,}, or None for no budget; got {self.max_tokens!r}.")
        for name in ("identity_weight", "identity_focus_weight", "root_focus_weight"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ConfigError(f"{name} must be a finite number >= 0 (0 switches it off), got {value!r}.")
            object.__setattr__(self, name, float(value))
        if self.identity_keys is not None:
            keys = (self.identity_keys,) if isinstance(self.identity_keys, str) else self.identity_keys
            if not isinstance(keys, (tuple, list)) or not all(isinstance(k, str) and k.strip() for k in keys):
                raise ConfigError(f"identity_keys must be metadata key names, e.g. ('company', 'year'), or None, "
                                  f"got {self.identity_keys!r}.")
            object.__setattr__(self, "identity_keys", tuple(k.strip() for k in keys))
        if self.focus_scores not in ("rrf", "magnitude"):
            raise ConfigError(f"focus_scores must be 'rrf' or 'magnitude', got {self.focus_scores!r}.")
        if (isinstance(self.sibling_weight, bool) or not isinstance(self.sibling_weight, (int, float))
                or not math.isfinite(self.sibling_weight) or self.sibling_weight < 0):
            raise ConfigError(f"sibling_weight must be a finite number >= 0, got {self.sibling_weight!r}.")
        object.__setattr__(self, "sibling_weight", float(self.sibling_weight))
        if self.focus_global is not None and (
            isinstance(self.focus_global, bool) or not isinstance(self.focus_global, int) or self.focus_global < 1
        ):
            raise ConfigError(
                f"focus_global must be an integer >= 1 (global leaves fused into the focus step) or None, "
                f"got {self.focus_global!r}."
            )
        if self.max_results is not None and (
            isinstance(self.max_results, bool) or not isinstance(self.max_results, int) or self.max_results < 1
        ):
            raise ConfigError(f"max_results (k) must be an integer >= 1 or None, got {self.max_results!r}.")
        if self.min_score is not None:
            if isinstance(self.min_score, bool) or not isinstance(self.min_score, (int, float)) or not math.isfinite(self.min_score):
                raise ConfigError(f"min_score (score_threshold) must be a finite number or None, got {self.min_score!r}.")
            object.__setattr__(self, "min_score", float(self.min_score))
        if self.method not in SEARCH_METHODS:
            raise ConfigError(
                f"Unknown search method {self.method!r}; use one of {', '.join(SEARCH_METHODS)}."
            )
        _check_count("beam_width", self.beam_width)
        _check_count("max_roots", self.max_roots)
        if (
            isinstance(self.sensitivity, bool)
            or not isinstance(self.sensitivity, (int, float))
            or not (0.0 < float(self.sensitivity) <= 1.0)
        ):
            raise ConfigError(
                f"sensitivity must be in (0, 1] (1.0 is the plain knee, smaller keeps more), "
                f"got {self.sensitivity!r}."
            )
        _check_count("rrf_k", self.rrf_k)
        if self.order not in ("score", "document"):
            raise ConfigError(f"order must be 'score' or 'document', got {self.order!r}.")
        _check_count("max_depth", self.max_depth)
        if self.focus_pool is not None:
            _check_count("focus_pool", self.focus_pool,
                         extra=" (leaves ranked in the focus step) or None to skip the focus step")
        for name in ("region_sensitivity", "merge_ratio"):
            value = getattr(self, name)
            if name == "merge_ratio" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0.0 < float(value) <= 1.0):
                raise ConfigError(
                    f"{name} must be in (0, 1]{' or None' if name == 'merge_ratio' else ''}, got {value!r}."
                )
            object.__setattr__(self, name, float(value))
        if self.fusion_weights is not None:
            if isinstance(self.fusion_weights, (str, bytes)) or not isinstance(
                self.fusion_weights, Sequence
            ) or len(self.fusion_weights) == 0:
                raise ConfigError(
                    "fusion_weights must be a non-empty list of (dense, sparse) pairs, e.g. "
                    "[(0.2, 0.8), (0.5, 0.5), (1.0, 0.0)], or None."
                )
            pairs = tuple(_check_weight_pair(p, i) for i, p in enumerate(self.fusion_weights))
            object.__setattr__(self, "fusion_weights", pairs)
        object.__setattr__(self, "sensitivity", float(self.sensitivity))

    @property
    def effective_sensitivity(self) -> float:
        """The sensitivity the knee uses: 1.0 for ``"knee"``, ``sensitivity`` otherwise."""
        return 1.0 if self.method == "knee" else self.sensitivity

    @property
    def focuses(self) -> bool:
        """Whether the walk ends with a focus step (knee methods with a ``focus_pool``)."""
        return self.focus_pool is not None and self.method in ("knee", "sensitive_knee")

    @property
    def walk_sensitivity(self) -> float:
        """The sensitivity of the walk's own knee cuts (roots and beam steps)."""
        if self.focuses:
            return min(self.region_sensitivity, self.effective_sensitivity)
        return self.effective_sensitivity

    def weights_for_level(self, level: int) -> Tuple[float, float]:
        """The (dense, sparse) weights of a tree level (0 = roots)."""
        if not self.fusion_weights:
            return (1.0, 1.0)
        return self.fusion_weights[min(level, len(self.fusion_weights) - 1)]

    def with_overrides(self, **overrides: object) -> "SearchConfig":
        """A copy with some fields replaced (validated again)."""
        clean = {k: v for k, v in overrides.items() if v is not None}
        if not clean:
            return self
        try:
            return replace(self, **clean)
        except ConfigError as exc:
            # A per-search setting is part of the query: an InvalidQueryError (and a ConfigError).
            raise InvalidSettingError(str(exc)) from None


@dataclass(frozen=True)
class BuildConfig:
    """How documents become trees.

    - ``branching``: children per parent when grouping consecutive siblings.
    - ``max_leaf_chars`` / ``min_leaf_chars``: paragraphs are split above and merged below these
      (pages are never merged or split: a page is what a user cites).
    - ``summary_sentences`` / ``summary_max_chars``: size of the extractive summary of inner nodes.
    - ``keywords``: distinctive keywords kept per node.
    - ``inner_vectors``: the dense vector of an inner node: the embedded summary, the normalised
      centroid of its children's vectors (no encoding cost), or the mean of both.
    - ``leaf_text``: what a leaf's dense vector encodes: its own text, the summariser's
      description of it (an LLM summariser's page description), or both joined.
    - ``sparse_text``: what every node's BM25 vector encodes: its text plus its keywords (the
      method's original choice: LLM-written keywords add synonyms and abbreviations), the keywords
      alone, or the text alone. ``"auto"`` (default) is text + keywords with an LLM summariser and
      the text alone with the extractive one, whose keywords are words of the text already (adding
      them only double-counts: measured, README "Speed").
    - ``inner_sparse``: an inner node's BM25 text: ``"span"``, the text of every leaf beneath it
      (plus its keywords), or ``"description"``, its summary as ``sparse_text`` says. With
      ``"span"`` BM25's length normalisation lets a specific child outrank its parent, and a parent
      wins only where the query's terms are spread over its children (measured: README, Quality).
    - ``passage_words`` (default 120): a long page becomes a *page node* whose leaves are its
      passages (consecutive sentences/lines of at most about this many words), so the dense side
      reads the whole page and not only the encoder's first window, and a search can return the
      passage that answers instead of the whole page; the page node's span text is the whole page
      and citations keep the page (``p.37 ¶2``). ``None``: a page is always one leaf.
    - ``split_pages_over`` (default 200): split only pages longer than this many words, about the
      256 word pieces the default model (all-MiniLM-L6-v2) was tuned to read (sentence-transformers
      truncates it there; fastembed reads up to 512); shorter pages stay one leaf. ``None``: every
      page longer than ``passage_words``. Both chosen by measurement on every dataset
      (benchmarks/RESULTS.md, "Passages by default").
    - ``use_outline``: a document with an ``outline`` (PDF bookmarks) gets its sections as the
      tree's inner nodes (pages grouped by ``branching`` inside each) and every page is indexed
      with its section title in front. Off by default: not yet measured better
      (benchmarks/RESULTS.md, "Long documents").
    - ``detect_headings``: a document without an outline gets sections from headings found in
      its text (numbered "3.2 Results", "PART II" / "Item 7.", Markdown, and short title-like
      lines where none of those is found), as :mod:`~drag_knee_retriever.headings` describes;
      tables of contents and running headers/footers open no section.
    - ``leaf_context``: what a leaf's indexed text (dense and BM25) carries in front of it, in
      this order: ``"title"`` (``metadata["title"]``, else the file name), ``"section"`` (the innermost
      heading, the default) or ``"path"`` (every heading above it, outer first), ``"page"``.
      The text returned (and counted in tokens) stays the leaf's own.
    - ``context_metadata``: document metadata keys whose values join the context, e.g.
      ``("company", "year")`` -> ``"company: ACME | year: 2023"``.
    """

    branching: int = 3
    max_leaf_chars: int = 2000
    min_leaf_chars: int = 200
    summary_sentences: int = 3
    summary_max_chars: int = 600
    keywords: int = 8
    inner_vectors: InnerVectorSource = "both"
    use_markdown_sections: bool = True
    leaf_text: LeafTextSource = "own"
    sparse_text: SparseTextSource = "auto"
    inner_sparse: InnerSparseSource = "span"
    passage_words: Optional[int] = 120
    split_pages_over: Optional[int] = 200
    use_outline: bool = False
    # Branch context (issue 14, items 3-4): headings found in the text as sections where there is
    # no outline, and each leaf's context path in its indexed text. Both opt-in until measured
    # better on every dataset (benchmarks/RESULTS.md, "context").
    detect_headings: bool = False
    leaf_context: Tuple[str, ...] = ("section",)
    context_metadata: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._check_context()
        if self.passage_words is not None and (
            isinstance(self.passage_words, bool) or not isinstance(self.passage_words, int) or self.passage_words < 20
        ):
            raise ConfigError(
                f"passage_words must be an integer >= 20 (words per passage of a long page) or None, "
                f"got {self.passage_words!r}."
            )
        if self.split_pages_over is not None and (
            isinstance(self.split_pages_over, bool) or not isinstance(self.split_pages_over, int)
            or self.split_pages_over < 1
        ):
            raise ConfigError(
                f"split_pages_over must be a positive integer (words) or None, got {self.split_pages_over!r}."
            )
        if isinstance(self.branching, bool) or not isinstance(self.branching, int) or self.branching < 2:
            raise ConfigError(f"branching must be an integer >= 2, got {self.branching!r}.")
        if not isinstance(self.max_leaf_chars, int) or self.max_leaf_chars < 50:
            raise ConfigError(f"max_leaf_chars must be an integer >= 50, got {self.max_leaf_chars!r}.")
        if not isinstance(self.min_leaf_chars, int) or not (0 <= self.min_leaf_chars < self.max_leaf_chars):
            raise ConfigError(
                f"min_leaf_chars must be an integer in [0, max_leaf_chars), got {self.min_leaf_chars!r}."
            )
        if not isinstance(self.summary_sentences, int) or self.summary_sentences < 1:
            raise ConfigError(f"summary_sentences must be >= 1, got {self.summary_sentences!r}.")
        if not isinstance(self.summary_max_chars, int) or self.summary_max_chars < 50:
            raise ConfigError(f"summary_max_chars must be >= 50, got {self.summary_max_chars!r}.")
        if not isinstance(self.keywords, int) or self.keywords < 0:
            raise ConfigError(f"keywords must be an integer >= 0, got {self.keywords!r}.")
        if self.leaf_text not in ("own", "description", "own+description"):
            raise ConfigError(
                f"leaf_text must be 'own', 'description' or 'own+description', got {self.leaf_text!r}."
            )
        if self.sparse_text not in ("auto", "text+keywords", "keywords", "text"):
            raise ConfigError(
                f"sparse_text must be 'auto', 'text+keywords', 'keywords' or 'text', got {self.sparse_text!r}."
            )
        if self.inner_sparse not in ("span", "description"):
            raise ConfigError(f"inner_sparse must be 'span' or 'description', got {self.inner_sparse!r}.")
        if self.inner_vectors not in ("summary", "centroid", "both"):
            raise ConfigError(
                f"inner_vectors must be 'summary', 'centroid' or 'both', got {self.inner_vectors!r}."
            )

    def _check_context(self) -> None:
        if not isinstance(self.detect_headings, bool):
            raise ConfigError(f"detect_headings must be True or False, got {self.detect_headings!r}.")
        for name in ("leaf_context", "context_metadata"):
            value = getattr(self, name)
            # "title+path+page" (as the eval's --build k=v,... gives it) is the tuple of its parts.
            parts = tuple(p.strip() for p in re.split(r"[+,]", value) if p.strip()) if isinstance(value, str) else value
            if not isinstance(parts, (tuple, list)) or not all(isinstance(p, str) and p.strip() for p in parts):
                raise ConfigError(f"{name} must be a tuple of non-empty strings, got {value!r}.")
            object.__setattr__(self, name, tuple(parts))
        unknown = [p for p in self.leaf_context if p not in LEAF_CONTEXT_PARTS]
        if unknown:
            raise ConfigError(
                f"leaf_context: unknown part(s) {', '.join(map(repr, unknown))}; use any of "
                f"{', '.join(LEAF_CONTEXT_PARTS)}, e.g. ('title', 'path', 'page'), or () for none."
            )
        if "section" in self.leaf_context and "path" in self.leaf_context:
            raise ConfigError("leaf_context: give 'section' (the innermost heading) or 'path' (every heading "
                              "above the leaf), not both.")

    @property
    def writes_context(self) -> bool:
        """Whether leaves get a context path beyond their section title (the default)."""
        return self.leaf_context != ("section",) or bool(self.context_metadata)


@dataclass(frozen=True)
class EmbeddingConfig:
    """Which encoders to use.

    ``model_name`` is any fastembed dense model; ``model_path`` a local fastembed-ready folder
    (see :mod:`drag_knee_retriever.embeddings` for the resolution order). ``language`` selects the
    BM25 stemmer and stop words. ``batch_size`` and ``max_batch_tokens`` bound the encoder's
    memory; ``threads``, ``providers`` (e.g. GPU) and ``cache_dir`` are passed to fastembed.
    ``query_prefix`` / ``passage_prefix`` override the model's own prefixes (e5: "query: ").
    These settings describe the fastembed model; a dense model of your own is passed as
    ``DragKneeIndex(embedding=...)`` instead (see :mod:`drag_knee_retriever.embeddings`).
    """

    model_name: str = DEFAULT_DENSE_MODEL
    model_path: Optional[str] = None
    language: BM25Language = "english"
    batch_size: int = 4
    max_batch_chars: int = 8_000
    threads: Optional[int] = None
    # onnxruntime execution providers, e.g. ("CUDAExecutionProvider", "CPUExecutionProvider").
    providers: Optional[Tuple[str, ...]] = None
    # Where fastembed keeps downloaded models (fastembed's own default: a temp folder).
    cache_dir: Optional[str] = None
    # Texts put in front of queries / passages (e5-style models: "query: " / "passage: ").
    # None: the model's own convention (e5 names get the e5 prefixes; others none).
    query_prefix: Optional[str] = None
    passage_prefix: Optional[str] = None
    # For a custom ONNX folder whose model fastembed does not list: how token vectors are pooled.
    pooling: Literal["mean", "cls"] = "mean"
    # Tokens the dense model reads per text; None keeps the model's own limit (512 for MiniLM in
    # fastembed). 256 (sentence-transformers' setting for all-MiniLM-L6-v2) ingests ~18% faster on
    # long paragraphs but measured 1 of 133 COVID-QA questions lost at flat top-5 (README, Speed).
    max_tokens: Optional[int] = None
    # encbudget: data-parallel passage encoding. This many onnxruntime sessions in this process
    # (``threads`` intra-op threads each, 1 if unset), length-sorted batches shared out to as many
    # threads (onnxruntime releases the GIL while it runs). In process, unlike fastembed's
    # ``parallel=`` worker processes: a custom model's registration and ``max_tokens`` reach every
    # session, and no pool is started per call. None: one session (measured: README, "Encoder budget").
    parallel: Optional[int] = None

    def __post_init__(self) -> None:
        if self.parallel is not None and (
            isinstance(self.parallel, bool) or not isinstance(self.parallel, int) or not 1 <= self.parallel <= 64
        ):
            raise ConfigError(
                f"parallel must be an integer in [1, 64] (encoder sessions working side by side, e.g. one per "
                f"core) or None for one session, got {self.parallel!r}."
            )
        if not isinstance(self.model_name, str) or not self.model_name.strip():
            raise ConfigError("model_name must be a non-empty fastembed model name.")
        if self.language not in ("english", "russian"):
            raise ConfigError(
                f"language must be 'english' or 'russian' (BM25 stemmer and stop words), "
                f"got {self.language!r}."
            )
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ConfigError(f"batch_size must be an integer >= 1, got {self.batch_size!r}.")
        if not isinstance(self.max_batch_chars, int) or self.max_batch_chars < 100:
            raise ConfigError(f"max_batch_chars must be >= 100, got {self.max_batch_chars!r}.")
        if self.max_tokens is not None and (not isinstance(self.max_tokens, int) or self.max_tokens < 16):
            raise ConfigError(f"max_tokens must be an integer >= 16 or None, got {self.max_tokens!r}.")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ConfigError(f"threads must be an integer >= 1 or None, got {self.threads!r}.")
        if self.providers is not None:
            providers = (self.providers,) if isinstance(self.providers, str) else tuple(self.providers)
            if not providers or not all(isinstance(p, str) and p for p in providers):
                raise ConfigError(
                    "providers must be onnxruntime provider names, e.g. "
                    f"('CUDAExecutionProvider', 'CPUExecutionProvider'), got {self.providers!r}."
                )
            object.__setattr__(self, "providers", providers)
        for name in ("query_prefix", "passage_prefix", "cache_dir"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"{name} must be a string or None, got {type(value).__name__}.")
        if self.pooling not in ("mean", "cls"):
            raise ConfigError(f"pooling must be 'mean' or 'cls', got {self.pooling!r}.")


@dataclass(frozen=True)
class StoreConfig:
    """Where the nodes live.

    ``engine``: ``"edge"`` (Qdrant Edge, in process; the embedded default), ``"local"``
    (qdrant-client local mode) or ``"server"`` (qdrant-client against ``url``). ``location`` is a
    folder path or ``":memory:"``. The API key, and credentials written inside ``url``
    (``user:KEY@`` or ``?api_key=KEY``), are never shown in reprs or logs. ``timeout``: seconds a
    server has to answer a request (connecting included) before the call fails with a
    :class:`~drag_knee_retriever.errors.StoreError` naming the cause.
    """

    location: Optional[str] = ":memory:"
    url: Optional[str] = field(default=None, repr=False)
    api_key: Optional[str] = field(default=None, repr=False)
    collection: str = "drag_knee"
    engine: Literal["edge", "local", "server", "auto"] = "auto"
    upsert_batch_size: int = 256
    timeout: float = 10.0

    def __post_init__(self) -> None:
        if not isinstance(self.collection, str) or not self.collection.strip():
            raise ConfigError("collection must be a non-empty string.")
        if self.engine not in ("edge", "local", "server", "auto"):
            raise ConfigError(
                f"engine must be 'edge', 'local', 'server' or 'auto', got {self.engine!r}."
            )
        if self.url is not None and self.engine in ("edge", "local"):
            raise ConfigError(
                f"engine={self.engine!r} is embedded but url={self.display_url!r} was given; "
                "drop url, or use engine='server'."
            )
        if self.upsert_batch_size < 1:
            raise ConfigError("upsert_batch_size must be >= 1.")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or not (
                0 < float(self.timeout) <= 3600):
            raise ConfigError(f"timeout must be a number of seconds in (0, 3600], got {self.timeout!r}.")

    @property
    def display_url(self) -> Optional[str]:
        """``url`` with any credentials in it masked (what messages and logs show)."""
        from .redact import redact_url

        return redact_url(self.url)

    def __repr__(self) -> str:
        return (f"StoreConfig(location={self.location!r}, url={self.display_url!r}, collection={self.collection!r}, "
                f"engine={self.engine!r}, upsert_batch_size={self.upsert_batch_size!r}, timeout={self.timeout!r})")

    @property
    def resolved_engine(self) -> str:
        """The engine that will actually serve this config."""
        if self.engine != "auto":
            return self.engine
        return "server" if self.url else "edge"
