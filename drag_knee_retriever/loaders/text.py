"""Reading text and Markdown safely (regular files only, bounded reads, UTF-8 checks) and their titles."""

from __future__ import annotations

import errno
import io
import os
import unicodedata
from pathlib import Path
from typing import Any, Dict, Optional, TextIO, Union

from drag_knee_retriever.errors import InvalidDocumentError
from drag_knee_retriever.model._nodes import Document
from drag_knee_retriever.loaders.discover import DEFAULT_MAX_TEXT_BYTES, FoundFile, kind_of_entry, kind_of

# Enough bytes to tell text from binary without reading a whole large file twice.
_SNIFF_BYTES = 8192
# Control characters that never appear in text files (everything below 0x20 except \t \n \f \r
# and ESC, which shows up in logs with colour codes).
_BINARY_CONTROL = bytes(set(range(0x20)) - {0x09, 0x0A, 0x0C, 0x0D, 0x1B})


#: Unicode categories that show nothing: format characters (zero-width space, joiners, BOM, soft
#: hyphen, direction marks), controls, and separators.
_INVISIBLE = frozenset({"Cf", "Cc", "Zs", "Zl", "Zp"})


def has_visible_text(text: str) -> bool:
    """Whether ``text`` shows anything: a text of zero-width characters (U+200B, U+2060, U+FEFF ...)
    and spaces looks empty and has nothing to index. Stops at the first visible character, so a
    real text costs one look."""
    for char in text:
        if not char.isspace() and unicodedata.category(char) not in _INVISIBLE:
            return True
    return False


_NOTHING_VISIBLE = ("has no visible text (only zero-width, control or space characters); there is nothing "
                    "to index.")


def check_byte_limit(name: str, value: Any) -> None:
    """Refuse a size limit setting (``max_file_bytes``, ``max_text_bytes``) that is not an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidDocumentError(f"{name} must be an integer number of bytes >= 1, got {value!r}.")


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


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
    if not has_visible_text(text):
        raise InvalidDocumentError(f"{where}: {_NOTHING_VISIBLE}")
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
    check_byte_limit("max_text_bytes", max_text_bytes)
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

def check_text_size(where: str, size: int, limit: int) -> None:
    """Refuse a document whose text is larger than ``limit`` bytes, saying how to split or allow it."""
    if size > limit:
        raise InvalidDocumentError(
            f"{where}: its text is {_mb(size)}, above the {_mb(limit)} limit per document (embedding that "
            "much takes hours); split it into parts, or raise the limit (--max-text-mb, or max_text_bytes=)."
        )


def check_file(path: Path, where: str, limit: int) -> int:
    """Raise unless ``path`` is a regular file of at most ``limit`` bytes; its size (read nothing)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise InvalidDocumentError(f"{where}: cannot be examined ({exc.strerror or exc}).") from None
    what = kind_of_entry(info.st_mode)
    if what is not None:
        raise InvalidDocumentError(f"{where}: is {what}, not a regular file; only regular files are read.")
    if info.st_size > limit:
        raise InvalidDocumentError(
            f"{where}: is {_mb(info.st_size)}, above the {_mb(limit)} limit per file; split it, or raise the "
            "limit (--max-file-mb, or max_file_bytes=)."
        )
    return info.st_size


def _open_file(path: Path, where: str, found: Optional[FoundFile] = None) -> int:
    """A descriptor of the file to read: opened once, then checked on the descriptor itself.

    Opened without blocking (a FIFO swapped in after discovery cannot hang the read). For a file
    :func:`~.discover.discover` found (``found``), the path discovery resolved is opened without
    following a link (``O_NOFOLLOW``) and the descriptor's (device, inode) must be the one discovery
    checked: a file swapped for a link (to ``/etc/shadow``) or for another file after the folder was
    read is refused, never read. Every later read (text, PDF, outline, OCR) uses these bytes only.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    target: Union[Path, str] = path
    if found is not None and found.real is not None:
        flags |= getattr(os, "O_NOFOLLOW", 0)
        target = found.real
    try:
        fd = os.open(target, flags)
    except PermissionError:
        raise InvalidDocumentError(f"{where}: permission denied; check the file's permissions.") from None
    except OSError as exc:
        if found is not None and exc.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW met a link
            raise InvalidDocumentError(f"{where}: {_CHANGED} (it is a link now).") from None
        raise InvalidDocumentError(f"{where}: cannot be read ({exc.strerror or exc}).") from None
    try:
        info = os.fstat(fd)
        if found is not None and found.identity is not None and (info.st_dev, info.st_ino) != found.identity:
            raise InvalidDocumentError(f"{where}: {_CHANGED} (another file took its place).")
        what = kind_of_entry(info.st_mode)
        if what is not None:
            raise InvalidDocumentError(f"{where}: is {what}, not a regular file; only regular files are read.")
    except BaseException:
        os.close(fd)
        raise
    return fd


#: Why a file that changed between discovery and the read is skipped.
_CHANGED = ("changed after the folder was read, so it was not read (a file replaced by a link or by another file "
            "could show a file from outside the folder); run the command again")


def read_bytes(path: Path, where: str, limit: Optional[int] = None, found: Optional[FoundFile] = None) -> bytes:
    """The file's bytes: a regular file only, and never more than ``limit`` bytes read.

    See :func:`_open_file` (one open, checked on the descriptor; ``found`` ties it to what
    discovery saw). The read stops one byte past the limit, so a file that grows, or reports a
    false size (``/proc``), cannot exhaust memory.
    """
    fd = _open_file(path, where, found)
    with os.fdopen(fd, "rb") as handle:
        try:
            info = os.fstat(fd)
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


def read_text(path: Path, where: str, limit: Optional[int] = None, found: Optional[FoundFile] = None) -> str:
    """A text file's content (see :func:`read_bytes`), refused when empty, a PDF or not UTF-8 text."""
    raw = read_bytes(path, where, limit, found)
    if not raw.strip():
        raise InvalidDocumentError(f"{where}: is empty; there is nothing to index.")
    if raw.startswith(b"%PDF-"):
        raise InvalidDocumentError(f"{where}: is a PDF with a text suffix; rename it to .pdf.")
    text = _decode(raw, where)
    if not text.strip():
        raise InvalidDocumentError(f"{where}: has only whitespace; there is nothing to index.")
    if not has_visible_text(text):
        raise InvalidDocumentError(f"{where}: {_NOTHING_VISIBLE}")
    return text
