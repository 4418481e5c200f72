"""Builder invariants: one root per document, leaves reachable, spans contiguous and nested, stable ids."""

import pytest

from drag_knee_retriever import BuildConfig, Document, LeafConfig, VectorConfig
from drag_knee_retriever.build._builder import build_document_trees
from drag_knee_retriever.model._ids import leaf_id, node_id
from drag_knee_retriever.errors import ConfigError, InvalidDocumentError

MARKDOWN = """# Install

Run pip install to get the package. It needs Python 3.10 or newer and a few libraries.

## Offline

Install the offline extra to bundle the model, so nothing is downloaded at run time.

# Usage

Create an index, add documents, and search. The search walks the trees from the roots.

Each result carries its span and the text of every leaf beneath it.
"""


def check_invariants(tree):
    nodes = {n.id: n for n in tree.nodes}
    roots = [n for n in tree.nodes if n.parent_id is None]
    assert len(roots) == 1 and roots[0] is tree.root and tree.root.level == 0
    assert len(nodes) == len(tree.nodes), "ids must be unique"
    # every leaf reachable from the root, and the leaves in order make 0..n-1
    reached, stack = [], [tree.root.id]
    while stack:
        node = nodes[stack.pop()]
        if node.is_leaf:
            reached.append(node.span.first_leaf)
        for child in node.child_ids:
            assert nodes[child].parent_id == node.id
            assert nodes[child].level == node.level + 1
            stack.append(child)
    assert sorted(reached) == list(range(len(tree.leaves)))
    for node in tree.nodes:
        if node.is_leaf:
            assert node.span.first_leaf == node.span.last_leaf
            assert node.id == leaf_id(node.doc_id, node.span.first_leaf)
            continue
        kids = [nodes[c] for c in node.child_ids]
        assert kids[0].span.first_leaf == node.span.first_leaf
        assert kids[-1].span.last_leaf == node.span.last_leaf
        for left, right in zip(kids, kids[1:]):
            assert left.span.last_leaf + 1 == right.span.first_leaf, "spans must be contiguous"
        assert all(node.span.contains(k.span) for k in kids)
    # children precede their parents (the write order), root last
    position = {n.id: i for i, n in enumerate(tree.nodes)}
    for node in tree.nodes:
        for child in node.child_ids:
            assert position[child] < position[node.id]


def test_pages_become_one_leaf_each_with_page_numbers():
    doc = Document(id="handbook", pages=[f"Page {i} talks about topic {i}." for i in range(1, 11)])
    (tree,) = build_document_trees([doc])
    check_invariants(tree)
    assert [l.span.first_page for l in tree.leaves] == list(range(1, 11))
    assert tree.root.span.first_page == 1 and tree.root.span.last_page == 10
    assert all(len(n.child_ids) <= 4 for n in tree.nodes)  # branching 3, a lone remainder merged


def test_markdown_headings_become_parents():
    (tree,) = build_document_trees([Document(id="notes", text=MARKDOWN)], BuildConfig(leaves=LeafConfig(min_chars=20)))
    check_invariants(tree)
    titles = {n.title for n in tree.nodes if not n.is_leaf}
    assert {"Install", "Usage"} <= titles
    usage = next(n for n in tree.nodes if n.title == "Usage" and not n.is_leaf)
    assert len(usage.child_ids) == 2


def test_paragraphs_are_merged_when_short_and_split_when_long():
    long_para = " ".join(f"Sentence number {i} is here." for i in range(200))
    text = "Tiny one.\n\nTiny two.\n\n" + long_para
    (tree,) = build_document_trees([Document(id="p", text=text)], BuildConfig(leaves=LeafConfig(max_chars=500, min_chars=100)))
    check_invariants(tree)
    assert tree.leaves[0].text.startswith("Tiny one.\n\nTiny two.")
    assert all(len(l.text) <= 500 for l in tree.leaves)
    assert len(tree.leaves) > 5


def test_single_leaf_document_is_its_own_root():
    (tree,) = build_document_trees([Document(id="one", text="Just one short paragraph.")])
    assert len(tree.nodes) == 1 and tree.root.is_leaf and tree.root.level == 0


def test_ids_are_stable_across_runs_and_inner_summaries_exist():
    docs = [Document(id="a", pages=["alpha beta", "gamma delta", "epsilon zeta", "eta theta"]),
            Document(id="b", text=MARKDOWN)]
    first = [n.id for t in build_document_trees(docs) for n in t.nodes]
    second = [n.id for t in build_document_trees(docs) for n in t.nodes]
    assert first == second
    (tree,) = build_document_trees(docs[:1])
    assert tree.root.id == node_id("a", "r")
    assert all(n.text for n in tree.nodes)
    assert all(n.keywords for n in tree.nodes if not n.is_leaf)


def test_russian_text_works():
    text = "Первый абзац о вирусах и вакцинах.\n\nВторой абзац о лечении и больницах.\n\nТретий абзац о профилактике."
    (tree,) = build_document_trees([Document(id="ru", text=text)], BuildConfig(leaves=LeafConfig(min_chars=10)))
    check_invariants(tree)
    assert any("вирус" in k for n in tree.nodes for k in n.keywords)


def test_document_hash_changes_with_content_and_settings():
    doc = Document(id="a", text="Some text here.")
    (t1,) = build_document_trees([doc])
    (t2,) = build_document_trees([Document(id="a", text="Other text here.")])
    (t3,) = build_document_trees([doc], BuildConfig(branching=4))
    assert len({t1.doc_hash, t2.doc_hash, t3.doc_hash}) == 3


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(id="x"), "neither text nor pages"),
        (dict(id="x", text="   \n "), "empty or whitespace"),
        (dict(id="x", text=b"bytes"), "text must be str"),
        (dict(id="x", pages=["", "  "]), "every page is empty"),
        (dict(id="x", pages="not a list"), "pages must be a list"),
        (dict(id="", text="t"), "non-empty string"),
        (dict(id="x", text="t", metadata={"when": object()}), "cannot be stored as JSON"),
        (dict(id="x", text="t", pages=["p"]), "both text and pages"),
    ],
)
def test_bad_documents_name_the_problem(kwargs, message):
    with pytest.raises(InvalidDocumentError, match=message):
        Document(**kwargs)


@pytest.mark.parametrize("kwargs", [dict(branching=1), dict(leaves=lambda: LeafConfig(max_chars=10)),
                                    dict(vectors=lambda: VectorConfig(inner_dense="x")),
                                    dict(leaves=lambda: LeafConfig(min_chars=5000))])
def test_bad_build_config(kwargs):
    with pytest.raises(ConfigError):
        BuildConfig(**{k: v() if callable(v) else v for k, v in kwargs.items()})


def test_setext_headings_make_sections():
    """Issue 27 item 10: 'Title\\n=====' and 'Part\\n-----' are headings (CommonMark), as '#' ones are."""
    from drag_knee_retriever import Document
    from drag_knee_retriever.build._builder import build_trees

    text = ("Beekeeping\n==========\n\nA colony is one organism.\n\nSpring\n------\n\nThe colony grows.\n\n"
            "```\ncode\n=====\n```\n\nWinter\n------\n\nThe colony clusters.")
    nodes = build_trees([Document(id="b", text=text)])
    titles = {n.title for n in nodes if n.title}
    assert {"Beekeeping", "Spring", "Winter"} <= titles and "code" not in titles
    leaves = [n.text for n in nodes if n.is_leaf]
    assert not any(t.strip() in ("==========", "------") for t in leaves)


def test_keep_text_puts_the_text_as_given_on_the_root_only():
    text = "# T\n\nBody one.\n\n## S\n\nBody two."
    [plain] = build_document_trees([Document(id="d", text=text)])
    [kept] = build_document_trees([Document(id="d", text=text, keep_text=True)])
    assert all(n.source_text is None for n in plain.nodes)  # folder ingests: payloads as before
    assert kept.root.source_text == text and all(n.source_text is None for n in kept.nodes[:-1])
    [same] = build_document_trees([Document(id="d", text="One.\n\nTwo.", keep_text=True)])
    assert same.root.source_text is None  # its leaves give it back: nothing stored twice
