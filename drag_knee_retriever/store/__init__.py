"""The node store: one interface (:mod:`.base`), three engines.

- :mod:`.qdrant`: qdrant-client (local mode in memory or a folder, or a server / cluster);
- :mod:`.edge`: Qdrant Edge in process (the embedded default);
- :mod:`.memory`: a small pure-Python reference engine for tests.

Engines share :mod:`.base` (the interface, request planning, hit order), :mod:`.filters` (one
filter parser and one translator into Qdrant's filter types) and the stored point's schema
(:mod:`drag_knee_retriever.model._point_schema`, ids in :mod:`drag_knee_retriever.model._ids`), and never import
each other. This module re-exports the interface (``from drag_knee_retriever.store import
RankRequest``) and the engines; the search path imports :mod:`.base` itself, so that ranking
does not load an engine it does not use.
"""

from drag_knee_retriever.model._nodes import QueryVectors
from drag_knee_retriever.store.base import (
    EDGE_MARKER,
    MIN_SIDE_LIMIT,
    TIE_MARGIN,
    FilterSpec,
    NodeRecord,
    NodeStore,
    RankedHit,
    RankRequest,
    detect_engine,
    fetch_limit,
    side_limit,
)
from drag_knee_retriever.store.filters import TOP_LEVEL_FIELDS, node_matches, parse_filters
from drag_knee_retriever.store.qdrant import QdrantClientStore


def __getattr__(name: str):
    # The Edge and memory engines load on first use: importing the store interface (as the walk
    # and the encoder do) should not load numpy-heavy engine modules it does not need.
    if name == "EdgeStore":
        from drag_knee_retriever.store.edge import EdgeStore

        return EdgeStore
    if name == "MemoryStore":
        from drag_knee_retriever.store.memory import MemoryStore

        return MemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EDGE_MARKER", "MIN_SIDE_LIMIT", "TIE_MARGIN", "TOP_LEVEL_FIELDS", "EdgeStore", "FilterSpec", "MemoryStore",
    "NodeRecord", "NodeStore", "QdrantClientStore", "QueryVectors", "RankedHit", "RankRequest", "detect_engine",
    "fetch_limit", "node_matches", "parse_filters", "side_limit",
]
