"""The write journal (store/journal.py): what a cut-short write leaves for the next open to finish."""

from __future__ import annotations

from drag_knee_retriever.model._nodes import Document
from drag_knee_retriever.store.journal import WriteJournal, document_from_json, document_json


def _paged() -> Document:
    return Document(id="report.pdf", pages=["p1 text", "p2 text"], metadata={"source": "report.pdf", "n": [1, 2]},
                    outline=[{"title": "Intro", "page": 1, "level": 0}],
                    page_metadata=[{"page": 0}, {"page": 1, "nested": {"a": 1}}])


def test_a_document_survives_the_journal_field_for_field():
    for doc in (_paged(), Document(id="note", text="# Title\n\n  body  \n", metadata={"k": "v"})):
        assert document_from_json(document_json(doc)) == doc


def test_entries_are_persisted_and_cleared_only_by_their_own_token(tmp_path):
    journal = WriteJournal(tmp_path / "journal")
    assert not journal and journal.entries() == []
    first = journal.record({"report.pdf": _paged(), "gone": None})
    assert journal
    reopened = WriteJournal(tmp_path / "journal")  # what the next process sees
    entries = sorted(reopened.entries(), key=lambda e: e.doc_id)
    assert [(e.doc_id, e.document) for e in entries] == [("gone", None), ("report.pdf", _paged())]
    newer = journal.record({"report.pdf": Document(id="report.pdf", text="v2")})
    journal.clear(first)  # the older write finishes: the newer entry of report.pdf stays
    assert [(e.doc_id, e.document.text) for e in journal.entries()] == [("report.pdf", "v2")]
    journal.clear(newer)
    assert not journal and not list((tmp_path / "journal").glob("*"))


def test_an_unreadable_entry_is_left_in_place_and_the_rest_replayed(tmp_path, caplog):
    journal = WriteJournal(tmp_path / "journal")
    journal.record({"a": None, "b": None})
    victim = sorted((tmp_path / "journal").glob("*.json"))[0]
    victim.write_text("{not json", encoding="utf-8")
    assert len(journal.entries()) == 1
    assert victim.exists() and "cannot be read" in caplog.text


def test_an_in_memory_journal_keeps_entries_until_cleared():
    journal = WriteJournal(None)
    tokens = journal.record({"a": Document(id="a", text="x")})
    assert [e.doc_id for e in journal.entries()] == ["a"]
    journal.clear(tokens)
    assert not journal
