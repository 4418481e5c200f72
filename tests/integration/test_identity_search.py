"""Which filing: a folder of similar filings in one real index (real MiniLM + BM25, Qdrant Edge and
local mode), questions that name the company and the year. Identity matching (no model) routes
them, through the core and both adapters alike; a self-query model (each framework's fake LLM,
named as such) filters to the named filing; LLM page descriptions keep working on the same index."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback

from drag_knee_retriever import Document, FocusConfig, SearchConfig
from drag_knee_retriever.llm import LangChainSelfQuery, LlamaIndexSelfQuery

# Five filings whose statements read alike: only the file name and metadata say whose and which year.
CASH = ("CONSOLIDATED STATEMENTS OF CASH FLOWS\nPurchases of property, plant and equipment {a}\n"
        "Proceeds from sales of businesses {b}\nNet cash used in investing activities {c}")
INCOME = ("CONSOLIDATED STATEMENTS OF INCOME\nNet operating revenues {a}\nCost of goods sold {b}\n"
          "Gross profit {c}\nSelling, general and administrative expenses {a}")
RISKS = "Item 1A. Risk Factors\nOur business depends on consumer demand, weather and the prices of commodities."
FILINGS = [("ACME_2022_10K", "Acme", 2022), ("ACME_2023_10K", "Acme", 2023), ("GLOBEX_2023_10K", "Globex", 2023),
           ("INITECH_2023_10K", "Initech", 2023), ("GLOBEX_2022_10K", "Globex", 2022)]
IDENTITY = SearchConfig(identity_weight=1.0, identity_coverage="terms", focus=FocusConfig(identity_weight=1.0))
# The identity switched off: the default before "filings5" (both weights 0).
OFF = SearchConfig(identity_weight=0.0, focus=FocusConfig(identity_weight=0.0))
QUESTION = "What were Acme's purchases of property, plant and equipment in FY2023?"


def filings():
    docs = []
    for n, (name, company, year) in enumerate(FILINGS):
        pages = [RISKS, INCOME.format(a=100 + n, b=50 + n, c=7 + n), CASH.format(a=900 + n, b=30 + n, c=870 + n)]
        docs.append(Document(id=name, pages=pages, metadata={"company": company, "doc_period": year, "doc_type": "10k"}))
    return docs


@pytest.fixture(scope="module", params=["edge", "local"])
def index(request, make_index):
    index = make_index(collection=f"filings_{request.param}", engine=request.param, search=IDENTITY)
    index.add_documents(filings())
    return index


def test_identity_routes_a_question_to_the_filing_it_names(index):
    plain = index.search(QUESTION, config=OFF)
    named = index.search(QUESTION)
    assert named.nodes and {n.node.doc_id for n in named.nodes} == {"ACME_2023_10K"}
    assert named.nodes[0].node.span.first_page == 3  # the cash-flow statement
    roots = named.trace.steps[0]
    # acme: 2 of 5 filings, 2023: 3 of 5: (ln 2.5 + ln 5/3) / ln 5
    assert roots.candidates[0].doc_id == "ACME_2023_10K"
    assert roots.candidates[0].identity_score == pytest.approx(0.886717, abs=1e-6)
    # Without identity the five look alike and the walk cannot tell them apart.
    assert {n.node.doc_id for n in plain.nodes} != {"ACME_2023_10K"}


def test_a_question_naming_no_filing_is_unchanged(index):
    question = "purchases of property, plant and equipment"
    assert ([(n.node.id, n.score) for n in index.search(question).nodes]
            == [(n.node.id, n.score) for n in index.search(question, config=OFF).nodes])


def test_both_adapters_route_the_same_way(index):
    from drag_knee_retriever.integrations.langchain import DragKneeRetriever as LCRetriever
    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever as LIRetriever

    core = [(n.node.doc_id, n.node.span.first_page) for n in index.search(QUESTION).nodes]
    lc = [(d.metadata["drag_doc_id"], d.metadata["drag_first_page"]) for d in LCRetriever(index=index).invoke(QUESTION)]
    li = [(n.node.metadata["drag_doc_id"], n.node.metadata["drag_first_page"])
          for n in LIRetriever(index).retrieve(QUESTION)]
    assert core == lc == li and core[0] == ("ACME_2023_10K", 3)


def test_the_adapters_file_names_are_identity_too(make_index):
    """LangChain's PyPDFLoader ``source`` and LlamaIndex's ``file_name`` name the filing."""
    index = make_index(collection="filings_sources", search=IDENTITY)
    docs = filings()
    index.add_documents([Document(id=f"doc-{i}", pages=d.pages, metadata={"source": f"/reports/{d.id}.pdf"})
                         for i, d in enumerate(docs[:3])]
                        + [Document(id=f"doc-{i + 3}", pages=d.pages, metadata={"file_name": f"{d.id}.pdf"})
                           for i, d in enumerate(docs[3:])])
    top = index.search("Initech 2023 purchases of property, plant and equipment").nodes[0]
    assert top.node.doc_id == "doc-3"


def test_metadata_values_list_what_a_model_may_filter_on(index):
    values = index.metadata_values()
    assert values["company"][0] in {"Acme", "Globex"} and set(values["company"]) == {"Acme", "Globex", "Initech"}
    assert set(values["doc_period"]) == {2022, 2023} and set(values["doc_id"]) == {f[0] for f in FILINGS}
    assert "doc_type" in values


# -- self-query through each framework's fake LLM ------------------------------------------------


class FixedAnswerFakeLLM(CustomLLM):
    """A fake LLM: a LlamaIndex CustomLLM giving one fixed answer, recording its prompts."""

    answer: str = "{}"
    prompts: Optional[list] = None

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="fixed-answer-fake")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        (self.prompts if self.prompts is not None else []).append(prompt)
        return CompletionResponse(text=self.answer)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        raise NotImplementedError("the fake does not stream")


ANSWER = json.dumps({"company": "acme", "doc_period": "2023", "ceo": "nobody", "doc_type": "10-Q"})


@pytest.mark.parametrize("framework", ["langchain_fake_chat_model", "llamaindex_fake_custom_llm"])
def test_a_self_query_model_filters_to_the_filing_it_reads(index, framework):
    if framework.startswith("langchain"):
        model = LangChainSelfQuery(FakeListChatModel(responses=[ANSWER] * 4))
    else:
        fake = FixedAnswerFakeLLM(answer=ANSWER, prompts=[])
        model = LlamaIndexSelfQuery(fake)
    question = "How much did the company spend on plant and equipment that year?"  # names nothing itself
    result = index.search(question, config=SearchConfig(), self_query=model)
    # unknown keys and values are dropped; values take the stored spelling and type
    assert result.trace.self_query == {"filters": {"company": "Acme", "doc_period": 2023}, "used": True}
    assert result.nodes and {n.node.doc_id for n in result.nodes} == {"ACME_2023_10K"}
    if not framework.startswith("langchain"):
        assert "Initech" in fake.prompts[0] and "doc_period" in fake.prompts[0]
    model.close()


def test_self_query_through_the_adapters_and_async(index):
    import asyncio

    from drag_knee_retriever.integrations.langchain import DragKneeRetriever as LCRetriever

    model = LangChainSelfQuery(FakeListChatModel(responses=[json.dumps({"company": "Globex", "doc_period": 2022})] * 4))
    index.self_query = model
    try:
        docs = LCRetriever(index=index).invoke("capital spending?")
        assert docs and {d.metadata["drag_doc_id"] for d in docs} == {"GLOBEX_2022_10K"}
        result = asyncio.run(index.asearch("capital spending?"))
        assert {n.node.doc_id for n in result.nodes} == {"GLOBEX_2022_10K"}
        assert index.search("capital spending?", self_query=False).trace.self_query is None
    finally:
        index.self_query = None
        model.close()


def test_a_failing_or_empty_model_or_a_filter_with_no_result_falls_back(index):
    broken = LangChainSelfQuery(FakeListChatModel(responses=["I think it is about Acme."] * 2))
    result = index.search(QUESTION, self_query=broken)
    assert result.trace.self_query is None and result.nodes[0].node.doc_id == "ACME_2023_10K"
    # a filter that, with the caller's own, leaves nothing: dropped, said in the trace
    clash = LangChainSelfQuery(FakeListChatModel(responses=[json.dumps({"company": "Globex"})] * 2))
    result = index.search(QUESTION, filters={"doc_id": "ACME_2023_10K"}, self_query=clash)
    assert result.trace.self_query == {"filters": {"company": "Globex"}, "used": False}
    assert result.nodes and {n.node.doc_id for n in result.nodes} == {"ACME_2023_10K"}
    broken.close()
    clash.close()


def test_llm_page_descriptions_keep_working_with_identity(make_index):
    """The seed's answer to the vocabulary gap (descriptions through the user's model) on this path."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel as Fake

    from drag_knee_retriever import BuildConfig, VectorConfig
    from drag_knee_retriever.llm import LangChainSummarizer

    description = json.dumps({"description": "Capital expenditure (capex) and free cash flow of the year.",
                              "keywords": ["capex", "capital expenditure"]})
    summarizer = LangChainSummarizer(Fake(responses=[description] * 200), structured=False, retry_backoff=0)
    index = make_index(collection="filings_llm", search=IDENTITY, summarizer=summarizer,
                       build=BuildConfig(vectors=VectorConfig(leaf_dense="own+description")))
    index.add_documents(filings()[:3])
    result = index.search("Acme FY2023 capex")
    assert result.nodes and result.nodes[0].node.doc_id == "ACME_2023_10K"
    assert summarizer.last_report.described > 0 and summarizer.last_report.fallbacks == 0
    # the description's words (never in the page text) find the page through its dense/BM25 text
    assert "capex" not in " ".join(n.text for n in result.nodes).lower()


def test_identity_routes_a_word_budget_too(index):
    """With max_tokens the budget fills from the same identity-aware walk and focus."""
    result = index.search(QUESTION, max_tokens=60)
    assert result.nodes and result.nodes[0].node.doc_id == "ACME_2023_10K"
    assert sum(len(n.text.split()) for n in result.nodes) <= 60
    focus = next(s for s in result.trace.steps if s.kind == "focus")
    assert any(c.identity_score for c in focus.candidates)


FIELDS = SearchConfig(identity_weight=1.0, identity_coverage="fields", focus=FocusConfig(identity_weight=1.0))


def test_fields_coverage_routes_a_filing_from_its_file_name_alone(make_index):
    """identity_coverage='fields': the file name's parts (ACME / 2023 / 10K, from LangChain's
    ``source``) are the fields; the question names two of them, and the filing wins as before."""
    index = make_index(collection="filings_fields", search=FIELDS)
    index.add_documents([Document(id=f"doc-{i}", pages=d.pages, metadata={"source": f"/reports/{d.id}.pdf"})
                         for i, d in enumerate(filings())])
    result = index.search(QUESTION)
    assert {n.node.doc_id for n in result.nodes} == {"doc-1"}  # ACME_2023_10K
    assert result.trace.steps[0].candidates[0].identity_score == pytest.approx(0.886717, abs=1e-6)


ARTICLES = {"Scott Derrickson": ["Scott Derrickson is an American director of horror films such as Sinister.",
                                 "Derrickson was born in Denver, Colorado."],
            "Ed Wood": ["Edward Davis Wood Jr. was an American filmmaker known for low-budget films.",
                        "Ed Wood was born in Poughkeepsie, New York."],
            "Ed Wood (film)": ["Ed Wood is a 1994 American biographical film directed by Tim Burton."],
            "Doctor Strange (2016 film)": ["Doctor Strange is a 2016 superhero film directed by Scott Derrickson."]}


def test_fields_coverage_leaves_a_collection_of_named_articles_as_the_text_ranks_it(make_index):
    """Articles whose identity is their name: the default coverage ('terms') lets a name in the
    question reorder them; 'fields' names none of them, so the search is the text's alone."""
    index = make_index(collection="articles_fields")
    index.add_documents([Document(id=t, pages=p, metadata={"title": t, "dataset": "wiki"}) for t, p in ARTICLES.items()])
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    off = index.search(question, config=OFF)
    fields = index.search(question, config=FIELDS)
    assert [(n.node.id, n.score) for n in fields.nodes] == [(n.node.id, n.score) for n in off.nodes]
    assert all(c.identity_score is None for s in fields.trace.steps for c in s.candidates)
    terms = index.search(question, config=IDENTITY)
    assert any(c.identity_score for c in terms.trace.steps[0].candidates)  # the names do match by terms


TWO_FIELDS = SearchConfig(identity_weight=2.0, identity_coverage="two_fields", focus=FocusConfig(identity_weight=4.0))
# Reports of one publisher whose file names say publisher, date and topic, and whose metadata says
# the kind of document: a question's "report" names the kind, a field half of them hold.
REPORTS = {"PG_2020.03.09_US-Germany_FINAL": ["Americans and Germans differ on defence spending and on Russia.",
                                              "Among internet users, most adults in both countries read news online."],
           "PG_2021.03.04_US-Views-on-China_FINAL": ["Most Americans see China as a competitor.",
                                                     "Adults who use the internet daily read more about China."],
           "PP_2019.01.17_Trump-economy_FINAL2": ["Views of the national economy are split by party.",
                                                  "Adults rate jobs as plentiful in their area."],
           "PP_2020.08.06_COVID-19-Restrictions_FINAL-1": ["Most adults say restrictions were lifted too quickly."]}


def test_two_fields_coverage_needs_whose_and_which(make_index):
    """identity_coverage='two_fields' (the default): one field named (the kind of document a question calls "the
    report") counts nothing, so the search is the text's alone where 'fields' lets it reorder the
    reports; two fields (company and year) route the filing as 'fields' does."""
    index = make_index(collection="reports_two_fields")
    index.add_documents([Document(id=t, pages=p, metadata={
        "title": f"{t}.pdf", "doc_type": "Research report" if t.startswith("PG") else "Fact sheet"})
        for t, p in REPORTS.items()])
    question = "According to the report, how many adults use the internet daily?"
    off = index.search(question, config=OFF)
    two = index.search(question, config=TWO_FIELDS)
    assert [(n.node.id, n.score) for n in two.nodes] == [(n.node.id, n.score) for n in off.nodes]
    assert all(c.identity_score is None for s in two.trace.steps for c in s.candidates)
    fields = index.search(question, config=SearchConfig(identity_weight=2.0, identity_coverage="fields",
                                                        focus=FocusConfig(identity_weight=4.0)))
    assert any(c.identity_score for c in fields.trace.steps[0].candidates)  # "report" names them under 'fields'

    # the default search (SearchConfig() is TWO_FIELDS since "filings5")
    assert SearchConfig() == TWO_FIELDS
    filings_index = make_index(collection="filings_two_fields")
    filings_index.add_documents(filings())
    result = filings_index.search(QUESTION)
    assert {n.node.doc_id for n in result.nodes} == {"ACME_2023_10K"}
    assert result.trace.steps[0].candidates[0].identity_score == pytest.approx(0.886717, abs=1e-6)
    # Acme and no period at all: the question asks about the present, Acme's latest filing is named
    # (at half: one field), its other year is not ("filings7")
    no_year = "What were Acme's purchases of property, plant and equipment?"
    undated = filings_index.search(no_year)
    scores = {c.doc_id: c.identity_score for c in undated.trace.steps[0].candidates}
    assert scores["ACME_2023_10K"] > 0 and not scores.get("ACME_2022_10K")
    assert {n.node.doc_id for n in undated.nodes} == {"ACME_2023_10K"}
    # a year no filing holds is still a period: whose alone then names nothing, the search is the text's
    old_year = "What were Acme's purchases of property, plant and equipment in 2019?"
    assert all(c.identity_score is None for c in filings_index.search(old_year).trace.steps[0].candidates)
