"""Reading PDFs: pages from the text layer, the OCR hook for thin pages, the outline (bookmarks)."""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from ..errors import InvalidDocumentError
from ..ocr import OcrConfig
from .discover import PathLike, ProgressCallback
from .text import read_bytes

if TYPE_CHECKING:  # pragma: no cover
    from ..ocr import OcrMode

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
    path: Path, where: str, ocr: Optional[OcrConfig] = None, progress: Optional[ProgressCallback] = None
) -> Tuple[List[str], Optional[str], List[int]]:
    """A PDF's page texts (OCR'd where ``ocr`` says), its title if it has one, and the 1-based
    numbers of the pages OCR'd."""
    ocr = ocr or OcrConfig()
    pypdf = _import_pypdf()
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PdfStreamError

    raw = read_bytes(path, where)
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
        pages = []
        for page in reader.pages:
            pages.append(_clean_page(page.extract_text() or ""))
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
    if not any(p.strip() for p in pages):
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
    return pages, title, ocr_pages


def _ocr_pages(
    raw: bytes,
    pages: List[str],
    ocr: OcrConfig,
    path: Path,
    where: str,
    progress: Optional[ProgressCallback],
) -> Tuple[List[str], List[int], Optional[str]]:
    from ..ocr import fill_pages

    return fill_pages(raw, pages, ocr, name=path.name, progress=progress)


def pdf_outline(path: PathLike, page_count: int) -> Optional[List[Dict[str, Any]]]:
    """A PDF's bookmarks as ``[{"title", "page" (1-based), "level" (0 = top)}]`` in document
    order, or ``None`` when it has none or they cannot be read (an outline is optional: a broken
    one must never lose the pages). Entries that point at no page of the document are skipped."""
    try:
        import pypdf

        reader = pypdf.PdfReader(str(path))
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
        log.info("%s: outline not read (%s: %s); the pages are grouped without it", path, type(exc).__name__, exc)
        return None
    return entries or None


def _clean_page(text: str) -> str:
    # pypdf keeps the PDF's line breaks; trailing spaces and NULs only get in the way of search.
    return "\n".join(line.rstrip() for line in text.replace("\x00", "").splitlines()).strip()
