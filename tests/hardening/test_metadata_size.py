"""Issue 38 item 5: a document's metadata has a size limit, refused before anything is written.

Metadata is copied onto every node of a document's tree: 4 MB on one document took a folder index's
peak RSS from 672 to 1,957 MB. Attacked through the core ``Document`` / ``DragKneeIndex`` and both
vector stores: 4 MB of metadata (on the document, on one page, on the second document of a call)
is one clear error naming the document, its size and the limit, and the store keeps exactly what it
held; metadata just under the limit is stored and comes back as given. Real model, real engines.
"""

from __future__ import annotations

import pytest

lc = pytest.importorskip("langchain_core.documents")
li_schema = pytest.importorskip("llama_index.core.schema")

from drag_knee_retriever import Document, DragKneeError, InvalidDocumentError  # noqa: E402
from drag_knee_retriever.integrations.langchain import DragKneeVectorStore as LCStore  # noqa: E402
from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore as LIStore  # noqa: E402

BIG = {"blob": "x" * (4 * 1024 * 1024)}  # 4 MB as JSON
NEAR = {"abstract": "y" * 60_000, "keywords": [f"k{i}" for i in range(300)]}  # ~62 KB: under 64 KB
LIMIT = r"4,194,\d{3} bytes as JSON, over the limit of 65,536"


def _held(index):
    return sorted((d.doc_id, d.text, sorted(d.metadata)) for d in index.get_documents(
        [i.doc_id for i in index.list_documents()]))


def test_core_documents_over_the_limit_are_refused_naming_document_and_page(make_index, engine):
    index = make_index(engine=engine, collection=f"meta_core_{engine}")
    index.add_documents([Document(id="kept", text="Volcanoes erupt when magma rises.", metadata={"a": 1})])
    before = _held(index)
    with pytest.raises(InvalidDocumentError, match=rf"^Document 'huge': its metadata is {LIMIT}") as info:
        index.add_documents([Document(id="ok", text="Tides follow the moon."),
                             Document(id="huge", text="Lava cools into basalt.", metadata=BIG)])
    assert isinstance(info.value, DragKneeError) and "\n" not in str(info.value)
    with pytest.raises(InvalidDocumentError, match=rf"Document 'paged' page 2: its metadata is {LIMIT}"):
        Document(id="paged", pages=["one", "two"], page_metadata=[{}, BIG])
    assert _held(index) == before
    # the OCR page list stays on the document (never copied onto nodes): a 10,000-page scan's is not counted
    Document(id="scan.pdf", pages=["p"] * 10_000, metadata={"ocr_pages": list(range(1, 10_001))})
    index.add_documents([Document(id="near", text="Glaciers carve valleys.", metadata=NEAR)])
    assert index.get_documents(["near"])[0].metadata == NEAR


def test_langchain_store_refuses_big_metadata_before_writing(make_index, engine):
    store = LCStore(make_index(engine=engine, collection=f"meta_lc_{engine}"))
    store.add_documents([lc.Document(id="kept", page_content="Volcanoes erupt when magma rises.",
                                     metadata={"source": "notes.md"})])
    before = _held(store.index)
    with pytest.raises(InvalidDocumentError, match=rf"^documents\[1\] \(source='notes.md'\): .*{LIMIT}"):
        store.add_documents([lc.Document(page_content="Tides follow the moon.", metadata={"source": "notes.md"}),
                             lc.Document(page_content="Lava cools.", metadata={"source": "notes.md", **BIG})])
    assert _held(store.index) == before
    [near] = store.add_documents([lc.Document(id="near", page_content="Glaciers carve valleys.", metadata=NEAR)])
    assert store.get_by_ids([near])[0].metadata == NEAR


def test_llamaindex_store_refuses_big_metadata_before_writing(make_index, engine):
    store = LIStore(make_index(engine=engine, collection=f"meta_li_{engine}"))
    store.add([li_schema.TextNode(id_="kept", text="Volcanoes erupt when magma rises.")])
    before = _held(store.index)
    with pytest.raises(InvalidDocumentError, match=rf"^nodes\[1\] \(id='huge'\): .*{LIMIT}"):
        store.add([li_schema.TextNode(id_="ok", text="Tides follow the moon."),
                   li_schema.TextNode(id_="huge", text="Lava cools.", metadata=BIG)])
    assert _held(store.index) == before
