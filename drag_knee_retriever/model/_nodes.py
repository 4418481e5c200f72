"""Plain dataclasses: the input Document, tree nodes, an encoded query, scored results and the search trace.

How a node is stored (its payload) is :mod:`.point_schema`'s; its id, :mod:`.ids`'.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.errors import InvalidDocumentError


_INT64 = (-(2**63), 2**63 - 1)
_MAX_METADATA_DEPTH = 32
#: The most a document's metadata may hold, JSON-encoded (UTF-8 bytes): it is copied onto every node
#: of the document's tree (a page's ``page_metadata`` onto that page's nodes), so 4 MB on a document
#: of 300 nodes took an ingest from 344 to 1,521 MB of RSS. Loaders write well under 1 KB (this
#: library's ~190 B a file, LlamaIndex's SimpleDirectoryReader ~230 B); 64 KB leaves room for long
#: keyword lists and abstracts. Keys this library writes itself (``drag_*``: the adapters'
#: bookkeeping) and the OCR page list (kept on the document only, so a 10,000-page scan's list never
#: counts) are not counted.
MAX_METADATA_BYTES = 64 * 1024
_BOOKKEEPING = "drag_"
#: The tree fields a filter names directly (``{"level": 0}``: the roots); a metadata key of one of
#: these names could never be filtered on, so it is refused (store/filters.py reads this).
FILTER_FIELDS = {"doc_id": "the node's document", "level": "the node's depth in its tree",
                 "is_leaf": "leaves or inner nodes"}
#: A document's metadata key (and, after the builder, absent from its nodes): the 1-based page
#: numbers whose text came from OCR (re-exported by point_schema).
OCR_PAGES_KEY = "ocr_pages"
#: A document's (and its nodes') metadata key the adapters write: ``CHUNK_UNITS`` when its "pages"
#: are a text splitter's chunks (no page numbers), so its spans read ``chunk 7``, not ``p.7``.
UNITS_KEY = _BOOKKEEPING + "units"
CHUNK_UNITS = "chunks"
_STAMP = re.compile(r"\d+:\d+(\|[0-9a-f]+)?")


def check_unicode(value: str, what: str, error: type = InvalidDocumentError) -> None:
    """Refuse strings that are not valid Unicode (lone surrogates from lenient decoding)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(
            f"{what} holds {value[exc.start:exc.end]!r} at position {exc.start}: not valid Unicode "
            "(bytes decoded with errors='surrogateescape'?). Decode with errors='replace' or fix the encoding."
        ) from None


def _check_json_value(value: Any, path: str, depth: int = 0) -> None:
    """Walk a metadata value: what JSON and both engines keep unchanged, or an error naming the path."""
    if depth > _MAX_METADATA_DEPTH:
        raise InvalidDocumentError(f"{path} is nested deeper than {_MAX_METADATA_DEPTH} levels; flatten it.")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise InvalidDocumentError(f"{path} = {value} does not fit in int64 (the engines store 64-bit integers); store it as a string.")
        return
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise InvalidDocumentError(f"{path} = {value} cannot be stored as JSON (not a finite number); use None or a string.")
        return
    if isinstance(value, str):
        check_unicode(value, path)
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json_value(item, f"{path}[{i}]", depth + 1)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidDocumentError(f"{path} has the key {key!r} ({type(key).__name__}); use string keys.")
            check_unicode(key, f"{path} key")
            _check_json_value(item, f"{path}[{key!r}]", depth + 1)
        return
    raise InvalidDocumentError(
        f"{path} = {value!r:.80} ({type(value).__name__}) cannot be stored as JSON; "
        "convert it to str, int, float, bool, None, or lists/dicts of those."
    )


def _check_json_metadata(metadata: Mapping[str, Any], where: str) -> Dict[str, Any]:
    if not isinstance(metadata, Mapping):
        raise InvalidDocumentError(f"{where}: metadata must be a mapping of str to JSON values, got {type(metadata).__name__}.")
    clean: Dict[str, Any] = {}
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise InvalidDocumentError(f"{where}: metadata key {key!r} is not a string; use string keys.")
        check_unicode(key, f"{where}: metadata key")
        _check_json_value(value, f"{where}: metadata[{key!r}]")
        _check_own_key(key, value, where)
        clean[key] = value
    copied = {k: v for k, v in clean.items() if not k.startswith(_BOOKKEEPING) and k != OCR_PAGES_KEY}
    size = len(json.dumps(copied, ensure_ascii=False).encode("utf-8")) if copied else 0
    if size > MAX_METADATA_BYTES:
        raise InvalidDocumentError(
            f"{where}: its metadata is {size:,} bytes as JSON, over the limit of {MAX_METADATA_BYTES:,} (it is "
            "copied onto every node of the document's tree); keep large values elsewhere and store a reference "
            "to them (a path, a URL, an id).")
    return clean


def _check_own_key(key: str, value: Any, where: str) -> None:
    """Refuse a metadata key a filter or the index reads with a meaning of its own, unless it has that meaning."""
    if key in FILTER_FIELDS:
        raise InvalidDocumentError(
            f"{where}: metadata key {key!r} is a tree field in filters ({{{key!r}: ...}} selects "
            f"{FILTER_FIELDS[key]}), so no filter could reach this value; rename the key (e.g. 'source_{key}').")
    if key == OCR_PAGES_KEY and (not isinstance(value, (list, tuple)) or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 1 for p in value)):
        raise InvalidDocumentError(
            f"{where}: metadata[{key!r}] = {value!r:.60} but this key lists the pages whose text came from OCR "
            "(1-based page numbers, e.g. [2, 5]); rename the key if it means something else.")
    if key == FILE_STAMP_KEY and not (isinstance(value, str) and _STAMP.fullmatch(value)):
        raise InvalidDocumentError(
            f"{where}: metadata[{key!r}] = {value!r:.60} but this key is a loaded file's '<size>:<mtime_ns>', which "
            "the index rewrites to skip unchanged files; rename the key if it means something else.")


#: Metadata key of a file's stamp, ``"<size>:<mtime_ns>"`` from the loader's stat of the file (the
#: index appends ``"|<build key>"`` when it writes the tree). Not part of the document's hash: a
#: re-ingest skips a file whose size and modification time match the stored stamp before reading it.
FILE_STAMP_KEY = "file_stamp"


@dataclass(frozen=True)
class Document:
    """A document to index: an id plus either ``text`` or ``pages``, and JSON metadata.

    With ``pages`` each page becomes one leaf (what a user cites); with ``text`` the builder makes
    leaves from Markdown sections or paragraphs. ``outline`` (with ``pages`` only): the document's
    own sections, e.g. a PDF's bookmarks, as ``{"title", "page" (1-based), "level" (0 = top)}``
    entries in document order; the builder makes them the tree's section nodes.
    ``page_metadata`` (with ``pages`` only): one JSON mapping per page, merged over ``metadata``
    on the nodes that lie within that page (its leaf, or its page node and passages), so a page
    keeps what its loader said of it (``page``, ``page_label``); nodes spanning several pages
    carry ``metadata`` only, so filters and the walk see what the whole document shares.
    ``keep_text`` (with ``text`` only): the tree's root also keeps the text exactly as given, when
    its leaves joined by a blank line would not give it back (headings, whitespace, CRLF), so
    ``get_documents`` returns it as given (the framework adapters set it); else the leaves joined.
    """

    id: str
    text: Optional[str] = None
    pages: Optional[Sequence[str]] = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    outline: Optional[Sequence[Mapping[str, Any]]] = None
    page_metadata: Optional[Sequence[Mapping[str, Any]]] = None
    keep_text: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise InvalidDocumentError(f"Document id must be a non-empty string, got {self.id!r}.")
        check_unicode(self.id, "Document id")
        where = f"Document {self.id!r}"
        if self.text is None and self.pages is None:
            raise InvalidDocumentError(f"{where} has neither text nor pages; give one of them.")
        if self.text is not None and self.pages is not None:
            raise InvalidDocumentError(f"{where} has both text and pages; give only one.")
        if self.text is not None:
            if not isinstance(self.text, str):
                raise InvalidDocumentError(
                    f"{where}: text must be str, got {type(self.text).__name__}; decode bytes first."
                )
            if not self.text.strip():
                raise InvalidDocumentError(f"{where}: text is empty or whitespace only; nothing to index.")
            check_unicode(self.text, f"{where}: text")
        if self.pages is not None:
            if isinstance(self.pages, (str, bytes)) or not isinstance(self.pages, Sequence):
                raise InvalidDocumentError(f"{where}: pages must be a list of str, one per page.")
            pages = tuple(self.pages)
            for number, page in enumerate(pages, start=1):
                if not isinstance(page, str):
                    raise InvalidDocumentError(
                        f"{where}: page {number} is {type(page).__name__}, not str."
                    )
                check_unicode(page, f"{where}: page {number}")
            if not any(p.strip() for p in pages):
                raise InvalidDocumentError(f"{where}: every page is empty; nothing to index.")
            object.__setattr__(self, "pages", pages)
        if self.outline is not None:
            object.__setattr__(self, "outline", _check_outline(self.outline, self.pages, where))
        if self.page_metadata is not None:
            if self.pages is None:
                raise InvalidDocumentError(f"{where}: page_metadata needs pages (one mapping per page).")
            if isinstance(self.page_metadata, (str, bytes, Mapping)) or not isinstance(self.page_metadata, Sequence) \
                    or len(self.page_metadata) != len(self.pages):
                raise InvalidDocumentError(
                    f"{where}: page_metadata must be a list of {len(self.pages)} mappings, one per page.")
            object.__setattr__(self, "page_metadata", tuple(
                _check_json_metadata(m, f"{where} page {n}") for n, m in enumerate(self.page_metadata, start=1)))
        object.__setattr__(self, "metadata", _check_json_metadata(self.metadata, where))
        if not isinstance(self.keep_text, bool):
            raise InvalidDocumentError(f"{where}: keep_text must be True or False, got {self.keep_text!r}.")


def _check_outline(outline: Any, pages: Optional[Sequence[str]], where: str) -> Tuple[Dict[str, Any], ...]:
    """Validate outline entries: a title, a page of the document (1-based) and a level >= 0."""
    if pages is None:
        raise InvalidDocumentError(f"{where}: an outline needs pages (its entries point at pages).")
    if isinstance(outline, (str, bytes, Mapping)) or not isinstance(outline, Sequence):
        raise InvalidDocumentError(f"{where}: outline must be a list of {{'title', 'page', 'level'}} entries.")
    entries = []
    for number, entry in enumerate(outline, start=1):
        if not isinstance(entry, Mapping):
            raise InvalidDocumentError(f"{where}: outline entry {number} is {type(entry).__name__}, not a mapping.")
        title, page, level = entry.get("title"), entry.get("page"), entry.get("level", 0)
        if not isinstance(title, str) or not title.strip():
            raise InvalidDocumentError(f"{where}: outline entry {number} needs a non-empty 'title' string.")
        check_unicode(title, f"{where}: outline entry {number} title")
        if isinstance(page, bool) or not isinstance(page, int) or not 1 <= page <= len(pages):
            raise InvalidDocumentError(
                f"{where}: outline entry {number} ({title!r}) points at page {page!r}; pages are 1..{len(pages)}."
            )
        if isinstance(level, bool) or not isinstance(level, int) or level < 0:
            raise InvalidDocumentError(f"{where}: outline entry {number} has level {level!r}; use an integer >= 0.")
        entries.append({"title": " ".join(title.split()), "page": page, "level": level})
    return tuple(entries)


@dataclass(frozen=True)
class Span:
    """The leaves a node covers: leaf ordinals (0-based, inclusive) and pages (1-based) if any."""

    first_leaf: int
    last_leaf: int
    first_page: Optional[int] = None
    last_page: Optional[int] = None
    # Passages of one page (1-based, inclusive) when a long page was split into passage leaves:
    # the citation stays the page's, with the passage numbers after it ("p.37 ¶2-3").
    first_part: Optional[int] = None
    last_part: Optional[int] = None
    # The "pages" are a splitter's chunks of a text (1-based in first_page / last_page): labelled
    # "chunk 7" / "chunks 7-10". Not stored: read back from the nodes' metadata (UNITS_KEY).
    chunks: bool = False

    def __str__(self) -> str:
        if self.chunks and self.first_page is not None:
            if self.first_page == self.last_page:
                return f"chunk {self.first_page}"
            return f"chunks {self.first_page}-{self.last_page}"
        if self.first_page is not None:
            if self.first_page == self.last_page:
                if self.first_part is not None:
                    parts = (f"¶{self.first_part}" if self.first_part == self.last_part
                             else f"¶{self.first_part}-{self.last_part}")
                    return f"p.{self.first_page} {parts}"
                return f"p.{self.first_page}"
            return f"pp.{self.first_page}-{self.last_page}"
        if self.first_leaf == self.last_leaf:
            return f"¶{self.first_leaf}"
        return f"¶{self.first_leaf}-{self.last_leaf}"

    def contains(self, other: "Span") -> bool:
        return self.first_leaf <= other.first_leaf and other.last_leaf <= self.last_leaf


@dataclass(frozen=True)
class TreeNode:
    """One node of a document tree, as stored in Qdrant (its payload: :func:`.point_schema.node_payload`).

    ``level`` is the depth from the root (root = 0). ``text`` is the leaf's own text or an inner
    node's summary; :class:`ScoredNode.text` carries the full span text instead.
    """

    id: str
    doc_id: str
    level: int
    is_leaf: bool
    span: Span
    text: str
    parent_id: Optional[str] = None
    child_ids: Tuple[str, ...] = ()
    keywords: Tuple[str, ...] = ()
    title: Optional[str] = None
    path: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    doc_hash: str = ""
    # A leaf's description by the summariser, when it wrote one (an LLM's page description).
    description: Optional[str] = None
    # A leaf's context path as its vectors read it in front of its text (document title, section
    # path, page, marked metadata: BuildConfig.leaf_context); None: the section title only, as
    # before. The text returned and counted stays ``text``.
    context: Optional[str] = None
    # On the root of a text document added with ``keep_text``: its text exactly as given, when its
    # leaves joined by a blank line do not give it back (headings, whitespace, CRLF); None otherwise.
    # What ``get_documents`` returns as the document's text; never searched or counted.
    source_text: Optional[str] = None
    # On a node within one page of a primary financial statement: which statement (a
    # model/_statements.py STATEMENT_NAMES key: "balance", "income", ...), so that a question naming
    # it can be routed to its pages; None elsewhere.
    statement: Optional[str] = None


@dataclass(frozen=True)
class QueryVectors:
    """A query encoded once: dense vector and BM25 sparse vector (indices, values). The encoder
    makes it, every ranking request of a search carries it to the store."""

    dense: Tuple[float, ...]
    sparse_indices: Tuple[int, ...]
    sparse_values: Tuple[float, ...]


@dataclass(frozen=True)
class ScoredNode:
    """A search hit: the node, its score and rank, and the full text of its span.

    ``score`` is the public scale of every method (:mod:`~drag_knee_retriever.search._relevance`): in
    [0, 1], higher is better, never rising along ``rank``: the query's dense cosine with the
    results, made monotone along the ranking (isotonic). ``cosine`` is this node's own cosine
    (clipped at 0). ``raw_score`` is what the method ranked and cut on: an RRF sum (``fixed``,
    ``branch``, flat hybrid), a z-score sum (the default focus), a cosine or BM25 score (flat
    dense / sparse); ``rank`` follows the method's order.
    """

    node: TreeNode
    score: float
    rank: int
    text: str
    raw_score: Optional[float] = None
    cosine: Optional[float] = None

    @property
    def span(self) -> Span:
        return self.node.span

    @property
    def level(self) -> int:
        return self.node.level

    @property
    def doc_id(self) -> str:
        return self.node.doc_id

    def to_dict(self) -> Dict[str, Any]:
        return {
            "node_id": self.node.id,
            "doc_id": self.node.doc_id,
            "level": self.node.level,
            "is_leaf": self.node.is_leaf,
            "span": asdict(self.node.span),
            "span_label": str(self.node.span),
            "score": self.score,
            "raw_score": self.raw_score,
            "rank": self.rank,
            "title": self.node.title,
            "metadata": dict(self.node.metadata),
            "text": self.text,
        }


@dataclass(frozen=True)
class NodeText:
    """A node fetched by id (:meth:`DragKneeIndex.get_nodes`): the node and the full text of its
    span (a leaf's own text; an inner node's leaves joined, in order)."""

    node: TreeNode
    text: str

    @property
    def span(self) -> Span:
        return self.node.span

    @property
    def doc_id(self) -> str:
        return self.node.doc_id


@dataclass(slots=True)
class TraceCandidate:
    """One candidate of one step: its ranks, fused score, and what happened to it."""

    # slots: a search creates ~100 of these. The walk builds them positionally
    # (traversal._candidate): keep the field order.
    node_id: str
    doc_id: str
    level: int
    is_leaf: bool
    label: str
    fused_score: float
    fused_rank: int
    dense_rank: Optional[int] = None
    sparse_rank: Optional[int] = None
    parent_id: Optional[str] = None
    # "kept", "suppressed", "cut" (beyond the knee or the beam width)
    outcome: str = "kept"
    suppressed_by: Optional[str] = None
    # With SearchConfig.focus.scores="magnitude": the focus candidate's dense cosine and BM25 score
    # (fused_score is then their z-scored sum with the siblings' evidence).
    dense_score: Optional[float] = None
    sparse_score: Optional[float] = None
    # The candidate's tree version: the final fetch drops leaf-ranking candidates of uncommitted trees.
    doc_hash: str = ""
    # How strongly the query names this candidate's document (search/_identity.py: 1.0 for the best match),
    # where it counted in the candidate's score (roots and the focus step).
    identity_score: Optional[float] = None


@dataclass
class TraceStep:
    """One ranking request of the walk: which candidates, how they ranked, the knee and the cut."""

    step: int
    kind: str  # "roots", "beam", "branch", "focus", "global", "fill", "statements"
    level: int
    candidates: List[TraceCandidate] = field(default_factory=list)
    knee_index: Optional[int] = None
    kept_count: int = 0
    parent_id: Optional[str] = None
    weights: Tuple[float, float] = (1.0, 1.0)

    @property
    def scores(self) -> List[float]:
        return [c.fused_score for c in self.candidates]


@dataclass
class Trace:
    """The record of one search, step by step. Serialisable with :meth:`to_dict` / :meth:`to_json`."""

    query: str
    method: str
    steps: List[TraceStep] = field(default_factory=list)
    requests: int = 0
    timings_ms: Dict[str, float] = field(default_factory=dict)
    # With a self-query model (llm/self_query.py): the filter it read from the query and whether
    # the search kept it (False: it left no result, so the search ran without it).
    self_query: Optional[Dict[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        return _clean_json(asdict(self))

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)


@dataclass
class SearchResult:
    """What a search returns: the scored nodes with their span text, and the trace of why."""

    query: str
    method: str
    nodes: List[ScoredNode]
    trace: Trace

    def __iter__(self):
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def context(self) -> str:
        """All returned text joined, in result order (what a model would read)."""
        return "\n\n".join(hit.text for hit in self.nodes)

    def to_dict(self) -> Dict[str, Any]:
        return _clean_json(
            {
                "query": self.query,
                "method": self.method,
                "nodes": [hit.to_dict() for hit in self.nodes],
                "trace": self.trace.to_dict(),
            }
        )

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)


def _clean_json(value: Any) -> Any:
    """Replace non-finite floats (not valid JSON) with None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean_json(v) for v in value]
    return value
