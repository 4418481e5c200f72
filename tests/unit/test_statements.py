"""Statement pages: which pages of a financial report show a primary statement, and the names their
leaves are indexed with (drag_knee_retriever.build._statements; the builder's use of them)."""

import pytest

from drag_knee_retriever import BuildConfig, Document, SectionConfig
from drag_knee_retriever.build._builder import build_document_trees, document_hash
from drag_knee_retriever.build._statements import STATEMENT_NAMES, StatementPage, statement_of, statement_pages

FIGURES = "\n".join(f"{item} {1000 + 37 * i:,} {900 + 29 * i:,}" for i, item in enumerate(
    ("Net revenues", "Cost of sales", "Gross profit", "Selling and administrative expenses", "Operating profit",
     "Interest expense", "Taxes", "Net earnings", "Basic per share", "Diluted per share")))
PROSE = ("Management believes the results of the year reflect stronger demand in every region, and the "
         "discussion below explains the drivers of revenue, costs and cash generation in plain words. ") * 3


@pytest.mark.parametrize("head, kind", [
    ("CONSOLIDATED STATEMENTS OF OPERATIONS\n(In millions, except per share data)", "income"),
    ("Consolidated Statement of Income\nPepsiCo-like Inc. and Subsidiaries", "income"),
    ("INCOME STATEMENTS", "income"),
    ("Consolidated Statements of Earnings", "income"),
    ("Condensed Consolidated Statements of Comprehensive Income (Unaudited)", "comprehensive"),
    ("Consolidated Balance Sheets Acme Incorporated and Subsidiary Companies", "balance"),
    ("Statement of Financial Position", "balance"),
    ("CONSOLIDATED STATEMENTS OF CASH FLOWS\n(In thousands)", "cash"),
    ("Consolidated Statements of Changes in Shareholders' Equity", "equity"),
    # Text layers break headings: over two lines, glued to the company's name, one word a line.
    ("NETFLIX-LIKE, INC.\nCONSOLIDATED STATEMENTS OF\nOPERATIONS(in thousands, except per share data)", "income"),
    ("ACME RESORTS INTERNATI\nONAL AND SUBSIDIARIESCONSOLIDATED BALANCE SHEETS", "balance"),
    ("PART II\nItem 8\nBALANCE\nSHEETS", "balance"),
])
def test_a_statement_heading_atop_a_page_of_figures_names_the_statement(head, kind):
    pages = [PROSE, f"Table of Contents\n{head}\n{FIGURES}"]
    found = statement_pages(pages)
    assert list(found) == [2] and found[2].kind == kind
    assert found[2].title == f"{found[2].heading} ({STATEMENT_NAMES[kind]})"
    assert found[2].heading.lower() in " ".join(head.split()).lower()


@pytest.mark.parametrize("page", [
    # Running text that mentions a statement, however many figures the page has.
    "Our consolidated balance sheets reflect the acquisition, which added goodwill and intangible assets of "
    "the acquired business to the totals shown for the year.\n" + FIGURES,
    # An index of the statements: several named atop one page.
    "Index to Consolidated Financial Statements\nConsolidated Balance Sheets 45\n"
    "Consolidated Statements of Operations 46\nConsolidated Statements of Cash Flows 47\n" + FIGURES,
    # A statement's heading over prose (a discussion of the cash flows, not the statement).
    "Consolidated Statements of Cash Flows\n" + PROSE,
    # The notes are not a primary statement.
    "NOTES TO CONSOLIDATED FINANCIAL STATEMENTS\nNote 7. Debt\n" + FIGURES,
    # The heading far below the top of the page.
    "\n".join(["Line of text"] * 9) + "\nConsolidated Balance Sheets\n" + FIGURES,
    "",
])
def test_pages_that_only_mention_a_statement_are_not_statement_pages(page):
    assert statement_pages([page]) == {}


def test_each_statements_common_names_are_read_as_that_statement():
    for kind, names in STATEMENT_NAMES.items():
        assert statement_of(names) == kind
        assert StatementPage("Consolidated statement", kind).title.endswith(f"({names})")
    assert statement_of("Statements of Comprehensive Income") == "comprehensive"  # before "income"
    assert statement_of("Notes to Financial Statements") is None


FILING = [PROSE, f"CONSOLIDATED STATEMENTS OF OPERATIONS\n{FIGURES}", f"Consolidated Balance Sheets\n{FIGURES}",
          "Item 9. Changes in and Disagreements with Accountants\n" + PROSE]


def _leaf_titles(config):
    tree = build_document_trees([Document(id="10k", pages=FILING)], config)[0]
    return {n.span.first_page: n.title for n in tree.nodes if n.is_leaf}


def test_a_statement_pages_leaves_carry_its_title_and_no_other_page_changes():
    titles = _leaf_titles(BuildConfig())
    assert titles[2] == f"CONSOLIDATED STATEMENTS OF OPERATIONS ({STATEMENT_NAMES['income']})"
    assert titles[3] == f"Consolidated Balance Sheets ({STATEMENT_NAMES['balance']})"
    assert titles[1] is None and titles[4] is None
    assert set(_leaf_titles(BuildConfig(sections=SectionConfig(statements=False))).values()) == {None}


def test_only_a_document_with_statement_pages_changes_its_hash():
    off = BuildConfig(sections=SectionConfig(statements=False))
    prose = Document(id="memo", pages=[PROSE, PROSE])
    filing = Document(id="10k", pages=FILING)
    # A document the setting does not touch keeps the hash it had before the setting existed.
    assert document_hash(prose, BuildConfig(), "x") == document_hash(prose, off, "x")
    assert document_hash(filing, BuildConfig(), "x") != document_hash(filing, off, "x")


def test_a_statement_pages_nodes_carry_its_kind_and_no_other_node_does():
    tree = build_document_trees([Document(id="10k", pages=FILING)], BuildConfig())[0]
    kinds = {(n.span.first_page, n.is_leaf): n.statement for n in tree.nodes if n.span.first_page == n.span.last_page}
    assert kinds[(2, True)] == "income" and kinds[(3, True)] == "balance"
    assert kinds[(1, True)] is None and kinds[(4, True)] is None
    assert all(n.statement is None for n in tree.nodes if n.span.first_page != n.span.last_page)  # parents, root
    off = build_document_trees([Document(id="10k", pages=FILING)], BuildConfig(sections=SectionConfig(statements=False)))
    assert {n.statement for n in off[0].nodes} == {None}


@pytest.mark.parametrize("question, kinds", [
    ("What is the FY2021 capex? Use the statement of cash flows.", {"cash"}),
    ("Based on the balance sheet and the statement of income, what is DPO?", {"balance", "income"}),
    ("using the line items in the income statement", {"income"}),
    ("from the cash flow statement", {"cash"}),
    ("drawing only on the statement of financial position", {"balance"}),
    ("the consolidated statements of operations", {"income"}),
    ("look at the P&L", {"income"}),
    ("the profit and loss statement", {"income"}),
    ("the statement of comprehensive income", {"comprehensive"}),
    ("the statement of changes in shareholders' equity", {"equity"}),
    # Words of a statement that are not its name route nowhere.
    ("What were cash flows from operations in 2022?", set()),
    ("Did net income grow? What is the balance of the revolver?", set()),
    ("Which financial statements were restated?", set()),
])
def test_a_question_names_the_statements_it_says(question, kinds):
    from drag_knee_retriever.model._statements import named_statements

    assert named_statements(question) == kinds
