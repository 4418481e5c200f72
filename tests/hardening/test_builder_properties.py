"""Builder invariants on random documents: one root, every leaf reachable, spans contiguous and
nested, ids stable and derived from the document id and the node's place, no text lost.

Random documents mix scripts (Latin, Cyrillic, Greek, Arabic, Hebrew, CJK, emoji, combining
marks), zero-width and control characters, empty lines and blank pages, Markdown headings and
fences, huge paragraphs with and without spaces; explicit cases cover one page and thousands of
pages. Pure Python: no model, no store.
"""

from __future__ import annotations

import time
from typing import Dict, List

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from drag_knee_retriever import BuildConfig, Document, LeafConfig, SectionConfig
from drag_knee_retriever.build._builder import build_document_trees
from drag_knee_retriever.model._ids import leaf_id, node_id

COUNTS = {"documents": 0, "nodes": 0}

ALPHABET = (
    "abcdefghij KLMNOP qrstu"           # Latin
    "абвгдежзий ЖЗИЙ"                   # Cyrillic
    "αβγδε"                             # Greek
    "مرحبا بالعالم"                      # Arabic (right to left)
    "שלום עולם"                         # Hebrew (right to left)
    "向量数据库存储嵌入"                  # CJK (no spaces)
    "😀🚀🇫🇷"                            # emoji, a flag made of two code points
    "e\u0301a\u0308"                    # combining marks
    "\u200b\u200c\u200d\ufeff\u2060"    # zero-width characters
    "\u202e\u202d\u2066\u2069"          # bidi overrides and isolates
    "\x00\x01\x07\x1b\x7f\x0b\x0c"      # control characters
    ".,!?…;:-'\"«»"                     # punctuation, sentence ends
)
words = st.text(alphabet=ALPHABET, min_size=1, max_size=14)
sentences = st.lists(words, min_size=1, max_size=12).map(" ".join)
paragraphs = st.one_of(
    st.lists(sentences, min_size=1, max_size=6).map(lambda s: ". ".join(s) + "."),
    st.text(alphabet="xyz", min_size=2500, max_size=9000),            # a huge word: no space to cut at
    st.lists(sentences, min_size=30, max_size=60).map(" ".join),       # a huge paragraph with spaces
    st.sampled_from(["", " ", "\t", "\u200b", "# Heading", "## Sub heading", "```", "####### not a heading"]),
)
separators = st.sampled_from(["\n\n", "\n", "\n \n\n", "\r\n\r\n", "\n\t\n", "\n\n\n\n"])


@st.composite
def texts(draw):
    parts = draw(st.lists(paragraphs, min_size=1, max_size=12))
    seps = draw(st.lists(separators, min_size=len(parts), max_size=len(parts)))
    text = "".join(p + s for p, s in zip(parts, seps))
    if not text.strip():
        text += "fallback words"
    return text


@st.composite
def page_lists(draw):
    pages = draw(st.lists(st.one_of(sentences, st.sampled_from(["", "  ", "\n"])), min_size=1, max_size=40))
    if not any(p.strip() for p in pages):
        pages.append("a page")
    return pages


configs = st.builds(BuildConfig, branching=st.integers(2, 6),
                    leaves=st.builds(LeafConfig, max_chars=st.sampled_from([300, 800, 2000]),
                                     min_chars=st.sampled_from([0, 50, 200])),
                    sections=st.builds(SectionConfig, markdown=st.booleans()))


def check_tree(document: Document, config: BuildConfig) -> List:
    """Assert every invariant of the tree built for ``document``; return its nodes."""
    (tree,) = build_document_trees([document], config)
    nodes = tree.nodes
    by_id: Dict[str, object] = {n.id: n for n in nodes}
    assert len(by_id) == len(nodes), "duplicate node ids"
    roots = [n for n in nodes if n.parent_id is None]
    assert len(roots) == 1 and roots[0] is nodes[-1] and roots[0].level == 0, "one root, written last"
    root = roots[0]
    position = {n.id: i for i, n in enumerate(nodes)}
    reachable, todo = set(), [root]
    while todo:
        node = todo.pop()
        assert node.id not in reachable, "a node reached twice (not a tree)"
        reachable.add(node.id)
        assert node.doc_id == document.id and node.doc_hash == tree.doc_hash
        if node.is_leaf:
            assert node.child_ids == () and node.span.first_leaf == node.span.last_leaf
            assert node.id == leaf_id(document.id, node.span.first_leaf)
            continue
        assert node.id == node_id(document.id, node.path)
        kids = [by_id[c] for c in node.child_ids]
        assert kids, "an inner node without children"
        for i, kid in enumerate(kids):
            assert kid.parent_id == node.id and kid.level == node.level + 1 and kid.path == f"{node.path}.{i}"
            assert position[kid.id] < position[node.id], "a child written after its parent"
        assert kids[0].span.first_leaf == node.span.first_leaf and kids[-1].span.last_leaf == node.span.last_leaf
        for a, b in zip(kids, kids[1:]):
            assert b.span.first_leaf == a.span.last_leaf + 1, "children's spans are not contiguous"
        todo.extend(kids)
    assert reachable == set(by_id), "nodes not reachable from the root"
    leaves = sorted((n for n in nodes if n.is_leaf), key=lambda n: n.span.first_leaf)
    assert [l.span.first_leaf for l in leaves] == list(range(len(leaves))) == list(range(root.span.last_leaf + 1))
    if document.pages is not None:
        kept = [i for i, p in enumerate(document.pages, start=1) if p.strip()]
        assert [l.span.first_page for l in leaves] == kept, "one leaf per non-empty page, numbered as given"
        assert [l.text for l in leaves] == [document.pages[i - 1].strip() for i in kept]
    else:
        assert all(len(l.text) <= config.leaves.max_chars for l in leaves), "a leaf above leaves.max_chars"
        if not config.sections.markdown:
            # Only whitespace may change: every other character survives, in order.
            assert "".join(document.text.split()) == "".join("".join(l.text for l in leaves).split())
    # Stable: the same input gives the same ids (and the same hash).
    (again,) = build_document_trees([document], config)
    assert [n.id for n in again.nodes] == [n.id for n in nodes] and again.doc_hash == tree.doc_hash
    COUNTS["documents"] += 1
    COUNTS["nodes"] += len(nodes)
    return nodes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=texts(), config=configs)
def test_text_documents_build_well_formed_trees(text, config):
    check_tree(Document(id="doc/ü 1", text=text, metadata={"k": "v"}), config)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pages=page_lists(), config=configs)
def test_paged_documents_build_well_formed_trees(pages, config):
    check_tree(Document(id="pdf-7", pages=pages), config)


@pytest.mark.parametrize("document", [
    Document(id="one-page", pages=["The only page."]),
    Document(id="one-line", text="x"),
    Document(id="blank-pages-around", pages=["", "  ", "middle page", "", "\n"]),
    Document(id="headings-only", text="# A\n## B\n### C"),
    Document(id="fence", text="```\n# not a heading\n```\n\nbody text"),
    Document(id="rtl", text="\u202eمرحبا بالعالم. שלום עולם.\u202c\n\nSecond paragraph."),
    Document(id="zero-width", text="\u200b\u200b\u200b"),
], ids=lambda d: d.id)
def test_edge_case_documents(document):
    check_tree(document, BuildConfig())


@pytest.mark.parametrize("pages", [pytest.param(3000, id="3000-pages"),
                                   pytest.param(20000, id="20000-pages", marks=pytest.mark.slow)])
def test_thousands_of_pages(pages):
    document = Document(id="manual", pages=[f"Page {i}: valve {i % 97}, pump {i % 13}, torque {i}." for i in range(pages)])
    started = time.process_time()
    nodes = check_tree(document, BuildConfig())
    spent = time.process_time() - started
    print(f"\n[hardening] builder: {pages} pages -> {len(nodes)} nodes, twice, in {spent:.1f}s CPU")
    assert spent < pages * 0.01  # ~2.4 s per 3000 pages measured, per build


def test_report_counts(capsys):
    with capsys.disabled():
        print(f"\n[hardening] builder properties: {COUNTS}")
