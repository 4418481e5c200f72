"""The Edge engine's folders: the one-process-per-folder lock and the folders of ":memory:" stores."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Optional

from drag_knee_retriever.errors import StoreLockedError

try:  # POSIX advisory locks; elsewhere Edge's own WAL lock is the only guard.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

LOCK_FILE = "drag_knee.lock"
MEMORY_PREFIX = "drag-knee-edge-"  # folders of ":memory:" stores (in /dev/shm or TMPDIR)
_ORPHAN_AGE_S = 60.0
_MIN_SHM_FREE = 2 << 30  # bytes of /dev/shm that must be free to hold a ":memory:" index there


class FolderLock:
    """An exclusive ``flock`` on a file inside the shard folder, held while the store is open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: Optional[int] = None

    def acquire(self, describe: str) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_NONBLOCK: a FIFO put in the lock file's place must not hang the open.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NONBLOCK", 0), 0o644)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise IsADirectoryError(21, "not a regular file", str(self.path))
        except OSError as exc:
            from drag_knee_retriever.common._disk import io_error
            from drag_knee_retriever.store.base import lock_file_error

            problem = lock_file_error(self.path, exc)
            if problem is not None:
                raise problem from None
            refused = io_error(exc, "open the index", self.path.parent.parent)
            if refused is None:
                raise
            raise refused from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = ""
            with contextlib.suppress(OSError, ValueError):
                text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                if text:
                    holder = f" (pid {int(text)})"
            os.close(fd)
            raise StoreLockedError(
                f"The index folder {describe} is open in another process{holder} or another index in this "
                "process. Close that process (or its DragKneeIndex) first; for shared access from several "
                "processes, use a Qdrant server (url=...)."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            os.close(fd)


def memory_dir() -> Optional[str]:
    """Where a ":memory:" index keeps its files: a RAM file system when one has room.

    Edge needs a folder and syncs its files on every schema change; on a disk that made creating
    an empty index take 0.3-1 s, on /dev/shm (tmpfs) about 50 ms. Small shared-memory mounts (as in
    some containers) are skipped, since an index that outgrows them would fail mid-write.
    """
    shm = "/dev/shm"
    try:
        if os.path.isdir(shm) and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= _MIN_SHM_FREE:
            return shm
    except OSError:
        pass
    return None  # the system temporary folder (TMPDIR)


def sweep_orphans(parent: str) -> None:
    """Delete the folders of ":memory:" stores whose process died without closing them.

    A store removes its folder on close() and at interpreter exit, but a killed process cannot,
    and on /dev/shm the files would hold RAM until reboot. A folder is an orphan when it is older
    than a minute (so a store being created right now is never touched) and no lock inside it is
    held: a live store holds its flock for as long as it is open.
    """
    if fcntl is None:  # pragma: no cover - Windows: no way to tell a live store from a dead one
        return
    now = time.time()
    try:
        candidates = [p for p in Path(parent).glob(MEMORY_PREFIX + "*") if p.is_dir()]
    except OSError:
        return
    for folder in candidates:
        try:
            if now - folder.stat().st_mtime < _ORPHAN_AGE_S or any(_is_held(lock) for lock in folder.glob("*/" + LOCK_FILE)):
                continue
        except OSError:
            continue
        log.info("removing %s, left behind by a process that did not close its in-memory index", folder)
        shutil.rmtree(folder, ignore_errors=True)


def _is_held(lock: Path) -> bool:
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing the descriptor also drops the probe's own lock
    return False


def cleanup(lock: FolderLock, temp_dir: Optional[str]) -> None:
    """Release the lock and delete an in-memory store's folder."""
    # Runs at close() or, if the store was never closed, when it is garbage-collected / at exit.
    lock.release()
    if temp_dir:
        shutil.rmtree(temp_dir, ignore_errors=True)
