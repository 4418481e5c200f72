"""A document's identity terms: the words of a title, a file name and the metadata that names a
document, and of a query, read one way (split off from ``search/_identity.py``, which scores documents by
them; see its docstring for the rules).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple


#: Metadata keys that carry a document's title or file name (the loaders', LangChain's and
#: LlamaIndex's spellings); a path-like value counts by its file name, without folder or suffix.
TITLE_KEYS: Tuple[str, ...] = ("title", "file_name", "filename", "file_path", "source", "path")
#: Metadata a loader or framework adds that says nothing about whose or which document it is.
NOT_IDENTITY_KEYS: FrozenSet[str] = frozenset({
    "page", "page_label", "page_number", "total_pages", "n_pages", "pages", "producer", "creator",
    "creationdate", "creation_date", "moddate", "last_modified_date", "last_accessed_date", "file_size",
    "file_type", "mime_type", "kind", "text_source", "ocr_pages", "url", "link", "start_index",
    "trapped", "author", "row", "seq_num", "language", "lang",
})
_MAX_VALUE_WORDS = 12
_MAX_VALUE_CHARS = 120
_OPAQUE = re.compile(r"[0-9a-f]{16,}|[0-9a-f-]{32,}", re.IGNORECASE)
_SUFFIX = re.compile(r"\.(pdf|md|markdown|txt|html?|docx?|rtf|xlsx?|pptx?|csv|json)$", re.IGNORECASE)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_WORDS = re.compile(r"[^\W_]+")
_YEAR = r"(?:19|20)\d\d"  # a four-digit year, as every rule below reads one
# A four-digit year glued to letters: "fy2017" -> "fy", "2017"; "2023q2" -> "2023", "q2".
_YEAR_EDGE = re.compile(rf"(?<=[^\W\d_])(?={_YEAR}(?!\d))|(?<={_YEAR})(?=[^\W\d_])")
# A fiscal year or quarter written against its year as one word, the year in two digits or four:
# "fy21", "q22023", "q223", "2q23", "2q2023" (the year first, "2023q2", is _YEAR_EDGE's).
_PERIOD = re.compile(rf"(?:(fy)|q([1-4])|([1-4])q)({_YEAR}|\d\d)")
# A number and one letter joined by a hyphen, a form's or a model's code ("10-K", "10-Q", "8-K", "S-1"):
# one term ("10k"), as written without the hyphen; split, the letter alone would be dropped and every
# kind of form would read as its number ("10-K" and "10-Q" both "10").
_CODE = re.compile(r"(?<![^\W_])(?:(\d+)-([^\W\d_])|([^\W\d_])-(\d+))(?![^\W_])")
_JOIN = 3  # a query's runs of up to this many adjacent terms are joined as one more term
# A word of letters as written (no case folding, no camel split), an ampersand joining letters kept
# inside it ("J&J", "AT&T"): a query's candidate short forms.
_LETTER_RUN = re.compile(r"(?<![\w&])[^\W\d_]+(?:&[^\W\d_]+)*(?![\w&])")
# A lower-case "n" between two capitals of a short form reads as "&" ("JnJ" is "J&J").
_N_AS_AND = re.compile(r"(?<=[A-Z])n(?=[A-Z])")
# A name's words and its ampersands, for its initials.
_NAME_TOKENS = re.compile(r"[^\W_]+|&")
_SHORT_MAX = 5  # a short form has at most this many letters ("JPM", "JnJ", "BofA", "MSFT")
_PREFIX_MIN = 3  # a short form read as the start of a one-word name has at least this many


@lru_cache(maxsize=1)
def _stop_words() -> FrozenSet[str]:
    # The package's data folder, wherever this module sits in the package.
    folder = Path(str(resources.files("drag_knee_retriever"))) / "data" / "stopwords"
    words = set()
    for name in ("english.txt", "russian.txt"):
        path = folder / name
        if path.is_file():
            words.update(w.strip().lower() for w in path.read_text(encoding="utf-8").splitlines() if w.strip())
    return frozenset(words)


def _stem(term: str) -> str:
    if len(term) > 4 and term.endswith("s") and not term.endswith("ss") and not term.isdigit():
        return term[:-1]
    return term


def _period_parts(raw: str) -> List[str]:
    """A lower-cased word as its period's terms when it is a fiscal year or quarter written against
    its year (``fy21`` -> ``fy``, ``2021``; ``q22023`` and ``2q23`` -> ``q2``, ``2023``), so every
    spelling of a period gives the terms ``2023Q2`` and ``FY2021`` give; a two-digit year is read as
    ``strptime``'s ``%y`` reads it (69-99: 1900s, else 2000s). Else split at a year's edges."""
    m = _PERIOD.fullmatch(raw)
    if m is None:
        return _YEAR_EDGE.split(raw)
    fy, q_first, q_last, year = m.groups()
    if len(year) == 2:
        year = ("19" if int(year) >= 69 else "20") + year
    return ["fy" if fy else f"q{q_first or q_last}", year]


def identity_terms(text: str) -> List[str]:
    """The identity terms of a text, in order (see the module docstring); repeated terms stay."""
    stop = _stop_words()
    out: List[str] = []
    text = _CODE.sub(lambda m: "".join(g for g in m.groups() if g), text)
    for raw in _WORDS.findall(_CAMEL.sub(" ", text).lower()):
        for part in _period_parts(raw):
            if len(part) < 2 or part in stop:
                continue
            out.append(_stem(part))
    return out


def query_terms(text: str) -> FrozenSet[str]:
    """A query's identity terms plus its runs of 2-3 adjacent terms joined (``coca cola`` -> ``cocacola``)."""
    terms = identity_terms(text)
    joined = {"".join(terms[i : i + n]) for n in range(2, _JOIN + 1) for i in range(len(terms) - n + 1)}
    return frozenset(terms) | joined


def query_short_forms(text: str) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """A query's short forms of names, as (initials, prefixes). A short form is a word of 2 to
    ``_SHORT_MAX`` letters written with at least two capitals (``JPM``, ``JnJ``, ``J&J``, ``PwC``) and
    not a stop word; its capitals are initials (``jpm``, ``pc``), an ampersand between them kept
    (``J&J`` -> ``j&j``; a lower-case ``n`` between two capitals is one too, ``JnJ`` -> ``j&j``), and
    written all in capitals with at least ``_PREFIX_MIN`` letters it is also a prefix (``jpm``).
    Capitals are what tell an abbreviation from a word: ``net`` or ``cost`` in lower case is a word,
    never a company's start (a query written all in capitals has no short forms). The kept
    ampersand keeps ``R&D``, ``M&A``, ``P&L`` (a filing's own words) from standing for a two-word
    name whose initials are ``rd``, ``ma``, ``pl``."""
    stop = _stop_words()
    initials, prefixes = set(), set()
    if not any(c.islower() for c in text):
        return frozenset(), frozenset()  # written all in capitals: no word stands out as a short form
    for word in _LETTER_RUN.findall(text):
        letters = word.replace("&", "")
        if not 2 <= len(letters) <= _SHORT_MAX or sum(c.isupper() for c in letters) < 2 \
                or letters.lower() in stop:
            continue
        word = _N_AS_AND.sub("&", word)
        initials.add("".join(c for c in word if c.isupper() or c == "&").lower())
        if letters.isupper() and "&" not in word and len(letters) >= _PREFIX_MIN:
            prefixes.add(letters.lower())
    return frozenset(initials), frozenset(prefixes)


def name_forms(part: str) -> Tuple[str, str]:
    """(initials, one-word name) of an identity part, each "" when it has none: a part of two or
    more words of letters (stop words aside) has the initials of its words, its ``&`` or ``and``
    between them kept as ``&`` (``Johnson & Johnson`` -> ``j&j``, ``Bank of America`` -> ``ba``,
    ``Lockheed Martin`` -> ``lm``); a part that is one word of letters of more than ``_PREFIX_MIN``
    is a one-word name (``JPMorgan`` -> ``jpmorgan``) a short form may begin."""
    stop = _stop_words()
    tokens = ["&" if t == "&" or t.lower() == "and" else t for t in _NAME_TOKENS.findall(part)]
    words = [t for t in tokens if t != "&" and t.lower() not in stop]
    if not words or not all(w.isalpha() for w in words):
        return "", ""
    if len(words) >= 2:
        initials = "".join("&" if t == "&" else t[0] for t in tokens if t == "&" or t.lower() not in stop)
        return re.sub("&+", "&", initials).strip("&").lower(), ""
    return ("", words[0].lower()) if len(words[0]) > _PREFIX_MIN else ("", "")


def _file_title(value: str, cut: bool = False) -> str:
    """A path or file name as a title: its last part, without the suffix, underscores as spaces
    (``cut``: as `` | ``, the parts' separator of :func:`identity_parts`)."""
    name = re.split(r"[\\/]", value.strip())[-1]
    stem = _SUFFIX.sub("", name)
    return re.sub(r"_+", " | " if cut else " ", stem).strip() if stem != name else name


def title_from_metadata(metadata: Mapping[str, Any], doc_id: Optional[str] = None, *, _cut: bool = False) -> Optional[str]:
    """A document's title: ``metadata["title"]``, else the file name of its ``file_name`` /
    ``file_path`` / ``source`` / ``path`` (a name such as ``ACME_10-K_2023.pdf`` often says whose and
    which year), else ``doc_id`` when that reads like a name; None for an opaque id such as a hash."""
    candidates: List[str] = []
    for key in TITLE_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            candidates.append(_file_title(value, _cut) if key != "title" or _SUFFIX.search(value.strip()) else value)
    if doc_id:
        candidates.append(_file_title(doc_id, _cut))
    for title in candidates:
        title = " ".join(title.split())
        if title and not _OPAQUE.fullmatch(title) and re.search(r"[^\W\d_]", title):
            return title[:200]
    return None


def _naming_title(metadata: Mapping[str, Any], doc_id: Optional[str], cut: bool = False) -> Optional[str]:
    """The title as identity: only a title short enough to be a name (at most ``_MAX_VALUE_WORDS``
    words, as any other identity value); a sentence-long title describes the document's content,
    which its text ranks already, and the next title source (file name, id) names it instead."""
    title = title_from_metadata(metadata, doc_id, _cut=cut)
    if title is not None and len(title.replace(" | ", " ").split()) > _MAX_VALUE_WORDS:
        rest = {k: v for k, v in metadata.items() if k != "title"}
        title = title_from_metadata(rest, doc_id, _cut=cut)
        if title is not None and len(title.replace(" | ", " ").split()) > _MAX_VALUE_WORDS:
            return None
    return title


def _identity_value(value: Any) -> Optional[str]:
    """A metadata value that can name a document: a short text, or a year."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value) if 1900 <= value <= 2100 else None
    if isinstance(value, str):
        text = " ".join(value.split())
        if not text or len(text) > _MAX_VALUE_CHARS or len(text.split()) > _MAX_VALUE_WORDS or "://" in text:
            return None
        return text
    return None


def document_identity(doc_id: str, metadata: Mapping[str, Any], keys: Optional[Sequence[str]] = None) -> str:
    """The text a document is recognised by: its title (:func:`title_from_metadata`), every
    file-name key, and the values of ``keys`` (None: every metadata value that is a short text or
    a year, except the keys of :data:`NOT_IDENTITY_KEYS` and the package's own ``drag_*`` fields)."""
    return " | ".join(_identity_pieces(doc_id, metadata, keys, False))


def _identity_pieces(doc_id: str, metadata: Mapping[str, Any], keys: Optional[Sequence[str]], cut: bool) -> List[str]:
    """:func:`document_identity`'s parts (``cut``: file names cut at their underscores)."""
    parts: List[str] = []
    title = _naming_title(metadata, doc_id, cut)
    if title:
        parts.append(title)
    for key in TITLE_KEYS[1:]:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(_file_title(value, cut))
    chosen = keys if keys is not None else identity_keys(metadata)
    for key in chosen:
        value = _identity_value(metadata.get(key))
        if value is not None:
            parts.append(value)
    return list(dict.fromkeys(parts))


# A file name's parts ("PEPSICO_2022_10K"), and " - " / " | " between the parts of a title; a space
# does not split ("Scott Derrickson" is one name, "Consumer Staples" one sector).
_PART_SPLIT = re.compile(r"_+|\s+[-\u2013\u2014|]\s+")


def identity_parts(doc_id: str, metadata: Mapping[str, Any], keys: Optional[Sequence[str]] = None) -> List[str]:
    """The parts of :func:`document_identity`, each a field that can name the document on its own:
    every metadata value, and a title or file name cut at its underscores and dashes
    (``PEPSICO_2022_10K`` -> ``PEPSICO``, ``2022``, ``10K``: whose, which period, which kind)."""
    parts: List[str] = []
    for piece in _identity_pieces(doc_id, metadata, keys, True):
        parts.extend(p.strip() for p in _PART_SPLIT.split(piece) if p.strip())
    return list(dict.fromkeys(parts))


# A year and a quarter among an identity field's terms ("2022Q4" -> 2022, q4): a document's period.
YEAR_TERM = re.compile(_YEAR)
QUARTER_TERM = re.compile(r"q[1-4]")
# A word as a question writes a name, its inner hyphens, ampersands and apostrophes kept ("Coca-Cola", "J&J").
_NAME_WORD = re.compile(r"[^\W_]+(?:[-&'][^\W_]+)*")


def is_period_term(term: str) -> bool:
    """Whether an identity term names a period: a four-digit year or a quarter (``2022``, ``q4``)."""
    return bool(YEAR_TERM.fullmatch(term) or QUARTER_TERM.fullmatch(term))


def name_terms(text: str) -> FrozenSet[str]:
    """The identity terms of a text's words written with a capital (``Pfizer``, ``Foot Locker``):
    how a question writes a name, as against a kind of document or a topic (``report``). A text
    without lower-case letters has none (no word stands out)."""
    if not any(c.islower() for c in text):
        return frozenset()
    words = [w for w in _NAME_WORD.findall(text) if any(c.isupper() for c in w)]
    return frozenset(t for w in words for t in identity_terms(w))


def part_terms(part: str) -> FrozenSet[str]:
    """A part's terms, plus its terms joined when it has several (``Coca-Cola`` -> ``coca``,
    ``cola``, ``cocacola``): so the file name's ``COCACOLA`` and the ``company`` value ``Coca-Cola``
    merge into one field (:meth:`IdentityIndex.fields`), one name written two ways. The joined
    term only merges parts; a document's match is scored on its identity terms alone."""
    terms = identity_terms(part)
    return frozenset(terms) | ({"".join(terms)} if len(terms) > 1 else frozenset())


def identity_keys(metadata: Mapping[str, Any]) -> List[str]:
    """The metadata keys :func:`document_identity` reads by default (title keys aside)."""
    return [k for k in metadata if isinstance(k, str) and k not in TITLE_KEYS and k.lower() not in NOT_IDENTITY_KEYS
            and not k.startswith("drag_")]


def identity_fields(documents: Iterable[Tuple[str, Mapping[str, Any]]],
                    keys: Optional[Sequence[str]] = None) -> Dict[str, List[Any]]:
    """Key -> the distinct values the documents hold (most frequent first, then by value), for the
    identity keys (``keys``, else each document's default ones) and ``doc_id`` (readable ids only):
    what a self-query model may filter on."""
    counts: Dict[str, Dict[Any, int]] = {}
    for doc_id, metadata in documents:
        if title_from_metadata({}, doc_id) == _file_title(doc_id):
            counts.setdefault("doc_id", {})[doc_id] = 1
        for key in (keys if keys is not None else identity_keys(metadata)):
            value = metadata.get(key)
            if _identity_value(value) is not None:
                bucket = counts.setdefault(key, {})
                bucket[value] = bucket.get(value, 0) + 1
    return {key: sorted(values, key=lambda v: (-values[v], str(v))) for key, values in counts.items()}
