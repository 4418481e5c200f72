"""Files to :class:`~drag_knee_retriever.model._nodes.Document` objects: text, Markdown and PDF.

- **Text** (``.txt``, ``.text``, ``.rst``, ``.log``, or any file named by an ``include`` glob that
  decodes as UTF-8): the text as it is; the builder makes leaves from its paragraphs.
- **Markdown** (``.md``, ``.markdown``, ``.mdown``, ``.mkd``): the text as it is, with
  ``metadata["kind"] = "markdown"``; the builder splits it into sections by heading.
- **PDF** (``.pdf``, needs the ``pdf`` extra): one page per leaf, so results cite real page numbers.
  Pages without text are kept as empty pages so the numbering stays true. Pages whose text layer
  is empty or too thin are OCR'd (``ocr="auto"``, the default; ``"always"`` OCRs every page,
  ``"never"`` none; needs the ``ocr`` extra and the Tesseract engine, see :mod:`.ocr`); the
  document's ``metadata["ocr_pages"]`` lists the OCR'd page numbers and every leaf records
  ``text_source`` ``"pdf"`` or ``"ocr"``.

Paths may be files or folders (walked recursively, hidden entries skipped, filtered by
``include`` / ``exclude`` globs). Inside a folder only regular files are read: named pipes,
devices and sockets are skipped with the reason (reading them would hang or never end); a link
is followed only when its target stays inside the folder given (``follow_links=True`` follows
links anywhere), and a link loop is reported, not walked. The folder may change while it is read
(a writer into it swapping a file for a link to ``/etc/shadow``): each file is opened once, without
following a link, and read only if the descriptor is the very file the walk checked (same device
and inode); every read of it (text, PDF pages, outline, OCR) uses those bytes, so a swapped file is
skipped ("changed after the folder was read"), never read. A hard link is the same file under a
second name: where the kernel protects hard links (Linux ``fs.protected_hardlinks = 1``, the usual
default) only someone who could read the file can link it, so it is read; elsewhere a file with
several links that belongs to another user is skipped (``follow_links=True`` reads it). A file larger than ``max_file_bytes``
(default :data:`DEFAULT_MAX_FILE_BYTES`, 256 MB: a book-length PDF with images passes) is
skipped before a byte is read, and a document whose text is larger than ``max_text_bytes``
(default :data:`DEFAULT_MAX_TEXT_BYTES`, 8 MB of UTF-8, about 4,000 pages) is skipped too: its
ingest would take hours of embedding (split it into parts, or raise the limit). A document's id is its path relative to the root it was found
under (``guide/intro.md``), in POSIX form, so ingesting the same folder again from anywhere gives
the same ids and replaces changed documents instead of duplicating them.

One bad file never sinks the batch: binary files, invalid UTF-8, empty, unreadable or oversized
files, encrypted or scanned (image-only) PDFs, PDFs that exceed pypdf's limits (decompression
bombs, page trees deeper than 100) or need a missing package (AES-256 without ``cryptography``)
are listed in :attr:`LoadReport.skipped` with the reason and the fix. ``strict=True`` raises
:class:`InvalidDocumentError` at the first such file instead.
A path that does not exist is an error for the whole call (a typo should not silently load less).

The package is split by job: :mod:`.discover` (which files; hostile entries, size caps, skip
reasons), :mod:`.text` (safe reads, text and Markdown, titles), :mod:`.pdf` (pages, OCR hook,
outline) and :mod:`.load` (``load_file`` / ``load_paths``). Everything is re-exported here.
"""

from __future__ import annotations

from drag_knee_retriever.loaders.discover import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_TEXT_BYTES,
    MARKDOWN_SUFFIXES,
    PDF_SUFFIXES,
    STDIN,
    SUPPORTED_SUFFIXES,
    TEXT_SUFFIXES,
    FoundFile,
    PathLike,
    ProgressCallback,
    SkippedFile,
    discover,
    hard_link_problem,
    kind_of,
)
from drag_knee_retriever.loaders.load import LoadReport, load_file, load_paths
from drag_knee_retriever.loaders.pdf import DEFAULT_PDF_LIMITS, PdfLimits, ocr_settings, pdf_outline
from drag_knee_retriever.loaders.text import (
    load_stream,
    load_text,
    markdown_title,
    text_title,
)

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_TEXT_BYTES",
    "FoundFile",
    "LoadReport",
    "PdfLimits",
    "MARKDOWN_SUFFIXES",
    "PDF_SUFFIXES",
    "SUPPORTED_SUFFIXES",
    "SkippedFile",
    "TEXT_SUFFIXES",
    "discover",
    "kind_of",
    "load_file",
    "load_paths",
    "load_stream",
    "load_text",
    "markdown_title",
    "ocr_settings",
    "text_title",
]
