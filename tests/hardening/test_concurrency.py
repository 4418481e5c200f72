"""Concurrency: one index shared by searching threads while a writer ingests, replaces and deletes.

- Stress: 8 threads search (every method, with and without filters, and flat search) while one
  thread cycles a document through add -> replace -> delete. No call may raise, and every hit must
  be a node of a version some ingest committed, with that version's text, never together with its
  ancestor.
- Interleavings: one replace (or delete) is paused before each of its write steps, and one search
  lets it finish before each of its read round trips: every switch point of one writer and one
  reader, deterministically. The result must match one committed version per document.
- 50 concurrent ``asearch`` under ``asyncio.gather`` equal 50 sequential ``search``.
- The rule for several processes (the subprocess tests are in test_crash_safety.py): an embedded
  folder is held by one open index; a second one, in this or another process, gets StoreLockedError.
"""

from __future__ import annotations

import asyncio
import random
import contextlib
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import pytest

from drag_knee_retriever import Document, DragKneeIndex, StoreLockedError, StoreConfig
from drag_knee_retriever.build._builder import build_document_trees
from hardening_support import METHODS, WritePlan, install_write_hook, make_store

STABLE = [
    Document(id="tides", pages=[
        "Tide tables predict the height of the sea at a harbour for every hour of the year.",
        "Spring tides follow the new and the full moon; neap tides the quarter moons.",
        "Harbour pilots plan the passage of deep ships around high water.",
    ], metadata={"tenant": "harbour"}),
    Document(id="bees", text=(
        "Honey bees dance to tell their sisters where flowers are.\n\n"
        "The angle of the waggle run points to the food, relative to the sun.\n\n"
        "A longer waggle run means the flowers are farther from the hive."), metadata={"tenant": "farm"}),
]
V1 = Document(id="report", pages=[
    "Volcanic ash grounds aircraft because it melts inside jet engines.",
    "Seismometers around the crater record the swarm of small earthquakes before an eruption.",
    "Satellite radar measures how the flanks of the volcano swell as magma rises.",
    "Evacuation zones are drawn from the paths that lava and mudflows took in the past.",
    "After the eruption, ash falls thickest downwind of the vent.",
], metadata={"tenant": "geo"})
V2 = Document(id="report", pages=[
    "Glaciers flow downhill under their own weight, faster at the centre than at the edges.",
    "Crevasses open where the ice stretches over a bump in the bedrock; volcanic ash darkens the ice.",
    "Meltwater at the bed lubricates the ice and lets the glacier slide.",
    "Moraines are ridges of rock debris left where the ice front stood still.",
    "Ice cores keep bubbles of ancient air, and layers of ash from old eruptions.",
    "Calving glaciers end in the sea and drop icebergs from their front.",
    "A glacier retreats when it melts faster than snow feeds it.",
], metadata={"tenant": "geo"})
MEMO = Document(id="memo", text="A one-paragraph memo: the lighthouse keeper rotates the lamp every night.",
                metadata={"tenant": "harbour"})
QUERIES = ["volcanic ash and eruptions", "glacier ice meltwater", "harbour tides moon", "bees waggle dance",
           "lighthouse lamp", "ash layers in ice cores"]


@dataclass
class Version:
    doc_hash: str
    nodes: Dict[str, object]  # id -> TreeNode as built
    span_text: Dict[str, str]

    def ancestors(self, node_id: str) -> List[str]:
        out, parent = [], self.nodes[node_id].parent_id
        while parent is not None:
            out.append(parent)
            parent = self.nodes[parent].parent_id
        return out


def _versions(index) -> Dict[Tuple[str, str], Version]:
    """Every committed version any writer in this module makes: (doc_id, doc_hash) -> Version."""
    out = {}
    for doc in STABLE + [V1, V2, MEMO]:
        (tree,) = build_document_trees([doc], index.build_config, index.summarizer)
        leaves = tree.leaves
        texts = {n.id: n.text if n.is_leaf else "\n\n".join(
            leaf.text for leaf in leaves[n.span.first_leaf:n.span.last_leaf + 1]) for n in tree.nodes}
        out[(doc.id, tree.doc_hash)] = Version(tree.doc_hash, {n.id: n for n in tree.nodes}, texts)
    return out


def _problems(versions, hits, *, strict: bool) -> List[str]:
    """Why ``hits`` are not consistent with committed versions (strict: text and one version per doc)."""
    problems = []
    seen: Dict[str, str] = {}
    ids = {h.node.id for h in hits}
    for hit in hits:
        node = hit.node
        version = versions.get((node.doc_id, node.doc_hash))
        if version is None or node.id not in version.nodes:
            problems.append(f"{node.id} of {node.doc_id}: not a node of any committed version")
            continue
        built = version.nodes[node.id]
        if (built.span, built.level, built.is_leaf, built.child_ids) != (node.span, node.level, node.is_leaf, node.child_ids):
            problems.append(f"{node.id}: stored node differs from its version")
        if set(version.ancestors(node.id)) & ids:
            problems.append(f"{node.id} returned with its ancestor")
        if node.is_leaf and hit.text != version.span_text[node.id]:
            problems.append(f"leaf {node.id}: text of another version")
        if strict:
            if hit.text != version.span_text[node.id]:
                problems.append(f"{node.doc_id} {node.span}: text is not its version's ({len(hit.text)} chars)")
            if seen.setdefault(node.doc_id, node.doc_hash) != node.doc_hash:
                problems.append(f"{node.doc_id}: two versions mixed in one result")
    return problems


def _index(engine, caching_encoder):
    return DragKneeIndex(make_store(engine, "concurrency"), embedding=caching_encoder, store=StoreConfig(collection="concurrency"))


SEARCHERS = 8



@pytest.mark.parametrize("searches_per_thread, rounds", [
    pytest.param(20, 6, id="default"), pytest.param(150, 40, id="long", marks=pytest.mark.slow)])
def test_eight_searchers_and_a_writer_see_only_committed_versions(engine, caching_encoder, searches_per_thread, rounds):
    index = _index(engine, caching_encoder)
    try:
        index.add_documents(STABLE)
        versions = _versions(index)
        # Warm the memo: the writer then costs store writes only, so it interleaves with searches.
        index.add_documents([V1, MEMO]); index.add_documents([V2]); index.delete_document("report")
        index.delete_document("memo")
        errors: List[BaseException] = []
        stats = {"searches": 0, "hits": 0, "writes": 0, "text_or_version_races": 0}
        lock = threading.Lock()
        writing = threading.Event()
        writing.set()

        def writer():
            try:
                for _ in range(rounds):
                    index.add_documents([V1, MEMO])
                    index.add_documents([V2])
                    index.delete_document("memo")
                    index.delete_document("report")
                    with lock:
                        stats["writes"] += 4
            except BaseException as exc:  # reported below
                errors.append(exc)
            finally:
                writing.clear()

        def searcher(seed):
            rng = random.Random(seed)
            try:
                for i in range(searches_per_thread):
                    query = rng.choice(QUERIES)
                    method = rng.choice(METHODS)
                    filters = rng.choice([None, None, {"tenant": "geo"}, {"doc_id": ["report", "memo"]}])
                    if i % 5 == 4:
                        hits = index.flat_search(query, k=5, filters=filters)
                    else:
                        hits = index.search(query, method=method, filters=filters).nodes
                    hard = _problems(versions, hits, strict=False)
                    assert hard == [], (method, query, hard)
                    with lock:
                        stats["searches"] += 1
                        stats["hits"] += len(hits)
                        stats["text_or_version_races"] += bool(_problems(versions, hits, strict=True))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=writer)] + [
            threading.Thread(target=searcher, args=(seed,)) for seed in range(SEARCHERS)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not any(t.is_alive() for t in threads), "a thread hung"
        assert errors == [], "".join(traceback.format_exception(errors[0]))[-3000:]
        assert stats["searches"] == SEARCHERS * searches_per_thread and stats["writes"] == 4 * rounds
        print(f"\n[hardening] {engine}: {stats} in {time.perf_counter() - started:.1f}s")
    finally:
        index.close()


# ---------------------------------------------------------------------------------------------
# every switch point between one writer and one reader
# ---------------------------------------------------------------------------------------------


class _Reads:
    """Wraps store.rank / store.retrieve: before read number ``switch_at``, let the writer finish."""

    def __init__(self, store, switch_at, release):
        self.count, self.switch_at, self.release = 0, switch_at, release
        for name in ("rank", "retrieve"):
            inner = getattr(store, name)
            setattr(store, name, self._wrap(inner))

    def _wrap(self, inner):
        def call(*args, **kwargs):
            if self.count == self.switch_at:
                self.release()
            self.count += 1
            return inner(*args, **kwargs)
        return call


def _interleave(engine, caching_encoder, operation, query, method, versions_of):
    """Run ``operation`` paused at each write step, letting one search finish it at each read step."""
    problems, combos = [], 0
    index = _index(engine, caching_encoder)
    try:
        index.add_documents(STABLE + [V1])
        counter = install_write_hook(index.store, WritePlan())
        operation(index)
        write_steps = counter.steps
    finally:
        index.close()
    for write_step in range(write_steps):
        for read_step in range(8):
            index = _index(engine, caching_encoder)
            try:
                index.add_documents(STABLE + [V1])
                versions = versions_of(index)
                paused, resume = threading.Event(), threading.Event()

                def hook(step, when, what, write_step=write_step):
                    if step == write_step and when == "before":
                        paused.set()
                        resume.wait(30)

                plan = install_write_hook(index.store, WritePlan(hook=hook))
                # The hook pauses the writer just before an engine call. Local mode serialises whole
                # engine calls behind a lock, so a pause can only fall between calls: drop that lock
                # here (the writer is paused before its call, so nothing runs concurrently with a read).
                if hasattr(index.store, "_engine_lock"):
                    index.store._engine_lock = contextlib.nullcontext()
                writer = threading.Thread(target=operation, args=(index,))
                writer.start()
                assert paused.wait(30), "the writer did not reach its write step"

                def release():
                    plan.hook = None
                    resume.set()
                    writer.join(30)

                reads = _Reads(index.store, read_step, release)
                result = index.search(query, method=method)
                if reads.count <= read_step:  # the search made fewer reads: this switch point is not real
                    release()
                    break
                combos += 1
                problems += [f"write {write_step} / read {read_step}: {p}"
                             for p in _problems(versions, result.nodes, strict=True)]
            finally:
                resume.set()
                index.close()
    return problems, combos


OPERATIONS = {
    "replace": lambda index: index.add_documents([V2]),
    "delete": lambda index: index.delete_document("report"),
}



@pytest.mark.parametrize("methods", [
    pytest.param(("knee",), id="knee"),
    pytest.param(("fixed", "sensitive_knee", "branch"), id="other-methods", marks=pytest.mark.slow)])
@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_every_switch_point_of_a_writer_and_a_search_gives_a_committed_state(engine, caching_encoder, operation, methods):
    problems, combos = [], 0
    for method in methods:
        found, n = _interleave(engine, caching_encoder, OPERATIONS[operation], "volcanic ash eruption", method, _versions)
        problems += [f"{method}: {p}" for p in found]
        combos += n
    print(f"\n[hardening] {engine}/{operation}/{'+'.join(methods)}: {combos} writer/reader switch points")
    assert combos > 0
    assert problems == [], problems[:5]


# ---------------------------------------------------------------------------------------------
# asyncio
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def async_index(make_index):
    """A small index on the real (not memoised) encoder: every asearch encodes its own query."""
    index = make_index(collection="hardening_async")
    index.add_documents(STABLE + [V2, MEMO])
    return index


async def test_fifty_concurrent_asearch_equal_sequential_search(async_index):
    calls = [(QUERIES[i % len(QUERIES)] + ("" if i < 25 else " please"), METHODS[i % len(METHODS)],
              None if i % 3 else {"tenant": "geo"}) for i in range(50)]
    sequential = [async_index.search(q, method=m, filters=f) for q, m, f in calls]
    concurrent = await asyncio.gather(*(async_index.asearch(q, method=m, filters=f) for q, m, f in calls))
    assert len(concurrent) == 50

    def shape(result):
        return [(h.node.id, round(h.score, 9), h.text) for h in result.nodes]

    assert [shape(r) for r in concurrent] == [shape(r) for r in sequential]
    assert sum(1 for r in sequential if r.nodes) >= 45


# ---------------------------------------------------------------------------------------------
# one folder, one open index
# ---------------------------------------------------------------------------------------------


def test_a_second_index_on_an_open_folder_is_refused_until_the_first_closes(engine, caching_encoder, tmp_path):
    folder = str(tmp_path / "shared")
    first = DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine))
    try:
        first.add_documents([MEMO])
        with pytest.raises(StoreLockedError) as info:
            DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine))
        assert folder in str(info.value) and "url=" in str(info.value)  # says where, and what to use instead
    finally:
        first.close()
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine=engine)) as second:
        assert [d.doc_id for d in second.list_documents()] == ["memo"]
