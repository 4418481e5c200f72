"""The Edge store's map of every node's structure, so that the walk's rankings read no payload."""

from __future__ import annotations

import logging
import re
import threading
import uuid
from typing import Any, Dict, Optional, Sequence, Set, Tuple

from drag_knee_retriever.model._nodes import TreeNode
from drag_knee_retriever.model._point_schema import light_node

log = logging.getLogger(__name__)

_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class NodeCache:
    """The walk's view of every stored node: light nodes (:data:`WALK_FIELDS`) by point id.

    Why: Edge spends ~10 us per hit loading and converting a payload, and a knee walk ranks
    ~100 candidates; with this map its rankings ask for ids and scores only (measured at 10k
    nodes: the knee search 12 -> 7 ms). It is exact, not a guess, because an Edge folder has
    one writer, this store (the folder lock), and every write updates the map:

    - upsert puts the new nodes here *before* the engine write and delete removes them *after*
      the engine delete, so at every moment each node the engine can return is in the map (a
      concurrent search may see a newer structure than the scores it ranked; the index's final
      liveness check drops such hits, as it drops any hit of a document that changed mid-search);
    - a failed write drops the map (``complete`` turns False): the engine's state is then unknown,
      and rankings go back to asking the engine for the walk's payload fields.

    A store that created its shard keeps a complete map from the start. An index loaded from a
    folder starts without one and fills it in the background (:meth:`begin_load` /
    :meth:`finish_load`, the store's loader thread): reading every node at open time would slow
    down one-off searches, and a reopened index without the map ran the default search at ~2x flat
    instead of ~1.3x on MMLongBench. A load is installed only if no write touched the map while it
    ran (``_writes``); an index above ``capacity`` nodes (~500 bytes each) keeps none. Reads take
    no lock (one dict lookup); writers serialise on ``_lock``.
    """

    def __init__(self, capacity: int, complete: bool, roots_only: bool = False) -> None:
        self.capacity = capacity
        self.complete = complete and capacity > 0
        # A map of the roots alone (level 0), for an index whose node map is not complete: its
        # writes (put) pass only the roots on; loads read the roots' shard, which holds nothing else.
        self.roots_only = roots_only
        # The map itself: light nodes by the id's canonical form (see fast.point_ids). Rankings read it
        # in bulk (``map(nodes.get, ids)`` stays in C); only put / remove / drop / a load write it.
        self.nodes: Dict[str, TreeNode] = {}
        self._by_doc: Dict[str, Set[str]] = {}
        self._lock = threading.Lock()
        self._writes = 0  # every put / remove / drop: a load that saw a different count is stale

    def get(self, point_id: str) -> Optional[TreeNode]:
        return self.nodes.get(point_id)

    def begin_load(self) -> int:
        """Before reading every node from the engine: the write count the load must still see."""
        with self._lock:
            return self._writes

    def finish_load(self, token: int, nodes: Sequence[Tuple[str, Dict[str, Any]]]) -> bool:
        """Install the (canonical id, payload) pairs read since :meth:`begin_load` as the complete
        map, unless a write came in between or they exceed ``capacity``. True if installed."""
        if len(nodes) > self.capacity:
            return False
        loaded = {key: light_node(key, payload) for key, payload in nodes}
        by_doc: Dict[str, Set[str]] = {}
        for key, node in loaded.items():
            by_doc.setdefault(node.doc_id, set()).add(key)
        with self._lock:
            if self._writes != token or self.complete:
                return False
            self.nodes, self._by_doc, self.complete = loaded, by_doc, True
            return True

    def put(self, nodes: Sequence[Tuple[str, Dict[str, Any]]]) -> None:
        """Record (id, payload) pairs about to be written."""
        if self.roots_only:
            nodes = [pair for pair in nodes if pair[1].get("level") == 0]
        with self._lock:
            self._writes += 1
            if not self.complete:
                return
            if len(self.nodes) + len(nodes) > self.capacity:
                log.info("the node map of this Edge index is full (%d nodes); rankings read payloads instead",
                         self.capacity)
                self._drop()
                return
            nodes_by_id, by_doc = self.nodes, self._by_doc
            for node_id, payload in nodes:
                # The id as the engine returns it (canonical form), as a payload ranking gives it;
                # the builder's ids already are (parsing 10k of them would cost 30 ms per ingest).
                key = node_id
                if not (isinstance(node_id, str) and _CANONICAL_UUID.fullmatch(node_id)):
                    try:
                        key = str(uuid.UUID(node_id))
                    except (TypeError, ValueError, AttributeError):  # the engine will say what is wrong
                        self._drop()
                        return
                nodes_by_id[key] = light_node(key, payload)
                by_doc.setdefault(payload["doc_id"], set()).add(key)

    def remove(self, doc_id: str, except_hash: Optional[str]) -> None:
        """Forget a document's nodes (those whose version differs from ``except_hash``, if given)."""
        with self._lock:
            self._writes += 1
            keys = self._by_doc.get(doc_id, set())
            for key in list(keys):
                node = self.nodes.get(key)
                if node is None or except_hash is None or node.doc_hash != except_hash:
                    self.nodes.pop(key, None)
                    keys.discard(key)
            if not keys:
                self._by_doc.pop(doc_id, None)

    def drop(self) -> None:
        """Give the map up: after a failed write (or at close) the engine's state is not known here."""
        with self._lock:
            self._writes += 1
            self._drop()

    def _drop(self) -> None:
        self.complete = False
        self.nodes = {}
        self._by_doc = {}
