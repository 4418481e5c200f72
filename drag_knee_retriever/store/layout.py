"""Where each engine keeps an index in a folder, and which engine a folder holds.

Part of the store interface (:mod:`.base` re-exports every name here): the engines read their
layouts from it, and :func:`detect_engine` lets a caller open a folder with the engine that wrote it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

#: Qdrant Edge keeps a collection in ``<folder>/<collection>/``; ``EdgeShard.create`` writes this file.
EDGE_MARKER = "edge_config.json"
#: ... and its roots' copy in ``<folder>/<collection>/roots/`` (a shard of its own).
EDGE_ROOTS_DIR = "roots"
#: qdrant-client keeps the roots' copy of collection ``name`` in collection ``name + ROOTS_SUFFIX``.
ROOTS_SUFFIX = "__roots"
#: qdrant-client local mode keeps a collection in ``<folder>/collection/<collection>/storage.sqlite``.
LOCAL_DIR = "collection"
LOCAL_MARKER = "storage.sqlite"


def lock_file_error(lock: Union[str, os.PathLike], exc: OSError) -> Optional[Exception]:
    """A clear error for an index's lock file that cannot be opened because it is not a file
    (replaced by a folder, a FIFO ...), or None for other failures."""
    from drag_knee_retriever.errors import StoreError

    path = Path(os.fspath(lock))
    if not (isinstance(exc, IsADirectoryError) or (path.exists() and not path.is_file() and not path.is_symlink())):
        return None
    what = "a folder" if path.is_dir() else "not a regular file"
    return StoreError(
        f"The index's lock file {str(path)!r} is {what}, so the index cannot be locked for this process. Nothing "
        f"was changed; if no other program uses the index, remove it (rm -r {str(path)!r}) and run the command "
        "again."
    )


def detect_engine(folder: Union[str, os.PathLike], collection: str) -> Optional[str]:
    """Which engine holds ``collection`` in ``folder``: ``"edge"``, ``"local"`` or None (none yet).

    An Edge shard (its config file) wins; a local-mode collection (its SQLite file) comes next; a
    bare ``<folder>/<collection>/`` (an Edge store opened but never given a collection) is Edge.
    """
    base = Path(os.fspath(folder)).expanduser()
    if (base / collection / EDGE_MARKER).exists():
        return "edge"
    if (base / LOCAL_DIR / collection / LOCAL_MARKER).exists():
        return "local"
    if (base / collection).is_dir():
        return "edge"
    return None
