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


def _swapped(script: str, theirs: dict, ours: dict, changed_lines: int) -> tuple:
    original, mine = script.format(**theirs), script.format(**ours)
    changed = [(a, b) for a, b in zip(original.splitlines(), mine.splitlines()) if a != b]
    assert len(changed) == changed_lines, changed
    return original, mine


def test_a_langchain_qdrant_script_runs_with_only_the_constructor_changed():
    pytest.importorskip("langchain_qdrant")
    theirs_lines = dict(import_line="from langchain_qdrant import QdrantVectorStore",
                        constructor_line='store = QdrantVectorStore.from_documents(docs, embeddings, location=":memory:", '
                                         'collection_name="my_documents")')
    ours_lines = dict(import_line="from drag_knee_retriever.integrations.langchain import DragKneeVectorStore",
                      constructor_line='store = DragKneeVectorStore.from_documents(docs, embeddings, location=":memory:", '
                                       'collection_name="my_documents")')
    original, ours_script = _swapped(LANGCHAIN_QDRANT_SCRIPT, theirs_lines, ours_lines, changed_lines=2)
    theirs, mine = _run(original), _run(ours_script)
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
    theirs_lines = dict(import_line="from llama_index.vector_stores.qdrant import QdrantVectorStore",
                        constructor_line='vector_store = QdrantVectorStore(client=client, collection_name="docs")')
    ours_lines = dict(import_line="from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore",
                      constructor_line='vector_store = DragKneeVectorStore(client=client, collection_name="docs")')
    original, ours_script = _swapped(LLAMAINDEX_SCRIPT, theirs_lines, ours_lines, changed_lines=2)
    theirs, mine = _run(original), _run(ours_script)
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
    theirs_lines = dict(import_line="from langchain_qdrant import QdrantVectorStore",
                        constructor_line='store = QdrantVectorStore.from_documents(docs, embeddings, location=":memory:", '
                                         'collection_name="reef_pages")')
    ours_lines = dict(import_line="from drag_knee_retriever.integrations.langchain import DragKneeVectorStore",
                      constructor_line='store = DragKneeVectorStore.from_documents(docs, embeddings, location=":memory:", '
                                       'collection_name="reef_pages")')
    original, ours_script = _swapped(LANGCHAIN_ISSUE40_SCRIPT, theirs_lines, ours_lines, changed_lines=2)
    theirs, mine = _run(original), _run(ours_script)
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
    theirs_lines = dict(import_line="from llama_index.vector_stores.qdrant import QdrantVectorStore",
                        constructor_line='vector_store = QdrantVectorStore(client=client, collection_name="chunks")')
    ours_lines = dict(import_line="from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore",
                      constructor_line='vector_store = DragKneeVectorStore(client=client, collection_name="chunks")')
    original, ours_script = _swapped(LLAMAINDEX_ISSUE40_SCRIPT, theirs_lines, ours_lines, changed_lines=2)
    theirs, mine = _run(original), _run(ours_script)
    assert mine["counts"] == theirs["counts"]
    assert all(0.0 <= s <= 1.0 for s in mine["scores"])  # ours: one [0, 1] scale
    mine["vector_store"].close()




# Issue 40 item 6 and 7: the anchors' surface (client, collection_name, from_existing_collection,
# MMR) and a misspelt collection name, which langchain-qdrant refuses (ours opened an empty index).
LANGCHAIN_SURFACE_SCRIPT = textwrap.dedent('''
    import tempfile
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    {import_line}

    embeddings = DeterministicFakeEmbedding(size=64)  # your embedding model
    folder = tempfile.mkdtemp()
    docs = [Document(page_content=text, metadata={{"source": source}}) for text, source in [
        ("Coral reefs bleach when the sea warms.", "a.txt"), ("Coral reefs bleach when the sea warms!", "b.txt"),
        ("Mangrove forests protect coastlines.", "c.txt"), ("Sourdough bread rises slowly.", "d.txt")]]
    {constructor_line}
    assert store.collection_name == "my_documents"
    assert store.client.collection_exists("my_documents")
    picked = store.max_marginal_relevance_search("coral reefs", k=2, fetch_k=4, lambda_mult=0.5)
    assert len(picked) == 2 and len({{d.page_content for d in picked}}) == 2
    assert len(store.as_retriever(search_type="mmr", search_kwargs={{"k": 2, "fetch_k": 4}}).invoke("coral")) == 2
    store.client.close()

    try:
        {bad_line}
        missing = None
    except Exception as exc:  # a misspelt name is an error naming it
        missing = str(exc)
    assert missing and "my_documnets" in missing
    {good_line}
    result = sorted(d.page_content for d in again.similarity_search("anything", k=10))
    again.client.close()
''')


def test_langchain_qdrant_surface_client_collection_mmr_and_a_misspelt_collection():
    pytest.importorskip("langchain_qdrant")
    reopen = 'again = {cls}.from_existing_collection("{{name}}", embeddings, path=folder{extra})'
    script = LANGCHAIN_SURFACE_SCRIPT
    theirs = dict(import_line="from langchain_qdrant import QdrantVectorStore",
                  constructor_line='store = QdrantVectorStore.from_documents(docs, embeddings, path=folder, '
                                   'collection_name="my_documents")',
                  bad_line=reopen.format(cls="QdrantVectorStore", extra="").format(name="my_documnets"),
                  good_line=reopen.format(cls="QdrantVectorStore", extra="").format(name="my_documents"))
    # qdrant-client local mode (what langchain-qdrant's path= is), so that there is a client
    local = ", store=StoreConfig(engine='local')"
    ours = dict(import_line="from drag_knee_retriever import StoreConfig; "
                            "from drag_knee_retriever.integrations.langchain import DragKneeVectorStore",
                constructor_line='store = DragKneeVectorStore.from_documents(docs, embeddings, path=folder, '
                                 f'collection_name="my_documents"{local})',
                bad_line=reopen.format(cls="DragKneeVectorStore", extra=local).format(name="my_documnets"),
                good_line=reopen.format(cls="DragKneeVectorStore", extra=local).format(name="my_documents"))
    original, mine = _swapped(script, theirs, ours, changed_lines=4)
    assert _run(mine)["result"] == _run(original)["result"]


def test_our_langchain_store_on_the_edge_engine_says_it_has_no_client_and_refuses_a_misspelt_name(tmp_path):
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from drag_knee_retriever import CollectionNotFoundError
    from drag_knee_retriever.integrations.langchain import DragKneeVectorStore

    emb = DeterministicFakeEmbedding(size=16)
    store = DragKneeVectorStore.from_documents([Document(page_content="Corals bleach.")], emb, path=str(tmp_path),
                                               collection_name="reefs")
    with pytest.raises(AttributeError, match="engine='local'"):
        store.client
    store.close()
    for opening in (lambda: DragKneeVectorStore.from_existing_collection("reef", emb, path=str(tmp_path)),
                    lambda: DragKneeVectorStore(embedding=emb, path=str(tmp_path), collection_name="reef")):
        with pytest.raises(CollectionNotFoundError, match=r"'reef' does not exist.*\['reefs'\]"):
            opening()
    assert not (tmp_path / "reef").exists()  # nothing was created for the misspelt name
    with DragKneeVectorStore.from_existing_collection("reefs", emb, path=str(tmp_path)).index as index:
        assert index.stats()["documents"] == 1


LLAMAINDEX_SURFACE_SCRIPT = textwrap.dedent('''
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
    from qdrant_client import QdrantClient
    {import_line}

    embed_model = MockEmbedding(embed_dim=8)  # your embedding model
    docs = [Document(id_=name, text=text, metadata={{"topic": topic}}) for name, text, topic in [
        ("reefs", "Coral reefs bleach when the sea warms.", "sea"), ("tides", "Tides follow the moon.", "sea"),
        ("bread", "Sourdough bread rises slowly.", "food")]]
    client = QdrantClient(":memory:")
    {constructor_line}
    IngestionPipeline(transformations=[SentenceSplitter(), embed_model], vector_store=vector_store).run(documents=docs)
    assert vector_store.client is client and vector_store.collection_name == "docs"
    sea = MetadataFilters(filters=[MetadataFilter(key="topic", value="sea")])
    found = sorted(n.get_content() for n in vector_store.get_nodes(filters=sea))
    vector_store.delete_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="topic", value="food")]))
    remaining = sorted(n.metadata["topic"] for n in vector_store.get_nodes())

    {typo_line}
    try:
        VectorStoreIndex.from_vector_store(typo, embed_model=embed_model).as_retriever().retrieve("corals")
        missing = None
    except Exception as exc:  # a misspelt collection is an error naming it
        missing = str(exc)
    assert missing and "dosc" in missing
    assert not client.collection_exists("dosc")  # a read made no collection of the misspelt name
''')


def test_llamaindex_qdrant_surface_client_filters_and_a_misspelt_collection():
    pytest.importorskip("llama_index.vector_stores.qdrant")
    theirs = dict(import_line="from llama_index.vector_stores.qdrant import QdrantVectorStore",
                  constructor_line='vector_store = QdrantVectorStore(client=client, collection_name="docs")',
                  typo_line='typo = QdrantVectorStore(client=client, collection_name="dosc")')
    ours = dict(import_line="from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore",
                constructor_line='vector_store = DragKneeVectorStore(client=client, collection_name="docs")',
                typo_line='typo = DragKneeVectorStore(client=client, collection_name="dosc")')
    original, mine = _swapped(LLAMAINDEX_SURFACE_SCRIPT, theirs, ours, changed_lines=3)
    theirs_ns, mine_ns = _run(original), _run(mine)
    assert mine_ns["found"] == theirs_ns["found"] == ["Coral reefs bleach when the sea warms.", "Tides follow the moon."]
    assert mine_ns["remaining"] == theirs_ns["remaining"] == ["sea", "sea"]


# Issue 40 item 2: the user's embedding model (Settings.embed_model) is the store's, and the
# embeddings an IngestionPipeline computed are the leaves' vectors, not computed again.
LLAMAINDEX_SETTINGS_SCRIPT = textwrap.dedent('''
    from llama_index.core import Document, Settings, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from qdrant_client import QdrantClient
    {import_line}

    class CountingEmbedding(MockEmbedding):  # your embedding model, counting what it embeds
        def _get_text_embeddings(self, texts):
            embedded.extend(texts)
            return super()._get_text_embeddings(texts)

    embedded = []
    Settings.embed_model = CountingEmbedding(embed_dim=8)
    text = " ".join(f"Paragraph {{i}} says coral reefs bleach when the sea warms by {{i}} degrees." for i in range(12))
    docs = [Document(id_="reefs", text=text), Document(id_="bread", text="Sourdough bread rises slowly.")]
    client = QdrantClient(":memory:")
    {constructor_line}
    pipeline = IngestionPipeline(transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0),
                                                  Settings.embed_model], vector_store=vector_store)
    nodes = pipeline.run(documents=docs)
    hits = VectorStoreIndex.from_vector_store(vector_store).as_retriever(similarity_top_k=2).retrieve("corals")
    assert hits and all(isinstance(h.score, float) for h in hits)
''')


def test_llamaindex_settings_embed_model_is_used_and_pipeline_embeddings_are_not_recomputed():
    pytest.importorskip("llama_index.vector_stores.qdrant")
    from llama_index.core import Settings

    theirs = dict(import_line="from llama_index.vector_stores.qdrant import QdrantVectorStore",
                  constructor_line='vector_store = QdrantVectorStore(client=client, collection_name="docs")')
    ours = dict(import_line="from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore",
                constructor_line='vector_store = DragKneeVectorStore(client=client, collection_name="docs")')
    original, mine = _swapped(LLAMAINDEX_SETTINGS_SCRIPT, theirs, ours, changed_lines=2)
    saved = Settings._embed_model
    try:
        theirs_ns, mine_ns = _run(original), _run(mine)
    finally:
        Settings._embed_model = saved
    chunks = [n.get_content(metadata_mode="embed") for n in mine_ns["nodes"]]
    assert len(chunks) > 2  # the long document is several chunks: one tree with inner nodes
    assert sorted(theirs_ns["embedded"]) == sorted(chunks)  # the pipeline embedded each chunk once
    index = mine_ns["vector_store"].index
    assert index.encoder.model_id.startswith("llamaindex:CountingEmbedding")  # the user's model, not MiniLM
    # Ours embedded no chunk again: the pipeline's embeddings are the leaves' vectors; only the
    # inner nodes (the summaries above the chunks) were encoded, with the same model.
    stats = index.stats()
    assert stats["nodes"] > stats["leaves"]
    assert len(mine_ns["embedded"]) == len(chunks) + stats["nodes"] - stats["leaves"]
    mine_ns["vector_store"].close()


# Issue 40 item 10: LangChain's index() on an edited source re-encodes what changed, not the
# pages its incremental cleanup removed from the store in one batch and added back in the next.
def test_langchain_index_api_on_an_edited_source_reuses_the_unchanged_pages_vectors():
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.indexing import InMemoryRecordManager, index

    from drag_knee_retriever.integrations.langchain import DragKneeVectorStore

    encoded = []

    class CountingFakeEmbedding(DeterministicFakeEmbedding):
        def embed_documents(self, texts):
            encoded.extend(texts)
            return super().embed_documents(texts)

    def page(i, version=0):
        return Document(page_content=f"Page {i}, version {version}: coral reef survey number {i * 7 + version}.",
                        metadata={"source": "report.pdf", "page": i})

    store = DragKneeVectorStore.from_documents([], CountingFakeEmbedding(size=16))
    records = InMemoryRecordManager("reports")
    records.create_schema()
    pages = [page(i) for i in range(30)]
    first = index(pages, records, store, cleanup="incremental", source_id_key="source", batch_size=10)
    assert first["num_added"] == 30
    encoded.clear()
    pages[4] = page(4, version=1)
    second = index(pages, records, store, cleanup="incremental", source_id_key="source", batch_size=10)
    # LangChain's cleanup after the first batch removed pages 10-29; the next batches add them back.
    assert second["num_deleted"] == second["num_added"] == 21
    leaves = [store.index.vectorizer.dense_text(n) for n in store.index.store.scroll_nodes() if n.is_leaf]
    unchanged = {t for t in leaves if "Page 4," not in t}
    assert len(unchanged) > 20 and not unchanged & set(encoded)  # no unchanged page's leaf again (was 20 of 40)
    store.close()


def test_langchain_index_api_keeps_the_edited_page():
    # Found in issue 40: index() adds the new page 4 beside the old one, then deletes the old one's
    # id, which removed every document on that page (locate() answered the page-mates too).
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.indexing import InMemoryRecordManager, index

    from drag_knee_retriever.integrations.langchain import DragKneeVectorStore

    def page(i, version=0):
        return Document(page_content=f"Page {i}, version {version}: coral reef survey number {i * 7 + version}.",
                        metadata={"source": "report.pdf", "page": i})

    store = DragKneeVectorStore.from_documents([], DeterministicFakeEmbedding(size=16))
    records = InMemoryRecordManager("reports")
    records.create_schema()
    pages = [page(i) for i in range(30)]
    index(pages, records, store, cleanup="incremental", source_id_key="source", batch_size=10)
    pages[4] = page(4, version=1)
    index(pages, records, store, cleanup="incremental", source_id_key="source", batch_size=10)
    try:
        assert sorted(d.page_content for d in store.similarity_search("coral", k=40)) == sorted(
            p.page_content for p in pages)
    finally:
        store.close()


# Issue 40 item 8: pre-chunked text (a splitter's chunks of a .txt, no page numbers) is labelled as
# chunks, not pages, and a parent joining overlapping chunks reads the text once.
CHUNKS_SCRIPT = textwrap.dedent('''
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    {import_line}

    embeddings = DeterministicFakeEmbedding(size=32)  # your embedding model
    text = " ".join(f"Section {{i}}. Coral reefs in region {{i}} bleached when the water warmed by {{i % 4}} degrees; "
                    f"divers counted {{i * 13}} colonies." for i in range(40))
    splitter = RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=80, add_start_index={start_index})
    chunks = splitter.split_documents([Document(page_content=text, metadata={{"source": "reefs.txt"}})])
    {constructor_line}
    found = sorted(d.page_content for d in store.similarity_search("colonies counted in region 12", k=len(chunks)))
''')


@pytest.mark.parametrize("start_index", [True, False])
def test_splitter_chunks_are_labelled_as_chunks_and_parents_do_not_repeat_the_overlap(start_index):
    pytest.importorskip("langchain_qdrant")
    pytest.importorskip("langchain_text_splitters")
    theirs = dict(import_line="from langchain_qdrant import QdrantVectorStore", start_index=start_index,
                  constructor_line='store = QdrantVectorStore.from_documents(chunks, embeddings, location=":memory:", '
                                   'collection_name="chunks")')
    ours = dict(import_line="from drag_knee_retriever.integrations.langchain import DragKneeVectorStore",
                start_index=start_index,
                constructor_line='store = DragKneeVectorStore.from_documents(chunks, embeddings, location=":memory:", '
                                 'collection_name="chunks")')
    original, mine = _swapped(CHUNKS_SCRIPT, theirs, ours, changed_lines=2)
    theirs_ns, mine_ns = _run(original), _run(mine)
    assert mine_ns["found"] == theirs_ns["found"]  # the chunks come back as they were given
    store, text = mine_ns["store"], mine_ns["text"]
    chunks = mine_ns["chunks"]
    # The splitter overlapped its chunks (else this test would show nothing).
    assert any(a.page_content[-30:] in b.page_content for a, b in zip(chunks, chunks[1:]))
    hits = store.as_retriever(search_kwargs={"k": 4}).invoke("colonies counted in region 12")
    parents = store.get_by_ids([h.metadata["drag_parent_id"] for h in hits if h.metadata.get("drag_parent_id")])
    assert parents
    for node in [*hits, *parents]:
        assert node.metadata["drag_span"].startswith("chunk") and node.metadata["drag_first_page"] is None
        first, last = node.metadata["drag_first_chunk"], node.metadata["drag_last_chunk"]
        assert node.metadata["drag_span"] == (f"chunk {first}" if first == last else f"chunks {first}-{last}")
        # the span's text is the source text once (chunks joined without their overlap)
        assert " ".join(node.page_content.split()) in text, node.page_content
    assert any(p.metadata["drag_first_chunk"] < p.metadata["drag_last_chunk"] for p in parents)
    store.close()


def test_our_llamaindex_store_on_a_folder_reads_no_misspelt_collection_and_creates_one_on_add(tmp_path):
    pytest.importorskip("llama_index.core")
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from drag_knee_retriever import CollectionNotFoundError
    from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore

    embed_model = MockEmbedding(embed_dim=8)
    store = DragKneeVectorStore(path=str(tmp_path), collection_name="reefs", embed_model=embed_model)
    store.add([TextNode(id_="a", text="Corals bleach in warm water.")])
    store.close()
    typo = DragKneeVectorStore(path=str(tmp_path), collection_name="reef", embed_model=embed_model)
    assert typo.collection_name == "reef"
    with pytest.raises(CollectionNotFoundError, match=r"'reef' does not exist.*\['reefs'\]"):
        typo.query(VectorStoreQuery(query_str="corals", similarity_top_k=2))
    with pytest.raises(CollectionNotFoundError):
        typo.get_nodes(["a"])
    typo.delete("a")  # nothing to remove, nothing made
    typo.close()
    assert not (tmp_path / "reef").exists()
    new = DragKneeVectorStore(path=str(tmp_path), collection_name="tides", embed_model=embed_model)
    new.add([TextNode(id_="t", text="Tides follow the moon.")])  # adding creates it, as in llama-index-qdrant
    assert [n.node_id for n in new.get_nodes(["t"])] == ["t"]
    new.close()
