"""Issue 38 item 3: text and metadata come back exactly as added, whatever the document's shape.

Attacked as a user would through both vector stores: documents without a page number (each its
own text tree: Markdown headings, leading and trailing whitespace, CRLF, tabs, blank lines, Unicode),
one chunk of a source, several chunks of a source, numbered pages; read back by id (LangChain
``get_by_ids``, LlamaIndex ``get_nodes``) and by a flat search (``similarity_search``, a flat
``query``). Before the fix a text tree came back as its leaves joined ("# Title\\n\\nBody" as "Body").
A tree stored without its exact text (an older release) still reads back as its leaves joined.
Real model, real Qdrant Edge and qdrant-client local mode.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

lc = pytest.importorskip("langchain_core.documents")
li_schema = pytest.importorskip("llama_index.core.schema")

from llama_index.core.vector_stores.types import VectorStoreQuery  # noqa: E402

from drag_knee_retriever import Document  # noqa: E402
from drag_knee_retriever.build._builder import build_document_trees  # noqa: E402
from drag_knee_retriever.integrations.langchain import DragKneeVectorStore as LCStore  # noqa: E402
from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore as LIStore  # noqa: E402

TEXTS = [
    "# Title\n\nBody text about volcanoes\n\n## Sub\n\nMore on lava",
    "   leading and trailing spaces around a line on tides   \n\n",
    "first line on sourdough\r\nsecond line\r\n\r\nthird paragraph on bread",
    "tab\tseparated\tglacier\tnotes\n\n\n\n\nafter five newlines,   three spaces",
    "Ünïcödé — 日本語のテキスト 🌋 and\u00a0a no-break space\u2028and a line separator",
]
META = {"author": "Ada", "n": 3, "ratio": 1.5, "ok": True, "none": None, "tags": ["a", "b"],
        "nested": {"x": [1, {"y": "z"}]}, "ünï": "日本"}


def _shapes():
    """(id, text, metadata) of every shape: alone, one chunk of a source, chunks of a source, pages."""
    docs = [(f"alone-{i}", t, dict(META, i=i)) for i, t in enumerate(TEXTS)]
    docs.append(("single-chunk", TEXTS[0], dict(META, source="single.md")))
    docs += [(f"chunk-{i}", t, dict(META, source="chunks.md", i=i)) for i, t in enumerate(TEXTS[1:3])]
    docs += [(f"page-{i}", t, dict(META, source="paged.pdf", page=i)) for i, t in enumerate(TEXTS[3:])]
    return docs


def _older_tree(index, doc_id, text):
    """A text tree as an older release stored it: no exact text recorded (leaves only)."""
    [tree] = build_document_trees([Document(id=doc_id, text=text, metadata={"drag_member_ids": [doc_id]})])
    index.add_nodes([replace(n, source_text=None) if hasattr(n, "source_text") else n for n in tree.nodes])


def test_langchain_documents_come_back_exactly_as_added(make_index, engine):
    index = make_index(engine=engine, collection=f"rt_lc_{engine}")
    store = LCStore(index)
    shapes = _shapes()
    given = [lc.Document(id=i, page_content=t, metadata=m) for i, t, m in shapes]
    assert store.add_documents(given) == [i for i, _, _ in shapes]
    got = store.get_by_ids([i for i, _, _ in shapes])
    assert [(d.id, d.page_content, d.metadata) for d in got] == [(i, t, m) for i, t, m in shapes]
    found = {d.id: d for d in store.similarity_search("volcanoes lava bread tides glacier", k=len(shapes))}
    assert len(found) == len(shapes)
    assert {i: (d.page_content, d.metadata) for i, d in found.items()} == {i: (t, m) for i, t, m in shapes}
    # an older release's tree (no exact text recorded) still reads back as its leaves joined
    _older_tree(index, "older", TEXTS[0])
    [older] = store.get_by_ids(["older"])
    assert older.page_content == "Body text about volcanoes\n\nMore on lava"


def test_llamaindex_nodes_come_back_exactly_as_added(make_index, engine):
    index = make_index(engine=engine, collection=f"rt_li_{engine}")
    store = LIStore(index, query_mode="flat")
    nodes = [li_schema.TextNode(id_=i, text=t, metadata={k: v for k, v in m.items() if k not in ("source", "page")})
             for i, t, m in _shapes()[:5]]
    nodes.append(li_schema.TextNode(id_="chunk-of-doc", text=TEXTS[0], metadata=dict(META), relationships={
        li_schema.NodeRelationship.SOURCE: li_schema.RelatedNodeInfo(node_id="the-doc")}))
    store.add(nodes)
    want = {n.node_id: (n.text, n.metadata) for n in nodes}
    got = store.get_nodes(list(want))
    assert {n.node_id: (n.text, n.metadata) for n in got} == want
    flat = store.query(VectorStoreQuery(query_str="volcanoes lava tides glacier bread", similarity_top_k=len(nodes)))
    assert {n.node_id: (n.text, n.metadata) for n in flat.nodes} == want


def test_parsed_nodes_keep_the_text_as_given(make_index):
    """DragTreeNodeParser's nodes, ingested without a rebuild: the document still reads back as added."""
    from llama_index.core import Document as LIDocument

    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever, DragTreeNodeParser

    nodes = DragTreeNodeParser().get_nodes_from_documents([LIDocument(id_="md", text=TEXTS[0])])
    retriever = DragKneeRetriever.from_nodes(nodes, index=make_index(collection="rt_parsed"))
    assert [d.text for d in retriever.index.get_documents(["md"])] == [TEXTS[0]]
