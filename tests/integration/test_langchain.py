"""The LangChain adapter with real LangChain classes, the real offline model and real Qdrant.

Where a chat model is needed it is LangChain's own fake (FakeListChatModel / GenericFakeChatModel),
named in the test. The corpus is tiny: four short documents, built once per module.
"""

from __future__ import annotations

import datetime
from typing import Any, List

import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document as LCDocument
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.tools import create_retriever_tool

from drag_knee_retriever import BuildConfig, ConfigError, InvalidDocumentError, InvalidQueryError, LeafConfig
from drag_knee_retriever.errors import InvalidScoresError
from drag_knee_retriever.integrations.langchain import (
    DragKneeRetriever,
    KneeDocumentCompressor,
    from_langchain_documents,
)

def pdf_pages() -> List[LCDocument]:
    """Three pages of one file, shaped as langchain_community's PyPDFLoader yields them:
    ``source`` + 0-based ``page`` + ``page_label`` + ``total_pages`` (given out of order)."""
    texts = [
        "Honeybee colony collapse: worker bees abandon the hive, leaving the queen, brood and stores "
        "behind. Beekeepers first reported the losses in large numbers in the winter of 2006.",
        "Varroa mites feed on developing bees and spread deformed wing virus through the colony. "
        "Untreated colonies carrying heavy mite loads rarely survive a second winter.",
        "Neonicotinoid pesticides impair the foraging and navigation of honeybees, so that fewer "
        "foragers find their way back to the hive after visiting treated crops.",
    ]
    meta = {"source": "reports/bees.pdf", "total_pages": 3, "author": "A. Apiarist"}
    pages = [LCDocument(page_content=t, metadata={**meta, "page": i, "page_label": str(i + 1)}) for i, t in enumerate(texts)]
    return [pages[2], pages[0], pages[1]]


def corpus() -> List[LCDocument]:
    return pdf_pages() + [
        LCDocument(
            page_content=(
                "Volcanoes erupt when magma rises through fractures in the crust and pressure from "
                "dissolved gases is released at the surface.\n\n"
                "Basaltic lava is hot and runny and builds broad shield volcanoes such as those of Hawaii.\n\n"
                "Andesitic magma is viscous and traps gas, so stratovolcanoes erupt explosively."
            ),
            metadata={"source": "notes/volcanoes.txt", "tags": ["geology", "hazards"]},
        ),
        LCDocument(
            page_content=(
                "A sourdough starter is a culture of wild yeast and lactic acid bacteria kept alive "
                "by regular feedings of flour and water.\n\n"
                "Long cold fermentation in the refrigerator develops the sour flavour and an open crumb.\n\n"
                "Bake the loaf in a preheated Dutch oven so that steam keeps the crust soft while it expands."
            ),
            metadata={"source": "notes/sourdough.txt", "lang": "en"},
        ),
        LCDocument(
            id="rust-notes",
            page_content=(
                "The Rust borrow checker enforces that a value has either one mutable reference or any "
                "number of shared references at a time.\n\n"
                "Lifetimes tell the compiler how long references stay valid, which prevents dangling pointers."
            ),
            metadata={"source": "notes/rust.md"},
        ),
    ]


@pytest.fixture(scope="module")
def built_retriever(make_index: Any) -> Any:
    # Named apart from `retriever`, which langchain-tests' suite below defines for itself.
    index = make_index(collection="langchain_adapter", build=BuildConfig(leaves=LeafConfig(min_chars=50)))
    return DragKneeRetriever.from_documents(corpus(), index=index)


@pytest.fixture(scope="module")
def retriever(built_retriever: DragKneeRetriever) -> DragKneeRetriever:
    return built_retriever


@pytest.fixture(scope="module")
def index(built_retriever: DragKneeRetriever) -> Any:
    return built_retriever.index


# ---------------------------------------------------------------------------------------------
# document conversion (pure: no index)
# ---------------------------------------------------------------------------------------------


def test_pypdfloader_pages_become_one_paged_document_in_page_order() -> None:
    docs = from_langchain_documents(pdf_pages())
    assert len(docs) == 1
    doc = docs[0]
    assert doc.id == "reports/bees.pdf"
    assert doc.text is None and len(doc.pages) == 3
    assert doc.pages[0].startswith("Honeybee colony collapse")
    assert doc.pages[2].startswith("Neonicotinoid")
    # File-level metadata kept; page-specific keys dropped.
    assert doc.metadata == {"source": "reports/bees.pdf", "total_pages": 3, "author": "A. Apiarist"}


def test_page_gaps_keep_the_files_page_numbers_and_chunks_of_a_page_are_joined() -> None:
    docs = from_langchain_documents([
        LCDocument(page_content="first chunk of page three", metadata={"source": "a.pdf", "page": 2}),
        LCDocument(page_content="page one", metadata={"source": "a.pdf", "page": 0}),
        LCDocument(page_content="second chunk of page three", metadata={"source": "a.pdf", "page": 2}),
    ])
    assert list(docs[0].pages) == ["page one", "", "first chunk of page three\n\nsecond chunk of page three"]


def test_text_documents_get_stable_ids_from_id_source_or_text() -> None:
    batch = [
        LCDocument(page_content="one", metadata={"source": "s.txt"}),
        LCDocument(page_content="two", metadata={"source": "s.txt"}),
        LCDocument(page_content="three", id="given-id"),
        LCDocument(page_content="four"),
    ]
    ids = [d.id for d in from_langchain_documents(batch)]
    assert ids[:3] == ["s.txt", "s.txt#2", "given-id"]
    assert ids[3].startswith("text-")
    assert [d.id for d in from_langchain_documents(batch)] == ids  # stable across calls


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (LCDocument(page_content="   ", metadata={"source": "x"}), "empty"),
        (LCDocument(page_content="ok", metadata={"when": datetime.datetime(2024, 1, 1)}), "JSON"),
        (LCDocument(page_content="ok", metadata={"drag_score": 1.0}), "reserves"),
        ("just a string", "not a langchain_core"),
    ],
)
def test_bad_documents_are_rejected_with_the_position(bad: Any, message: str) -> None:
    with pytest.raises(InvalidDocumentError, match=message) as info:
        from_langchain_documents([LCDocument(page_content="fine"), bad])
    assert "documents[1]" in str(info.value)


# ---------------------------------------------------------------------------------------------
# KneeDocumentCompressor (pure: any retriever's scored list)
# ---------------------------------------------------------------------------------------------

# Normalised (x = i / 6, y = (s - 0.05) / 0.95), the signed distances from the chord are
# (1 - x - y) / sqrt 2 = 0, -0.08, -0.16, +0.24, +0.16, +0.08, 0: the farthest point is the fourth,
# below the chord, i.e. the first of the flat tail, so the knee keeps the three before it.
KNOWN_SCORES = [1.0, 0.95, 0.9, 0.2, 0.15, 0.1, 0.05]


def _scored(key: str, scores: List[float]) -> List[LCDocument]:
    return [LCDocument(page_content=f"doc {i}", metadata={key: s}) for i, s in enumerate(scores)]


def test_knee_compressor_cuts_a_list_whose_knee_is_known() -> None:
    kept = KneeDocumentCompressor().compress_documents(_scored("relevance_score", KNOWN_SCORES), "q")
    assert [d.page_content for d in kept] == ["doc 0", "doc 1", "doc 2"]


def test_knee_compressor_reads_a_configured_key_and_distances() -> None:
    distances = [1 - s for s in KNOWN_SCORES]  # lower is better
    compressor = KneeDocumentCompressor(score_key="dist", higher_is_better=False)
    assert len(compressor.compress_documents(_scored("dist", distances), "q")) == 3


async def test_knee_compressor_async() -> None:
    kept = await KneeDocumentCompressor().acompress_documents(_scored("score", KNOWN_SCORES), "q")
    assert len(kept) == 3


def test_knee_compressor_errors_are_clear() -> None:
    with pytest.raises(InvalidScoresError, match="score_key"):
        KneeDocumentCompressor().compress_documents(_scored("other", KNOWN_SCORES), "q")
    with pytest.raises(InvalidScoresError, match="best first"):
        KneeDocumentCompressor().compress_documents(_scored("score", KNOWN_SCORES[::-1]), "q")
    with pytest.raises(InvalidScoresError, match=r"documents\[1\]"):
        docs = _scored("score", KNOWN_SCORES)
        docs[1].metadata["score"] = "high"
        KneeDocumentCompressor(score_key="score").compress_documents(docs, "q")
    with pytest.raises(ValueError):
        KneeDocumentCompressor(sensitivity=0)
    assert KneeDocumentCompressor().compress_documents([], "q") == []


# ---------------------------------------------------------------------------------------------
# the retriever over a real index
# ---------------------------------------------------------------------------------------------


def test_from_documents_ingests_pages_as_one_tree(index: Any) -> None:
    docs = {d.doc_id: d for d in index.list_documents()}
    # One tree per source; a document's own id ("rust-notes") names it inside its source's tree.
    assert set(docs) == {"reports/bees.pdf", "notes/volcanoes.txt", "notes/sourdough.txt", "notes/rust.md"}
    bees = docs["reports/bees.pdf"]
    assert bees.leaves == 3 and (bees.first_page, bees.last_page) == (1, 3)


def test_invoke_returns_span_text_and_namespaced_metadata(retriever: DragKneeRetriever) -> None:
    docs = retriever.invoke("why do varroa mites kill honeybee colonies?")
    assert docs and all(isinstance(d, LCDocument) for d in docs)
    top = docs[0]
    meta = top.metadata
    assert meta["drag_doc_id"] == "reports/bees.pdf"
    # Source metadata round-trips next to the drag_* fields.
    assert meta["author"] == "A. Apiarist" and meta["source"] == "reports/bees.pdf"
    assert "page" not in meta
    assert top.id == meta["drag_node_id"]
    assert meta["drag_rank"] == 0 and isinstance(meta["drag_score"], float)
    assert 1 <= meta["drag_first_page"] <= meta["drag_last_page"] <= 3
    assert "Varroa mites" in top.page_content
    if not meta["drag_is_leaf"]:  # an inner node carries every page it spans, not its summary
        assert top.page_content.count("\n\n") == meta["drag_last_leaf"] - meta["drag_first_leaf"]
    assert [d.metadata["drag_rank"] for d in docs] == list(range(len(docs)))


def test_list_metadata_round_trips(retriever: DragKneeRetriever) -> None:
    docs = retriever.invoke("explosive stratovolcano eruptions of viscous magma", k=1)
    assert docs[0].metadata["tags"] == ["geology", "hazards"]


def test_k_caps_the_results_in_the_constructor_and_per_call(index: Any) -> None:
    # k is a cap; the method (the knee by default) decides how many results up to it.
    everything = DragKneeRetriever(index=index, method="fixed", beam_width=3).invoke("bread")
    assert len(everything) >= 2
    assert len(DragKneeRetriever(index=index, method="fixed", beam_width=3, k=1).invoke("bread")) == 1
    retriever = DragKneeRetriever(index=index, method="fixed", beam_width=3)
    assert [d.id for d in retriever.invoke("bread", k=2)] == [d.id for d in everything][:2]
    knee = DragKneeRetriever(index=index).invoke("bread")
    assert [d.id for d in DragKneeRetriever(index=index).invoke("bread", k=50)] == [d.id for d in knee]


def test_every_search_setting_reaches_the_index_as_index_search_would_take_it(index: Any) -> None:
    # The settings are one list (WalkOptions + filters/score_threshold, RetrieverOptions), passed through
    # under their own names: the retriever built with them, given them per call and index.search agree.
    from drag_knee_retriever import FusionConfig
    from drag_knee_retriever.integrations._common import SEARCH_SETTINGS
    from drag_knee_retriever.integrations.langchain import LangChainRetrieverOptions

    assert set(LangChainRetrieverOptions.__annotations__) <= set(DragKneeRetriever.model_fields)
    fusion = FusionConfig(weights=[(0.3, 0.7)])
    for settings, same in (
        (dict(method="fixed", beam_width=2, order="document", fusion=fusion, k=3, score_threshold=0.0),
         dict(method="fixed", beam_width=2, order="document", fusion=fusion, max_results=3, min_score=0.0)),
        (dict(method="sensitive_knee", sensitivity=0.5, max_roots=2, focus=False, filters={"source": "notes/sourdough.txt"}),
         dict(method="sensitive_knee", sensitivity=0.5, max_roots=2, focus=False, filters={"source": "notes/sourdough.txt"})),
    ):
        assert set(settings) - {"k"} <= set(SEARCH_SETTINGS)
        want = [(h.node.id, h.score) for h in index.search("bread crust", **same).nodes]
        built = DragKneeRetriever(index=index, **settings).invoke("bread crust")
        per_call = DragKneeRetriever(index=index).invoke("bread crust", **settings)
        for docs in (built, per_call):
            assert [(d.metadata["drag_node_id"], d.metadata["drag_score"]) for d in docs] == want, settings
        assert want


def test_from_documents_splits_search_settings_from_index_keywords() -> None:
    with pytest.raises(TypeError, match="'methd' \\(did you mean 'method'\\?\\)"):
        DragKneeRetriever.from_documents(corpus(), methd="knee")
    with pytest.raises(TypeError, match="'embeding' \\(did you mean 'embedding'\\?\\)"):
        DragKneeRetriever.from_documents(corpus(), embeding=None)


def test_per_call_filters(retriever: DragKneeRetriever) -> None:
    docs = retriever.invoke("honeybees", filters={"doc_id": "notes/sourdough.txt"})
    assert docs and {d.metadata["drag_doc_id"] for d in docs} == {"notes/sourdough.txt"}
    docs = retriever.invoke("anything at all", filters={"lang": "en"})
    assert {d.metadata["drag_doc_id"] for d in docs} == {"notes/sourdough.txt"}


async def test_ainvoke_is_native_async_and_matches_invoke(retriever: DragKneeRetriever) -> None:
    from langchain_core.retrievers import BaseRetriever

    assert type(retriever)._aget_relevant_documents is not BaseRetriever._aget_relevant_documents
    query = "how does the borrow checker prevent dangling pointers?"
    sync_docs = retriever.invoke(query)
    async_docs = await retriever.ainvoke(query)
    assert [d.id for d in async_docs] == [d.id for d in sync_docs]
    assert async_docs[0].metadata["drag_doc_id"] == "notes/rust.md" and async_docs[0].id == "rust-notes"


async def test_batch_and_abatch(retriever: DragKneeRetriever) -> None:
    queries = ["sourdough starter feeding", "shield volcano basalt"]
    batched = retriever.batch(queries)
    abatched = await retriever.abatch(queries)
    for docs in (batched, abatched):
        assert [d[0].metadata["drag_doc_id"] for d in docs] == ["notes/sourdough.txt", "notes/volcanoes.txt"]


class _PromptRecorder(BaseCallbackHandler):
    """Records the messages a chat model receives (a real LangChain callback)."""

    def __init__(self) -> None:
        self.prompts: List[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.prompts.extend(m.content for batch in messages for m in batch)


def _format_docs(docs: List[LCDocument]) -> str:
    return "\n\n".join(f"[{d.metadata['drag_doc_id']} {d.metadata['drag_span']}] {d.page_content}" for d in docs)


def _chain(retriever: DragKneeRetriever, answer: str) -> Any:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context only.\n\n{context}"), ("human", "{question}")]
    )
    model = FakeListChatModel(responses=[answer])
    return {"context": retriever | _format_docs, "question": RunnablePassthrough()} | prompt | model | StrOutputParser()


def test_lcel_chain_with_fake_chat_model(retriever: DragKneeRetriever) -> None:
    answer = "Varroa mites."
    recorder = _PromptRecorder()
    question = "Which mites spread deformed wing virus through honeybee colonies?"
    out = _chain(retriever, answer).invoke(question, config={"callbacks": [recorder]})
    assert out == answer
    system = recorder.prompts[0]
    assert "[reports/bees.pdf p" in system  # our document, cited with its pages
    assert "Varroa mites feed on developing bees" in system
    assert recorder.prompts[1] == question


async def test_lcel_chain_async_with_fake_chat_model(retriever: DragKneeRetriever) -> None:
    recorder = _PromptRecorder()
    out = await _chain(retriever, "Wild yeast.").ainvoke(
        "What lives in a sourdough starter?", config={"callbacks": [recorder]}
    )
    assert out == "Wild yeast."
    assert "wild yeast and lactic acid bacteria" in recorder.prompts[0]


def test_agent_tool_call_with_generic_fake_chat_model(retriever: DragKneeRetriever) -> None:
    tool = create_retriever_tool(
        retriever, "search_notes", "Search the notes and reports.", response_format="content_and_artifact"
    )
    model = GenericFakeChatModel(messages=iter([
        AIMessage(content="", tool_calls=[
            {"name": "search_notes", "args": {"query": "basaltic lava shield volcanoes"}, "id": "call-1"}
        ]),
        AIMessage(content="Basaltic lava builds shield volcanoes."),
    ]))
    messages: List[Any] = [HumanMessage("What does basaltic lava build?")]
    ai = model.invoke(messages)
    messages.append(ai)
    # The agent loop: run every tool call the model made, hand the results back.
    for call in ai.tool_calls:
        messages.append(tool.invoke({**call, "type": "tool_call"}))
    final = model.invoke(messages)
    tool_message = messages[-1]
    assert isinstance(tool_message, ToolMessage) and tool_message.tool_call_id == "call-1"
    assert "shield volcanoes such as those of Hawaii" in tool_message.content
    assert tool_message.artifact[0].metadata["drag_doc_id"] == "notes/volcanoes.txt"
    assert final.content == "Basaltic lava builds shield volcanoes."


@pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")
async def test_as_tool(retriever: DragKneeRetriever) -> None:
    tool = retriever.as_tool(name="search_notes", description="Search the notes.")
    docs = tool.invoke("lifetimes and references")
    assert docs[0].metadata["drag_doc_id"] == "notes/rust.md" and docs[0].id == "rust-notes"
    docs = await tool.ainvoke("lifetimes and references")
    assert docs[0].metadata["drag_doc_id"] == "notes/rust.md" and docs[0].id == "rust-notes"


def test_compressor_on_our_fixed_beam(index: Any) -> None:
    docs = DragKneeRetriever(index=index, k=4).invoke("honeybee pesticides")
    kept = KneeDocumentCompressor().compress_documents(docs, "honeybee pesticides")  # reads drag_score
    assert 1 <= len(kept) <= len(docs)
    assert [d.id for d in kept] == [d.id for d in docs[: len(kept)]]


# ---------------------------------------------------------------------------------------------
# bad input at the boundary
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", [123, None, ["a"], "", "   "])
def test_bad_queries_are_rejected(retriever: DragKneeRetriever, query: Any) -> None:
    with pytest.raises(InvalidQueryError):
        retriever.invoke(query)


async def test_bad_query_async(retriever: DragKneeRetriever) -> None:
    with pytest.raises(InvalidQueryError, match="string"):
        await retriever.ainvoke(42)


def test_bad_settings_fail_when_built_or_called(index: Any, retriever: DragKneeRetriever) -> None:
    # Our ConfigError itself (a ValueError), not pydantic's ValidationError around it.
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        DragKneeRetriever(index=index, k=0)
    with pytest.raises(ValueError, match="beam_width must be an integer >= 1"):
        DragKneeRetriever(index=index, beam_width=0)
    with pytest.raises(ValueError, match="sensitivity must be a number in"):
        DragKneeRetriever(index=index, sensitivity=1.5)
    with pytest.raises(ValueError, match="filter 'lang'"):
        DragKneeRetriever(index=index, filters={"lang": 1.5})
    with pytest.raises(ConfigError, match="k must be"):
        retriever.invoke("bees", k=0)
    with pytest.raises(InvalidQueryError, match="Unknown search option"):
        retriever.invoke("bees", top_k=3)
    with pytest.raises(InvalidQueryError, match="'methd' \\(did you mean 'method'\\?\\)"):
        retriever.invoke("bees", methd="knee")
    with pytest.raises(TypeError, match="DragKneeIndex"):
        DragKneeRetriever(index="not an index")
    # A misspelled keyword is a TypeError naming the keyword meant (not pydantic's "extra inputs").
    with pytest.raises(TypeError, match="'serach_kwargs' \\(did you mean 'search_kwargs'\\?\\)"):
        DragKneeRetriever(index=index, serach_kwargs={"k": 2})
    with pytest.raises(TypeError, match="'score_treshold' \\(did you mean 'score_threshold'\\?\\)"):
        DragKneeRetriever(index=index, score_treshold=0.1)


def test_bad_documents_ingest_nothing(retriever: DragKneeRetriever, index: Any) -> None:
    before = index.stats()["nodes"]
    batch = [
        LCDocument(page_content="A perfectly good note about tides and the moon.", metadata={"source": "tides.txt"}),
        LCDocument(page_content="bad metadata", metadata={"source": "b.txt", "seen": datetime.date(2024, 5, 1)}),
    ]
    with pytest.raises(InvalidDocumentError, match=r"documents\[1\].*JSON"):
        retriever.add_documents(batch)
    with pytest.raises(InvalidDocumentError, match="empty"):
        DragKneeRetriever.from_documents([LCDocument(page_content="")], index=index)
    assert index.stats()["nodes"] == before
    assert "tides.txt" not in {d.doc_id for d in index.list_documents()}


# ---------------------------------------------------------------------------------------------
# langchain-tests' standard retriever suite
# ---------------------------------------------------------------------------------------------

try:
    from langchain_tests.integration_tests import RetrieversIntegrationTests
except ImportError:  # pragma: no cover - langchain-tests is in the dev extra
    RetrieversIntegrationTests = None


if RetrieversIntegrationTests is not None:

    class TestStandardRetrieverSuite(RetrieversIntegrationTests):
        """LangChain's own retriever conformance tests, run against our index."""

        _index: Any = None

        @pytest.fixture(autouse=True)
        def _bind_index(self, index: Any) -> None:
            type(self)._index = index

        @property
        def retriever_constructor(self) -> type:
            return DragKneeRetriever

        @property
        def retriever_constructor_params(self) -> dict:
            return {"index": self._index}

        @property
        def retriever_query_example(self) -> str:
            return "what harms honeybee colonies?"

        # The suite expects k to be the exact number of results; here k caps them and the knee
        # decides how many up to the cap (issue 15 item 4). The suite documents xfail for this.
        @pytest.mark.xfail(reason="k caps the results; the method decides how many", strict=False)
        def test_k_constructor_param(self) -> None:
            super().test_k_constructor_param()

        @pytest.mark.xfail(reason="k caps the results; the method decides how many", strict=False)
        def test_invoke_with_k_kwarg(self, retriever: Any) -> None:
            super().test_invoke_with_k_kwarg(retriever)


# ---------------------------------------------------------------------------------------------
# the README example (copied verbatim into the README's LangChain section)
# ---------------------------------------------------------------------------------------------


def test_readme_example_langchain_chain_with_fake_chat_model() -> None:
    # README-START langchain
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    from drag_knee_retriever.integrations.langchain import DragKneeRetriever

    # Pages of one file, as PyPDFLoader("report.pdf").load() returns them, become ONE tree.
    docs = [
        Document(page_content="Coral reefs cover less than one percent of the ocean floor but "
                 "shelter a quarter of all marine species.", metadata={"source": "report.pdf", "page": 0}),
        Document(page_content="Marine heatwaves bleach corals: stressed polyps expel the algae "
                 "that feed them and turn white.", metadata={"source": "report.pdf", "page": 1}),
        Document(page_content="Mangrove forests protect coastlines from storm surges and store "
                 "carbon in waterlogged soil.", metadata={"source": "mangroves.txt"}),
    ]
    retriever = DragKneeRetriever.from_documents(docs)  # a new in-memory index; see DragKneeIndex


    def format_docs(docs):
        return "\n\n".join(f"[{d.metadata['source']} {d.metadata['drag_span']}] {d.page_content}" for d in docs)


    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context only.\n\n{context}"), ("human", "{question}")]
    )
    llm = FakeListChatModel(responses=["Heat makes corals expel their algae."])  # your chat model here
    chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()

    print(chain.invoke("Why do corals bleach?"))
    for doc in retriever.invoke("Why do corals bleach?"):
        print(doc.metadata["drag_span"], doc.metadata["drag_score"], doc.page_content[:60])
    # README-END langchain
    hits = retriever.invoke("Why do corals bleach?")
    assert hits[0].metadata["source"] == "report.pdf"
    assert "expel the algae" in hits[0].page_content
    assert chain.invoke("Why do corals bleach?") == "Heat makes corals expel their algae."
    retriever.index.close()
