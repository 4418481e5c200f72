"""The LlamaIndex retriever in a real LlamaIndex stack: MockEmbedding and Settings.embed_model,
MetadataFilters (nested), delete_ref_doc / insert / refresh_ref_docs, stable ids for documents
without ids, similarity_top_k as a cap, and the walk's trace reaching a real instrumentation event
handler and the retrieve callback. Real offline model where a model is needed, real Qdrant."""

from __future__ import annotations

import asyncio
from typing import Any, List

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document as LIDocument
from llama_index.core import Settings
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from drag_knee_retriever import DragKneeIndex, InvalidQueryError, StoreConfig
from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever, DragKneeTraceEvent

TEXTS = [
    ("bees", "Varroa mites spread deformed wing virus through honeybee colonies.\n\n"
             "Neonicotinoid pesticides impair the foraging of honeybees.", 2019, "en"),
    ("lava", "Basaltic lava builds broad shield volcanoes.\n\n"
             "Andesitic magma traps gas, so stratovolcanoes erupt explosively.", 2021, "en"),
    ("bread", "A sourdough starter is fed with flour and water every day.\n\n"
              "Wild yeast and lactic acid bacteria leaven the dough.", 2023, "ru"),
]


def li_docs(with_ids: bool = True) -> List[LIDocument]:
    out = []
    for doc_id, text, year, lang in TEXTS:
        kwargs = {"id_": doc_id} if with_ids else {}
        out.append(LIDocument(text=text, metadata={"year": year, "lang": lang}, **kwargs))
    return out


@pytest.fixture()
def retriever(encoder) -> DragKneeRetriever:
    return DragKneeRetriever.from_documents(li_docs(), index=DragKneeIndex(embedding=encoder, store=StoreConfig(engine="local")))


def _stored(retriever: DragKneeRetriever) -> set:
    return {d.doc_id for d in retriever.index.list_documents()}


def test_mock_embedding_as_embed_model_and_from_settings():
    retriever = DragKneeRetriever.from_documents(li_docs(), store=StoreConfig(engine="local"), embed_model=MockEmbedding(embed_dim=16))
    assert retriever.index.stats()["embedding_model"] == "llamaindex:MockEmbedding:size=16"
    assert retriever.retrieve("stratovolcanoes erupt explosively")[0].node.metadata["drag_doc_id"] == "lava"
    previous = Settings._embed_model
    Settings.embed_model = MockEmbedding(embed_dim=24)
    try:
        from_settings = DragKneeRetriever.from_documents(li_docs(), store=StoreConfig(engine="local"))
        assert from_settings.index.stats()["embedding_model"] == "llamaindex:MockEmbedding:size=24"
    finally:
        Settings._embed_model = previous


def test_metadata_filters_nested(retriever):
    filters = MetadataFilters(filters=[
        MetadataFilter(key="lang", operator=FilterOperator.EQ, value="en"),
        MetadataFilters(filters=[MetadataFilter(key="year", operator=FilterOperator.GTE, value=2021),
                                 MetadataFilter(key="year", operator=FilterOperator.LT, value=2020)],
                        condition=FilterCondition.OR),
    ], condition=FilterCondition.AND)
    nodes = DragKneeRetriever(retriever.index, filters=filters).retrieve("honeybees volcanoes sourdough")
    assert nodes and {n.node.metadata["drag_doc_id"] for n in nodes} <= {"bees", "lava"}
    per_call = retriever.retrieve("honeybees volcanoes sourdough", filters=MetadataFilters(
        filters=[MetadataFilter(key="lang", operator=FilterOperator.EQ, value="en")], condition=FilterCondition.NOT))
    assert per_call and {n.node.metadata["drag_doc_id"] for n in per_call} == {"bread"}
    with pytest.raises(InvalidQueryError, match="text_match"):
        retriever.retrieve("bees", filters=MetadataFilters(filters=[
            MetadataFilter(key="lang", operator=FilterOperator.TEXT_MATCH, value="e")]))


def test_delete_ref_doc_insert_and_refresh(retriever):
    retriever.delete_ref_doc("lava")
    assert _stored(retriever) == {"bees", "bread"}
    assert all(n.node.metadata["drag_doc_id"] != "lava" for n in retriever.retrieve("shield volcanoes"))
    retriever.insert(LIDocument(id_="tides", text="Spring tides follow the new and the full moon.", metadata={"year": 2016}))
    assert _stored(retriever) == {"bees", "bread", "tides"}
    changed = li_docs()
    changed[0] = LIDocument(id_="bees", text="Bumblebees nest in the ground.", metadata={"year": 2019, "lang": "en"})
    assert retriever.refresh_ref_docs(changed) == [True, True, False]  # bees changed, lava back, bread same
    assert retriever.retrieve("where do bumblebees nest?")[0].node.metadata["drag_doc_id"] == "bees"
    with pytest.raises(KeyError, match="nowhere"):
        retriever.delete_ref_doc("nowhere", raise_if_missing=True)
    retriever.delete_ref_doc("nowhere")  # LlamaIndex's default: a missing id is not an error


def test_documents_without_ids_are_idempotent(encoder):
    retriever = DragKneeRetriever.from_documents(li_docs(with_ids=False), index=DragKneeIndex(embedding=encoder, store=StoreConfig(engine="local")))
    assert len(_stored(retriever)) == 3
    retriever.insert_documents(li_docs(with_ids=False))  # new Document objects, new random ids
    assert len(_stored(retriever)) == 3


def test_similarity_top_k_caps_and_keeps_the_method(retriever):
    question = "what spreads deformed wing virus?"
    full = retriever.index.search(question)
    capped = retriever.retrieve(question, similarity_top_k=1)
    assert [n.node.node_id for n in capped] == [full.nodes[0].node.id]
    assert [n.node.node_id for n in retriever.retrieve(question, similarity_top_k=50)] == [h.node.id for h in full.nodes]


class Collect(BaseEventHandler):
    """A real instrumentation event handler, as Arize Phoenix / Langfuse register one."""

    events: List[Any] = []

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event: Any, **kwargs: Any) -> None:
        self.events.append(event)


def test_trace_reaches_an_instrumentation_handler_and_the_callback(retriever):
    handler = Collect(events=[])
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        retriever.retrieve("what spreads deformed wing virus?")
        asyncio.run(retriever.aretrieve("sourdough starter"))
    finally:
        root.event_handlers.remove(handler)
    traces = [e for e in handler.events if isinstance(e, DragKneeTraceEvent)]
    assert len(traces) == 2
    trace = traces[0].trace
    assert trace["method"] == "knee" and trace["steps"] and traces[0].query == "what spreads deformed wing virus?"
    assert any(step["knee_index"] is not None for step in trace["steps"])
    debug = LlamaDebugHandler()
    traced = DragKneeRetriever(retriever.index, callback_manager=CallbackManager([debug]))
    traced.retrieve("what spreads deformed wing virus?")
    pairs = debug.get_event_pairs(CBEventType.RETRIEVE)
    payloads = [e.payload or {} for pair in pairs for e in pair]
    assert any("drag_knee_trace" in p for p in payloads)
