"""``max_tokens`` through both adapters with their real classes (LangChain retriever, LlamaIndex
retriever and query engine; LlamaIndex's MockLLM where a model answers), the real offline model and
Qdrant Edge: the budget holds at construction and per call, and bad values fail when given."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from drag_knee_retriever import BuildConfig, LeafConfig
from drag_knee_retriever.search._budget import count_words
from drag_knee_retriever.sample import sample_documents

QUESTION = "how do tidal stream turbines turn the tide into electricity?"


@pytest.fixture(scope="module")
def sample_index(make_index) -> Any:
    index = make_index(collection="budget_adapters", build=BuildConfig(leaves=LeafConfig(passage_words=40, split_pages_over=None)))
    index.add_documents(sample_documents())
    return index


def _words(texts) -> int:
    return sum(count_words(t) for t in texts)


def test_langchain_retriever_budget_in_the_constructor_per_call_and_search_kwargs(sample_index) -> None:
    pytest.importorskip("langchain_core")
    from drag_knee_retriever.integrations.langchain import DragKneeRetriever

    plain = DragKneeRetriever(index=sample_index).invoke(QUESTION)
    small = DragKneeRetriever(index=sample_index, max_tokens=30).invoke(QUESTION)
    assert small and _words(d.page_content for d in small) <= 30 < _words(d.page_content for d in plain)
    wide = DragKneeRetriever(index=sample_index, max_tokens=30).invoke(QUESTION, max_tokens=400)
    assert 30 < _words(d.page_content for d in wide) <= 400
    kwargs = DragKneeRetriever(index=sample_index, search_kwargs={"max_tokens": 30}).invoke(QUESTION)
    assert [d.page_content for d in kwargs] == [d.page_content for d in small]
    got = asyncio.run(DragKneeRetriever(index=sample_index, max_tokens=30).ainvoke(QUESTION))
    assert [d.page_content for d in got] == [d.page_content for d in small]


@pytest.mark.parametrize("bad", [0, -3, 2.5, "many"])
def test_langchain_refuses_a_bad_budget_when_built_and_when_called(sample_index, bad) -> None:
    pytest.importorskip("langchain_core")
    from drag_knee_retriever.errors import ConfigError
    from drag_knee_retriever.integrations.langchain import DragKneeRetriever

    # pydantic wraps the validator's ValueError (a bad type fails pydantic's own int check)
    with pytest.raises(ValueError, match="max_tokens"):
        DragKneeRetriever(index=sample_index, max_tokens=bad)
    with pytest.raises(ConfigError, match="max_tokens"):
        DragKneeRetriever(index=sample_index).invoke(QUESTION, max_tokens=bad)


def test_llamaindex_retriever_and_query_engine_with_mock_llm_keep_to_the_budget(sample_index) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.llms.mock import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever

    retriever = DragKneeRetriever(sample_index, max_tokens=30)
    nodes = retriever.retrieve(QUESTION)
    assert nodes and _words(n.node.get_content() for n in nodes) <= 30
    wide = retriever.retrieve(QUESTION, max_tokens=400)
    assert 30 < _words(n.node.get_content() for n in wide) <= 400
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(QUESTION)
    assert [n.node.get_content() for n in response.source_nodes] == [n.node.get_content() for n in nodes]
    response = asyncio.run(engine.aquery(QUESTION))
    assert _words(n.node.get_content() for n in response.source_nodes) <= 30


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_llamaindex_refuses_a_bad_budget_when_built_and_when_called(sample_index, bad) -> None:
    pytest.importorskip("llama_index.core")
    from drag_knee_retriever.errors import ConfigError
    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever

    with pytest.raises(ConfigError, match="max_tokens"):
        DragKneeRetriever(sample_index, max_tokens=bad)
    with pytest.raises(ConfigError, match="max_tokens"):
        DragKneeRetriever(sample_index).retrieve(QUESTION, max_tokens=bad)
