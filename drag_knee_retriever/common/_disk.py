"""Disk trouble around an embedded index: free space checked before the engine maps its files,
and the operating system's refusals (full, read-only, no permission) named as such.

Qdrant Edge memory-maps its write-ahead log and segment files. On a full disk a write into such a
mapping cannot fail politely: the kernel sends SIGBUS and the process dies with exit code 135,
printing nothing. Measured on a tmpfs with a 49-node index (``tests/hardening/test_disk_trouble.py``):
opening materialises the two 32 MiB WAL segments (66 MB used), so it died with 60 MB free and
worked with 70 MB. The only defence is to look before leaping: :func:`check_free_space` runs before
an embedded index is opened or written, and refuses with a :class:`StoreIOError` that names the
folder, the space needed and the space free. An error the engine does report (``ENOSPC``,
``EROFS``, ``EACCES``, ``EDQUOT``) becomes a :class:`StoreIOError` too, saying that the index
itself is intact (a document becomes visible only when its root, written last, is stored).
"""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path
from typing import Optional, Union

from drag_knee_retriever.errors import StoreIOError

MIB = 1024 * 1024
#: Qdrant Edge's WAL segment: two are kept open, each materialised in full when the shard opens.
EDGE_WAL_SEGMENT = 32 * MIB
#: Head room kept free beyond the estimate (segment metadata, payload pages, the flush on close).
MARGIN = 16 * MIB
#: Kept free before every write with a WAL: the log may start a new segment at any batch.
WRITE_MARGIN = EDGE_WAL_SEGMENT + MARGIN
#: What one written node costs on disk, generously: its vectors, payload and text, in the WAL
#: and again in a segment (measured ~6 kB for a 2,000-character leaf; 16 kB keeps a margin).
BYTES_PER_NODE = 16 * 1024

# errno -> (what happened, what to do); the first phrase also goes into the message.
_KNOWN = {
    errno.ENOSPC: ("the disk is full", "free some space on it (or move the index with --index to another disk)"),
    errno.EDQUOT: ("the disk quota is exhausted", "free some space within your quota"),
    errno.EROFS: ("the file system is read-only", "copy the index folder to a writable disk and open the copy"),
    errno.EACCES: ("permission was denied", "check the folder's owner and permissions (ls -ld), or use another folder"),
    errno.EPERM: ("the operation is not permitted", "check the folder's owner and permissions (ls -ld)"),
}
_OS_ERROR_TEXT = re.compile(r"\(os error (\d+)\)|\[Errno (\d+)\]|No space left on device|Read-only file system|"
                            r"Permission denied|Disk quota exceeded|database or disk is full|"
                            r"attempt to write a readonly database", re.IGNORECASE)
# The same refusals in words: the OS's, and SQLite's (qdrant-client local mode stores in SQLite).
_TEXT_ERRNO = {"no space left on device": errno.ENOSPC, "read-only file system": errno.EROFS,
               "permission denied": errno.EACCES, "disk quota exceeded": errno.EDQUOT,
               "database or disk is full": errno.ENOSPC, "attempt to write a readonly database": errno.EROFS}


def free_bytes(path: Union[str, Path]) -> Optional[int]:
    """Bytes available to this user on the file system holding ``path`` (or its nearest existing parent)."""
    probe = Path(path)
    while not probe.exists():
        if probe.parent == probe:
            return None
        probe = probe.parent
    try:
        info = os.statvfs(probe)
    except (OSError, AttributeError):  # no statvfs (Windows) or an odd mount: do not guess
        return None
    return info.f_bavail * info.f_frsize


def unallocated_bytes(folder: Union[str, Path]) -> int:
    """Bytes the engine will still materialise in ``folder``'s sparse files (apparent size minus blocks)."""
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            try:
                info = os.stat(os.path.join(dirpath, name))
            except OSError:
                continue
            allocated = getattr(info, "st_blocks", None)
            if allocated is not None:
                total += max(0, info.st_size - allocated * 512)
    return total


#: Head room for opening an existing shard: the lock, the pending list and the index record (a few
#: kB), and the engine's flush on close. Opening writes nothing else beyond what it materialises.
OPEN_MARGIN = 2 * MIB

# The sparse files of a shard that Qdrant Edge 0.9 writes out in full when it loads the shard: the
# payload indexes' files (mapped pages, trackers, flags), and the dense vectors of a shard that holds
# them in RAM (read into memory from their chunk files). Measured on a tmpfs
# (tests/hardening/test_disk_trouble.py): loading a 5-node index allocated 32 MB of
# vectors/chunk_0.mmap (vectors in RAM) and 21 MB of payload_index/*-map files, while the log
# (wal/open-*, 2 x 32 MiB), the payload store and the sparse-vector store pages stayed sparse. A shard
# whose dense vectors are memory-mapped (``on_disk``, the default of new shards since index format 2)
# leaves its chunk files sparse too; a copy made with ``cp --sparse=always`` has its payload indexes'
# flag files sparse as well (1 MB each, written out on load): loading a copied 49-node index of
# format 2 (both shards) allocated 52 MB, all of it payload_index files.
_PAYLOAD_PAGES = re.compile(r"(^|/)segments/[^/]+/payload_index/.+$")
_VECTOR_CHUNKS = re.compile(r"(^|/)segments/[^/]+/vector_storage-[^/]+/vectors/chunk_\d+\.mmap$")
#: The file that marks a Qdrant Edge shard folder, with its settings (the dense vectors' ``on_disk``).
_EDGE_CONFIG = "edge_config.json"


def _vectors_in_ram(shard_folder: Path) -> bool:
    """Whether a shard keeps dense vectors in RAM (its chunk files are written out on load).

    Read from the shard's own settings file; when it cannot be read, assume RAM (the larger need)."""
    try:
        config = json.loads((shard_folder / _EDGE_CONFIG).read_text(encoding="utf-8"))
        vectors = config.get("vectors") or {}
        return not all(bool((params or {}).get("on_disk")) for params in vectors.values())
    except (OSError, ValueError, AttributeError):
        return True


def _unallocated(path: str) -> int:
    try:
        info = os.stat(path)
    except OSError:
        return 0
    allocated = getattr(info, "st_blocks", None)
    return max(0, info.st_size - allocated * 512) if allocated is not None else 0


def edge_open_needs(shard_folder: Union[str, Path], *, wal: bool = True) -> int:
    """Free bytes Qdrant Edge needs to open (or create) the shard in ``shard_folder``.

    An existing shard: the unallocated bytes of the files its load writes out (see
    :data:`_PAYLOAD_PAGES`, :data:`_VECTOR_CHUNKS`), in it and in every shard folder inside it (the
    roots' own shard, ``<shard>/roots``, is loaded with it), plus :data:`OPEN_MARGIN`; what it uses,
    no more, so an index whose write was refused for space can still be opened to search or list
    it. A new shard: its two log segments and :data:`MARGIN` (its own files grow as nodes are
    written, and every write is checked)."""
    folder = Path(shard_folder)
    if not (folder / "segments").is_dir():
        return (2 * EDGE_WAL_SEGMENT if wal else 0) + MARGIN
    needed = 0
    for dirpath, _dirs, files in os.walk(folder):
        if "segments" not in _dirs and _EDGE_CONFIG not in files:
            continue
        shard = Path(dirpath)
        chunks = _vectors_in_ram(shard)
        for segment_path, _subdirs, segment_files in os.walk(shard / "segments"):
            for name in segment_files:
                path = os.path.join(segment_path, name)
                relative = Path(path).relative_to(shard).as_posix()
                if _PAYLOAD_PAGES.search(relative) or (chunks and _VECTOR_CHUNKS.search(relative)):
                    needed += _unallocated(path)
    return needed + OPEN_MARGIN


def check_free_space(folder: Union[str, Path], needed: int, what: str) -> None:
    """Raise :class:`StoreIOError` when the disk holding ``folder`` has less than ``needed`` bytes free."""
    free = free_bytes(folder)
    if free is None or free >= needed:
        return
    raise StoreIOError(
        f"Not enough free disk space to {what} in {str(folder)!r}: about {_mb(needed)} needed, {_mb(free)} free. "
        "The index is intact; free some space (or move the index to another disk with --index) and run "
        "the command again.",
        errno_code=errno.ENOSPC,
    )


def os_errno(exc: BaseException) -> Optional[int]:
    """The operating-system error behind ``exc`` (an OSError, or an engine error quoting one), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _KNOWN:
            return exc.errno
        match = _OS_ERROR_TEXT.search(str(exc))
        if match:
            number = match.group(1) or match.group(2)
            if number and int(number) in _KNOWN:
                return int(number)
            text = match.group(0).lower()
            if text in _TEXT_ERRNO:
                return _TEXT_ERRNO[text]
        exc = exc.__cause__ or exc.__context__
    return None


def io_error(exc: BaseException, what: str, where: Union[str, Path]) -> Optional[StoreIOError]:
    """A :class:`StoreIOError` for an OS refusal behind ``exc`` (None if it is something else)."""
    code = os_errno(exc)
    if code is None:
        return None
    happened, fix = _KNOWN[code]
    return StoreIOError(
        f"Could not {what} in {str(where)!r}: {happened} ({os.strerror(code)}). The index is intact "
        "(documents are only visible once whole, and what was stored before is kept); "
        f"{fix}, then run the command again (unchanged documents are skipped).",
        errno_code=code,
    )


def _mb(size: int) -> str:
    return f"{size / MIB:.0f} MB" if size >= 10 * MIB else f"{size / MIB:.1f} MB"


__all__ = ["BYTES_PER_NODE", "MARGIN", "WRITE_MARGIN", "check_free_space", "edge_open_needs", "free_bytes", "io_error", "os_errno", "unallocated_bytes"]
