"""OCR of image-only PDF pages: real slide pages from MMLongBench-Doc, the real Tesseract engine.

The engine runs on 3 real pages once per session (a fixture); every other engine test reuses
that OCR cache, so the suite pays for 3 pages (plus one deliberately timed-out call). Without
the engine (or the dataset) those tests skip with the reason; the missing-engine tests run
everywhere.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from drag_knee_retriever import DragKneeError
from drag_knee_retriever.build import _ocr as ocr_module
from drag_knee_retriever.build._builder import build_trees
from drag_knee_retriever.errors import ConfigError, InvalidDocumentError
from drag_knee_retriever.loaders import load_file, load_paths
from drag_knee_retriever.build._ocr import OcrConfig, OcrUnavailableError, install_hint, needs_ocr, ocr_pdf_pages, render_page
from drag_knee_retriever.sample import text_pdf_bytes

pypdf = pytest.importorskip("pypdf")

DATASETS = Path(os.environ.get("DRAG_KNEE_SHARED", Path(__file__).resolve().parents[2].parent / "shared")) / "datasets"
DECK = DATASETS / "mmlongbench_doc" / "raw" / "pdfs_image_only" / "germanwingsdigitalcrisisanalysis-150403064828-conversion-gate01_95.pdf"


def _engine_missing_reason() -> str:
    try:
        import pypdfium2  # noqa: F401
    except ImportError:
        return "pypdfium2 not installed (pip install 'drag-knee-retriever[ocr]')"
    if shutil.which("tesseract") is None:
        return f"Tesseract OCR engine not installed ({install_hint('eng')})"
    if not DECK.is_file():
        return f"image-only PDFs not found: {DECK.parent}"
    return ""


needs_engine = pytest.mark.skipif(bool(_engine_missing_reason()), reason=_engine_missing_reason() or "ok")


def _pages_pdf(source: Path, indices, extra_text_page: bool = False) -> bytes:
    """A small PDF of some pages of ``source`` (copied as they are: same images, same rendering)."""
    reader = pypdf.PdfReader(str(source))
    writer = pypdf.PdfWriter()
    if extra_text_page:
        text_reader = pypdf.PdfReader(io.BytesIO(text_pdf_bytes(["Incident timeline and press coverage of flight 4U9525."])))
        writer.add_page(text_reader.pages[0])
    for i in indices:
        writer.add_page(reader.pages[i])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


class CountingEngine:
    """Wraps the real ``recognize`` and counts how often the engine is really called."""

    def __init__(self) -> None:
        self.calls = 0
        self._real = ocr_module.recognize

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self._real(*args, **kwargs)


@pytest.fixture(scope="session")
def ocr_run(tmp_path_factory):
    """3 real slide pages OCR'd once: the PDF, the cache folder, the document and the engine call count."""
    if _engine_missing_reason():
        pytest.skip(_engine_missing_reason())
    folder = tmp_path_factory.mktemp("ocr")
    pdf = folder / "deck.pdf"
    pdf.write_bytes(_pages_pdf(DECK, [0, 1, 2]))
    cache = folder / "cache"
    counter = CountingEngine()
    mp = pytest.MonkeyPatch()
    mp.setattr(ocr_module, "recognize", counter)
    try:
        document = load_file(pdf, ocr_cache_dir=cache)
    finally:
        mp.undo()
    return {"pdf": pdf, "cache": cache, "document": document, "calls": counter.calls}


@needs_engine
def test_ocr_reads_the_text_of_real_image_only_pages(ocr_run):
    document = ocr_run["document"]
    assert ocr_run["calls"] == 3  # every page without a text layer went to the engine once
    assert len(document.pages) == 3
    assert document.metadata["ocr_pages"] == [1, 2, 3]
    text = "\n".join(document.pages).upper()
    # Slide 2 is the incident's fact sheet; these words are in its image only.
    assert "GERMANWINGS" in text and "FATALITIES" in text and "A320" in text
    assert all(len(page.split()) >= 3 for page in document.pages)


@needs_engine
def test_each_leaf_records_its_text_source_and_keeps_its_page(ocr_run, tmp_path):
    # Page 1 has a text layer, pages 2-3 are the deck's (cached) image pages.
    mixed = tmp_path / "mixed.pdf"
    mixed.write_bytes(_pages_pdf(DECK, [0, 1], extra_text_page=True))
    counter = CountingEngine()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ocr_module, "recognize", counter)
        document = load_file(mixed, ocr_cache_dir=ocr_run["cache"])
    assert counter.calls == 0  # same page images as the session's run: cache hits
    assert document.metadata["ocr_pages"] == [2, 3]
    nodes = build_trees([document])
    leaves = {n.span.first_page: n for n in nodes if n.is_leaf}
    assert {p: n.metadata["text_source"] for p, n in leaves.items()} == {1: "pdf", 2: "ocr", 3: "ocr"}
    assert "flight 4U9525" in leaves[1].text and "GERMANWINGS" in leaves[3].text.upper()
    root = [n for n in nodes if n.level == 0][0]
    assert root.metadata["text_source"] == "mixed" and "ocr_pages" not in root.metadata


@needs_engine
def test_reingest_reads_the_cache_and_never_calls_the_engine(ocr_run):
    counter = CountingEngine()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ocr_module, "recognize", counter)
        again = load_paths([ocr_run["pdf"]], ocr_cache_dir=ocr_run["cache"]).documents[0]
    assert counter.calls == 0
    assert list(again.pages) == list(ocr_run["document"].pages)
    # Another language is another engine setting: not the same cache entry.
    assert OcrConfig(languages=("english", "russian")).engine_key() != OcrConfig().engine_key()


@needs_engine
def test_ocr_always_replaces_a_text_layer_and_never_reads_none(ocr_run, tmp_path):
    text_only = tmp_path / "text.pdf"
    text_only.write_bytes(text_pdf_bytes(["Quarterly numbers of the airline, in words."]))
    assert load_file(text_only, ocr="never").metadata["ocr_pages"] == []
    assert load_file(text_only, ocr_cache_dir=tmp_path / "c").metadata["ocr_pages"] == []  # auto: text is enough
    with pytest.raises(InvalidDocumentError, match="ocr='auto'"):
        load_file(ocr_run["pdf"], ocr="never")
    always = load_file(text_only, ocr="always", ocr_cache_dir=tmp_path / "c")
    assert always.metadata["ocr_pages"] == [1] and "airline" in always.pages[0]


@needs_engine
def test_a_hostile_page_is_capped_in_pixels(tmp_path):
    import pypdfium2 as pdfium

    writer = pypdf.PdfWriter()
    writer.add_blank_page(14400, 14400)  # 200 x 200 inches, the largest page PDF allows
    buffer = io.BytesIO()
    writer.write(buffer)
    config = OcrConfig(max_pixels=1_000_000)
    pdf = pdfium.PdfDocument(buffer.getvalue())
    image = render_page(pdf, 0, config)
    pdf.close()
    # 14400 pt at 96 dpi would be 19,200 x 19,200 px (369 Mpx): rendered under the cap instead.
    assert image.downscaled and image.width * image.height <= 1_000_000
    assert image.blank  # and a blank rendering never reaches the engine
    run = ocr_pdf_pages(buffer.getvalue(), [0], OcrConfig(max_pixels=1_000_000, cache_dir=str(tmp_path)))
    assert run.texts == {0: ""} and run.recognized == 0


@needs_engine
def test_a_page_over_the_timeout_is_left_empty_reported_and_not_cached(ocr_run, tmp_path):
    data = ocr_run["pdf"].read_bytes()
    run = ocr_pdf_pages(data, [1], OcrConfig(timeout=0.05, cache_dir=str(tmp_path)))
    assert run.texts == {1: ""} and "timed out after 0.05 s" in run.errors[1]
    assert not any(tmp_path.rglob("*.txt"))  # a failure is not cached: the next ingest tries again


def test_a_missing_engine_is_one_clear_error_naming_the_install_command(tmp_path, monkeypatch):
    pytest.importorskip("pypdfium2")
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract on PATH
    monkeypatch.delenv(ocr_module.ENV_TESSERACT, raising=False)
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(text_pdf_bytes(["", ""]))
    with pytest.raises(OcrUnavailableError) as caught:
        load_file(scan, ocr="always")
    message = str(caught.value)
    assert isinstance(caught.value, DragKneeError)
    assert install_hint("eng") in message and "ocr='never'" in message
    # auto: the image-only file is skipped with that reason, the batch goes on.
    (tmp_path / "notes.txt").write_text("Tides follow the moon.\n", encoding="utf-8")
    report = load_paths([tmp_path])
    assert [d.id for d in report.documents] == ["notes.txt"]
    assert "apt-get install tesseract-ocr" in report.skipped[0].reason or "brew" in report.skipped[0].reason


def test_a_missing_language_or_renderer_names_what_to_install(monkeypatch):
    if shutil.which("tesseract"):
        with pytest.raises(OcrUnavailableError, match="tesseract-ocr-yid"):
            ocr_module.check_engine(OcrConfig(languages=("english", "yiddish")))
    monkeypatch.setitem(__import__("sys").modules, "pypdfium2", None)
    with pytest.raises(OcrUnavailableError, match=r"drag-knee-retriever\[ocr\]"):
        ocr_module.check_engine(OcrConfig())


def test_ocr_settings_are_validated_and_the_threshold_is_applied():
    for bad in ({"mode": "sometimes"}, {"languages": "eng rus"}, {"languages": ""}, {"timeout": 0},
                {"max_pixels": 10}, {"workers": 0}, {"scale": 100}):
        with pytest.raises(ConfigError):
            OcrConfig(**bad)
    auto = OcrConfig()
    assert needs_ocr("", auto) and needs_ocr("  3 \n", auto) and not needs_ocr("x" * 20, auto)
    assert not needs_ocr("", OcrConfig(mode="never")) and needs_ocr("x" * 500, OcrConfig(mode="always"))


def _cli(tmp_path: Path, *args: str, **env_extra: str):
    import subprocess
    import sys

    script = Path(sys.executable).with_name("drag-knee")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "drag_knee_retriever.cli"]
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "xdg"), COLUMNS="200", **env_extra)
    env.pop("DRAG_KNEE_INDEX", None)
    proc = subprocess.run(command + list(args), capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@needs_engine
def test_cli_ingest_ocrs_into_the_user_cache_and_cites_pages(ocr_run, tmp_path):
    """One OCR cache per user (as the Python API): a second index of the same scans reads it."""
    import json

    # The session's OCR text, placed where the CLI keeps it (the user cache folder, here under
    # XDG_CACHE_HOME): no engine run here, for either index.
    cache = tmp_path / "xdg-cache" / "drag-knee-retriever" / "ocr"
    shutil.copytree(ocr_run["cache"], cache)
    files_before = sorted(p.name for p in cache.rglob("*.txt"))
    for name in ("idx", "idx2"):
        proc = _cli(tmp_path, "ingest", str(ocr_run["pdf"]), "--index", str(tmp_path / name), "--ocr", "auto",
                    XDG_CACHE_HOME=str(tmp_path / "xdg-cache"))
        assert proc.returncode == 0, proc.stderr
        assert sorted(p.name for p in cache.rglob("*.txt")) == files_before  # all hits
        assert not (tmp_path / f"{name}.ocr-cache").exists()
    index = tmp_path / "idx"
    proc = _cli(tmp_path, "search", "how many fatalities in the crash", "--index", str(index), "--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["nodes"]
    assert results and results[0]["metadata"]["text_source"] == "ocr"
    assert any(r["span"]["first_page"] == 2 for r in results)  # the fact sheet, page 2 of the file


def test_cli_ocr_always_without_the_engine_is_one_error_line(tmp_path):
    pytest.importorskip("pypdfium2")
    (tmp_path / "scan.pdf").write_bytes(text_pdf_bytes(["", ""]))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    proc = _cli(tmp_path, "ingest", "scan.pdf", "--index", str(tmp_path / "idx"), "--ocr", "always",
                DRAG_KNEE_TESSERACT=str(tmp_path / "no-such-tesseract"))
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("drag-knee: error:")]
    assert len(errors) == 1 and install_hint("eng") in errors[0], proc.stderr


@needs_engine
def test_both_adapters_ocr_the_empty_pages_of_a_pdf_on_disk(ocr_run):
    """PyPDFLoader / PDFReader give an image-only page as an empty text: the adapters OCR it."""
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document as LIDocument

    from drag_knee_retriever.integrations.langchain import from_langchain_documents
    from drag_knee_retriever.integrations.llamaindex import from_llamaindex_documents

    pdf = str(ocr_run["pdf"])
    lc = [LCDocument(page_content="", metadata={"source": pdf, "page": i}) for i in range(3)]
    li = [LIDocument(text="", metadata={"file_path": pdf, "page_label": str(i + 1)}) for i in range(3)]
    counter = CountingEngine()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ocr_module, "recognize", counter)
        (from_lc,) = from_langchain_documents(lc, ocr_cache_dir=ocr_run["cache"])
        (from_li,) = from_llamaindex_documents(li, ocr="auto", ocr_cache_dir=ocr_run["cache"])
    assert counter.calls == 0  # the session's cache: same page images
    for document in (from_lc, from_li):
        assert list(document.pages) == list(ocr_run["document"].pages)
        assert document.metadata["ocr_pages"] == [1, 2, 3]
    leaves = [n for n in build_trees([from_lc]) if n.is_leaf]
    assert [(n.span.first_page, n.metadata["text_source"]) for n in leaves] == [(1, "ocr"), (2, "ocr"), (3, "ocr")]
    with pytest.raises(InvalidDocumentError, match="every page is empty"):
        from_langchain_documents(lc, ocr="never")
