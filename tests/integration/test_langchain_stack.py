"""The LangChain retriever in a real LangChain stack: ``langchain_core.indexing.index()`` with an
in-memory record manager, delete / get by id, LangChain filters and ``search_kwargs``, ``k`` as a
cap, the walk's trace reaching a real callback handler (custom event and run metadata) and
``astream_events``. Real offline model (MiniLM), real Qdrant (local mode)."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.indexing import InMemoryRecordManager, index

from drag_knee_retriever import ConfigError, DragKneeIndex, InvalidQueryError, StoreConfig
from drag_knee_retriever.integrations.langchain import DragKneeRetriever

TEXTS = {
    "bees.txt": "Varroa mites spread deformed wing virus through honeybee colonies.\n\n"
                "Neonicotinoid pesticides impair the foraging and navigation of honeybees.\n\n"
                "Beekeepers first reported colony collapse in the winter of 2006.",
    "lava.txt": "Basaltic lava is hot and runny and builds broad shield volcanoes.\n\n"
                "Andesitic magma is viscous and traps gas, so stratovolcanoes erupt explosively.",
    "bread.txt": "A sourdough starter is fed with flour and water every day.\n\n"
                 "Wild yeast and lactic acid bacteria leaven the dough and sour it.",
    "tides.txt": "Tidal turbines turn the ebb and flow of the sea into electricity.\n\n"
                 "Spring tides follow the new and the full moon.",
}
YEARS = {"bees.txt": 2019, "lava.txt": 2021, "bread.txt": 2023, "tides.txt": 2016}


def lc_docs(**changes: str) -> List[LCDocument]:
    return [LCDocument(page_content=changes.get(src, text), metadata={"source": src, "year": YEARS[src]})
            for src, text in TEXTS.items()]


@pytest.fixture()
def retriever(encoder) -> DragKneeRetriever:
    return DragKneeRetriever(index=DragKneeIndex(embedding=encoder, store=StoreConfig(engine="local")))


def _stored(retriever: DragKneeRetriever) -> set:
    """The ids of the LangChain documents stored (each a member of its source's tree)."""
    from drag_knee_retriever.integrations._members import MemberStore

    trees = MemberStore(retriever.index).load(d.doc_id for d in retriever.index.list_documents())
    return {m.id for members in trees.values() for m in members}


def test_index_with_record_manager_adds_skips_updates_and_deletes(retriever):
    manager = InMemoryRecordManager(namespace="drag-knee-test")
    manager.create_schema()
    first = index(lc_docs(), manager, retriever, cleanup="incremental", source_id_key="source")
    assert first == {"num_added": 4, "num_updated": 0, "num_skipped": 0, "num_deleted": 0}
    assert _stored(retriever) == set(manager.list_keys())
    again = index(lc_docs(), manager, retriever, cleanup="incremental", source_id_key="source")
    assert again == {"num_added": 0, "num_updated": 0, "num_skipped": 4, "num_deleted": 0}
    edited = lc_docs(**{"bread.txt": "Rye bread needs a longer rise than wheat bread."})
    changed = index(edited, manager, retriever, cleanup="incremental", source_id_key="source")
    assert changed == {"num_added": 1, "num_updated": 0, "num_skipped": 3, "num_deleted": 1}
    assert _stored(retriever) == set(manager.list_keys()) and len(_stored(retriever)) == 4
    hit = retriever.invoke("how long does rye bread rise?")[0]
    assert "Rye bread" in hit.page_content and hit.metadata["source"] == "bread.txt"
    assert not any("sourdough" in d.page_content for d in retriever.invoke("sourdough starter flour water"))
    full = index(edited[:2], manager, retriever, cleanup="full", source_id_key="source")
    assert full["num_deleted"] == 2 and full["num_skipped"] == 2
    assert {d.metadata["source"] for d in retriever.get(list(_stored(retriever)))} == {"bees.txt", "lava.txt"}


def test_upsert_get_and_delete_by_id(retriever):
    docs = [LCDocument(id=f"doc-{i}", page_content=text, metadata={"source": src})
            for i, (src, text) in enumerate(TEXTS.items())]
    response = retriever.upsert(docs)
    assert response["succeeded"] == ["doc-0", "doc-1", "doc-2", "doc-3"] and response["failed"] == []
    got = retriever.get(["doc-1", "missing"])
    assert [d.id for d in got] == ["doc-1"] and got[0].page_content == TEXTS["lava.txt"]
    deleted = retriever.delete(["doc-1", "missing"])
    assert deleted["succeeded"] == ["doc-1"] and deleted["num_deleted"] == 1
    assert _stored(retriever) == {"doc-0", "doc-2", "doc-3"}
    assert all(d.id != "doc-1" for d in retriever.invoke("shield volcanoes of basaltic lava"))
    with pytest.raises(ValueError, match="ids"):
        retriever.delete()
    assert asyncio.run(retriever.adelete(["doc-0"]))["succeeded"] == ["doc-0"]


def test_langchain_filter_dialect_and_search_kwargs(encoder):
    retriever = DragKneeRetriever.from_documents(lc_docs(), index=DragKneeIndex(embedding=encoder, store=StoreConfig(engine="local")))
    recent = retriever.invoke("bees volcanoes bread tides", filter={"year": {"$gte": 2020}})
    assert recent and {d.metadata["year"] for d in recent} <= {2021, 2023}
    either = retriever.invoke("bees volcanoes bread tides",
                              filter={"$or": [{"year": 2019}, {"source": {"$in": ["tides.txt"]}}]})
    assert either and {d.metadata["source"] for d in either} <= {"bees.txt", "tides.txt"}
    # search_kwargs follows as_retriever(search_kwargs=...): filter, k, score_threshold.
    kw = DragKneeRetriever(index=retriever.index, search_kwargs={"filter": {"year": {"$lt": 2017}}, "k": 1})
    only = kw.invoke("bees volcanoes bread tides")
    assert len(only) == 1 and only[0].metadata["source"] == "tides.txt"
    with pytest.raises(ValueError, match="fetch_k"):  # pydantic wraps the ConfigError
        DragKneeRetriever(index=retriever.index, search_kwargs={"fetch_k": 20})
    with pytest.raises(InvalidQueryError, match="unknown operator"):
        retriever.invoke("bees", filter={"year": {"$like": 2019}})
    with pytest.raises(InvalidQueryError, match="yeer"):
        retriever.invoke("bees", filter={"yeer": 2019})


def test_k_caps_the_results_and_keeps_the_method(encoder):
    retriever = DragKneeRetriever.from_documents(lc_docs(), index=DragKneeIndex(embedding=encoder, store=StoreConfig(engine="local")))
    question = "what spreads deformed wing virus in honeybee colonies?"
    full = retriever.index.search(question)
    capped = retriever.invoke(question, k=1)
    assert capped[0].metadata["drag_node_id"] == full.nodes[0].node.id
    assert len(capped) == 1
    wide = retriever.invoke(question, k=50)
    assert [d.metadata["drag_node_id"] for d in wide] == [h.node.id for h in full.nodes]  # the knee decides
    assert retriever.invoke(question, score_threshold=10.0) == []


class TraceCollector(BaseCallbackHandler):
    """A real LangChain callback handler, as LangSmith / Langfuse handlers receive events."""

    def __init__(self) -> None:
        self.events: List[Dict[str, Any]] = []
        self.starts: List[Dict[str, Any]] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: Any, metadata: Any = None, **kwargs: Any) -> None:
        self.starts.append({"run_id": run_id, "metadata": dict(metadata or {})})

    def on_custom_event(self, name: str, data: Any, *, run_id: Any, **kwargs: Any) -> None:
        self.events.append({"name": name, "data": data, "run_id": run_id})


def test_trace_reaches_a_callback_handler(encoder):
    retriever = DragKneeRetriever.from_documents(lc_docs(), index=DragKneeIndex(embedding=encoder, store=StoreConfig(engine="local")))
    handler = TraceCollector()
    retriever.invoke("what spreads deformed wing virus?", config={"callbacks": [handler]})
    assert [e["name"] for e in handler.events] == ["drag_knee_trace"]
    event = handler.events[0]
    assert event["run_id"] == handler.starts[0]["run_id"]  # attached to the retriever's run
    trace = event["data"]
    assert trace["method"] == "knee" and trace["requests"] >= 2
    outcomes = {c["outcome"] for step in trace["steps"] for c in step["candidates"]}
    assert "kept" in outcomes and outcomes & {"cut", "suppressed"}
    assert any(step["knee_index"] is not None for step in trace["steps"])
    assert handler.starts[0]["metadata"]["drag_method"] == "knee"
    asyncio.run(retriever.ainvoke("sourdough starter", config={"callbacks": [handler]}))
    assert [e["name"] for e in handler.events] == ["drag_knee_trace"] * 2


def test_trace_in_astream_events(encoder):
    retriever = DragKneeRetriever.from_documents(lc_docs(), index=DragKneeIndex(embedding=encoder, store=StoreConfig(engine="local")))

    async def collect() -> List[Any]:
        return [e async for e in retriever.astream_events("tidal turbines", version="v2")]

    events = asyncio.run(collect())
    custom = [e for e in events if e["event"] == "on_custom_event"]
    assert [e["name"] for e in custom] == ["drag_knee_trace"] and custom[0]["data"]["steps"]


def test_own_embeddings_through_from_documents():
    retriever = DragKneeRetriever.from_documents(lc_docs(), embedding=DeterministicFakeEmbedding(size=32),
                                                 store=StoreConfig(engine="local"))
    assert retriever.index.stats()["embedding_model"] == "langchain:DeterministicFakeEmbedding:size=32"
    assert retriever.invoke("Spring tides follow the new and the full moon.")
