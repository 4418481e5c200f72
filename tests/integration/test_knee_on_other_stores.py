"""Issue 27 item 9: our knee on other stores' results, as those libraries give them.

langchain-qdrant's ``as_retriever()`` puts no score in a document's metadata, so
KneeDocumentCompressor raised InvalidScoresError on it; given the store it now asks it for the
scores of exactly those points. LlamaIndex's Qdrant store returns NodeWithScore with scores, which
KneeNodePostprocessor reads in a query engine. Real langchain-qdrant / llama-index-vector-stores-
qdrant over a real QdrantClient in memory; our real MiniLM as their embedding model (wrapped).
"""

from __future__ import annotations

from typing import List

import pytest

from drag_knee_retriever import InvalidScoresError

TEXTS = [
    "Marine heatwaves bleach corals: stressed polyps expel the algae that feed them.",
    "Coral bleaching follows heat stress when the water stays warm for weeks.",
    "Bleached corals can recover if the heat stress ends soon enough.",
    "Mangrove forests protect coastlines from storm surges.",
    "Sourdough bread rises because wild yeast ferments the dough.",
    "Tidal turbines turn the ebb and flow of the sea into electricity.",
    "Basaltic lava builds broad shield volcanoes.",
    "Beekeepers first reported colony collapse in 2006.",
]


@pytest.fixture(scope="module")
def minilm(encoder):
    """Our offline MiniLM as the other library's embedding model (the same vectors we index)."""
    return encoder


def test_compressor_on_langchain_qdrant_as_retriever(minilm):
    pytest.importorskip("langchain_qdrant")
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_qdrant import QdrantVectorStore

    from drag_knee_retriever.integrations.langchain import KneeDocumentCompressor

    class MiniLM(Embeddings):
        def embed_documents(self, texts: List[str]) -> List[List[float]]:
            return [list(map(float, v)) for v in minilm.encode_dense(list(texts))]

        def embed_query(self, text: str) -> List[float]:
            return list(map(float, minilm.encode_query(text).dense))

    store = QdrantVectorStore.from_documents([Document(page_content=t, metadata={"n": i}) for i, t in enumerate(TEXTS)],
                                             MiniLM(), location=":memory:", collection_name="theirs")
    docs = store.as_retriever(search_kwargs={"k": 8}).invoke("why do corals bleach?")
    assert all("score" not in d.metadata for d in docs)  # what langchain-qdrant gives
    with pytest.raises(InvalidScoresError, match="vector_store=store"):
        KneeDocumentCompressor().compress_documents(docs, "why do corals bleach?")
    kept = KneeDocumentCompressor(vector_store=store).compress_documents(docs, "why do corals bleach?")
    assert 1 <= len(kept) < len(docs)
    assert all("coral" in d.page_content.lower() for d in kept)
    assert [d.page_content for d in kept] == [d.page_content for d in docs[: len(kept)]]

    # The wiring a langchain-qdrant user tries first, as the README gives it: the compressor over
    # their store's own retriever inside LangChain's ContextualCompressionRetriever.
    from langchain_classic.retrievers import ContextualCompressionRetriever

    wired = ContextualCompressionRetriever(base_compressor=KneeDocumentCompressor(vector_store=store),
                                           base_retriever=store.as_retriever(search_kwargs={"k": 8}))
    assert [d.page_content for d in wired.invoke("why do corals bleach?")] == [d.page_content for d in kept]


def test_postprocessor_on_llamaindex_qdrant_query_engine():
    pytest.importorskip("llama_index.vector_stores.qdrant")
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms.mock import MockLLM
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    from drag_knee_retriever.integrations.llamaindex import KneeNodePostprocessor

    store = QdrantVectorStore(client=QdrantClient(":memory:"), collection_name="theirs")
    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS],
                                            storage_context=StorageContext.from_defaults(vector_store=store),
                                            embed_model=MockEmbedding(embed_dim=8))  # a fake model
    plain = index.as_retriever(similarity_top_k=8).retrieve("corals")
    assert all(isinstance(n.score, float) for n in plain)
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=8, node_postprocessors=[KneeNodePostprocessor()])
    response = engine.query("corals")
    kept = [n.node.node_id for n in response.source_nodes]
    assert kept and kept == [n.node.node_id for n in plain[: len(kept)]]
