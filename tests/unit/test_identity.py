"""A document's identity (identity.py) and how the walk uses it (traversal), on hand-made documents.

The walk's tests use tests/support's FakeRanker (a fixed score per node, ties by id) with a
(dense, BM25) pair per node for the magnitude focus, so every expectation can be worked out by hand.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Dict, List, Sequence, Tuple

import pytest

from drag_knee_retriever.model._ids import leaf_id
from drag_knee_retriever.config import FocusConfig, SearchConfig
from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.search._identity import (
    IdentityIndex,
    document_identity,
    identity_parts,
    identity_terms,
    query_short_forms,
    query_terms,
    title_from_metadata,
)
from drag_knee_retriever.search._magnitude import magnitude_ranking
from drag_knee_retriever.model._nodes import Span, Trace, TreeNode
from drag_knee_retriever.store import RankedHit, RankRequest
from drag_knee_retriever.search._traversal import walk
from support import FakeRanker

# -- terms, titles, identities ---------------------------------------------------------------------


def test_terms_split_years_camel_case_and_drop_stop_words_and_plurals():
    assert identity_terms("ACME_Corp FY2017 10-K of the LockheedMartin Resorts") == [
        "acme", "corp", "fy", "2017", "10k", "lockheed", "martin", "resort"]
    assert identity_terms("2023Q2 report") == ["2023", "q2", "report"]
    assert identity_terms("Walmart's 2020") == ["walmart", "2020"]  # the possessive 's is a lone letter


def test_a_query_also_joins_adjacent_terms_so_a_one_word_file_name_matches():
    assert {"coca", "cola", "cocacola"} <= query_terms("the Coca Cola company")
    assert "cocacola" in identity_terms("COCACOLA_2017_10K")


@pytest.mark.parametrize("metadata, doc_id, title", [
    ({"title": "Annual Report 2023"}, "x", "Annual Report 2023"),
    ({"source": "/data/filings/ACME_2023_10K.pdf"}, "x", "ACME 2023 10K"),  # LangChain's PyPDFLoader
    ({"file_path": "/d/Manual v2.pdf", "file_name": "Manual v2.pdf"}, "x", "Manual v2"),  # LlamaIndex
    ({}, "PEPSICO_2022_10K", "PEPSICO_2022_10K"),  # an id that is a file name
    ({}, "0f3c9a1b2c3d4e5f6a7b8c9d", None),  # an opaque id names nothing
    ({"source": "3b1f2a9c8d7e6f50a1b2c3d4e5f60718"}, "12345", None),
])
def test_titles_come_from_title_file_name_keys_or_a_readable_id(metadata, doc_id, title):
    assert title_from_metadata(metadata, doc_id) == title


def test_default_identity_keeps_short_texts_and_years_and_skips_links_pages_and_counts():
    meta = {"company": "Acme", "doc_period": 2023, "doc_type": "10k", "n_pages": 197, "page": 3,
            "doc_link": "https://example.com/a.pdf", "note": "https://example.com", "flag": True,
            "summary": " ".join(["word"] * 40), "drag_extra": "x"}
    assert document_identity("ACME_2023_10K", meta) == "ACME_2023_10K | Acme | 2023 | 10k"
    # named keys: only those (and the title)
    assert document_identity("ACME_2023_10K", meta, keys=("company",)) == "ACME_2023_10K | Acme"


def _index(docs: Dict[str, Dict]) -> IdentityIndex:
    return IdentityIndex.from_roots([SimpleNamespace(doc_id=d, id=f"{d}:r", doc_hash="v1", metadata=m)
                                     for d, m in docs.items()])


def _filings(*names: str) -> Dict[str, Dict]:
    """Filings' metadata read off their file names, ``COMPANY_PERIOD_KIND[_...]``: {"company": "Acme",
    "doc_period": 2023, "doc_type": "10q"} for ``ACME_2023Q2_10Q`` (what a filings loader gives)."""
    out = {}
    for name in names:
        company, period, kind = name.split("_")[:3]
        out[name] = {"company": company.title(), "doc_period": int(period[:4]), "doc_type": kind.lower()}
    return out


FILINGS = _filings("ACME_2022_10K", "ACME_2023_10K", "GLOBEX_2023_10K", "INITECH_2023_10K")


def test_the_entity_and_period_both_named_win_and_a_rare_term_outweighs_a_common_one():
    import math

    index = _index(FILINGS)
    match = index.match("What was Acme's FY2023 10-K capital expenditure?")
    # ln(N / df) per shared term over ln N (a term one document alone holds): acme 2 of 4, 2023 3 of 4,
    # 10k 4 of 4 (nothing)
    assert list(match.scores)[0] == "ACME_2023_10K"
    assert match.scores["ACME_2023_10K"] == pytest.approx((math.log(2) + math.log(4 / 3)) / math.log(4))
    assert match.scores["ACME_2022_10K"] > match.scores["GLOBEX_2023_10K"] > 0
    assert match.root_ids[0] == "ACME_2023_10K:r"
    assert index.match("Initech").scores == {"INITECH_2023_10K": 1.0}  # a name only it holds: fully named
    assert not index.match("What drives gross margin?")  # names no document: no match at all
    assert not index.match("the 10-K")  # a term every document holds names none
    assert index.idf("10k") == 0.0 < index.idf("2023") < index.idf("acme")
    assert not _index({"ONLY_2023": {"company": "Solo"}}).match("Solo 2023")  # one document: nothing to choose


def test_the_index_follows_changes_and_knows_its_versions():
    index = _index(FILINGS)
    index.remove("ACME_2023_10K")
    assert "ACME_2023_10K" not in index.match("Acme 2023").scores and len(index) == 3
    index.add("ACME_2023_10K", "ACME_2023_10K:r", "v2", FILINGS["ACME_2023_10K"])
    assert index.knows("ACME_2023_10K", "v2") and not index.knows("ACME_2023_10K", "v1")


def test_parts_cut_file_names_at_underscores_and_keep_a_name_whole():
    meta = {"company": "PepsiCo", "doc_period": 2022, "doc_type": "10k", "gics_sector": "Consumer Staples"}
    assert identity_parts("PEPSICO_2022_10K", meta) == ["PEPSICO", "2022", "10K", "PepsiCo", "10k",
                                                        "Consumer Staples"]
    assert identity_parts("x", {"source": "/data/COCACOLA_2017_10-K.pdf"}) == ["COCACOLA", "2017", "10-K"]
    assert identity_parts("x", {"title": "Scott Derrickson"}) == ["Scott Derrickson"]
    assert identity_parts("x", {"title": "Pneumonia in children \u2014 a changing spectrum"}) == [
        "Pneumonia in children", "a changing spectrum"]


def test_fields_merge_parts_sharing_a_term_and_drop_terms_every_document_holds():
    index = _index(FILINGS)
    # the file name's ACME and the company value are one field; 10k (every filing) tells nothing apart
    assert sorted(map(sorted, index.fields("ACME_2023_10K"))) == [["2023"], ["acme"]]
    assert index.facets("ACME_2023_10K") == 2  # acme: two filings; 2023: three
    assert index.facets("INITECH_2023_10K") == 1  # its name is its own
    # Fields and facets are cached per version of the index: a new filing of Initech makes its
    # name a shared field, and removing it again gives the old answer back.
    index.add("INITECH_2022_10K", "r-initech-2022", "h", {"company": "Initech", "doc_period": 2022, "doc_type": "10k"})
    assert index.facets("INITECH_2023_10K") == 2
    index.remove("INITECH_2022_10K")
    assert index.facets("INITECH_2023_10K") == 1


NAMED_ARTICLES = {t: {"title": t, "dataset": "wiki"} for t in (
    "Scott Derrickson", "Ed Wood", "Ed Wood (film)", "Super_Bowl_50", "Harvard_University", "University_of_Chicago")}


def test_fields_coverage_names_a_filing_by_whose_and_which_and_never_an_article_by_its_name():
    filings = _index({**FILINGS, "GLOBEX_2022_10K": {"company": "Globex", "doc_period": 2022, "doc_type": "10k"}})
    query = "What was Acme's FY2023 capital expenditure?"
    terms, fields = filings.match(query), filings.match(query, coverage="fields")
    assert list(fields.scores)[0] == "ACME_2023_10K"
    assert fields.scores["ACME_2023_10K"] == pytest.approx(terms.scores["ACME_2023_10K"])  # both fields named
    # a sibling named by one field counts half; Initech shares a single field (its year) and is not named
    assert fields.scores["ACME_2022_10K"] == pytest.approx(terms.scores["ACME_2022_10K"] / 2)
    assert fields.scores["GLOBEX_2023_10K"] == pytest.approx(terms.scores["GLOBEX_2023_10K"] / 2)
    assert "INITECH_2023_10K" not in fields.scores and "INITECH_2023_10K" in terms.scores
    # One company's filings over the years differ in one field (the year): not the shape, not named.
    one_company = _index({f"ACME_{y}_10K": {"company": "Acme", "doc_period": y} for y in (2021, 2022, 2023)})
    assert one_company.match("Acme 2022") and not one_company.match("Acme 2022", coverage="fields")
    # a collection of named articles: no document has two shared fields, so none is ever named
    articles = _index(NAMED_ARTICLES)
    for query in ("Were Scott Derrickson and Ed Wood of the same nationality?", "Who won Super Bowl 50?",
                  "Is Harvard University older than the University of Chicago?"):
        assert articles.match(query)
        assert not articles.match(query, coverage="fields")
    with pytest.raises(ValueError, match="coverage"):
        filings.match("Acme", coverage="words")


def test_a_name_written_as_one_word_and_as_two_is_one_field():
    index = _index({"COCACOLA_2017_10K": {"company": "Coca-Cola", "doc_period": 2017, "doc_type": "10k"},
                    "COCACOLA_2018_10K": {"company": "Coca-Cola", "doc_period": 2018, "doc_type": "10k"},
                    "PEPSICO_2017_10K": {"company": "PepsiCo", "doc_period": 2017, "doc_type": "10k"}})
    assert sorted(map(sorted, index.fields("COCACOLA_2017_10K"))) == [["2017"], ["coca", "cocacola", "cola"]]
    # the company alone is one field named, however it is written
    assert index.coverage("COCACOLA_2017_10K", "Coca Cola revenue") == 0.5
    assert index.coverage("COCACOLA_2017_10K", "CocaCola revenue") == 0.5
    assert index.coverage("COCACOLA_2017_10K", "Coca Cola revenue in 2017") == 1.0


def test_two_fields_coverage_names_a_document_only_by_whose_and_which():
    filings = _index({**FILINGS, "GLOBEX_2022_10K": {"company": "Globex", "doc_period": 2022, "doc_type": "10k"}})
    query = "What was Acme's FY2023 capital expenditure?"
    fields, two = filings.match(query, coverage="fields"), filings.match(query, coverage="two_fields")
    # whose and which: the filing counts as fully as under "fields"
    assert list(two.scores) == ["ACME_2023_10K"]
    assert two.scores["ACME_2023_10K"] == pytest.approx(fields.scores["ACME_2023_10K"])
    # one field alone (Acme's other year, Globex's same year) counts half under "fields", nothing here
    assert fields.scores["ACME_2022_10K"] > 0 and fields.scores["GLOBEX_2023_10K"] > 0
    assert filings.coverage("ACME_2022_10K", query, least=2) == 0.0
    # whose alone, no period at all: only the latest of its filings, at the half "fields" gives it
    # (test_a_question_naming_no_period_names_the_latest_document_of_a_name)
    undated = "What was Acme's capital expenditure?"
    assert list(filings.match(undated, coverage="two_fields").scores) == ["ACME_2023_10K"]
    assert filings.match(undated, coverage="two_fields").scores["ACME_2023_10K"] == \
        pytest.approx(filings.match(undated, coverage="fields").scores["ACME_2023_10K"])
    assert not filings.match("What was Acme's capital expenditure in 2019?", coverage="two_fields")
    # A kind of document or a topic that a question's words hold is one field: it names a family,
    # never a document (a folder of reports and papers whose type is a metadata value).
    reports = _index({
        "PG_2020.03.09_US-Germany_FINAL": {"doc_type": "Research report"},
        "PG_2021.03.04_US-Views-on-China_FINAL": {"doc_type": "Research report"},
        "PP_2019.01.17_Trump-economy_FINAL2": {"doc_type": "Research report"},
        "2310.05634v2": {"doc_type": "Academic paper"},
        "2310.07609v1": {"doc_type": "Academic paper"},
    })
    for query in ("What does this paper propose?", "According to the report, how many adults use the internet?"):
        assert reports.match(query, coverage="fields")
        assert not reports.match(query, coverage="two_fields")
    assert list(reports.match("The 2021 report on views of China", coverage="two_fields").scores)[0] == \
        "PG_2021.03.04_US-Views-on-China_FINAL"
    # named articles: never, as under "fields"
    articles = _index(NAMED_ARTICLES)
    assert not articles.match("Were Scott Derrickson and Ed Wood of the same nationality?", coverage="two_fields")


@pytest.mark.parametrize("text, terms", [
    ("Q22023", ["q2", "2023"]), ("2Q23", ["q2", "2023"]), ("2q2023", ["q2", "2023"]), ("Q2 2023", ["q2", "2023"]),
    ("2023Q2", ["2023", "q2"]), ("FY21", ["fy", "2021"]), ("FY99", ["fy", "1999"]), ("FY2017", ["fy", "2017"]),
    ("fiscal 2023", ["fiscal", "2023"]),
    # not a quarter against a year: left as written
    ("Q5 2023", ["q5", "2023"]), ("q22", ["q22"]), ("FY123", ["fy123"]),
])
def test_a_fiscal_year_or_quarter_written_against_its_year_gives_the_terms_of_its_parts(text, terms):
    assert identity_terms(text) == terms


QUARTERLIES = _filings("ACME_2023Q2_10Q", "ACME_2023_10K", "ACME_2021_10K", "GLOBEX_2023Q2_10Q")


def test_a_quarter_or_year_in_any_spelling_names_its_filing():
    index = _index(QUARTERLIES)
    for query in ("Acme's revenue in Q22023", "Acme's revenue in 2Q23", "Acme's revenue in Q2 2023"):
        assert list(index.match(query, coverage="two_fields").scores)[0] == "ACME_2023Q2_10Q", query
    assert list(index.match("Did Acme grow between FY20 and FY21?", coverage="two_fields").scores) == ["ACME_2021_10K"]


def test_a_form_written_with_a_hyphen_is_one_kind_and_names_its_filing():
    assert identity_terms("ACME_10-K_2023") == ["acme", "10k", "2023"]
    assert identity_terms("the 10-Q, an 8-K and Form S-1") == ["10q", "8k", "form", "s1"]
    assert identity_terms("COVID-19 and 2023-Q2") == ["covid", "19", "2023", "q2"]  # not one letter: split
    index = _index({name: {} for name in ("ACME_10-K_2023", "ACME_10-Q_2023Q2", "ACME_10-K_2022",
                                          "GLOBEX_10-K_2023", "GLOBEX_10-Q_2023Q2", "GLOBEX_8-K_2023")})
    # the kind tells a 10-K from a 10-Q of the same company and year, written either way
    assert list(index.match("Acme's 10-Q for 2023", coverage="two_fields").scores)[0] == "ACME_10-Q_2023Q2"
    assert list(index.match("Acme's 10K for 2023", coverage="two_fields").scores)[0] == "ACME_10-K_2023"
    assert list(index.match("What did Globex's 8-K say in 2023?", coverage="two_fields").scores)[0] == \
        "GLOBEX_8-K_2023"


UNDATED = _filings(
    "ACME_2021_10K", "ACME_2023Q2_10Q", "ACME_2023Q1_10Q", "GLOBEX_2022_8K_dated-2022-05-20", "GLOBEX_2022_8K_dated-2022-08-19", "INITECH_2020_10K")


def test_a_question_naming_no_period_names_the_latest_document_of_a_name():
    index = _index(UNDATED)
    # a name and no period: the present, the name's latest document (its latest year, then quarter)
    match = index.match("How much does Acme expect to pay for the spin-off in the future?", coverage="two_fields")
    assert list(match.scores) == ["ACME_2023Q2_10Q"]
    assert match.scores["ACME_2023Q2_10Q"] == pytest.approx(
        index.match("How much does Acme expect to pay?", coverage="fields").scores["ACME_2023Q2_10Q"])
    # a period named, even one no document holds: whose and which as before (none here)
    assert not index.match("What did Acme earn in 2019?", coverage="two_fields")
    assert not index.match("What did Acme earn in Q3?", coverage="two_fields")
    # a tie for the latest names none; a family of one is named by whose and which only
    assert not index.match("Who is Globex's new CEO?", coverage="two_fields")
    assert not index.match("Is Initech profitable?", coverage="two_fields")
    # a kind of document in lower case is not a name: "the 10q" alone names no family's latest
    assert not index.match("what does the latest 10q report say about debt?", coverage="two_fields")
    assert list(_index(FIRMS).match("Revenue of JPM", coverage="two_fields").scores) == ["JPMORGAN_2022_10K"]


FIRMS = {
    "JOHNSON_JOHNSON_2022_10K": {"company": "Johnson & Johnson", "doc_period": 2022},
    "JOHNSON_JOHNSON_2021_10K": {"company": "Johnson & Johnson", "doc_period": 2021},
    "JPMORGAN_2022_10K": {"company": "JPMorgan", "doc_period": 2022},
    "JPMORGAN_2021_10K": {"company": "JPMorgan", "doc_period": 2021},
    "LOCKHEEDMARTIN_2022_10K": {"company": "Lockheed Martin", "doc_period": 2022},
    "LOCKHEEDMARTIN_2021_10K": {"company": "Lockheed Martin", "doc_period": 2021},
    "NETFLIX_2022_10K": {"company": "Netflix", "doc_period": 2022},
    "NETFLIX_2021_10K": {"company": "Netflix", "doc_period": 2021},
    "RIVERDALE_2022_10K": {"company": "River Dale", "doc_period": 2022},
    "RIVERDALE_2021_10K": {"company": "River Dale", "doc_period": 2021},
}


@pytest.mark.parametrize("query, named", [
    ("JnJ's gross margin in FY2022", "JOHNSON_JOHNSON_2022_10K"),  # initials, "n" for "&"
    ("J&J's gross margin in FY2022", "JOHNSON_JOHNSON_2022_10K"),
    ("JPM's net revenue in 2021", "JPMORGAN_2021_10K"),  # the start of a one-word name, in capitals
    ("LM's backlog in 2021", "LOCKHEEDMARTIN_2021_10K"),  # initials of a two-word name
])
def test_a_short_form_of_a_company_names_its_filings_like_its_name(query, named):
    index = _index(FIRMS)
    assert query_short_forms(query)[0]
    assert list(index.match(query, coverage="two_fields").scores) == [named]


@pytest.mark.parametrize("query", [
    "What was the net income in 2022?",  # "net" in lower case is a word, not Netflix
    "WHAT WAS THE NET INCOME IN 2022?",  # a query all in capitals has no short forms
    "R&D spending in 2022",  # an ampersand's initials stand only for a name with an "&" or "and"
])
def test_words_that_are_not_short_forms_name_nothing(query):
    assert not _index(FIRMS).match(query, coverage="two_fields")


def test_a_short_form_an_identity_holds_as_written_stands_for_no_other_name():
    index = _index({"Heinkel HD 23": {"dataset": "wiki"}, "Horny as a Dandy": {"dataset": "wiki"}})
    assert index.short_names("the Heinkel HD 23") == {}  # "hd" is a term of the Heinkel's title
    other = _index({"Horny as a Dandy": {"dataset": "wiki"}, "Ed Wood": {"dataset": "wiki"}})
    assert set(other.short_names("the HD 23")) == {"Horny as a Dandy"}


def test_short_names_follow_the_index_changes():
    index = _index(FIRMS)
    assert "JPMORGAN_2021_10K" in index.short_names("JPM in 2021")
    index.remove("JPMORGAN_2021_10K")
    assert "JPMORGAN_2021_10K" not in index.short_names("JPM in 2021")
    index.add("JPMORGAN_2021_10K", "r", "v2", FIRMS["JPMORGAN_2021_10K"])
    assert list(index.match("JPM in 2021", coverage="two_fields").scores) == ["JPMORGAN_2021_10K"]


@pytest.mark.parametrize("field, value", [("identity_weight", -1), ("identity_weight", float("nan")),
                                          ("identity_weight", True), ("identity_keys", (1,)),
                                          ("identity_coverage", "words")])
def test_bad_identity_settings_are_refused_when_built(field, value):
    with pytest.raises(ConfigError, match=field):
        SearchConfig(**{field: value})


# -- the walk ----------------------------------------------------------------------------------------


class SideRanker(FakeRanker):
    """Ranks by dense + BM25 and fills both scores when a request asks for them."""

    def __init__(self, forest: Dict[str, TreeNode], sides: Dict[str, Tuple[float, float]]) -> None:
        super().__init__(forest, {i: d + b for i, (d, b) in sides.items()})
        self.sides = sides

    def __call__(self, requests: Sequence[RankRequest]) -> List[List[RankedHit]]:
        out = super().__call__(requests)
        return [[RankedHit(h.node, h.score, None, None, *self.sides.get(h.node.id, (0.0, 0.0)))
                 if r.with_scores else h for h in hits] for r, hits in zip(requests, out)]


def filing(doc: str, leaves: int) -> Dict[str, TreeNode]:
    root = f"{doc}:r"
    kids = [TreeNode(id=leaf_id(doc, i), doc_id=doc, level=1, is_leaf=True, span=Span(i, i), text=f"{doc} {i}",
                     parent_id=root, doc_hash="v1") for i in range(leaves)]
    top = TreeNode(id=root, doc_id=doc, level=0, is_leaf=False, span=Span(0, leaves - 1), text=doc,
                   child_ids=tuple(k.id for k in kids), metadata=FILINGS[doc], doc_hash="v1")
    return {n.id: n for n in [top, *kids]}


@pytest.fixture
def store() -> Dict[str, TreeNode]:
    forest: Dict[str, TreeNode] = {}
    for doc in FILINGS:
        forest.update(filing(doc, 3))
    return forest


def _sides(store) -> Dict[str, Tuple[float, float]]:
    # The text alone prefers Globex (its roots and leaves score highest); Acme 2023 is the filing asked for.
    sides = {n: (0.1, 0.1) for n in store}
    sides.update({"GLOBEX_2023_10K:r": (0.6, 0.6), "ACME_2023_10K:r": (0.2, 0.2)})
    sides.update({leaf_id("GLOBEX_2023_10K", i): (0.8, 0.8) for i in range(3)})
    sides.update({leaf_id("ACME_2023_10K", 0): (0.6, 0.6)})
    return sides


def _walk(store, config, query="Acme FY2023 capital expenditure", max_roots=None):
    ranker = SideRanker(store, _sides(store))
    identity = _index(FILINGS).match(query, limit=config.max_roots)
    trace = Trace(query=query, method=config.method)
    return walk(ranker, config, (), trace, identity), trace, ranker


# The identity switched off (the default before "filings5"): both weights 0.
OFF = dict(identity_weight=0.0, focus=FocusConfig(identity_weight=0.0))


def test_without_identity_the_text_ranking_decides(store):
    hits, trace, ranker = _walk(store, SearchConfig(max_roots=1, **OFF))
    assert hits[0].node.doc_id == "GLOBEX_2023_10K"
    assert [c.doc_id for c in trace.steps[0].candidates] == ["GLOBEX_2023_10K"]
    assert [r.level for r in ranker.requests].count(0) == 1


def test_named_roots_join_the_roots_ranking_in_the_same_round_trip_and_win(store):
    config = SearchConfig(max_roots=1, identity_weight=2.0, focus=FocusConfig(identity_weight=1.0))
    hits, trace, ranker = _walk(store, config)
    roots_step = trace.steps[0]
    # one round trip for the roots: the text ranking (1 root) and the named documents' roots
    first = ranker.requests[:2]
    assert first[0].candidate_ids is None and set(first[1].candidate_ids) >= {"ACME_2023_10K:r"}
    named = _index(FILINGS).match("Acme FY2023").scores["ACME_2023_10K"]
    # Acme's root is below the text ranking's one root: 0 from the text + 2.0 x 0.71 from its name,
    # above Globex's 1.2 (the match keeps the max_roots best-named documents: Acme alone here)
    assert [(c.doc_id, c.identity_score) for c in roots_step.candidates] == [("ACME_2023_10K", named),
                                                                             ("GLOBEX_2023_10K", 0.0)]
    assert [c.fused_score for c in roots_step.candidates] == pytest.approx([2.0 * named, 1.2])
    assert hits[0].node.doc_id == "ACME_2023_10K"
    focus = next(s for s in trace.steps if s.kind == "focus")
    assert all(c.identity_score is not None for c in focus.candidates)


def test_a_query_naming_no_document_walks_exactly_as_without_identity(store):
    plain, _, _ = _walk(store, SearchConfig(max_roots=2, **OFF), query="capital expenditure")
    named, _, ranker = _walk(store, SearchConfig(max_roots=2, identity_weight=2.0, focus=FocusConfig(identity_weight=1.0)),
                             query="capital expenditure")
    assert [(h.node.id, h.score) for h in named] == [(h.node.id, h.score) for h in plain]
    assert all(r.candidate_ids is None or r.level != 0 for r in ranker.requests)


def test_a_leaf_inherits_its_documents_match_in_the_focus_and_one_document_is_unchanged():
    def node(doc, i):
        return TreeNode(id=f"{doc}{i}", doc_id=doc, level=1, is_leaf=True, span=Span(i, i), text="", parent_id=f"{doc}r")

    a, b = node("a", 0), node("b", 0)
    hits = [RankedHit(a, 0, None, None, 0.5, 1.0), RankedHit(b, 0, None, None, 0.6, 1.2)]
    assert magnitude_ranking(hits, 0.0)[0].node is b
    # two hits: each side's z-scores are -1 / +1, so b leads by 4; a's document's z-score (+1
    # against b's -1) at weight 3 turns that into a lead of 2 for a
    ranked = magnitude_ranking(hits, 0.0, {"a": 1.0, "b": 0.2}, 3.0)
    assert ranked[0].node is a and [round(h.score, 6) for h in ranked] == [1.0, -1.0]
    # all candidates in one document: the inherited term is 0 for every one
    same = [RankedHit(node("a", i), 0, None, None, 0.1 * i, 0.1 * i) for i in range(3)]
    assert ([h.score for h in magnitude_ranking(same, 0.0, {"a": 1.0}, 5.0)]
            == [h.score for h in magnitude_ranking(same, 0.0)])
