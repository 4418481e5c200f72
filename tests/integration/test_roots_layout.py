"""The roots' own collection (index format 2): a copy of every root, kept in step by every write.

Real engines (Qdrant Edge and qdrant-client local mode, through the ``engine`` fixture), small
hand-made trees with seeded vectors. What must hold: the walk's first step ranks the copy (so it
never filters every node), and gets the same hits a ``level = 0`` filter over the nodes would; the
copy follows upserts, replaces and deletes; an index of the old layout (one collection, format 1)
is brought to the new one when it is opened, with the same rankings; a copy whose root is gone
(an interrupted write, or an older release's writes) is never a result and is removed on open.
"""

from __future__ import annotations

import shutil
import uuid
from typing import Any, Dict, List

import numpy as np
import pytest

from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.model._point_schema import SCHEMA_VERSION
from drag_knee_retriever.store import NodeRecord, QueryVectors, RankRequest, parse_filters
from drag_knee_retriever.store.base import EDGE_ROOTS_DIR
from drag_knee_retriever.model._ids import META_ID
from drag_knee_retriever.model._point_schema import meta_payload
from support.engines import make_store

DIM = 16
MODEL = "test/deterministic-16d"
QUERY = QueryVectors(dense=tuple(np.random.default_rng(5).standard_normal(DIM).tolist()),
                     sparse_indices=(1, 4, 9, 16, 25), sparse_values=(1.0,) * 5)


def _id(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)))


def records_of(doc: int, version: str = "a", leaves: int = 4) -> List[NodeRecord]:
    """One document: a root over ``leaves`` leaves; vectors seeded by document and version."""
    rng = np.random.default_rng(doc * 1000 + ord(version))
    doc_id, root = f"doc{doc}", _id(f"doc{doc}", "root")
    leaf_ids = [_id(doc_id, "leaf", str(i)) for i in range(leaves)]
    meta = {"lang": "ru" if doc % 3 == 0 else "en"}
    nodes = [TreeNode(id=lid, doc_id=doc_id, level=1, is_leaf=True, span=Span(i, i), text=f"leaf {i} {version}",
                      parent_id=root, metadata=meta, doc_hash=f"{doc_id}-{version}") for i, lid in enumerate(leaf_ids)]
    nodes.append(TreeNode(id=root, doc_id=doc_id, level=0, is_leaf=False, span=Span(0, leaves - 1),
                          text=f"root of {doc_id} {version}", child_ids=tuple(leaf_ids), metadata=meta,
                          doc_hash=f"{doc_id}-{version}"))
    out = []
    for node in nodes:
        terms = sorted(set(rng.integers(0, 30, 5).tolist()))
        # Distinct BM25 weights: equal scores would be ordered by the engine's insertion order,
        # which a copy made later (the migration) does not share.
        dense = rng.standard_normal(DIM)
        # Unit length, as an encoder writes them (opening checks a sample: issue 25's integrity check).
        out.append(NodeRecord(node, (dense / np.linalg.norm(dense)).tolist(), terms,
                              rng.uniform(0.5, 2.0, len(terms)).tolist()))
    return out


def opened(engine: str, location: str) -> Any:
    store = make_store(engine, "nodes", location=location, batch=3)
    store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
    return store


def write(store: Any, docs: range, version: str = "a") -> None:
    for d in docs:
        recs = records_of(d, version)
        store.delete_nodes(f"doc{d}")
        store.upsert([r for r in recs if r.node.level > 0])  # body, then the root (as the index writes)
        store.upsert([r for r in recs if r.node.level == 0])


def copy_hashes(store: Any) -> Dict[str, str]:
    """What the roots' copy holds: point id -> doc_hash (read from the engine itself; a root's
    version is ``"<doc_hash>|<file stamp>"``)."""
    if store.engine == "edge":
        versions = store._root_versions(store.roots_shard, level_filter=False)
    else:
        versions = store._root_versions(store.roots_collection, None)
    return {pid: version.partition("|")[0] for pid, version in versions.items()}


def main_root_hashes(store: Any) -> Dict[str, str]:
    return {n.id: n.doc_hash for n in store.scroll_nodes(with_text=False) if n.level == 0}


def drop_copy_point(store: Any, point_id: str) -> None:
    """Remove one root from the copy only (what an interrupted delete or an older writer leaves)."""
    if store.engine == "edge":
        qe = store._qe
        store.roots_shard.update(qe.UpdateOperation.delete_points([point_id]))
        store.roots_shard.flush()
    else:
        from qdrant_client import models

        store.client.delete(store.roots_collection, points_selector=models.PointIdsList(points=[point_id]))


def to_old_layout(store: Any, location: str) -> None:
    """Make a closed index look as format 1 wrote it: no roots' copy, schema_version 1."""
    meta = meta_payload(DIM, MODEL, "Qdrant/bm25", "client-idf-v1")
    meta["schema_version"] = 1
    if store.engine == "edge":
        qe = store._qe
        store.shard.update(qe.UpdateOperation.set_payload([META_ID], meta))
        store.shard.flush()
        store.close()
        shutil.rmtree(store.path / EDGE_ROOTS_DIR)
    else:
        store.client.set_payload(store.collection, payload=meta, points=[META_ID])
        store.client.delete_collection(store.roots_collection)
        store.close()


ROOTS = RankRequest(limit=20, level=0)


def ranked(store: Any, request: RankRequest = ROOTS, light: bool = False) -> List[tuple]:
    return [(h.node.id, round(h.score, 6)) for h in store.rank([request], QUERY, rrf_k=2, explain=False,
                                                                light=light)[0]]


def test_the_copy_holds_every_root_and_answers_the_roots_ranking(engine, tmp_path):
    store = opened(engine, str(tmp_path))
    try:
        write(store, range(6))
        assert copy_hashes(store) == main_root_hashes(store) and len(copy_hashes(store)) == 6
        before = ranked(store)
        assert len(before) == 6
        # The ranking reads the copy: a root taken out of the copy alone is no longer ranked...
        gone = _id("doc2", "root")
        drop_copy_point(store, gone)
        assert {pid for pid, _ in ranked(store)} == {pid for pid, _ in before} - {gone}
        # ...and so do the roots of named documents (level 0 by ids: the walk's first round trip is one
        # request, the copy's; their ids come from the identity table, read from the copy too)...
        named = RankRequest(limit=2, candidate_ids=(gone, _id("doc3", "root")), level=0)
        before_calls = store.requests
        assert [pid for pid, _ in ranked(store, named)] == [_id("doc3", "root")]
        assert store.requests == before_calls + 1
        both = store.rank([ROOTS, named], QUERY, rrf_k=2, explain=False, light=True)
        assert store.requests == before_calls + 2  # the roots ranking and the named roots: one call
        assert [h.node.id for h in both[1]] == [_id("doc3", "root")]
        # ...while a candidate-set ranking and a listing of every node still see it (the nodes' collection).
        assert gone in {h.node.id for h in store.rank([RankRequest(limit=5, candidate_ids=(gone,))], QUERY,
                                                      rrf_k=2, explain=False)[0]}
    finally:
        store.close()
    # Opened again, the copy is brought in step, and the ranking is whole again.
    store = opened(engine, str(tmp_path))
    try:
        assert copy_hashes(store) == main_root_hashes(store)
        assert ranked(store) == before
        assert ranked(store, light=True) == before
    finally:
        store.close()


def test_the_copy_follows_replaces_and_deletes(engine):
    store = opened(engine, ":memory:")
    try:
        write(store, range(5))
        write(store, range(1, 3), version="b")  # two documents replaced by a new version
        store.delete_nodes("doc4")
        store.delete_nodes("doc0", except_hash="doc0-a")  # keeps its (current) version
        held = copy_hashes(store)
        assert held == main_root_hashes(store)
        assert sorted(held.values()) == ["doc0-a", "doc1-b", "doc2-b", "doc3-a"]
        # A filter on the roots' ranking reads the copy's payload: the same as over the nodes.
        ru = RankRequest(limit=10, level=0, filters=parse_filters({"lang": "ru"}))
        assert {pid for pid, _ in ranked(store, ru)} == {_id("doc0", "root"), _id("doc3", "root")}
        assert len(store.scroll_nodes(level=0)) == 4
    finally:
        store.close()


def test_an_old_layout_index_is_brought_to_the_new_one_when_opened(engine, tmp_path):
    store = opened(engine, str(tmp_path))
    write(store, range(7))
    expected = ranked(store)
    filtered = ranked(store, RankRequest(limit=10, level=0, filters=parse_filters({"lang": "en"})))
    to_old_layout(store, str(tmp_path))
    store = opened(engine, str(tmp_path))
    try:
        assert store.collection_info()["schema_version"] == SCHEMA_VERSION == 2
        assert copy_hashes(store) == main_root_hashes(store) and len(copy_hashes(store)) == 7
        assert ranked(store) == expected
        assert ranked(store, RankRequest(limit=10, level=0, filters=parse_filters({"lang": "en"}))) == filtered
        write(store, range(7, 9))  # and it is written to as a new one
        assert len(copy_hashes(store)) == 9
    finally:
        store.close()


def test_a_root_missing_from_the_copy_is_copied_by_the_next_ingest_or_gc(engine, make_index, covid_corpus):
    """The root is the commit point and its copy follows it: a write cut between the two leaves a
    whole tree the walk cannot reach yet, still on the store's pending list, so the next ingest's
    sweep copies the root (as ``sweep_orphans`` / ``docs gc`` and the next open do)."""
    docs, questions = covid_corpus
    index = make_index(collection="roots_uncopied", engine=engine)
    index.add_documents(docs[:2])
    store = index.store
    victim = docs[0].id
    root = next(n for n in store.scroll_nodes(level=0) if n.doc_id == victim)
    for heal in ("ingest", "gc"):
        drop_copy_point(store, root.id)
        if heal == "ingest" and store.pending is not None:
            store.pending.begin([victim])  # as a write cut after the root leaves it
        assert [d.doc_id for d in index.list_documents()] == [docs[1].id]
        for question, _ in questions[:3]:
            assert all(n.node.doc_id != victim for n in index.search(question).nodes)
        if heal == "ingest":
            report = index.add_documents(docs[:2])
            assert sorted(report.unchanged) == sorted(d.id for d in docs[:2])  # nothing encoded again
        else:
            assert index.sweep_orphans().doc_ids == []
        assert copy_hashes(store) == main_root_hashes(store)
        assert sorted(d.doc_id for d in index.list_documents()) == sorted(d.id for d in docs[:2])


def test_a_copy_whose_root_is_gone_is_never_a_result_and_goes_on_open(engine, tmp_path, make_index, covid_corpus):
    """An older release deletes a document from the nodes' collection only, leaving its root in
    the copy: the walk may rank it, the liveness check of the result drops it, and reopening
    removes it."""
    docs, questions = covid_corpus
    index = make_index(collection="roots_orphan", engine=engine, store=str(tmp_path))
    index.add_documents(docs[:2])
    store = index.store
    victim = docs[0].id
    root = next(n for n in store.scroll_nodes(level=0) if n.doc_id == victim)
    # The root leaves the nodes' collection only (as if its write had not landed there yet).
    if store.engine == "edge":
        qe = store._qe
        store.shard.update(qe.UpdateOperation.delete_points([root.id]))
        store.shard.flush()
    else:
        from qdrant_client import models

        store.client.delete(store.collection, points_selector=models.PointIdsList(points=[root.id]))
    assert root.id in copy_hashes(store)
    for question, _ in questions[:6]:
        result = index.search(question)
        assert all(n.node.doc_id != victim for n in result.nodes)
    index.close()
    reopened = make_index(collection="roots_orphan", engine=engine, store=str(tmp_path))
    try:
        assert root.id not in copy_hashes(reopened.store)
        assert copy_hashes(reopened.store) == main_root_hashes(reopened.store)
        assert [d.doc_id for d in reopened.list_documents()] == sorted({docs[1].id})
    finally:
        reopened.close()
