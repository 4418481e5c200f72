"""Issue 27 item 2, LlamaIndex side: DragKneeVectorStore is a real BasePydanticVectorStore.

LlamaIndex has no packaged standard suite for vector stores; these are its conventions, each
through LlamaIndex's own classes: an IngestionPipeline with a docstore upserting and
de-duplicating into the store, VectorStoreIndex.from_vector_store, as_query_engine with a MockLLM
and MockEmbedding (fake models: the pipeline's own embedding step needs one), get_nodes /
delete_nodes / delete(ref_doc_id) / clear, async add. Real offline model inside our index.
"""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.llms.mock import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters, VectorStoreQuery

from drag_knee_retriever import DragKneeIndex
from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever, DragKneeVectorStore


def _pages(path, texts, **meta):
    return [Document(text=t, metadata={"file_path": path, "file_name": path.split("/")[-1], "page_label": str(i + 1), **meta})
            for i, t in enumerate(texts)]


PAGES = ["Coral reefs shelter a quarter of all marine species.",
         "Marine heatwaves bleach corals: stressed polyps expel their algae.",
         "Mangrove forests protect coastlines from storm surges."]


@pytest.fixture
def store(encoder):
    store = DragKneeVectorStore(DragKneeIndex(embedding=encoder))
    yield store
    store.close()


def _pipeline(store, docstore):
    return IngestionPipeline(transformations=[SentenceSplitter(chunk_size=256, chunk_overlap=0), MockEmbedding(embed_dim=8)],
                             docstore=docstore, vector_store=store, docstore_strategy=DocstoreStrategy.UPSERTS)


def test_ingestion_pipeline_upserts_and_deduplicates(store):
    docstore = SimpleDocumentStore()
    docs = [Document(id_="reefs", text=PAGES[0] + "\n\n" + PAGES[1], metadata={"topic": "sea"}),
            Document(id_="mangroves", text=PAGES[2], metadata={"topic": "coast"})]
    first = _pipeline(store, docstore).run(documents=docs)
    assert len(first) == 2 and sorted(d.doc_id for d in store.index.list_documents()) == ["mangroves", "reefs"]
    again = _pipeline(store, docstore).run(documents=docs)
    assert again == []  # unchanged documents: nothing re-run, nothing added
    edited = [Document(id_="reefs", text="Reefs recover when heat stress ends.", metadata={"topic": "sea"}), docs[1]]
    changed = _pipeline(store, docstore).run(documents=edited)
    assert len(changed) == 1
    [reefs] = store.get_nodes([changed[0].node_id])
    assert reefs.text == "Reefs recover when heat stress ends." and reefs.metadata == {"topic": "sea"}
    # the old version went with delete(ref_doc_id): the tree holds the new text only
    assert [d.text for d in store.index.get_documents(["reefs"])] == ["Reefs recover when heat stress ends."]


def test_from_vector_store_query_engine_with_mock_llm(store):
    _pipeline(store, SimpleDocumentStore()).run(documents=_pages("/data/reefs.pdf", PAGES))
    assert [(d.doc_id, d.first_page, d.last_page) for d in store.index.list_documents()] == [("/data/reefs.pdf", 1, 3)]
    index = VectorStoreIndex.from_vector_store(store, embed_model=MockEmbedding(embed_dim=8))
    response = index.as_query_engine(llm=MockLLM(), similarity_top_k=2).query("Why do corals bleach?")
    assert response.source_nodes
    top = response.source_nodes[0]
    assert 0.0 <= top.score <= 1.0
    assert top.node.metadata["page_label"] == "2" and top.node.metadata["drag_span"] == "p.2"
    nodes = index.as_retriever(similarity_top_k=3).retrieve("mangroves storm surges")
    assert nodes and nodes[0].node.metadata["file_path"] == "/data/reefs.pdf"


def test_query_modes_filters_and_node_by_id(store):
    store.add([node for node in SentenceSplitter().get_nodes_from_documents(
        _pages("/data/reefs.pdf", PAGES) + [Document(text="Bread rises when yeast ferments.", metadata={"topic": "food"})])])
    tree = store.query(VectorStoreQuery(query_str="coral bleaching", similarity_top_k=2))
    assert tree.nodes and all(0.0 <= s <= 1.0 for s in tree.similarities)
    flat = DragKneeVectorStore(store.index, query_mode="flat").query(
        VectorStoreQuery(query_str="yeast bread", similarity_top_k=1))
    assert flat.nodes[0].text == "Bread rises when yeast ferments." and flat.nodes[0].metadata == {"topic": "food"}
    only = store.query(VectorStoreQuery(query_str="coral", similarity_top_k=5, filters=MetadataFilters(
        filters=[MetadataFilter(key="file_path", operator=FilterOperator.EQ, value="/data/reefs.pdf")])))
    assert only.nodes and all(n.metadata["file_path"] == "/data/reefs.pdf" for n in only.nodes)
    # node by id: a leaf's parent comes back with its whole span
    leaf = next(n for n in store.index.store.scroll_nodes() if n.is_leaf and n.parent_id)
    [parent] = store.get_nodes([leaf.parent_id])
    assert parent.metadata["drag_node_id"] == leaf.parent_id and leaf.text in parent.text
    assert parent.metadata["drag_level"] == leaf.level - 1


def test_delete_nodes_delete_ref_doc_and_clear(store):
    nodes = SentenceSplitter().get_nodes_from_documents(_pages("/data/reefs.pdf", PAGES))
    ids = store.add(nodes)
    store.delete_nodes([ids[0]])
    assert [n.text for n in store.get_nodes(ids)] == PAGES[1:]
    store.delete(nodes[1].ref_doc_id)  # the page document that brought the second node
    assert [n.text for n in store.get_nodes(ids)] == PAGES[2:]
    store.clear()
    assert store.index.list_documents() == []


async def test_async_add_and_ainsert_run_off_the_event_loop(store):
    ticks = 0

    async def tick():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    ticker = asyncio.create_task(tick())
    ids = await store.async_add(SentenceSplitter().get_nodes_from_documents(_pages("/data/reefs.pdf", PAGES)))
    retriever = DragKneeRetriever(store.index)
    await retriever.ainsert(Document(text="Tides follow the moon.", metadata={"file_path": "/data/reefs.pdf",
                                                                              "page_label": "4"}))
    ticker.cancel()
    assert ticks >= 3, "the event loop was blocked while nodes were encoded"
    assert len(store.get_nodes(ids)) == 3
    # the inserted page joined the file's tree (one tree per file on every path)
    assert [(d.doc_id, d.last_page) for d in store.index.list_documents()] == [("/data/reefs.pdf", 4)]
