"""Which files a set of paths names: folder walks, links, FIFOs and other hostile entries, skip reasons."""

from __future__ import annotations

import fnmatch
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, List, Optional, Sequence, Tuple, Union

from ..errors import InvalidDocumentError

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
                    what = kind_of_entry(mode)
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
            what = kind_of_entry(mode)
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
