"""EdgeStore on the real Qdrant Edge engine: schema, writes, ranking, persistence, locking.

Vectors here are deterministic (seeded) so every expectation can be computed independently with
numpy; ``test_congruence.py`` compares the engine with qdrant-client on real embeddings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

from drag_knee_retriever.store.edge import LOCK_FILE, EdgeStore
from drag_knee_retriever.errors import ConfigError, InvalidQueryError, ModelMismatchError, StoreError, StoreLockedError
from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.model._point_schema import SCHEMA_VERSION, node_payload
from drag_knee_retriever.store import NodeRecord, QueryVectors, RankRequest, parse_filters

DIM = 16
MODEL = "test/deterministic-16d"


def _id(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)))


def make_records(seed: int = 7, docs: int = 4, leaves: int = 5) -> List[NodeRecord]:
    """Small two-level trees: one root per document over ``leaves`` leaves, seeded vectors."""
    rng = np.random.default_rng(seed)
    records = []
    for d in range(docs):
        doc_id = f"doc{d}"
        root = _id(doc_id, "root")
        leaf_ids = [_id(doc_id, "leaf", str(i)) for i in range(leaves)]
        meta = {"lang": "ru" if d == 0 else "en", "reviewed": d % 2 == 1, "year": 2020 + d}
        nodes = [TreeNode(id=root, doc_id=doc_id, level=0, is_leaf=False, span=Span(0, leaves - 1, 1, leaves),
                          text=f"summary of {doc_id}", child_ids=tuple(leaf_ids), keywords=("k1", "k2"),
                          title=f"Title {d}", path="r", metadata=meta, doc_hash=f"hash{d}")]
        nodes += [TreeNode(id=lid, doc_id=doc_id, level=1, is_leaf=True, span=Span(i, i, i + 1, i + 1),
                           text=f"leaf {i} of {doc_id}", parent_id=root, path=f"r.{i}", metadata=meta,
                           doc_hash=f"hash{d}") for i, lid in enumerate(leaf_ids)]
        for node in nodes:
            dense = rng.standard_normal(DIM)
            indices = sorted(set(rng.integers(0, 40, 6).tolist()))
            records.append(NodeRecord(node, dense.tolist(), indices, rng.uniform(0.5, 2.0, len(indices)).tolist()))
    return records


QUERY = QueryVectors(
    dense=tuple(np.random.default_rng(99).standard_normal(DIM).tolist()),
    sparse_indices=(1, 5, 9, 13, 17, 21, 25, 29),
    sparse_values=(1.0,) * 8,
)


def open_store(location, records=None, collection="nodes") -> EdgeStore:
    store = EdgeStore(collection, location=str(location))
    store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
    if records:
        store.upsert(records)
    return store


@pytest.fixture(scope="module")
def records() -> List[NodeRecord]:
    return make_records()


@pytest.fixture(scope="module")
def store(records):
    """A read-only in-memory store shared by the ranking tests."""
    s = open_store(":memory:", records)
    yield s
    s.close()


def cosine_order(records: List[NodeRecord], ids, query=QUERY) -> List[str]:
    q = np.asarray(query.dense)
    q = q / np.linalg.norm(q)
    by_id = {r.node.id: r for r in records}
    scored = [(float(np.dot(np.asarray(by_id[i].dense) / np.linalg.norm(by_id[i].dense), q)), i) for i in ids]
    return [i for _, i in sorted(scored, key=lambda t: (-t[0], t[1]))]


# -- writes and reads --------------------------------------------------------------------------------


def test_upsert_retrieve_count_and_bookkeeping(store, records):
    assert store.count() == len(records)  # the bookkeeping point is not counted
    wanted = [records[0].node.id, records[3].node.id, _id("missing")]
    got = {n.id: n for n in store.retrieve(wanted)}
    assert set(got) == set(wanted[:2])
    assert got[records[0].node.id] == records[0].node  # payload round trip is lossless
    assert got[records[3].node.id] == records[3].node
    info = store.collection_info()
    assert info["model_id"] == MODEL and info["dense_size"] == DIM and info["engine"] == "edge"
    assert info["schema_version"] == SCHEMA_VERSION
    assert store.describe().startswith("qdrant-edge 0.9.0")


def test_scroll_nodes_by_level_filter_and_without_text(store, records):
    roots = store.scroll_nodes(level=0)
    assert sorted(n.doc_id for n in roots) == ["doc0", "doc1", "doc2", "doc3"]
    ru = store.scroll_nodes(filters=parse_filters({"lang": "ru"}))
    assert {n.doc_id for n in ru} == {"doc0"} and len(ru) == 6
    reviewed_leaves = store.scroll_nodes(filters=parse_filters({"reviewed": True, "is_leaf": True}))
    assert {n.doc_id for n in reviewed_leaves} == {"doc1", "doc3"} and all(n.is_leaf for n in reviewed_leaves)
    bare = store.scroll_nodes(with_text=False)
    assert len(bare) == len(records) and all(n.text == "" for n in bare)


def test_every_call_is_one_request(store):
    before = store.requests
    requests = [RankRequest(limit=3, level=0), RankRequest(limit=5, leaves_only=True),
                RankRequest(limit=4, candidate_ids=(_id("doc0", "root"),) + tuple(_id("doc0", "leaf", str(i)) for i in range(5)))]
    results = store.rank(requests, QUERY, rrf_k=2, explain=True)
    # Two engine calls: the roots' ranking runs on the roots' own shard, the rest in one batch.
    assert len(results) == 3 and store.requests == before + 2
    store.rank(requests[1:], QUERY, rrf_k=2, explain=True)
    assert store.requests == before + 3
    store.rank(requests[:1], QUERY, rrf_k=2, explain=True)
    assert store.requests == before + 4
    store.retrieve([_id("doc1", "root")])
    assert store.requests == before + 5


# -- ranking -----------------------------------------------------------------------------------------


def test_rank_restrictions(store, records):
    cand = tuple(_id("doc2", "leaf", str(i)) for i in range(5)) + (_id("doc2", "root"), _id("doc3", "root"))
    roots, leaves, restricted, ru, ids_and_filter = store.rank([
        RankRequest(limit=10, level=0),
        RankRequest(limit=50, leaves_only=True),
        RankRequest(limit=50, candidate_ids=cand),
        RankRequest(limit=50, filters=parse_filters({"lang": "ru"})),
        RankRequest(limit=50, candidate_ids=cand, filters=parse_filters({"reviewed": True})),
    ], QUERY, rrf_k=2, explain=True)
    assert len(roots) == 4 and all(h.node.level == 0 for h in roots)
    assert len(leaves) == 20 and all(h.node.is_leaf for h in leaves)
    assert {h.node.id for h in restricted} == set(cand)
    assert {h.node.doc_id for h in ru} == {"doc0"} and len(ru) == 6
    assert {h.node.id for h in ids_and_filter} == {_id("doc3", "root")}
    for hits in (roots, leaves, restricted, ru):
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)


def test_dense_side_is_exact_and_fused_scores_follow_rrf(store, records):
    cand = tuple(r.node.id for r in records[:12])
    (dense_only,) = store.rank([RankRequest(limit=12, candidate_ids=cand, only="dense")], QUERY, rrf_k=2, explain=False)
    assert [h.node.id for h in dense_only] == cosine_order(records, cand)  # exact brute force order
    k = 3
    for weights in [(1.0, 1.0), (0.3, 0.7), (1.0, 0.0), (0.0, 1.0)]:
        (hits,) = store.rank([RankRequest(limit=12, candidate_ids=cand, weights=weights)], QUERY, rrf_k=k, explain=True)
        assert {h.node.id for h in hits} == set(cand)
        for h in hits:
            # qdrant-client's and Edge's weighted RRF: 1 / ((rank + 1) / w + k - 1), rank 0-based, 0 if w = 0.
            expected = sum(
                1.0 / ((rank + 1) / w + k - 1)
                for rank, w in ((h.dense_rank, weights[0]), (h.sparse_rank, weights[1]))
                if rank is not None and w > 0
            )
            assert h.score == pytest.approx(expected, rel=1e-5)
        ordered = [(-round(h.score, 6), h.node.id) for h in hits]
        assert ordered == sorted(ordered)  # ties broken by node id


def test_unrestricted_ranking_never_returns_the_bookkeeping_point(store, records):
    # The bookkeeping point's vector is (1, 0, ..., 0): the query most similar to it.
    query = QueryVectors(dense=(1.0,) + (0.0,) * (DIM - 1), sparse_indices=(1,), sparse_values=(1.0,))
    dense_all, fused_all = store.rank([RankRequest(limit=100, only="dense"), RankRequest(limit=100)],
                                      query, rrf_k=2, explain=True)
    assert len(dense_all) == len(fused_all) == len(records)
    assert all(h.dense_rank is not None for h in fused_all)  # ranks count nodes only


def test_rank_rejects_rrf_k_zero(store):
    with pytest.raises(InvalidQueryError, match="rrf_k"):
        store.rank([RankRequest(limit=3, level=0)], QUERY, rrf_k=0, explain=False)


def test_empty_candidate_set_and_no_requests(store):
    assert store.rank([], QUERY, rrf_k=2, explain=True) == []
    assert store.rank([RankRequest(limit=5, candidate_ids=())], QUERY, rrf_k=2, explain=True) == [[]]


# -- deletes, persistence, locking ----------------------------------------------------------------


def test_delete_with_except_hash(tmp_path, records):
    store = open_store(tmp_path, records)
    try:
        store.delete_nodes("doc1", except_hash="hash1")  # same hash: the current tree stays
        assert store.count() == len(records)
        store.delete_nodes("doc1", except_hash="older-hash")
        assert {n.doc_id for n in store.scroll_nodes()} == {"doc0", "doc2", "doc3"}
        store.delete_nodes("doc2")
        assert store.count() == len(records) - 12
        assert store.retrieve([_id("doc2", "root")]) == []
    finally:
        store.close()
    reopened = open_store(tmp_path)  # close() vacuumed the deleted points; the rest is intact
    try:
        assert reopened.count() == len(records) - 12
    finally:
        reopened.close()


CHILD = textwrap.dedent("""
    import json, sys
    from drag_knee_retriever.store.edge import EdgeStore
    from drag_knee_retriever.errors import StoreLockedError
    from drag_knee_retriever.store import QueryVectors, RankRequest
    folder, mode = sys.argv[1], sys.argv[2]
    try:
        store = EdgeStore("nodes", location=folder)
    except StoreLockedError as exc:
        print(json.dumps({"locked": str(exc)}))
        sys.exit(0)
    store.open_collection(dense_size=16, model_id=%r, sparse_model="Qdrant/bm25")
    query = QueryVectors(**json.loads(sys.argv[3]))
    hits = store.rank([RankRequest(limit=30, leaves_only=True), RankRequest(limit=10, level=0)], query, rrf_k=2, explain=True)
    print(json.dumps({"count": store.count(), "ranked": [[[h.node.id, h.score] for h in r] for r in hits]}))
    store.close()
""" % MODEL)


def run_child(folder: Path, mode: str = "read") -> Dict:
    query = json.dumps({"dense": list(QUERY.dense), "sparse_indices": list(QUERY.sparse_indices),
                        "sparse_values": list(QUERY.sparse_values)})
    out = subprocess.run([sys.executable, "-c", CHILD, str(folder), mode, query],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_persistence_across_processes_and_lock(tmp_path, records):
    store = open_store(tmp_path, records)
    expected = [[[h.node.id, h.score] for h in r] for r in store.rank(
        [RankRequest(limit=30, leaves_only=True), RankRequest(limit=10, level=0)], QUERY, rrf_k=2, explain=True)]
    assert (tmp_path / "nodes" / LOCK_FILE).exists()

    # While this process holds the folder, another process gets a clear error, and so does a
    # second store in this process.
    locked = run_child(tmp_path)
    assert "locked" in locked and "open in another process" in locked["locked"]
    assert f"pid {os.getpid()}" in locked["locked"] and "url=" in locked["locked"]
    with pytest.raises(StoreLockedError):
        EdgeStore("nodes", location=str(tmp_path))
    store.close()

    reopened = run_child(tmp_path)
    assert reopened["count"] == len(records)
    assert reopened["ranked"] == expected  # same nodes, same scores, same order


def test_model_mismatch_is_detected_on_reopen(tmp_path, records):
    open_store(tmp_path, records[:3]).close()
    for model, size in (("other/model", DIM), (MODEL, DIM * 2)):
        store = EdgeStore("nodes", location=str(tmp_path))
        try:
            with pytest.raises(ModelMismatchError, match="was built with model"):
                store.open_collection(dense_size=size, model_id=model, sparse_model="Qdrant/bm25")
        finally:
            store.close()
    same = open_store(tmp_path)
    assert same.count() == 3
    same.close()


def test_memory_store_removes_its_folder_and_closed_store_errors(records):
    store = open_store(":memory:", records[:2])
    folder = store.path
    assert folder.is_dir()
    store.close()
    store.close()  # twice is harmless
    assert not folder.exists()
    with pytest.raises(StoreError, match="closed"):
        store.count()


def test_a_local_mode_folder_is_not_mistaken_for_an_empty_edge_index(tmp_path):
    from drag_knee_retriever.store import QdrantClientStore

    local = QdrantClientStore("nodes", location=str(tmp_path))
    local.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
    local.close()
    with pytest.raises(StoreError, match="engine='local'"):
        EdgeStore("nodes", location=str(tmp_path))


def test_memory_folders_of_dead_processes_are_swept(records):
    # A process that dies without closing its in-memory store leaves its folder behind.
    code = ("import os\nfrom drag_knee_retriever.store.edge import EdgeStore\n"
            "s = EdgeStore('orphan')\nprint(s.path.parent)\nos._exit(0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    orphan = Path(out.stdout.strip().splitlines()[-1])
    assert orphan.is_dir(), out.stderr
    live = open_store(":memory:", records[:2])
    try:
        old = os.stat(orphan).st_mtime - 3600
        for folder in (orphan, live.path.parent):  # both look old; only the dead one is unlocked
            os.utime(folder, (old, old))
        EdgeStore("another").close()
        assert not orphan.exists()
        assert live.path.is_dir() and live.count() == 2
    finally:
        live.close()


def test_bad_collection_names_and_unopened_store(tmp_path):
    with pytest.raises(ConfigError):
        EdgeStore("a/b", location=str(tmp_path))
    fresh = EdgeStore("fresh", location=str(tmp_path))
    try:
        with pytest.raises(StoreError, match="open_collection"):
            fresh.count()
        assert fresh.collection_info()["engine"] == "edge"
    finally:
        fresh.close()


# -- light rankings and the node map ------------------------------------------------------------------

WALK_REQUESTS = [
    RankRequest(limit=10, level=0),
    RankRequest(limit=50, leaves_only=True),
    RankRequest(limit=8, candidate_ids=tuple(_id("doc2", "leaf", str(i)) for i in range(5)) + (_id("doc2", "root"),)),
    RankRequest(limit=50, filters=parse_filters({"lang": "ru"})),
    RankRequest(limit=3, only="dense"),
]


def _walk_view(results):
    """What a walk reads of a ranking: ids, scores, side ranks and the structural fields."""
    return [[(h.node.id, h.score, h.dense_rank, h.sparse_rank, h.node.doc_id, h.node.level, h.node.is_leaf,
              h.node.span, h.node.parent_id, h.node.child_ids, h.node.doc_hash) for h in hits] for hits in results]


def _assert_light_equals_full(store, query=QUERY):
    for explain in (True, False):
        full = store.rank(WALK_REQUESTS, query, rrf_k=2, explain=explain)
        light = store.rank(WALK_REQUESTS, query, rrf_k=2, explain=explain, light=True)
        assert _walk_view(light) == _walk_view(full)
        assert all(h.node.text == "" and h.node.metadata == {} for hits in light for h in hits)


def test_light_rankings_equal_full_ones_with_and_without_the_node_map(tmp_path, records):
    store = open_store(tmp_path, records)
    try:
        assert store._node_map.complete  # created here: every node is known
        before = store.requests
        _assert_light_equals_full(store)
        # Still one round trip per rank call and shard (the roots' request runs on their own shard).
        assert store.requests == before + 8
    finally:
        store.close()
    without = EdgeStore("nodes", location=str(tmp_path), node_map_capacity=0)  # no map: payload fields
    try:
        without.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
        assert not without._node_map.complete
        _assert_light_equals_full(without)
    finally:
        without.close()
    reopened = open_store(tmp_path)  # loaded from a folder: the map fills in the background
    try:
        assert reopened.wait_for_node_map(60)
        assert len(reopened._node_map.nodes) == reopened.count()
        _assert_light_equals_full(reopened)
    finally:
        reopened.close()


SCORED_REQUESTS = [
    RankRequest(limit=100, leaves_only=True, with_scores=True),  # the focus step's global list, deep
    RankRequest(limit=3, leaves_only=True, with_scores=True, filters=parse_filters({"doc_id": ["doc1", "doc3"]})),
    RankRequest(limit=6, candidate_ids=tuple(_id("doc2", "leaf", str(i)) for i in range(5)), with_scores=True),
]


def _scored_view(results):
    return [[(h.node.id, h.score, h.dense_score, h.sparse_score, h.node.doc_id, h.node.span, h.node.parent_id)
             for h in hits] for hits in results]


def test_scored_rankings_without_the_node_map_are_fused_here(tmp_path, monkeypatch):
    """Without the node map (an index above its capacity, e.g. 1M nodes) a with_scores ranking sends
    its two side rankings only (the engine's fused request would rank a filtered set twice more): a
    candidate set's dense side with the walk's fields, an open ranking's sides without (they read
    more hits than the fusion keeps), whose kept hits' fields are then read in one engine call for
    the batch, those a candidate set brought excepted: the same hits and scores as with the map,
    hits only BM25 returned included."""
    records = make_records(seed=3, docs=30, leaves=5)  # 150 leaves: each side ranks its best 100
    store = open_store(tmp_path, records)
    try:
        expected = store.rank(SCORED_REQUESTS, QUERY, rrf_k=2, explain=False, light=True)
    finally:
        store.close()
    without = EdgeStore("nodes", location=str(tmp_path), node_map_capacity=0)
    try:
        without.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
        assert not without._node_map.complete
        shard, calls = without.shard, []

        class Spy:
            def __getattr__(self, name):
                return getattr(shard, name)

            def query_batch(self, batch):
                answers = shard.query_batch(batch)
                calls.append(("query_batch", len(answers)))
                return answers

            def retrieve(self, ids, **kwargs):
                calls.append(("retrieve", len(ids)))
                return shard.retrieve(ids, **kwargs)

        monkeypatch.setattr(without, "_shard", Spy())
        got = without.rank(SCORED_REQUESTS, QUERY, rrf_k=2, explain=False, light=True)
        assert _scored_view(got) == _scored_view(expected)
        assert all(h.node.text == "" and h.node.metadata == {} for hits in got for h in hits)
        # The deep list holds hits beyond the dense side's best 100 (BM25 brought them).
        dense_side = without.rank([replace(SCORED_REQUESTS[0], only="dense")], QUERY, rrf_k=2, explain=False)[0]
        assert {h.node.id for h in got[0]} - {h.node.id for h in dense_side}
        # Two side rankings per request, no fused one; then one read of the open rankings' kept hits
        # that the candidate set's dense side did not bring.
        held = {h.node.id for h in got[2]}
        kept = {h.node.id for hits in got[:2] for h in hits} - held
        assert calls[0] == ("query_batch", 2 * len(SCORED_REQUESTS))
        assert calls[1] == ("retrieve", len(kept)) and len(calls) == 3
    finally:
        monkeypatch.undo()
        without.close()


def test_a_write_while_the_node_map_loads_discards_the_load(records):
    from drag_knee_retriever.store.edge.node_map import NodeCache

    payloads = [(r.node.id, node_payload(r.node)) for r in records]
    cache = NodeCache(len(records), complete=False)
    token = cache.begin_load()
    cache.remove("doc0", None)  # a write the scroll may or may not have seen
    assert not cache.finish_load(token, payloads) and not cache.complete
    token = cache.begin_load()
    assert cache.finish_load(token, payloads) and cache.complete
    assert len(cache.nodes) == len(records)
    assert not NodeCache(len(records) - 1, complete=False).finish_load(0, payloads)  # over capacity: no map


def test_writes_right_after_reopening_leave_a_right_map_or_none(tmp_path, records):
    open_store(tmp_path, records).close()
    for attempt in range(3):
        store = open_store(tmp_path)  # the loader starts; the delete races it
        try:
            store.delete_nodes("doc2")
            store.upsert([r for r in records if r.node.doc_id == "doc2"])
            if store.wait_for_node_map(60):
                assert len(store._node_map.nodes) == store.count()
            _assert_light_equals_full(store)
        finally:
            store.close()


def test_closing_while_the_node_map_loads_is_clean(tmp_path, records):
    open_store(tmp_path, records).close()
    for attempt in range(5):
        store = open_store(tmp_path)
        store.close()  # joins the loader before the shard closes
        assert store._loader is None or not store._loader.is_alive()


def _replace_doc1_and_delete_doc2(store, records):
    """doc1 replaced by a new version with fewer leaves (hash1-v2), doc2 deleted."""
    new_root = _id("doc1", "root")
    kept = [r for r in records if r.node.doc_id == "doc1"][:3]
    replaced = [NodeRecord(TreeNode(**{**r.node.__dict__, "doc_hash": "hash1-v2",
                                       "child_ids": tuple(k.node.id for k in kept[1:]) if r.node.id == new_root
                                       else r.node.child_ids}), r.dense, r.sparse_indices, r.sparse_values)
                for r in kept]
    store.delete_nodes("doc1", except_hash="hash1-v2")
    store.upsert(replaced)
    store.delete_nodes("doc2")


def _fail_a_write(store, records):
    """An upsert of a new version of records[0] that the engine refuses (see _FailingUpdates)."""
    shard = store._shard
    store._shard = _FailingUpdates(shard)
    changed = [NodeRecord(TreeNode(**{**records[0].node.__dict__, "doc_hash": "never-written"}),
                          records[0].dense, records[0].sparse_indices, records[0].sparse_values)]
    try:
        with pytest.raises(StoreError, match="simulated write failure"):
            store.upsert(changed)
    finally:
        store._shard = shard


def test_the_node_map_follows_replaces_and_deletes(records):
    store = open_store(":memory:", records)
    try:
        _replace_doc1_and_delete_doc2(store, records)
        assert store._node_map.complete
        _assert_light_equals_full(store)
        (roots,) = store.rank([RankRequest(limit=10, level=0)], QUERY, rrf_k=2, explain=False, light=True)
        assert {h.node.doc_id: h.node.doc_hash for h in roots} == {"doc0": "hash0", "doc1": "hash1-v2", "doc3": "hash3"}
        assert len(store._node_map.nodes) == store.count()
    finally:
        store.close()


class _FailingUpdates:
    """The shard, except that its next ``update`` raises (a disk full, a killed write)."""

    def __init__(self, shard):
        self._shard = shard

    def __getattr__(self, name):
        return getattr(self._shard, name)

    def update(self, operation):
        raise OSError("simulated write failure")


def test_a_failed_write_drops_the_node_map_and_rankings_stay_right(records):
    store = open_store(":memory:", records)
    try:
        _fail_a_write(store, records)
        assert not store._node_map.complete  # the map would claim a version the engine never got
        _assert_light_equals_full(store)
    finally:
        store.close()


def test_a_full_node_map_gives_way_to_payload_rankings(tmp_path, records):
    store = EdgeStore("nodes", location=":memory:", node_map_capacity=len(records) - 1)
    try:
        store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
        store.upsert(records)
        assert not store._node_map.complete and not store._node_map.nodes
        _assert_light_equals_full(store)
    finally:
        store.close()
    with pytest.raises(ConfigError, match="node_map_capacity"):
        EdgeStore("nodes", location=str(tmp_path), node_map_capacity=-1)


def test_fusion_here_equals_the_engines_bit_for_bit(store, records):
    """fuse_rrf (explain on, node map complete) against Edge's own Fusion.Rrf on the same requests."""
    from drag_knee_retriever.store.edge.fast import fuse_rrf, point_ids

    qe, shard = store._qe, store.shard
    rng = np.random.default_rng(5)
    boundary_ties = 0
    for trial in range(60):
        terms = tuple(range(trial % 7, 40, 5))
        query = QueryVectors(dense=tuple(rng.standard_normal(DIM).tolist()), sparse_indices=terms,
                             sparse_values=(1.0,) * len(terms))
        k = int(rng.choice([1, 2, 3, 60]))
        weights = [(1.0, 1.0), (0.3, 0.7), (1.0, 0.0), (0.0, 1.0), (2.0, 0.5)][trial % 5]
        limit, side = int(rng.choice([3, 8, 24])), int(rng.choice([8, 24]))
        dense_q, sparse_q = store._query(query)
        flt = qe.Filter(must=[qe.FieldCondition(key="level", range=qe.RangeFloat(gte=0))])
        fused, dense, sparse = shard.query_batch(qe.QueryBatchRequest([
            qe.QueryRequest(prefetches=[qe.Prefetch(query=dense_q, filter=flt, limit=side, params=store._exact),
                                        qe.Prefetch(query=sparse_q, filter=flt, limit=side)],
                            query=qe.Fusion.Rrf(k=k, weights=list(weights)), filter=flt, limit=limit, with_payload=False),
            qe.QueryRequest(query=dense_q, filter=flt, limit=side, params=store._exact, with_payload=False),
            qe.QueryRequest(query=sparse_q, filter=flt, limit=side, with_payload=False)]))
        engine = sorted(((str(p.id), p.score) for p in fused), key=lambda item: (-item[1], item[0]))
        here = fuse_rrf(point_ids(dense), point_ids(sparse), k, weights)[:limit]
        assert point_ids(fused) == [str(p.id) for p in fused]
        if here != engine:
            # Only where the limit cuts through equal scores: the engine keeps an arbitrary one.
            assert [s for _, s in here] == [s for _, s in engine]
            assert dict(here)[here[-1][0]] == engine[-1][1]
            boundary_ties += 1
    assert boundary_ties < 10


def test_search_results_are_the_same_with_and_without_the_node_map(make_index, covid_corpus, tmp_path):
    """The node map and the fusion here are shortcuts: every search result and trace stays the same."""
    docs, questions = covid_corpus
    with_map = make_index(collection="node_map_on", engine="edge")
    with_map.add_documents(docs[:2])
    without = make_index(collection="node_map_off", engine="edge", encoder=with_map.encoder,
                         store=EdgeStore("node_map_off", location=":memory:", node_map_capacity=0))
    without.add_documents(docs[:2])
    assert with_map.store._node_map.complete and not without.store._node_map.complete
    for question, _ in questions[:4]:
        vectors = with_map.encoder.encode_query(question)
        for method in ("knee", "sensitive_knee", "fixed", "branch"):
            for explain in (True, False):
                a = with_map.search(question, method=method, query_vectors=vectors, config=replace(
                    with_map.search_config, explain=explain))
                b = without.search(question, method=method, query_vectors=vectors, config=replace(
                    without.search_config, explain=explain))
                assert [(n.node, n.score, n.text) for n in a.nodes] == [(n.node, n.score, n.text) for n in b.nodes]
                strip = lambda t: [[(c.node_id, c.fused_score, c.dense_rank, c.sparse_rank, c.outcome) for c in s.candidates]
                                   for s in t.steps]
                assert strip(a.trace) == strip(b.trace)
                # Without the map a global list's kept hits are read after its round trip (their
                # sides bring no payload): one engine call more, nothing else.
                extra = any(s.kind == "global" for s in b.trace.steps)
                assert b.trace.requests == a.trace.requests + extra
                # The walk's light nodes were replaced by whole ones (text, metadata) at the final fetch.
                assert [n.node for n in a.nodes] == with_map.store.retrieve([n.node.id for n in a.nodes])


def test_point_ids_read_from_the_repr_or_fall_back(store):
    from drag_knee_retriever.store.edge.fast import point_ids

    qe = store._qe
    points = store.shard.query(qe.QueryRequest(query=store._query(QUERY)[0], limit=12, with_payload=False))
    assert len(points) == 12 and point_ids(points) == [str(p.id) for p in points]

    class IntIdPoint:  # an integer id (or any other repr): every id comes from .id
        def __init__(self, pid):
            self.id = pid

        def __repr__(self):
            return f"ScoredPoint(id={self.id}, version=0, score=1.0)"

    assert point_ids([IntIdPoint(7), points[0]]) == ["7", str(points[0].id)]
    assert point_ids([]) == []


def test_light_rankings_cut_ties_by_id_whatever_the_engine_returns(store, records):
    """A limit through equal fused scores keeps the smallest ids (engines order ties arbitrarily)."""
    from drag_knee_retriever.store import TIE_MARGIN, fetch_limit

    cand = tuple(r.node.id for r in records[:12])
    request = RankRequest(limit=4, candidate_ids=cand)
    # Every ranking over-fetches (flat search too: issue 16 item 9), bounded by the candidate set.
    assert fetch_limit(request, light=True) == 12 and fetch_limit(request, light=False) == 12
    assert fetch_limit(RankRequest(limit=5, level=0), light=True) == 5 + TIE_MARGIN
    # Weight 0 on both sides: every fused point (the union of each side's top 4) scores 0, one
    # big tie: the cut keeps the smallest ids of that union.
    tie = RankRequest(limit=4, candidate_ids=cand, weights=(0.0, 0.0))
    sides = store.rank([RankRequest(limit=4, candidate_ids=cand, only=side) for side in ("dense", "sparse")],
                       QUERY, rrf_k=2, explain=False)
    union = {h.node.id for hits in sides for h in hits}
    assert len(union) > 4
    for explain in (True, False):
        (hits,) = store.rank([tie], QUERY, rrf_k=2, explain=explain, light=True)
        assert [h.node.id for h in hits] == sorted(union)[:4] and {h.score for h in hits} == {0.0}


def test_the_quiet_walk_path_equals_the_general_one_and_falls_back(records):
    """Light rankings without explain read ids, scores and the node map only (store/edge/fast.py hits_from_map);
    a point the map lacks sends the ranking down the general path, with the same hits."""
    store = open_store(":memory:", records)
    try:
        expected = _walk_view(store.rank(WALK_REQUESTS, QUERY, rrf_k=2, explain=False))
        assert _walk_view(store.rank(WALK_REQUESTS, QUERY, rrf_k=2, explain=False, light=True)) == expected
        # Forget one node the roots ranking returns: the map no longer knows it, the engine does.
        (roots,) = store.rank([RankRequest(limit=10, level=0)], QUERY, rrf_k=2, explain=False, light=True)
        store._node_map.nodes.pop(roots[0].node.id)
        assert _walk_view(store.rank(WALK_REQUESTS, QUERY, rrf_k=2, explain=False, light=True)) == expected
    finally:
        store.close()


def test_candidate_ids_as_uuid_objects_select_the_same_points(store, records):
    """HasIdCondition gets UUID objects (cheaper for the binding); other ids fall back to the input."""
    from drag_knee_retriever.store.edge.fast import point_id_set

    cand = tuple(r.node.id for r in records[:7])
    assert {str(u) for u in point_id_set(cand)} == set(cand)
    assert point_id_set((3, 5)) == {3, 5} and point_id_set(("not-a-uuid",)) == {"not-a-uuid"}
    (hits,) = store.rank([RankRequest(limit=20, candidate_ids=cand)], QUERY, rrf_k=2, explain=False)
    assert {h.node.id for h in hits} <= set(cand) and len(hits) == len(cand)


def test_an_index_over_the_node_map_capacity_loads_none(tmp_path, records):
    open_store(tmp_path, records).close()
    store = EdgeStore("nodes", location=str(tmp_path), node_map_capacity=len(records) - 1)
    try:
        store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
        assert not store.wait_for_node_map(60) and not store._node_map.nodes
        _assert_light_equals_full(store)
    finally:
        store.close()


def _roots_requests(store, monkeypatch):
    """Every request the store sends to the roots' shard from now on (a spy on its batches)."""
    sent = []
    query_batches = store._query_batches

    def spy(batch, targets):
        sent.extend(request for request, on_roots in zip(batch, targets) if on_roots)
        return query_batches(batch, targets)

    monkeypatch.setattr(store, "_query_batches", spy)
    return sent


def _roots_map_view(store):
    """The roots map as (id, doc_hash, child_ids), against the roots the roots' shard holds."""
    mapped = sorted((k, n.doc_hash, n.child_ids) for k, n in store._roots_map.nodes.items())
    held = sorted((n.id, n.doc_hash, n.child_ids) for n in store.scroll_nodes(level=0, with_text=False))
    return mapped, held


def test_above_the_node_map_capacity_the_roots_map_answers_the_roots_ranking(tmp_path, records, monkeypatch):
    """An index with more nodes than the node map holds (1M nodes) keeps its roots' walk fields: the
    roots ranking asks the engine for ids and scores only, and every light ranking stays the full
    one, through replaces, deletes and a failed write (which drops the roots map too)."""
    open_store(tmp_path, records).close()
    # By default the roots map holds a tenth of the node map's capacity: 2 of these 4 roots, so none.
    default = EdgeStore("nodes", location=str(tmp_path), node_map_capacity=len(records) - 1)
    try:
        default.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
        assert not default.wait_for_node_map(60) and not default.wait_for_roots_map(60)
        _assert_light_equals_full(default)
    finally:
        default.close()
    with pytest.raises(ConfigError, match="roots_map_capacity"):
        EdgeStore("nodes", location=str(tmp_path), roots_map_capacity=-1)
    store = EdgeStore("nodes", location=str(tmp_path), node_map_capacity=len(records) - 1, roots_map_capacity=4)
    try:
        store.open_collection(dense_size=DIM, model_id=MODEL, sparse_model="Qdrant/bm25")
        assert not store.wait_for_node_map(60) and store.wait_for_roots_map(60)
        mapped, held = _roots_map_view(store)
        assert mapped == held and len(held) == 4
        _assert_light_equals_full(store)
        sent = _roots_requests(store, monkeypatch)
        for explain in (True, False):  # light: no payload read (a full ranking still reads it)
            store.rank([RankRequest(limit=10, level=0)], QUERY, rrf_k=2, explain=explain, light=True)
        assert sent and all(repr(r).endswith("with_payload=False)") for r in sent)
        store.rank([RankRequest(limit=10, level=0)], QUERY, rrf_k=2, explain=False)
        assert not repr(sent[-1]).endswith("with_payload=False)")
        # Every point of the roots' shard is a root: no `level` condition is sent there.
        assert all('key="level"' not in repr(r) for r in sent)
        _replace_doc1_and_delete_doc2(store, records)
        assert store._roots_map.complete
        mapped, held = _roots_map_view(store)
        assert mapped == held and {h[1] for h in held} == {"hash0", "hash1-v2", "hash3"}
        _assert_light_equals_full(store)
        _fail_a_write(store, records)
        assert not store._roots_map.complete  # it might claim a version the engine never got
        _assert_light_equals_full(store)
    finally:
        store.close()


def test_a_roots_ranking_keeps_a_users_filters_on_the_roots_shard(store, records):
    """Only the walk's own ``level = 0`` is left out on the roots' shard: a user's filter on a field
    stays, and one on another level finds no root, as it did (and ``level = 0`` all of them)."""
    roots = RankRequest(limit=10, level=0)
    (hits,) = store.rank([replace(roots, filters=parse_filters({"year": [2021, 2022]}))], QUERY, rrf_k=2,
                         explain=False, light=True)
    assert sorted(h.node.doc_id for h in hits) == ["doc1", "doc2"] and all(h.node.level == 0 for h in hits)
    for explain in (True, False):
        (none,) = store.rank([replace(roots, filters=parse_filters({"level": 1}))], QUERY, rrf_k=2, explain=explain,
                             light=True)
        (every,) = store.rank([replace(roots, filters=parse_filters({"level": 0}))], QUERY, rrf_k=2, explain=explain,
                              light=True)
        assert none == [] and len(every) == 4


def test_new_shards_walk_the_inverted_index_for_large_filtered_bm25_rankings(tmp_path, monkeypatch):
    """New shards record full_scan_threshold (both the nodes' and the roots'); a filtered BM25 ranking
    over more points than that walks the inverted index, with the same hits and scores as the engine's
    default (every admitted point scored), as a folder written before the setting has."""
    import drag_knee_retriever.store.edge.engine as edge_engine

    records = make_records(seed=5, docs=40, leaves=6)  # 240 leaves
    monkeypatch.setattr(edge_engine, "SPARSE_FULL_SCAN", 20)  # the 1,000 of real indexes, scaled down
    new = open_store(tmp_path / "new", records)
    monkeypatch.undo()
    qe = new._qe
    original = edge_engine.EdgeStore._shard_config

    def engine_default(self, dense_size):  # the configuration of folders written before the setting
        config = original(self, dense_size)
        return qe.EdgeConfig(vectors=config.vectors, sparse_vectors={edge_engine.SPARSE: qe.EdgeSparseVectorParams(
            modifier=getattr(qe.Modifier, "None"))}, optimizers=qe.EdgeOptimizersConfig(indexing_threshold=0))

    monkeypatch.setattr(edge_engine.EdgeStore, "_shard_config", engine_default)
    old = open_store(tmp_path / "old", records)
    monkeypatch.undo()
    try:
        configs = [json.loads(p.read_text()) for p in sorted((tmp_path / "new").rglob("edge_config.json"))]
        assert len(configs) == 2 and all(c["sparse_vectors"]["bm25"]["full_scan_threshold"] == 20 for c in configs)
        assert all("full_scan_threshold" not in json.loads(p.read_text())["sparse_vectors"]["bm25"]
                   for p in (tmp_path / "old").rglob("edge_config.json"))
        docs = [f"doc{d}" for d in range(0, 40, 3)]  # 14 documents: 84 leaves admitted, above 20
        requests = [RankRequest(limit=30, leaves_only=True, filters=parse_filters({"doc_id": docs}), only="sparse"),
                    RankRequest(limit=30, leaves_only=True, filters=parse_filters({"doc_id": docs}), with_scores=True),
                    RankRequest(limit=10, candidate_ids=tuple(r.node.id for r in records[:12]), only="sparse")]
        view = lambda hits: [[(h.node.id, h.score, h.dense_score, h.sparse_score) for h in ranked] for ranked in hits]
        for light in (False, True):
            assert view(new.rank(requests, QUERY, rrf_k=2, explain=False, light=light)) == \
                view(old.rank(requests, QUERY, rrf_k=2, explain=False, light=light))
    finally:
        new.close()
        old.close()
