"""A question that names a financial statement reads that statement's pages first (search/_statement_route.py),
on real indexes (real MiniLM + BM25) of every embedded engine.

The filings are built so that words alone choose wrong: the MD&A and a note discuss the very items
the question asks for, in prose that shares its words, while the statement pages are tables of
figures under their own headings."""

import pytest

from drag_knee_retriever import Document, FocusConfig, SearchConfig

BALANCE = "\n".join(f"{item} {1200 + 41 * i:,} {1100 + 23 * i:,}" for i, item in enumerate(
    ("Cash and equivalents", "Receivables", "Inventories", "Total current assets", "Property and equipment",
     "Goodwill", "Total assets", "Accounts payable", "Long-term debt", "Total liabilities")))
INCOME = "\n".join(f"{item} {5200 + 77 * i:,} {4900 + 51 * i:,}" for i, item in enumerate(
    ("Net sales", "Cost of sales", "Gross profit", "Selling and administrative expenses", "Operating income",
     "Interest expense", "Income taxes", "Net income", "Basic earnings per share", "Diluted earnings per share")))
MDNA = ("Total current assets of {name} rose in 2022 as receivables and inventories grew; management discusses "
        "total current assets, working capital and liquidity here, and the balance of cash against current "
        "liabilities. The current assets grew faster than current liabilities during the year.")
NOTE = ("Note 4. Inventories. {name} values inventories at the lower of cost and net realizable value; inventories "
        "are part of total current assets and were reviewed for obsolescence at year end.")


OTHER = ("Item 1A. Risk factors: competition, supply disruptions and changes in consumer taste could affect results.",
         "Item 2. Properties: the company leases its offices and owns two plants and a distribution center.",
         "Item 3. Legal proceedings: no material litigation is pending against the company or its officers.",
         "Item 9A. Controls and procedures: management assessed internal control and found it effective.")


def filing(name):
    """Ten pages: the statements are pages 5 and 6."""
    return [*OTHER[:2], MDNA.format(name=name), NOTE.format(name=name), f"CONSOLIDATED STATEMENTS OF INCOME\n{INCOME}",
            f"Consolidated Balance Sheets\n(In millions)\n{BALANCE}", *OTHER[2:],
            f"Exhibit 21. Subsidiaries of {name}: {name} Holdings, {name} Europe, {name} Asia.",
            f"Exhibit 31. Certification: I have reviewed this annual report of {name} on Form 10-K."]


QUESTION = "Using the balance sheet, what were {name}'s total current assets at the end of 2022?"
OFF = SearchConfig(focus=FocusConfig(statement_pages=None))


@pytest.fixture(scope="module")
def filings(make_index, engine):
    index = make_index(collection=f"route_{engine}", engine=engine)
    index.add_documents([Document(id=f"{name.upper()}_2022_10K", pages=filing(name), metadata={"company": name})
                         for name in ("Acme", "Globex")])
    return index


def _pages(result):
    return [(n.node.doc_id, n.node.span.first_page) for n in result.nodes]


def test_the_named_statements_page_comes_first_in_the_named_filing(filings):
    result = filings.search(QUESTION.format(name="Globex"))
    assert _pages(result)[0] == ("GLOBEX_2022_10K", 6)
    step = next(s for s in result.trace.steps if s.kind == "statements")
    assert step.kept_count == 1 and step.candidates[0].doc_id == "GLOBEX_2022_10K"
    scores = [n.score for n in result.nodes]
    assert scores == sorted(scores, reverse=True)  # the public score still falls along the order


def test_two_named_statements_each_give_a_page(filings):
    result = filings.search("Based on the balance sheet and the statement of income, what is Acme's FY2022 "
                            "inventory turnover?")
    assert {("ACME_2022_10K", 5), ("ACME_2022_10K", 6)} <= set(_pages(result)[:2])


def test_off_or_no_statement_named_searches_as_before(filings):
    question = QUESTION.format(name="Acme")
    off = filings.search(question, config=OFF)
    assert all(s.kind != "statements" for s in off.trace.steps)
    on = filings.search(question)
    assert on.trace.requests == off.trace.requests + 1  # one ranking more, only when a statement is named
    plain = "What were Acme's total current assets at the end of 2022?"
    assert _pages(filings.search(plain)) == _pages(filings.search(plain, config=OFF))
    assert filings.search(plain).trace.requests == filings.search(plain, config=OFF).trace.requests


def test_the_route_keeps_the_users_filter_and_a_word_budget(filings):
    only_acme = filings.search(QUESTION.format(name="Globex"), filters={"doc_id": "ACME_2022_10K"})
    assert only_acme.nodes and {d for d, _ in _pages(only_acme)} == {"ACME_2022_10K"}
    assert _pages(only_acme)[0] == ("ACME_2022_10K", 6)
    budget = filings.search(QUESTION.format(name="Acme"), max_words=120)
    assert _pages(budget)[0] == ("ACME_2022_10K", 6)


def test_an_index_without_statement_pages_is_not_routed(make_index, engine):
    index = make_index(collection=f"route_none_{engine}", engine=engine)
    index.add_documents([Document(id="memo", pages=[MDNA.format(name="Acme"), NOTE.format(name="Acme")])])
    result = index.search(QUESTION.format(name="Acme"))
    step = next(s for s in result.trace.steps if s.kind == "statements")
    assert step.kept_count == 0 and result.nodes  # asked, found none: the walk's results as they were


def test_the_async_search_routes_as_the_sync_one(filings):
    import asyncio

    question = QUESTION.format(name="Globex")
    assert _pages(asyncio.run(filings.asearch(question))) == _pages(filings.search(question))
