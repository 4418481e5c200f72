"""The node store: one interface (:mod:`.base`), three engines.

- :mod:`.qdrant`: qdrant-client (local mode in memory or a folder, or a server / cluster);
- :mod:`.edge`: Qdrant Edge in process (the embedded default);
- :mod:`.memory`: a small pure-Python reference engine for tests.

Engines share :mod:`.filters` (one filter parser and condition builder) and :mod:`.payload` (the
stored point's shape) and never import each other. This module re-exports what the rest of the
package imports, so ``from drag_knee_retriever.store import RankRequest`` keeps working.
"""

from .base import (
    DENSE,
    EDGE_MARKER,
    MIN_SIDE_LIMIT,
    SCHEMA_VERSION,
    SPARSE,
    TIE_MARGIN,
    FilterSpec,
    NodeRecord,
    NodeStore,
    QueryVectors,
    RankedHit,
    RankRequest,
    detect_engine,
    fetch_limit,
    side_limit,
)
from .filters import TOP_LEVEL_FIELDS, node_matches, parse_filters
from .payload import META_ID, WALK_FIELDS, light_node, stable_order
from .qdrant import QdrantClientStore


def __getattr__(name: str):
    # The Edge and memory engines load on first use: importing the store interface (as the walk
    # and the encoder do) should not load numpy-heavy engine modules it does not need.
    if name == "EdgeStore":
        from .edge import EdgeStore

        return EdgeStore
    if name == "MemoryStore":
        from .memory import MemoryStore

        return MemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DENSE", "EDGE_MARKER", "MIN_SIDE_LIMIT", "META_ID", "SCHEMA_VERSION", "SPARSE", "TIE_MARGIN",
    "TOP_LEVEL_FIELDS", "WALK_FIELDS", "EdgeStore", "FilterSpec", "MemoryStore", "NodeRecord", "NodeStore",
    "QdrantClientStore", "QueryVectors", "RankedHit", "RankRequest", "detect_engine", "fetch_limit",
    "light_node", "node_matches", "parse_filters", "side_limit", "stable_order",
]
