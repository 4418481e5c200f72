"""Framework documents -> core documents: pages of one file grouped into one paged document.

Shared by both adapters; imports neither framework.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.errors import InvalidDocumentError
from drag_knee_retriever.model._nodes import Document
from drag_knee_retriever.integrations._common import check_source_metadata

log = logging.getLogger(__name__)


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


def ocr_group(key: str, pages: List[str], metadata: Dict[str, Any], ocr: Any, where: str) -> List[str]:
    """Pages of a file with OCR text where its text is empty or thin, when ``key`` is a PDF on disk.

    Framework loaders (PyPDFLoader, PDFReader) give an image-only page as an empty text; the
    file they read is named by the group key, so the same OCR as the core loader's fills it.
    """
    from pathlib import Path

    from drag_knee_retriever.build._ocr import fill_pages
    from drag_knee_retriever.model._point_schema import OCR_PAGES_KEY

    path = Path(key)
    if ocr is None or ocr.mode == "never" or path.suffix.lower() != ".pdf" or not path.is_file():
        return pages
    try:
        data = path.read_bytes()
    except OSError as exc:
        log.info("%s: not OCR'd, %s cannot be read (%s)", where, key, exc)
        return pages
    filled, ocr_pages, problem = fill_pages(data, pages, ocr, name=path.name)
    if not any(p.strip() for p in filled) and problem:
        raise InvalidDocumentError(f"{where}: every page is empty (an image-only PDF?); {problem}")
    metadata[OCR_PAGES_KEY] = ocr_pages
    return filled


def group_paged_documents(
    entries: Sequence[PageEntry], *, ocr: Any = None
) -> List[Tuple[Document, List[int]]]:
    """Turn framework documents into core :class:`Document` objects, all validated.

    Entries of the same ``group`` (pages of one file) become ONE paged document whose id is the
    group name; pages are ordered by ``page`` (0-based; the core numbers pages from 1, so page p
    becomes page p + 1), pages missing from the input become empty pages so that page numbers stay
    those of the file, and several entries of the same page (a page split into chunks) are joined
    with a blank line in input order. Its metadata is what all pages agree on. If any page of a
    group has no number, the group keeps input order. Every other entry becomes a text document
    with id: the framework's id, else its ``source``, else a hash of its text; later duplicates get
    ``#2``, ``#3``... Returns ``(document, input positions)`` pairs in first-appearance order.
    ``ocr`` (an :class:`~drag_knee_retriever.build._ocr.OcrConfig`, None: no OCR): the pages of a
    group whose name is a PDF file on disk are OCR'd where their text is empty or too thin, as
    the core loader does (metadata ``ocr_pages``; each leaf's ``text_source``).
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
                doc = Document(id=doc_id, text=entry.text, metadata=metadata, keep_text=True)
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
        if numbered and len(pages) == max(int(m.page) for m in members) + 1:  # type: ignore[arg-type]
            # Page i is page i of the file (not the input-order fallback): OCR can render it.
            pages = ocr_group(str(key), pages, metadata, ocr, where)
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
