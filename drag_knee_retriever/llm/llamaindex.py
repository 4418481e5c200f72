"""LlamaIndex adapter: node descriptions written by any LlamaIndex LLM.

Needs ``llama-index-core`` (``pip install 'drag-knee-retriever[llamaindex]'``) plus the user's LLM
package (``llama-index-llms-openai``, ``llama-index-llms-ollama``, ...). The adapter converts
messages and answers; everything else lives in :mod:`drag_knee_retriever.llm.core`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence

from pydantic import ValidationError

from drag_knee_retriever.errors import InvalidOutputError
from drag_knee_retriever.llm.backend import (
    ModelReply,
    PromptMessage,
    StructuredFallback,
    StructuredMode,
    Usage,
    check_structured_mode,
    first_line,
    usage_from_mapping,
)
from drag_knee_retriever.llm.core import LLMSummarizer

logger = logging.getLogger(__name__)

_EXTRA = "pip install 'drag-knee-retriever[llamaindex]'"

# Token usage of structured calls is not returned by ``structured_predict``; the LLM's own
# end-of-call events carry it. A handler on LlamaIndex's root dispatcher appends what it sees to the
# list in this context variable, which only our calls set, so concurrent calls (each in its own
# asyncio task or worker thread, both of which copy the context) never mix their counts.
_USAGE_SINK: contextvars.ContextVar[Optional[List[Usage]]] = contextvars.ContextVar(
    "drag_knee_llamaindex_usage", default=None
)
_HANDLER_LOCK = threading.Lock()
_HANDLER_INSTALLED = False


def _import_llamaindex() -> Any:
    try:
        from llama_index.core.llms import LLM
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            f"LlamaIndexSummarizer needs llama-index-core, which is not installed ({exc}). "
            f"Install it with: {_EXTRA}"
        ) from exc
    return LLM


def _install_usage_handler() -> None:
    global _HANDLER_INSTALLED
    with _HANDLER_LOCK:
        if _HANDLER_INSTALLED:
            return
        from llama_index.core.instrumentation import get_dispatcher
        from llama_index.core.instrumentation.event_handlers import BaseEventHandler
        from llama_index.core.instrumentation.events.llm import LLMChatEndEvent, LLMCompletionEndEvent

        class _DragKneeUsageHandler(BaseEventHandler):
            """Collects token usage of LLM calls made by drag-knee-retriever's summariser."""

            @classmethod
            def class_name(cls) -> str:
                return "DragKneeUsageHandler"

            def handle(self, event: Any, **kwargs: Any) -> Any:
                sink = _USAGE_SINK.get()
                if sink is None or not isinstance(event, (LLMChatEndEvent, LLMCompletionEndEvent)):
                    return None
                usage = _response_usage(getattr(event, "response", None))
                if usage is not None:
                    sink.append(usage)
                return None

        get_dispatcher().add_event_handler(_DragKneeUsageHandler())
        _HANDLER_INSTALLED = True


class LlamaIndexBackend:
    """Calls a LlamaIndex ``LLM`` for the summariser core.

    ``structured``: ``"auto"`` uses ``astructured_predict`` (tool calling) when the LLM is a
    function-calling model and plain chat with JSON parsing otherwise; ``True`` always uses
    ``structured_predict`` (LlamaIndex then parses JSON text itself for non-function-calling
    models); ``False`` always parses the chat answer. ``llm_kwargs`` go to every call;
    ``model_identity`` overrides the name used in cache keys.

    LLMs whose async methods are LlamaIndex's blocking defaults (``CustomLLM`` subclasses that
    implement only ``complete``) are called in worker threads, so ``max_concurrency`` and timeouts
    still apply (a timed-out thread finishes in the background; its answer is discarded).
    """

    def __init__(
        self,
        llm: Any,
        *,
        structured: StructuredMode = "auto",
        llm_kwargs: Optional[Mapping[str, Any]] = None,
        model_identity: Optional[str] = None,
    ) -> None:
        base_llm = _import_llamaindex()
        if not isinstance(llm, base_llm):
            raise TypeError(
                f"LlamaIndexSummarizer needs a LlamaIndex LLM (such as OpenAI or Ollama from "
                f"llama_index.llms.*), got {type(llm).__name__}; for a LangChain chat model use "
                "LangChainSummarizer."
            )
        check_structured_mode(structured)
        from llama_index.core.llms.custom import CustomLLM

        self.llm = llm
        self.llm_kwargs: Dict[str, Any] = dict(llm_kwargs or {})
        metadata = llm.metadata
        available = structured is True or (
            structured == "auto" and bool(getattr(metadata, "is_function_calling_model", False))
        )
        cls = type(llm)
        # Methods are wrapped by LlamaIndex's instrumentation on every attribute access, so compare
        # the classes that define them, not the function objects.
        blocking_chat = isinstance(llm, CustomLLM) and _defining_class(cls, "achat") is CustomLLM
        self._async_complete = blocking_chat and _defining_class(cls, "acomplete") is not CustomLLM
        self._threaded = blocking_chat
        self._identity = model_identity or _model_identity(llm)
        self._policy = StructuredFallback(structured, available, identity=self._identity, logger=logger)
        _install_usage_handler()

    @property
    def identity(self) -> str:
        """``llamaindex:<class>:<model name>`` unless overridden."""
        return self._identity

    @property
    def structured(self) -> bool:
        """Whether calls use ``structured_predict``."""
        return self._policy.active

    def _to_messages(self, messages: Sequence[PromptMessage]) -> list:
        from llama_index.core.llms import ChatMessage, MessageRole

        roles = {"system": MessageRole.SYSTEM, "user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}
        return [ChatMessage(role=roles[role], content=text) for role, text in messages]

    async def acall(self, messages: Sequence[PromptMessage]) -> ModelReply:
        """One model call; returns the parsed answer (if any), the raw text and the usage."""
        li_messages = self._to_messages(messages)
        sink: List[Usage] = []
        token = _USAGE_SINK.set(sink)

        async def plain() -> ModelReply:
            del sink[:]  # what a failed structured attempt reported is not this answer's usage
            return await self._plain(li_messages, sink)

        try:
            return await self._policy.call(lambda: self._structured_reply(li_messages, sink), plain)
        finally:
            _USAGE_SINK.reset(token)

    async def _structured_reply(self, li_messages: list, sink: List[Usage]) -> ModelReply:
        try:
            output = await self._structured_predict(li_messages)
        except (ValidationError, ValueError, TypeError) as exc:
            # structured_predict parses inside LlamaIndex and raises on a malformed answer.
            raise InvalidOutputError(f"the structured answer was rejected ({first_line(exc)})") from exc
        text = output.model_dump_json() if hasattr(output, "model_dump_json") else str(output)
        return ModelReply(output=output, text=text, usage=_largest(sink))

    async def _plain(self, li_messages: list, sink: List[Usage]) -> ModelReply:
        response = await self._chat(li_messages)
        usage = _largest(sink) or _response_usage(response)
        return ModelReply(output=None, text=_response_text(response), usage=usage)

    async def _structured_predict(self, li_messages: list) -> Any:
        from llama_index.core.prompts import ChatPromptTemplate

        from drag_knee_retriever.llm.schema import NodeDescription

        # The messages are already filled in; the template only carries them to the program.
        prompt = ChatPromptTemplate(message_templates=li_messages)
        kwargs = self.llm_kwargs or None
        if self._threaded:
            return await asyncio.to_thread(self.llm.structured_predict, NodeDescription, prompt, kwargs)
        return await self.llm.astructured_predict(NodeDescription, prompt, llm_kwargs=kwargs)

    async def _chat(self, li_messages: list) -> Any:
        if self._async_complete:
            prompt = self.llm.messages_to_prompt(li_messages)
            return await self.llm.acomplete(prompt, formatted=True, **self.llm_kwargs)
        if self._threaded:
            return await asyncio.to_thread(self.llm.chat, li_messages, **self.llm_kwargs)
        return await self.llm.achat(li_messages, **self.llm_kwargs)


class LlamaIndexSummarizer(LLMSummarizer):
    """LLM summariser over any LlamaIndex LLM.

    >>> from llama_index.llms.openai import OpenAI                               # doctest: +SKIP
    >>> summarizer = LlamaIndexSummarizer(OpenAI(model="gpt-4o-mini"), cache="descriptions.sqlite")
    >>> index = DragKneeIndex("./index", summarizer=summarizer)                  # doctest: +SKIP

    ``structured``, ``llm_kwargs`` and ``model_identity`` configure the call (see
    :class:`LlamaIndexBackend`); every other keyword is an :class:`LLMSummarizer` setting
    (``max_concurrency``, ``timeout``, ``max_retries``, ``cache``, ``prompts``, ``describe_leaves``, ...).
    """

    def __init__(
        self,
        llm: Any,
        *,
        structured: StructuredMode = "auto",
        llm_kwargs: Optional[Mapping[str, Any]] = None,
        model_identity: Optional[str] = None,
        **options: Any,
    ) -> None:
        backend = LlamaIndexBackend(llm, structured=structured, llm_kwargs=llm_kwargs, model_identity=model_identity)
        super().__init__(backend, **options)

    @property
    def llm(self) -> Any:
        """The wrapped LlamaIndex LLM."""
        return self.backend.llm  # type: ignore[attr-defined]


def _defining_class(cls: type, name: str) -> Optional[type]:
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return None


def _model_identity(llm: Any) -> str:
    cls_name = type(llm).__name__
    name = getattr(getattr(llm, "metadata", None), "model_name", "") or ""
    if name == "unknown":
        name = ""
    return f"llamaindex:{cls_name}" + (f":{name}" if name else "")


def _response_text(response: Any) -> str:
    if response is None:
        return ""
    message = getattr(response, "message", None)
    if message is not None:
        content = getattr(message, "content", None)
        return content if isinstance(content, str) else ""
    text = getattr(response, "text", None)
    return text if isinstance(text, str) else ""


def _response_usage(response: Any) -> Optional[Usage]:
    if response is None:
        return None
    raw = getattr(response, "raw", None)
    if raw is not None:
        nested = raw.get("usage") if isinstance(raw, Mapping) else getattr(raw, "usage", None)
        usage = usage_from_mapping(nested)
        if usage is not None:
            return usage
        if isinstance(raw, Mapping):
            usage = usage_from_mapping(raw.get("usage_metadata"))
            if usage is not None:
                return usage
    return usage_from_mapping(getattr(response, "additional_kwargs", None))


def _largest(usages: List[Usage]) -> Optional[Usage]:
    # One request can surface twice (a CustomLLM's chat wraps its complete, and both report the
    # same raw response); keep the largest instead of summing.
    if not usages:
        return None
    return max(usages, key=lambda u: (u.total_tokens, u.input_tokens + u.output_tokens))
