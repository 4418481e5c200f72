"""LangChain adapter: node descriptions written by any LangChain chat model.

Needs ``langchain-core`` (``pip install 'drag-knee-retriever[langchain]'``) plus the user's model
package (``langchain-openai``, ``langchain-ollama``, ...). The adapter converts messages and answers;
everything else lives in :mod:`drag_knee_retriever.llm.core`.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Mapping, Optional, Sequence

from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.llm.backend import (
    ModelReply,
    PromptMessage,
    StructuredFallback,
    StructuredMode,
    Usage,
    check_structured_mode,
    usage_from_mapping,
)
from drag_knee_retriever.llm.core import LLMSummarizer

logger = logging.getLogger(__name__)

_EXTRA = "pip install 'drag-knee-retriever[langchain]'"


def _import_langchain() -> Any:
    try:
        from langchain_core import messages as lc_messages
        from langchain_core.language_models import BaseChatModel
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            f"LangChainSummarizer needs langchain-core, which is not installed ({exc}). "
            f"Install it with: {_EXTRA}"
        ) from exc
    return BaseChatModel, lc_messages


class LangChainBackend:
    """Calls a LangChain ``BaseChatModel`` for the summariser core.

    ``structured``: ``"auto"`` uses ``with_structured_output`` when the model implements it (tool
    calling or JSON schema) and plain chat with JSON parsing otherwise; ``True`` requires it;
    ``False`` always parses the chat answer. ``structured_kwargs`` go to ``with_structured_output``
    (e.g. ``{"method": "json_schema"}``); ``run_config`` is the ``RunnableConfig`` of every call
    (tags, callbacks). ``model_identity`` overrides the name used in cache keys.
    """

    def __init__(
        self,
        chat_model: Any,
        *,
        structured: StructuredMode = "auto",
        structured_kwargs: Optional[Mapping[str, Any]] = None,
        run_config: Optional[Mapping[str, Any]] = None,
        model_identity: Optional[str] = None,
    ) -> None:
        base_chat_model, self._messages = _import_langchain()
        if not isinstance(chat_model, base_chat_model):
            raise TypeError(
                f"LangChainSummarizer needs a LangChain chat model (a BaseChatModel such as "
                f"ChatOpenAI or ChatOllama), got {type(chat_model).__name__}; for a LlamaIndex LLM "
                "use LlamaIndexSummarizer."
            )
        check_structured_mode(structured)
        self.chat_model = chat_model
        self.run_config: Optional[Dict[str, Any]] = dict(run_config) if run_config else None
        self._identity = model_identity or _model_identity(chat_model)
        self._structured: Any = None
        if structured is not False:
            from drag_knee_retriever.llm.schema import NodeDescription

            try:
                # include_raw keeps the AIMessage: its usage_metadata and its text when parsing fails.
                self._structured = chat_model.with_structured_output(
                    NodeDescription, include_raw=True, **dict(structured_kwargs or {})
                )
            except NotImplementedError as exc:
                if structured is True:
                    raise ConfigError(
                        f"{type(chat_model).__name__} does not implement with_structured_output ({exc}); "
                        "use structured='auto' or False to parse JSON from its chat answers."
                    ) from exc
                logger.debug("%s has no structured output; parsing JSON answers.", type(chat_model).__name__)
        self._policy = StructuredFallback(
            structured, self._structured is not None, identity=self._identity, logger=logger
        )

    @property
    def identity(self) -> str:
        """``langchain:<class>:<model name>`` unless overridden."""
        return self._identity

    @property
    def structured(self) -> bool:
        """Whether calls use the model's structured output."""
        return self._policy.active

    def _to_messages(self, messages: Sequence[PromptMessage]) -> list:
        m = self._messages
        kinds = {"system": m.SystemMessage, "user": m.HumanMessage, "assistant": m.AIMessage}
        return [kinds[role](content=text) for role, text in messages]

    async def acall(self, messages: Sequence[PromptMessage]) -> ModelReply:
        """One model call; returns the parsed answer (if any), the raw text and the usage."""
        lc_messages = self._to_messages(messages)
        return await self._policy.call(
            lambda: self._call_structured(self._structured, lc_messages),
            lambda: self._call_plain(lc_messages),
        )

    async def _call_plain(self, lc_messages: list) -> ModelReply:
        message = await self.chat_model.ainvoke(lc_messages, config=self.run_config)
        return ModelReply(output=None, text=_message_text(message), usage=_usage(message))

    async def _call_structured(self, structured: Any, lc_messages: list) -> ModelReply:
        out = await structured.ainvoke(lc_messages, config=self.run_config)
        raw = out.get("raw") if isinstance(out, Mapping) else None
        parsed = out.get("parsed") if isinstance(out, Mapping) else out
        error = out.get("parsing_error") if isinstance(out, Mapping) else None
        if parsed is None:
            # The framework could not parse the tool call (wrong types): hand its arguments to the
            # core's validator, which names the exact problem for the repair prompt.
            tool_calls = getattr(raw, "tool_calls", None) or []
            if tool_calls:
                parsed = tool_calls[0].get("args")
        return ModelReply(
            output=parsed,
            text=_message_text(raw),
            usage=_usage(raw),
            error=str(error) if error else None,
        )


class LangChainSummarizer(LLMSummarizer):
    """LLM summariser over any LangChain chat model.

    >>> from langchain_openai import ChatOpenAI                                  # doctest: +SKIP
    >>> summarizer = LangChainSummarizer(ChatOpenAI(model="gpt-4o-mini"), cache="descriptions.sqlite")
    >>> index = DragKneeIndex("./index", summarizer=summarizer)                  # doctest: +SKIP

    ``structured``, ``structured_kwargs``, ``run_config`` and ``model_identity`` configure the call
    (see :class:`LangChainBackend`); every other keyword is an :class:`LLMSummarizer` setting
    (``max_concurrency``, ``timeout``, ``max_retries``, ``cache``, ``prompts``, ``describe_leaves``, ...).
    """

    def __init__(
        self,
        chat_model: Any,
        *,
        structured: StructuredMode = "auto",
        structured_kwargs: Optional[Mapping[str, Any]] = None,
        run_config: Optional[Mapping[str, Any]] = None,
        model_identity: Optional[str] = None,
        **options: Any,
    ) -> None:
        backend = LangChainBackend(
            chat_model,
            structured=structured,
            structured_kwargs=structured_kwargs,
            run_config=run_config,
            model_identity=model_identity,
        )
        super().__init__(backend, **options)

    @property
    def chat_model(self) -> Any:
        """The wrapped LangChain chat model."""
        return self.backend.chat_model  # type: ignore[attr-defined]


def _model_identity(chat_model: Any) -> str:
    name = ""
    for attr in ("model_name", "model", "model_id", "deployment_name", "repo_id"):
        value = getattr(chat_model, attr, None)
        if isinstance(value, str) and value:
            name = value
            break
    return f"langchain:{type(chat_model).__name__}" + (f":{name}" if name else "")


def _message_text(message: Any) -> str:
    if message is None:
        return ""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


def _usage(message: Any) -> Optional[Usage]:
    if message is None:
        return None
    usage = usage_from_mapping(getattr(message, "usage_metadata", None))
    if usage is not None:
        return usage
    metadata = getattr(message, "response_metadata", None) or {}
    return usage_from_mapping(metadata.get("token_usage") or metadata.get("usage"))
