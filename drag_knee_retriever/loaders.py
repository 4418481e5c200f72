"""Files to :class:`~drag_knee_retriever.nodes.Document` objects: text, Markdown and PDF.

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
links anywhere), and a link loop is reported, not walked. A file larger than ``max_file_bytes``
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
"""

from __future__ import annotations

import fnmatch
import io
import logging
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, TextIO, Tuple, Union

from .errors import InvalidDocumentError, OcrUnavailableError
from .nodes import Document
from .ocr import OCR_PAGES_KEY, OcrConfig

if TYPE_CHECKING:  # pragma: no cover
    from .ocr import OcrMode

log = logging.getLogger(__name__)

PathLike = Union[str, "os.PathLike[str]"]
ProgressCallback = Callable[[str, int, int], None]

TEXT_SUFFIXES = (".txt", ".text", ".rst", ".log")
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")
PDF_SUFFIXES = (".pdf",)
SUPPORTED_SUFFIXES = TEXT_SUFFIXES + MARKDOWN_SUFFIXES + PDF_SUFFIXES
STDIN = "-"
#: Files above this size are skipped before they are read (a scanned 500-page book is ~100-200 MB).
DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024
#: Documents whose text is larger than this (UTF-8 bytes) are skipped: ~4,000 pages, 2.5x War and
#: Peace; embedding that much text takes about an hour on a laptop CPU (~30 ms per 1 kB leaf).
DEFAULT_MAX_TEXT_BYTES = 8 * 1024 * 1024
# Enough bytes to tell text from binary without reading a whole large file twice.
_SNIFF_BYTES = 8192
# Control characters that never appear in text files (everything below 0x20 except \t \n \f \r
# and ESC, which shows up in logs with colour codes).
_BINARY_CONTROL = bytes(set(range(0x20)) - {0x09, 0x0A, 0x0C, 0x0D, 0x1B})


@dataclass(frozen=True)
class SkippedFile:
    """A file that was not loaded, and why (the reason says how to fix it)."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class LoadReport:
    """The outcome of loading a batch of paths.

    ``documents`` are ready to index; ``skipped`` lists files that could not be loaded with the
    reason; ``ignored`` counts files inside folders that no include pattern (or supported suffix)
    selected, or that an exclude pattern removed.
    """

    documents: List[Document] = field(default_factory=list)
    skipped: List[SkippedFile] = field(default_factory=list)
    ignored: int = 0

    def __iter__(self):
        return iter(self.documents)

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def pages(self) -> int:
        """Total PDF pages loaded (0 for text-only batches)."""
        return sum(len(d.pages or ()) for d in self.documents)


@dataclass(frozen=True)
class FoundFile:
    """A file selected for loading and the root its document id is relative to."""

    path: Path
    root: Path

    @property
    def doc_id(self) -> str:
        try:
            relative = self.path.relative_to(self.root)
        except ValueError:  # pragma: no cover - discover() always pairs a file with its root
            relative = Path(self.path.name)
        text = PurePosixPath(*relative.parts).as_posix()
        return text if text not in ("", ".") else self.path.name


def kind_of(path: PathLike) -> Optional[str]:
    """``"text"``, ``"markdown"`` or ``"pdf"`` from the file suffix; ``None`` if unknown."""
    suffix = Path(path).suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in PDF_SUFFIXES:
        return "pdf"
    if suffix in TEXT_SUFFIXES:
        return "text"
    return None


def _matches(relative: str, patterns: Sequence[str]) -> bool:
    # A pattern matches the path relative to the root ("docs/*.md", "**/draft*") or the bare file
    # name ("*.md"), which is what users expect from globs like --include '*.md'.
    name = relative.rsplit("/", 1)[-1]
    for pattern in patterns:
        pattern = pattern.replace("\\", "/")
        if pattern.startswith("**/") and fnmatch.fnmatchcase(relative, pattern[3:]):
            return True
        if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(name, pattern):
            return True
    return False


def _wanted(relative: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    if exclude and _matches(relative, exclude):
        return False
    if include:
        return _matches(relative, include)
    return relative.lower().endswith(SUPPORTED_SUFFIXES)


def _kind_of_entry(mode: int) -> Optional[str]:
    """What a non-regular, non-folder file is, in words (None for a regular file or a folder)."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _resolve_link(link: Path) -> Tuple[Optional[Path], Optional[str]]:
    """A link's final target, or why it has none (a loop, a dangling link)."""
    try:
        return link.resolve(strict=True), None
    except RuntimeError:  # Python < 3.13: "Symlink loop from ..."
        return None, "is a link loop (it points back to itself); remove or fix the link."
    except OSError as exc:
        if exc.errno == 40:  # ELOOP (Python >= 3.13 raises OSError)
            return None, "is a link loop (it points back to itself); remove or fix the link."
        return None, f"is a link whose target cannot be reached ({exc.strerror or exc}); fix or remove the link."


def discover(
    paths: Iterable[PathLike],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    follow_links: bool = False,
    skipped: Optional[List[SkippedFile]] = None,
) -> Tuple[List[FoundFile], int]:
    """The files that ``paths`` name, in a stable order, and how many folder entries were ignored.

    A file named directly is always selected (unless an exclude pattern matches it); inside a
    folder, a file is selected when an include pattern matches it, or, with no include patterns,
    when its suffix is supported. Hidden files and folders (``.git``, ``.venv``) are skipped.
    Inside a folder, a link is followed only when its target lies inside that folder, unless
    ``follow_links``; named pipes, devices, sockets, link loops, links out of the folder and
    unreadable sub-folders are appended to ``skipped`` with the reason (or logged when it is None).
    A path named directly is taken as the user gave it (a link named on purpose is followed), but
    it too must be a regular file.

    Raises :class:`InvalidDocumentError` for a path that does not exist.
    """
    include = tuple(include or ())
    exclude = tuple(exclude or ())
    found: List[FoundFile] = []
    seen: set = set()
    ignored = 0

    def skip(where: Path, reason: str) -> None:
        if skipped is not None:
            skipped.append(SkippedFile(str(where), reason))
        log.info("skipped %s: %s", where, reason)

    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists() and not path.is_symlink():
            raise InvalidDocumentError(
                f"Path {str(raw)!r} does not exist; check the spelling, or run from the folder it is relative to."
            )
        if path.is_dir():
            root = path
            in_root: List[Tuple[str, Path]] = []
            real_root = path.resolve()
            # Folders already walked, by (device, inode): a link back to one of them is a loop.
            walked: set = set()

            def walk(folder: Path) -> None:
                nonlocal ignored
                try:
                    info = folder.stat()
                    walked.add((info.st_dev, info.st_ino))
                    with os.scandir(folder) as listing:
                        entries = sorted(listing, key=lambda e: e.name)
                except OSError as exc:
                    skip(folder, f"is a folder that cannot be read ({exc.strerror or exc}); check its permissions.")
                    return
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    file = Path(entry.path)
                    relative = PurePosixPath(*file.relative_to(root).parts).as_posix()
                    try:
                        is_link = entry.is_symlink()
                        if is_link:
                            target, problem = _resolve_link(file)
                            if problem is not None:
                                if _wanted(relative, include, exclude) or not _has_suffix(relative):
                                    skip(file, problem)
                                continue
                            assert target is not None
                            if not follow_links and not _inside(target, real_root):
                                if _wanted(relative, include, exclude) or target.is_dir():
                                    skip(file, f"is a link to {str(target)!r}, outside the folder being ingested; "
                                               "links out of the folder are not followed (pass --follow-links, "
                                               "or follow_links=True, to ingest it).")
                                else:
                                    ignored += 1
                                continue
                            mode = target.stat().st_mode
                        else:
                            mode = entry.stat(follow_symlinks=False).st_mode
                    except OSError as exc:
                        skip(file, f"cannot be examined ({exc.strerror or exc}); check its permissions.")
                        continue
                    if stat.S_ISDIR(mode):
                        info = file.stat()
                        if (info.st_dev, info.st_ino) in walked:
                            skip(file, "is a link to a folder that is already being read (a link loop); "
                                       "it was not walked again.")
                            continue
                        walk(file)
                        continue
                    if not _wanted(relative, include, exclude):
                        ignored += 1
                        continue
                    what = _kind_of_entry(mode)
                    if what is not None:
                        skip(file, f"is {what}, not a regular file; only regular files are read "
                                   "(exclude it with --exclude).")
                        continue
                    in_root.append((relative, file))

            walk(path)
            # Sorted by relative path (like `find | sort`): the same ids and order on every platform.
            # A file reached both directly and through a link inside the folder is loaded once,
            # under its own name (the link's name would change its id with every new alias).
            in_root.sort()
            preferred = {}
            for relative, file in sorted(in_root, key=lambda item: (item[1].is_symlink(), item[0])):
                preferred.setdefault(file.resolve(), file)
            for relative, file in in_root:
                key = file.resolve()
                if key not in seen and preferred.get(key) == file:
                    seen.add(key)
                    found.append(FoundFile(file, root))
        else:
            if exclude and _matches(path.name, exclude):
                ignored += 1
                continue
            if path.is_symlink():
                target, problem = _resolve_link(path)
                if problem is not None:
                    skip(path, problem)
                    continue
            try:
                mode = path.stat().st_mode
            except OSError as exc:
                skip(path, f"cannot be examined ({exc.strerror or exc}); check its permissions.")
                continue
            what = _kind_of_entry(mode)
            if what is not None:
                skip(path, f"is {what}, not a regular file; only regular files are read.")
                continue
            key = path.resolve()
            if key not in seen:
                seen.add(key)
                found.append(FoundFile(path, path.parent))
    return found, ignored


def _has_suffix(relative: str) -> bool:
    return "." in relative.rsplit("/", 1)[-1]


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
    ``follow_links`` follows links out of the folders given; ``max_file_bytes`` and
    ``max_text_bytes`` bound what one file may cost (see the module docs).
    """
    ocr_config = ocr_settings(ocr, ocr_languages, ocr_cache_dir)
    _check_limit("max_file_bytes", max_file_bytes)
    _check_limit("max_text_bytes", max_text_bytes)
    paths = list(paths)
    read_stdin = any(str(p) == STDIN for p in paths)
    found_skips: List[SkippedFile] = []
    files, ignored = discover([p for p in paths if str(p) != STDIN], include=include, exclude=exclude,
                              follow_links=follow_links, skipped=found_skips)
    if strict and found_skips:
        raise InvalidDocumentError(f"{found_skips[0]} (strict: nothing was loaded)")
    report = LoadReport(ignored=ignored, skipped=found_skips)
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
            accept(load_file(found.path, root=found.root, metadata=metadata, ocr=ocr_config, progress=progress,
                             max_file_bytes=max_file_bytes, max_text_bytes=max_text_bytes), str(found.path))
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


def _check_limit(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidDocumentError(f"{name} must be an integer number of bytes >= 1, got {value!r}.")


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


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
) -> Document:
    """Load one file as a :class:`Document`.

    The id is ``doc_id`` if given, else the path relative to ``root`` (default: the file's folder,
    so the id is the file name). ``kind`` overrides the suffix-based choice of ``"text"``,
    ``"markdown"`` or ``"pdf"``; an unknown suffix is read as text if it is valid UTF-8.

    PDF pages are OCR'd under ``ocr``: ``"auto"`` (pages whose text layer is empty or thinner
    than :attr:`OcrConfig.min_chars`), ``"always"``, ``"never"``, or an :class:`OcrConfig`;
    ``ocr_languages`` are Tesseract codes (``"eng+rus"``); ``ocr_cache_dir`` keeps the OCR text
    (pass a folder next to the index; default: the user cache folder).

    Raises :class:`InvalidDocumentError` with the reason and the fix when the file cannot be loaded
    (unreadable, not a regular file, larger than ``max_file_bytes``, text larger than
    ``max_text_bytes``, binary, not UTF-8, empty, encrypted, over a PDF parser limit, or image-only
    PDF that OCR cannot read), and :class:`~.ocr.OcrUnavailableError` when ``ocr="always"`` and
    the engine is not installed.
    """
    path = Path(path)
    where = f"File {str(path)!r}"
    if not path.exists():
        raise InvalidDocumentError(f"{where}: does not exist; check the path.")
    if path.is_dir():
        raise InvalidDocumentError(f"{where}: is a folder; use load_paths() for folders.")
    _check_limit("max_file_bytes", max_file_bytes)
    _check_limit("max_text_bytes", max_text_bytes)
    if doc_id is None:
        doc_id = FoundFile(path, Path(root) if root is not None else path.parent).doc_id
    kind = kind or kind_of(path) or "text"
    if kind not in ("text", "markdown", "pdf"):
        raise InvalidDocumentError(f"kind must be 'text', 'markdown' or 'pdf', got {kind!r}.")
    base: Dict[str, Any] = dict(metadata or {})
    base.update(
        {
            "source": str(path.resolve()),
            "path": doc_id,
            "kind": kind,
        }
    )
    if kind == "pdf":
        _check_file(path, where, max_file_bytes)
        try:
            pages, title, ocr_pages = _read_pdf(
                path, where, ocr_settings(ocr, ocr_languages, ocr_cache_dir), progress=progress
            )
        except (InvalidDocumentError, ImportError, OcrUnavailableError):
            raise
        except Exception as exc:
            raise InvalidDocumentError(_pdf_failure(where, exc)) from None
        _check_text_size(where, sum(len(p.encode("utf-8", "surrogatepass")) for p in pages), max_text_bytes)
        base["pages"] = len(pages)
        # Always present on PDFs (empty: every page from the text layer), so each leaf gets a text_source.
        base[OCR_PAGES_KEY] = ocr_pages
        if title:
            base["title"] = title
        return Document(id=doc_id, pages=pages, metadata=base, outline=pdf_outline(path, len(pages)))
    text = _read_text(path, where, min(max_file_bytes, max_text_bytes))
    _check_text_size(where, len(text.encode("utf-8", "surrogatepass")), max_text_bytes)
    title = markdown_title(text) if kind == "markdown" else text_title(text)
    if title:
        base["title"] = title
    return Document(id=doc_id, text=text, metadata=base)


def load_text(
    text: str,
    *,
    doc_id: str,
    kind: Optional[str] = None,
    metadata: Optional[Dict[str, Any]] = None,
) -> Document:
    """A :class:`Document` from a string (``kind`` from ``doc_id``'s suffix, default text)."""
    where = f"Text {doc_id!r}"
    kind = kind or kind_of(doc_id) or "text"
    if kind == "pdf":
        raise InvalidDocumentError(f"{where}: a PDF cannot be given as text; pass the file path instead.")
    if not text.strip():
        raise InvalidDocumentError(f"{where}: is empty; there is nothing to index.")
    base: Dict[str, Any] = dict(metadata or {})
    base.update({"source": doc_id, "path": doc_id, "kind": kind})
    title = markdown_title(text) if kind == "markdown" else text_title(text)
    if title:
        base["title"] = title
    return Document(id=doc_id, text=text.replace("\r\n", "\n"), metadata=base)


def load_stream(
    stream: Union[TextIO, io.BufferedIOBase, Any],
    *,
    doc_id: str = "stdin",
    kind: Optional[str] = None,
    metadata: Optional[Dict[str, Any]] = None,
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
) -> Document:
    """A :class:`Document` from an open stream (e.g. ``sys.stdin``), read to its end as UTF-8.

    At most ``max_text_bytes`` (plus one) are read: an endless stream is refused, not buffered.
    """
    where = f"Input {doc_id!r}"
    _check_limit("max_text_bytes", max_text_bytes)
    raw = stream.buffer.read(max_text_bytes + 1) if hasattr(stream, "buffer") else stream.read(max_text_bytes + 1)
    if len(raw) > max_text_bytes:
        raise InvalidDocumentError(
            f"{where}: is larger than the {_mb(max_text_bytes)} limit per document; split it, or raise the "
            "limit (--max-text-mb, or max_text_bytes=)."
        )
    if isinstance(raw, bytes):
        text = _decode(raw, where)
    else:
        text = raw
    if not text.strip():
        raise InvalidDocumentError(f"{where}: standard input was empty; pipe some text in.")
    return load_text(text, doc_id=doc_id, kind=kind, metadata=metadata)


def markdown_title(text: str) -> Optional[str]:
    """The first ATX heading (``# Title``) of a Markdown text, if any."""
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            in_fence = not in_fence
            continue
        if not in_fence and stripped.startswith("#"):
            title = stripped.lstrip("#").strip().rstrip("#").strip()
            if title and len(stripped) - len(stripped.lstrip("#")) <= 6:
                return title[:200]
    return None


def text_title(text: str) -> Optional[str]:
    """The first line of a plain text when it reads like a title.

    A title is short (at most 120 characters), stands alone (a blank line or the end follows it)
    and does not end like a sentence.
    """
    lines = text.lstrip().splitlines()
    if not lines:
        return None
    first = lines[0].strip()
    alone = len(lines) == 1 or not lines[1].strip()
    if first and alone and len(first) <= 120 and not first.endswith((".", ",", ";", ":")) and len(lines) > 1:
        return first
    return None


def _pdf_failure(where: str, exc: Exception) -> str:
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


def _check_text_size(where: str, size: int, limit: int) -> None:
    if size > limit:
        raise InvalidDocumentError(
            f"{where}: its text is {_mb(size)}, above the {_mb(limit)} limit per document (embedding that "
            "much takes hours); split it into parts, or raise the limit (--max-text-mb, or max_text_bytes=)."
        )


def _check_file(path: Path, where: str, limit: int) -> int:
    """Raise unless ``path`` is a regular file of at most ``limit`` bytes; its size (read nothing)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise InvalidDocumentError(f"{where}: cannot be examined ({exc.strerror or exc}).") from None
    what = _kind_of_entry(info.st_mode)
    if what is not None:
        raise InvalidDocumentError(f"{where}: is {what}, not a regular file; only regular files are read.")
    if info.st_size > limit:
        raise InvalidDocumentError(
            f"{where}: is {_mb(info.st_size)}, above the {_mb(limit)} limit per file; split it, or raise the "
            "limit (--max-file-mb, or max_file_bytes=)."
        )
    return info.st_size


def _read_bytes(path: Path, where: str, limit: Optional[int] = None) -> bytes:
    """The file's bytes: a regular file only, and never more than ``limit`` bytes read.

    The file is opened without blocking (a FIFO swapped in after discovery cannot hang the
    read) and checked again on the open descriptor; the read stops one byte past the limit, so a
    file that grows, or reports a false size (``/proc``), cannot exhaust memory.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except PermissionError:
        raise InvalidDocumentError(f"{where}: permission denied; check the file's permissions.") from None
    except OSError as exc:
        raise InvalidDocumentError(f"{where}: cannot be read ({exc.strerror or exc}).") from None
    with os.fdopen(fd, "rb") as handle:
        try:
            info = os.fstat(fd)
            what = _kind_of_entry(info.st_mode)
            if what is not None:
                raise InvalidDocumentError(f"{where}: is {what}, not a regular file; only regular files are read.")
            if limit is not None and info.st_size > limit:
                raise InvalidDocumentError(
                    f"{where}: is {_mb(info.st_size)}, above the {_mb(limit)} limit per file; split it, or raise "
                    "the limit (--max-text-mb / --max-file-mb, or max_text_bytes= / max_file_bytes=)."
                )
            raw = handle.read() if limit is None else handle.read(limit + 1)
        except PermissionError:
            raise InvalidDocumentError(f"{where}: permission denied; check the file's permissions.") from None
        except OSError as exc:
            raise InvalidDocumentError(f"{where}: cannot be read ({exc.strerror or exc}).") from None
    if limit is not None and len(raw) > limit:
        raise InvalidDocumentError(
            f"{where}: is larger than the {_mb(limit)} limit per file (it grew while being read); split it, "
            "or raise the limit (--max-text-mb / --max-file-mb, or max_text_bytes= / max_file_bytes=)."
        )
    return raw


def _decode(raw: bytes, where: str) -> str:
    head = raw[:_SNIFF_BYTES]
    # UTF-16/32 text has a BOM and NULs; everything else with NULs or stray control bytes is binary.
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InvalidDocumentError(
            f"{where}: is UTF-16 text; convert it to UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)."
        )
    if b"\x00" in head or sum(head.count(bytes([c])) for c in _BINARY_CONTROL) > len(head) // 100 + 2:
        raise InvalidDocumentError(
            f"{where}: looks binary, not text; only text, Markdown and PDF files can be ingested "
            "(exclude it with --exclude or convert it to text)."
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidDocumentError(
            f"{where}: is not valid UTF-8 (bad byte at offset {exc.start}); convert it, e.g. "
            "iconv -f CP1252 -t UTF-8 (or the file's real encoding)."
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _read_text(path: Path, where: str, limit: Optional[int] = None) -> str:
    raw = _read_bytes(path, where, limit)
    if not raw.strip():
        raise InvalidDocumentError(f"{where}: is empty; there is nothing to index.")
    if raw.startswith(b"%PDF-"):
        raise InvalidDocumentError(f"{where}: is a PDF with a text suffix; rename it to .pdf.")
    text = _decode(raw, where)
    if not text.strip():
        raise InvalidDocumentError(f"{where}: has only whitespace; there is nothing to index.")
    return text


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


def _read_pdf(
    path: Path, where: str, ocr: Optional[OcrConfig] = None, progress: Optional[ProgressCallback] = None
) -> Tuple[List[str], Optional[str], List[int]]:
    ocr = ocr or OcrConfig()
    pypdf = _import_pypdf()
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PdfStreamError

    raw = _read_bytes(path, where)
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
    from .ocr import fill_pages

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


__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_TEXT_BYTES",
    "FoundFile",
    "LoadReport",
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
