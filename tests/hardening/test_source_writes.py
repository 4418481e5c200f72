"""Issue 38 items 1 and 2: what a vector store's add or delete acknowledged is stored, whatever runs beside it.

Every add of a framework document reads its source's stored members and rewrites the source's
tree. Without a lock around the two steps, six threads adding one chunk each to one source kept
1-2 of the 6 (each call returned its id); and the rewrite deleted the old tree before writing the
new one, so a SIGKILL at the first upsert of a one-chunk add to a 50-chunk source left 0 of 50.
Attacked here as a user meets it: real threads, real asyncio tasks, real LangChain and LlamaIndex
stores over the real offline model, and a real child process killed with SIGKILL at a write step
of a folder index (Edge and qdrant-client local mode).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from drag_knee_retriever import DragKneeIndex, StoreConfig
from drag_knee_retriever.errors import StoreError
from hardening_support import InjectedFault, WritePlan, install_write_hook

langchain_core = pytest.importorskip("langchain_core")
from langchain_core.documents import Document as LCDocument  # noqa: E402

from drag_knee_retriever.integrations.langchain import DragKneeVectorStore  # noqa: E402

HERE = Path(__file__).resolve().parent

TOPICS = ["volcanoes erupt basalt lava", "sourdough starters ferment flour", "glaciers carve valleys of ice",
          "honeybees dance to share nectar", "tides follow the moon's pull", "copper wires carry current"]


def _chunk(i: int, source: str = "notes.txt") -> LCDocument:
    return LCDocument(page_content=f"Chunk {i}: {TOPICS[i % len(TOPICS)]}, observation number {i}.",
                      metadata={"source": source})


def _together(calls):
    """Run the calls in threads released at once; return their results (re-raising any error)."""
    barrier = threading.Barrier(len(calls))
    results, errors = [None] * len(calls), []

    def run(k, call):
        barrier.wait()
        try:
            results[k] = call()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k, c)) for k, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    if errors:
        raise errors[0]
    return results


@pytest.fixture
def lc_store(caching_encoder):
    index = DragKneeIndex(embedding=caching_encoder)
    store = DragKneeVectorStore(index)
    seeded = store.add_documents([_chunk(i) for i in range(3)])
    yield store, seeded
    index.close()


def test_six_threads_adding_a_chunk_each_to_one_source_keep_all_six(lc_store):
    store, seeded = lc_store
    ids = _together([lambda i=i: store.add_documents([_chunk(10 + i)])[0] for i in range(6)])
    found = {d.id for d in store.get_by_ids(seeded + ids)}
    assert found == set(seeded + ids), f"lost {sorted(set(seeded + ids) - found)}"


def test_two_threads_deleting_two_chunks_of_one_source_both_go_and_an_add_racing_a_delete_lands(lc_store):
    store, seeded = lc_store
    extra = store.add_documents([_chunk(20), _chunk(21)])
    assert _together([lambda: store.delete([seeded[0]]), lambda: store.delete([seeded[1]])]) == [True, True]
    assert {d.id for d in store.get_by_ids(seeded + extra)} == {seeded[2], *extra}
    added, _ = _together([lambda: store.add_documents([_chunk(30)])[0], lambda: store.delete([extra[0]])])
    assert {d.id for d in store.get_by_ids([seeded[2], *extra, added])} == {seeded[2], extra[1], added}


def test_six_asyncio_tasks_adding_nodes_of_one_llamaindex_document_keep_all_six(caching_encoder):
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore as LIStore

    index = DragKneeIndex(embedding=caching_encoder)
    store = LIStore(index)

    def node(i):
        return TextNode(id_=f"node-{i}", text=f"Node {i}: {TOPICS[i % len(TOPICS)]}.",
                        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="manual")})

    async def main():
        return await asyncio.gather(*(store.async_add([node(i)]) for i in range(6)))

    try:
        ids = [r[0] for r in asyncio.run(main())]
        assert sorted(n.id_ for n in store.get_nodes(ids)) == sorted(ids)
    finally:
        index.close()


def test_a_failed_engine_write_during_a_one_chunk_add_leaves_the_source_whole(engine, caching_encoder, tmp_path):
    """In process: the engine refuses the first upsert after the old tree was deleted. The error
    reaches the caller, and the source is whole at once (the new version, finished from the journal)."""
    from support import make_store

    store = make_store(engine, "faults", location=str(tmp_path / "index"), batch=2)
    index = DragKneeIndex(store, embedding=caching_encoder)
    try:
        lc = DragKneeVectorStore(index)
        seeded = lc.add_documents([_chunk(i) for i in range(12)])
        armed = {"on": True}

        def fail_first_upsert(step, when, what):
            if armed["on"] and when == "before" and what.startswith("upsert"):
                armed["on"] = False
                raise InjectedFault(f"injected fault at {what}")

        install_write_hook(store, WritePlan(hook=fail_first_upsert))
        with pytest.raises((InjectedFault, StoreError)):
            lc.add_documents([_chunk(99)])
        assert {d.id for d in lc.get_by_ids(seeded)} == set(seeded)
    finally:
        index.close()


# ---------------------------------------------------------------------------------------------
# a killed process (folder indexes)
# ---------------------------------------------------------------------------------------------

CHILD = r"""
import json, os, signal, sys
sys.path[:0] = [sys.argv[2], os.path.dirname(sys.argv[2])]  # tests/hardening and tests/ (support)
from hardening_support import WritePlan, install_write_hook
from support import CachingEncoder, make_store
from drag_knee_retriever import DragKneeIndex, StoreConfig
from drag_knee_retriever.embeddings import Encoder
from drag_knee_retriever.integrations.langchain import DragKneeVectorStore
from langchain_core.documents import Document

cfg = json.loads(sys.argv[1])
store = make_store(cfg["engine"], "crash", location=cfg["folder"], batch=2)
index = DragKneeIndex(store, embedding=CachingEncoder(Encoder()), store=StoreConfig(collection="crash"))
upserts = {"n": 0}

def kill_at_upsert(step, when, what):
    if when == "before" and what.startswith("upsert"):
        if upserts["n"] == cfg["upsert"]:
            os.kill(os.getpid(), signal.SIGKILL)
        upserts["n"] += 1

install_write_hook(store, WritePlan(hook=kill_at_upsert))
DragKneeVectorStore(index).add_documents([Document(page_content=cfg["text"], metadata={"source": "notes.txt"})])
print("survived", flush=True)
"""


@pytest.mark.parametrize("upsert", [0, pytest.param(5, marks=pytest.mark.slow), pytest.param(-1, marks=pytest.mark.slow)])
def test_a_process_killed_during_a_one_chunk_add_keeps_every_earlier_chunk(engine, caching_encoder, tmp_path, upsert):
    """50 chunks of one source in a folder index; a child adds a 51st and is SIGKILLed at an upsert
    (the first, the sixth; -1: never, the add completes). Reopened: all 50 are there, and the 51st
    too (the journal finished its write): the old tree or the new one, never less."""
    folder = tmp_path / "index"
    with DragKneeIndex(str(folder), embedding=caching_encoder, store=StoreConfig(collection="crash", engine=engine)) as index:
        seeded = DragKneeVectorStore(index).add_documents([_chunk(i) for i in range(50)])
    new = _chunk(77)
    cfg = {"engine": engine, "folder": str(folder), "upsert": upsert, "text": new.page_content}
    child = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg), str(HERE)], capture_output=True, text=True,
                           timeout=300)
    if upsert >= 0:
        assert child.returncode == -signal.SIGKILL, f"not killed at the upsert: {child.stdout!r} {child.stderr[-2000:]}"
    else:
        assert "survived" in child.stdout, child.stderr[-2000:]
    with DragKneeIndex(str(folder), embedding=caching_encoder, store=StoreConfig(collection="crash", engine=engine)) as index:
        store = DragKneeVectorStore(index)
        kept = {d.id for d in store.get_by_ids(seeded)}
        assert kept == set(seeded), f"{len(kept)} of 50 chunks left after the kill"
        texts = {d.page_content for d in store.similarity_search("observation", k=60)}
        assert new.page_content in texts  # the journal finished the killed add on open
        assert len(texts) == 51


def test_one_chunk_added_to_a_long_source_encodes_the_chunk_not_the_source(caching_encoder):
    """The new tree reuses the stored dense vectors of unchanged texts: adding one page to a
    40-page source encodes that page and the summaries above it, and every unchanged page keeps
    its vector."""
    pages = [LCDocument(page_content=f"Page {p}: {TOPICS[p % len(TOPICS)]} in the {p}th survey.",
                        metadata={"source": "survey.pdf", "page": p}) for p in range(40)]

    class Counting:
        def __init__(self, inner):
            self.inner, self.texts = inner, []

        def encode_dense(self, texts, progress=None):
            self.texts.extend(texts)
            return self.inner.encode_dense(texts, progress=progress)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    counting = Counting(caching_encoder)
    index = DragKneeIndex(embedding=caching_encoder)
    index.vectorizer.encoder = counting
    try:
        store = DragKneeVectorStore(index)
        store.add_documents(pages)
        before = _leaf_vectors(index)
        built = len(counting.texts)
        counting.texts.clear()
        store.add_documents([LCDocument(page_content="Page 40: an appendix on lichens.",
                                        metadata={"source": "survey.pdf", "page": 40})])
        encoded = counting.texts
        assert any("lichens" in t for t in encoded)
        again = set(encoded) & {p.page_content for p in pages}
        assert not again, f"unchanged pages encoded again: {sorted(again)[:3]}"
        assert len(encoded) < built / 3, f"{len(encoded)} texts encoded for one page (the build encoded {built})"
        after = _leaf_vectors(index)
        for text, vector in before.items():
            np.testing.assert_allclose(after[text], vector, atol=1e-6)
    finally:
        index.close()


def _leaf_vectors(index):
    return {node.text: np.asarray(vector) for node, vector in index.store.scroll_dense() if node.is_leaf}
