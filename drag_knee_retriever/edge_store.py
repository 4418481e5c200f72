"""Old import path of the Qdrant Edge store, kept so existing imports keep working.

The engine lives in :mod:`drag_knee_retriever.store.edge`; import it from there.
"""

from .store.edge import EDGE_PACKAGE, EDGE_VERSION, LOCK_FILE, EdgeStore
from .store.edge.fast import _fuse, _id_set, _map_hits, _point_ids

__all__ = ["EDGE_PACKAGE", "EDGE_VERSION", "LOCK_FILE", "EdgeStore"]
