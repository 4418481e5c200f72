"""The qdrant-client store's roots' copy (collection ``<collection>__roots``): kept in step, read.

A copy of every root (same id, vectors and payload) in a collection of its own, so that ranking the
roots scans the roots only (:func:`~drag_knee_retriever.store.base.roots_ranking`). Which roots to
copy or remove is decided once for every engine (:meth:`NodeStore._sync_copies
<drag_knee_retriever.store.base.NodeStore._sync_copies>`); this module makes the collection, reads
its versions and copies points. A mixin of :class:`~drag_knee_retriever.store.qdrant.QdrantClientStore`
(which alone imports qdrant-client).
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.errors import StoreError
from drag_knee_retriever.model._point_schema import STAMP_FIELDS, is_node
from drag_knee_retriever.store.base import payload_stamp, root_version, stamp_ids

#: The class these methods are mixed into (QdrantClientStore), Any to a type checker: mypy
#: cannot check a mixin against its host class.
_Host = Any

log = logging.getLogger("drag_knee_retriever.store.qdrant")


def _live_stamps(copied: Mapping[str, Tuple[str, str, str]], live_hashes: Any) -> Optional[Dict[str, str]]:
    """doc_id -> stamp read from the roots' copy (``copied``: point id -> (doc_id, stamp, doc_hash)),
    or None when the nodes' collection does not hold each of those roots in the copy's version
    (``live_hashes(point_ids)``: point id -> doc_hash of the ones it holds).

    The copy is written after its root and deleted before it, and an embedded store opens with
    the copy brought in step, so there every copy is its root. A server may hold a copy whose root
    another client (an older release, which writes the nodes only) deleted or replaced: its stamp
    must not make a re-ingest skip a file whose document is gone or another version. The caller
    then reads the nodes' roots instead (the answer is the same as before the copy existed)."""
    if not copied:
        return {}
    held = live_hashes(list(copied))
    if any(pid not in held or held[pid] != doc_hash for pid, (_, _, doc_hash) in copied.items()):
        return None
    return {doc_id: stamp for doc_id, stamp, _ in copied.values()}


class QdrantRoots:
    """The roots' copy of a qdrant-client store (a mixin of ``QdrantClientStore``)."""

    def _root_versions(self: "_Host", name: str, flt: Any) -> Dict[str, str]:
        """Point id -> :func:`root_version` of the roots a collection holds (call under the engine lock)."""
        found: Dict[str, str] = {}
        offset = None
        while True:
            self._count()
            page, offset = self.client.scroll(name, scroll_filter=flt, limit=1024, offset=offset,
                                              with_payload=list(STAMP_FIELDS), with_vectors=False)
            found.update((str(p.id), root_version(p.payload)) for p in page)
            if offset is None:
                return found

    def _sync_roots(self: "_Host", dense_size: Optional[int], *, created: bool) -> None:
        """Bring the roots' collection in step with the roots of the nodes' collection (call under
        the engine lock).

        A collection written before the roots had one of their own (or by an older release) gets it
        here: every root missing from the copy, or held there in another version, is copied, and
        (embedded stores only) a copy whose root is gone is removed. On a server other writers may
        be mid-write (their copy lands before their root), so there the copy only gains roots.
        """
        if not self.client.collection_exists(self.roots_collection):
            if dense_size is None:
                raise StoreError("open_collection() makes the roots' collection; call it first.")
            self._create_collection(self.roots_collection, dense_size)
        if created:
            return
        copied, removed = self._sync_copies(prune=self.engine != "server")
        if copied or removed:
            log.info("roots' collection %s brought in step: %d root(s) copied, %d removed", self.roots_collection,
                     copied, removed)

    # The three steps NodeStore._sync_copies decides with (call under the engine lock).

    def _stored_root_versions(self: "_Host", *, copy: bool) -> Dict[str, str]:
        m = self._m
        if copy:
            return self._root_versions(self.roots_collection, None)
        return self._root_versions(self.collection, m.Filter(must=[m.FieldCondition(key="level",
                                                                                   match=m.MatchValue(value=0))]))

    def _copy_roots(self: "_Host", point_ids: List[str]) -> None:
        m = self._m
        for start in range(0, len(point_ids), self.upsert_batch_size):
            self._count()
            found = self.client.retrieve(self.collection, point_ids[start:start + self.upsert_batch_size],
                                         with_payload=True, with_vectors=True)
            points = [m.PointStruct(id=p.id, vector=p.vector, payload=p.payload) for p in found if is_node(p.payload)]
            if points:
                self._count()
                self.client.upsert(self.roots_collection, points, wait=True)

    def _drop_root_copies(self: "_Host", point_ids: List[str]) -> None:
        self._count()
        self.client.delete(self.roots_collection, points_selector=self._m.PointIdsList(points=point_ids), wait=True)

    def _copied_stamps(self: "_Host", doc_ids: Sequence[str]) -> Optional[Dict[str, str]]:
        # The roots' copy answers (only roots come back, with the stamp and version alone), then
        # the nodes' collection confirms those roots' versions (see _live_stamps).
        if not self._roots_synced:  # an index of a newer format, read as it is: the nodes' roots
            return None
        by_id = stamp_ids(doc_ids)
        self._count()
        with self._engine_lock:
            points = self.client.retrieve(self.roots_collection, list(by_id), with_payload=list(STAMP_FIELDS),
                                          with_vectors=False)
        copied = {}
        for point in points:
            pid, stamp = str(point.id), payload_stamp(point.payload)
            if stamp is not None and pid in by_id:
                copied[pid] = (by_id[pid], stamp, point.payload.get("doc_hash"))
        return _live_stamps(copied, self._doc_hashes)

    def _doc_hashes(self: "_Host", point_ids: Sequence[str]) -> Dict[str, Any]:
        """Point id -> doc_hash of the nodes' collection's points among ``point_ids`` (one request)."""
        self._count()
        with self._engine_lock:
            points = self.client.retrieve(self.collection, list(point_ids), with_payload=["doc_hash"],
                                          with_vectors=False)
        return {str(p.id): (p.payload or {}).get("doc_hash") for p in points}

    def sync_roots(self: "_Host") -> None:
        with self._engine_lock:
            self._sync_roots(None, created=False)
