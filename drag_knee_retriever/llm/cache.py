"""A cache of node descriptions, so that an unchanged document is never described twice.

Keys are built by the summariser from the node's content hash (for a parent: the hash of its
children's descriptions), the model's identity and the prompts' identity; values are the validated
``(description, keywords)`` pairs. Only answers of the model are cached, never fallbacks, so a node
that failed once is asked again next time.

The cache lives in memory and, optionally, in a file: a path ending in ``.json`` is a JSON object
rewritten atomically after each ``describe`` call; any other path (``.sqlite``, ``.db``) is an SQLite
database written as answers arrive (better for large corpora and several processes).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Dict, Optional, Tuple, Union

from drag_knee_retriever.errors import ConfigError

logger = logging.getLogger(__name__)

CachedSummary = Tuple[str, Tuple[str, ...]]


class SummaryCache:
    """Description cache: in memory, optionally persisted to a JSON or SQLite file.

    Thread-safe. ``SummaryCache()`` is memory-only; ``SummaryCache("descriptions.sqlite")`` or
    ``SummaryCache("descriptions.json")`` also reads and writes the file (created if missing).
    """

    def __init__(self, path: Union[str, os.PathLike, None] = None) -> None:
        self._lock = threading.Lock()
        self._memory: Dict[str, CachedSummary] = {}
        self._dirty = False
        self.path: Optional[Path] = Path(path) if path is not None else None
        self._sqlite: Optional[sqlite3.Connection] = None
        if self.path is None:
            return
        if self.path.exists() and self.path.is_dir():
            raise ConfigError(
                f"Summary cache path {str(self.path)!r} is a folder; give a file path such as "
                f"{str(self.path / 'descriptions.sqlite')!r}."
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.kind == "json":
            self._load_json()
        else:
            self._open_sqlite()

    @property
    def kind(self) -> str:
        """``"memory"``, ``"json"`` or ``"sqlite"``."""
        if self.path is None:
            return "memory"
        return "json" if self.path.suffix.lower() == ".json" else "sqlite"

    def get(self, key: str) -> Optional[CachedSummary]:
        """The cached ``(description, keywords)`` of a key, or ``None``."""
        with self._lock:
            hit = self._memory.get(key)
            if hit is not None or self._sqlite is None:
                return hit
            row = self._sqlite.execute("SELECT value FROM summaries WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        value = _decode(row[0])
        if value is not None:
            with self._lock:
                self._memory[key] = value
        return value

    def put(self, key: str, description: str, keywords: Tuple[str, ...]) -> None:
        """Store a validated answer (written through to SQLite; JSON waits for :meth:`flush`)."""
        value: CachedSummary = (description, tuple(keywords))
        with self._lock:
            self._memory[key] = value
            self._dirty = True
            if self._sqlite is not None:
                self._sqlite.execute(
                    "INSERT OR REPLACE INTO summaries (key, value) VALUES (?, ?)", (key, _encode(value))
                )
                self._sqlite.commit()

    def flush(self) -> None:
        """Write pending entries of a JSON cache to disk (atomically); no-op otherwise."""
        with self._lock:
            if self.kind != "json" or not self._dirty or self.path is None:
                return
            payload = {k: {"description": d, "keywords": list(kw)} for k, (d, kw) in self._memory.items()}
            self._dirty = False
        # Write to a temporary file and rename, so an interrupted write never leaves half a cache.
        fd, tmp = tempfile.mkstemp(prefix=self.path.name, suffix=".tmp", dir=str(self.path.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, ensure_ascii=False)
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def __len__(self) -> int:
        with self._lock:
            if self._sqlite is not None:
                return int(self._sqlite.execute("SELECT COUNT(*) FROM summaries").fetchone()[0])
            return len(self._memory)

    def clear(self) -> None:
        """Forget every entry (in memory and in the file)."""
        with self._lock:
            self._memory.clear()
            self._dirty = True
            if self._sqlite is not None:
                self._sqlite.execute("DELETE FROM summaries")
                self._sqlite.commit()
        self.flush()

    def close(self) -> None:
        """Flush and close the file, if any."""
        self.flush()
        with self._lock:
            if self._sqlite is not None:
                self._sqlite.close()
                self._sqlite = None

    def __repr__(self) -> str:
        return f"SummaryCache(kind={self.kind!r}, path={str(self.path) if self.path else None!r})"

    # -- files ---------------------------------------------------------------------------------

    def _load_json(self) -> None:
        assert self.path is not None
        if not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"Summary cache {str(self.path)!r} is not a readable JSON cache ({exc}); "
                "delete it or point the cache at another file."
            ) from exc
        if not isinstance(data, dict):
            raise ConfigError(
                f"Summary cache {str(self.path)!r} holds {type(data).__name__}, not a JSON object; "
                "delete it or point the cache at another file."
            )
        for key, raw in data.items():
            value = _decode_obj(raw)
            if value is not None:
                self._memory[key] = value

    def _open_sqlite(self) -> None:
        assert self.path is not None
        try:
            # The summariser writes from its own event-loop thread; the lock serialises access.
            conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
            conn.execute("CREATE TABLE IF NOT EXISTS summaries (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.commit()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"Summary cache {str(self.path)!r} is not an SQLite database ({exc}); give a path "
                "ending in .json for a JSON cache, or delete the file."
            ) from exc
        self._sqlite = conn


def _encode(value: CachedSummary) -> str:
    return json.dumps({"description": value[0], "keywords": list(value[1])}, ensure_ascii=False)


def _decode(text: str) -> Optional[CachedSummary]:
    try:
        return _decode_obj(json.loads(text))
    except ValueError:
        return None


def _decode_obj(raw: object) -> Optional[CachedSummary]:
    # A damaged entry is skipped (the node is described again), never fatal.
    if not isinstance(raw, dict):
        return None
    description = raw.get("description")
    keywords = raw.get("keywords")
    if not isinstance(description, str) or not isinstance(keywords, list):
        return None
    if not all(isinstance(k, str) for k in keywords):
        return None
    return description, tuple(keywords)
