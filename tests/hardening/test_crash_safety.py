"""Crash-safe ingestion: a failure at any write step never exposes a partial tree, and a re-run heals.

The core writes a changed document by deleting its old tree, then its nodes leaves-first with the
root last (the root is the commit point: search starts from roots), then deletes leftovers of an
earlier interrupted ingest. Here every engine write (each upsert batch of 2 nodes, each delete) is
made to fail in turn, before it is applied and after it was applied (an acknowledgement lost), and
a subprocess is killed with SIGKILL in the middle of ingestion into a folder. After each fault:

- every stored root's tree is whole and of one version, and no search method returns, or even
  ranks in its trace, a node outside such a tree;
- the failed call raised (nothing is swallowed), and running it again completes the documents;
- the stored node set of every document equals the builder's (no orphan, no stale version), and a
  bystander document is untouched.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from drag_knee_retriever import Document, DragKneeIndex, StoreLockedError, StoreConfig
from hardening_support import (
    InjectedFault,
    WritePlan,
    fail_at,
    flat_problems,
    install_write_hook,
    raises_injected,
    make_store,
    search_problems,
    snapshot,
    stored_ids,
    expected_ids,
)

HERE = Path(__file__).resolve().parent

BYSTANDER = Document(id="bystander", pages=[
    "Tide tables predict the height of the sea at a harbour for every hour of the year.",
    "Spring tides follow the new and the full moon; neap tides the quarter moons.",
    "Harbour pilots plan the passage of deep ships around high water.",
], metadata={"tenant": "harbour"})
REPORT_V1 = Document(id="report", pages=[
    "Volcanic ash grounds aircraft because it melts inside jet engines.",
    "Seismometers around the crater record the swarm of small earthquakes before an eruption.",
    "Satellite radar measures how the flanks of the volcano swell as magma rises.",
    "Evacuation zones are drawn from the paths that lava and mudflows took in the past.",
    "After the eruption, ash falls thickest downwind of the vent.",
], metadata={"tenant": "geo", "version": 1})
REPORT_V2 = Document(id="report", pages=[
    "Glaciers flow downhill under their own weight, faster at the centre than at the edges.",
    "Crevasses open where the ice stretches over a bump in the bedrock.",
    "Meltwater at the bed lubricates the ice and lets the glacier slide.",
    "Moraines are ridges of rock debris left where the ice front stood still.",
    "Ice cores keep bubbles of ancient air, a record of past climate.",
    "Calving glaciers end in the sea and drop icebergs from their front.",
    "A glacier retreats when it melts faster than snow feeds it.",
], metadata={"tenant": "geo", "version": 2})
# 12 pages: 4 parents of 3 leaves under the root; REPORT_V2's 7 leaves reuse only some of its ids.
REPORT_LONG = Document(id="report", pages=[f"Long draft page {i}: notes on lighthouse lamp number {i}." for i in range(12)],
                       metadata={"tenant": "geo", "version": 0})
MEMO = Document(id="memo", text="A one-paragraph memo: the lighthouse keeper rotates the lamp every night.",
                metadata={"tenant": "harbour"})
QUERIES = ["harbour tides and the moon", "volcano eruption ash", "glacier ice meltwater", "lighthouse lamp memo"]
# The fault sweep runs every method on fewer queries (each search is ~15 ms; the sweep makes 60 faults).
SWEEP_QUERIES = ["volcano ash or glacier ice", "lighthouse lamp memo at the harbour"]


def _index(engine, caching_encoder, location=":memory:", batch=2):
    store = make_store(engine, "crash", location=location, batch=batch)
    return DragKneeIndex(store, embedding=caching_encoder, store=StoreConfig(collection="crash"))


SCENARIOS = {
    # name: (documents present before, the operation that fails, what it writes)
    "fresh": ([BYSTANDER], lambda index: index.add_documents([REPORT_V1, MEMO]), [BYSTANDER, REPORT_V1, MEMO]),
    "replace": ([BYSTANDER, REPORT_V1], lambda index: index.add_documents([REPORT_V2]), [BYSTANDER, REPORT_V2]),
    "delete": ([BYSTANDER, REPORT_V1], lambda index: index.delete_document("report"), [BYSTANDER]),
}


def _count_steps(engine, caching_encoder, before, operation):
    index = _index(engine, caching_encoder)
    try:
        index.add_documents(before)
        plan = install_write_hook(index.store, WritePlan())
        operation(index)
        return plan.steps, plan.log
    finally:
        index.close()


def _assert_healed(index, documents, queries=QUERIES):
    expected = expected_ids(index, documents)
    stored = stored_ids(index)
    assert set(stored) == set(expected), f"documents stored {sorted(stored)} != {sorted(expected)}"
    for doc_id, (doc_hash, ids) in expected.items():
        hashes, have = stored[doc_id]
        assert hashes == {doc_hash}, f"{doc_id}: stale versions {hashes - {doc_hash}} remain"
        assert have == ids, f"{doc_id}: orphans {len(have - ids)}, missing {len(ids - have)}"
    assert sorted(d.doc_id for d in index.list_documents()) == sorted(expected)
    assert search_problems(index, queries) == []


FAULTS = {"injected": 0, "survived": 0}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_fault_at_every_write_step_exposes_no_partial_tree_and_a_rerun_heals(engine, caching_encoder, scenario):
    before, operation, after = SCENARIOS[scenario]
    steps, log = _count_steps(engine, caching_encoder, before, operation)
    assert steps >= 1
    for step in range(steps):
        for phase in ("before", "after"):
            where = f"{scenario}: fault {phase} step {step}/{steps} ({log[step]})"
            index = _index(engine, caching_encoder)
            try:
                index.add_documents(before)
                plan = install_write_hook(index.store, WritePlan(hook=fail_at(step, phase)))
                with raises_injected():
                    operation(index)
                FAULTS["injected"] += 1
                assert search_problems(index, SWEEP_QUERIES) == [], where
                plan.hook = None
                operation(index)  # the re-run
                _assert_healed(index, after, SWEEP_QUERIES[:1])
                FAULTS["survived"] += 1
            finally:
                index.close()
    print(f"\n[hardening] {engine}/{scenario}: {steps} write steps x 2 phases; faults so far {FAULTS}")


def test_an_interrupted_retry_of_an_interrupted_ingest_leaves_no_orphans(engine, caching_encoder):
    """The first ingest dies in the middle of its nodes; the next version dies at any write step; retry."""
    second = lambda index: index.add_documents([REPORT_V2])  # noqa: E731
    steps, log = _count_steps(engine, caching_encoder, [BYSTANDER], second)
    problems = []
    for step in range(steps):
        for phase in ("before", "after"):
            index = _index(engine, caching_encoder)
            try:
                index.add_documents([BYSTANDER])
                plan = install_write_hook(index.store, WritePlan(hook=fail_at(99, "after")))
                # The first ingest dies once some of its 17 nodes have landed (not its root): the
                # first write step after which the stored nodes include some that v2 does not have.
                for first_fault in range(2, 20):  # (the roots' copy adds a delete step per retry)
                    plan.steps, plan.hook = 0, fail_at(first_fault, "after")
                    with raises_injected():
                        index.add_documents([REPORT_LONG])
                    leftovers = stored_ids(index).get("report", (set(), set()))[1] - expected_ids(index, [REPORT_V2])["report"][1]
                    if leftovers:
                        break
                assert leftovers, "the first ingest must leave nodes the second version does not have"
                plan.steps, plan.hook = 0, fail_at(step, phase)
                with raises_injected():
                    second(index)
                plan.hook = None
                second(index)  # the user retries
                try:
                    _assert_healed(index, [BYSTANDER, REPORT_V2], SWEEP_QUERIES[:1])
                except AssertionError as exc:
                    problems.append(f"second ingest failed {phase} step {step} ({log[step]}): {exc}".splitlines()[0])
                FAULTS["injected"] += 2
            finally:
                index.close()
    assert problems == [], problems


def test_flat_search_does_not_return_leaves_of_an_interrupted_ingest(engine, caching_encoder):
    index = _index(engine, caching_encoder)
    try:
        index.add_documents([BYSTANDER])
        install_write_hook(index.store, WritePlan(hook=fail_at(2, "after")))
        with raises_injected():
            index.add_documents([REPORT_V1])
        assert search_problems(index, QUERIES) == []  # the tree walk never sees it...
        assert flat_problems(index, QUERIES) == []  # ...nor should the flat baseline
    finally:
        index.close()


@pytest.mark.parametrize("operation", ["delete", "replace"])
def test_a_local_folder_delete_cut_short_between_two_points_exposes_no_partial_tree(caching_encoder, tmp_path,
                                                                                  monkeypatch, operation):
    """qdrant-client local mode commits a delete one point at a time (sqlite): fail after k points."""
    from qdrant_client.local.persistence import CollectionPersistence

    real_delete = CollectionPersistence.delete
    problems = []
    for k in range(1, 8):  # REPORT_V1 has 8 nodes
        folder = tmp_path / f"k{k}"
        index = DragKneeIndex(str(folder), embedding=caching_encoder, store=StoreConfig(collection="crash", engine="local"))
        try:
            index.add_documents([BYSTANDER, REPORT_V1])
            done = [0]

            def cut_short(self, point_id, done=done, k=k):
                if done[0] == k:
                    raise InjectedFault(f"process dies after {k} point deletes")
                done[0] += 1
                return real_delete(self, point_id)

            monkeypatch.setattr(CollectionPersistence, "delete", cut_short)
            with raises_injected():
                if operation == "delete":
                    index.delete_document("report")
                else:
                    index.add_documents([REPORT_V2])
            monkeypatch.setattr(CollectionPersistence, "delete", real_delete)
            problems += [f"k={k}: {p}" for p in search_problems(index, SWEEP_QUERIES)]
        finally:
            monkeypatch.setattr(CollectionPersistence, "delete", real_delete)
            index.close()
    assert problems == [], problems[:3]


# ---------------------------------------------------------------------------------------------
# killed processes (folder indexes; SIGKILL: no exception handler, no flush, no close)
# ---------------------------------------------------------------------------------------------

CHILD = r"""
import json, os, signal, sys
sys.path[:0] = [sys.argv[2], os.path.dirname(sys.argv[2])]  # tests/hardening and tests/ (support)
from hardening_support import WritePlan, install_write_hook
from support import CachingEncoder, make_store
from drag_knee_retriever import DragKneeIndex, Document, StoreConfig
from drag_knee_retriever.embeddings import Encoder

cfg = json.loads(sys.argv[1])
docs = {name: Document(**spec) for name, spec in cfg["docs"].items()}
store = make_store(cfg["engine"], "crash", location=cfg["folder"], batch=2)
index = DragKneeIndex(store, embedding=CachingEncoder(Encoder()), store=StoreConfig(collection="crash"))
if cfg["mode"] == "step":
    def pause_then_kill(step, when, what):
        # Hold the folder at this write step until the parent has tried to open it, then die.
        if step == cfg["step"] and when == cfg["phase"]:
            print("paused", flush=True)
            sys.stdin.readline()
            os.kill(os.getpid(), signal.SIGKILL)

    install_write_hook(store, WritePlan(hook=pause_then_kill))
    index.add_documents([docs["v2"]])
    print("survived", flush=True)  # never reached: the hook kills the process
else:  # "loop": ingest, replace and delete until killed from outside
    rounds = 0
    while True:
        index.add_documents([docs["v1"], docs["memo"]])
        index.add_documents([docs["v2"]])
        index.delete_document("memo")
        index.delete_document("report")
        rounds += 1
        if rounds == 1:
            print("paused", flush=True)
"""


def _spec(doc):
    return {"id": doc.id, "text": doc.text, "pages": list(doc.pages) if doc.pages else None,
            "metadata": dict(doc.metadata)}


def _start_child(engine, folder, mode, step=0, phase="after"):
    cfg = {"engine": engine, "folder": str(folder), "mode": mode, "step": step, "phase": phase,
           "docs": {"v1": _spec(REPORT_V1), "v2": _spec(REPORT_V2), "memo": _spec(MEMO)}}
    return subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(cfg), str(HERE)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_paused(child):
    line = child.stdout.readline()  # blocks until the child prints (or dies)
    if line.strip() != "paused":
        child.kill()
        raise AssertionError(f"child did not reach its kill point: {line!r} {child.stderr.read()[-2000:]}")


def _assert_locked(engine, folder, caching_encoder):
    """The rule for two processes: while one holds an embedded folder, another gets StoreLockedError."""
    with pytest.raises(StoreLockedError, match="another process"):
        DragKneeIndex(str(folder), embedding=caching_encoder, store=StoreConfig(collection="crash", engine=engine))


def _seed(engine, folder, caching_encoder, documents):
    with DragKneeIndex(str(folder), embedding=caching_encoder, store=StoreConfig(collection="crash", engine=engine)) as index:
        index.add_documents(documents)


def _reopen_check_and_heal(engine, folder, caching_encoder):
    with DragKneeIndex(str(folder), embedding=caching_encoder, store=StoreConfig(collection="crash", engine=engine)) as index:
        snap = snapshot(index)
        assert snap.problems == []
        assert search_problems(index, QUERIES, snap) == []
        assert "bystander" in snap.complete  # untouched by the killed writer
        index.add_documents([REPORT_V2, MEMO])
        _assert_healed(index, [BYSTANDER, REPORT_V2, MEMO])


KILL_POINTS = [pytest.param(3, "after", id="mid-nodes")] + [
    pytest.param(step, phase, id=f"{phase}-{step}", marks=pytest.mark.slow)
    for step in range(7) for phase in ("before", "after") if (step, phase) != (3, "after")
]


@pytest.mark.parametrize("step, phase", KILL_POINTS)
def test_a_process_killed_at_a_write_step_leaves_a_consistent_folder(engine, caching_encoder, tmp_path, step, phase):
    """Replace a document in a folder index; SIGKILL at a write step. Also: the folder lock holds."""
    folder = tmp_path / "index"
    _seed(engine, folder, caching_encoder, [BYSTANDER, REPORT_V1])
    child = _start_child(engine, folder, "step", step, phase)
    try:
        _wait_paused(child)
        _assert_locked(engine, folder, caching_encoder)
        out, err = child.communicate("go\n", timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL, f"child was not killed at the write step: {out!r} {err[-2000:]!r}"
    assert "survived" not in out
    # A killed holder leaves no stale lock: the folder opens at once.
    _reopen_check_and_heal(engine, folder, caching_encoder)



@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, None])
def test_a_process_killed_at_a_random_moment_leaves_a_consistent_folder(engine, caching_encoder, tmp_path, delay):
    folder = tmp_path / "index"
    _seed(engine, folder, caching_encoder, [BYSTANDER])
    child = _start_child(engine, folder, "loop")
    try:
        _wait_paused(child)  # one full round done; it keeps ingesting, replacing and deleting
        _assert_locked(engine, folder, caching_encoder)
        time.sleep(random.uniform(0.0, 1.0) if delay is None else delay)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    _reopen_check_and_heal(engine, folder, caching_encoder)
