"""Headings found in page text (no outline): each heading shape, and the look-alikes that must not
open a section (a table of contents, a running header/footer, lists, footnotes, table rows)."""

from drag_knee_retriever import BuildConfig, Document, SectionConfig
from drag_knee_retriever.build._builder import build_document_trees
from drag_knee_retriever.build._headings import find_headings

BODY = "The figures below are discussed at length, with the reasons for every change in the year."


def titles(pages):
    return [(h.title, h.level, h.page) for h in find_headings(pages)]


def test_numbered_headings_nest_by_depth():
    pages = [f"A Study of Things\n1 Introduction\n{BODY}", f"2 Related Work\n{BODY}\n2.1 Early Work\n{BODY}",
             f"2.2 Recent Work\n{BODY}\n3 Results\n{BODY}"]
    assert titles(pages) == [("1 Introduction", 0, 1), ("2 Related Work", 0, 2), ("2.1 Early Work", 1, 2),
                             ("2.2 Recent Work", 1, 3), ("3 Results", 0, 3)]


def test_sec_parts_and_items_with_a_bare_item_taking_the_next_line():
    pages = [f"PART I\nItem 1. Business\n{BODY}", f"ITEM 1A. RISK FACTORS\n{BODY}",
             f"PART II\nItem 7.\nManagement's Discussion and Analysis of Financial Condition\n{BODY}",
             f"Item 7A. Quantitative and Qualitative Disclosures About Market Risk\n{BODY}"]
    assert titles(pages) == [
        ("PART I", 0, 1), ("Item 1. Business", 1, 1), ("Item 1A. RISK FACTORS", 1, 2), ("PART II", 0, 3),
        ("Item 7. Management's Discussion and Analysis of Financial Condition", 1, 3),
        ("Item 7A. Quantitative and Qualitative Disclosures About Market Risk", 1, 4)]


def test_markdown_headings_in_page_text():
    pages = [f"# Guide\n{BODY}\n## Install\n{BODY}", f"## Usage\n{BODY}"]
    assert titles(pages) == [("Guide", 0, 1), ("Install", 1, 1), ("Usage", 1, 2)]


def test_title_like_lines_only_where_nothing_else_is_found():
    pages = [f"Our Mission\n{BODY}", f"Global Partnerships\n{BODY}\nResearch Excellence\n{BODY}"]
    assert titles(pages) == [("Our Mission", 0, 1), ("Global Partnerships", 0, 2), ("Research Excellence", 0, 2)]
    # with one numbered heading in the document, the title-like lines are not used
    assert [t for t, _, _ in titles(pages + [f"1 Introduction\n{BODY}"])] == ["1 Introduction"]


def test_a_table_of_contents_opens_no_section_and_the_body_headings_still_do():
    toc = ("Table of Contents\nPART I\nItem 1. Business 3\nItem 1A. Risk Factors 10\nPART II\n"
           "Item 7. Management's Discussion and Analysis 35\nItem 8. Financial Statements 50")
    body = [f"PART I\nItem 1. Business\n{BODY}", f"Item 1A. Risk Factors\n{BODY}",
            f"PART II\nItem 7. Management's Discussion and Analysis\n{BODY}", f"Item 8. Financial Statements\n{BODY}"]
    found = titles([toc] + body)
    assert all(page > 1 for _, _, page in found)
    assert [t for t, _, _ in found] == ["PART I", "Item 1. Business", "Item 1A. Risk Factors", "PART II",
                                        "Item 7. Management's Discussion and Analysis", "Item 8. Financial Statements"]


def test_a_contents_page_without_its_title_is_caught_by_page_numbers_and_dot_leaders():
    toc_numbers = "1 Introduction 1\n2 Methods 4\n3 Results 9\n4 Discussion 12"
    toc_leaders = "Introduction ........ 1\nMethods ........ 4\nResults ........ 9"
    toc_lines = "1 Introduction\n1\n2 Methods\n4\n3 Results\n9"  # page numbers on lines of their own
    for toc in (toc_numbers, toc_leaders, toc_lines):
        found = titles([toc, f"1 Introduction\n{BODY}", f"2 Methods\n{BODY}"])
        assert found == [("1 Introduction", 0, 2), ("2 Methods", 0, 3)], toc


def test_a_running_header_or_footer_is_no_heading():
    # The same title-like line on every page, and an "Item 7 ... N" running header.
    pages = [f"Annual Review\n{BODY}\n{BODY}\nPage {n}" for n in range(1, 6)]
    assert titles(pages) == []
    pages = [f"Item 7. MD&A | ACME 10-K {n}\n{BODY}" for n in range(1, 6)]
    assert titles(pages) == []


def test_lists_footnotes_and_table_rows_are_no_numbered_headings():
    pages = [
        f"1 Introduction\n{BODY}\nSteps:\n1. Preheat the oven to a very hot temperature now.\n"
        "2. Mix all of the ingredients together in a bowl.\n3. Bake them.",
        f"Table 2\n1 Revenue 2,345 3,456\n2 Costs 1,234 2,345\n{BODY}",
        f"2 Methods\n{BODY}\n3 The court held that the statute was not a bar to the claim\n"
        "4 See https://example.org/ruling for the full text",
        f"2019 Revenue Increased\n{BODY}\n3 Results\n{BODY}",
    ]
    assert [t for t, _, _ in titles(pages)] == ["1 Introduction", "2 Methods", "3 Results"]


def test_numbered_affiliations_before_the_introduction_do_not_swallow_it():
    pages = [f"Deep Things\n1 University of Nowhere\n2 School of Somewhere\n{BODY}\n1 Introduction\n{BODY}",
             f"2 Related Work\n{BODY}", f"3 Method\n{BODY}"]
    assert [t for t, _, _ in titles(pages)] == ["1 Introduction", "2 Related Work", "3 Method"]


def test_references_to_an_item_in_running_text_are_no_heading():
    pages = [f"Item 7. Management's Discussion and Analysis\n{BODY}",
             f"As described in\nItem 7 of this report, revenue grew.\n{BODY}"]
    assert [t for t, _, _ in titles(pages)] == ["Item 7. Management's Discussion and Analysis"]


def test_detected_headings_become_section_nodes_over_their_pages():
    pages = [f"1 Introduction\n{BODY}", f"{BODY}", f"2 Methods\n{BODY}", f"2.1 Data\n{BODY}", f"{BODY}",
             f"3 Results\n{BODY}"]
    doc = Document(id="paper", pages=pages)
    tree = build_document_trees([doc], BuildConfig(sections=SectionConfig(headings=True)))[0]
    sections = {n.title: n for n in tree.nodes if not n.is_leaf and n.title}
    assert str(sections["1 Introduction"].span) == "pp.1-2"
    assert str(sections["2 Methods"].span) == "pp.3-5"
    assert str(sections["2.1 Data"].span) == "pp.4-5"
    assert sections["2.1 Data"].parent_id == sections["2 Methods"].id
    leaves = {n.span.first_page: n for n in tree.nodes if n.is_leaf}
    assert leaves[5].title == "2.1 Data" and leaves[6].title == "3 Results"
    # off (the default): the fixed branching groups, no titles
    plain = build_document_trees([doc], BuildConfig())[0]
    assert not any(n.title for n in plain.nodes)


def test_a_real_outline_wins_over_detected_headings():
    pages = [f"1 Introduction\n{BODY}", f"2 Methods\n{BODY}", f"3 Results\n{BODY}"]
    doc = Document(id="p", pages=pages, outline=[{"title": "Bookmarked", "page": 2, "level": 0}])
    tree = build_document_trees([doc], BuildConfig(sections=SectionConfig(outline=True, headings=True)))[0]
    assert {n.title for n in tree.nodes if n.title} == {"Bookmarked"}


def test_detected_headings_in_a_plain_text_document():
    text = f"PART II\n\nItem 7. Management's Discussion and Analysis\n\n{BODY}\n\nItem 8. Financial Statements\n\n{BODY}"
    tree = build_document_trees([Document(id="t", text=text)], BuildConfig(sections=SectionConfig(headings=True)))[0]
    leaves = [n for n in tree.nodes if n.is_leaf]
    assert [n.title for n in leaves] == ["Item 7. Management's Discussion and Analysis", "Item 8. Financial Statements"]
    assert all(n.text == BODY for n in leaves)


def test_financial_statements_and_notes_head_sections_under_item_8():
    header = "Table of Contents"  # a link atop every page of many filings: no contents page
    table = "Cash and cash equivalents 1,234 2,345\nTotal assets 9,876 8,765"
    pages = [
        f"{header}\nPART II\nItem 7. Management's Discussion and Analysis\n{BODY}",
        f"{header}\nItem 8. Financial Statements and Supplementary Data\nCONSOLIDATED BALANCE SHEETS\n"
        f"(In millions)\n{table}",
        f"{header}\nCONSOLIDATED BALANCE SHEETS (continued)\n{table}",
        f"{header}\nConsolidated Statements of Cash Flows\n(In millions)\n{table}",
        f"{header}\nNOTES TO CONSOLIDATED FINANCIAL STATEMENTS\nNote 1. Summary of Significant Accounting Policies\n{BODY}",
        f"{header}\nNote 2. Revenue\n{BODY}\nNote 7 of the prior report explains the change, as noted.",
    ]
    assert titles(pages) == [
        ("PART II", 0, 1), ("Item 7. Management's Discussion and Analysis", 1, 1),
        ("Item 8. Financial Statements and Supplementary Data", 1, 2), ("CONSOLIDATED BALANCE SHEETS", 2, 2),
        ("Consolidated Statements of Cash Flows", 2, 4), ("NOTES TO CONSOLIDATED FINANCIAL STATEMENTS", 2, 5),
        ("Note 1. Summary of Significant Accounting Policies", 3, 5), ("Note 2. Revenue", 3, 6)]
    tree = build_document_trees([Document(id="10k", pages=pages)], BuildConfig(sections=SectionConfig(headings=True)))[0]
    leaves = {n.span.first_page: n for n in tree.nodes if n.is_leaf}
    # The continued page stays in its statement, its leaves indexed with the statement's common names.
    assert leaves[3].title == "CONSOLIDATED BALANCE SHEETS (balance sheet, statement of financial position)"


def test_an_index_to_the_financial_statements_is_no_section():
    index_page = ("Index to Consolidated Financial Statements\nConsolidated Balance Sheets 45\n"
                  "Consolidated Statements of Operations 46\nConsolidated Statements of Cash Flows 47")
    index_lines = "Consolidated Balance Sheets\n45\nConsolidated Statements of Operations\n46\nStatements of Cash Flows\n47"
    for page in (index_page, index_lines):
        found = titles([page, f"Consolidated Statements of Cash Flows\n{BODY}"])
        assert found == [("Consolidated Statements of Cash Flows", 0, 2)], page
