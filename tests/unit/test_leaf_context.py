"""Context in every leaf: the indexed text carries the document title, section path, page and
marked metadata; the returned text stays the leaf's own (hand-made documents, the real Vectorizer)."""

import pytest

from drag_knee_retriever import BuildConfig, Document, SectionConfig, VectorConfig
from drag_knee_retriever.build._builder import build_document_trees, document_title
from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.model._point_schema import full_node, node_payload
from drag_knee_retriever.build._summarize import ExtractiveSummarizer
from drag_knee_retriever.build._vectorize import Vectorizer

BODY = "Net cash provided by operating activities rose, driven by higher collections in the year."
OUTLINE = [{"title": "PART II", "page": 1, "level": 0}, {"title": "Item 8. Financial Statements", "page": 2, "level": 1},
           {"title": "Cash Flow Statement", "page": 3, "level": 2}]
DOC = Document(id="acme", pages=[f"Overview. {BODY}", f"Balance. {BODY}", f"Cash. {BODY}"], outline=OUTLINE,
               metadata={"title": "ACME Corp 10-K", "company": "ACME Corp", "year": 2023})


def leaves(config):
    tree = build_document_trees([DOC], config)[0]
    return {n.span.first_page: n for n in tree.nodes if n.is_leaf}


def indexed_texts(config, nodes):
    vec = Vectorizer(config, encoder=None, summarizer=ExtractiveSummarizer(config))  # texts only, no encoding
    dense = [vec.dense_text(n) for n in nodes]
    return dense, vec.sparse_texts(nodes, dense)


def test_context_path_in_dense_and_bm25_text_but_not_in_the_returned_text():
    config = BuildConfig(sections=SectionConfig(outline=True), vectors=VectorConfig(context=("title", "path", "page"), context_metadata=("company", "year")))
    leaf = leaves(config)[3]
    expected = "ACME Corp 10-K | PART II > Item 8. Financial Statements > Cash Flow Statement | page 3 | company: ACME Corp | year: 2023"
    assert leaf.context == expected
    assert leaf.text == f"Cash. {BODY}"  # what a search returns and the tokens count
    dense, sparse = indexed_texts(config, [leaf])
    assert dense == [f"{expected}\n{leaf.text}"] and sparse == dense


def test_default_keeps_todays_section_title_in_front_and_writes_no_context():
    config = BuildConfig(sections=SectionConfig(outline=True))
    leaf = leaves(config)[3]
    assert leaf.context is None and "context" not in node_payload(leaf)
    dense, _ = indexed_texts(config, [leaf])
    assert dense == [f"Cash Flow Statement\n{leaf.text}"]


def test_parts_follow_the_config_and_missing_ones_are_skipped():
    page1 = leaves(BuildConfig(sections=SectionConfig(outline=True), vectors=VectorConfig(context=("section", "page"))))[1]
    assert page1.context == "PART II | page 1"
    untitled = build_document_trees([Document(id="x", pages=["a page", "b page"])],
                                    BuildConfig(vectors=VectorConfig(context=("title", "path"), context_metadata=("company",))))[0]
    assert all(n.context == "" for n in untitled.nodes if n.is_leaf)  # nothing to add: the text alone
    dense, _ = indexed_texts(BuildConfig(vectors=VectorConfig(context=())), [n for n in untitled.nodes if n.is_leaf])
    assert dense == ["a page", "b page"]


def test_context_survives_the_payload_round_trip_and_changes_the_document_hash():
    config = BuildConfig(sections=SectionConfig(outline=True), vectors=VectorConfig(context=("title", "page")))
    leaf = leaves(config)[2]
    assert full_node(leaf.id, node_payload(leaf)) == leaf
    plain = build_document_trees([DOC], BuildConfig(sections=SectionConfig(outline=True)))[0]
    assert plain.doc_hash != build_document_trees([DOC], config)[0].doc_hash


def test_markdown_sections_give_the_heading_path():
    text = "# Guide\n\nIntro text here for the guide.\n\n## Install\n\nRun pip install to get it, then import it."
    tree = build_document_trees([Document(id="g", text=text, metadata={"title": "guide_v2.md"})],
                                BuildConfig(vectors=VectorConfig(context=("title", "path"))))[0]
    contexts = [n.context for n in tree.nodes if n.is_leaf]
    assert contexts == ["guide v2 | Guide", "guide v2 | Guide > Install"]


def test_document_title_drops_file_suffixes_and_opaque_ids():
    assert document_title({"title": "ACME_annual_report_2023.pdf"}) == "ACME annual report 2023"
    assert document_title({"title": "8e7c4cb542ad160f80fb3d795ada35d8.pdf"}) is None
    assert document_title({"title": "Annual Report 2023"}) == "Annual Report 2023"
    assert document_title({}) is None
    assert document_title({"path": "filings/ACME_10-K_2023.pdf"}) == "ACME 10-K 2023"  # no title: the file name


@pytest.mark.parametrize("group, field, bad, message", [
    (VectorConfig, "context", ("title", "chapter"), "unknown part"),
    (VectorConfig, "context", ("section", "path"), "not both"),
    (VectorConfig, "context", (1,), "tuple of non-empty strings"),
    (VectorConfig, "context_metadata", ("",), "tuple of non-empty strings"),
    (SectionConfig, "headings", "yes", "True or False"),
])
def test_context_settings_are_validated(group, field, bad, message):
    with pytest.raises(ConfigError, match=message):
        group(**{field: bad})


def test_context_settings_accept_the_eval_cli_form():
    config = BuildConfig(vectors=VectorConfig(context="title+path+page", context_metadata="company+year"))
    assert config.vectors.context == ("title", "path", "page") and config.vectors.context_metadata == ("company", "year")
