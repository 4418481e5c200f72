"""Which files a set of paths names: folder walks, links, FIFOs and other hostile entries, skip reasons."""

from __future__ import annotations

import errno
import fnmatch
import functools
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, List, Optional, Sequence, Tuple, Union

from drag_knee_retriever.errors import InvalidDocumentError

log = logging.getLogger("drag_knee_retriever.loaders")  # one logger for the package: the CLI quiets it by this name

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


@dataclass(frozen=True)
class SkippedFile:
    """A file that was not loaded, and why (the reason says how to fix it)."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class FoundFile:
    """A file selected for loading and the root its document id is relative to.

    ``real`` and ``stat`` are what :func:`discover` saw, so that the read opens the very file that
    was checked (see :func:`open_found`): ``real`` is the path to open without following a link
    (a link's final target, else the entry itself) and ``stat`` its ``lstat`` (identity, size,
    modification time). Both are None for a file that did not come from :func:`discover`.
    :attr:`stamp` is its size and modification time, what a re-ingest compares with the stored
    one to skip an unchanged file unread.
    """

    path: Path
    root: Path
    real: Optional[Path] = None
    stat: Optional[os.stat_result] = field(default=None, compare=False, repr=False)
    #: The document id as :func:`discover` built it while walking (None: derived from the paths).
    relative: Optional[str] = field(default=None, compare=False, repr=False)

    @property
    def identity(self) -> Optional[Tuple[int, int]]:
        """(device, inode) of the file discovery checked, or None."""
        return (self.stat.st_dev, self.stat.st_ino) if self.stat is not None else None

    @property
    def stamp(self) -> Optional[str]:
        """``"<size>:<mtime_ns>"`` of the file discovery checked, or None."""
        return file_stamp(self.stat) if self.stat is not None else None

    # Cached: a re-ingest asks each file's id several times (the stamp check, the report), and the
    # path arithmetic costs ~30 us, a third of a skipped file's whole cost in a 1,000-file folder.
    @functools.cached_property
    def doc_id(self) -> str:
        """The document id: the path relative to the root, with forward slashes."""
        if self.relative:
            return self.relative
        try:
            relative = self.path.relative_to(self.root)
        except ValueError:  # pragma: no cover - discover() always pairs a file with its root
            relative = Path(self.path.name)
        text = PurePosixPath(*relative.parts).as_posix()
        return text if text not in ("", ".") else self.path.name


def file_stamp(info: os.stat_result) -> str:
    """A file's stamp (see :class:`FoundFile`) from its stat."""
    return f"{info.st_size}:{info.st_mtime_ns}"


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


def kind_of_entry(mode: int) -> Optional[str]:
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


@functools.lru_cache(maxsize=1)
def _hard_links_protected() -> bool:
    """Whether the kernel lets a user hard-link only files they own or may read and write
    (Linux ``fs.protected_hardlinks = 1``, the default of most distributions since 3.6)."""
    try:
        with open("/proc/sys/fs/protected_hardlinks", encoding="ascii") as handle:
            return handle.read().strip() == "1"
    except OSError:  # not Linux, or /proc not mounted: assume the worst
        return False


def hard_link_problem(info: os.stat_result) -> Optional[str]:
    """Why a file with several hard links is not read inside a folder, or None when it may be.

    A hard link is the same file under a second name, so it can sit in the folder while the file
    "lives" elsewhere (``ln /etc/shadow d/notes.txt``). Where the kernel protects hard links
    (``fs.protected_hardlinks = 1``), only someone who owns the file or may read and write it can
    make one: whoever wrote the link into the folder could read the file anyway, so nothing leaks
    and it is read like any file. Without that protection, a file with several links that belongs
    to another user is not read (links out of the folder are not followed either).
    """
    if info.st_nlink <= 1 or not stat.S_ISREG(info.st_mode):
        return None
    if _hard_links_protected() or info.st_uid == os.geteuid():
        return None
    return (f"has {info.st_nlink} hard links and belongs to another user (uid {info.st_uid}); this system does not "
            "protect hard links (fs.protected_hardlinks is off), so it may be a file from outside the folder and is "
            "not read (copy it into the folder, or pass --follow-links / follow_links=True to read it).")


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
            # (relative path, entry path, path to open, what lstat said, is the entry a link)
            in_root: List[Tuple[str, Path, Path, os.stat_result, bool]] = []
            try:
                real_root = path.resolve(strict=True)
            except (OSError, RuntimeError) as exc:
                skip(path, f"is a folder that cannot be read ({getattr(exc, 'strerror', None) or exc}); check it.")
                continue
            # Folders already walked, by (device, inode): a link back to one of them is a loop.
            walked: set = set()

            def walk(folder: Path, real_folder: Path, prefix: str = "") -> None:
                # prefix: the folder's path relative to the root, with forward slashes and a
                # trailing one ("" at the root): an entry's relative path is prefix + its name
                # (what relative_to and as_posix gave, at ~15 us a file, twice: the id again).
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
                    file = folder / entry.name  # = Path(entry.path), with one part to parse, not the whole path
                    relative = prefix + entry.name
                    # Everything below may race with a writer into the folder (an entry swapped
                    # for a link or a folder between two calls): any OSError skips this entry only.
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
                            # The target's own lstat (its last part is no link: it is resolved).
                            real, info = target, os.lstat(target)
                        else:
                            real, info = real_folder / entry.name, entry.stat(follow_symlinks=False)
                        mode = info.st_mode
                        if stat.S_ISDIR(mode):
                            if (info.st_dev, info.st_ino) in walked:
                                skip(file, "is a link to a folder that is already being read (a link loop); "
                                           "it was not walked again.")
                                continue
                            walk(file, real, relative + "/")
                            continue
                    except (OSError, RuntimeError) as exc:
                        skip(file, f"cannot be examined ({getattr(exc, 'strerror', None) or exc}; it may have "
                                   "changed while the folder was read); run the command again, or check its permissions.")
                        continue
                    if not _wanted(relative, include, exclude):
                        ignored += 1
                        continue
                    what = kind_of_entry(mode)
                    if what is not None:
                        skip(file, f"is {what}, not a regular file; only regular files are read "
                                   "(exclude it with --exclude).")
                        continue
                    problem = None if follow_links else hard_link_problem(info)
                    if problem is not None:
                        skip(file, problem)
                        continue
                    in_root.append((relative, file, real, info, is_link))

            walk(path, real_root)
            # Sorted by relative path (like `find | sort`): the same ids and order on every platform.
            # A file reached both directly and through a link inside the folder is loaded once,
            # under its own name (the link's name would change its id with every new alias). The
            # paths compared are the ones discovery resolved: no second look at the folder.
            in_root.sort(key=lambda item: item[0])
            preferred = {}
            for relative, file, real, info, is_link in sorted(in_root, key=lambda item: (item[4], item[0])):
                preferred.setdefault(real, file)
            for relative, file, real, info, is_link in in_root:
                if real not in seen and preferred.get(real) is file:  # this very entry (no path comparison)
                    seen.add(real)
                    found.append(FoundFile(file, root, real=real, stat=info, relative=relative))
        else:
            if exclude and _matches(path.name, exclude):
                ignored += 1
                continue
            real = path
            if path.is_symlink():  # named on purpose: followed, to the target it has now
                target, problem = _resolve_link(path)
                if problem is not None:
                    skip(path, problem)
                    continue
                assert target is not None
                real = target
            try:
                if real is path:
                    real = path.resolve(strict=True)
                info = os.lstat(real)
            except (OSError, RuntimeError) as exc:
                skip(path, f"cannot be examined ({getattr(exc, 'strerror', None) or exc}); check its permissions.")
                continue
            what = kind_of_entry(info.st_mode)
            if what is not None:
                skip(path, f"is {what}, not a regular file; only regular files are read.")
                continue
            if real not in seen:
                seen.add(real)
                found.append(FoundFile(path, path.parent, real=real, stat=info))
    return found, ignored


def _has_suffix(relative: str) -> bool:
    return "." in relative.rsplit("/", 1)[-1]
