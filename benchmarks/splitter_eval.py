"""The benchmark eval with another sentence splitter swapped in (issue 27 item 10): recall, tokens, ingest time.

    DRAG_KNEE_SPLITTER=punkt python benchmarks/splitter_eval.py --dataset hotpotqa --out DIR ...

``DRAG_KNEE_SPLITTER`` (read here only; the library never reads it) picks the sentence splitter the
build uses, then the run is ``benchmarks/eval.py`` with every argument passed on:

- ``regex``: the library as it is (``summarize.split_sentences`` and ``builder.passage_bounds``'
  break rule: after ``.`` / ``!`` / ``?`` and a space, but not after a common abbreviation or an
  initial, ``summarize.ends_in_abbreviation``);
- ``regex-plain``: the rule before that (every full stop before a space ends a sentence: "Dr.
  Smith met Mr. Jones in the U.S. Army." was four);
- ``punkt``: NLTK's punkt (English; its data as llama-index-core ships it) for sentence ends;
- ``pysbd``: pySBD's English rules (when the ``pysbd`` package is installed).

The swap covers both places the build splits sentences: ``split_sentences`` (the extractive
summariser's sentences of parent nodes, and over-long paragraphs of unpaged text) and where a long
page is cut into passages (``passage_bounds``). Its other break points stay as they are: every
line break, and after ``;`` / ``:``, so only the sentence-end decision differs between variants.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Callable, Iterator, List, Tuple

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _punkt_spans() -> Callable[[str], List[Tuple[int, int]]]:
    import llama_index.core
    import nltk
    from nltk.tokenize import PunktTokenizer

    nltk.data.path.insert(0, str(Path(llama_index.core.__file__).parent / "_static" / "nltk_cache"))
    tokenizer = PunktTokenizer("english")
    return lambda text: list(tokenizer.span_tokenize(text))


def _pysbd_spans() -> Callable[[str], List[Tuple[int, int]]]:
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)

    def spans(text: str) -> List[Tuple[int, int]]:
        # pySBD's spans take the whitespace after a sentence in: end them at its last character.
        return [(s.start, s.start + len(text[s.start : s.end].rstrip())) for s in segmenter.segment(text)]

    return spans


class _Match:
    """The two methods of ``re.Match`` that ``passage_bounds`` reads."""

    def __init__(self, start: int, end: int) -> None:
        self._start, self._end = start, end

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end


_LINE_OR_CLAUSE = re.compile(r"(?<=[;:])\s+|\s*\n\s*")


class _SentenceBreaks:
    """Stands in for ``builder._PASSAGE_BREAK``: line breaks and ``;``/``:`` as before, sentence
    ends from ``spans`` (the whitespace between two sentences of one line)."""

    def __init__(self, spans: Callable[[str], List[Tuple[int, int]]]) -> None:
        self.spans = spans

    def finditer(self, text: str) -> Iterator[_Match]:
        breaks = [(m.start(), m.end()) for m in _LINE_OR_CLAUSE.finditer(text)]
        line_start = 0
        for lo, hi in breaks + [(len(text), len(text))]:
            line = text[line_start:lo]
            spans = self.spans(line)
            for (_, end), (nxt, _) in zip(spans, spans[1:]):
                gap_lo, gap_hi = line_start + end, line_start + nxt
                while gap_lo < gap_hi and not text[gap_lo].isspace():
                    gap_lo += 1  # a span may stop before trailing punctuation it left out
                if gap_lo < gap_hi and text[gap_lo:gap_hi].isspace():
                    breaks.append((gap_lo, gap_hi))
            line_start = hi
        for lo, hi in sorted(set(breaks)):
            yield _Match(lo, hi)


def _regex_plain() -> None:
    """The rule before abbreviations were known: every full stop before a space ends a sentence."""
    from drag_knee_retriever.build import _builder as builder
    from drag_knee_retriever.build import _summarize as summarize

    def split_sentences(text: str) -> List[str]:
        parts: List[str] = []
        for block in re.split(r"\n\s*\n|\n", text):
            parts.extend(s.strip() for s in summarize._SENTENCE_END.split(block.strip()) if s.strip())
        return parts

    summarize.split_sentences = split_sentences
    builder.split_sentences = split_sentences
    builder.ends_in_abbreviation = lambda text, end: False


SPLITTERS = ("regex", "regex-plain", "punkt", "pysbd")


def install(name: str) -> None:
    """Swap the build's sentence splitter for ``name`` (regex: leave it)."""
    if name not in SPLITTERS:
        raise SystemExit(f"DRAG_KNEE_SPLITTER={name!r}: use one of {', '.join(SPLITTERS)}")
    if name == "regex":
        return
    if name == "regex-plain":
        return _regex_plain()
    spans = {"punkt": _punkt_spans, "pysbd": _pysbd_spans}[name]()
    from drag_knee_retriever.build import _builder as builder
    from drag_knee_retriever.build import _summarize as summarize

    def split_sentences(text: str) -> List[str]:
        parts: List[str] = []
        for block in re.split(r"\n\s*\n|\n", text):
            block = block.strip()
            if block:
                parts.extend(s for s in (block[a:b].strip() for a, b in spans(block)) if s)
        return parts

    summarize.split_sentences = split_sentences
    builder.split_sentences = split_sentences
    builder._PASSAGE_BREAK = _SentenceBreaks(spans)
    builder.ends_in_abbreviation = lambda text, end: False  # the splitter decides alone


if __name__ == "__main__":
    install(os.environ.get("DRAG_KNEE_SPLITTER", "regex"))
    from benchmarks.eval import main

    sys.exit(main())
