"""The documents with a write or a delete in flight: where rootless leftovers can be, and nowhere else.

A tree's root is its commit point (written last, deleted first), so an ingest or delete cut short
leaves rootless nodes of the documents it was writing. An embedded store (one writer: the folder
lock) notes a document here *before* its first engine write and forgets it once its root has
landed or its delete has finished; so after any crash, every rootless document is listed here.
The orphan sweep at the end of an ingest then checks only these documents, instead of listing
every node of the index (that listing cost ~0.19 s per 1,000 nodes on Edge on every ingest).

The list is a small JSON file next to the index (replaced atomically, fsynced). A folder written
by a version without it has no file: until one full sweep has run there (``known`` is False), the
ingest's sweep lists every node once, as before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Iterable, Iterator, Optional, Set

from drag_knee_retriever.errors import StoreIOError

log = logging.getLogger(__name__)

PENDING_FILE = "drag_knee_pending.json"


class PendingDocs:
    """A persisted set of document ids mid-write (see the module docstring).

    ``path=None`` keeps the set in memory (an ephemeral index: a crash takes the index with it).
    ``begin`` / ``end`` are what the store's own writes call; ``hold`` wraps a caller's sequence of
    writes (delete old tree, body, roots) so the file is written twice per batch, not per step.
    """

    def __init__(self, path: Optional[Path], *, known: Optional[bool] = None) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._held: Set[str] = set()
        self._docs: Set[str] = set()
        self.known = path is None if known is None else known
        if path is not None and path.exists():
            try:
                self._docs = set(json.loads(path.read_text(encoding="utf-8"))["doc_ids"])
                self.known = True
            except (OSError, ValueError, KeyError, TypeError):
                # Unreadable: treat as unknown, so the next sweep lists every node (nothing is lost).
                log.warning("could not read %s; the next ingest checks every document for orphans", path)
                self.known = False

    def snapshot(self) -> Set[str]:
        """The documents that may be rootless now."""
        with self._lock:
            return set(self._docs)

    def begin(self, doc_ids: Iterable[str]) -> None:
        """Note documents before their first engine write (persisted before returning)."""
        with self._lock:
            new = set(doc_ids) - self._docs
            if new:
                self._docs |= new
                self._save()

    def end(self, doc_ids: Iterable[str]) -> None:
        """Forget documents whose root has landed or whose delete finished (not while held)."""
        with self._lock:
            gone = (set(doc_ids) & self._docs) - self._held
            if gone:
                self._docs -= gone
                # The writes succeeded: a file left listing them only costs the next sweep a check.
                self._save(strict=False)

    @contextlib.contextmanager
    def hold(self, doc_ids: Iterable[str]) -> Iterator[None]:
        """Keep documents noted for a whole sequence of writes; forgotten only if it all succeeds."""
        ids = set(doc_ids)
        with self._lock:
            self.begin(ids)
            fresh = ids - self._held
            self._held |= fresh
        try:
            yield
        except BaseException:
            with self._lock:
                self._held -= fresh
            raise
        with self._lock:
            self._held -= fresh
        self.end(fresh)

    def reset(self) -> None:
        """After a full sweep: nothing is pending and the file covers the index from now on."""
        with self._lock:
            self._docs = set(self._held)
            self.known = True
            self._save()

    def _save(self, strict: bool = True) -> None:
        if self.path is None:
            return
        temp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(temp, "w", encoding="utf-8") as handle:
                json.dump({"doc_ids": sorted(self._docs)}, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except OSError as exc:
            if not strict:
                log.warning("could not update %s (%s); the next ingest checks those documents again", self.path, exc)
                return
            raise StoreIOError(
                f"Could not record the documents being written in {str(self.path)!r} ({exc.strerror or exc}). "
                "Nothing of them was written; free disk space or fix the folder's permissions and retry.",
                errno_code=exc.errno,
            ) from exc
