"""Issue 27, must show: a script written for langchain-qdrant, and one for a LlamaIndex pipeline,
run with only the constructor line changed (and its import).

Each script is run twice in a fresh namespace: as written for the original store (real
langchain-qdrant over a real QdrantClient in memory), then with the one line swapped for ours. The
scripts' own asserts are what their users would check. Fake embeddings where a model is needed
(DeterministicFakeEmbedding / MockEmbedding, named in the script); our index reads BM25 besides.
"""

from __future__ import annotations

import textwrap

import pytest

LANGCHAIN_QDRANT_SCRIPT = textwrap.dedent('''
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from qdrant_client import models
    {import_line}

    embeddings = DeterministicFakeEmbedding(size=64)  # your embedding model
    docs = [
        Document(page_content="Coral reefs shelter a quarter of all marine species.",
                 metadata={{"source": "reefs.pdf", "page": 0}}),
        Document(page_content="Marine heatwaves bleach corals: stressed polyps expel their algae.",
                 metadata={{"source": "reefs.pdf", "page": 1}}),
        Document(page_content="Mangrove forests protect coastlines from storm surges.",
                 metadata={{"source": "mangroves.txt"}}),
        Document(page_content="Sourdough bread rises because wild yeast ferments the dough.",
                 metadata={{"source": "bread.txt"}}),
    ]
    {constructor_line}

    found = store.similarity_search_with_score("Why do corals bleach?", k=2)
    assert len(found) == 2
    for doc, score in found:
        assert isinstance(doc, Document) and isinstance(score, float)
        assert doc.metadata["source"] in ("reefs.pdf", "mangroves.txt", "bread.txt")
        if doc.page_content.startswith("Marine"):
            assert doc.metadata["page"] == 1  # PyPDFLoader-style page numbers come back

    only_reefs = models.Filter(must=[models.FieldCondition(key="metadata.source",
                                                           match=models.MatchValue(value="reefs.pdf"))])
    retriever = store.as_retriever(search_kwargs={{"k": 4, "filter": only_reefs}})
    hits = retriever.invoke("corals")
    assert hits and all(d.metadata["source"] == "reefs.pdf" for d in hits)

    ids = store.add_documents([Document(page_content="Tides follow the moon.", metadata={{"source": "tides.txt"}})])
    assert any("Tides" in d.page_content for d in store.similarity_search("tides moon", k=5))
    store.delete(ids)
    assert not any("Tides" in d.page_content for d in store.similarity_search("tides moon", k=5))
    result = sorted(d.page_content for d in store.similarity_search("anything", k=10))
''')


def _run(script: str) -> dict:
    namespace: dict = {}
    exec(compile(script, "<user script>", "exec"), namespace)
    return namespace


def test_a_langchain_qdrant_script_runs_with_only_the_constructor_changed():
    pytest.importorskip("langchain_qdrant")
    original = LANGCHAIN_QDRANT_SCRIPT.format(
        import_line="from langchain_qdrant import QdrantVectorStore",
        constructor_line='store = QdrantVectorStore.from_documents(docs, embeddings, location=":memory:", '
                         'collection_name="my_documents")')
    ours = LANGCHAIN_QDRANT_SCRIPT.format(
        import_line="from drag_knee_retriever.integrations.langchain import DragKneeVectorStore",
        constructor_line='store = DragKneeVectorStore.from_documents(docs, embeddings, location=":memory:", '
                         'collection_name="my_documents")')
    changed = [(a, b) for a, b in zip(original.splitlines(), ours.splitlines()) if a != b]
    assert len(changed) == 2, changed  # the import and the constructor line, nothing else
    theirs = _run(original)
    mine = _run(ours)
    # the same documents are stored, as they were given
    assert mine["result"] == theirs["result"]
    mine["store"].close()


LLAMAINDEX_SCRIPT = textwrap.dedent('''
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.llms.mock import MockLLM
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from qdrant_client import QdrantClient
    {import_line}

    embed_model = MockEmbedding(embed_dim=8)  # your embedding model
    docs = [
        Document(id_="reefs", text="Coral reefs shelter a quarter of all marine species.\\n\\n"
                 "Marine heatwaves bleach corals: stressed polyps expel their algae.", metadata={{"topic": "sea"}}),
        Document(id_="mangroves", text="Mangrove forests protect coastlines from storm surges.",
                 metadata={{"topic": "coast"}}),
        Document(id_="bread", text="Sourdough bread rises because wild yeast ferments the dough.",
                 metadata={{"topic": "food"}}),
    ]
    client = QdrantClient(":memory:")
    {constructor_line}
    pipeline = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=256, chunk_overlap=0), embed_model],
        docstore=SimpleDocumentStore(), vector_store=vector_store,
    )
    nodes = pipeline.run(documents=docs)
    assert len(nodes) == 3
    assert pipeline.run(documents=docs) == []  # the docstore de-duplicates

    index = VectorStoreIndex.from_vector_store(vector_store, embed_model=embed_model)
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=2)
    response = engine.query("Why do corals bleach?")
    assert response.source_nodes and isinstance(str(response), str)
    for hit in response.source_nodes:
        assert hit.node.metadata["topic"] in ("sea", "coast", "food") and isinstance(hit.score, float)
    topics = sorted(n.metadata["topic"] for n in vector_store.get_nodes([n.node_id for n in nodes]))
''')


def test_a_llamaindex_pipeline_script_runs_with_only_the_constructor_changed():
    pytest.importorskip("llama_index.vector_stores.qdrant")
    original = LLAMAINDEX_SCRIPT.format(
        import_line="from llama_index.vector_stores.qdrant import QdrantVectorStore",
        constructor_line='vector_store = QdrantVectorStore(client=client, collection_name="docs")')
    ours = LLAMAINDEX_SCRIPT.format(
        import_line="from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore",
        constructor_line='vector_store = DragKneeVectorStore(client=client, collection_name="docs")')
    changed = [(a, b) for a, b in zip(original.splitlines(), ours.splitlines()) if a != b]
    assert len(changed) == 2, changed
    theirs = _run(original)
    mine = _run(ours)
    assert mine["topics"] == theirs["topics"] == ["coast", "food", "sea"]
    # closing our store leaves the user's client (and its other collections) open
    mine["vector_store"].close()
    assert mine["client"].collection_exists("docs")


# Issue 40: "A LangChain or LlamaIndex user swaps us in and nothing silently changes". Each script
# below asserts what its users rely on with the original store; ours must pass it unchanged.

LANGCHAIN_ISSUE40_SCRIPT = textwrap.dedent('''
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from qdrant_client import models
    {import_line}

    embeddings = DeterministicFakeEmbedding(size=64)  # your embedding model
    docs = [Document(page_content=f"Page {{p}} of the reef survey: " + text, metadata={{"source": "reefs.pdf", "page": p}})
            for p, text in enumerate([
                "Coral reefs shelter a quarter of all marine species.",
                "Marine heatwaves bleach corals: stressed polyps expel their algae.",
                "Bleached corals can recover if the water cools within weeks.",
                "Reef fish feed on algae and keep the corals clean."])]
    docs += [Document(page_content="Mangrove forests protect coastlines from storm surges.", metadata={{"source": "mangroves.txt"}}),
             Document(page_content="Sourdough bread rises because wild yeast ferments the dough.", metadata={{"source": "bread.txt"}})]
    {constructor_line}
    query = "Why do corals bleach?"

    # item 1: a filter on a page's own metadata, in every search mode
    page_one = models.Filter(must=[models.FieldCondition(key="metadata.page", match=models.MatchValue(value=1))])
    assert [d.metadata["page"] for d in store.similarity_search(query, k=4, filter=page_one)] == [1]
    assert [d.metadata["page"] for d in store.as_retriever(search_kwargs={{"k": 4, "filter": page_one}}).invoke(query)] == [1]

    # item 4: k is a count
    assert len(store.similarity_search(query, k=4)) == 4
    assert len(store.similarity_search_with_score(query, k=5)) == 5
    assert len(store.as_retriever(search_kwargs={{"k": 4}}).invoke(query)) == 4
    assert len(store.as_retriever().invoke(query)) == 4  # LangChain's default k

    # item 3: scores best first, and a threshold keeps a prefix of the ranking
    all_scores = []
    for scored in (store.similarity_search_with_score(query, k=6),
                   store.similarity_search_with_relevance_scores(query, k=6)):
        scores = [s for _, s in scored]
        assert scores == sorted(scores, reverse=True), scores
        all_scores += scores
    kept = store.similarity_search_with_relevance_scores(query, k=6, score_threshold=scores[2])
    assert [d.page_content for d, _ in kept] == [d.page_content for d, _ in scored][:len(kept)] and len(kept) >= 3
    shapes = sorted((type(d).__name__, sorted(d.metadata)[:0]) for d in store.similarity_search(query, k=6))
''')


def test_issue40_langchain_page_filters_k_and_scores_behave_as_langchain_qdrant():
    pytest.importorskip("langchain_qdrant")
    original = LANGCHAIN_ISSUE40_SCRIPT.format(
        import_line="from langchain_qdrant import QdrantVectorStore",
        constructor_line='store = QdrantVectorStore.from_documents(docs, embeddings, location=":memory:", '
                         'collection_name="reef_pages")')
    ours = LANGCHAIN_ISSUE40_SCRIPT.format(
        import_line="from drag_knee_retriever.integrations.langchain import DragKneeVectorStore",
        constructor_line='store = DragKneeVectorStore.from_documents(docs, embeddings, location=":memory:", '
                         'collection_name="reef_pages")')
    changed = [(a, b) for a, b in zip(original.splitlines(), ours.splitlines()) if a != b]
    assert len(changed) == 2, changed
    theirs = _run(original)
    mine = _run(ours)
    assert mine["shapes"] == theirs["shapes"]
    assert all(0.0 <= s <= 1.0 for s in mine["all_scores"])  # ours: one [0, 1] scale (theirs: raw cosines)
    mine["store"].close()


LLAMAINDEX_ISSUE40_SCRIPT = textwrap.dedent('''
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.postprocessor import SimilarityPostprocessor
    from llama_index.core.schema import QueryBundle
    from llama_index.core.vector_stores import ExactMatchFilter, MetadataFilters
    from qdrant_client import QdrantClient
    from drag_knee_retriever.integrations.llamaindex import KneeNodePostprocessor
    {import_line}

    embed_model = MockEmbedding(embed_dim=8)  # your embedding model
    reefs = Document(id_="reefs", text=" ".join([
        "Coral reefs shelter a quarter of all marine species.",
        "Marine heatwaves bleach corals: stressed polyps expel their algae.",
        "Bleached corals can recover if the water cools within weeks.",
        "Reef fish feed on algae and keep the corals clean.",
        "Divers count bleached colonies along fixed transects every year.",
        "Ocean acidification slows the growth of coral skeletons."]), metadata={{"topic": "sea"}})
    bread = Document(id_="bread", text="Sourdough bread rises because wild yeast ferments the dough.",
                     metadata={{"topic": "food"}})
    nodes = SentenceSplitter(chunk_size=24, chunk_overlap=0).get_nodes_from_documents([reefs, bread])
    for i, node in enumerate(nodes):
        node.metadata["chunk"] = i
        node.embedding = embed_model.get_text_embedding(node.get_content(metadata_mode="embed"))
    assert sum(n.ref_doc_id == "reefs" for n in nodes) >= 3  # chunked
    client = QdrantClient(":memory:")
    {constructor_line}
    vector_store.add([n.model_copy() for n in nodes if n.ref_doc_id == "reefs"])  # alone first
    index = VectorStoreIndex.from_vector_store(vector_store, embed_model=embed_model)
    query = "Why do corals bleach?"

    # item 1: doc_ids over chunked documents, alone and beside another document; a chunk's own key
    alone = index.as_retriever(similarity_top_k=2, doc_ids=["reefs"]).retrieve(query)
    vector_store.add([n.model_copy() for n in nodes if n.ref_doc_id == "bread"])
    beside = index.as_retriever(similarity_top_k=2, doc_ids=["reefs"]).retrieve(query)
    assert len(alone) == len(beside) == 2
    assert all(n.node.ref_doc_id == "reefs" for n in alone + beside)
    chunk = index.as_retriever(similarity_top_k=3, filters=MetadataFilters(filters=[
        ExactMatchFilter(key="chunk", value=1)])).retrieve(query)
    assert [n.node.metadata["chunk"] for n in chunk] == [1]

    # item 4: similarity_top_k is a count
    hits = index.as_retriever(similarity_top_k=3).retrieve(query)
    assert len(hits) == 3

    # item 3: similarities in [0, 1], best first: a cutoff keeps a prefix, the knee runs on them
    scores = [n.score for n in hits]
    assert scores == sorted(scores, reverse=True), scores
    kept = SimilarityPostprocessor(similarity_cutoff=scores[1]).postprocess_nodes(hits)
    assert [n.node.node_id for n in kept] == [n.node.node_id for n in hits][:len(kept)] and len(kept) >= 2
    wide = index.as_retriever(similarity_top_k=5).retrieve(query)
    knee = KneeNodePostprocessor().postprocess_nodes(wide, query_bundle=QueryBundle(query))
    assert 1 <= len(knee) <= len(wide)
    counts = (len(alone), len(beside), len(chunk), len(hits), len(wide))
''')


def test_issue40_llamaindex_doc_ids_top_k_and_scores_behave_as_the_qdrant_store():
    pytest.importorskip("llama_index.vector_stores.qdrant")
    original = LLAMAINDEX_ISSUE40_SCRIPT.format(
        import_line="from llama_index.vector_stores.qdrant import QdrantVectorStore",
        constructor_line='vector_store = QdrantVectorStore(client=client, collection_name="chunks")')
    ours = LLAMAINDEX_ISSUE40_SCRIPT.format(
        import_line="from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore",
        constructor_line='vector_store = DragKneeVectorStore(client=client, collection_name="chunks")')
    changed = [(a, b) for a, b in zip(original.splitlines(), ours.splitlines()) if a != b]
    assert len(changed) == 2, changed
    theirs = _run(original)
    mine = _run(ours)
    assert mine["counts"] == theirs["counts"]
    assert all(0.0 <= s <= 1.0 for s in mine["scores"])  # ours: one [0, 1] scale
    mine["vector_store"].close()
