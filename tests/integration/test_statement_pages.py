"""Statement pages on a real index (real MiniLM + BM25, Qdrant Edge): a question's name for a
statement ("statement of financial position") finds the page the filing heads with its own name
("Consolidated Balance Sheets"), and the text returned is the page's own."""

from drag_knee_retriever import BuildConfig, Document, SectionConfig

FIGURES = "\n".join(f"{item} {1200 + 41 * i:,} {1100 + 23 * i:,}" for i, item in enumerate(
    ("Cash and equivalents", "Receivables", "Inventories", "Total current assets", "Property and equipment",
     "Goodwill", "Total assets", "Accounts payable", "Long-term debt", "Total liabilities")))
PAGES = [
    "Management's discussion: demand rose in every region and the company opened new stores during the year, "
    "while freight and wages weighed on margins.",
    f"Consolidated Balance Sheets\n(In millions)\n{FIGURES}",
    "Risk factors: competition, supply disruptions and changes in consumer taste could affect future results.",
]


def build(make_index, collection, statements):
    index = make_index(collection=collection, build=BuildConfig(sections=SectionConfig(statements=statements)))
    index.add_documents([Document(id="acme-10k", pages=PAGES, metadata={"title": "Acme annual report"})])
    return index


def test_the_analysts_name_for_a_statement_finds_its_page_by_bm25(make_index):
    plain = build(make_index, "stmt_off", statements=False)
    assert plain.flat_search("statement of financial position", k=3, mode="sparse") == []  # no page says it
    index = build(make_index, "stmt_on", statements=True)
    hits = index.flat_search("statement of financial position", k=3, mode="sparse")
    assert [h.node.span.first_page for h in hits] == [2]
    assert hits[0].node.title.startswith("Consolidated Balance Sheets (balance sheet")
    assert hits[0].text == PAGES[1]  # the page's own text; the names are what it is indexed with
    result = index.search("total current assets on the statement of financial position")
    assert result.nodes and result.nodes[0].span.first_page == 2


def test_pdf_pages_from_langchain_and_llamaindex_loaders_get_the_statement_title():
    """A PDF loaded by either framework (one document per page) becomes one paged document, so its
    statement page is found as a Document(pages=...) of the library's own loader would be."""
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document as LIDocument

    from drag_knee_retriever.build._builder import build_document_trees
    from drag_knee_retriever.integrations.langchain import from_langchain_documents
    from drag_knee_retriever.integrations.llamaindex import from_llamaindex_documents

    langchain = [LCDocument(page_content=t, metadata={"source": "acme-10k.pdf", "page": i}) for i, t in enumerate(PAGES)]
    llamaindex = [LIDocument(text=t, metadata={"file_name": "acme-10k.pdf", "page_label": str(i + 1)})
                  for i, t in enumerate(PAGES)]
    for documents in (from_langchain_documents(langchain), from_llamaindex_documents(llamaindex)):
        assert len(documents) == 1 and documents[0].pages is not None
        tree = build_document_trees(documents, BuildConfig())[0]
        titles = {n.span.first_page: n.title for n in tree.nodes if n.is_leaf}
        assert titles[2].startswith("Consolidated Balance Sheets (balance sheet") and titles[1] is None
