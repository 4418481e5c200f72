"""Headings found in a document's text, for documents without an outline (bookmarks).

:func:`find_headings` reads page texts (a PDF's text layer, or one plain text as one page) and
returns the lines that head a section, with a level and the page they start on; the builder turns
them into section nodes exactly as it does an outline. Shapes recognised, most specific first:

- Markdown headings (``## Results``);
- SEC-filing headings: ``PART II`` (level 0) and ``Item 7.`` / ``ITEM 7A.`` (under the part; a
  bare ``Item 7.`` takes its title from the next line), and a financial report's statements
  ("CONSOLIDATED BALANCE SHEETS", "Statements of Cash Flows") and notes ("Note 7. Debt") below;
- numbered headings (``3 Methods``, ``3.2 Results``; the depth is the level), kept only in a
  plausible order (each one the next sibling, first child or next section of the one before), so
  a numbered list or a table's row numbers do not open sections;
- short title-like lines (Title Case or capitals, alone between text), and only in a document
  where none of the shapes above is found: the rule is deliberately conservative.

Lines that look like headings but are not are dropped: a running header or footer (the same line,
digits aside, on many pages), a table of contents (a page titled "Contents", dot leaders, entries
ending in a page number, or a run of heading-like lines with no text between them), and a heading
with no text under it before the next one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["Heading", "find_headings", "headings_outline"]


@dataclass(frozen=True)
class Heading:
    """A heading line: its title, level (0 = top), page (1-based) and line number on that page."""

    title: str
    level: int
    page: int
    line: int
    kind: str  # "markdown", "part", "item", "statement", "note", "numbered" or "title"


_MARKDOWN = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_PART = re.compile(r"^PART\s+([IVX]{1,4})\b\s*[.:\-\u2013\u2014]?\s*(.*)$", re.IGNORECASE)
_ITEM = re.compile(r"^(?:ITEM|Item)\s+(\d{1,2})([A-Da-d])?\s*[.:\-\u2013\u2014]?\s*(.*)$")
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+(\S.*)$")
_TRAILING_PAGE = re.compile(r"(?:\.{2,}|\s)\s*(?:\d{1,4}|[ivxlc]{1,6})\s*$", re.IGNORECASE)
_DOT_LEADER = re.compile(r"(?:\.\s?){4,}\s*\d*\s*$")
# The statements and notes of a financial report (10-K Item 8, annual reports): headings a question
# names ("the cash flow statement", "the balance sheet", "note 7").
_STATEMENT = re.compile(
    r"^(?:consolidated\s+|combined\s+)?(?:balance\s+sheets?|statements?\s+of\s+(?:consolidated\s+)?"
    r"(?:cash\s+flows?|operations|income|earnings|comprehensive\s+(?:income|loss)|financial\s+position|"
    r"(?:changes\s+in\s+)?(?:stockholders|shareholders)['\u2019]?\s+equity)|notes\s+to\s+(?:the\s+)?"
    r"(?:consolidated\s+)?financial\s+statements)(?:\s*\((?:continued|unaudited)\))?$", re.IGNORECASE)
_NOTE = re.compile(r"^(?:NOTE|Note)\s+(\d{1,2})\s*[.:\-\u2013\u2014]?\s+(\S.*)$")
_CONTENTS = re.compile(r"^(?:table of contents|contents|index)$", re.IGNORECASE)
_SMALL_WORDS = frozenset("a an and as at by for from in into of on or the to vs with via its their our".split())
# How SEC-filing headings nest: a part holds items, an item statements, a statement notes.
_RANK = {"part": 0, "item": 1, "statement": 2, "note": 3}
_ROMAN = {"I": 1, "V": 5, "X": 10}


def _roman(text: str) -> int:
    total = 0
    for i, ch in enumerate(text):
        value = _ROMAN[ch]
        total += -value if i + 1 < len(text) and _ROMAN[text[i + 1]] > value else value
    return total


def _normalise(line: str) -> str:
    """A line as a running header/footer is recognised: case, digits and spacing aside."""
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", line.lower())).strip()


def _title_words_ok(title: str, max_words: int) -> bool:
    """A heading's title: starts with a capital (or a digit), short, not a sentence, few digits."""
    words = title.split()
    if not words or len(words) > max_words or len(title) > 160:
        return False
    if not (title[0].isupper() or title[0].isdigit() or title[0] in "\"'(\u201c"):
        return False
    if title.endswith((",", ";", ":")) or (title.endswith(".") and len(words) > 8):
        return False
    alnum = [c for c in title if c.isalnum()]
    digits = sum(c.isdigit() for c in alnum)
    if not alnum or digits > 0.25 * len(alnum):
        return False  # a table row or a figure, not a heading
    return any(c.isalpha() for c in title)


def _title_like(line: str) -> bool:
    """A short line that reads as a title: Title Case or capitals, no sentence punctuation."""
    words = line.split()
    if not (1 <= len(words) <= 8) or len(line) > 70 or ":" in line or not line[0].isupper():
        return False
    if line[-1] in ".,;!?" or any(c.isdigit() for c in line) or not any(len(w) >= 4 and w.isalpha() for w in words):
        return False
    content = [w for w in words if w.lower() not in _SMALL_WORDS]
    if not content:
        return False
    capitalised = sum(1 for w in content if w[0].isupper())
    return capitalised == len(content)


def _heading_case(title: str) -> bool:
    """A numbered line's title reads as a heading, not as a footnote or list item: no link or
    quotation, and a longer title has most of its content words capitalised."""
    if any(mark in title for mark in ("http", "www.", "@", '"', "\u201c")):
        return False
    content = [w for w in title.split() if w.lower() not in _SMALL_WORDS and w[0].isalpha()]
    return len(title.split()) <= 5 or sum(w[0].isupper() for w in content) * 2 >= len(content)


def _is_body(line: str) -> bool:
    """A line of running text (what follows a heading): several words, not a title itself."""
    return sum(1 for w in line.split() if any(c.isalpha() for c in w)) >= 6


@dataclass
class _Candidate:
    page: int
    line: int
    kind: str
    title: str
    key: Tuple[int, ...]
    depth: int
    trailing_page: bool


def _candidates(page_lines: List[List[str]], running: set) -> List[_Candidate]:
    out: List[_Candidate] = []
    for p, lines in enumerate(page_lines, start=1):
        head = [ln for ln in lines[:5] if ln]
        # Filings often repeat a "Table of Contents" link atop every page: a running line is no TOC title.
        contents_page = any(_CONTENTS.match(ln) and _normalise(ln) not in running for ln in head)
        leaders = sum(1 for ln in lines if _DOT_LEADER.search(ln))
        if contents_page or leaders >= 3:
            continue  # a table of contents: its entries are not the sections
        consumed = -1  # the line a bare "Item 7." took as its title
        for i, line in enumerate(lines):
            if not line or i == consumed or _normalise(line) in running or len(line) > 200:
                continue
            # A heading may end its page (its text starts the next one), and a page may be a
            # single line (a heading on a page of its own, or one line per unit).
            next_line = next((ln for ln in lines[i + 1:] if ln), "") or (
                next((ln for ln in page_lines[p] if ln), "") if p < len(page_lines) else "")
            m = _MARKDOWN.match(line)
            if m:
                out.append(_Candidate(p, i, "markdown", m.group(2).strip(), (), len(m.group(1)) - 1, False))
                continue
            m = _PART.match(line)
            if m and m.group(1).isupper() and line[:4] in ("PART", "Part"):
                rest = m.group(2).strip()
                if not rest or _title_words_ok(rest, 15):
                    title = f"PART {m.group(1)}" + (f". {rest}" if rest else "")
                    out.append(_Candidate(p, i, "part", title, (_roman(m.group(1)),), 0,
                                          bool(rest) and bool(_TRAILING_PAGE.search(rest))))
                continue
            m = _ITEM.match(line)
            if m:
                number, letter, rest = int(m.group(1)), (m.group(2) or "").upper(), m.group(3).strip()
                if not rest and next_line and _title_words_ok(next_line, 16) and not _ITEM.match(next_line):
                    rest = next_line  # "Item 7." on a line of its own, its title on the next
                    consumed = next(j for j in range(i + 1, len(lines)) if lines[j])
                if rest and not _title_words_ok(rest, 20):
                    continue  # "Item 7 of this report ...": a reference in running text
                title = f"Item {number}{letter}." + (f" {rest.rstrip('.')}" if rest else "")
                key = (number, ord(letter) - 64 if letter else 0)
                out.append(_Candidate(p, i, "item", title, key, 0, bool(_TRAILING_PAGE.search(rest)) if rest else False))
                continue
            if _STATEMENT.match(line):
                title = re.sub(r"\s*\((?:continued|unaudited)\)$", "", " ".join(line.split()), flags=re.IGNORECASE)
                out.append(_Candidate(p, i, "statement", title, (), 0, False))
                continue
            m = _NOTE.match(line)
            if m:
                rest = m.group(2).strip()
                if _title_words_ok(rest, 14) and not rest[0].islower():
                    out.append(_Candidate(p, i, "note", f"Note {m.group(1)}. {rest}", (int(m.group(1)),), 0,
                                          bool(_TRAILING_PAGE.search(rest))))
                continue
            m = _NUMBERED.match(line)
            if m:
                key = tuple(int(x) for x in m.group(1).split("."))
                rest = m.group(2).strip()
                if min(key) >= 1 and _title_words_ok(rest, 12) and not rest.endswith(".") and _heading_case(rest):
                    out.append(_Candidate(p, i, "numbered", f"{m.group(1)} {rest}", key, len(key) - 1,
                                          bool(_TRAILING_PAGE.search(rest))))
                continue
            previous = lines[i - 1] if i > 0 else ""  # a page's start counts as a break
            if _title_like(line) and (not previous or previous[-1:] in ".!?:\"\u201d") and _is_body(next_line):
                out.append(_Candidate(p, i, "title", line, (), 0, False))
    return out


def _drop_runs(cands: List[_Candidate], page_lines: List[List[str]]) -> List[_Candidate]:
    """Drop tables of contents and lists: 3+ structured candidates on consecutive lines (blank lines
    and lone page numbers between them aside), and entries ending in a page number."""
    keep = [c for c in cands if not c.trailing_page]
    structured = [c for c in keep if c.kind in ("item", "numbered", "part", "statement", "note")]
    bad = set()
    run: List[_Candidate] = []

    def adjacent(a: _Candidate, b: _Candidate) -> bool:
        if a.page != b.page:
            return False
        between = page_lines[a.page - 1][a.line + 1:b.line]
        return all(not ln or re.fullmatch(r"[\divxlc]{1,5}", ln, re.IGNORECASE) or ln == a.title.split(" ", 2)[-1]
                   for ln in between) and b.line - a.line <= 3

    for c in structured:
        if run and adjacent(run[-1], c):
            run.append(c)
        else:
            if len(run) >= 3:
                bad.update(id(x) for x in run)
            run = [c]
    if len(run) >= 3:
        bad.update(id(x) for x in run)
    return [c for c in keep if id(c) not in bad]


def _plausible_next(prev: Optional[Tuple[int, ...]], key: Tuple[int, ...]) -> bool:
    """Whether numbered heading ``key`` can follow ``prev`` (one missed heading tolerated)."""
    if prev is None:
        return all(k <= 2 for k in key)
    if key[: len(prev)] == prev and len(key) > len(prev):
        return all(k == 1 for k in key[len(prev):])  # first child
    for k in range(1, min(len(prev), len(key)) + 1):
        if key[: k - 1] == prev[: k - 1] and prev[k - 1] < key[k - 1] <= prev[k - 1] + 2:
            return all(x == 1 for x in key[k:])  # next sibling at depth k (and its first children)
    return False


def _numbered_chain(cands: List[_Candidate]) -> set:
    """The ids of the longest run of numbered candidates in a plausible order (each one may follow
    the one before): a numbered list, an affiliation or a table's row numbers fall outside it."""
    n = len(cands)
    if n > 1500:  # quadratic below; a greedy chain for a very long document
        chosen, prev = set(), None
        for c in cands:
            if _plausible_next(prev, c.key):
                chosen.add(id(c))
                prev = c.key
        return chosen
    length = [0] * n
    back = [-1] * n
    for i, c in enumerate(cands):
        if _plausible_next(None, c.key):
            length[i] = 1
        for j in range(i):
            if length[j] and length[j] + 1 > length[i] and _plausible_next(cands[j].key, c.key):
                length[i], back[i] = length[j] + 1, j
    if not n or max(length) == 0:
        return set()
    i = max(range(n), key=lambda k: (length[k], -k))
    chosen = set()
    while i >= 0:
        chosen.add(id(cands[i]))
        i = back[i]
    return chosen


def _words_between(page_lines: List[List[str]], a: _Candidate, b: Optional[_Candidate]) -> int:
    """Words of text after heading ``a`` up to heading ``b`` (or the end), at most ~30 counted."""
    count = 0
    for p in range(a.page, (b.page if b else len(page_lines)) + 1):
        lines = page_lines[p - 1]
        start = a.line + 1 if p == a.page else 0
        stop = b.line if b and p == b.page else len(lines)
        for ln in lines[start:stop]:
            count += sum(1 for w in ln.split() if any(c.isalpha() for c in w))
            if count >= 30:
                return count
    return count


def find_headings(pages: Sequence[str]) -> List[Heading]:
    """The section headings of a document given as page texts, in document order (see module doc)."""
    page_lines = [[ln.strip() for ln in (page or "").splitlines()] for page in pages]
    # Running headers and footers: the same line (digits aside) on many pages.
    seen: Dict[str, int] = {}
    for lines in page_lines:
        for norm in {_normalise(ln) for ln in lines if ln}:
            seen[norm] = seen.get(norm, 0) + 1
    threshold = max(3, math.ceil(0.3 * len(page_lines)))
    running = {n for n, count in seen.items() if count >= threshold} if len(page_lines) >= 3 else set()

    cands = _drop_runs(_candidates(page_lines, running), page_lines)
    if any(c.kind != "title" for c in cands):
        cands = [c for c in cands if c.kind != "title"]  # title-like lines only where nothing else is found
    # A heading must head some text: a TOC entry is followed straight by the next entry. A part
    # ("PART II") is followed straight by its first item, and a heading by its first sub-heading.
    kept: List[_Candidate] = []
    for i, c in enumerate(cands):
        nxt = cands[i + 1] if i + 1 < len(cands) else None
        deeper = nxt is not None and (_RANK.get(nxt.kind, 9) > _RANK.get(c.kind, 9)
                                      or (nxt.kind == c.kind and nxt.depth > c.depth))
        if deeper or _words_between(page_lines, c, nxt) >= 3:
            kept.append(c)

    headings: List[Heading] = []
    has_part = any(c.kind == "part" for c in kept)
    has_item = any(c.kind == "item" for c in kept)
    numbered_base = int(has_part) + int(has_item)
    statement_level = numbered_base  # under its item (Item 8), notes under the statements
    last_statement: Optional[str] = None
    notes_seen: set = set()
    numbered_ok = _numbered_chain([c for c in kept if c.kind == "numbered"])
    items_seen: set = set()
    parts_seen: set = set()
    current_part = 0
    for c in kept:
        if c.kind == "title":
            level = 0
        elif c.kind == "statement":
            if c.title.lower() == last_statement:
                continue  # the same statement continued on its next page
            last_statement = c.title.lower()
            level = statement_level
        elif c.kind == "note":
            if c.key in notes_seen:
                continue
            notes_seen.add(c.key)
            level = statement_level + 1
        elif c.kind == "markdown":
            level = c.depth
        elif c.kind == "part":
            if c.key in parts_seen:
                continue  # a running "PART II (continued)"
            parts_seen.add(c.key)
            current_part = c.key[0]
            level = 0
        elif c.kind == "item":
            if (current_part, c.key) in items_seen:
                continue
            items_seen.add((current_part, c.key))
            level = int(has_part)
        else:
            if id(c) not in numbered_ok:
                continue
            level = numbered_base + c.depth
        headings.append(Heading(c.title[:200], level, c.page, c.line, c.kind))
    return headings


def headings_outline(pages: Sequence[str]) -> List[Dict[str, object]]:
    """:func:`find_headings` as outline entries ``{"title", "page" (1-based), "level"}``."""
    return [{"title": h.title, "page": h.page, "level": h.level} for h in find_headings(pages)]
