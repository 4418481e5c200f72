"""The Edge store's writes: nodes upserted and deleted, roots' metadata set, flushes, BM25 frequencies.

Every write keeps in step, in this order, what the store holds beside the engine: the pending
documents and the record (:class:`~drag_knee_retriever.store.base.NodeStore`), the roots' shard
(a root's copy written after its root, deleted before it), both maps of the walk's fields (put
before the engine write, removed after the engine delete, dropped when a write fails), the BM25
document frequencies (stale when a write fails) and each document's node count. A mixin of
:class:`~.engine.EdgeStore`.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Mapping, Optional, Sequence

import numpy as np

from drag_knee_retriever.common._disk import BYTES_PER_NODE, MARGIN, WRITE_MARGIN, check_free_space
from drag_knee_retriever.model._point_schema import DENSE, SPARSE, node_payload
from drag_knee_retriever.store import filters as F
from drag_knee_retriever.store.base import NodeRecord
from drag_knee_retriever.store.checksums import add_checks
from drag_knee_retriever.store.edge.calls import SCROLL_PAGE, engine_errors

#: The class these methods are mixed into (EdgeStore), Any to a type checker: mypy
#: cannot check a mixin against its host class.
_Host = Any


class EdgeWrites:
    """Writes of an Edge store (a mixin of ``EdgeStore``)."""

    def upsert(self: "_Host", records: Sequence[NodeRecord]) -> None:
        qe = self._qe
        shard = self.shard
        self._begin_records(records)
        for start in range(0, len(records), self.upsert_batch_size):
            chunk = records[start : start + self.upsert_batch_size]
            payloads = [(r.node.id, node_payload(r.node)) for r in chunk]
            # numpy's tolist() converts a whole vector in C: 5x faster than float() per element.
            sparse = [(np.asarray(r.sparse_indices, dtype=np.int64).tolist(),
                       self._idf.document_values(r.sparse_values)) for r in chunk]
            add_checks([p for _, p in payloads], [r.node.id for r in chunk], [r.dense for r in chunk], sparse)
            points = [
                qe.Point(node_id, {DENSE: np.asarray(r.dense, dtype=np.float64).tolist(),
                                   SPARSE: qe.SparseVector(*terms)}, payload)
                for r, (node_id, payload), terms in zip(chunk, payloads, sparse)
            ]
            # Twice each node's estimate: the WAL and the segment hold it.
            check_free_space(self.path, (MARGIN if self.in_memory else WRITE_MARGIN) + 2 * sum(
                BYTES_PER_NODE + 4 * len(p[1].get("text") or "") for p in payloads), f"write {len(points)} nodes")
            for cache in self._maps:
                cache.put(payloads)  # before the engine write: see NodeCache
            replaced = self._sparse_terms(ids=[p[0] for p in payloads]) if self._idf.enabled else []
            self._count()
            with self._dropping_node_map_on_error(), self._idf_in_step(), \
                    engine_errors(f"write {len(points)} nodes (vector size or payload rejected?)", self.location):
                # One point per operation: within one operation Edge gives the points internal offsets
                # in an order that changes from process to process, and equal scores are returned in
                # offset order, so the same ingest ranked ties differently every run. Point by point
                # costs the same (3,000 points: 0.15 s either way).
                for point, record in zip(points, chunk):
                    shard.update(qe.UpdateOperation.upsert_points([point]))
                    if record.node.level == 0:
                        # The copy after the root (the commit point): the walk reaches no
                        # partial tree; a write cut between the two leaves the document pending,
                        # and the next ingest's sweep (or the next open) copies the root.
                        self.roots_shard.update(qe.UpdateOperation.upsert_points([point]))
                        self._roots_dirty = True
            if self._idf.enabled:
                self._idf.frequencies.remove(replaced)
                self._idf.frequencies.add([r.sparse_indices for r in chunk])
        if records:
            # Durable on return, like qdrant-client's wait=True (a WAL replays it anyway, but a
            # flush also bounds the time a reopen spends replaying).
            self._flush()
            self._forget_node_counts({r.node.doc_id for r in records})
        self._end_records(records)

    def _flush(self: "_Host") -> None:
        """Make the writes durable now, or at the end of the :meth:`writing` block around them."""
        if self._flush_deferred:
            self._flush_owed = True
            return
        with self._dropping_node_map_on_error(), engine_errors("flush written nodes to disk", self.location):
            if self._roots_dirty:  # a tree's body touches only the nodes' shard: one fsync, not two
                self.roots_shard.flush()
                self._roots_dirty = False
            self.shard.flush()

    @contextlib.contextmanager
    def writing(self: "_Host", doc_ids: Sequence[str]) -> Iterator[None]:
        """The index's replace-a-batch sequence (delete old trees, body, roots) with one flush at
        its end instead of one per step: on a 2,620-node folder each flush after a delete cost
        ~0.5 s, 3 of them per changed file (benchmarks/reingest.py). Order is still safe without
        the middle flushes: the write-ahead log replays operations in order, root last."""
        with super().writing(doc_ids):  # type: ignore[misc]  # NodeStore's, after this mixin in EdgeStore's MRO
            self._flush_deferred += 1
            try:
                yield
            finally:
                self._flush_deferred -= 1
            if self._flush_owed and not self._flush_deferred:
                self._flush_owed = False
                self._flush()  # before the pending list forgets these documents

    def _sparse_terms(self: "_Host", *, ids: Optional[Sequence[str]] = None, must: Optional[List[Any]] = None,
                      must_not: Optional[List[Any]] = None) -> List[List[int]]:
        """The BM25 term ids of stored nodes: by id, or by filter (every node: ``level >= 0``)."""
        if ids is None:
            return list(self._iter_sparse_terms(must=must, must_not=must_not))
        self._count()
        with engine_errors("read BM25 terms", self.location):
            records = self.shard.retrieve(list(ids), with_payload=False, with_vector=[SPARSE]) if ids else []
        return [list(r.vector[SPARSE].indices) for r in records if r.vector and SPARSE in r.vector]

    def _iter_sparse_terms(self: "_Host", *, must: Optional[List[Any]] = None,
                           must_not: Optional[List[Any]] = None) -> Iterator[List[int]]:
        """The BM25 term ids of the nodes a filter selects, one page of the engine's scroll at a time.

        Why a generator: rebuilding the frequencies of a reopened index reads every node's sparse
        vector, and holding them all at once (as Python lists of ints) cost more memory than the
        index itself at 1M nodes (``benchmarks/engine_scale.py``); page by page, only one page is held.
        """
        qe = self._qe
        offset = None
        while True:
            self._count()
            with engine_errors("read BM25 terms", self.location):
                page, offset = self.shard.scroll(qe.ScrollRequest(
                    offset=offset, limit=SCROLL_PAGE, with_payload=False, with_vector=[SPARSE],
                    filter=qe.Filter(must=must or None, must_not=must_not)))
            for r in page:
                if r.vector and SPARSE in r.vector:
                    yield r.vector[SPARSE].indices
            del page
            if offset is None:
                return

    def _fresh_idf(self: "_Host") -> None:
        if self._idf.enabled and self._idf.stale and self._shard is not None:
            self._idf.rebuild(self._iter_sparse_terms(must=self._filters.conditions(F.count_conditions())))

    @contextlib.contextmanager
    def _dropping_node_map_on_error(self: "_Host") -> Iterator[None]:
        """A write that fails leaves the engine in an unknown state: stop trusting the node map."""
        try:
            yield
        except BaseException:
            for cache in self._maps:
                cache.drop()
            raise

    def delete_nodes(self: "_Host", doc_id: str, *, except_hash: Optional[str] = None) -> None:
        qe = self._qe
        self._note_write()
        steps, excluded = F.delete_plan(doc_id, except_hash)
        must_not = self._filters.conditions(excluded) or None
        of_doc = self._filters.conditions(steps[-1])
        with self._dropping_node_map_on_error(), engine_errors(f"delete the nodes of document {doc_id!r}", self.location):
            # The index clears every document before writing it, new ones included: a count on
            # the doc_id index spares those the two deletes and the flush to disk.
            self._count()
            if not self.shard.count(qe.CountRequest(exact=True, filter=qe.Filter(must=of_doc, must_not=must_not))):
                return
            self._begin_delete(doc_id)
            # The root first (the NodeStore contract): it is the tree's commit point, so a delete
            # cut short leaves only rootless nodes, which no search reaches and the next ingest removes.
            gone = self._sparse_terms(must=of_doc, must_not=must_not) if self._idf.enabled else []
            with self._idf_in_step():
                # The roots' copy first (the walk stops reaching the tree), then the root, then the rest.
                self._count()
                self._roots_dirty = True
                self.roots_shard.update(qe.UpdateOperation.delete_points_by_filter(
                    qe.Filter(must=of_doc, must_not=must_not)))
                for step in steps:
                    self._count()
                    self.shard.update(qe.UpdateOperation.delete_points_by_filter(
                        qe.Filter(must=self._filters.conditions(step), must_not=must_not)))
                self._flush()
            if self._idf.enabled:
                self._idf.frequencies.remove(gone)
        for cache in self._maps:
            cache.remove(doc_id, except_hash)  # after the engine delete: see NodeCache
        self._forget_node_counts((doc_id,))
        self._deleted = True
        self._end_delete(doc_id)

    def set_root_metadata(self: "_Host", root_id: str, values: Mapping[str, Any]) -> None:
        qe = self._qe
        self._count()
        with engine_errors("update a root's metadata", self.location):
            for shard in (self.shard, self.roots_shard):
                shard.update(qe.UpdateOperation.set_payload([root_id], dict(values), key="metadata"))
            self._roots_dirty = True
            self._flush()
