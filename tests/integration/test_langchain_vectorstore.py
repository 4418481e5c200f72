"""Issue 27 item 2, LangChain side: DragKneeVectorStore is a real VectorStore.

langchain-tests' own vector store suite (the standard tests every LangChain vector store runs, with
their DeterministicFakeEmbedding: a fake embedding, so the suite's expectations are about ids,
metadata and text, not meaning), plus what the suite does not cover: pages of one source are one
tree across calls, metadata round-trips, as_retriever is the tree search, node-by-id.
"""

from __future__ import annotations

from typing import Generator

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_tests.integration_tests.vectorstores import VectorStoreIntegrationTests

from drag_knee_retriever import ConfigError, DragKneeIndex
from drag_knee_retriever.integrations.langchain import DragKneeRetriever, DragKneeVectorStore


class TestStandardSuiteWithFakeEmbeddings(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self) -> Generator[DragKneeVectorStore, None, None]:  # type: ignore[override]
        store = DragKneeVectorStore(embedding=self.get_embeddings())
        try:
            yield store
        finally:
            store.close()


@pytest.fixture
def store(encoder):
    store = DragKneeVectorStore(DragKneeIndex(embedding=encoder))
    yield store
    store.close()


def _pages(source, texts, start=0):
    return [Document(page_content=t, metadata={"source": source, "page": start + i, "author": "Ada"})
            for i, t in enumerate(texts)]


PAGES = ["Coral reefs shelter a quarter of all marine species.",
         "Marine heatwaves bleach corals: stressed polyps expel their algae.",
         "Mangrove forests protect coastlines from storm surges.",
         "Seagrass meadows store carbon in their sediment."]


def test_pages_of_one_source_added_in_two_calls_are_one_tree(store):
    first = store.add_documents(_pages("report.pdf", PAGES[:2]))
    second = store.add_documents(_pages("report.pdf", PAGES[2:], start=2))
    docs = store.index.list_documents()
    assert [(d.doc_id, d.first_page, d.last_page) for d in docs] == [("report.pdf", 1, 4)]
    # every page comes back exactly as added: its own metadata (page kept), its id, its text
    got = store.get_by_ids(first + second)
    assert [(d.page_content, d.metadata) for d in got] == [(p.page_content, p.metadata) for p in _pages("report.pdf", PAGES)]
    # the tree search cites the file's pages, with the page's own metadata beside ours
    hits = store.as_retriever(search_kwargs={"k": 2}).invoke("Why do corals bleach?")
    top = hits[0]
    assert top.metadata["page"] == 1 and top.metadata["source"] == "report.pdf" and top.metadata["author"] == "Ada"
    assert top.metadata["drag_span"] == "p.2" and top.id == first[1]
    assert 0.0 <= top.metadata["drag_score"] <= 1.0 and "drag_raw_score" in top.metadata


def test_delete_one_page_keeps_the_others_in_the_tree(store):
    ids = store.add_documents(_pages("report.pdf", PAGES))
    store.delete([ids[1]])
    assert [d.page_content for d in store.get_by_ids(ids)] == [PAGES[0], PAGES[2], PAGES[3]]
    assert [(d.doc_id, d.last_page) for d in store.index.list_documents()] == [("report.pdf", 4)]
    store.delete(["report.pdf"])  # the source's id: the whole tree
    assert store.index.list_documents() == []


def test_similarity_search_is_flat_and_returns_documents_as_added(store):
    store.add_documents(_pages("report.pdf", PAGES) + [Document(page_content="Bread rises when yeast ferments sugar.",
                                                                 metadata={"kind": "recipe"}, id="bread")])
    scored = store.similarity_search_with_score("yeast bread", k=2)
    assert scored[0][0] == Document(page_content="Bread rises when yeast ferments sugar.", metadata={"kind": "recipe"},
                                    id="bread")
    assert all(0.0 <= s <= 1.0 for _, s in scored)
    assert store.similarity_search_with_relevance_scores("yeast bread", k=2) == scored
    only = store.similarity_search("corals", k=4, filter={"page": {"$gte": 2}})
    assert only and all(d.metadata["page"] >= 2 for d in only)


def test_as_retriever_is_the_tree_search_and_mmr_is_langchains_flat_one(store):
    store.add_documents(_pages("report.pdf", PAGES))
    retriever = store.as_retriever(search_type="similarity_score_threshold",
                                   search_kwargs={"score_threshold": 0.3, "k": 3})
    assert isinstance(retriever, DragKneeRetriever)
    assert all(d.metadata["drag_score"] >= 0.3 for d in retriever.invoke("coral bleaching heat"))
    from langchain_core.vectorstores import VectorStoreRetriever

    mmr = store.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 6, "lambda_mult": 0.3})
    assert isinstance(mmr, VectorStoreRetriever) and len(mmr.invoke("coral bleaching heat")) == 2
    with pytest.raises(ConfigError, match="search_type"):
        store.as_retriever(search_type="nearest")


def test_get_by_ids_fetches_a_parent_node_with_its_whole_span(store):
    store.add_documents(_pages("report.pdf", PAGES))
    hit = store.as_retriever(search_kwargs={"k": 1}).invoke("marine heatwaves")[0]
    parent = store.get_by_ids([hit.metadata["drag_parent_id"]])[0]
    assert parent.metadata["drag_node_id"] == hit.metadata["drag_parent_id"]
    assert hit.page_content in parent.page_content and parent.metadata["drag_level"] < hit.metadata["drag_level"]


async def test_async_ingestion_runs_off_the_event_loop(store):
    import asyncio

    ticks = 0

    async def tick():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    ticker = asyncio.create_task(tick())
    ids = await store.aadd_documents(_pages("report.pdf", PAGES))
    ticker.cancel()
    assert ticks >= 3, "the event loop was blocked while documents were encoded"
    assert [d.page_content for d in await store.aget_by_ids(ids)] == PAGES
    await store.adelete(ids[:1])
    assert len(store.get_by_ids(ids)) == 3


@pytest.mark.parametrize("target", ["vectorstore", "retriever"])
def test_langchain_index_in_batches_keeps_one_tree_per_source_with_its_pages(store, target):
    """index() sends pages in batches (batch_size=2 here): the pages of report.pdf are still ONE
    tree citing the file's pages, each page's metadata kept; cleanup removes a dropped page only.
    (Before: through index() each page became its own tree with paragraph spans.)"""
    from langchain_core.indexing import InMemoryRecordManager, index

    manager = InMemoryRecordManager(namespace=f"pages-{target}")
    manager.create_schema()
    destination = store if target == "vectorstore" else store.as_retriever()
    pages = _pages("report.pdf", PAGES)
    first = index(pages, manager, destination, cleanup="incremental", source_id_key="source", batch_size=2)
    assert first["num_added"] == 4
    assert [(d.doc_id, d.first_page, d.last_page) for d in store.index.list_documents()] == [("report.pdf", 1, 4)]
    hit = store.as_retriever(search_kwargs={"k": 1}).invoke("Why do corals bleach?")[0]
    assert hit.metadata["page"] == 1 and hit.metadata["drag_span"] == "p.2"
    # (one batch here: LangChain's incremental cleanup runs per batch, so a source split over
    # batches is deleted and re-added by index() itself, whatever the destination)
    again = index(pages[:3], manager, destination, cleanup="incremental", source_id_key="source")
    assert again["num_deleted"] == 1 and again["num_skipped"] == 3
    assert [(d.doc_id, d.last_page) for d in store.index.list_documents()] == [("report.pdf", 3)]


@pytest.mark.parametrize("where", ["memory", "qdrant-client", "edge folder"])
def test_splitter_chunks_read_as_chunks_in_the_core_results_cli_and_trace_with_fake_embeddings(where, tmp_path):
    # Issue 40 item 8: a text splitter's chunks (no page numbers) are numbered as chunks by the core
    # span too (the CLI's result lines, render's trace), not only in the adapters' metadata; a
    # page tree of the same index still reads "p." / "pp.". The engines read the walk's fields
    # by name (qdrant-client, Edge's node map on a reopened folder), so each is checked.
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from rich.console import Console

    from drag_knee_retriever.cli.output import print_results
    from drag_knee_retriever.render import trace_text

    text = " ".join(f"Section {i}. Coral reefs in region {i} bleached when the water warmed by {i % 4} degrees; "
                    f"divers counted {i * 13} colonies." for i in range(40))
    splitter = RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=80)
    chunks = splitter.split_documents([Document(page_content=text, metadata={"source": "reefs.txt"})])
    assert len(chunks) > 4
    where_kwargs = {"memory": {}, "qdrant-client": {"location": ":memory:", "collection_name": "reefs"},
                    "edge folder": {"path": str(tmp_path), "collection_name": "reefs"}}[where]
    embeddings = DeterministicFakeEmbedding(size=32)
    store = DragKneeVectorStore.from_documents(chunks + _pages("report.pdf", PAGES), embeddings, **where_kwargs)
    if where == "edge folder":  # reopened: the walk reads the node map loaded from the folder
        store.close()
        store = DragKneeVectorStore.from_existing_collection("reefs", embeddings, path=str(tmp_path))
        store.index.store.wait_for_node_map(timeout=30)
    try:
        result = store.index.search("colonies counted in region 12", max_results=40, filters={"doc_id": "reefs.txt"})
        assert result.nodes
        labels = {str(hit.node.span) for hit in result.nodes}
        assert all(label.startswith("chunk") for label in labels), labels
        console = Console(record=True, width=200)
        print_results(result, console=console)
        printed = console.export_text()
        assert "chunk" in printed and "pp." not in printed and " p." not in printed, printed
        walked = [c.label for step in result.trace.steps for c in step.candidates if c.doc_id == "reefs.txt"]
        assert walked and all(label.startswith("chunk") for label in walked), walked
        assert "reefs.txt chunk" in trace_text(result.trace)
        pages = store.index.search("Why do corals bleach?", max_results=4, filters={"doc_id": "report.pdf"})
        assert pages.nodes and all(str(h.node.span).startswith("p") for h in pages.nodes)
        assert not any("chunk" in c.label for step in pages.trace.steps for c in step.candidates)
    finally:
        store.close()
