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

import re
from dataclasses import fields
from typing import Any, Dict, Literal, Optional, Sequence, Tuple, Union

from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.model._languages import BM25_LANGUAGES, check_bm25_language
from drag_knee_retriever.model._settings import MAX_SETTING, Settings, setting, settings_class
from drag_knee_retriever.model._search_config import (  # noqa: F401 - re-exported: the search settings live there
    FOCUS_METHODS, MIN_SIDE_LIMIT, SEARCH_METHODS, SEARCH_OPTIONS, TIE_MARGIN, FocusConfig, FocusScores, FusionConfig,
    GlobalScope, ResultOrder, SearchConfig, SearchMethod, SearchOptions, WalkOptions,
)


__all__ = [
    "BuildConfig", "EmbeddingConfig", "EncoderRuntime", "FocusConfig", "FusionConfig", "LeafConfig",
    "MAX_SETTING", "MIN_SIDE_LIMIT", "SEARCH_METHODS", "SEARCH_OPTIONS", "SearchConfig", "SearchOptions",
    "SectionConfig", "StoreConfig", "SummaryConfig", "TIE_MARGIN", "VectorConfig", "WalkOptions",
]

InnerVectorSource = Literal["summary", "centroid", "both"]
BM25Language = Literal["english", "russian"]
LeafTextSource = Literal["own", "description", "own+description"]
#: What a leaf's indexed text may carry in front of it (VectorConfig.context).
LEAF_CONTEXT_PARTS: Tuple[str, ...] = ("title", "section", "path", "page")
SparseTextSource = Literal["auto", "text+keywords", "keywords", "text"]
InnerSparseSource = Literal["span", "description"]
DEFAULT_DENSE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_BM25_LANGUAGE = "english"

# -- build ---------------------------------------------------------------------------------------


@settings_class
class LeafConfig(Settings):
    """How text is cut into leaves (pages are never merged: a page is what a user cites)."""

    max_chars: int = setting(default=2000, kind=int, low=50, doc="Paragraphs longer than this are split.")
    min_chars: int = setting(default=200, kind=int, low=0,
                             doc="Paragraphs shorter than this are merged with the next (must be < max_chars).")
    passage_words: Optional[int] = setting(
        default=120, kind=int, low=20, optional=True,
        doc="A long page becomes a page node whose leaves are passages of about this many words (consecutive "
            "sentences or lines): the dense side reads the whole page, not only the model's first window, and a "
            "search can return the passage that answers; citations keep the page (p.37 ¶2). None: a page is "
            "always one leaf.")
    split_pages_over: Optional[int] = setting(
        default=200, kind=int, low=1, optional=True,
        doc="Split only pages longer than this many words (about the 256 word pieces all-MiniLM-L6-v2 was tuned "
            "to read). None: every page longer than passage_words. Both chosen by measurement.")

    def _check(self) -> None:
        if not self.min_chars < self.max_chars:
            raise ConfigError(f"LeafConfig.min_chars must be an integer in [0, max_chars), got {self.min_chars!r}.")


@settings_class
class SectionConfig(Settings):
    """Where a document's sections (the tree's inner nodes above the leaves) come from."""

    markdown: bool = setting(default=True, kind=bool, doc="Markdown headings of a text document become sections.")
    outline: bool = setting(
        default=False, kind=bool,
        doc="A document's outline (PDF bookmarks) becomes its sections, pages grouped by branching inside each, "
            "and every page is indexed with its section title. Off: not yet measured better.")
    headings: bool = setting(
        default=False, kind=bool,
        doc="A document without an outline gets sections from headings found in its text (numbered '3.2 Results', "
            "'PART II' / 'Item 7.', Markdown, short title-like lines); tables of contents and running headers open "
            "none (drag_knee_retriever.build._headings).")
    statements: bool = setting(
        default=True, kind=bool,
        doc="A page of a financial report's primary statement (balance sheet, income statement, cash flows, equity, "
            "comprehensive income: its heading atop a page of figures) is indexed with the statement's heading and "
            "its common names in front, so a question's 'income statement' reaches 'Consolidated Statements of "
            "Operations' (drag_knee_retriever.build._statements). Other pages are unchanged.")


@settings_class
class SummaryConfig(Settings):
    """The extractive (LLM-free) summariser's output size; an LLM summariser's fallback uses it too."""

    sentences: int = setting(default=3, kind=int, low=1, doc="Central sentences in an inner node's summary.")
    max_chars: int = setting(default=600, kind=int, low=50, doc="Longest summary of an inner node.")
    keywords: int = setting(default=8, kind=int, low=0, doc="Distinctive keywords kept per node (0: none).")


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
        default="own", kind="choice", choices=("own", "description", "own+description"),
        doc="A leaf's dense text: its own text, the summariser's description of it (an LLM summariser's page "
            "description), or both joined.")
    inner_dense: InnerVectorSource = setting(
        default="both", kind="choice", choices=("summary", "centroid", "both"),
        doc="An inner node's dense vector: its embedded summary, the normalised centroid of its children's vectors "
            "(no encoding cost), or the mean of both.")
    sparse: SparseTextSource = setting(
        default="auto", kind="choice", choices=("auto", "text+keywords", "keywords", "text"),
        doc="Every node's BM25 text: its text plus its keywords (LLM keywords add synonyms), the keywords alone, or "
            "the text alone. 'auto': text + keywords with an LLM summariser, the text alone with the extractive one "
            "(whose keywords are words of the text already).")
    inner_sparse: InnerSparseSource = setting(
        default="span", kind="choice", choices=("span", "description"),
        doc="An inner node's BM25 text: 'span', the text of every leaf beneath it (plus keywords: a parent wins "
            "where the query's terms spread over its children), or 'description', its summary as sparse says.")
    context: Sequence[str] = setting(
        default=("section",), kind="any", check=_context_parts,
        doc="What a leaf's indexed text carries in front of it, in this order: 'title' (metadata['title'], else the "
            "file name), 'section' (the innermost heading) or 'path' (every heading above it), 'page'.")
    context_metadata: Sequence[str] = setting(
        default=(), kind="any", check=_context_parts,
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


#: BuildConfig's flat fields of the ungrouped settings, in their order (document fingerprints keep this form).
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


#: BuildConfig's flat spellings no README or docs page taught (only the fingerprint keeps their names):
#: dropped before the first tagged release; the taught ones stay until settings.REMOVED_IN.
_UNTAUGHT_BUILD = ("summary_sentences", "summary_max_chars", "keywords", "use_markdown_sections", "inner_sparse")


@settings_class(moved={old: (path[0], path[1], None) for old, path in _FLAT_BUILD if path and old not in _UNTAUGHT_BUILD})
class BuildConfig(Settings):
    """How documents become trees: leaves, sections, summaries, and what the vectors encode."""

    branching: int = setting(default=3, kind=int, low=2, doc="Children per parent when grouping consecutive siblings.")
    leaves: LeafConfig = setting(default=LeafConfig(), kind=LeafConfig, doc="How text is cut into leaves (see LeafConfig).")
    sections: SectionConfig = setting(default=SectionConfig(), kind=SectionConfig,
                                      doc="Where sections come from (see SectionConfig).")
    summary: SummaryConfig = setting(default=SummaryConfig(), kind=SummaryConfig,
                                     doc="The extractive summary's size (see SummaryConfig).")
    vectors: VectorConfig = setting(default=VectorConfig(), kind=VectorConfig,
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

    batch_size: int = setting(default=4, kind=int, low=1, doc="Texts per encoder call at most.")
    max_batch_chars: int = setting(default=8_000, kind=int, low=100, doc="Characters per encoder call at most (bounds memory).")
    threads: Optional[int] = setting(default=None, kind=int, low=1, optional=True,
                                     doc="onnxruntime intra-op threads per session (None: onnxruntime's choice).")
    providers: Union[str, Sequence[str], None] = setting(
        default=None, kind="any", optional=True, check=_providers,
        doc="onnxruntime execution providers, e.g. ('CUDAExecutionProvider', 'CPUExecutionProvider').")
    parallel: Optional[int] = setting(
        default=None, kind=int, low=1, high=64, optional=True,
        hint="encoder sessions working side by side, e.g. one per core",
        doc="This many onnxruntime sessions in this process (threads each, 1 if unset) share length-sorted batches "
            "out to as many threads; unlike fastembed's parallel= worker processes, a custom model's registration "
            "and max_input_tokens reach every session. None: one session (docs: Scale and tuning).")


# The flat spellings the README taught (threads=, providers=, parallel=); batch_size= and
# max_batch_chars= it never taught were dropped before the first tagged release.
_EMBEDDING_MOVED: Dict[str, Tuple[str, Optional[str], None]] = {name: ("runtime", name, None)
                                                                for name in ("threads", "providers", "parallel")}
# The encoder's input limit was EmbeddingConfig.max_tokens, the name SearchConfig's budget now has.
_EMBEDDING_MOVED["max_tokens"] = ("max_input_tokens", None, None)


@settings_class(moved=_EMBEDDING_MOVED)
class EmbeddingConfig(Settings):
    """Which dense model encodes the nodes (a fastembed model, or your own), and the BM25 language.

    ``model_name`` is any fastembed dense model; ``model_path`` a local fastembed-ready folder (see
    :mod:`drag_knee_retriever.embeddings` for the resolution order). A dense model of your own goes in
    ``dense`` (or straight into ``DragKneeIndex(embedding=...)``); the fastembed settings then stay unset.
    """

    model_name: str = setting(default=DEFAULT_DENSE_MODEL, kind=str, doc="A fastembed dense model name.")
    model_path: Optional[str] = setting(
        default=None, kind="any", optional=True, check=lambda name, v: None if v is None else str(v),
        doc="A local fastembed-ready folder (model.onnx + tokenizer files) for model_name.")
    dense: Any = setting(
        default=None, kind="any", optional=True,
        doc="Your own dense model instead of fastembed's: LangChain Embeddings, a LlamaIndex embedding, a "
            "function texts -> vectors, or a DenseEmbedder.")
    language: Optional[str] = setting(
        default=None, kind="any", optional=True, check=check_bm25_language,
        doc=f"The BM25 stemmer and stop words: {' or '.join(repr(n) for n in BM25_LANGUAGES)} (the package's one "
            "language vocabulary: lower-case English names). None: an existing collection's own language, else "
            "'english'; a language given that differs from the collection's is refused (ModelMismatchError).")
    query_prefix: Optional[str] = setting(
        default=None, kind="any", optional=True, check=_optional_text,
        doc="Text put in front of queries (e5: 'query: '); None: the model's own convention.")
    passage_prefix: Optional[str] = setting(
        default=None, kind="any", optional=True, check=_optional_text,
        doc="Text put in front of passages (e5: 'passage: '); None: the model's own convention.")
    pooling: Literal["mean", "cls"] = setting(
        default="mean", kind="choice", choices=("mean", "cls"),
        doc="For a custom ONNX folder fastembed does not list: how token vectors are pooled.")
    max_input_tokens: Optional[int] = setting(
        default=None, kind=int, low=16, optional=True,
        doc="Word pieces the dense model reads per text (the rest is cut off); None keeps the model's own limit "
            "(512 for MiniLM in fastembed). 256 ingests ~18% faster on long paragraphs but lost 1 of 133 COVID-QA "
            "questions (docs: Scale and tuning). Was max_tokens.")
    token_counter: Any = setting(
        default=None, kind="any", optional=True, repr=False,
        doc="What counts SearchConfig.max_tokens: a tokenizers.Tokenizer, a Hugging Face tokenizer or a tiktoken "
            "encoding (anything with encode(text)), or a function text -> number of tokens. None: the fastembed "
            "model's own tokenizer; with your own dense model, the bundled all-MiniLM-L6-v2 word-piece tokenizer "
            "(an approximation of your model's: give yours).")
    cache_dir: Optional[str] = setting(
        default=None, kind="any", optional=True, check=_optional_text,
        doc="Where fastembed keeps downloaded models (fastembed's default: a temp folder).")
    runtime: EncoderRuntime = setting(default=EncoderRuntime(), kind=EncoderRuntime,
                                      doc="Speed and memory of encoding (see EncoderRuntime).")

    def _check(self) -> None:
        if self.dense is not None:
            defaults = {f.name: f.default for f in fields(self)}
            changed = [n for n in ("model_name", "model_path", "pooling", "max_input_tokens", "cache_dir")
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

    collection: str = setting(default="drag_knee", kind=str, check=_collection_name,
                              doc="The Qdrant collection (one index per collection); a name every engine can "
                                  "hold (no '/', '\\', ':', '*', '?', '\"', '<', '>', '|', controls; at most 200 bytes).")
    engine: Literal["edge", "local", "server", "auto"] = setting(
        default="auto", kind="choice", choices=("edge", "local", "server", "auto"),
        doc="'auto': Qdrant Edge (in process) for a folder or ':memory:', a server for a URL; 'local': "
            "qdrant-client local mode for a folder or ':memory:'; 'edge' / 'server' to insist.")
    api_key: Optional[str] = setting(
        default=None, kind="any", optional=True, check=_optional_text, repr=False,
        doc="A Qdrant server's API key (None: the environment variable QDRANT_API_KEY, for a URL).")
    timeout: float = setting(
        default=10.0, kind=float, low=0.0, low_open=True, high=3600.0,
        doc="Seconds a server has to answer a request (connecting included) before the call fails with a "
            "StoreError naming the cause.")
    upsert_batch_size: int = setting(default=256, kind=int, low=1, doc="Points written per upsert request.")
    async_client: Any = setting(
        default=None, kind="any", optional=True, repr=False,
        doc="Your own qdrant_client.AsyncQdrantClient for asearch(), beside a QdrantClient given as the location "
            "(never closed by the index).")

    def __hash__(self) -> int:
        return hash((self.collection, self.engine, self.timeout, self.upsert_batch_size))
