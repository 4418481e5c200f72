"""How a budget counts text (:class:`BudgetUnit`): whitespace-separated words (:data:`WORDS`), or a
model's tokens (:class:`TokenUnit`, made by :func:`token_unit` from a tokenizer or a counting function).

Beside the encoders because a model's tokenizer is the encoder's (``Encoder.token_unit``); the budget
fill (:mod:`drag_knee_retriever.search._budget`) counts with these.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

from drag_knee_retriever.errors import ConfigError

__all__ = ["BudgetUnit", "TokenUnit", "WORDS", "count_words", "first_words", "token_unit"]

_WORD = re.compile(r"\S+")


def count_words(text: str) -> int:
    """Whitespace-separated words: the budget's unit."""
    return len(text.split())


def first_words(text: str, limit: int) -> str:
    """``text`` up to the end of its ``limit``-th word (its own spacing and line breaks kept)."""
    end = 0
    for count, match in enumerate(_WORD.finditer(text), start=1):
        end = match.end()
        if count >= limit:
            break
    return text[:end]


class BudgetUnit:
    """How a budget counts a text (:meth:`count`) and cuts one to a limit (:meth:`cut`): words here."""

    name = "words"

    def count(self, text: str) -> int:
        return count_words(text)

    def cut(self, text: str, limit: int) -> str:
        return first_words(text, limit)


#: The word unit of ``SearchConfig.max_words`` (and of every budget figure in benchmarks/RESULTS.md).
WORDS = BudgetUnit()


class TokenUnit(BudgetUnit):
    """Model tokens of a tokenizer: ``encode(text)`` gives the token ids (or an object with ``.ids``,
    as a ``tokenizers.Tokenizer`` does), or ``count(text)`` is a plain function text -> int."""

    name = "tokens"

    def __init__(self, encode: Optional[Callable[[str], Any]] = None,
                 counter: Optional[Callable[[str], int]] = None, source: str = "") -> None:
        self._encode = encode
        self._counter = counter
        self.source = source

    def count(self, text: str) -> int:
        if self._counter is not None:
            n = self._counter(text)
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ConfigError(f"the token counter {self.source} returned {n!r} for a text; it must return the "
                                  "number of tokens, an integer >= 0.")
            return n
        assert self._encode is not None
        encoded = self._encode(text)
        return len(getattr(encoded, "ids", encoded))

    def cut(self, text: str, limit: int) -> str:
        if self._encode is not None:
            encoded = self._encode(text)
            offsets = getattr(encoded, "offsets", None)
            if offsets is not None:  # a tokenizers.Tokenizer: cut at the limit-th token's end
                ids = encoded.ids
                return text if len(ids) <= limit else text[: offsets[limit - 1][1]] if limit > 0 else ""
        # Otherwise the longest prefix of whole words within the limit (at least one word).
        low, high = 1, max(1, count_words(text))
        while low < high:
            mid = (low + high + 1) // 2
            if self.count(first_words(text, mid)) <= limit:
                low = mid
            else:
                high = mid - 1
        return first_words(text, low)


def token_unit(tokenizer: Any, source: str = "") -> TokenUnit:
    """A :class:`TokenUnit` from what a user may hold: a ``tokenizers.Tokenizer`` (copied, with its
    truncation and padding off: a budget counts the whole text), a Hugging Face tokenizer or a
    tiktoken encoding (anything with ``encode(text)``; special tokens are not counted where
    ``encode`` takes ``add_special_tokens``), or a function text -> number of tokens."""
    source = source or type(tokenizer).__name__
    if hasattr(tokenizer, "encode") and hasattr(tokenizer, "to_str") and hasattr(tokenizer, "no_truncation"):
        from tokenizers import Tokenizer

        copy = Tokenizer.from_str(tokenizer.to_str())
        copy.no_truncation()
        copy.no_padding()
        return TokenUnit(encode=lambda text: copy.encode(text, add_special_tokens=False), source=source)
    if hasattr(tokenizer, "encode") and callable(tokenizer.encode):
        try:
            tokenizer.encode("probe", add_special_tokens=False)
            return TokenUnit(encode=lambda text: tokenizer.encode(text, add_special_tokens=False), source=source)
        except TypeError:  # tiktoken's encode takes no such keyword
            return TokenUnit(encode=tokenizer.encode, source=source)
    if callable(tokenizer):
        return TokenUnit(counter=tokenizer, source=source)
    raise ConfigError(
        f"token_counter must be a tokenizer (tokenizers.Tokenizer, a Hugging Face tokenizer, a tiktoken "
        f"encoding: anything with encode(text)) or a function text -> number of tokens, got {type(tokenizer).__name__}."
    )
