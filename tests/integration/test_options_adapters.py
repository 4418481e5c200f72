"""Issue 40 item 9 and issue 39 item 4, with the real LangChain and LlamaIndex classes, the real offline
model and Qdrant Edge: ``progress=True`` draws progress bars (it was a raw TypeError), ``explain=True``
and ``max_words`` are per-call settings of both retrievers (refused before), ``collection_name=`` (the
Qdrant stores' spelling) names the new index's collection in both ``from_documents``, and the
retrievers' settings are the one list of search options."""

from __future__ import annotations

from typing import Any

import pytest

from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.sample import sample_documents

QUESTION = "how do tidal stream turbines turn the tide into electricity?"


@pytest.fixture(scope="module")
def sample_index(make_index) -> Any:
    index = make_index(collection="options_adapters")
    index.add_documents(sample_documents())
    return index


class _Spy:
    """Records the keywords each search was given, then searches the real index."""

    def __init__(self, index: Any) -> None:
        self.index, self.calls = index, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)

    def search(self, query: str, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return self.index.search(query, **kwargs)


def test_progress_true_draws_bars_and_a_wrong_value_says_what_to_give(make_index, capsys) -> None:
    index = make_index(collection="options_progress")
    report = index.add_documents(sample_documents()[:2], progress=True)
    assert len(report.added) == 2
    err = capsys.readouterr().err  # not a terminal: one line per finished phase, on stderr
    assert "embedding" in err or "writing" in err, err
    with pytest.raises(ConfigError, match=r"progress must be a function progress\(phase, done, total\), True"):
        index.add_documents(sample_documents()[2:3], progress="yes")


def test_langchain_retriever_takes_explain_and_max_words_per_call(sample_index) -> None:
    pytest.importorskip("langchain_core")
    from drag_knee_retriever.integrations.langchain import DragKneeRetriever

    spy = _Spy(sample_index)
    retriever = DragKneeRetriever(index=spy, max_words=60)
    docs = retriever.invoke(QUESTION, explain=True)
    assert docs and spy.calls[-1].get("explain") is True and spy.calls[-1].get("max_words") == 60
    assert sum(len(d.page_content.split()) for d in docs) <= 60


def test_llamaindex_retriever_takes_explain_and_max_words_per_call(sample_index) -> None:
    pytest.importorskip("llama_index.core")
    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever

    spy = _Spy(sample_index)
    nodes = DragKneeRetriever(spy).retrieve(QUESTION, explain=True, max_words=60)
    assert nodes and spy.calls[-1].get("explain") is True and spy.calls[-1].get("max_words") == 60


def test_langchain_from_documents_takes_collection_name_and_progress(passage_cache, tmp_path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document as LCDocument

    from drag_knee_retriever.integrations.langchain import DragKneeRetriever

    docs = [LCDocument(page_content=d.text, metadata={"source": d.id}) for d in sample_documents()[:2]]
    retriever = DragKneeRetriever.from_documents(docs, location=str(tmp_path / "lc"), collection_name="papers",
                                                 embedding=passage_cache, progress=True, k=2)
    try:
        assert retriever.index.store_config.collection == "papers"
        assert retriever.invoke(QUESTION)
    finally:
        retriever.index.close()


def test_llamaindex_from_documents_takes_collection_name(passage_cache, tmp_path) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document as LIDocument

    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever

    docs = [LIDocument(text=d.text, id_=d.id) for d in sample_documents()[:2]]
    retriever = DragKneeRetriever.from_documents(docs, location=str(tmp_path / "li"), collection_name="papers",
                                                 embedding=passage_cache, progress=True)
    try:
        assert retriever.index.store_config.collection == "papers"
    finally:
        retriever.index.close()


def test_the_langchain_fields_are_the_search_options() -> None:
    """One list: every search option both retrievers take is a field of the LangChain retriever,
    described by its SearchConfig declaration where the names are SearchConfig's."""
    pytest.importorskip("langchain_core")
    from drag_knee_retriever.integrations._common import SEARCH_SETTINGS
    from drag_knee_retriever.integrations.langchain import DragKneeRetriever
    from drag_knee_retriever.model._search_config import option_help

    fields = DragKneeRetriever.model_fields
    assert set(SEARCH_SETTINGS) <= set(fields), set(SEARCH_SETTINGS) - set(fields)
    for name in ("method", "max_tokens", "max_words", "explain", "beam_width"):
        assert fields[name].description == option_help(name)


def test_one_meaning_per_name() -> None:
    """Every per-call option is a SearchConfig setting of the same name (fusion_weights, deprecated,
    excepted), and the encoder's input limit is no longer spelled like the results' budget."""
    import dataclasses

    from drag_knee_retriever import EmbeddingConfig, SearchConfig
    from drag_knee_retriever.config import SEARCH_OPTIONS

    settings = {f.name for f in dataclasses.fields(SearchConfig)}
    assert set(SEARCH_OPTIONS) - {"fusion_weights"} <= settings
    assert "max_tokens" not in {f.name for f in dataclasses.fields(EmbeddingConfig)}


def test_max_tokens_with_a_langchain_fake_embedding_counts_with_the_token_counter_given() -> None:
    """A dense model of your own: ``EmbeddingConfig(token_counter=...)`` counts the budget (here
    characters, to see it is the one used); without one the bundled MiniLM tokenizer does."""
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from drag_knee_retriever import DragKneeIndex, EmbeddingConfig

    fake = DeterministicFakeEmbedding(size=16)
    with DragKneeIndex(":memory:", embedding=EmbeddingConfig(dense=fake, token_counter=len)) as index:
        index.add_documents(sample_documents())
        nodes = index.search(QUESTION, max_tokens=300).nodes
        assert nodes and sum(len(n.text) for n in nodes) <= 300
    with DragKneeIndex(":memory:", embedding=fake) as index:
        assert "bundled all-MiniLM-L6-v2" in index.encoder.token_unit.source
