"""The LLM summariser's settings: one frozen, validated dataclass (checked once, when built, from the
rules declared with each field; see :mod:`drag_knee_retriever.model._settings`)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Optional

from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.model._languages import check_name, display_name
from drag_knee_retriever.model._settings import Settings, setting, settings_class
from drag_knee_retriever.llm.prompts import DEFAULT_PROMPTS, SummaryPrompts


def _prompts(name: str, value: Any) -> SummaryPrompts:
    if value is None:
        return DEFAULT_PROMPTS
    if not isinstance(value, SummaryPrompts):
        raise TypeError(
            f"prompts must be a SummaryPrompts, got {type(value).__name__}; "
            "use DEFAULT_PROMPTS.replace(leaf=...) to change one template."
        )
    return value


def _language(name: str, value: Any) -> str:
    language = check_name(value, name)
    return "auto" if language == "auto" else language


@settings_class
class SummarizerSettings(Settings):
    """How :class:`~drag_knee_retriever.llm.LLMSummarizer` asks, retries and checks.

    Invalid values raise :class:`~drag_knee_retriever.ConfigError` (a ``ValueError``) when built;
    a ``prompts`` of the wrong type raises ``TypeError``. :meth:`replace` returns a checked copy.
    """

    prompts: SummaryPrompts = setting(DEFAULT_PROMPTS, kind="any", check=_prompts,
                                      doc="The templates (drag_knee_retriever.llm.prompts.DEFAULT_PROMPTS).")
    max_concurrency: int = setting(4, kind=int, low=1, doc="Model calls in flight at once.")
    timeout: Optional[float] = setting(120.0, kind=float, low=0.0, low_open=True, optional=True,
                                       doc="Seconds per model call (None: no limit).")
    max_retries: int = setting(2, kind=int, low=0, doc="Further calls after a node's first failed one (0 = no retry).")
    retry_backoff: float = setting(0.5, kind=float, low=0.0,
                                   doc="Seconds before the first retry, doubled for each further one.")
    min_keywords: int = setting(5, kind=int, low=1, doc="The fewest keywords the prompt asks for.")
    max_keywords: int = setting(10, kind=int, low=1,
                                doc="The most keywords the prompt asks for and keeps (at least one valid one is required).")
    describe_leaves: bool = setting(
        True, kind="any", check=lambda n, v: bool(v),
        doc="False asks the model for parents only (leaves keep their text and get extractive keywords): roughly a "
            "third of the calls with branching 3.")
    language: str = setting(
        "auto", kind="any", check=_language,
        doc="The language the descriptions are written in: 'auto' (Cyrillic text is named Russian, other text 'the "
            "language of the text') or a language name ('english', 'russian', 'german', ...; the package's one "
            "vocabulary), named in the prompt.")
    max_input_chars: int = setting(12_000, kind=int, low=200, doc="The longest input passed to the model per node (longer is cut).")
    min_description_chars: int = setting(20, kind=int, low=1, doc="The shortest valid description.")
    max_description_chars: int = setting(1500, kind=int, low=50, doc="The longest valid description.")
    on_failure: Literal["fallback", "raise"] = setting(
        "fallback", kind="choice", choices=("fallback", "raise"),
        doc="'fallback' (the LLM-free description) or 'raise' (SummarizerError) when a node cannot be described.")

    def _check(self) -> None:
        if self.max_keywords < self.min_keywords:
            raise ConfigError(f"SummarizerSettings.max_keywords must be an integer >= {self.min_keywords} "
                              f"(min_keywords), got {self.max_keywords!r}.")
        if self.max_description_chars < max(50, self.min_description_chars):
            raise ConfigError(f"SummarizerSettings.max_description_chars must be an integer >= "
                              f"{max(50, self.min_description_chars)}, got {self.max_description_chars!r}.")

    @property
    def prompt_language(self) -> str:
        """How the prompt names the language: ``"auto"``, or the capitalised name (``"Russian"``)."""
        return "auto" if self.language == "auto" else display_name(self.language)

    def replace(self, **changes: Any) -> "SummarizerSettings":
        """A copy with ``changes`` applied (and checked); unknown names raise ``TypeError``."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise TypeError(f"Unknown summariser setting(s) {unknown}; the settings are {', '.join(sorted(names))}.")
        return dataclasses.replace(self, **changes)
