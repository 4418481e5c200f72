"""The documents a write is about to give their new version: replayed if the write was cut short.

Replacing a document's tree deletes its old nodes and writes the new ones; the store has no
transaction over both. A process killed in between (or a write that fails half way) leaves the
document with neither tree. For a file ingested from disk the re-run heals it, but a document a
framework user added through a vector store (a chunk joined to its source's tree) has no file
behind it: the text lives only in the store. So before such a write the *new version* of each
document it touches (or ``None``: the document goes) is written here, fsynced; once the write has
finished, the entries go. An index opened over a journal with entries replays them first, so a
crash at any step leaves the old tree (nothing was touched yet) or the new one (after the replay),
never less than the old one.

One file per document (``<sha256 of the id>.json``, replaced atomically), so a write touching one
document rewrites one file, and documents of concurrent calls never share one. Each entry carries
a token: the write clears only the entry it wrote, not a newer one of a later call.

An in-memory index keeps its journal in memory (a failed write is replayed by the next one); a
store shared with other processes (a Qdrant server) keeps none: replaying an old entry there could
undo another process's newer write.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import uuid
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from drag_knee_retriever.errors import StoreIOError
from drag_knee_retriever.model._nodes import Document

log = logging.getLogger(__name__)

#: The journal's folder name beside an embedded index's own files.
JOURNAL_DIR = "drag_knee_journal"


@dataclass(frozen=True)
class JournalEntry:
    """One document's new version (``document``), or its removal (``document is None``)."""

    doc_id: str
    document: Optional[Document]
    token: str


def document_json(doc: Document) -> Dict[str, Any]:
    """A :class:`Document` as JSON data, every field of it (the inverse is :func:`document_from_json`)."""
    return {f.name: _plain(getattr(doc, f.name)) for f in fields(Document)}


def document_from_json(data: Mapping[str, Any]) -> Document:
    names = {f.name for f in fields(Document)}
    return Document(**{key: value for key, value in data.items() if key in names})


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class WriteJournal:
    """The pending new versions of documents (see the module docstring). ``path=None``: in memory."""

    def __init__(self, path: Optional[Path]) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._memory: Dict[str, JournalEntry] = {}

    def _file(self, doc_id: str) -> Path:
        assert self.path is not None
        return self.path / (hashlib.sha256(doc_id.encode("utf-8")).hexdigest() + ".json")

    def record(self, changes: Mapping[str, Optional[Document]]) -> Dict[str, str]:
        """Note the new version of each document (None: removed) before any engine write; returns
        the tokens to :meth:`clear` with. Persisted (fsynced) before returning."""
        tokens = {doc_id: uuid.uuid4().hex for doc_id in changes}
        with self._lock:
            for doc_id, doc in changes.items():
                entry = JournalEntry(doc_id, doc, tokens[doc_id])
                if self.path is None:
                    self._memory[doc_id] = entry
                else:
                    self._write(entry)
            if self.path is not None and changes:
                self._sync_dir()
        return tokens

    def clear(self, tokens: Mapping[str, str]) -> None:
        """Forget the entries written with these tokens (an entry rewritten since stays)."""
        with self._lock:
            for doc_id, token in tokens.items():
                if self.path is None:
                    if doc_id in self._memory and self._memory[doc_id].token == token:
                        del self._memory[doc_id]
                    continue
                file = self._file(doc_id)
                entry = self._read(file)
                if entry is not None and entry.token == token:
                    try:
                        file.unlink()
                    except OSError as exc:  # the write succeeded: a leftover entry is only replayed again
                        log.warning("could not remove the journal entry %s (%s); it will be replayed", file, exc)

    def entries(self) -> List[JournalEntry]:
        """Every entry not yet cleared (those of writes cut short), in no particular order."""
        with self._lock:
            if self.path is None:
                return list(self._memory.values())
            if not self.path.is_dir():
                return []
            out = []
            for file in sorted(self.path.glob("*.json")):
                entry = self._read(file)
                if entry is not None:
                    out.append(entry)
            return out

    def __bool__(self) -> bool:
        if self.path is None:
            return bool(self._memory)
        try:
            return self.path.is_dir() and any(self.path.glob("*.json"))
        except OSError:
            return False

    # -- files -------------------------------------------------------------------------------------

    def _write(self, entry: JournalEntry) -> None:
        assert self.path is not None
        file = self._file(entry.doc_id)
        temp = file.with_name(file.name + ".tmp")
        data = {"doc_id": entry.doc_id, "token": entry.token,
                "document": document_json(entry.document) if entry.document is not None else None}
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            with open(temp, "w", encoding="utf-8") as handle:
                json.dump(data, handle, ensure_ascii=False)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, file)
        except OSError as exc:
            raise StoreIOError(
                f"Could not record the write of {entry.doc_id!r} in {str(self.path)!r} ({exc.strerror or exc}). "
                "Nothing of it was written; free disk space or fix the folder's permissions and retry.",
                errno_code=exc.errno,
            ) from exc

    def _sync_dir(self) -> None:
        assert self.path is not None
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    @staticmethod
    def _read(file: Path) -> Optional[JournalEntry]:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            doc = data.get("document")
            return JournalEntry(str(data["doc_id"]), document_from_json(doc) if doc is not None else None,
                                str(data["token"]))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # Written by os.replace only whole, so this is outside damage: say so, replay the rest.
            log.warning("the journal entry %s cannot be read (%s); it is left in place", file, exc)
            return None


def journal_for(folder: Optional[Path]) -> WriteJournal:
    """The journal of an embedded index whose own files are in ``folder`` (None: in memory)."""
    return WriteJournal(None if folder is None else folder / JOURNAL_DIR)

