"""A real ingest with an LLM summariser: real DragKneeIndex, real offline model, real Qdrant; the
LLM is each framework's fake (LangChain ``GenericFakeChatModel`` subclass, LlamaIndex ``CustomLLM``
subclass), named as such, answering deterministically from the prompt."""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Optional

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback

from drag_knee_retriever import BuildConfig, Document, VectorConfig
from drag_knee_retriever.llm import LangChainSummarizer, LlamaIndexSummarizer
from drag_knee_retriever.store import QueryVectors

WORDS = ["alpha", "bravo", "charlie", "delta", "echo"]
PAGES = [
    f"PAGE-{i} Coronaviruses replicate in the cytoplasm of infected cells; section {word} of the notes."
    for i, word in enumerate(WORDS, start=1)
]
DOC = Document(id="llm-doc", pages=PAGES, metadata={"lang": "en"})


def leaf_answer(i: int) -> dict:
    word = WORDS[i - 1]
    return {
        "description": f"Fake page description {word}: the model's account of viral replication, part {i}.",
        "keywords": [f"fakeanchor{word}", "replication"],
    }


def respond(prompt: str) -> dict:
    """The fake model's answer, a pure function of the prompt (calls run concurrently)."""
    if "PARTS:" in prompt:
        parts = prompt.split("PARTS:", 1)[1]
        words = [w for w in WORDS if re.search(rf"\b{w}\b", parts)]
        return {
            "description": f"Fake scope summary of {' '.join(words)}: replication of coronaviruses overall.",
            "keywords": ["fakescope"] + [f"fakescope{w}" for w in words],
        }
    answer = leaf_answer(int(re.findall(r"PAGE-(\d+)", prompt)[-1]))
    if "second edition" in prompt:
        answer["description"] += " Revised in the second edition."
    return answer


class PromptKeyedFakeChatModel(GenericFakeChatModel):
    """A fake LLM: LangChain's GenericFakeChatModel answering from a function of the prompt."""

    responder: Optional[Callable[[str], Any]] = None
    calls: int = 0

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls += 1
        answer = self.responder("\n".join(str(m.content) for m in messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=json.dumps(answer)))])


class PromptKeyedFakeLLM(CustomLLM):
    """A fake LLM: a LlamaIndex CustomLLM answering from a function of the prompt."""

    responder: Optional[Callable[[str], Any]] = None
    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="prompt-keyed-fake")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.calls += 1
        return CompletionResponse(text=json.dumps(self.responder(prompt)))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        raise NotImplementedError("the fake does not stream")


def make(framework: str, **options):
    options.setdefault("retry_backoff", 0)
    if framework == "langchain":
        fake = PromptKeyedFakeChatModel(messages=iter(()), responder=respond)
        return LangChainSummarizer(fake, **options), fake
    fake = PromptKeyedFakeLLM(responder=respond)
    return LlamaIndexSummarizer(fake, **options), fake


def dense_query(index, text: str) -> QueryVectors:
    vector = index.encoder.encode_dense([text])[0]
    return QueryVectors(dense=tuple(float(x) for x in vector), sparse_indices=(), sparse_values=())


def leaves_by_page(index):
    nodes = index.store.scroll_nodes()
    leaves = sorted((n for n in nodes if n.is_leaf), key=lambda n: n.span.first_leaf)
    return leaves, [n for n in nodes if not n.is_leaf]


@pytest.mark.parametrize("framework", ["langchain", "llamaindex"])
def test_ingest_uses_model_descriptions_and_reingest_makes_no_calls(framework: str, make_index) -> None:
    summarizer, fake = make(framework, max_concurrency=4)
    config = BuildConfig(vectors=VectorConfig(leaf_dense="description", sparse="keywords"))
    index = make_index(collection=f"llm_{framework}", summarizer=summarizer, build=config)

    with summarizer.track() as cost:
        report = index.add_documents([DOC])
    assert report.added == ["llm-doc"]
    assert fake.calls == 8 and cost.calls == 8  # 5 pages, 2 parents, 1 root
    assert (cost.described, cost.fallbacks, cost.failures) == (8, 0, 0)

    leaves, inner = leaves_by_page(index)
    assert [leaf.text for leaf in leaves] == PAGES  # the page stays what a user reads
    for i, leaf in enumerate(leaves, start=1):
        assert leaf.description == leaf_answer(i)["description"]
        assert leaf.keywords == tuple(leaf_answer(i)["keywords"])
    assert len(inner) == 3
    assert all(n.text.startswith("Fake scope summary of ") and n.keywords[0] == "fakescope" for n in inner)
    root = next(n for n in inner if n.level == 0)
    assert "fakescopealpha" in root.keywords and "fakescopeecho" in root.keywords

    # leaf_text="description": the leaf's dense vector is the model's description.
    hits = index.flat_search("x", mode="dense", query_vectors=dense_query(index, leaf_answer(3)["description"]), k=1)
    assert hits[0].node.id == leaves[2].id and hits[0].score > 0.99
    # sparse_text="keywords": BM25 sees the model's keywords, not the page's own words.
    hits = index.flat_search("fakeanchorcharlie", mode="sparse", k=3)
    assert [h.node.id for h in hits] == [leaves[2].id]
    assert index.flat_search("cytoplasm", mode="sparse", k=3) == []

    # Re-ingesting the unchanged document asks the model nothing.
    with summarizer.track() as again:
        report = index.add_documents([DOC])
    assert report.unchanged == ["llm-doc"]
    assert fake.calls == 8 and again.calls == 0

    # Rebuilt from scratch (deleted and added again): every node comes from the cache.
    assert index.delete_document("llm-doc")
    with summarizer.track() as rebuilt:
        index.add_documents([DOC])
    assert fake.calls == 8 and (rebuilt.calls, rebuilt.cache_hits) == (0, 8)

    # One page edited: that page and its parent are described again (their content changed); the
    # other parent and the root are not, because the descriptions they are written from did not.
    edited = Document(id="llm-doc", pages=PAGES[:4] + [PAGES[4] + " Revised in the second edition."], metadata={"lang": "en"})
    with summarizer.track() as partial:
        report = index.add_documents([edited])
    assert report.replaced == ["llm-doc"]
    assert (partial.calls, partial.cache_hits) == (2, 6) and fake.calls == 10
    leaves, inner = leaves_by_page(index)
    assert leaves[4].description.endswith("Revised in the second edition.")


def test_default_texts_and_a_disk_cache_shared_by_a_new_summariser(make_index, tmp_path) -> None:
    cache = tmp_path / "descriptions.sqlite"
    summarizer, fake = make("langchain", cache=cache)
    index = make_index(collection="llm_default_texts", summarizer=summarizer)  # leaf_text="own"
    index.add_documents([DOC])
    assert fake.calls == 8
    leaves, _ = leaves_by_page(index)
    # leaf_text="own": the leaf's dense vector is its page; sparse_text="text+keywords": both count.
    hits = index.flat_search("x", mode="dense", query_vectors=dense_query(index, PAGES[1]), k=1)
    assert hits[0].node.id == leaves[1].id and hits[0].score > 0.99
    assert index.flat_search("fakeanchorbravo", mode="sparse", k=1)[0].node.id == leaves[1].id
    assert index.flat_search("cytoplasm", mode="sparse", k=10)
    summarizer.close()

    # Another process's summariser with the same cache file: a fresh index costs no model call.
    second, fake2 = make("langchain", cache=cache)
    other = make_index(collection="llm_default_texts_2", summarizer=second)
    other.add_documents([DOC])
    assert fake2.calls == 0 and second.report.cache_hits == 8
    assert [n.keywords for n in leaves_by_page(other)[0]] == [n.keywords for n in leaves]
    second.close()


def test_readme_example_llm_summarizer(monkeypatch, tmp_path, model_path) -> None:
    monkeypatch.chdir(tmp_path)  # the example writes descriptions.sqlite to the working folder
    monkeypatch.setenv("DRAG_KNEE_MODEL_PATH", model_path)
    # README-START
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from drag_knee_retriever import BuildConfig, Document, DragKneeIndex
    from drag_knee_retriever.llm import LangChainSummarizer

    # Your model goes here: ChatOpenAI(model="gpt-4o-mini"), ChatOllama(model="qwen2.5:7b"), ...
    # This fake answers every node the same way, so the example runs offline.
    chat_model = FakeListChatModel(responses=[
        '{"description": "Coral reefs shelter a quarter of marine species; heatwaves bleach them.",'
        ' "keywords": ["coral reef", "bleaching", "marine heatwave", "biodiversity"]}'
    ])
    summarizer = LangChainSummarizer(
        chat_model,
        cache="descriptions.sqlite",  # an unchanged page is never described twice, across runs
        max_concurrency=8,            # model calls in flight at once
        timeout=60,                   # seconds per call; then retry, then the LLM-free fallback
    )  # or settings=SummarizerSettings(max_concurrency=8, timeout=60): one frozen, validated object
    index = DragKneeIndex(
        "./reef-index",
        summarizer=summarizer,
        # The original method: leaves are embedded by their description, BM25 reads it + keywords.
        build=BuildConfig(vectors=VectorConfig(leaf_dense="description", sparse="text+keywords")),
    )
    pages = [
        "Coral reefs cover less than one percent of the ocean floor but shelter a quarter of all marine species.",
        "Marine heatwaves bleach corals: stressed polyps expel the algae that feed them and turn white.",
        "Mangrove forests protect coastlines from storm surges and store carbon in waterlogged soil.",
    ]
    with summarizer.track() as cost:
        index.add_documents([Document(id="reefs", pages=pages)])
    print(cost)  # 4 nodes: 4 described, 0 from cache, 0 fallbacks, 0 extractive; 4 calls (0 retries, ...
    index.close()
    # README-END
    assert cost.requests == 4 and cost.fallbacks == 0
    assert (cost.calls, cost.described, cost.retries) == (4, 4, 0)  # 3 pages + 1 root
    assert str(cost).startswith("4 nodes: 4 described, 0 from cache, 0 fallbacks")
    summarizer.close()
