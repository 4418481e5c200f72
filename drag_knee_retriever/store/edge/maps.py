"""The Edge store's two maps of the walk's fields (every node's, the roots'), and their loading.

A store that created its shard keeps both complete from the start; a loaded index fills them in
background threads (see :class:`.node_map.NodeCache` for why they are exact and when they give up).
A mixin of :class:`~.engine.EdgeStore`: it reads the store's shards, maps and loader threads.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from drag_knee_retriever.model._point_schema import is_node
from drag_knee_retriever.store import filters as F
from drag_knee_retriever.store.edge.node_map import NodeCache

#: The class these methods are mixed into (EdgeStore), Any to a type checker: mypy
#: cannot check a mixin against its host class.
_Host = Any

log = logging.getLogger("drag_knee_retriever.store.edge.engine")


def _waited(loader: Optional[threading.Thread], cache: NodeCache, timeout: Optional[float]) -> bool:
    """Wait for a map's background load to end (if one runs); whether the map is complete."""
    if loader is not None:
        loader.join(timeout)
    return cache.complete


class WalkMaps:
    """Loading and waiting for the node map and the roots map (a mixin of ``EdgeStore``)."""

    _roots_loader: Optional[threading.Thread]  # the roots map's loader thread, once started

    def _load_node_map(self: "_Host") -> None:
        """Read every node's walk fields, a page at a time, and install them as the node map
        (the loader thread of a loaded index). Gives up when the index holds more than the map's
        capacity, when the store closes, or when a write comes in meanwhile (NodeCache.finish_load)."""
        qe, shard, cache = self._qe, self._shard, self._node_map
        try:
            token = cache.begin_load()
            nodes_only = qe.Filter(must=self._filters.conditions(F.count_conditions()))
            if int(shard.count(qe.CountRequest(exact=True, filter=nodes_only))) > cache.capacity:
                log.info("this Edge index holds more than %d nodes: no node map (rankings read payloads)",
                         cache.capacity)
                return
            self._fill(cache, token, shard, nodes_only, "node map")
        except Exception:  # the store closed under it, or the engine failed: rankings read payloads
            log.debug("loading the node map stopped", exc_info=True)

    def _start_roots_map(self: "_Host") -> None:
        """Fill the roots map of a loaded index in the background, once its roots' shard is in step."""
        if self._roots is None or self._roots_deferred or self._roots_map.capacity == 0 or self._roots_loader:
            return
        self._roots_loader = threading.Thread(target=self._load_roots_map, name="drag-knee-roots-map", daemon=True)
        self._roots_loader.start()

    def _load_roots_map(self: "_Host") -> None:
        """Read every root's walk fields from the roots' shard and install them as the roots map.

        Why: without a complete node map (an index above its capacity: 1M nodes) the roots ranking
        read the walk's payload of its ~66 hits, ~0.9 ms of a ~1.8 ms request on Qdrant Edge at 1M
        nodes (7,024 roots, pages in memory; benchmarks/RESULTS.md, "scale10"). Reading them once
        costs about what ~100 searches saved. The same rules as the node map: a write during the
        read discards it (NodeCache.finish_load), and more roots than ``roots_map_capacity`` keep none."""
        cache = self._roots_map
        try:
            self._fill(cache, cache.begin_load(), self._roots, None, "roots map")
        except Exception:  # the store closed under it, or the engine failed: rankings read payloads
            log.debug("loading the roots map stopped", exc_info=True)

    def _fill(self: "_Host", cache: NodeCache, token: int, shard: Any, flt: Any, what: str) -> None:
        """Scroll the walk's fields of ``shard``'s points (``flt``), a page at a time, into ``cache``;
        stops when the store closes or the points outgrow the cache's capacity."""
        qe = self._qe
        started = time.perf_counter()
        pairs: List[Tuple[str, Dict[str, Any]]] = []
        offset = None
        while not self._loader_stop.is_set():
            records, offset = shard.scroll(qe.ScrollRequest(
                offset=offset, limit=1024, filter=flt, with_payload=self._walk_payload, with_vector=False))
            pairs.extend((str(r.id), r.payload) for r in records if is_node(r.payload))
            if len(pairs) > cache.capacity:  # grown since any count: the map would not fit
                return
            if offset is None:
                installed = cache.finish_load(token, pairs)
                log.debug("%s of %d nodes %s in %.2f s", what, len(pairs),
                          "loaded" if installed else "discarded (a write came in meanwhile)",
                          time.perf_counter() - started)
                return

    def wait_for_roots_map(self: "_Host", timeout: Optional[float] = None) -> bool:
        """Wait until the background roots map load ends; True if the roots map is complete."""
        return _waited(self._roots_loader, self._roots_map, timeout)

    def wait_for_node_map(self: "_Host", timeout: Optional[float] = None) -> bool:
        """Wait until the background node map load (of a loaded index) ends; True if the map is
        complete. Rankings are the same either way; only their speed differs."""
        return _waited(self._loader, self._node_map, timeout)

    @property
    def _maps(self: "_Host") -> Tuple[NodeCache, NodeCache]:
        """Both maps of the walk's fields (every node's, the roots'): every write keeps both in step."""
        return self._node_map, self._roots_map
