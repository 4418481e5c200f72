"""A model's answer -> a clean ``(description, keywords)`` pair, or :class:`InvalidOutputError`
saying exactly what was wrong (quoted back to the model in the repair turn)."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, Tuple

from drag_knee_retriever.errors import InvalidOutputError

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
SPACES = re.compile(r"\s+")
_KEYWORD_STRIP = "\"'`«»“”„#*•·-–—:;,. \t\n"


def parse_answer_text(text: str) -> Dict[str, Any]:
    """Parse a model's text answer into a JSON object (tolerating code fences and stray prose).

    Raises :class:`InvalidOutputError` saying whether the answer was prose or broken JSON.
    """
    stripped = (text or "").strip()
    if not stripped:
        raise InvalidOutputError("the answer was empty")
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        value = json.loads(stripped)
    except ValueError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start < 0:
            raise InvalidOutputError(
                f"the answer is prose, not a JSON object (it begins {stripped[:80]!r})"
            ) from None
        if end <= start:
            raise InvalidOutputError("the answer is broken JSON (an object is opened but never closed)") from None
        try:
            value = json.loads(stripped[start : end + 1])
        except ValueError as exc:
            raise InvalidOutputError(f"the answer is broken JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidOutputError(f"the answer is a JSON {type(value).__name__}, not an object")
    return value


def validate_answer(
    output: Any,
    text: str = "",
    *,
    max_keywords: int = 10,
    min_description_chars: int = 20,
    max_description_chars: int = 1500,
) -> Tuple[str, Tuple[str, ...]]:
    """Turn a model's answer into a clean ``(description, keywords)`` pair or raise
    :class:`InvalidOutputError`.

    ``output`` may be a dict, a pydantic object or a JSON string; when it is ``None`` the raw
    ``text`` is parsed. The description must be a non-empty string of at least
    ``min_description_chars`` characters (longer ones are cut at a word boundary); keywords must be
    a list of strings, of which at least one survives cleaning (quotes, bullets, duplicates and
    overlong entries are dropped; the first ``max_keywords`` are kept).
    """
    obj: Any = output if output is not None else text
    if hasattr(obj, "model_dump") and callable(obj.model_dump):
        obj = obj.model_dump()
    if isinstance(obj, str):
        obj = parse_answer_text(obj)
    if not isinstance(obj, Mapping):
        raise InvalidOutputError(f"the answer is a {type(obj).__name__}, not a JSON object")
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    if "description" not in lowered and "summary" in lowered:
        lowered["description"] = lowered["summary"]
    description = lowered.get("description")
    if description is None:
        raise InvalidOutputError(
            f"the object has no \"description\" field (fields: {', '.join(map(str, obj)) or 'none'})"
        )
    if not isinstance(description, str):
        raise InvalidOutputError(f"\"description\" is a {type(description).__name__}, not a string")
    description = SPACES.sub(" ", description).strip()
    if not description:
        raise InvalidOutputError("\"description\" is empty")
    if len(description) < min_description_chars:
        raise InvalidOutputError(
            f"\"description\" is too short ({len(description)} characters, at least {min_description_chars} needed)"
        )
    keywords = lowered.get("keywords")
    if keywords is None:
        raise InvalidOutputError("the object has no \"keywords\" field")
    if not isinstance(keywords, (list, tuple)):
        raise InvalidOutputError(f"\"keywords\" is a {type(keywords).__name__}, not a list of strings")
    clean: List[str] = []
    seen = set()
    for item in keywords:
        if not isinstance(item, str):
            continue
        word = SPACES.sub(" ", item).strip(_KEYWORD_STRIP)
        if not word or len(word) > 80:
            continue
        folded = word.casefold()
        if folded in seen:
            continue
        seen.add(folded)
        clean.append(word)
    if not clean:
        raise InvalidOutputError("\"keywords\" holds no usable keyword strings")
    return _cap(description, max_description_chars), tuple(clean[:max_keywords])


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"
