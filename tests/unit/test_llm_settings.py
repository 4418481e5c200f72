"""SummarizerSettings (one frozen, validated dataclass) and the shared structured-output policy,
with LangChain's fake chat model where a model is needed."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import pytest

from drag_knee_retriever import ConfigError, DragKneeError, InvalidOutputError, SummarizerError
from drag_knee_retriever.llm import (
    DEFAULT_PROMPTS,
    LangChainSummarizer,
    StructuredFallback,
    SummarizerSettings,
)
from langchain_core.language_models.fake_chat_models import FakeListChatModel


def test_settings_are_frozen_and_checked_when_built() -> None:
    settings = SummarizerSettings(max_concurrency=8, timeout=5, language=" Russian ")
    # One language vocabulary: lower-case names; the prompt names it capitalised, as before.
    assert settings.timeout == 5.0 and settings.language == "russian" and settings.prompt_language == "Russian"
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_concurrency = 2  # type: ignore[misc]
    for bad in ({"max_concurrency": 0}, {"max_keywords": 2, "min_keywords": 3}, {"timeout": 0},
                {"retry_backoff": -1}, {"on_failure": "ignore"}, {"language": " "}, {"max_retries": True}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            SummarizerSettings(**bad)
    with pytest.raises(TypeError, match="SummaryPrompts"):
        SummarizerSettings(prompts="hello")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Unknown summariser setting"):
        settings.replace(max_concurency=3)


def test_keywords_are_a_convenience_for_the_settings_with_fake_chat_model() -> None:
    model = FakeListChatModel(responses=["{}"])
    by_keywords = LangChainSummarizer(model, max_concurrency=3, describe_leaves=False, cache=False)
    settings = SummarizerSettings(max_concurrency=3, describe_leaves=False)
    by_settings = LangChainSummarizer(model, settings=settings, cache=False)
    assert by_keywords.settings == by_settings.settings == settings
    assert by_keywords.identity == by_settings.identity
    # A keyword overrides the given settings object.
    assert LangChainSummarizer(model, settings=settings, max_concurrency=5, cache=False).settings.max_concurrency == 5
    assert by_keywords.prompts is DEFAULT_PROMPTS
    with pytest.raises(ConfigError, match="structured"):
        LangChainSummarizer(model, structured="sometimes")


def test_llm_errors_are_drag_knee_errors() -> None:
    assert issubclass(InvalidOutputError, DragKneeError) and issubclass(InvalidOutputError, ValueError)
    assert issubclass(SummarizerError, DragKneeError)


def _run(policy: StructuredFallback, structured, plain):
    return asyncio.run(policy.call(structured, plain))


def test_structured_fallback_auto_drops_structured_output_once(caplog) -> None:
    calls = []

    async def broken():
        calls.append("structured")
        raise RuntimeError("tools not supported")

    async def plain():
        calls.append("plain")
        return "answer"

    policy = StructuredFallback("auto", True, identity="m", logger=logging.getLogger("t"))
    with caplog.at_level(logging.WARNING, logger="t"):
        assert _run(policy, broken, plain) == "answer"
    assert not policy.active and "from now on" in caplog.text
    assert _run(policy, broken, plain) == "answer"
    assert calls == ["structured", "plain", "plain"]


def test_structured_fallback_keeps_errors_once_it_worked_or_when_required() -> None:
    state = {"fail": False}

    async def structured():
        if state["fail"]:
            raise RuntimeError("network")
        return "structured"

    async def plain():
        return "plain"

    policy = StructuredFallback("auto", True, identity="m", logger=logging.getLogger("t"))
    assert _run(policy, structured, plain) == "structured"
    state["fail"] = True
    with pytest.raises(RuntimeError):
        _run(policy, structured, plain)
    required = StructuredFallback(True, True, identity="m", logger=logging.getLogger("t"))
    with pytest.raises(RuntimeError):
        _run(required, structured, plain)

    async def rejected():
        raise InvalidOutputError("bad fields")

    fresh = StructuredFallback("auto", True, identity="m", logger=logging.getLogger("t"))
    with pytest.raises(InvalidOutputError):
        _run(fresh, rejected, plain)
    assert fresh.active and fresh.worked  # a rejected answer is a structured answer: retry, do not drop
    assert _run(StructuredFallback(False, True, identity="m", logger=logging.getLogger("t")), structured, plain) == "plain"
