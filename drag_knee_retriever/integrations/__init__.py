"""Framework adapters, and the framework-free conversions they share.

The adapters live in submodules that import their framework:

- :mod:`drag_knee_retriever.integrations.langchain` (``pip install "drag-knee-retriever[langchain]"``)
- :mod:`drag_knee_retriever.integrations.llamaindex` (``pip install "drag-knee-retriever[llamaindex]"``)

This package module itself imports neither framework. It holds what both adapters need and what
does not depend on either of them: the namespaced metadata a search hit carries (every key starts
with :data:`META_PREFIX`), the reverse conversion of that metadata into a core
:class:`~drag_knee_retriever.nodes.TreeNode`, the grouping of per-page documents into one paged
document, query validation and the resolution of search settings. None of it scores, encodes or
talks to Qdrant: the adapters only convert types and delegate to the core.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..config import SearchConfig
from ..errors import ConfigError, InvalidDocumentError, InvalidQueryError
from ..nodes import Document, ScoredNode, Span, TreeNode
from ..store import parse_filters

log = logging.getLogger(__name__)

#: Prefix of every metadata key the adapters add; source metadata keys may not use it.
META_PREFIX = "drag_"

# Keys describing where a hit sits in its tree (added to every returned document / node).
NODE_ID = META_PREFIX + "node_id"
DOC_ID = META_PREFIX + "doc_id"
LEVEL = META_PREFIX + "level"
IS_LEAF = META_PREFIX + "is_leaf"
SPAN = META_PREFIX + "span"
FIRST_LEAF = META_PREFIX + "first_leaf"
LAST_LEAF = META_PREFIX + "last_leaf"
FIRST_PAGE = META_PREFIX + "first_page"
LAST_PAGE = META_PREFIX + "last_page"
PARENT_ID = META_PREFIX + "parent_id"
TITLE = META_PREFIX + "title"
SCORE = META_PREFIX + "score"
RANK = META_PREFIX + "rank"
# Keys only the LlamaIndex node parser writes: with them a parsed node converts back into the
# exact TreeNode the builder made, so the index can ingest parsed nodes without rebuilding.
KEYWORDS = META_PREFIX + "keywords"
PATH = META_PREFIX + "path"
DOC_HASH = META_PREFIX + "doc_hash"
CHILD_IDS = META_PREFIX + "child_ids"
DESCRIPTION = META_PREFIX + "description"

INSTALL_HINT = {
    "langchain": 'pip install "drag-knee-retriever[langchain]"',
    "llamaindex": 'pip install "drag-knee-retriever[llamaindex]"',
}

__all__ = [
    "META_PREFIX",
    "PageEntry",
    "check_query",
    "group_paged_documents",
    "hit_metadata",
    "search_overrides",
    "tree_node_from_metadata",
    "tree_node_metadata",
]


# ---------------------------------------------------------------------------------------------
# queries and settings
# ---------------------------------------------------------------------------------------------


def check_query(query: Any) -> str:
    """Return ``query`` if it is a non-empty string; otherwise raise :class:`InvalidQueryError`."""
    if not isinstance(query, str):
        raise InvalidQueryError(
            f"The query must be a string, got {type(query).__name__} ({query!r:.60}); "
            "pass the question text, e.g. retriever.invoke('what causes ...?')."
        )
    if not query.strip():
        raise InvalidQueryError("The query is empty or whitespace only; pass the question text.")
    return query


def search_overrides(
    *,
    method: Optional[str] = None,
    beam_width: Optional[int] = None,
    k: Optional[int] = None,
    k_name: str = "k",
    sensitivity: Optional[float] = None,
    max_roots: Optional[int] = None,
    filters: Optional[Mapping[str, Any]] = None,
    fusion_weights: Optional[Sequence[Sequence[float]]] = None,
    order: Optional[str] = None,
) -> Dict[str, Any]:
    """Validate adapter search settings and return the keyword overrides for ``index.search``.

    ``k`` (named ``k_name`` in messages: LangChain's ``k``, LlamaIndex's ``similarity_top_k``) is
    the frameworks' "number of results": it becomes the beam width, and, unless ``method`` is
    given too, selects the ``"fixed"`` beam (a knee method chooses its own count, so a ``k``
    without a method would otherwise be silently ignored). Values are checked here, once, by
    building a :class:`SearchConfig` with them; settings left ``None`` fall back to the index's.
    """
    if k is not None:
        if beam_width is not None and beam_width != k:
            raise ConfigError(
                f"{k_name}={k!r} and beam_width={beam_width!r} disagree; {k_name} is the beam width, "
                "give only one of them."
            )
        beam_width = k
        if method is None:
            method = "fixed"
    weights = None
    if fusion_weights is not None:
        if isinstance(fusion_weights, (str, bytes)) or not isinstance(fusion_weights, Sequence):
            raise ConfigError(
                "fusion_weights must be a list of (dense, sparse) pairs, e.g. [(0.2, 0.8), (0.5, 0.5)]."
            )
        weights = tuple(tuple(pair) if isinstance(pair, (list, tuple)) else pair for pair in fusion_weights)
    overrides: Dict[str, Any] = {
        "method": method,
        "beam_width": beam_width,
        "sensitivity": sensitivity,
        "max_roots": max_roots,
        "fusion_weights": weights,
        "order": order,
    }
    overrides = {key: value for key, value in overrides.items() if value is not None}
    # Building the config runs its validation: a bad value fails now, not at the first query.
    checked = SearchConfig().with_overrides(**overrides)
    if "fusion_weights" in overrides:
        overrides["fusion_weights"] = checked.fusion_weights
    if filters is not None:
        parse_filters(filters)  # raises InvalidQueryError with the offending key
        overrides["filters"] = dict(filters)
    return overrides


# ---------------------------------------------------------------------------------------------
# hits and nodes -> namespaced metadata (and back)
# ---------------------------------------------------------------------------------------------


def _position_metadata(node: TreeNode) -> Dict[str, Any]:
    span = node.span
    out: Dict[str, Any] = {
        NODE_ID: node.id,
        DOC_ID: node.doc_id,
        LEVEL: node.level,
        IS_LEAF: node.is_leaf,
        SPAN: str(span),
        FIRST_LEAF: span.first_leaf,
        LAST_LEAF: span.last_leaf,
        FIRST_PAGE: span.first_page,
        LAST_PAGE: span.last_page,
        PARENT_ID: node.parent_id,
    }
    if node.title is not None:
        out[TITLE] = node.title
    return out


def hit_metadata(hit: ScoredNode) -> Dict[str, Any]:
    """The metadata of a returned hit: the source document's metadata plus ``drag_*`` fields.

    ``drag_score`` is the fused RRF score of the hit's last ranking (``w / (rrf_k + rank)`` summed
    over dense and sparse, rank from 0: Qdrant's convention), ``drag_rank`` its 0-based rank by
    score (the list position too, unless the search ordered results by document). The ``drag_*`` fields win over a source key of the same name.
    """
    meta = dict(hit.node.metadata)
    meta.update(_position_metadata(hit.node))
    meta[SCORE] = float(hit.score)
    meta[RANK] = int(hit.rank)
    return meta


def tree_node_metadata(node: TreeNode) -> Dict[str, Any]:
    """Metadata that carries a whole :class:`TreeNode` (for parsed, not-yet-indexed nodes)."""
    meta = dict(node.metadata)
    meta.update(_position_metadata(node))
    meta[CHILD_IDS] = list(node.child_ids)
    meta[KEYWORDS] = list(node.keywords)
    meta[PATH] = node.path
    meta[DOC_HASH] = node.doc_hash
    description = getattr(node, "description", None)
    if description is not None:
        meta[DESCRIPTION] = description
    return meta


_REQUIRED_NODE_KEYS = (NODE_ID, DOC_ID, LEVEL, IS_LEAF, FIRST_LEAF, LAST_LEAF)


def tree_node_from_metadata(
    node_id: str,
    text: str,
    metadata: Mapping[str, Any],
    *,
    parent_id: Optional[str] = None,
    child_ids: Optional[Sequence[str]] = None,
) -> TreeNode:
    """Rebuild the :class:`TreeNode` that :func:`tree_node_metadata` described.

    ``parent_id`` / ``child_ids`` (from a framework's own relationships) take precedence over the
    copies kept in the metadata. Raises :class:`InvalidDocumentError` when the node was not made by
    this library's parser, or its metadata cannot be stored as JSON.
    """
    missing = [key for key in _REQUIRED_NODE_KEYS if key not in metadata]
    if missing:
        raise InvalidDocumentError(
            f"Node {node_id!r} lacks the fields {', '.join(missing)}: it was not produced by "
            "DragTreeNodeParser. Parse the documents with DragTreeNodeParser first, or ingest "
            "plain documents with index.add_documents()."
        )
    if metadata[NODE_ID] != node_id:
        raise InvalidDocumentError(
            f"Node {node_id!r} carries {NODE_ID}={metadata[NODE_ID]!r}: its id was changed after "
            "parsing. Keep the ids DragTreeNodeParser assigns (they link parents and children)."
        )
    if not isinstance(text, str) or (metadata[IS_LEAF] and not text.strip()):
        raise InvalidDocumentError(f"Node {node_id!r} has no text; a leaf needs its text.")
    source = {k: v for k, v in metadata.items() if not k.startswith(META_PREFIX)}
    # The core Document check gives the same JSON message everywhere (e.g. a datetime value).
    Document(id=str(metadata[DOC_ID]), text="x", metadata=source)
    children = child_ids if child_ids is not None else metadata.get(CHILD_IDS) or ()
    extra: Dict[str, Any] = {}
    if metadata.get(DESCRIPTION) is not None:
        extra["description"] = str(metadata[DESCRIPTION])
    return TreeNode(
        id=node_id,
        doc_id=str(metadata[DOC_ID]),
        level=int(metadata[LEVEL]),
        is_leaf=bool(metadata[IS_LEAF]),
        span=Span(
            int(metadata[FIRST_LEAF]),
            int(metadata[LAST_LEAF]),
            metadata.get(FIRST_PAGE),
            metadata.get(LAST_PAGE),
        ),
        text=text,
        parent_id=parent_id if parent_id is not None else metadata.get(PARENT_ID),
        child_ids=tuple(children),
        keywords=tuple(metadata.get(KEYWORDS) or ()),
        title=metadata.get(TITLE),
        path=str(metadata.get(PATH) or ""),
        metadata=source,
        doc_hash=str(metadata.get(DOC_HASH) or ""),
        **extra,
    )


def check_source_metadata(metadata: Mapping[str, Any], where: str) -> Dict[str, Any]:
    """Reject source metadata keys that use the reserved ``drag_`` prefix (they would be lost)."""
    if not isinstance(metadata, Mapping):
        raise InvalidDocumentError(f"{where}: metadata must be a mapping, got {type(metadata).__name__}.")
    reserved = sorted(k for k in metadata if isinstance(k, str) and k.startswith(META_PREFIX))
    if reserved:
        raise InvalidDocumentError(
            f"{where}: metadata keys {reserved} use the prefix {META_PREFIX!r}, which this library "
            "reserves for the fields it adds to results; rename them."
        )
    return dict(metadata)


# ---------------------------------------------------------------------------------------------
# framework documents -> core documents
# ---------------------------------------------------------------------------------------------


@dataclass
class PageEntry:
    """One framework document, reduced to what the conversion needs.

    ``group`` names the file a page belongs to (``None``: not a page, ingest as its own text
    document); ``page`` is the 0-based page number within that file (``None``: keep input order).
    ``preferred_id`` is the framework's own document id, if it has one.
    """

    text: Any
    metadata: Mapping[str, Any]
    where: str
    group: Optional[str] = None
    page: Optional[int] = None
    source: Optional[str] = None
    preferred_id: Optional[str] = None
    drop_keys: Tuple[str, ...] = ()
    members: List[int] = field(default_factory=list)


def _text_id(text: str) -> str:
    # Stable across runs and machines (unlike hash()), so re-ingesting is idempotent.
    return "text-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _unique(candidate: str, taken: Dict[str, int]) -> str:
    """``candidate``, or ``candidate#2``, ``#3``... if an earlier document already took it."""
    if candidate not in taken:
        taken[candidate] = 1
        return candidate
    count = taken[candidate]
    while True:
        count += 1
        attempt = f"{candidate}#{count}"
        if attempt not in taken:
            taken[candidate] = count
            taken[attempt] = 1
            return attempt


def _common_metadata(entries: Sequence[PageEntry], drop: Iterable[str]) -> Dict[str, Any]:
    """The metadata every page of a file agrees on (page-specific keys dropped)."""
    drop = set(drop)
    first = entries[0].metadata
    common: Dict[str, Any] = {}
    for key, value in first.items():
        if key in drop:
            continue
        if all(key in e.metadata and e.metadata[key] == value for e in entries[1:]):
            common[key] = value
    return common


def group_paged_documents(entries: Sequence[PageEntry]) -> List[Tuple[Document, List[int]]]:
    """Turn framework documents into core :class:`Document` objects, all validated.

    Entries of the same ``group`` (pages of one file) become ONE paged document whose id is the
    group name; pages are ordered by ``page`` (0-based; the core numbers pages from 1, so page p
    becomes page p + 1), pages missing from the input become empty pages so that page numbers stay
    those of the file, and several entries of the same page (a page split into chunks) are joined
    with a blank line in input order. Its metadata is what all pages agree on. If any page of a
    group has no number, the group keeps input order. Every other entry becomes a text document
    with id: the framework's id, else its ``source``, else a hash of its text; later duplicates get
    ``#2``, ``#3``... Returns ``(document, input positions)`` pairs in first-appearance order.
    Raises :class:`InvalidDocumentError` (naming the input position) before anything is ingested.
    """
    taken: Dict[str, int] = {}
    groups: Dict[str, List[int]] = {}
    order: List[Tuple[str, Any]] = []  # ("group", name) or ("single", position)
    for position, entry in enumerate(entries):
        if entry.text is None or not isinstance(entry.text, str):
            raise InvalidDocumentError(
                f"{entry.where}: its text is {type(entry.text).__name__}, not str; "
                "give every document its text (decode bytes first)."
            )
        check_source_metadata(entry.metadata, entry.where)
        if entry.group is not None:
            if entry.group not in groups:
                groups[entry.group] = []
                order.append(("group", entry.group))
            groups[entry.group].append(position)
        else:
            if not entry.text.strip():
                raise InvalidDocumentError(
                    f"{entry.where}: its text is empty or whitespace only; drop it or give it text."
                )
            order.append(("single", position))
    out: List[Tuple[Document, List[int]]] = []
    for kind, key in order:
        if kind == "single":
            entry = entries[key]
            candidate = entry.preferred_id or entry.source or _text_id(entry.text)
            doc_id = _unique(str(candidate), taken)
            metadata = {k: v for k, v in entry.metadata.items() if k not in entry.drop_keys}
            try:
                doc = Document(id=doc_id, text=entry.text, metadata=metadata)
            except InvalidDocumentError as exc:
                raise InvalidDocumentError(f"{entry.where}: {exc}") from None
            out.append((doc, [key]))
            continue
        positions = groups[key]
        members = [entries[p] for p in positions]
        where = f"the pages of {key!r} ({members[0].where} and {len(members) - 1} more)"
        numbered = all(m.page is not None for m in members)
        pages: List[str]
        if numbered:
            if any(m.page < 0 for m in members):  # type: ignore[operator]
                raise InvalidDocumentError(f"{where}: a page number is negative; pages count from 0.")
            by_page: Dict[int, List[str]] = {}
            for m in members:
                by_page.setdefault(int(m.page), []).append(m.text)  # type: ignore[arg-type]
            last = max(by_page)
            if last + 1 > 4 * len(by_page) + 16:
                # Filling a huge gap with empty pages would make thousands of empty leaves; fall
                # back to input order and say so (page numbers then count the given pages).
                log.warning(
                    "%s: page numbers go up to %d for %d pages; keeping input order instead of "
                    "filling the gaps (span pages will count the given pages).", where, last + 1, len(by_page)
                )
                pages = ["\n\n".join(by_page[p]) for p in sorted(by_page)]
            else:
                pages = ["\n\n".join(by_page.get(p, [])) for p in range(last + 1)]
        else:
            pages = [m.text for m in members]
        drop = set().union(*(m.drop_keys for m in members))
        metadata = _common_metadata(members, drop)
        doc_id = _unique(str(key), taken)
        try:
            doc = Document(id=doc_id, pages=pages, metadata=metadata)
        except InvalidDocumentError as exc:
            raise InvalidDocumentError(f"{where}: {exc}") from None
        out.append((doc, positions))
    return out


_DIGITS = re.compile(r"^\s*\d+\s*$")


def page_number_from_label(label: Any) -> Optional[int]:
    """0-based page number from a 1-based numeric label ("3" -> 2); ``None`` if not numeric."""
    if isinstance(label, bool):
        return None
    if isinstance(label, int):
        return label - 1 if label >= 1 else None
    if isinstance(label, str) and _DIGITS.match(label):
        value = int(label)
        return value - 1 if value >= 1 else None
    return None
