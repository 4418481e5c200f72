"""Loaders: text, Markdown and PDF files, folders with globs, stdin, and every bad file reported."""

from __future__ import annotations

import io
import os
import sys

import pytest

from drag_knee_retriever.errors import InvalidDocumentError
from drag_knee_retriever.loaders import (
    discover,
    kind_of,
    load_file,
    load_paths,
    load_stream,
    load_text,
    markdown_title,
    text_title,
)
from drag_knee_retriever.sample import sample_documents, text_pdf_bytes, write_sample_files


def _write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_kind_of_suffixes():
    assert kind_of("a/b.MD") == "markdown"
    assert kind_of("notes.txt") == "text"
    assert kind_of("paper.pdf") == "pdf"
    assert kind_of("data.csv") is None


def test_text_file_keeps_text_and_metadata(tmp_path):
    path = _write(tmp_path / "notes.txt", "First paragraph.\r\n\r\nSecond paragraph.\n")
    doc = load_file(path)
    assert doc.id == "notes.txt"
    assert doc.text == "First paragraph.\n\nSecond paragraph.\n"
    assert doc.metadata["kind"] == "text"
    assert doc.metadata["path"] == "notes.txt"
    assert doc.metadata["source"] == str(path.resolve())
    assert "title" not in doc.metadata  # the first line is a sentence, not a title


def test_text_title_heuristic():
    assert text_title("Baking Bread\n\nFlour and water.") == "Baking Bread"
    assert text_title("One sentence only.\n\nAnother.") is None
    assert text_title("Line one\nline two continues the paragraph") is None
    assert text_title("Just a single line") is None


def test_markdown_keeps_headings_and_takes_title(tmp_path):
    text = "```\n# not a title\n```\n\n# Real Title\n\nBody.\n\n## Part\n\nMore."
    doc = load_file(_write(tmp_path / "guide.md", text))
    assert doc.text == text  # the builder splits sections by heading, so headings stay in the text
    assert doc.metadata["kind"] == "markdown"
    assert doc.metadata["title"] == "Real Title"
    assert markdown_title("no heading here") is None


def test_utf8_bom_and_russian_text(tmp_path):
    doc = load_file(_write(tmp_path / "ru.txt", "\ufeffПривет, мир. Это текст.".encode("utf-8")))
    assert doc.text == "Привет, мир. Это текст."


def test_pdf_one_page_per_leaf_with_title(tmp_path):
    pages = ["Page one talks about chains and oil.", "", "Page three (with parentheses) and a back\\slash."]
    path = _write(tmp_path / "manual.pdf", text_pdf_bytes(pages, title="The Manual"))
    doc = load_file(path)
    assert doc.text is None
    assert len(doc.pages) == 3  # the empty page is kept so page numbers stay true
    assert "chains and oil" in doc.pages[0]
    assert doc.pages[1] == ""
    assert "(with parentheses)" in doc.pages[2] and "back\\slash" in doc.pages[2]
    info = path.stat()
    assert doc.metadata == {
        "source": str(path.resolve()),
        "path": "manual.pdf",
        "kind": "pdf",
        "pages": 3,
        "ocr_pages": [],  # a blank page has nothing for OCR to read: every leaf's text is the PDF's
        "title": "The Manual",
        "file_stamp": f"{info.st_size}:{info.st_mtime_ns}",  # what a re-ingest compares before reading
    }


def test_folder_recursive_ids_relative_to_root_and_stable_order(tmp_path):
    root = tmp_path / "corpus"
    _write(root / "b.txt", "bee text")
    _write(root / "a.md", "# A\n\nalpha")
    _write(root / "sub" / "deep" / "c.txt", "gamma")
    _write(root / "image.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    _write(root / ".hidden" / "secret.txt", "hidden")
    _write(root / ".dot.txt", "hidden file")
    report = load_paths([root])
    assert [d.id for d in report.documents] == ["a.md", "b.txt", "sub/deep/c.txt"]
    assert report.documents[2].metadata["path"] == "sub/deep/c.txt"
    assert report.skipped == []
    assert report.ignored == 1  # image.png: unsupported suffix inside a folder is ignored, not an error


def test_include_and_exclude_globs(tmp_path):
    root = tmp_path / "repo"
    _write(root / "README.md", "# Readme\n\ntext")
    _write(root / "docs" / "guide.md", "# Guide\n\ntext")
    _write(root / "docs" / "drafts" / "wip.md", "# WIP\n\ntext")
    _write(root / "src" / "code.py", "print('hello world')\n")
    _write(root / "notes.txt", "plain notes")

    only_md = load_paths([root], include=["*.md"])
    assert [d.id for d in only_md.documents] == ["README.md", "docs/drafts/wip.md", "docs/guide.md"]

    no_drafts = load_paths([root], include=["*.md"], exclude=["docs/drafts/*"])
    assert [d.id for d in no_drafts.documents] == ["README.md", "docs/guide.md"]

    # An include glob can take in a type the loaders do not know by suffix: read as text.
    with_code = load_paths([root], include=["*.py"])
    assert [d.id for d in with_code.documents] == ["src/code.py"]
    assert with_code.documents[0].metadata["kind"] == "text"

    deep = load_paths([root], include=["**/guide.md"])
    assert [d.id for d in deep.documents] == ["docs/guide.md"]


def test_bad_files_are_reported_per_file_not_fatal(tmp_path):
    root = tmp_path / "mixed"
    _write(root / "good.txt", "A good text file about tides.")
    _write(root / "empty.txt", "")
    _write(root / "blank.md", "   \n\n  ")
    _write(root / "binary.txt", b"\x00\x01\x02\x03binary\x00data")
    _write(root / "latin1.txt", "caf\xe9 cr\xe8me".encode("latin-1"))
    _write(root / "utf16.txt", "hello".encode("utf-16"))
    _write(root / "scanned.pdf", text_pdf_bytes(["", ""]))
    _write(root / "broken.pdf", b"%PDF-1.4\nthis is not really a pdf\n")
    _write(root / "fake.pdf", b"just text with a pdf suffix")
    report = load_paths([root])
    assert [d.id for d in report.documents] == ["good.txt"]
    reasons = {os.path.basename(s.path): s.reason for s in report.skipped}
    assert set(reasons) == {
        "empty.txt", "blank.md", "binary.txt", "latin1.txt", "utf16.txt", "scanned.pdf", "broken.pdf", "fake.pdf"
    }
    assert "empty" in reasons["empty.txt"]
    assert "whitespace" in reasons["blank.md"] or "empty" in reasons["blank.md"]
    assert "binary" in reasons["binary.txt"]
    assert "not valid UTF-8" in reasons["latin1.txt"] and "iconv" in reasons["latin1.txt"]
    assert "UTF-16" in reasons["utf16.txt"]
    assert "no extractable text" in reasons["scanned.pdf"] and "OCR" in reasons["scanned.pdf"]
    assert "damaged" in reasons["broken.pdf"]
    assert "not a PDF" in reasons["fake.pdf"]
    # The reason does not repeat the path (the report carries it).
    assert not any(r.startswith("File ") for r in reasons.values())


def test_encrypted_pdf_is_reported(tmp_path):
    pypdf = pytest.importorskip("pypdf")
    source = _write(tmp_path / "plain.pdf", text_pdf_bytes(["Secret page about lighthouses."]))
    writer = pypdf.PdfWriter(clone_from=str(source))
    writer.encrypt(user_password="s3cret", owner_password="owner", algorithm="RC4-128")
    locked = tmp_path / "locked.pdf"
    with open(locked, "wb") as handle:
        writer.write(handle)
    with pytest.raises(InvalidDocumentError, match="password-protected"):
        load_file(locked)

    # Encrypted with an empty user password (only editing is restricted): opens and loads.
    writer = pypdf.PdfWriter(clone_from=str(source))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    open_pdf = tmp_path / "open.pdf"
    with open(open_pdf, "wb") as handle:
        writer.write(handle)
    doc = load_file(open_pdf)
    assert "lighthouses" in doc.pages[0]


def test_missing_path_is_an_error_for_the_batch(tmp_path):
    _write(tmp_path / "ok.txt", "fine")
    with pytest.raises(InvalidDocumentError, match="does not exist"):
        load_paths([tmp_path / "ok.txt", tmp_path / "nope"])


def test_empty_folder_gives_an_empty_report(tmp_path):
    (tmp_path / "empty").mkdir()
    report = load_paths([tmp_path / "empty"])
    assert report.documents == [] and report.skipped == [] and report.ignored == 0


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file_is_reported(tmp_path):
    path = _write(tmp_path / "locked.txt", "private")
    path.chmod(0)
    try:
        report = load_paths([path])
    finally:
        path.chmod(0o644)
    assert report.documents == []
    assert "permission denied" in report.skipped[0].reason


def test_directly_named_file_of_unknown_type_is_sniffed(tmp_path):
    assert load_file(_write(tmp_path / "notes.cfg", "key = value, plain text")).metadata["kind"] == "text"
    report = load_paths([_write(tmp_path / "photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00")])
    assert report.documents == [] and "binary" in report.skipped[0].reason


def test_same_relative_path_under_two_roots_is_reported(tmp_path):
    _write(tmp_path / "one" / "readme.md", "# One\n\nfirst")
    _write(tmp_path / "two" / "readme.md", "# Two\n\nsecond")
    report = load_paths([tmp_path / "one", tmp_path / "two"])
    assert [d.metadata["title"] for d in report.documents] == ["One"]
    assert "same document id 'readme.md'" in report.skipped[0].reason


def test_same_file_twice_is_loaded_once(tmp_path):
    path = _write(tmp_path / "a.txt", "alpha")
    report = load_paths([path, tmp_path])
    assert [d.id for d in report.documents] == ["a.txt"]


def test_stdin_and_streams():
    report = load_paths(["-"], stdin=io.StringIO("# From stdin\n\nsome text"), stdin_name="piped.md")
    assert [d.id for d in report.documents] == ["piped.md"]
    assert report.documents[0].metadata["kind"] == "markdown"
    raw = io.TextIOWrapper(io.BytesIO("plain bytes text".encode("utf-8")), encoding="utf-8")
    assert load_stream(raw, doc_id="s").text == "plain bytes text"
    empty = load_paths(["-"], stdin=io.StringIO("  \n"))
    assert empty.documents == [] and "empty" in empty.skipped[0].reason
    with pytest.raises(InvalidDocumentError, match="not valid UTF-8"):
        load_stream(io.BytesIO(b"caf\xe9"), doc_id="x")


def test_load_text_and_extra_metadata():
    doc = load_text("Body text.", doc_id="note.md", metadata={"team": "docs", "kind": "ignored"})
    assert doc.metadata == {"team": "docs", "kind": "markdown", "source": "note.md", "path": "note.md"}
    with pytest.raises(InvalidDocumentError, match="empty"):
        load_text("   ", doc_id="x")


def test_progress_reports_reading_phase(tmp_path):
    for name in ("a.txt", "b.txt", "c.txt"):
        _write(tmp_path / name, f"text of {name}")
    calls = []
    load_paths([tmp_path], progress=lambda phase, done, total: calls.append((phase, done, total)))
    assert calls == [("reading", 1, 3), ("reading", 2, 3), ("reading", 3, 3)]


def test_sample_files_round_trip_through_the_loaders(tmp_path):
    write_sample_files(tmp_path)
    loaded = {d.id: d for d in load_paths([tmp_path]).documents}
    built_in = {d.id: d for d in sample_documents()}
    assert set(loaded) == set(built_in)
    for doc_id, doc in built_in.items():
        if doc.pages is not None:
            assert len(loaded[doc_id].pages) == len(doc.pages)
            # The PDF round trip keeps the words of every page (line breaks may differ).
            for ours, theirs in zip(loaded[doc_id].pages, doc.pages):
                assert ours.split() == theirs.split()
        else:
            assert loaded[doc_id].text == doc.text
        assert loaded[doc_id].metadata["kind"] == doc.metadata["kind"]
        assert loaded[doc_id].metadata["title"] == doc.metadata["title"]


def test_discover_file_root_is_its_folder(tmp_path):
    path = _write(tmp_path / "x" / "y.txt", "why")
    files, ignored = discover([path])
    assert [f.doc_id for f in files] == ["y.txt"] and ignored == 0
