"""The prompts of the LLM summarisers, in one place.

Override any of them by passing ``SummaryPrompts(...)`` (or ``DEFAULT_PROMPTS.replace(...)``) to a
summariser. Templates use ``{name}`` placeholders that are filled by plain replacement of the known
names only, so literal braces (JSON examples) need no escaping:

- system: ``{min_keywords}``, ``{max_keywords}``
- leaf: ``{title}``, ``{text}``, ``{language}``, ``{min_keywords}``, ``{max_keywords}``
- parent: ``{title}``, ``{children}``, ``{count}``, ``{language}``, ``{min_keywords}``, ``{max_keywords}``
- repair: ``{error}``, ``{min_keywords}``, ``{max_keywords}``

The prompts follow the method's original instructions: a leaf (a page) gets 3-5 technical sentences
written for semantic search and 5-10 anchor keywords in base form (abbreviations, synonyms, English
equivalents) written for BM25; a parent gets a generalising summary of its whole scope, written from
its children's descriptions, not a list of them. The answer is asked in the document's language, which
is what makes them work for Russian documents as well as English ones.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, fields, replace
from typing import Mapping

from drag_knee_retriever.errors import ConfigError

#: Bump when the expected answer shape changes: it is part of every cache key.
SCHEMA_VERSION = "1"

_SYSTEM = """You write entries for a search index over documents. Each entry describes one part of a \
document and is used for two kinds of search: semantic (vector) search reads the description, \
keyword (BM25) search reads the keywords.

Answer with one JSON object and nothing else (no prose, no code fences):
{"description": "<3-5 sentences>", "keywords": ["<keyword>", "..."]}

Rules:
- description: 3-5 factual, technical sentences about the content itself: the subject, key entities, \
terms, methods, numbers and conclusions. Do not start with "This text", "This page" or similar; \
do not invent facts that are not in the input.
- keywords: a JSON list of {min_keywords}-{max_keywords} short anchor terms a user would type into a \
search box. Give each in its base (dictionary) form: nominative singular nouns, infinitive verbs. \
Include abbreviations together with their expansions, common synonyms, and English equivalents of \
non-English terms.
- Write the description in the language of the input text (Russian input gets a Russian \
description). Keywords are in that language too, plus English equivalents."""

_LEAF = """Describe this page of a document.
{title}Language of the text: {language}.

TEXT:
\"\"\"
{text}
\"\"\"

Return the JSON object with "description" (3-5 sentences, optimised for semantic search) and \
"keywords" ({min_keywords}-{max_keywords} anchor terms in base form, optimised for keyword search)."""

_PARENT = """Below are the descriptions of {count} consecutive parts of one document, in order.
{title}Language of the text: {language}.

Write a generalising summary of the whole scope these parts cover together: its common subject, \
its main topics and what it concludes. Do not list or enumerate the parts one by one, and do not \
refer to them as "part 1", "the first part" and so on.

PARTS:
{children}

Return the JSON object with "description" (3-5 sentences about the whole scope) and "keywords" \
({min_keywords}-{max_keywords} anchor terms in base form that characterise the whole scope)."""

_REPAIR = """Your previous answer could not be used: {error}
Answer again with exactly one JSON object of the form \
{"description": "<3-5 sentences>", "keywords": ["<keyword>", "..."]}: a non-empty description \
string and a JSON list of {min_keywords}-{max_keywords} keyword strings. No other text."""


@dataclass(frozen=True)
class SummaryPrompts:
    """The prompt templates of an LLM summariser (see the module docstring for placeholders).

    Their text is hashed into :attr:`identity`, which is part of every cache key: editing a prompt
    describes the documents anew instead of reusing answers written for the old prompt.
    """

    system: str = _SYSTEM
    leaf: str = _LEAF
    parent: str = _PARENT
    repair: str = _REPAIR

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(
                    f"SummaryPrompts.{f.name} must be a non-empty template string, got {value!r}; "
                    "start from DEFAULT_PROMPTS and replace only the templates you want to change."
                )
        if "{text}" not in self.leaf:
            raise ConfigError(
                "SummaryPrompts.leaf must contain the placeholder {text} (where the page goes)."
            )
        if "{children}" not in self.parent:
            raise ConfigError(
                "SummaryPrompts.parent must contain the placeholder {children} "
                "(where the children's descriptions go)."
            )

    @property
    def identity(self) -> str:
        """A short hash of the templates and the answer schema version."""
        digest = hashlib.sha256()
        for f in fields(self):
            digest.update(f.name.encode())
            digest.update(b"\x00")
            digest.update(getattr(self, f.name).encode("utf-8"))
            digest.update(b"\x00")
        digest.update(SCHEMA_VERSION.encode())
        return digest.hexdigest()[:12]

    def replace(self, **changes: str) -> "SummaryPrompts":
        """A copy with some templates replaced (validated again)."""
        return replace(self, **changes)


DEFAULT_PROMPTS = SummaryPrompts()


def fill(template: str, values: Mapping[str, object]) -> str:
    """Fill ``{name}`` placeholders of the known names; every other brace stays as written."""
    if not values:
        return template
    # One pass, so that a placeholder-like string inside a filled value (a page that happens to
    # contain "{language}") is never replaced again.
    pattern = re.compile("\\{(" + "|".join(re.escape(name) for name in values) + ")\\}")
    return pattern.sub(lambda m: str(values[m.group(1)]), template)


def detect_language(text: str) -> str:
    """``"Russian"`` (or ``"Ukrainian"``) for Cyrillic text, else a neutral phrase for the prompt."""
    cyrillic = latin = 0
    ukrainian = False
    for ch in text[:4000]:
        if "\u0400" <= ch <= "\u04ff":
            cyrillic += 1
            if ch in "іїєґІЇЄҐ":
                ukrainian = True
        elif ("a" <= ch <= "z") or ("A" <= ch <= "Z"):
            latin += 1
    if cyrillic > latin:
        return "Ukrainian" if ukrainian else "Russian"
    return "the language the text is written in"
