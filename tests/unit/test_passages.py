"""Passages under pages: a long page becomes a page node over passage leaves (hand-made trees)."""

import pytest

from drag_knee_retriever import BuildConfig, Document, LeafConfig, SectionConfig
from drag_knee_retriever.build._builder import build_document_trees, passage_bounds, split_passages
from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.model._nodes import Span
from drag_knee_retriever.model._point_schema import full_node, node_payload

LONG = ("The balance sheet shows total assets of 12 million. " * 6
        + "\nRevenue grew by 8 percent in the year.\n" + "Cash flow from operations was positive. " * 6).strip()


def test_passages_are_exact_substrings_within_the_word_limit():
    bounds = passage_bounds(LONG, 25)
    assert len(bounds) > 2
    pieces = [LONG[lo:hi] for lo, hi in bounds]
    assert all(p == p.strip() and p for p in pieces)
    assert all(len(p.split()) <= 25 for p in pieces[:-1])
    # in order, no overlap, and nothing but whitespace between them: the page is all there
    assert all(a[1] <= b[0] and not LONG[a[1]:b[0]].strip() for a, b in zip(bounds, bounds[1:]))
    assert " ".join(" ".join(pieces).split()) == " ".join(LONG.split())


def test_a_segment_longer_than_the_limit_is_cut_at_words_and_a_tiny_tail_joins():
    text = " ".join(f"w{i}" for i in range(53))
    pieces = split_passages(text, 25)
    assert [len(p.split()) for p in pieces] == [25, 28]  # the 3-word tail joins the one before
    assert split_passages("short page", 25) == ["short page"]


def test_long_page_becomes_page_node_over_passages_with_page_citations():
    doc = Document(id="report", pages=["Cover page.", LONG, "Back page."])
    tree = build_document_trees([doc], BuildConfig(leaves=LeafConfig(passage_words=25, split_pages_over=None)))[0]
    by_page = {}
    for node in tree.nodes:
        by_page.setdefault(node.span.first_page, []).append(node)
    leaves = [n for n in tree.nodes if n.is_leaf]
    passages = [n for n in leaves if n.span.first_page == 2]
    assert len(passages) == len(split_passages(LONG, 25)) > 1
    assert [str(n.span) for n in passages[:2]] == ["p.2 ¶1", "p.2 ¶2"]
    page = next(n for n in tree.nodes if not n.is_leaf and n.span.first_page == n.span.last_page == 2)
    assert set(page.child_ids) == {n.id for n in passages}
    assert str(page.span) == "p.2" and page.span.first_part is None
    # leaf ordinals stay contiguous over the document; short pages stay single leaves
    assert [n.span.first_leaf for n in sorted(leaves, key=lambda n: n.span.first_leaf)] == list(range(len(leaves)))
    assert str(next(n for n in leaves if n.span.first_page == 1).span) == "p.1"
    assert str(tree.root.span) == "pp.1-3"


def test_passage_ids_are_stable_and_payload_keeps_the_part():
    doc = Document(id="report", pages=["Cover page.", LONG])
    first = build_document_trees([doc], BuildConfig(leaves=LeafConfig(passage_words=25, split_pages_over=None)))[0]
    again = build_document_trees([doc], BuildConfig(leaves=LeafConfig(passage_words=25, split_pages_over=None)))[0]
    assert [n.id for n in first.nodes] == [n.id for n in again.nodes]
    passage = next(n for n in first.nodes if n.is_leaf and n.span.first_part == 2)
    back = full_node(passage.id, node_payload(passage))
    assert back.span == passage.span and str(back.span) == "p.2 ¶2"


def test_without_passage_words_a_page_is_one_leaf():
    tree = build_document_trees([Document(id="d", pages=["Cover.", LONG])], BuildConfig(leaves=LeafConfig(passage_words=None)))[0]
    assert sum(n.is_leaf for n in tree.nodes) == 2
    assert all(n.span.first_part is None for n in tree.nodes)


def test_split_pages_over_splits_only_the_pages_longer_than_it():
    medium = " ".join(f"m{i}" for i in range(40))  # 40 words: over passage_words, under the threshold
    long_page = " ".join(f"w{i}" for i in range(90))
    doc = Document(id="d", pages=[medium, long_page])
    tree = build_document_trees([doc], BuildConfig(leaves=LeafConfig(passage_words=25, split_pages_over=60)))[0]
    leaves = sorted((n for n in tree.nodes if n.is_leaf), key=lambda n: n.span.first_leaf)
    assert [str(n.span) for n in leaves] == ["p.1", "p.2 ¶1", "p.2 ¶2", "p.2 ¶3", "p.2 ¶4"]  # 25+25+25+15
    assert leaves[0].text == medium
    # unset, every page longer than one passage is split (the behaviour before the threshold)
    both = build_document_trees([doc], BuildConfig(leaves=LeafConfig(passage_words=25, split_pages_over=None)))[0]
    assert sum(n.is_leaf and n.span.first_page == 1 for n in both.nodes) == 2


def test_by_default_only_pages_past_the_encoders_window_become_120_word_passages():
    short = " ".join(f"s{i}" for i in range(190))  # under 200 words: one leaf
    long_page = " ".join(f"w{i}" for i in range(450))
    tree = build_document_trees([Document(id="d", pages=[short, long_page])], BuildConfig())[0]
    leaves = sorted((n for n in tree.nodes if n.is_leaf), key=lambda n: n.span.first_leaf)
    assert [str(n.span) for n in leaves] == ["p.1", "p.2 ¶1", "p.2 ¶2", "p.2 ¶3", "p.2 ¶4"]
    assert [len(n.text.split()) for n in leaves] == [190, 120, 120, 120, 90]


@pytest.mark.parametrize("bad", [0, -5, True, "300", 2.5])
def test_split_pages_over_is_validated(bad):
    with pytest.raises(ConfigError, match="split_pages_over"):
        BuildConfig(leaves=LeafConfig(passage_words=120, split_pages_over=bad))


def test_span_citation_forms():
    assert str(Span(3, 3, 37, 37, 2, 2)) == "p.37 ¶2"
    assert str(Span(3, 4, 37, 37, 2, 3)) == "p.37 ¶2-3"
    assert str(Span(3, 9, 37, 39)) == "pp.37-39"


@pytest.mark.parametrize("bad", [0, 19, True, "120", 12.5])
def test_passage_words_is_validated(bad):
    with pytest.raises(ConfigError, match="passage_words"):
        BuildConfig(leaves=LeafConfig(passage_words=bad))


# -- outline sections ----------------------------------------------------------------------------

OUTLINE = [{"title": "1 Intro", "page": 1, "level": 0}, {"title": "2 Method", "page": 2, "level": 0},
           {"title": "2.1 Data", "page": 3, "level": 1}, {"title": "3 Results", "page": 5, "level": 0}]


def test_outline_entries_become_section_nodes_with_titles():
    pages = [f"Page {i} text about things." for i in range(1, 7)]
    tree = build_document_trees([Document(id="paper", pages=pages, outline=OUTLINE)], BuildConfig(sections=SectionConfig(outline=True)))[0]
    sections = {n.title: n for n in tree.nodes if not n.is_leaf and n.title}
    assert str(sections["2 Method"].span) == "pp.2-4"  # its own page and its subsection's
    assert str(sections["2.1 Data"].span) == "pp.3-4"
    assert str(sections["3 Results"].span) == "pp.5-6"
    assert "1 Intro" not in sections  # one page: the page itself, titled
    leaves = {n.span.first_page: n for n in tree.nodes if n.is_leaf}
    assert leaves[1].title == "1 Intro" and leaves[4].title == "2.1 Data" and leaves[6].title == "3 Results"
    assert sections["2.1 Data"].parent_id == sections["2 Method"].id


def test_outline_can_be_ignored_and_is_part_of_the_document_hash():
    pages = [f"Page {i}." for i in range(1, 7)]
    plain = build_document_trees([Document(id="p", pages=pages)], BuildConfig())[0]
    off = build_document_trees([Document(id="p", pages=pages, outline=OUTLINE)], BuildConfig())[0]  # off by default
    assert [n.span for n in plain.nodes] == [n.span for n in off.nodes]
    assert plain.doc_hash != off.doc_hash


@pytest.mark.parametrize("outline, message", [
    ([{"title": "x", "page": 9}], "pages are 1..2"),
    ([{"title": "", "page": 1}], "title"),
    ([{"title": "x", "page": 1, "level": -1}], "level"),
    ("not a list", "outline must be a list"),
])
def test_bad_outline_is_a_clear_error(outline, message):
    from drag_knee_retriever.errors import InvalidDocumentError

    with pytest.raises(InvalidDocumentError, match=message):
        Document(id="d", pages=["a", "b"], outline=outline)


def test_pdf_loader_reads_bookmarks_as_the_outline(tmp_path):
    pypdf = pytest.importorskip("pypdf")
    from drag_knee_retriever.loaders import load_file
    from drag_knee_retriever.sample import text_pdf_bytes

    plain = tmp_path / "plain.pdf"
    plain.write_bytes(text_pdf_bytes(["Intro page about lighthouses.", "Method page about lenses.",
                                      "Data page about keepers."]))
    writer = pypdf.PdfWriter(clone_from=str(plain))
    top = writer.add_outline_item(title="1 Intro", page_number=0)
    method = writer.add_outline_item(title="2 Method", page_number=1)
    writer.add_outline_item(title="2.1 Data", page_number=2, parent=method)
    assert top is not None
    marked = tmp_path / "marked.pdf"
    with open(marked, "wb") as handle:
        writer.write(handle)
    doc = load_file(marked)
    assert [dict(e) for e in doc.outline] == [{"title": "1 Intro", "page": 1, "level": 0},
                                              {"title": "2 Method", "page": 2, "level": 0},
                                              {"title": "2.1 Data", "page": 3, "level": 1}]
    assert load_file(plain).outline is None
    tree = build_document_trees([doc], BuildConfig(sections=SectionConfig(outline=True)))[0]
    assert {n.title for n in tree.nodes if not n.is_leaf} >= {"2 Method"}


def test_abbreviations_and_initials_end_no_sentence_and_no_passage():
    from drag_knee_retriever.build._summarize import split_sentences

    army = "Dr. Smith met Mr. Jones in the U.S. Army."
    text = f"{army} They talked, e.g. about J. R. R. Tolkien. Then they left!"
    assert split_sentences(text) == [army, "They talked, e.g. about J. R. R. Tolkien.", "Then they left!"]
    assert split_sentences("А. С. Пушкин родился в Москве. Он писал стихи.") == [
        "А. С. Пушкин родился в Москве.", "Он писал стихи."]
    # A passage of at most 10 words: "Dr." was a sentence end, so the first passage took "Dr. Smith met Mr."
    assert split_passages(f"One two three four five six. {army}", 10) == ["One two three four five six.", army]
