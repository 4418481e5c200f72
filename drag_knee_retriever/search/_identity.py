"""Whose and which document: a document's identity (title, file name, the metadata that names it)
matched against the words of a query.

A folder of similar documents (annual and quarterly reports of several companies and years, the
manuals of one product line) answers questions that name their document ("What is the FY2017
return on assets for Coca Cola?"), while a passage of a cash-flow statement says neither whose nor
which year it is. The document does, in its file name (``COCACOLA_2017_10K.pdf``), its PDF title and
its metadata (``company``, ``doc_period``, ...). This module turns those into a small set of
*identity terms* per document and scores every document by the query's terms it holds, weighted by
how rare each term is among the documents' identities (an IDF over identities: a company name held
by two filings weighs far more than "10k" held by thirty, a term every document holds nothing). No
model, no build step: the identities are read from the stored roots' metadata, so the same index
answers with or without them.

How the walk uses the scores (:mod:`.traversal`): matched documents' roots join the roots ranking
(even when their text ranks below ``max_roots``), each root's fused score gains
``SearchConfig.identity_weight`` x its document's identity score (1.0: named fully), and in the
focus step every leaf inherits its document's score (``identity_focus_weight`` x its z-score over
the pool).
A query that names no document matches nothing and the walk is unchanged; inside one document
(a ``doc_id`` filter) every leaf has the same score and the focus is unchanged.

Coverage (``SearchConfig.identity_coverage``): with ``"terms"`` a match is its terms' IDF alone, so a
title that is an entity's name (a Wikipedia article, a paper whose title shares the question's
words) counts like a filing's company and year. ``"fields"`` weighs it by the identity's *fields*
(:func:`identity_parts`: each metadata value, a file name cut at its underscores; parts sharing a
term merged): the fields the query names over two, capped at 1, and nothing for a document with
fewer than two fields shared with other documents (:meth:`IdentityIndex.facets`). That is the
shape the identity is for, many similar documents that differ in a few short fields (whose, which
period, which kind), and it leaves out collections whose documents are each known by a name.
``"two_fields"`` counts a match only where the query names at least two fields (whose *and* which):
a question's "this paper" or "the report" names a metadata ``doc_type`` every paper or report
holds, and a topic word names every report on it; one field names a family, not a document.
One exception: a question that names no period at all (no year, no quarter) and names a family by
one field written as a name (a capitalised word or a short form: ``Pfizer``, ``JPM``; never a kind
or a topic in lower case, "the report") asks about the present, and names that family's latest
document (the latest year its identity holds, then quarter; a tie names none) at the half
``"fields"`` gives it (:meth:`IdentityIndex._latest_named`).

Terms: lower-cased word runs (a number and one letter joined by a hyphen kept as one, ``10-K`` ->
``10k``, so a 10-K and a 10-Q are two kinds), camel case and years split off (``LockheedMartin`` -> ``lockheed
martin``, ``FY2017`` -> ``fy 2017``, ``2023Q2`` -> ``2023 q2``), a fiscal year or quarter written
against a year of two or four digits read as its parts (``FY21`` -> ``fy 2021``, ``Q22023`` and
``2Q23`` -> ``q2 2023``), stop words and one-letter pieces dropped, a plural ``s`` cut; a query's
adjacent terms are also joined (``coca cola`` -> ``cocacola``) so a file name written as one word
matches a name written as two.

Short forms (:meth:`IdentityIndex.short_names`): a query's word written with two or more capitals
(``JPM``, ``JnJ``, ``J&J``) counts as a name of the identity it abbreviates, by rules read off the
name itself, no list: the initials of a name of several words (``Johnson & Johnson``, its ``&``
kept), the start of a one-word name (``JPMorgan``). A short form some identity holds as written
(``MGM``) stands for no other name.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.search._identity_terms import (  # the terms' rules; re-exported, the public names of this module
    QUARTER_TERM,
    YEAR_TERM,
    document_identity,
    identity_fields,
    identity_parts,
    identity_terms,
    is_period_term,
    name_forms,
    name_terms,
    part_terms,
    query_short_forms,
    query_terms,
    title_from_metadata,
)

__all__ = ["IDENTITY_COVERAGES", "IdentityIndex", "IdentityMatch", "document_identity", "identity_fields",
           "identity_parts", "identity_terms", "query_short_forms", "title_from_metadata"]

#: How a document's match is weighed (``SearchConfig.identity_coverage``): ``"terms"``, by the
#: query's terms alone; ``"fields"``, also by how many distinct fields of the identity they name
#: (one counts half); ``"two_fields"``, only where they name at least two (see
#: :meth:`IdentityIndex.coverage`).
IDENTITY_COVERAGES: Tuple[str, ...] = ("terms", "fields", "two_fields")
# The fields a query must name of a document for each coverage by fields (IdentityIndex.coverage's ``least``).
_LEAST_FIELDS = {"fields": 1, "two_fields": 2}


@dataclass(frozen=True)
class IdentityMatch:
    """The documents a query names: scores in (0, 1] (see :meth:`IdentityIndex.match`) and their
    roots, best first."""

    scores: Mapping[str, float] = field(default_factory=dict)
    root_ids: Tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.scores)

    def of(self, doc_id: str) -> float:
        """A document's score (0.0 when the query does not name it)."""
        return self.scores.get(doc_id, 0.0)


NO_MATCH = IdentityMatch()


class IdentityIndex:
    """Every document's identity terms, with an inverted index for scoring queries.

    ``add(doc_id, root_id, doc_hash, metadata)`` per document (again for a changed one),
    ``remove(doc_id)``; :meth:`match` scores a query. ``keys`` are the metadata keys that name a
    document (None: the default of :func:`document_identity`). Versions (``doc_hash``) let a caller
    see whether the index still describes the documents a search met (:meth:`knows`).
    """

    def __init__(self, keys: Optional[Sequence[str]] = None) -> None:
        self.keys = tuple(keys) if keys is not None else None
        self._terms: Dict[str, FrozenSet[str]] = {}
        self._parts: Dict[str, Tuple[FrozenSet[str], ...]] = {}
        # Each document's (fields, facets), derived from the postings: computed once per version of
        # the index (a search asks them of every document its terms name), dropped on any change.
        self._shapes: Dict[str, Tuple[Tuple[FrozenSet[str], ...], int]] = {}
        self._roots: Dict[str, str] = {}
        self._hashes: Dict[str, str] = {}
        self._postings: Dict[str, set] = {}
        # Each document's names a short form can stand for: (initials, one-word name, the part's terms).
        self._names: Dict[str, Tuple[Tuple[str, str, FrozenSet[str]], ...]] = {}
        # (initials -> [(doc, terms)], sorted [(one-word name, doc, terms)]): built on the first query
        # with a short form after a change.
        self._short: Optional[Tuple[Dict[str, List[Tuple[str, FrozenSet[str]]]],
                                    List[Tuple[str, str, FrozenSet[str]]]]] = None

    def __len__(self) -> int:
        return len(self._terms)

    def add(self, doc_id: str, root_id: str, doc_hash: str, metadata: Mapping[str, Any]) -> None:
        """Record (or replace) one document's identity."""
        self.remove(doc_id)
        terms = frozenset(identity_terms(document_identity(doc_id, metadata, self.keys)))
        self._terms[doc_id], self._roots[doc_id], self._hashes[doc_id] = terms, root_id, doc_hash
        parts = [(p, part_terms(p)) for p in identity_parts(doc_id, metadata, self.keys)]
        self._parts[doc_id] = tuple(t for _, t in parts if t)
        names = ((*name_forms(p), t) for p, t in parts if t)
        self._names[doc_id] = tuple(n for n in names if n[0] or n[1])
        self._shapes.clear()
        self._short = None
        for term in terms:
            self._postings.setdefault(term, set()).add(doc_id)

    def remove(self, doc_id: str) -> None:
        """Forget one document (nothing happens if it is not here)."""
        for term in self._terms.pop(doc_id, frozenset()):
            docs = self._postings.get(term)
            if docs is not None:
                docs.discard(doc_id)
                if not docs:
                    del self._postings[term]
        self._roots.pop(doc_id, None)
        self._hashes.pop(doc_id, None)
        self._parts.pop(doc_id, None)
        self._names.pop(doc_id, None)
        self._shapes.clear()
        self._short = None

    def knows(self, doc_id: str, doc_hash: str) -> bool:
        """Whether this index holds ``doc_id`` at version ``doc_hash``."""
        return self._hashes.get(doc_id) == doc_hash

    def terms(self, doc_id: str) -> FrozenSet[str]:
        """A document's identity terms (empty if unknown)."""
        return self._terms.get(doc_id, frozenset())

    def idf(self, term: str) -> float:
        """``ln(N / df)``: how rare a term is among the N documents' identities (0.0 for a term
        every document holds, or none)."""
        df = len(self._postings.get(term, ()))
        if not df:
            return 0.0
        return math.log(len(self._terms) / df)

    def fields(self, doc_id: str) -> List[FrozenSet[str]]:
        """A document's identity fields: its parts (:func:`identity_parts`) as terms, without the
        terms every document holds (they tell nothing apart), parts sharing a term merged (the
        file name's ``PEPSICO`` and the ``company`` value ``PepsiCo`` are one field; a part's terms
        joined count for the merge, so ``COCACOLA`` and ``Coca-Cola`` are one field too)."""
        return list(self._shape(doc_id)[0])

    def facets(self, doc_id: str) -> int:
        """How many of a document's identity fields (:meth:`fields`) it shares with other documents
        (one of the field's terms is held by at least two): a company its other filings hold too,
        a period, a kind of report. Two or more: the document is one of a set of similar documents
        that differ in a few short fields, the shape the identity is for."""
        return self._shape(doc_id)[1]

    def _shape(self, doc_id: str) -> Tuple[Tuple[FrozenSet[str], ...], int]:
        """(:meth:`fields`, :meth:`facets`) of a document, from the cache or computed once."""
        shape = self._shapes.get(doc_id)
        if shape is None:
            merged: List[set] = []
            for part in self._parts.get(doc_id, ()):
                terms = {t for t in part if self.idf(t) > 0}
                if not terms:
                    continue
                for other in [f for f in merged if f & terms]:
                    terms |= other
                    merged.remove(other)
                merged.append(terms)
            fields = tuple(frozenset(f) for f in merged)
            shared = sum(1 for f in fields if any(len(self._postings.get(t, ())) >= 2 for t in f))
            shape = self._shapes[doc_id] = (fields, shared)
        return shape

    def short_names(self, query: str) -> Dict[str, FrozenSet[str]]:
        """Document -> the terms of its names the query's short forms (:func:`query_short_forms`)
        stand for: a multi-word name whose initials they are (``JnJ``, ``J&J`` -> ``Johnson &
        Johnson``), a one-word name they begin (``JPM`` -> ``JPMorgan``). Derived from the names
        alone, no list of abbreviations: a user's question names a company as analysts write it.
        A short form some identity holds as a term (``HD`` of ``Heinkel HD 23``, ``MGM``) names those
        documents as written, and stands for no other name."""
        initials, prefixes = (frozenset(f for f in forms if f not in self._postings)
                              for forms in query_short_forms(query))
        if not initials and not prefixes:
            return {}
        if self._short is None:
            by_initials: Dict[str, List[Tuple[str, FrozenSet[str]]]] = {}
            words: List[Tuple[str, str, FrozenSet[str]]] = []
            for doc_id, names in self._names.items():
                for ini, word, terms in names:
                    if ini:
                        by_initials.setdefault(ini, []).append((doc_id, terms))
                    if word:
                        words.append((word, doc_id, terms))
            self._short = (by_initials, sorted(words))
        by_initials, words = self._short
        named: Dict[str, set] = {}
        for ini in initials:
            for doc_id, terms in by_initials.get(ini, ()):
                named.setdefault(doc_id, set()).update(terms)
        for prefix in prefixes:
            at = bisect.bisect_left(words, (prefix,))
            while at < len(words) and words[at][0].startswith(prefix):
                word, doc_id, terms = words[at]
                if len(word) > len(prefix):
                    named.setdefault(doc_id, set()).update(terms)
                at += 1
        return {d: frozenset(t) for d, t in named.items()}

    def coverage(self, doc_id: str, query: "str | FrozenSet[str]", least: int = 1) -> float:
        """How much of a document's identity a query names, by distinct fields
        (``identity_coverage="fields"``): 0.0 for a document with fewer than two shared fields
        (:meth:`facets`; a title that is an article's or a paper's name shares no field with the
        others, even cut into words at its underscores; its own text carries it, and the question
        words that match it are the topic, not the document), else the fields holding a query
        term over two, capped at 1.0: whose *and* which (a company and a period, a product and a
        version) name a document among its similar siblings; one of them names a family of
        documents, and counts half. ``least=2`` (``identity_coverage="two_fields"``): one field
        alone counts nothing (a word such as "paper" or "report" that a kind of document holds,
        or a topic, names a family; only whose *and* which name a document)."""
        terms = query_terms(query) if isinstance(query, str) else query
        fields, shared = self._shape(doc_id)
        if shared < 2:
            return 0.0
        named = sum(1 for f in fields if f & terms)
        if named < least:
            return 0.0
        return min(1.0, named / 2.0)

    def match(self, query: str, limit: Optional[int] = None, coverage: str = "terms") -> IdentityMatch:
        """The documents ``query`` names: the summed IDF of the identity terms each shares with it,
        over the IDF of a term only one document holds (``ln N``), capped at 1.0. So a name only
        one document has (or a company and a year together) counts fully, a word many documents'
        titles share ("report") barely; ``limit`` keeps the best that many. An index of fewer than
        two documents names none (there is nothing to choose between). ``coverage="fields"`` or
        ``"two_fields"`` multiplies each score by :meth:`coverage` with the fields that coverage asks
        for at least (documents it brings to 0 are not named). A short form in the query
        (:meth:`short_names`) counts for a document as the terms of the name it stands for."""
        if coverage not in IDENTITY_COVERAGES:
            raise ValueError(f"coverage must be one of {IDENTITY_COVERAGES}, not {coverage!r}")
        if len(self._terms) < 2:
            return NO_MATCH
        totals: Dict[str, float] = {}
        asked = query_terms(query)
        for term in asked:
            docs = self._postings.get(term)
            if not docs:
                continue
            weight = self.idf(term)
            if weight <= 0:
                continue
            for doc_id in docs:
                totals[doc_id] = totals.get(doc_id, 0.0) + weight
        # A short form counts as the name it stands for, for the documents holding that name.
        short = self.short_names(query)
        for doc_id, terms in short.items():
            extra = sum(self.idf(t) for t in (terms - asked) & self._terms.get(doc_id, frozenset()))
            if extra > 0:
                totals[doc_id] = totals.get(doc_id, 0.0) + extra
        if not totals:
            return NO_MATCH
        unique = math.log(len(self._terms))
        scores = {d: min(1.0, total / unique) for d, total in totals.items()}
        if coverage != "terms":
            least = _LEAST_FIELDS[coverage]
            raw = scores
            scores = {d: score * self.coverage(d, asked | short.get(d, frozenset()), least)
                      for d, score in scores.items()}
            if least == 2 and not any(is_period_term(t) for t in asked):
                for doc_id in self._latest_named(query, asked, short, [d for d, v in scores.items() if not v]):
                    # one field named: the half "fields" coverage gives it
                    scores[doc_id] = raw[doc_id] * self.coverage(doc_id, asked | short.get(doc_id, frozenset()))
            scores = {d: score for d, score in scores.items() if score > 0}
            if not scores:
                return NO_MATCH
        order = sorted(scores, key=lambda d: (-scores[d], -totals[d], d))
        if limit is not None:
            order = order[:limit]
        return IdentityMatch(scores={d: scores[d] for d in order},
                             root_ids=tuple(self._roots[d] for d in order))

    def _period_key(self, doc_id: str) -> Optional[Tuple[int, int]]:
        """(latest year, its quarter or 5 for the whole year) a document's identity fields hold, or None."""
        best: Optional[Tuple[int, int]] = None
        for f in self._shape(doc_id)[0]:
            years = [int(t) for t in f if YEAR_TERM.fullmatch(t)]
            if not years:
                continue
            quarters = [int(t[1]) for t in f if QUARTER_TERM.fullmatch(t)]
            key = (max(years), max(quarters) if quarters else 5)
            best = key if best is None or key > best else best
        return best

    def _latest_named(self, query: str, asked: FrozenSet[str], short: Mapping[str, FrozenSet[str]],
                      candidates: Sequence[str]) -> List[str]:
        """Of the documents a query naming no period names by one field alone, that field written
        as a name (a capitalised word, :func:`name_terms`, or a short form: whose, without which),
        the latest of each such family (:meth:`_period_key`; a tie names none): a question that
        names no period asks about the present. A kind of document or a topic in lower case
        ("this report", "the brochure") names no family this way."""
        names = name_terms(query)
        families: Dict[FrozenSet[str], List[str]] = {}
        for doc_id in candidates:
            fields, shared = self._shape(doc_id)
            if shared < 2:
                continue
            terms = asked | short.get(doc_id, frozenset())
            named = [f for f in fields if f & terms]
            if len(named) == 1 and named[0] & (names | short.get(doc_id, frozenset())):
                families.setdefault(named[0], []).append(doc_id)
        out: List[str] = []
        for docs in families.values():
            if len(docs) < 2:  # a family of one is named by whose and which only
                continue
            keys = {d: self._period_key(d) for d in docs}
            if any(k is None for k in keys.values()):
                continue
            latest = max(keys.values())
            top = [d for d in docs if keys[d] == latest]
            if len(top) == 1:
                out.append(top[0])
        return out

    @classmethod
    def from_roots(cls, roots: Iterable[Any], keys: Optional[Sequence[str]] = None) -> "IdentityIndex":
        """An index of the documents whose root nodes (with metadata) are given."""
        index = cls(keys)
        for root in roots:
            index.add(root.doc_id, root.id, root.doc_hash, root.metadata)
        return index
