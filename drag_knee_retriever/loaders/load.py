"""Loading files and batches of paths into documents: the entry points that tie discovery and readers together."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, TextIO, Union

from drag_knee_retriever.errors import InvalidDocumentError, OcrUnavailableError
from drag_knee_retriever.model._nodes import FILE_STAMP_KEY, Document
from drag_knee_retriever.build._ocr import OcrConfig
from drag_knee_retriever.model._point_schema import OCR_PAGES_KEY
from drag_knee_retriever.loaders.discover import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_TEXT_BYTES,
    STDIN,
    FoundFile,
    PathLike,
    ProgressCallback,
    SkippedFile,
    discover,
    file_stamp,
    kind_of,
)
from drag_knee_retriever.loaders.pdf import PdfLimits, pdf_failure, read_pdf, ocr_settings, pdf_outline
from drag_knee_retriever.loaders.text import check_file, check_byte_limit, check_text_size, read_text, load_stream, markdown_title, text_title

if TYPE_CHECKING:  # pragma: no cover
    from drag_knee_retriever.build._ocr import OcrMode

log = logging.getLogger("drag_knee_retriever.loaders")  # one logger for the package: the CLI quiets it by this name


@dataclass
class LoadReport:
    """The outcome of loading a batch of paths.

    ``documents`` are ready to index; ``skipped`` lists files that could not be loaded with the
    reason; ``ignored`` counts files inside folders that no include pattern (or supported suffix)
    selected, or that an exclude pattern removed; ``unchanged`` the document ids of files not read
    because their size and modification time match the stored ones (``stored_stamps``).
    """

    documents: List[Document] = field(default_factory=list)
    skipped: List[SkippedFile] = field(default_factory=list)
    ignored: int = 0
    unchanged: List[str] = field(default_factory=list)

    def __iter__(self):
        return iter(self.documents)

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def pages(self) -> int:
        """Total PDF pages loaded (0 for text-only batches)."""
        return sum(len(d.pages or ()) for d in self.documents)


def load_paths(
    paths: Iterable[PathLike],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    stdin: Optional[TextIO] = None,
    stdin_name: str = "stdin",
    metadata: Optional[Dict[str, Any]] = None,
    progress: Optional[ProgressCallback] = None,
    ocr: Union["OcrMode", OcrConfig] = "auto",
    ocr_languages: Optional[str] = None,
    ocr_cache_dir: Optional[PathLike] = None,
    follow_links: bool = False,
    strict: bool = False,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
    pdf_limits: Optional[PdfLimits] = None,
    stored_stamps: Optional[Callable[[Sequence[str]], Mapping[str, str]]] = None,
) -> LoadReport:
    """Load files and folders (and ``"-"`` for standard input) into documents.

    ``progress(phase, done, total)`` is called with phase ``"reading"`` after every file, and
    with phase ``"ocr"`` after every OCR'd page of a PDF (``done`` of that PDF's ``total``).
    ``ocr``, ``ocr_languages`` and ``ocr_cache_dir``: see :func:`load_file`. Asking for OCR
    (``"always"``) without the engine raises :class:`~.ocr.OcrUnavailableError` for the whole
    call; under ``"auto"`` an image-only PDF is skipped with the install command as the reason.
    ``metadata`` is merged into every document's metadata (the loader's own keys win).
    Files that cannot be loaded are listed in the report's ``skipped``; see the module docs.
    ``strict=True`` raises :class:`InvalidDocumentError` at the first file that would be skipped.
    ``follow_links`` follows links out of the folders given; ``max_file_bytes``,
    ``max_text_bytes`` and ``pdf_limits`` (:class:`~.pdf.PdfLimits`) bound what one file may cost
    (see the module docs).

    ``stored_stamps`` (e.g. :meth:`DragKneeIndex.file_stamps`): document ids -> the stamps stored
    with them; a file whose size and modification time (from the folder listing) match is not
    read at all and is listed in ``unchanged`` (re-ingesting a folder costs what changed). A
    file's document carries its stamp in ``metadata["file_stamp"]``, which is not part of its hash.
    """
    ocr_config = ocr_settings(ocr, ocr_languages, ocr_cache_dir)
    check_byte_limit("max_file_bytes", max_file_bytes)
    check_byte_limit("max_text_bytes", max_text_bytes)
    paths = list(paths)
    read_stdin = any(str(p) == STDIN for p in paths)
    found_skips: List[SkippedFile] = []
    files, ignored = discover([p for p in paths if str(p) != STDIN], include=include, exclude=exclude,
                              follow_links=follow_links, skipped=found_skips)
    if strict and found_skips:
        raise InvalidDocumentError(f"{found_skips[0]} (strict: nothing was loaded)")
    report = LoadReport(ignored=ignored, skipped=found_skips)
    if stored_stamps is not None and files:
        # One look-up for the whole batch; a file whose stamp matches is never opened.
        stored = stored_stamps([f.doc_id for f in files])
        fresh = []
        for found in files:
            if found.stamp is not None and stored.get(found.doc_id) == found.stamp:
                report.unchanged.append(found.doc_id)
            else:
                fresh.append(found)
        files = fresh
    total = len(files) + (1 if read_stdin else 0)
    done = 0
    ids: Dict[str, str] = {}

    def accept(document: Document, where: str) -> None:
        if document.id in ids:
            report.skipped.append(
                SkippedFile(
                    where,
                    f"same document id {document.id!r} as {ids[document.id]} (same relative path "
                    "under two roots); ingest the two folders in separate runs or rename one.",
                )
            )
            return
        ids[document.id] = where
        report.documents.append(document)

    if read_stdin:
        stream = stdin if stdin is not None else sys.stdin
        try:
            accept(load_stream(stream, doc_id=stdin_name, metadata=metadata, max_text_bytes=max_text_bytes), "<stdin>")
        except InvalidDocumentError as exc:
            if strict:
                raise
            report.skipped.append(SkippedFile("<stdin>", _reason(exc, f"Input {stdin_name!r}")))
        done += 1
        if progress is not None:
            progress("reading", done, total)
    for found in files:
        try:
            accept(_load_file(found.path, root=found.root, metadata=metadata, ocr=ocr_config, progress=progress,
                              max_file_bytes=max_file_bytes, max_text_bytes=max_text_bytes, found=found,
                              pdf_limits=pdf_limits, stamp=found.stamp),
                   str(found.path))
        except InvalidDocumentError as exc:
            if strict:
                raise
            reason = _reason(exc, f"File {str(found.path)!r}")
            report.skipped.append(SkippedFile(str(found.path), reason))
            # info, not warning: the report carries every skip, and callers decide how to show it.
            log.info("skipped %s: %s", found.path, reason)
        done += 1
        if progress is not None:
            progress("reading", done, total)
    return report



def _reason(exc: Exception, where: str) -> str:
    # load_file's messages start with the path; the report already carries it.
    text = str(exc)
    prefix = where + ": "
    return text[len(prefix) :] if text.startswith(prefix) else text


def load_file(
    path: PathLike,
    *,
    root: Optional[PathLike] = None,
    kind: Optional[str] = None,
    doc_id: Optional[str] = None,
    metadata: Optional[Dict[str, Any]] = None,
    ocr: Union["OcrMode", OcrConfig] = "auto",
    ocr_languages: Optional[str] = None,
    ocr_cache_dir: Optional[PathLike] = None,
    progress: Optional[ProgressCallback] = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
    pdf_limits: Optional[PdfLimits] = None,
    stamp: Optional[str] = None,
) -> Document:
    """Load one file as a :class:`Document`.

    The id is ``doc_id`` if given, else the path relative to ``root`` (default: the file's folder,
    so the id is the file name). ``kind`` overrides the suffix-based choice of ``"text"``,
    ``"markdown"`` or ``"pdf"``; an unknown suffix is read as text if it is valid UTF-8.

    PDF pages are OCR'd under ``ocr``: ``"auto"`` (pages whose text layer is empty or thinner
    than :attr:`OcrConfig.min_chars`), ``"always"``, ``"never"``, or an :class:`OcrConfig`;
    ``ocr_languages`` are language names (``"english+russian"`` or a tuple; Tesseract codes still read, deprecated); ``ocr_cache_dir`` keeps the OCR text
    (pass a folder next to the index; default: the user cache folder).

    Raises :class:`InvalidDocumentError` with the reason and the fix when the file cannot be loaded
    (unreadable, not a regular file, larger than ``max_file_bytes``, text larger than
    ``max_text_bytes``, binary, not UTF-8, empty, encrypted, over a PDF parser limit or over
    ``pdf_limits`` (:class:`~.pdf.PdfLimits`: pages, content bytes, CPU time), or image-only
    PDF that OCR cannot read), and :class:`~.ocr.OcrUnavailableError` when ``ocr="always"`` and
    the engine is not installed.

    ``stamp``: the file's ``"<size>:<mtime_ns>"`` as the caller saw it (default: a stat taken
    here, before reading: a file changed while it is read gets a stamp older than its content,
    so the next re-ingest reads it again), kept in ``metadata["file_stamp"]``.
    """
    return _load_file(Path(path), root=root, kind=kind, doc_id=doc_id, metadata=metadata,
                      ocr=ocr_settings(ocr, ocr_languages, ocr_cache_dir), progress=progress,
                      max_file_bytes=max_file_bytes, max_text_bytes=max_text_bytes, pdf_limits=pdf_limits,
                      stamp=stamp)


def _load_file(
    path: Path,
    *,
    root: Optional[PathLike],
    metadata: Optional[Dict[str, Any]],
    ocr: OcrConfig,
    progress: Optional[ProgressCallback],
    max_file_bytes: int,
    max_text_bytes: int,
    kind: Optional[str] = None,
    doc_id: Optional[str] = None,
    found: Optional[FoundFile] = None,
    pdf_limits: Optional[PdfLimits] = None,
    stamp: Optional[str] = None,
) -> Document:
    """:func:`load_file`; ``found`` (from :func:`~.discover.discover`) makes the read open exactly
    the file discovery checked (see :func:`.text._open_file`)."""
    where = f"File {str(path)!r}"
    if found is None:
        if not path.exists():
            raise InvalidDocumentError(f"{where}: does not exist; check the path.")
        if path.is_dir():
            raise InvalidDocumentError(f"{where}: is a folder; use load_paths() for folders.")
    check_byte_limit("max_file_bytes", max_file_bytes)
    check_byte_limit("max_text_bytes", max_text_bytes)
    if doc_id is None:
        doc_id = FoundFile(path, Path(root) if root is not None else path.parent).doc_id
    kind = kind or kind_of(path) or "text"
    if kind not in ("text", "markdown", "pdf"):
        raise InvalidDocumentError(f"kind must be 'text', 'markdown' or 'pdf', got {kind!r}.")
    base: Dict[str, Any] = dict(metadata or {})
    if stamp is None:
        try:
            stamp = file_stamp(os.stat(path))
        except OSError:  # the reader says what is wrong with the file
            stamp = None
    base.update(
        {
            "source": _source(path, found),
            "path": doc_id,
            "kind": kind,
        }
    )
    if stamp is not None:
        base[FILE_STAMP_KEY] = stamp
    if kind == "pdf":
        if found is None:
            check_file(path, where, max_file_bytes)
        try:
            pages, title, ocr_pages, reader = read_pdf(path, where, ocr, progress=progress, found=found,
                                                        limit=max_file_bytes, max_text_bytes=max_text_bytes,
                                                        limits=pdf_limits)
        except (InvalidDocumentError, ImportError, OcrUnavailableError):
            raise
        except Exception as exc:
            raise InvalidDocumentError(pdf_failure(where, exc)) from None
        check_text_size(where, sum(len(p.encode("utf-8", "surrogatepass")) for p in pages), max_text_bytes)
        base["pages"] = len(pages)
        # Always present on PDFs (empty: every page from the text layer), so each leaf gets a text_source.
        base[OCR_PAGES_KEY] = ocr_pages
        if title:
            base["title"] = title
        return Document(id=doc_id, pages=pages, metadata=base, outline=pdf_outline(reader, len(pages)))
    text = read_text(path, where, min(max_file_bytes, max_text_bytes), found)
    check_text_size(where, len(text.encode("utf-8", "surrogatepass")), max_text_bytes)
    title = markdown_title(text) if kind == "markdown" else text_title(text)
    if title:
        base["title"] = title
    return Document(id=doc_id, text=text, metadata=base)


def _source(path: Path, found: Optional[FoundFile]) -> str:
    """The absolute path a document came from (``metadata["source"]``), without a second look
    at a file discovery already resolved."""
    if found is not None and found.real is not None:
        return str(found.real)  # resolved by discovery
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):  # a link changed under us: the path as given, made absolute
        return str(path.absolute())
