"""Issue 38 item 4: clashes are refused in one clear line, not decided silently; nothing stored changes.

Attacked through both vector stores and the core index:
- a document whose explicit id is the name of a stored source (``id="report.pdf"`` beside chunks whose
  ``source`` is ``report.pdf``) joined that source's tree, and ``delete(["report.pdf"])`` then removed
  every chunk; the other way round (chunks of a source named like a stored document's id), in one call,
  and a document id naming a tree the core API wrote, which the add silently replaced;
- metadata keys a filter reads as tree fields (``doc_id``, ``level``, ``is_leaf``: a filter on them
  found nothing, without an error), ``file_stamp`` (rewritten by the ingest), ``ocr_pages: 5`` (a raw
  TypeError) and ``text_source``.
Each is an :class:`InvalidDocumentError` (a DragKneeError) of one line naming the id or key, raised
before anything is written. Real model, real Qdrant Edge and qdrant-client local mode.
"""

from __future__ import annotations

import pytest

lc = pytest.importorskip("langchain_core.documents")
li_schema = pytest.importorskip("llama_index.core.schema")

from drag_knee_retriever import Document, DragKneeError, InvalidDocumentError  # noqa: E402
from drag_knee_retriever.integrations.langchain import DragKneeVectorStore as LCStore  # noqa: E402
from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore as LIStore  # noqa: E402

CHUNKS = ["Volcanoes erupt when magma rises.", "Lava cools into basalt.", "Ash clouds ground flights."]


def _held(index):
    """Everything the index holds: each tree's id, text and metadata keys."""
    return sorted((d.doc_id, d.text, sorted(d.metadata)) for d in index.get_documents(
        [i.doc_id for i in index.list_documents()]))


def _refused(call, *needles):
    with pytest.raises(InvalidDocumentError) as info:
        call()
    message = str(info.value)
    assert isinstance(info.value, DragKneeError) and "\n" not in message, message
    for needle in needles:
        assert needle in message, message
    return message


def _chunks(source="report.pdf"):
    return [lc.Document(page_content=t, metadata={"source": source}) for t in CHUNKS]


def test_an_id_naming_a_stored_source_is_refused_and_nothing_changes(make_index, engine):
    store = LCStore(make_index(engine=engine, collection=f"clash_id_{engine}"))
    chunk_ids = store.add_documents(_chunks())
    before = _held(store.index)
    summary = lc.Document(id="report.pdf", page_content="A summary of the report on volcanoes.")
    _refused(lambda: store.add_documents([summary]), "documents[0]", "'report.pdf'", "another id")
    assert _held(store.index) == before and store.get_by_ids(["report.pdf"]) == []
    assert [d.page_content for d in store.get_by_ids(chunk_ids)] == CHUNKS
    # the same, inside one call: nothing of the call is written
    _refused(lambda: store.add_documents(_chunks("other.md") + [lc.Document(id="other.md", page_content="x y")]),
             "documents[3]", "'other.md'", "documents[0]")
    assert _held(store.index) == before


def test_a_source_named_like_a_stored_document_is_refused(make_index, engine):
    store = LCStore(make_index(engine=engine, collection=f"clash_src_{engine}"))
    store.add_documents([lc.Document(id="report.pdf", page_content="A summary of the report on volcanoes.")])
    before = _held(store.index)
    _refused(lambda: store.add_documents(_chunks()), "documents[0]", "'report.pdf'")
    assert _held(store.index) == before
    assert store.delete(["report.pdf"]) and store.index.list_documents() == []  # it named one document only


def test_an_id_naming_a_core_tree_or_a_file_is_refused(make_index, engine):
    index = make_index(engine=engine, collection=f"clash_core_{engine}")
    index.add_documents([Document(id="manual.pdf", pages=["Page one on pumps.", "Page two on valves."])])
    li = LIStore(index)
    li.add([li_schema.TextNode(id_=f"scan.pdf#{i}", text=t, metadata={"file_path": "scan.pdf", "page_label": str(i + 1)})
            for i, t in enumerate(CHUNKS)])
    before = _held(index)
    _refused(lambda: li.add([li_schema.TextNode(id_="scan.pdf", text="Notes on the scan.")]), "nodes[0]", "'scan.pdf'")
    node = li_schema.TextNode(id_="manual.pdf", text="Notes.", relationships={
        li_schema.NodeRelationship.SOURCE: li_schema.RelatedNodeInfo(node_id="notes-doc")})
    _refused(lambda: li.add([node]), "'manual.pdf'", "core API")
    assert _held(index) == before


@pytest.mark.parametrize("key, value", [("doc_id", "d-17"), ("level", "advanced"), ("is_leaf", True),
                                        ("file_stamp", "v2"), ("ocr_pages", 5), ("text_source", "scanner")])
def test_metadata_keys_of_the_index_are_refused_naming_the_key(make_index, key, value):
    index = make_index(collection=f"clash_key_{key}")
    lcs, lis = LCStore(index), LIStore(index)
    lcs.add_documents([lc.Document(id="kept", page_content=CHUNKS[0], metadata={"topic": "volcano"})])
    before = _held(index)
    _refused(lambda: lcs.add_documents([lc.Document(page_content=CHUNKS[1], metadata={key: value})]),
             "documents[0]", repr(key), "rename")
    _refused(lambda: lis.add([li_schema.TextNode(text=CHUNKS[2], metadata={key: value})]), "nodes[0]", repr(key))
    if key != "text_source":  # the core keeps a text_source of the user's where no page was OCR'd
        _refused(lambda: index.add_documents([Document(id="scan.pdf", pages=["one", "two"], metadata={key: value})]),
                 "'scan.pdf'", repr(key))
    assert _held(index) == before
