"""The LlamaIndex adapter with real LlamaIndex classes, the real offline model and real Qdrant.

Where an LLM is needed it is LlamaIndex's own mock (MockLLM, which echoes its prompt, and
MockFunctionCallingLLM), named in the test. The corpus is tiny: four short documents, built once
per module.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any, List

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document as LIDocument
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLM, MockLLM
from llama_index.core.node_parser import get_leaf_nodes, get_root_nodes
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import QueryEngineTool, RetrieverTool

from drag_knee_retriever import BuildConfig, ConfigError, InvalidDocumentError, InvalidQueryError, LeafConfig
from drag_knee_retriever.build._builder import build_trees
from drag_knee_retriever.errors import InvalidScoresError
from drag_knee_retriever.integrations.llamaindex import (
    DragKneeRetriever,
    DragTreeNodeParser,
    KneeNodePostprocessor,
    from_llamaindex_documents,
    index_parsed_nodes,
    to_text_node,
    to_tree_node,
)

BUILD = BuildConfig(leaves=LeafConfig(min_chars=50))


def corpus() -> List[LIDocument]:
    """Three pages of one PDF as llama-index-readers-file's PDFReader yields them (file_name +
    page_label, one Document per page), and three text documents with stable ids."""
    pages = [
        "Honeybee colony collapse: worker bees abandon the hive, leaving the queen, brood and stores "
        "behind. Beekeepers first reported the losses in large numbers in the winter of 2006.",
        "Varroa mites feed on developing bees and spread deformed wing virus through the colony. "
        "Untreated colonies carrying heavy mite loads rarely survive a second winter.",
        "Neonicotinoid pesticides impair the foraging and navigation of honeybees, so that fewer "
        "foragers find their way back to the hive after visiting treated crops.",
    ]
    docs = [
        LIDocument(text=t, id_=f"bees-page-{i}", metadata={"file_name": "bees.pdf", "page_label": str(i + 1), "author": "A. Apiarist"})
        for i, t in enumerate(pages)
    ]
    docs += [
        LIDocument(
            id_="volcanoes",
            text=(
                "Volcanoes erupt when magma rises through fractures in the crust and pressure from "
                "dissolved gases is released at the surface.\n\n"
                "Basaltic lava is hot and runny and builds broad shield volcanoes such as those of Hawaii.\n\n"
                "Andesitic magma is viscous and traps gas, so stratovolcanoes erupt explosively."
            ),
            metadata={"topic": "geology", "tags": ["hazards"]},
        ),
        LIDocument(
            id_="sourdough",
            text=(
                "A sourdough starter is a culture of wild yeast and lactic acid bacteria kept alive "
                "by regular feedings of flour and water.\n\n"
                "Long cold fermentation in the refrigerator develops the sour flavour and an open crumb.\n\n"
                "Bake the loaf in a preheated Dutch oven so that steam keeps the crust soft while it expands."
            ),
            metadata={"topic": "baking"},
        ),
        LIDocument(
            id_="rust",
            text=(
                "The Rust borrow checker enforces that a value has either one mutable reference or any "
                "number of shared references at a time.\n\n"
                "Lifetimes tell the compiler how long references stay valid, which prevents dangling pointers."
            ),
            metadata={"topic": "programming"},
        ),
    ]
    return docs


@pytest.fixture(scope="module")
def parsed_nodes() -> List[Any]:
    """The corpus through DragTreeNodeParser inside a real IngestionPipeline."""
    pipeline = IngestionPipeline(transformations=[DragTreeNodeParser(build=BUILD)])
    return pipeline.run(documents=corpus())


@pytest.fixture(scope="module")
def retriever(parsed_nodes: List[Any], make_index: Any) -> Any:
    """An index fed the pipeline's nodes directly (no second build of the trees)."""
    index = make_index(collection="llamaindex_adapter", build=BUILD)
    return DragKneeRetriever.from_nodes(parsed_nodes, index=index)


@pytest.fixture(scope="module")
def index(retriever: DragKneeRetriever) -> Any:
    return retriever.index


# ---------------------------------------------------------------------------------------------
# the node parser
# ---------------------------------------------------------------------------------------------


def test_node_parser_in_ingestion_pipeline_links_parent_and_child(parsed_nodes: List[Any]) -> None:
    roots = get_root_nodes(parsed_nodes)
    leaves = get_leaf_nodes(parsed_nodes)
    # One root per document (the PDF's pages form one tree); 3 pages + 3 + 3 + 2 paragraphs.
    assert sorted(r.metadata["drag_doc_id"] for r in roots) == ["bees.pdf", "rust", "sourdough", "volcanoes"]
    assert len(leaves) == 11
    by_id = {n.node_id: n for n in parsed_nodes}
    for node in parsed_nodes:
        parent = node.parent_node
        if parent is not None:
            assert node.node_id in [c.node_id for c in by_id[parent.node_id].child_nodes]
        for child in node.child_nodes or []:
            assert by_id[child.node_id].parent_node.node_id == node.node_id
    # Leaves of a tree are chained in reading order.
    bee_leaves = sorted((n for n in leaves if n.metadata["drag_doc_id"] == "bees.pdf"),
                        key=lambda n: n.metadata["drag_first_leaf"])
    assert [n.metadata["drag_first_page"] for n in bee_leaves] == [1, 2, 3]
    assert bee_leaves[0].relationships[NodeRelationship.NEXT].node_id == bee_leaves[1].node_id
    assert bee_leaves[2].relationships[NodeRelationship.PREVIOUS].node_id == bee_leaves[1].node_id
    # Page keys differ per page, so the merged document keeps only what the pages share.
    assert "page_label" not in roots[0].metadata and bee_leaves[0].metadata["author"] == "A. Apiarist"


def test_node_parser_matches_the_core_builder_and_round_trips() -> None:
    docs = corpus()
    parsed = DragTreeNodeParser(build=BUILD).get_nodes_from_documents(docs)
    built = build_trees(from_llamaindex_documents(docs), BUILD)
    assert sorted(n.node_id for n in parsed) == sorted(n.id for n in built)
    # Every parsed node converts back into exactly the TreeNode the builder made.
    by_id = {n.id: n for n in built}
    for node in parsed:
        assert to_tree_node(node) == by_id[node.node_id]
    for node in built:
        assert to_tree_node(to_text_node(node)) == node


def test_node_parser_errors_on_documents_without_text() -> None:
    with pytest.raises(InvalidDocumentError, match="empty"):
        DragTreeNodeParser().get_nodes_from_documents([LIDocument(text="fine text"), LIDocument(text="  ")])
    with pytest.raises(InvalidDocumentError, match="JSON"):
        DragTreeNodeParser().get_nodes_from_documents(
            [LIDocument(text="fine text", metadata={"when": datetime.datetime(2024, 1, 1)})]
        )


def test_index_ingests_parsed_nodes_directly(index: Any, parsed_nodes: List[Any]) -> None:
    stats = index.stats()
    assert stats["documents"] == 4 and stats["nodes"] == len(parsed_nodes)
    report = index_parsed_nodes(index, parsed_nodes)  # same trees again: nothing to write
    assert sorted(report.unchanged) == ["bees.pdf", "rust", "sourdough", "volcanoes"]
    assert report.nodes_written == 0


def test_foreign_nodes_are_rejected_and_nothing_is_ingested(index: Any, parsed_nodes: List[Any]) -> None:
    before = index.stats()["nodes"]
    foreign = TextNode(text="a node from another parser")
    with pytest.raises(InvalidDocumentError, match="DragTreeNodeParser"):
        index_parsed_nodes(index, [*parsed_nodes[:2], foreign])
    assert index.stats()["nodes"] == before


# ---------------------------------------------------------------------------------------------
# the retriever
# ---------------------------------------------------------------------------------------------


def test_retrieve_returns_text_nodes_with_metadata_and_relationships(retriever: DragKneeRetriever) -> None:
    results = retriever.retrieve("why do varroa mites kill honeybee colonies?")
    assert results and all(isinstance(r, NodeWithScore) and isinstance(r.node, TextNode) for r in results)
    top = results[0]
    meta = top.node.metadata
    assert meta["drag_doc_id"] == "bees.pdf" and meta["author"] == "A. Apiarist"
    assert top.score == pytest.approx(meta["drag_score"])
    assert "Varroa mites" in top.node.text
    assert top.node.ref_doc_id == "bees.pdf"
    if meta["drag_is_leaf"]:
        assert top.node.relationships[NodeRelationship.PARENT].node_id == meta["drag_parent_id"]
    else:
        assert len(top.node.child_nodes) >= 2
    # Bookkeeping stays out of the LLM's view, except the span label and document id.
    llm_text = top.node.get_content(metadata_mode="llm")
    assert "drag_span" in llm_text and "drag_score" not in llm_text and "author" in llm_text


def test_metadata_lists_round_trip(retriever: DragKneeRetriever) -> None:
    top = retriever.retrieve("explosive eruptions of viscous andesitic magma")[0]
    assert top.node.metadata["tags"] == ["hazards"] and top.node.metadata["topic"] == "geology"


async def test_aretrieve_is_native_async_and_matches_retrieve(retriever: DragKneeRetriever) -> None:
    from llama_index.core.retrievers import BaseRetriever

    assert type(retriever)._aretrieve is not BaseRetriever._aretrieve
    query = "how does the borrow checker prevent dangling pointers?"
    sync_ids = [r.node.node_id for r in retriever.retrieve(query)]
    async_results = await retriever.aretrieve(query)
    assert [r.node.node_id for r in async_results] == sync_ids
    assert async_results[0].node.metadata["drag_doc_id"] == "rust"


def test_query_bundle_embedding_is_used_when_its_size_fits(retriever: DragKneeRetriever, index: Any) -> None:
    # The text matches nothing by keyword; only the supplied vector (of a sourdough question)
    # can lead the search to the sourdough document.
    embedding = list(index.encoder.encode_query("feeding a wild yeast starter with flour").dense)
    results = retriever.retrieve(QueryBundle("zzqx", embedding=embedding))
    assert results[0].node.metadata["drag_doc_id"] == "sourdough"


def test_query_bundle_embedding_of_another_size_is_ignored(retriever: DragKneeRetriever, caplog: Any) -> None:
    with caplog.at_level(logging.WARNING, logger="drag_knee_retriever.integrations.llamaindex"):
        results = retriever.retrieve(QueryBundle("shield volcano basalt lava", embedding=[0.5] * 1536))
    assert "1536 dimensions" in caplog.text
    assert results[0].node.metadata["drag_doc_id"] == "volcanoes"


def test_similarity_top_k_caps_the_results(index: Any) -> None:
    assert len(DragKneeRetriever(index, similarity_top_k=1).retrieve("bread")) == 1
    fixed = DragKneeRetriever(index, method="fixed", beam_width=3)
    assert [r.node.node_id for r in fixed.retrieve("bread", similarity_top_k=2)] == \
        [r.node.node_id for r in fixed.retrieve("bread")][:2]
    one_doc = DragKneeRetriever(index, filters={"topic": "baking"}).retrieve("volcano")
    assert {r.node.metadata["drag_doc_id"] for r in one_doc} == {"sourdough"}


def test_per_call_options_like_langchain(index: Any) -> None:
    retriever = DragKneeRetriever(index, method="fixed", beam_width=3)
    assert len(retriever.retrieve("bread", similarity_top_k=2)) == 2
    assert len(retriever.retrieve("bread", similarity_top_k=1)) == 1
    one_doc = retriever.retrieve("volcano", filters={"topic": "baking"})
    assert {r.node.metadata["drag_doc_id"] for r in one_doc} == {"sourdough"}
    # The options were for that call only: the retriever's own settings apply again.
    assert {r.node.metadata["drag_doc_id"] for r in retriever.retrieve("volcano")} != {"sourdough"}
    with pytest.raises(InvalidQueryError, match="top_k"):
        retriever.retrieve("bread", top_k=3)
    with pytest.raises(ConfigError):
        retriever.retrieve("bread", similarity_top_k=0)


async def test_per_call_options_async(index: Any) -> None:
    retriever = DragKneeRetriever(index, method="fixed", beam_width=3)
    results = await retriever.aretrieve("bread", similarity_top_k=2)
    assert len(results) == 2


@pytest.mark.parametrize("query", [123, None, "", "   ", QueryBundle("")])
def test_bad_queries_are_rejected(retriever: DragKneeRetriever, query: Any) -> None:
    with pytest.raises(InvalidQueryError):
        retriever.retrieve(query)


async def test_bad_query_async(retriever: DragKneeRetriever) -> None:
    with pytest.raises(InvalidQueryError, match="string"):
        await retriever.aretrieve(42)


def test_bad_settings_and_documents(index: Any) -> None:
    with pytest.raises(ValueError, match="similarity_top_k must be"):
        DragKneeRetriever(index, similarity_top_k=0)
    with pytest.raises(TypeError, match="DragKneeIndex"):
        DragKneeRetriever("not an index")
    with pytest.raises(TypeError, match="'similarity_topk' \\(did you mean 'similarity_top_k'\\?\\)"):
        DragKneeRetriever(index, similarity_topk=2)
    with pytest.raises(InvalidQueryError, match="'beam_widht' \\(did you mean 'beam_width'\\?\\)"):
        DragKneeRetriever(index).retrieve("tides", beam_widht=2)
    before = index.stats()["nodes"]
    with pytest.raises(InvalidDocumentError, match=r"documents\[1\].*JSON"):
        DragKneeRetriever.from_documents(
            [LIDocument(text="A good note about tides.", id_="tides"),
             LIDocument(text="bad", metadata={"seen": datetime.date(2024, 5, 1)})],
            index=index,
        )
    assert index.stats()["nodes"] == before


# ---------------------------------------------------------------------------------------------
# query engines, tools, agents (LlamaIndex's mock LLMs)
# ---------------------------------------------------------------------------------------------


def test_query_engine_with_mock_llm(retriever: DragKneeRetriever) -> None:
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query("What do neonicotinoid pesticides do to honeybees?")
    assert response.source_nodes[0].node.metadata["drag_doc_id"] == "bees.pdf"
    # MockLLM answers with the prompt it was given: our context is in it.
    assert "Neonicotinoid pesticides impair the foraging" in str(response)


async def test_query_engine_async_with_mock_llm_and_knee_postprocessor(retriever: DragKneeRetriever, index: Any) -> None:
    fixed = DragKneeRetriever(index, similarity_top_k=4)
    engine = RetrieverQueryEngine.from_args(fixed, llm=MockLLM(), node_postprocessors=[KneeNodePostprocessor()])
    response = await engine.aquery("lactic acid bacteria in a sourdough starter")
    assert 1 <= len(response.source_nodes) <= 4
    assert response.source_nodes[0].node.metadata["drag_doc_id"] == "sourdough"
    assert "wild yeast and lactic acid bacteria" in str(response)


def test_retriever_tool_and_query_engine_tool(retriever: DragKneeRetriever) -> None:
    tool = RetrieverTool.from_defaults(retriever=retriever, name="search_notes", description="Search the notes.")
    output = tool.call(input="shield volcanoes of basaltic lava")
    assert "shield volcanoes such as those of Hawaii" in output.content
    assert output.raw_output[0].node.metadata["drag_doc_id"] == "volcanoes"
    engine_tool = QueryEngineTool.from_defaults(
        RetrieverQueryEngine.from_args(retriever, llm=MockLLM()), name="ask_notes", description="Ask the notes."
    )
    answer = engine_tool.call(input="How do lifetimes prevent dangling pointers?")
    assert "Lifetimes tell the compiler" in answer.content


def test_agent_tool_call_with_mock_function_calling_llm(retriever: DragKneeRetriever) -> None:
    tool = RetrieverTool.from_defaults(retriever=retriever, name="search_notes", description="Search the notes.")

    def respond(messages: Any, **kwargs: Any) -> ChatMessage:
        # The fake model's script: call the tool with the user's question.
        from llama_index.core.base.llms.types import ToolCallBlock

        question = messages[-1].content
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[
            ToolCallBlock(tool_call_id="call-1", tool_name="search_notes", tool_kwargs={"input": question})
        ])

    llm = MockFunctionCallingLLM(response_generator=respond)
    response = llm.predict_and_call([tool], user_msg="What spreads deformed wing virus?")
    source = response.sources[0]
    assert source.tool_name == "search_notes"
    assert source.raw_output[0].node.metadata["drag_doc_id"] == "bees.pdf"
    assert "deformed wing virus" in str(response)


# ---------------------------------------------------------------------------------------------
# KneeNodePostprocessor (pure: any retriever's scored list)
# ---------------------------------------------------------------------------------------------

# Normalised (x = i / 6, y = (s - 0.05) / 0.95), the signed distances from the chord are
# (1 - x - y) / sqrt 2 = 0, -0.08, -0.16, +0.24, +0.16, +0.08, 0: the farthest point is the fourth,
# below the chord, i.e. the first of the flat tail, so the knee keeps the three before it.
KNOWN_SCORES = [1.0, 0.95, 0.9, 0.2, 0.15, 0.1, 0.05]


def _scored(scores: List[Any]) -> List[NodeWithScore]:
    return [NodeWithScore(node=TextNode(text=f"node {i}", id_=f"n{i}"), score=s) for i, s in enumerate(scores)]


def test_knee_postprocessor_cuts_a_list_whose_knee_is_known() -> None:
    kept = KneeNodePostprocessor().postprocess_nodes(_scored(KNOWN_SCORES), query_str="q")
    assert [n.node.node_id for n in kept] == ["n0", "n1", "n2"]


async def test_knee_postprocessor_async_and_distances() -> None:
    kept = await KneeNodePostprocessor().apostprocess_nodes(_scored(KNOWN_SCORES))
    assert len(kept) == 3
    distances = [1 - s for s in KNOWN_SCORES]
    assert len(KneeNodePostprocessor(higher_is_better=False).postprocess_nodes(_scored(distances))) == 3


def test_knee_postprocessor_errors_are_clear() -> None:
    with pytest.raises(InvalidScoresError, match=r"nodes\[2\] has score None"):
        KneeNodePostprocessor().postprocess_nodes(_scored([0.9, 0.5, None]))
    with pytest.raises(InvalidScoresError, match="best first"):
        KneeNodePostprocessor().postprocess_nodes(_scored(KNOWN_SCORES[::-1]))
    with pytest.raises(ValueError):
        KneeNodePostprocessor(sensitivity=2.0)
    assert KneeNodePostprocessor().postprocess_nodes([]) == []
    assert len(KneeNodePostprocessor().postprocess_nodes(_scored([0.9, 0.1]))) == 2


# ---------------------------------------------------------------------------------------------
# the README example (copied verbatim into the README's LlamaIndex section)
# ---------------------------------------------------------------------------------------------


def test_readme_example_llamaindex_query_engine_with_mock_llm() -> None:
    # README-START llamaindex
    from llama_index.core import Document
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.llms.mock import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever, DragTreeNodeParser

    docs = [
        Document(id_="reefs", text="Coral reefs cover less than one percent of the ocean floor but shelter "
                 "a quarter of all marine species.\n\nMarine heatwaves bleach corals: stressed polyps expel "
                 "the algae that feed them and turn white."),
        Document(id_="mangroves", text="Mangrove forests protect coastlines from storm surges and store "
                 "carbon in waterlogged soil."),
    ]
    # The parser builds the trees (PARENT/CHILD linked); the index ingests its nodes as they are.
    nodes = IngestionPipeline(transformations=[DragTreeNodeParser()]).run(documents=docs)
    retriever = DragKneeRetriever.from_nodes(nodes)  # or DragKneeRetriever.from_documents(docs)

    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())  # your LLM here
    response = engine.query("Why do corals bleach?")
    for hit in response.source_nodes:
        print(hit.score, hit.node.metadata["drag_doc_id"], hit.node.metadata["drag_span"])
    # README-END llamaindex
    assert response.source_nodes[0].node.metadata["drag_doc_id"] == "reefs"
    assert "expel the algae" in str(response)
    retriever.index.close()
