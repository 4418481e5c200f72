"""LLM summarisers (issue 8) against the frameworks' own fake LLMs.

Every model here is a fake, named as such: LangChain's ``GenericFakeChatModel`` and
``FakeListChatModel`` (and subclasses of ``GenericFakeChatModel`` that add scripted errors, delays or
tool calls), LlamaIndex's ``MockLLM`` and ``MockFunctionCallingLLM`` and ``CustomLLM`` subclasses
with scripted outputs. The summariser code under test is the real one; only the model is scripted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any, Callable, List, Optional

import pytest

from drag_knee_retriever.build._builder import build_document_trees
from drag_knee_retriever.config import BuildConfig, SummaryConfig, VectorConfig
from drag_knee_retriever.model._nodes import Document
from drag_knee_retriever.build._summarize import ExtractiveSummarizer, Summarizer, Summary, SummaryRequest
from drag_knee_retriever.llm import (
    DEFAULT_PROMPTS,
    InvalidOutputError,
    LangChainSummarizer,
    LLMSummarizer,
    LlamaIndexSummarizer,
    SummarizerError,
    SummaryCache,
    SummaryPrompts,
    detect_language,
    parse_answer_text,
    validate_answer,
)

from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata, ToolCallBlock
from llama_index.core.llms import ChatMessage, CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM, MockLLM
from pydantic import Field

FRAMEWORKS = ("langchain", "llamaindex")

GOOD = {
    "description": "Coronaviruses are enveloped positive-strand RNA viruses that infect the human "
    "respiratory tract. SARS-CoV-2 binds the ACE2 receptor through its spike protein.",
    "keywords": ["coronavirus", "SARS-CoV-2", "COVID-19", "ACE2", "spike protein", "RNA virus"],
}
GOOD_TEXT = json.dumps(GOOD)
USAGE = {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}


# ---------------------------------------------------------------------------------------------
# scripted fake models
# ---------------------------------------------------------------------------------------------

Script = List[Any]  # items: str (answer text), dict (answer object), BaseException (raised)


class ScriptedFakeChatModel(GenericFakeChatModel):
    """A fake LLM: LangChain's GenericFakeChatModel whose script may also hold exceptions (raised)
    and dicts (answered as JSON), with an optional per-prompt responder, an async delay, token
    usage on every answer, and counters of calls and of calls in flight."""

    responder: Optional[Callable[[str], Any]] = None
    delay: float = 0.0
    usage: Optional[dict] = None
    seen: list = Field(default_factory=list)
    calls: int = 0
    in_flight: int = 0
    max_in_flight: int = 0

    def _answer(self, messages) -> ChatResult:
        self.seen.append([(m.type, m.content) for m in messages])
        self.calls += 1
        prompt = "\n".join(str(m.content) for m in messages)
        item = self.responder(prompt) if self.responder is not None else next(self.messages)
        if isinstance(item, BaseException):
            raise item
        return ChatResult(generations=[ChatGeneration(message=self._message(item))])

    def _message(self, item: Any) -> AIMessage:
        if isinstance(item, AIMessage):
            return item
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        return AIMessage(content=text, usage_metadata=self.usage) if self.usage else AIMessage(content=text)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        if self.delay:
            time.sleep(self.delay)
        return self._answer(messages)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return self._answer(messages)
        finally:
            self.in_flight -= 1


class ToolCallingFakeChatModel(ScriptedFakeChatModel):
    """A fake LLM that supports LangChain tool calling (so ``with_structured_output`` works): dict
    script items come back as a call of the bound tool."""

    bound_tools: list = Field(default_factory=list)

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        self.bound_tools = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self.bind(tool_choice=tool_choice, **kwargs)

    def _message(self, item: Any) -> AIMessage:
        if isinstance(item, dict):
            name = self.bound_tools[0] if self.bound_tools else "NodeDescription"
            call = {"name": name, "args": item, "id": f"call_{self.calls}", "type": "tool_call"}
            return AIMessage(content="", tool_calls=[call], usage_metadata=self.usage)
        return super()._message(item)


class ScriptedFakeLLM(CustomLLM):
    """A fake LLM: a LlamaIndex CustomLLM whose ``complete`` answers from a script (str, dict as
    JSON, exceptions raised) or a per-prompt responder, optionally reporting OpenAI-style usage in
    ``raw`` and sleeping (blocking) before answering."""

    script: list = Field(default_factory=list)
    responder: Optional[Callable[[str], Any]] = None
    usage: Optional[dict] = None
    sleep: float = 0.0
    seen: list = Field(default_factory=list)
    calls: int = 0
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-fake")

    def _answer(self, prompt: str) -> CompletionResponse:
        self.seen.append(prompt)
        self.calls += 1
        item = self.responder(prompt) if self.responder is not None else self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        return CompletionResponse(text=text, raw={"usage": self.usage} if self.usage else None)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        if self.sleep:
            time.sleep(self.sleep)
        return self._answer(prompt)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        raise NotImplementedError("the scripted fake does not stream")


class SlowScriptedFakeLLM(ScriptedFakeLLM):
    """A fake LLM with a real async ``acomplete`` that awaits ``delay`` seconds and counts the calls
    in flight (a remote model's shape)."""

    delay: float = 0.1

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            return self._answer(prompt)
        finally:
            self.in_flight -= 1


def make(framework: str, script: Script = (), *, responder=None, usage=None, delay=0.0, **options):
    """A summariser over a scripted fake model of the framework; returns (summariser, fake)."""
    options.setdefault("retry_backoff", 0)
    if framework == "langchain":
        fake = ScriptedFakeChatModel(messages=iter(list(script)), responder=responder, usage=usage, delay=delay)
        return LangChainSummarizer(fake, **options), fake
    usage_raw = (
        {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"], "total_tokens": usage["total_tokens"]}
        if usage
        else None
    )
    if delay:
        fake = SlowScriptedFakeLLM(script=list(script), responder=responder, usage=usage_raw, delay=delay)
    else:
        fake = ScriptedFakeLLM(script=list(script), responder=responder, usage=usage_raw)
    return LlamaIndexSummarizer(fake, **options), fake


def leaf(text: str = "Coronaviruses are a family of enveloped RNA viruses.", n: int = 0, **kw) -> SummaryRequest:
    return SummaryRequest(
        node_id=f"leaf-{n}", doc_id=kw.pop("doc_id", "doc"), level=2, is_leaf=True, child_texts=(text,),
        leaf_texts=(text,), content_hash=kw.pop("content_hash", f"hash-{n}-{abs(hash(text))}"), **kw,
    )


def parent(children, n: int = 0, **kw) -> SummaryRequest:
    return SummaryRequest(
        node_id=f"parent-{n}", doc_id="doc", level=1, is_leaf=False, child_texts=tuple(children),
        leaf_texts=tuple(children), content_hash=f"p-{n}", **kw,
    )


def answer_for(marker: str) -> dict:
    return {
        "description": f"Fake description of {marker}: a technical page about viral replication.",
        "keywords": [f"kw-{marker}", "replication", "virus"],
    }


def keyed(prompt: str) -> dict:
    """Answers depend only on the prompt (so concurrent calls get the right answer)."""
    found = re.findall(r"PAGE-\d+", prompt)
    return answer_for(found[-1] if found else "none")


@pytest.fixture(autouse=True)
def _close_summarisers(monkeypatch):
    made: List[LLMSummarizer] = []
    original = LLMSummarizer.__init__

    def tracking_init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(LLMSummarizer, "__init__", tracking_init)
    yield
    for summarizer in made:
        summarizer.close()


# ---------------------------------------------------------------------------------------------
# parsing and validation (pure)
# ---------------------------------------------------------------------------------------------


def test_parse_answer_text_accepts_fenced_and_wrapped_json() -> None:
    assert parse_answer_text(f"```json\n{GOOD_TEXT}\n```") == GOOD
    assert parse_answer_text(f"Here is the entry:\n{GOOD_TEXT}\nHope it helps.") == GOOD


@pytest.mark.parametrize(
    "text, message",
    [
        ("The page is about viruses.", "prose"),
        ('{"description": "Viruses are small", "keywords": ["a"', "broken JSON"),
        ("", "empty"),
        ("[1, 2]", "not an object"),
    ],
)
def test_parse_answer_text_names_the_problem(text: str, message: str) -> None:
    with pytest.raises(InvalidOutputError, match=message):
        parse_answer_text(text)


@pytest.mark.parametrize(
    "answer, message",
    [
        ({"description": "", "keywords": ["a"]}, "empty"),
        ({"description": "   ", "keywords": ["a"]}, "empty"),
        ({"description": GOOD["description"], "keywords": "coronavirus, ACE2"}, "not a list"),
        ({"description": GOOD["description"], "keywords": []}, "no usable"),
        ({"description": 42, "keywords": ["a"]}, "not a string"),
        ({"keywords": ["a"]}, "no \"description\""),
        ({"description": "Too short.", "keywords": ["a"]}, "too short"),
    ],
)
def test_validate_answer_rejects_bad_objects(answer: dict, message: str) -> None:
    with pytest.raises(InvalidOutputError, match=message):
        validate_answer(answer)


def test_validate_answer_cleans_keywords_and_caps() -> None:
    answer = {
        "description": GOOD["description"] + " " + "More detail. " * 200,
        "keywords": ["  ACE2 ", "ace2", "#spike protein", "", 7, "x" * 200] + [f"k{i}" for i in range(20)],
    }
    description, keywords = validate_answer(answer, max_keywords=6, max_description_chars=300)
    assert len(description) <= 301 and description.endswith("…")
    assert keywords == ("ACE2", "spike protein", "k0", "k1", "k2", "k3")


def test_detect_language() -> None:
    assert detect_language("Коронавирусы — семейство РНК-содержащих вирусов.") == "Russian"
    assert detect_language("Коронавіруси — родина вірусів, що містять РНК.") == "Ukrainian"
    assert "language the text is written in" in detect_language("Coronaviruses are RNA viruses.")


def test_prompts_are_overridable_and_part_of_the_identity() -> None:
    custom = DEFAULT_PROMPTS.replace(leaf="Summarise for search: {text}")
    assert custom.identity != DEFAULT_PROMPTS.identity
    with pytest.raises(ValueError, match=r"\{text\}"):
        SummaryPrompts(leaf="no placeholder here")
    summarizer, fake = make("langchain", [GOOD], prompts=custom)
    summarizer.describe([leaf("A page about {language} and viruses.")])
    user = fake.seen[0][-1][1]
    # Braces inside the page are kept as written, never treated as placeholders.
    assert user == "Summarise for search: A page about {language} and viruses."
    default, _ = make("langchain", [GOOD])
    assert default.identity != summarizer.identity


# ---------------------------------------------------------------------------------------------
# both frameworks: success, retry, fallback, cache, concurrency
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_success_returns_model_description_keywords_and_tokens(framework: str) -> None:
    summarizer, fake = make(framework, [GOOD_TEXT], usage=USAGE)
    [summary] = summarizer.describe([leaf()])
    assert summary == Summary(text=GOOD["description"], keywords=tuple(GOOD["keywords"]))
    report = summarizer.last_report
    assert (report.calls, report.described, report.fallbacks, report.retries) == (1, 1, 0, 0)
    assert (report.input_tokens, report.output_tokens, report.total_tokens) == (120, 30, 150)
    assert report.calls_with_usage == 1
    assert fake.calls == 1
    assert isinstance(summarizer, Summarizer)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_invalid_outputs_are_retried_with_a_repair_prompt(framework: str) -> None:
    script = [
        "Sure! This page is about coronaviruses.",  # prose
        '{"description": "Coronaviruses are RNA viruses", "keywords": ["coronavirus"',  # broken JSON
        GOOD_TEXT,
    ]
    summarizer, fake = make(framework, script, max_retries=2)
    [summary] = summarizer.describe([leaf()])
    assert summary.text == GOOD["description"]
    report = summarizer.last_report
    assert (report.calls, report.retries, report.invalid_outputs, report.failures, report.fallbacks) == (3, 2, 2, 2, 0)
    # The retry shows the model its answer and what was wrong with it.
    retry_prompt = str(fake.seen[1][-1] if framework == "langchain" else fake.seen[1])
    assert "prose, not a JSON object" in retry_prompt
    assert "Sure! This page is about coronaviruses." in str(fake.seen[1])


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_exceptions_are_retried(framework: str) -> None:
    summarizer, fake = make(framework, [RuntimeError("HTTP 503 from the model server"), GOOD], max_retries=1)
    [summary] = summarizer.describe([leaf()])
    assert summary.text == GOOD["description"]
    report = summarizer.last_report
    assert (report.calls, report.errors, report.retries, report.fallbacks) == (2, 1, 1, 0)
    assert "HTTP 503" in report.failure_samples[0]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_bad_output_kind_falls_back_to_the_extractive_description(framework: str, caplog) -> None:
    bad = [
        "I cannot help with that.",  # prose
        '{"description": "x", "keywords": [',  # broken JSON
        {"description": "", "keywords": ["a", "b"]},  # empty description
        {"description": GOOD["description"], "keywords": "a, b, c"},  # keywords not a list
        ValueError("model exploded"),  # raises
    ]
    config = BuildConfig(summary=SummaryConfig(keywords=5))
    pending = list(bad)

    def responder(prompt: str) -> Any:
        # The parent gets a good answer; the leaf gets every bad kind in turn, then nothing more.
        return GOOD if "PARTS:" in prompt else pending.pop(0)

    summarizer, fake = make(framework, responder=responder, max_retries=len(bad) - 1, config=config)
    requests = [leaf(), parent(["Part one about bats and coronaviruses.", "Part two about ACE2 receptors."])]
    with caplog.at_level(logging.WARNING, logger="drag_knee_retriever.llm.core"):
        summaries = summarizer.describe(requests)
    expected = ExtractiveSummarizer(config).describe(requests)
    assert summaries[0] == expected[0]  # the fallback's leaf summary: own text + extractive keywords
    assert summaries[1].text == GOOD["description"]
    report = summarizer.last_report
    assert report.fallbacks == 1 and report.described == 1
    assert (report.invalid_outputs, report.errors) == (4, 1)
    assert any("fell back" in r.getMessage() or "failed after" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_on_failure_raise(framework: str) -> None:
    summarizer, _ = make(framework, ["nope", "still nope"], max_retries=1, on_failure="raise")
    with pytest.raises(SummarizerError, match="could not be described"):
        summarizer.describe([leaf()])
    assert summarizer.last_report.fallbacks == 1


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_slow_model_times_out_and_falls_back(framework: str) -> None:
    summarizer, fake = make(framework, responder=keyed, delay=1.0, timeout=0.05, max_retries=1)
    started = time.perf_counter()
    [summary] = summarizer.describe([leaf("PAGE-1 text about viral replication.")])
    assert time.perf_counter() - started < 1.5  # two attempts cut at 0.05 s, not 2 x 1 s
    assert summary.text is None  # the leaf keeps its own text (extractive fallback)
    report = summarizer.last_report
    assert (report.timeouts, report.fallbacks, report.calls) == (2, 1, 2)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_cache_hits_on_re_describe_and_on_disk(framework: str, tmp_path) -> None:
    requests = [leaf(f"PAGE-{i} is about replication.", n=i) for i in range(3)]
    requests.append(parent([f"Fake description of PAGE-{i}." for i in range(3)]))
    for path in (tmp_path / "cache.sqlite", tmp_path / "cache.json"):
        summarizer, fake = make(framework, responder=keyed, cache=path)
        first = summarizer.describe(requests)
        assert fake.calls == 4 and summarizer.last_report.cache_hits == 0
        again = summarizer.describe(requests)
        assert again == first and fake.calls == 4
        assert summarizer.last_report.cache_hits == 4 and summarizer.last_report.calls == 0
        summarizer.close()
        # A new process (new summariser, same file) describes nothing again.
        reopened, fake2 = make(framework, responder=keyed, cache=path)
        assert reopened.describe(requests) == first
        assert fake2.calls == 0 and reopened.last_report.cache_hits == 4
        # Changed content or a changed prompt are described anew.
        changed = [leaf("PAGE-7 is new.", n=7)] + requests[1:]
        reopened.describe(changed)
        assert fake2.calls == 1
        other_prompt, fake3 = make(framework, responder=keyed, cache=path, prompts=DEFAULT_PROMPTS.replace(repair="Fix it: {error}"))
        other_prompt.describe(requests)
        assert fake3.calls == 4


def test_failures_are_not_cached() -> None:
    summarizer, fake = make("langchain", ["prose", GOOD], max_retries=0)
    assert summarizer.describe([leaf()])[0].text is None  # fell back
    assert summarizer.describe([leaf()])[0].text == GOOD["description"]  # asked again, not cached
    assert fake.calls == 2


def test_identical_nodes_in_one_call_are_described_once() -> None:
    summarizer, fake = make("langchain", responder=keyed)
    same = [leaf("PAGE-3 repeated boilerplate.", n=i, content_hash="same") for i in range(4)]
    summaries = summarizer.describe(same)
    assert fake.calls == 1 and len(set(summaries)) == 1
    assert summarizer.last_report.deduplicated == 3 and summarizer.last_report.described == 4


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_concurrency_is_bounded(framework: str) -> None:
    summarizer, fake = make(framework, responder=keyed, delay=0.1, max_concurrency=3)
    requests = [leaf(f"PAGE-{i} about replication.", n=i) for i in range(12)]
    started = time.perf_counter()
    summaries = summarizer.describe(requests)
    elapsed = time.perf_counter() - started
    assert [s.keywords[0] for s in summaries] == [f"kw-PAGE-{i}" for i in range(12)]
    assert fake.max_in_flight == 3  # measured by the model: never more than max_concurrency
    assert summarizer.last_report.max_in_flight == 3
    assert elapsed < 12 * 0.1  # calls overlapped (serial takes at least 1.2 s; ~0.4 s expected)


def test_llamaindex_blocking_custom_llm_runs_in_threads_and_stays_bounded() -> None:
    lock = threading.Lock()
    state = {"now": 0, "max": 0}

    def responder(prompt: str) -> dict:
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.08)
        with lock:
            state["now"] -= 1
        return keyed(prompt)

    fake = ScriptedFakeLLM(responder=responder)
    summarizer = LlamaIndexSummarizer(fake, max_concurrency=2, retry_backoff=0)
    summarizer.describe([leaf(f"PAGE-{i} text.", n=i) for i in range(6)])
    assert state["max"] == 2


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_parent_prompt_uses_children_descriptions(framework: str) -> None:
    summarizer, fake = make(framework, [GOOD])
    children = ["Fake description of PAGE-1 about spike proteins.", "Fake description of PAGE-2 about ACE2."]
    summarizer.describe([parent(children, title="Virology")])
    prompt = str(fake.seen[0])
    assert "generalising summary of the whole scope" in prompt
    assert "Do not list or enumerate the parts" in prompt
    assert "[1] Fake description of PAGE-1" in prompt and "[2] Fake description of PAGE-2" in prompt
    assert "Title: Virology" in prompt


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_russian_page(framework: str) -> None:
    russian = {
        "description": "Коронавирусы — оболочечные РНК-вирусы, поражающие дыхательные пути человека. "
        "SARS-CoV-2 связывается с рецептором ACE2 через белок-шип.",
        "keywords": ["коронавирус", "рецептор ACE2", "белок-шип", "spike protein", "coronavirus"],
    }
    summarizer, fake = make(framework, [russian])
    [summary] = summarizer.describe([leaf("Коронавирусы — семейство РНК-содержащих вирусов. PAGE-1")])
    assert summary.text == russian["description"]
    assert summary.keywords == tuple(russian["keywords"])
    prompt = str(fake.seen[0])
    assert "Language of the text: Russian" in prompt
    assert "base (dictionary) form" in prompt and "English equivalents" in prompt


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_describe_leaves_false_asks_the_model_for_parents_only(framework: str) -> None:
    summarizer, fake = make(framework, [GOOD], describe_leaves=False)
    requests = [leaf("Bats host many coronaviruses.", n=0), parent(["Bats host coronaviruses."])]
    summaries = summarizer.describe(requests)
    assert fake.calls == 1
    assert summaries[0].text is None and summaries[0].keywords  # leaf: own text + extractive keywords
    assert summaries[1].text == GOOD["description"]
    assert summarizer.last_report.extractive == 1
    assert "leaves=extractive" in summarizer.identity


def test_reports_accumulate_and_track_blocks() -> None:
    summarizer, _ = make("langchain", responder=keyed)
    with summarizer.track() as cost:
        summarizer.describe([leaf("PAGE-1 a.", n=1)])
        summarizer.describe([leaf("PAGE-2 b.", n=2), leaf("PAGE-1 a.", n=1)])
    summarizer.describe([leaf("PAGE-3 c.", n=3)])
    assert (cost.calls, cost.cache_hits, cost.requests) == (2, 1, 3)
    assert summarizer.report.calls == 3 and summarizer.last_report.calls == 1
    previous = summarizer.reset_report()
    assert previous.calls == 3 and summarizer.report.calls == 0
    assert "3 nodes" in str(cost)


# ---------------------------------------------------------------------------------------------
# structured output
# ---------------------------------------------------------------------------------------------


def test_langchain_structured_output_via_tool_calling() -> None:
    fake = ToolCallingFakeChatModel(messages=iter([GOOD]), usage=USAGE)
    summarizer = LangChainSummarizer(fake, retry_backoff=0)
    assert summarizer.backend.structured
    [summary] = summarizer.describe([leaf()])
    assert summary.text == GOOD["description"]
    assert fake.bound_tools == ["NodeDescription"]
    assert summarizer.last_report.total_tokens == 150


def test_langchain_structured_invalid_arguments_are_repaired() -> None:
    bad = {"description": GOOD["description"], "keywords": "coronavirus, ACE2"}
    fake = ToolCallingFakeChatModel(messages=iter([bad, GOOD]))
    summarizer = LangChainSummarizer(fake, retry_backoff=0, max_retries=1)
    [summary] = summarizer.describe([leaf()])
    assert summary.keywords == tuple(GOOD["keywords"])
    report = summarizer.last_report
    assert (report.calls, report.invalid_outputs) == (2, 1)
    assert "not a list" in str(fake.seen[1][-1])


def test_langchain_models_without_tools_use_json_and_structured_true_is_refused() -> None:
    fake = FakeListChatModel(responses=[f"```json\n{GOOD_TEXT}\n```"])
    summarizer = LangChainSummarizer(fake, retry_backoff=0)
    assert not summarizer.backend.structured
    assert summarizer.describe([leaf()])[0].text == GOOD["description"]
    with pytest.raises(ValueError, match="with_structured_output"):
        LangChainSummarizer(FakeListChatModel(responses=["x"]), structured=True)


def test_llamaindex_structured_predict_with_function_calling_mock() -> None:
    seen_tools = []

    def generator(messages, **kwargs):
        seen_tools.append([t.metadata.name for t in kwargs.get("tools") or []])
        return ChatMessage(
            role="assistant", blocks=[ToolCallBlock(tool_call_id="1", tool_name="NodeDescription", tool_kwargs=GOOD)]
        )

    llm = MockFunctionCallingLLM(response_generator=generator)
    summarizer = LlamaIndexSummarizer(llm, retry_backoff=0)
    assert summarizer.backend.structured
    [summary] = summarizer.describe([leaf()])
    assert summary == Summary(text=GOOD["description"], keywords=tuple(GOOD["keywords"]))
    assert seen_tools == [["NodeDescription"]]


def test_llamaindex_structured_predict_on_text_llm_and_mockllm_echo_falls_back() -> None:
    # structured=True on a text LLM: LlamaIndex parses the JSON answer itself.
    fake = ScriptedFakeLLM(script=[GOOD_TEXT])
    summarizer = LlamaIndexSummarizer(fake, structured=True, retry_backoff=0)
    assert summarizer.describe([leaf()])[0].text == GOOD["description"]
    # MockLLM echoes the prompt back: never a valid entry, so the node falls back, counted.
    echo = LlamaIndexSummarizer(MockLLM(), retry_backoff=0, max_retries=1)
    [summary] = echo.describe([leaf()])
    assert summary.text is None and summary.keywords
    assert echo.last_report.fallbacks == 1 and echo.last_report.calls == 2


# ---------------------------------------------------------------------------------------------
# sync/async plumbing and errors
# ---------------------------------------------------------------------------------------------


async def test_describe_works_inside_a_running_event_loop() -> None:
    summarizer, _ = make("langchain", responder=keyed)
    # Synchronous describe() from async code (a notebook, a web handler) must not deadlock.
    [summary] = summarizer.describe([leaf("PAGE-5 text.", n=5)])
    assert summary.keywords[0] == "kw-PAGE-5"
    [again] = await summarizer.adescribe([leaf("PAGE-6 text.", n=6)])
    assert again.keywords[0] == "kw-PAGE-6"


def test_describe_works_from_worker_threads() -> None:
    summarizer, _ = make("llamaindex", responder=keyed)
    out: dict = {}

    def work(i: int) -> None:
        out[i] = summarizer.describe([leaf(f"PAGE-{i} text.", n=i)])[0].keywords[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert out == {i: f"kw-PAGE-{i}" for i in range(4)}


def test_wrong_model_types_and_settings_are_explained() -> None:
    with pytest.raises(TypeError, match="LlamaIndexSummarizer"):
        LangChainSummarizer(MockLLM())
    with pytest.raises(TypeError, match="LangChainSummarizer"):
        LlamaIndexSummarizer(FakeListChatModel(responses=["x"]))
    with pytest.raises(ValueError, match="max_concurrency"):
        make("langchain", [GOOD], max_concurrency=0)



def test_unreadable_cache_files_are_explained(tmp_path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not a database at all, just text " * 40)
    with pytest.raises(ValueError, match="not an SQLite database"):
        SummaryCache(bad)
    broken = tmp_path / "bad.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="not a readable JSON cache"):
        SummaryCache(broken)
    with pytest.raises(ValueError, match="is a folder"):
        SummaryCache(tmp_path)


def test_llm_package_imports_no_framework_and_adapters_name_their_extra() -> None:
    blocker = textwrap.dedent(
        """
        import sys
        class _Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("langchain_core", "langchain", "llama_index"):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        sys.meta_path.insert(0, _Block())
        from drag_knee_retriever.llm import LangChainSummarizer, LlamaIndexSummarizer, LLMSummarizer
        for cls in (LangChainSummarizer, LlamaIndexSummarizer):
            try:
                cls(object())
            except ImportError as exc:
                print("IMPORTERROR", exc)
        """
    )
    result = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "drag-knee-retriever[langchain]" in result.stdout
    assert "drag-knee-retriever[llamaindex]" in result.stdout


# ---------------------------------------------------------------------------------------------
# per-level text choice through the real tree builder
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_builder_takes_leaf_descriptions_and_parent_summaries_from_the_model(framework: str) -> None:
    def responder(prompt: str) -> dict:
        if "PARTS:" in prompt:  # a parent: summarise the children's (fake) descriptions
            pages = sorted(set(re.findall(r"PAGE-\d+", prompt)))
            return {
                "description": f"Fake scope summary covering {' and '.join(pages)} on viral replication.",
                "keywords": ["kw-scope"] + [f"kw-{p}" for p in pages],
            }
        return keyed(prompt)

    summarizer, fake = make(framework, responder=responder)
    pages = [f"PAGE-{i} Coronaviruses replicate in the cytoplasm of infected cells, paragraph {i}." for i in range(1, 6)]
    config = BuildConfig(vectors=VectorConfig(leaf_dense="description", sparse="keywords"))
    [tree] = build_document_trees([Document(id="doc-1", pages=pages)], config, summarizer)
    leaves = [n for n in tree.nodes if n.is_leaf]
    inner = [n for n in tree.nodes if not n.is_leaf]
    assert len(leaves) == 5 and len(inner) == 3  # branching 3: two parents and a root
    for i, node in enumerate(sorted(leaves, key=lambda n: n.span.first_leaf), start=1):
        assert node.text == pages[i - 1]  # the page itself stays what a user reads
        assert node.description == answer_for(f"PAGE-{i}")["description"]
        assert node.keywords == tuple(answer_for(f"PAGE-{i}")["keywords"])
    for node in inner:
        assert node.text.startswith("Fake scope summary covering PAGE-")
        assert node.keywords[0] == "kw-scope"
    root = tree.root
    # The root was written from its children's model-written summaries, not from the pages.
    assert "PAGE-1" in root.text and "PAGE-5" in root.text
    assert fake.calls == 8


# ---------------------------------------------------------------------------------------------
# structured output that the model rejects or answers badly
# ---------------------------------------------------------------------------------------------


class ToolsRejectingFakeChatModel(ScriptedFakeChatModel):
    """A fake LLM that claims tool calling (bind_tools) but fails when tools are sent, like a local
    model without tool support; plain chat works."""

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        if kwargs.get("tools"):
            self.calls += 1
            raise ValueError("registry.ollama.ai/library/tiny does not support tools")
        return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)


def test_langchain_auto_mode_drops_structured_output_the_model_rejects(caplog) -> None:
    fake = ToolsRejectingFakeChatModel(messages=iter(()), responder=keyed)
    summarizer = LangChainSummarizer(fake, retry_backoff=0)
    assert summarizer.backend.structured
    with caplog.at_level(logging.WARNING, logger="drag_knee_retriever.llm.langchain"):
        summaries = summarizer.describe([leaf(f"PAGE-{i} text.", n=i) for i in range(3)])
    assert [s.keywords[0] for s in summaries] == [f"kw-PAGE-{i}" for i in range(3)]
    assert not summarizer.backend.structured  # switched to JSON answers for good
    assert summarizer.last_report.fallbacks == 0 and summarizer.last_report.failures == 0
    assert any("parsing JSON answers from now on" in r.getMessage() for r in caplog.records)


def test_llamaindex_structured_answer_rejected_by_the_framework_is_retried() -> None:
    answers = [
        {"description": GOOD["description"], "keywords": "coronavirus, ACE2"},  # not a list
        GOOD,
    ]

    def generator(messages, **kwargs):
        return ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="1", tool_name="NodeDescription", tool_kwargs=answers.pop(0))],
        )

    summarizer = LlamaIndexSummarizer(MockFunctionCallingLLM(response_generator=generator), retry_backoff=0)
    [summary] = summarizer.describe([leaf()])
    assert summary.text == GOOD["description"]
    report = summarizer.last_report
    assert (report.calls, report.invalid_outputs, report.errors, report.fallbacks) == (2, 1, 0, 0)
    assert "structured answer was rejected" in report.failure_samples[0]


def test_llamaindex_auto_mode_drops_structured_output_the_model_rejects() -> None:
    def generator(messages, **kwargs):
        if kwargs.get("tools"):
            raise RuntimeError("this deployment does not support function calling")
        return ChatMessage(role="assistant", content=json.dumps(keyed(str(messages[-1].content))))

    summarizer = LlamaIndexSummarizer(MockFunctionCallingLLM(response_generator=generator), retry_backoff=0)
    summaries = summarizer.describe([leaf(f"PAGE-{i} text.", n=i) for i in range(3)])
    assert [s.keywords[0] for s in summaries] == [f"kw-PAGE-{i}" for i in range(3)]
    assert not summarizer.backend.structured
    assert summarizer.last_report.fallbacks == 0
