"""Issue 25 item 6: no two sources overwrite each other through the adapters.

Reproduced as a user would hit it, through the public adapter APIs that existed before the fix:
- LangChain: chunks of one source (a text splitter's output: ``metadata["source"]``, no id, no
  page) ingested in two calls replaced each other (ids got ``#2``, ``#3`` only within one call).
- LlamaIndex: two different files with the same ``file_name`` (PDFReader sets no ``file_path``)
  were merged in one call (page 1 held both texts) and replaced each other across calls.
- One id given to two different texts in one call must be refused, naming both.
Real model, real Qdrant Edge.
"""

from __future__ import annotations

import logging

import pytest

from drag_knee_retriever import DragKneeIndex, InvalidDocumentError

lc = pytest.importorskip("langchain_core.documents")
li = pytest.importorskip("llama_index.core")


def _texts(index):
    return sorted(t for d in index.get_documents([i.doc_id for i in index.list_documents()]) for t in d.text.split("\n\n"))


def test_langchain_chunks_of_one_source_in_two_calls_both_stay(encoder):
    from drag_knee_retriever.integrations.langchain import DragKneeRetriever

    chunks = [lc.Document(page_content=t, metadata={"source": "notes.txt"}) for t in
              ("Tides follow the moon.", "Bread rises with yeast.", "Lava builds volcanoes.")]
    retriever = DragKneeRetriever.from_documents(chunks[:2], index=DragKneeIndex(embedding=encoder))
    retriever.add_documents(chunks[2:])
    assert _texts(retriever.index) == sorted(c.page_content for c in chunks)
    retriever.add_documents(chunks[:1])  # the same chunk again: nothing changes, nothing doubles
    assert _texts(retriever.index) == sorted(c.page_content for c in chunks)
    retriever.index.close()


def test_one_id_for_two_texts_in_one_call_is_refused_naming_both(encoder):
    from drag_knee_retriever.integrations.langchain import DragKneeRetriever

    index = DragKneeIndex(embedding=encoder)
    retriever = DragKneeRetriever.from_documents([lc.Document(page_content="kept", metadata={}, id="a")], index=index)
    with pytest.raises(InvalidDocumentError, match=r"documents\[1\].*documents\[0\].*'x'"):
        retriever.add_documents([lc.Document(page_content="one", id="x"), lc.Document(page_content="two", id="x")])
    assert _texts(index) == ["kept"]  # nothing written
    index.close()


def _pdfreader_pages(texts):
    # What llama_index's PDFReader gives for one file: a Document per page, random ids, file_name only.
    return [li.Document(text=t, metadata={"page_label": str(n), "file_name": "report.pdf"}) for n, t in enumerate(texts, 1)]


def test_llamaindex_two_files_of_one_name_neither_merge_nor_replace(encoder, caplog):
    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever

    a = _pdfreader_pages(["Alpha one.", "Alpha two."])
    b = _pdfreader_pages(["Beta one.", "Beta two.", "Beta three."])
    index = DragKneeIndex(embedding=encoder)
    with caplog.at_level(logging.WARNING):
        retriever = DragKneeRetriever.from_documents(a + b, index=index)  # one call
    assert "share the name" in caplog.text  # said so, with what to do
    docs = index.get_documents([d.doc_id for d in index.list_documents()])
    assert sorted(d.text for d in docs) == ["Alpha one.\n\nAlpha two.", "Beta one.\n\nBeta two.\n\nBeta three."]
    other = DragKneeIndex(embedding=encoder)
    r2 = DragKneeRetriever.from_documents(a, index=other)
    r2.insert_documents(b)  # two calls
    assert sorted(d.text for d in other.get_documents([d.doc_id for d in other.list_documents()])) == \
        sorted(d.text for d in docs)
    r2.insert_documents(a)  # the first file again: unchanged, not a third copy
    assert len(other.list_documents()) == 2
    index.close()
    other.close()
