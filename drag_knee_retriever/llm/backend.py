"""What the summariser core and the framework backends exchange, and the structured-output policy
they share.

- :data:`PromptMessage`, :class:`Usage`, :class:`ModelReply` and the :class:`ChatBackend` protocol;
- :func:`usage_from_mapping`: token usage from any common provider shape;
- :class:`StructuredFallback`: ``structured="auto"`` (try the framework's structured output; if the
  model rejects it before it ever worked, parse JSON chat answers from then on), written once for
  the LangChain and the LlamaIndex backend.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal, Mapping, Optional, Protocol, Sequence, Tuple, Union, runtime_checkable

from drag_knee_retriever.errors import ConfigError, InvalidOutputError

#: A chat message as the core builds it: ``(role, text)`` with role ``"system"``, ``"user"`` or
#: ``"assistant"``.
PromptMessage = Tuple[str, str]

#: ``structured=`` of a backend: ``"auto"``, ``True`` (required) or ``False`` (never).
StructuredMode = Union[bool, Literal["auto"]]


@dataclass(frozen=True)
class Usage:
    """Tokens one model call consumed, as the model reported them."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class ModelReply:
    """What a backend returns for one call.

    ``output`` is the structured answer when the framework parsed one (a dict or a pydantic
    object), else ``None``; ``text`` is the answer's raw text (parsed as JSON when ``output`` is
    ``None``, and quoted back to the model in the repair message); ``usage`` is ``None`` when the
    model did not report tokens; ``error`` is a parsing error the framework reported.
    """

    output: Any = None
    text: str = ""
    usage: Optional[Usage] = None
    error: Optional[str] = None


@runtime_checkable
class ChatBackend(Protocol):
    """A model the core can call: a stable ``identity`` (part of cache keys) and one async call."""

    @property
    def identity(self) -> str:  # pragma: no cover - protocol
        ...

    async def acall(self, messages: Sequence[PromptMessage]) -> ModelReply:  # pragma: no cover - protocol
        ...


def usage_from_mapping(data: Any) -> Optional[Usage]:
    """Read token usage from a mapping or object in any common shape (LangChain ``usage_metadata``,
    OpenAI ``usage``, Anthropic ``usage``); ``None`` when it holds no token counts."""
    if data is None:
        return None

    def pick(*names: str) -> Optional[int]:
        for name in names:
            value = data.get(name) if isinstance(data, Mapping) else getattr(data, name, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return int(value)
        return None

    prompt = pick("input_tokens", "prompt_tokens", "prompt_token_count", "input_token_count")
    completion = pick("output_tokens", "completion_tokens", "candidates_token_count", "output_token_count")
    total = pick("total_tokens", "total_token_count")
    if prompt is None and completion is None and total is None:
        return None
    prompt, completion = prompt or 0, completion or 0
    return Usage(input_tokens=prompt, output_tokens=completion, total_tokens=total if total is not None else prompt + completion)


def check_structured_mode(structured: Any) -> StructuredMode:
    """Return ``structured`` if it is ``"auto"``, ``True`` or ``False``; else raise ConfigError."""
    if structured not in ("auto", True, False) or (structured != "auto" and not isinstance(structured, bool)):
        raise ConfigError(f"structured must be 'auto', True or False, got {structured!r}.")
    return structured


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (at most 300 characters), for logs and reports."""
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


class StructuredFallback:
    """Whether a backend calls the model's structured output, and the fall back from it.

    ``available``: the framework offers structured output for this model (and the mode is not
    ``False``). With ``mode="auto"``, a structured call that raises before any structured call
    succeeded is retried as plain chat, and plain chat is used from then on (some models implement
    tool binding but reject tool calls at run time, e.g. a local model without tool support). Once
    structured output has worked, or with ``mode=True``, its errors are the call's errors. An
    :class:`InvalidOutputError` from the structured call means the model did answer the structured
    way (its answer was rejected): it counts as "worked" and is raised for a retry.
    """

    def __init__(self, mode: StructuredMode, available: bool, *, identity: str, logger: logging.Logger) -> None:
        self.auto = check_structured_mode(mode) == "auto"
        self.active = bool(available) and mode is not False
        self.worked = False
        self._identity = identity
        self._logger = logger

    async def call(
        self,
        structured: Callable[[], Awaitable[Any]],
        plain: Callable[[], Awaitable[Any]],
    ) -> Any:
        """Run ``structured()`` or ``plain()`` (both zero-argument coroutine functions) by the policy."""
        if not self.active:
            return await plain()
        try:
            reply = await structured()
        except InvalidOutputError:
            self.worked = True
            raise
        except Exception as exc:
            if not self.auto or self.worked:
                raise
            reply = await plain()
            if self.active:
                self._logger.warning(
                    "%s failed with structured output (%s: %s) but answers plain chat; parsing JSON "
                    "answers from now on (pass structured=False to skip the attempt).",
                    self._identity,
                    type(exc).__name__,
                    first_line(exc),
                )
                self.active = False
            return reply
        self.worked = True
        return reply
