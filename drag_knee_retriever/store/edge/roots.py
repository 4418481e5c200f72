"""The Edge store's roots' shard (``<folder>/<collection>/roots/``): made, read, kept in step.

A copy of every root (same id, vectors and payload) in a shard of its own, so that ranking the
roots scans the roots only (:func:`~drag_knee_retriever.store.base.roots_ranking`). Which roots to
copy or remove is decided once for every engine (:meth:`NodeStore._sync_copies
<drag_knee_retriever.store.base.NodeStore._sync_copies>`); this module makes the shard, reads its
versions and copies points. A mixin of :class:`~.engine.EdgeStore`.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence

from drag_knee_retriever.common._disk import BYTES_PER_NODE, MIB, edge_open_needs, free_bytes
from drag_knee_retriever.errors import StoreError
from drag_knee_retriever.model._point_schema import SCHEMA_VERSION, STAMP_FIELDS, is_node
from drag_knee_retriever.store.base import EDGE_ROOTS_DIR, payload_stamp, root_version, stamp_ids
from drag_knee_retriever.store.integrity import describe
from drag_knee_retriever.store.edge.calls import SCROLL_PAGE, engine_errors

#: The class these methods are mixed into (EdgeStore), Any to a type checker: mypy
#: cannot check a mixin against its host class.
_Host = Any

log = logging.getLogger("drag_knee_retriever.store.edge.engine")

# Points per retrieve / upsert when the roots' shard is filled from the nodes' shard.
COPY_BATCH = 256


class EdgeRoots:
    """The roots' shard of an Edge store (a mixin of ``EdgeStore``)."""

    read_only: Optional[str]  # NodeStore's (set here when a format-1 index has no room for its roots)

    @property
    def roots_shard(self: "_Host") -> Any:
        """The roots' own ``EdgeShard`` (made or brought in step by :meth:`open_collection`)."""
        self.shard  # a closed or unopened store says so
        if self._roots is None:
            raise StoreError(f"The roots of collection {self.collection!r} are not open; call open_collection() "
                             "(DragKneeIndex does) before reading or writing.")
        return self._roots

    def _room_for_roots(self: "_Host") -> bool:
        """Whether the roots' shard is there, or there is room to make it (bringing a format-1
        index to format 2 on open). Where there is not, the index opens read-only, saying why:
        making the shard maps its log (2 x 32 MiB) and copies every root, and Edge dies by SIGBUS
        on a full disk. Searches and listings then rank the roots by the level filter on the nodes'
        shard, as format 1 did."""
        if self._roots is not None or self.in_memory:
            return True
        roots = self.count_roots()
        needed = edge_open_needs(self.path / EDGE_ROOTS_DIR) + 2 * roots * BYTES_PER_NODE
        free = free_bytes(self.path)
        if free is None or free >= needed:
            return True
        self._roots_deferred = True
        self.read_only = (
            f"The index {describe(self)} is in index format 1; bringing it to format {SCHEMA_VERSION} (a shard of "
            f"its {roots:,} roots) needs about {needed / MIB:.0f} MB of free disk space and {free / MIB:.0f} MB are "
            "free, so it opens read-only: searches and listings work, writes are refused. The index is intact; "
            "free some space and open it again to bring it to the new format."
        )
        log.warning("%s", self.read_only)
        return False

    def _roots_to_read(self: "_Host") -> Any:
        """The shard that answers rankings and listings of the roots: the roots' own, or the nodes'
        shard (by its ``level = 0`` filter) for a format-1 index opened read-only (_room_for_roots)."""
        if self._roots_deferred:
            return self.shard
        return self.roots_shard

    def _create_roots_shard(self: "_Host", dense_size: int) -> Any:
        """A new, empty roots' shard (call inside engine_errors)."""
        roots = self._qe.EdgeShard.create(str(self.path / EDGE_ROOTS_DIR), self._shard_config(dense_size))
        self._create_indexes(roots)
        return roots

    def _root_versions(self: "_Host", shard: Any, *, level_filter: bool) -> Dict[str, str]:
        """Point id -> :func:`root_version` of every root a shard holds (the nodes' shard: ``level = 0``)."""
        qe = self._qe
        flt = qe.Filter(must=[qe.FieldCondition(key="level", match=qe.MatchValue(0))]) if level_filter else None
        found: Dict[str, str] = {}
        offset = None
        while True:
            self._count()
            page, offset = shard.scroll(qe.ScrollRequest(
                offset=offset, limit=SCROLL_PAGE, filter=flt, with_payload=qe.PayloadSelector.Include(list(STAMP_FIELDS)),
                with_vector=False))
            found.update((str(r.id), root_version(r.payload)) for r in page)
            if offset is None:
                return found

    # The three steps NodeStore._sync_copies decides with.

    def _stored_root_versions(self: "_Host", *, copy: bool) -> Dict[str, str]:
        return self._root_versions(self._roots, level_filter=False) if copy else \
            self._root_versions(self.shard, level_filter=True)

    def _copy_roots(self: "_Host", point_ids: List[str]) -> None:
        qe = self._qe
        for start in range(0, len(point_ids), COPY_BATCH):
            self._count()
            records = self.shard.retrieve(point_ids[start:start + COPY_BATCH], with_payload=True, with_vector=True)
            points = [qe.Point(str(r.id), r.vector, r.payload) for r in records if is_node(r.payload)]
            self._count()
            self._roots.update(qe.UpdateOperation.upsert_points(points))

    def _drop_root_copies(self: "_Host", point_ids: List[str]) -> None:
        self._count()
        self._roots.update(self._qe.UpdateOperation.delete_points(point_ids))

    def _sync_roots(self: "_Host", dense_size: Optional[int]) -> None:
        """Bring the roots' shard in step with the roots of the nodes' shard.

        A folder written before the roots had a shard of their own (or by an older release, which
        writes the nodes' shard only) gets it here, when it is opened: every root is copied (7,024
        roots of a 1M-node index: a few seconds), a root the copy lacks or holds in another version
        is copied again, and a copy whose root is gone is deleted. Two scrolls of the roots' ids and
        hashes otherwise (milliseconds). The folder lock means no other writer runs meanwhile.
        """
        with engine_errors("bring the roots' shard in step with the index", self.location):
            if self._roots is None:
                if dense_size is None:
                    raise StoreError("open_collection() makes the roots' shard; call it first.")
                self._roots = self._create_roots_shard(dense_size)
            copied, removed = self._sync_copies()
            if copied or removed:
                self._roots.flush()
                log.info("roots' shard of %s brought in step: %d root(s) copied, %d removed", self.path,
                         copied, removed)

    def sync_roots(self: "_Host") -> None:
        self._sync_roots(None)

    def _copied_stamps(self: "_Host", doc_ids: Sequence[str]) -> Optional[Dict[str, str]]:
        # The roots' copy answers: only roots come back, with the stamp alone (a retrieve of both
        # possible root ids from the nodes' shard also returned each document's first leaf, and
        # the walk's fields of each: ~75 ms for 1,000 files, RESULTS.md "scale"). The folder lock
        # and the sync on open make the copy the roots (written after its root, deleted before
        # it); a count of those documents' roots in the nodes' shard (~2 ms) confirms it anyway.
        if self._roots is None or self._roots_deferred:  # format 1 read as it is: the nodes' roots
            return None
        by_id = stamp_ids(doc_ids)
        self._count()
        with engine_errors("fetch the roots' file stamps"):
            records = self._roots.retrieve(list(by_id), with_payload=self._stamp_payload, with_vector=False)
        found: Dict[str, str] = {}
        for record in records:
            stamp = payload_stamp(record.payload)
            if stamp is not None:
                found[by_id[str(record.id)]] = stamp
        if found and self._count_roots_of(list(found)) != len(found):
            return None
        return found

    def _count_roots_of(self: "_Host", doc_ids: Sequence[str]) -> int:
        """How many roots of ``doc_ids`` the nodes' shard holds (one count on its payload indexes)."""
        qe = self._qe
        self._count()
        with engine_errors("count the roots of documents"):
            return self.shard.count(qe.CountRequest(exact=True, filter=qe.Filter(must=[
                qe.FieldCondition(key="doc_id", match=qe.MatchAny(list(doc_ids))),
                qe.FieldCondition(key="level", match=qe.MatchValue(0))])))
