"""Reading PDFs: pages from the text layer, the OCR hook for thin pages, the outline (bookmarks)."""

from __future__ import annotations

import io
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from drag_knee_retriever.errors import InvalidDocumentError
from drag_knee_retriever.build._ocr import OcrConfig
from drag_knee_retriever.loaders.discover import FoundFile, PathLike, ProgressCallback
from drag_knee_retriever.loaders.text import read_bytes, has_visible_text

if TYPE_CHECKING:  # pragma: no cover
    from drag_knee_retriever.build._ocr import OcrMode

log = logging.getLogger("drag_knee_retriever.loaders")  # one logger for the package: the CLI quiets it by this name


def pdf_failure(where: str, exc: Exception) -> str:
    """The reason and the fix for a PDF pypdf gave up on (its limits, a missing package, a bug)."""
    from pypdf.errors import DependencyError, LimitReachedError

    detail = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, LimitReachedError):
        return (f"{where}: exceeds a safety limit of the PDF reader ({detail}): a decompression bomb or a "
                "page tree deeper than 100; re-export or repair it (e.g. qpdf in.pdf out.pdf) if it is genuine.")
    if isinstance(exc, DependencyError):
        return (f"{where}: needs a package that is not installed to be opened ({detail}); "
                "pip install cryptography (AES-encrypted PDFs), or decrypt it first: qpdf --decrypt in.pdf out.pdf.")
    if isinstance(exc, RecursionError):
        return (f"{where}: is nested too deeply for the PDF reader (RecursionError); re-export or repair it, "
                "e.g. qpdf in.pdf out.pdf.")
    if isinstance(exc, MemoryError):
        return f"{where}: needs more memory to read than is available; split it (e.g. qpdf --split-pages)."
    return (f"{where}: could not be read by the PDF reader ({detail}); re-export or repair it "
            "(e.g. qpdf in.pdf out.pdf).")



@dataclass(frozen=True)
class PdfLimits:
    """How much work one PDF may cost before it is skipped as hostile (checked before and while
    its pages are read; the batch goes on).

    A PDF is a program: a 9 KB file of 900,000 compressed text operators, or one page invoking a
    200-operator form 5,000 times (pypdf's own cap per page), held pypdf for 88 s and 153 s, far
    inside its per-stream limits. So the work is bounded per file:

    - ``max_pages``: pages (from the page tree, before anything is extracted);
    - ``max_content_bytes``: decoded content-stream bytes of all pages, counted before each page;
    - ``seconds + seconds_per_mb * file MB``: CPU time of the reading thread (not wall time, so a
      busy machine does not refuse a good file), checked every 256 operators and between pages.
      Genuine PDFs measured 2.1-2.2 s per MB (two manuals, 17 and 36 pages) and 0.0-0.05 s per MB
      (slide decks of images); the hostile files above cost over 2,000 s per MB;
    - the text limit per document (``max_text_bytes``), checked after every page instead of at the end.
    """

    max_pages: int = 10_000
    max_content_bytes: int = 256 * 1024 * 1024
    seconds: float = 2.0
    seconds_per_mb: float = 20.0

    def __post_init__(self) -> None:
        for name in ("max_pages", "max_content_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidDocumentError(f"PdfLimits.{name} must be an integer >= 1, got {value!r}.")
        for name in ("seconds", "seconds_per_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise InvalidDocumentError(f"PdfLimits.{name} must be a number of seconds >= 0, got {value!r}.")

    def seconds_for(self, file_bytes: int) -> float:
        """The CPU seconds a PDF of this size may take to read."""
        return self.seconds + self.seconds_per_mb * file_bytes / (1024 * 1024)


DEFAULT_PDF_LIMITS = PdfLimits()


class _PdfWork:
    """The budget of one PDF: the operator visitor checks the clock; pages add content and text."""

    def __init__(self, limits: PdfLimits, file_bytes: int, max_text_bytes: Optional[int], where: str) -> None:
        self.limits, self.where, self.file_bytes, self.max_text_bytes = limits, where, file_bytes, max_text_bytes
        self.started = time.thread_time()
        self.budget = limits.seconds_for(file_bytes)
        self.deadline = self.started + self.budget
        self.operators = 0
        self.page, self.pages = 0, 0  # the page being read, of how many (for the message)
        self.content = 0
        self.text = 0
        self.spent = False

    def visit(self, operator: Any, operands: Any, cm: Any, tm: Any) -> None:
        # Called by pypdf before every operator, inside forms too. Raising stops the page: pypdf
        # swallows an error inside a form, but the next operator raises again, up to the page's
        # own operators, where it leaves pypdf.
        self.operators += 1
        if self.spent or (not self.operators & 255 and time.thread_time() > self.deadline):
            self.spent = True
            raise self._over(self.page, self.pages)

    def check_pages(self, count: int) -> None:
        if count > self.limits.max_pages:
            raise InvalidDocumentError(
                f"{self.where}: has {count:,} pages, above the limit of {self.limits.max_pages:,} pages per PDF; "
                "split it (e.g. qpdf --split-pages), or raise the limit (pdf_limits=PdfLimits(max_pages=...)).")

    def add_content(self, size: int) -> None:
        self.content += size
        if self.content > self.limits.max_content_bytes:
            raise InvalidDocumentError(
                f"{self.where}: its pages' content streams decode to more than "
                f"{self.limits.max_content_bytes / (1024 * 1024):.0f} MB (a decompression bomb, or a broken file); "
                "re-export or repair it (e.g. qpdf in.pdf out.pdf), or raise the limit "
                "(pdf_limits=PdfLimits(max_content_bytes=...)).")

    def after_page(self, done: int, total: int, text: str) -> None:
        self.text += len(text)  # characters <= UTF-8 bytes: over in characters is over in bytes
        if self.max_text_bytes is not None and self.text > self.max_text_bytes:
            raise InvalidDocumentError(
                f"{self.where}: its text passed the {self.max_text_bytes / (1024 * 1024):.1f} MB limit per document at "
                f"page {done} of {total} (embedding that much takes hours); split it into parts, or raise the limit "
                "(--max-text-mb, or max_text_bytes=).")
        if self.spent or time.thread_time() > self.deadline:
            raise self._over(done, total)

    def _over(self, done: int, total: int) -> InvalidDocumentError:
        spent = time.thread_time() - self.started
        return InvalidDocumentError(
            f"{self.where}: takes far more work to read than a PDF of its size should (over {spent:.1f} s of CPU "
            f"for {self.file_bytes / 1024:.0f} KB, at page {done} of {total}; the limit is {self.budget:.1f} s): a "
            "hostile or broken file, skipped. Re-export or repair it (e.g. qpdf in.pdf out.pdf), or raise the "
            "limit (pdf_limits=PdfLimits(seconds_per_mb=...)).")


def _text_operators() -> Any:
    """pypdf's own test for "this content can show text" (it skips other pages unparsed, unless a
    visitor asks for their operators): the budget's visitor goes only where pypdf parses anyway."""
    try:
        from pypdf._text_extraction import _has_text_operator
    except ImportError:  # another pypdf: visit every page (same text, slower on drawings)
        return lambda data: True
    return _has_text_operator


def _page_text(page: Any, work: _PdfWork, has_text: Any) -> str:
    getter = getattr(page, "_get_contents_as_bytes", None)
    data = getter() if getter is not None else None
    if data is not None:
        work.add_content(len(data))
    if data is not None and not has_text(data):
        return page.extract_text() or ""  # pypdf skips it unparsed; no visitor, no extra work
    return page.extract_text(visitor_operand_before=work.visit) or ""


def _import_pypdf() -> Any:
    try:
        import pypdf
    except ImportError:
        raise ImportError(
            "Reading PDF files needs pypdf: pip install 'drag-knee-retriever[pdf]'."
        ) from None
    return pypdf


def ocr_settings(
    ocr: Union["OcrMode", OcrConfig, None] = "auto",
    languages: Optional[str] = None,
    cache_dir: Optional[PathLike] = None,
) -> OcrConfig:
    """One :class:`OcrConfig` from the loaders' ``ocr`` / ``ocr_languages`` / ``ocr_cache_dir`` arguments."""
    from dataclasses import replace

    if isinstance(ocr, OcrConfig):
        config = ocr
    else:
        config = OcrConfig(mode=ocr if ocr is not None else "auto")
    changes: Dict[str, Any] = {}
    if languages is not None:
        changes["languages"] = languages
    if cache_dir is not None:
        changes["cache_dir"] = os.fspath(cache_dir)
    return replace(config, **changes) if changes else config


def read_pdf(
    path: Path, where: str, ocr: Optional[OcrConfig] = None, progress: Optional[ProgressCallback] = None,
    *, found: Optional[FoundFile] = None, limit: Optional[int] = None, max_text_bytes: Optional[int] = None,
    limits: Optional[PdfLimits] = None,
) -> Tuple[List[str], Optional[str], List[int], Any]:
    """(pages, title, OCR'd page numbers, the reader) of a PDF, read once from one descriptor
    (``found``: see :func:`.text._open_file`) within ``limits`` (:class:`PdfLimits`); the outline
    comes from the same reader."""
    ocr = ocr or OcrConfig()
    pypdf = _import_pypdf()
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PdfStreamError

    raw = read_bytes(path, where, limit, found)
    if not raw.lstrip()[:5] == b"%PDF-":
        raise InvalidDocumentError(f"{where}: is not a PDF (no %PDF header); check the file or its suffix.")
    try:
        reader = pypdf.PdfReader(io.BytesIO(raw))
        if reader.is_encrypted:
            # Many PDFs are encrypted only against editing, with an empty user password.
            try:
                opened = reader.decrypt("")
            except (DependencyError, NotImplementedError) as exc:
                raise InvalidDocumentError(
                    f"{where}: is encrypted and cannot be opened here ({exc}); decrypt it first, "
                    "e.g. qpdf --decrypt in.pdf out.pdf."
                ) from None
            if not opened:
                raise InvalidDocumentError(
                    f"{where}: is password-protected; decrypt it first, e.g. "
                    "qpdf --password=... --decrypt in.pdf out.pdf."
                )
        work = _PdfWork(limits or DEFAULT_PDF_LIMITS, len(raw), max_text_bytes, where)
        total = len(reader.pages)
        work.check_pages(total)
        has_text = _text_operators()
        pages = []
        for number, page in enumerate(reader.pages, start=1):
            work.page, work.pages = number, total
            pages.append(_clean_page(_page_text(page, work, has_text)))
            work.after_page(number, total, pages[-1])
        title = None
        try:
            meta = reader.metadata
            if meta is not None and meta.title:
                title = str(meta.title).strip()[:200] or None
        except Exception:  # metadata is optional; a broken info dict must not lose the pages
            title = None
    except InvalidDocumentError:
        raise
    except FileNotDecryptedError:
        raise InvalidDocumentError(
            f"{where}: is password-protected; decrypt it first, e.g. qpdf --decrypt in.pdf out.pdf."
        ) from None
    except (PdfReadError, PdfStreamError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        # pypdf raises a variety of errors on damaged files; each is "this PDF is unreadable".
        raise InvalidDocumentError(
            f"{where}: is damaged or not a PDF pypdf can read ({type(exc).__name__}: {exc}); "
            "re-export it or repair it, e.g. qpdf in.pdf out.pdf."
        ) from None
    if not pages:
        raise InvalidDocumentError(f"{where}: has no pages; there is nothing to index.")
    pages, ocr_pages, ocr_problem = _ocr_pages(raw, pages, ocr, path, where, progress)
    if not any(has_visible_text(p) for p in pages):
        if ocr_problem:
            raise InvalidDocumentError(f"{where}: has no extractable text (a scanned or image-only PDF?); {ocr_problem}")
        if ocr.mode == "never":
            raise InvalidDocumentError(
                f"{where}: has no extractable text (a scanned or image-only PDF?); OCR is off: "
                "pass ocr='auto' (--ocr auto) to read its pages with OCR."
            )
        raise InvalidDocumentError(
            f"{where}: has no extractable text, and OCR found none either (blank pages, or a scan "
            f"too faint to read; languages {ocr.languages!r}: set ocr_languages if it is in another language)."
        )
    empty = sum(1 for p in pages if not p.strip())
    if empty:
        log.info("%s: %d of %d pages have no text (kept, so page numbers stay true)", path, empty, len(pages))
    return pages, title, ocr_pages, reader


def _ocr_pages(
    raw: bytes,
    pages: List[str],
    ocr: OcrConfig,
    path: Path,
    where: str,
    progress: Optional[ProgressCallback],
) -> Tuple[List[str], List[int], Optional[str]]:
    from drag_knee_retriever.build._ocr import fill_pages

    return fill_pages(raw, pages, ocr, name=path.name, progress=progress)


def pdf_outline(source: Any, page_count: int) -> Optional[List[Dict[str, Any]]]:
    """A PDF's bookmarks as ``[{"title", "page" (1-based), "level" (0 = top)}]`` in document
    order, or ``None`` when it has none or they cannot be read (an outline is optional: a broken
    one must never lose the pages). Entries that point at no page of the document are skipped.

    ``source``: a path, or the ``pypdf.PdfReader`` the pages were read with (the loaders pass the
    reader: the file is not opened a second time)."""
    try:
        import pypdf

        reader = source if isinstance(source, pypdf.PdfReader) else pypdf.PdfReader(str(source))
        entries: List[Dict[str, Any]] = []

        def visit(items: Any, level: int) -> None:
            for item in items:
                if isinstance(item, list):  # the children of the entry before it
                    visit(item, level + 1)
                    continue
                title = " ".join(str(getattr(item, "title", "") or "").split())
                try:
                    page = reader.get_destination_page_number(item)
                except Exception:
                    continue
                if title and page is not None and 0 <= page < page_count:
                    entries.append({"title": title[:300], "page": page + 1, "level": level})

        visit(reader.outline, 0)
    except Exception as exc:  # pypdf raises many kinds of errors on odd outlines
        where = "a PDF" if type(source).__name__ == "PdfReader" else source
        log.info("%s: outline not read (%s: %s); the pages are grouped without it", where, type(exc).__name__, exc)
        return None
    return entries or None


def _clean_page(text: str) -> str:
    # pypdf keeps the PDF's line breaks; trailing spaces and NULs only get in the way of search.
    return "\n".join(line.rstrip() for line in text.replace("\x00", "").splitlines()).strip()
