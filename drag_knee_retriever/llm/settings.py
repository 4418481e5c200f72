"""The LLM summariser's settings: one frozen, validated dataclass (checked once, when built)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, Optional

from ..errors import ConfigError
from .prompts import DEFAULT_PROMPTS, SummaryPrompts


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}.")


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


@dataclass(frozen=True)
class SummarizerSettings:
    """How :class:`~drag_knee_retriever.llm.LLMSummarizer` asks, retries and checks.

    - ``prompts``: the templates (:data:`~drag_knee_retriever.llm.prompts.DEFAULT_PROMPTS`).
    - ``max_concurrency``: model calls in flight at once; ``timeout``: seconds per call (``None``:
      no limit); ``max_retries``: further calls after a node's first failed one (0 = no retry);
      ``retry_backoff``: seconds before the first retry, doubled for each further one.
    - ``min_keywords`` / ``max_keywords``: the range the prompt asks for; at most ``max_keywords``
      are kept and at least one valid keyword is required.
    - ``describe_leaves``: ``False`` asks the model for parents only (leaves keep their text and
      get extractive keywords), which cuts the calls to roughly a third with branching 3.
    - ``language``: ``"auto"`` (Cyrillic text is named Russian, other text "the language of the
      text") or a language name used verbatim in the prompt.
    - ``max_input_chars``: the longest input passed to the model per node (longer is cut);
      ``min_description_chars`` / ``max_description_chars``: bounds on a valid description.
    - ``on_failure``: ``"fallback"`` (the LLM-free description) or ``"raise"``
      (:class:`~drag_knee_retriever.SummarizerError`).

    Invalid values raise :class:`~drag_knee_retriever.ConfigError` (a ``ValueError``) when built;
    a ``prompts`` of the wrong type raises ``TypeError``. :meth:`replace` returns a checked copy.
    """

    prompts: SummaryPrompts = DEFAULT_PROMPTS
    max_concurrency: int = 4
    timeout: Optional[float] = 120.0
    max_retries: int = 2
    retry_backoff: float = 0.5
    min_keywords: int = 5
    max_keywords: int = 10
    describe_leaves: bool = True
    language: str = "auto"
    max_input_chars: int = 12_000
    min_description_chars: int = 20
    max_description_chars: int = 1500
    on_failure: Literal["fallback", "raise"] = "fallback"

    def __post_init__(self) -> None:
        if self.prompts is None:
            object.__setattr__(self, "prompts", DEFAULT_PROMPTS)
        if not isinstance(self.prompts, SummaryPrompts):
            raise TypeError(
                f"prompts must be a SummaryPrompts, got {type(self.prompts).__name__}; "
                "use DEFAULT_PROMPTS.replace(leaf=...) to change one template."
            )
        _check_int("max_concurrency", self.max_concurrency, 1)
        _check_int("max_retries", self.max_retries, 0)
        _check_int("min_keywords", self.min_keywords, 1)
        _check_int("max_keywords", self.max_keywords, self.min_keywords)
        _check_int("max_input_chars", self.max_input_chars, 200)
        _check_int("min_description_chars", self.min_description_chars, 1)
        _check_int("max_description_chars", self.max_description_chars, max(50, self.min_description_chars))
        if self.timeout is not None:
            if not _is_number(self.timeout) or self.timeout <= 0:
                raise ConfigError(f"timeout must be a number of seconds > 0 or None, got {self.timeout!r}.")
            object.__setattr__(self, "timeout", float(self.timeout))
        if not _is_number(self.retry_backoff) or self.retry_backoff < 0:
            raise ConfigError(f"retry_backoff must be a number of seconds >= 0, got {self.retry_backoff!r}.")
        object.__setattr__(self, "retry_backoff", float(self.retry_backoff))
        if self.on_failure not in ("fallback", "raise"):
            raise ConfigError(f"on_failure must be 'fallback' or 'raise', got {self.on_failure!r}.")
        if not isinstance(self.language, str) or not self.language.strip():
            raise ConfigError(f"language must be 'auto' or a language name such as 'Russian', got {self.language!r}.")
        object.__setattr__(self, "language", self.language.strip())
        object.__setattr__(self, "describe_leaves", bool(self.describe_leaves))

    def replace(self, **changes: Any) -> "SummarizerSettings":
        """A copy with ``changes`` applied (and checked); unknown names raise ``TypeError``."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise TypeError(f"Unknown summariser setting(s) {unknown}; the settings are {', '.join(sorted(names))}.")
        return dataclasses.replace(self, **changes)
