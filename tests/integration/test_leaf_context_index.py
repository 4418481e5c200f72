"""Context in every leaf on a real index (real MiniLM + BM25, Qdrant Edge): words found only in a
leaf's context path (its filing, its section) find it; the text returned is the page alone."""

from drag_knee_retriever import BuildConfig, Document, SectionConfig, VectorConfig

PAGES = [
    "PART II\nItem 7. Management's Discussion and Analysis\nRevenue grew because more units shipped to retailers.",
    "Operating costs rose with wages and freight; margins narrowed slightly over the period.",
    "Item 8. Financial Statements\nTotal assets and liabilities at year end are shown with the prior year.",
    "Receipts from customers exceeded payments to suppliers, and capital spending was modest.",
]


def build(make_index, collection, sections=None, vectors=None):
    index = make_index(collection=collection, build=BuildConfig(sections=sections or SectionConfig(),
                                                                vectors=vectors or VectorConfig()))
    index.add_documents([
        Document(id="quokka-10k", pages=PAGES, metadata={"title": "Quokka Dynamics annual report", "year": 2023}),
        Document(id="other", pages=["Revenue grew for another firm too, as units shipped.", "Assets were flat."],
                 metadata={"title": "Wombat Limited annual report", "year": 2021}),
    ])
    return index


def test_the_document_title_and_metadata_in_context_find_its_leaves_by_bm25(make_index):
    plain = build(make_index, "ctx_plain")
    assert plain.flat_search("Quokka", k=3, mode="sparse") == []  # no page says it
    index = build(make_index, "ctx_title", vectors=VectorConfig(context=("title", "path", "page"), context_metadata=("year",)))
    hits = index.flat_search("Quokka 2023", k=10, mode="sparse")
    assert hits and {h.node.doc_id for h in hits} == {"quokka-10k"}
    by_page = {h.node.span.first_page: h for h in hits}
    assert set(by_page) == {1, 2, 3, 4}
    assert [by_page[p].text for p in (1, 2, 3, 4)] == PAGES  # returned text: the page, no context
    assert "Quokka" not in "".join(h.text for h in hits)


def test_detected_section_in_context_ranks_the_pages_it_heads(make_index):
    index = build(make_index, "ctx_sections", sections=SectionConfig(headings=True), vectors=VectorConfig(context=("title", "path")))
    # Page 4 names no statement; its section heading (found on page 3) does.
    top = index.flat_search("Financial Statements receipts from customers", k=1)[0]
    assert (top.node.doc_id, top.node.span.first_page) == ("quokka-10k", 4)
    assert top.node.title == "Item 8. Financial Statements" and top.text == PAGES[3]
    result = index.search("Quokka Dynamics financial statements receipts", filters={"doc_id": "quokka-10k"})
    assert result.nodes and all("Quokka" not in n.text for n in result.nodes)
