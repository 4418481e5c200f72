"""Hostile input: each nasty input gives a clear error or a sane result, in bounded time.

Every operation runs in a thread with a deadline (:func:`hardening_support.bounded`): a hang
fails the test instead of stalling the suite. A *clear error* is one of the library's own
exceptions (``DragKneeError``: the message says what was wrong and how to fix it), never a bare
``TypeError`` / ``UnicodeEncodeError`` from a dependency. A *sane result* is checked per case.
The corpus runs on every embedded engine (their payload codecs differ).
"""

from __future__ import annotations

import datetime
import io
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Type

import numpy as np
import pytest

from drag_knee_retriever import BuildConfig, Document, DragKneeIndex, FusionConfig, StoreConfig
from drag_knee_retriever.build._builder import build_document_trees
from drag_knee_retriever.errors import ConfigError, DragKneeError, InvalidDocumentError, InvalidQueryError
from hardening_support import bounded, make_store

DEADLINE = 60.0  # seconds per operation; generous for a loaded 2-core machine, far below a hang
TRIED = {"inputs": 0}

ZW = "\u200b\u200c\u200d\ufeff\u2060"
SURROGATE_TEXT = b"caf\xe9 au lait \xff\xfe".decode("utf-8", "surrogateescape")  # invalid UTF-8, decoded leniently


def _deep(depth: int) -> dict:
    out = cur = {}
    for _ in range(depth):
        cur["a"] = {}
        cur = cur["a"]
    return out


@pytest.fixture(scope="module")
def index(engine, caching_encoder):
    index = DragKneeIndex(make_store(engine, "hostile", batch=256), embedding=caching_encoder, store=StoreConfig(collection="hostile"))
    index.add_documents([Document(id="plain", text="A plain paragraph about lighthouses and harbours.",
                                  metadata={"year": 2020, "lang": "en"})])
    yield index
    index.close()


@dataclass
class Case:
    """One hostile input: ``run(index)``; either ``error`` (class, message regex) or ``check(result)``."""

    name: str
    run: Callable[[Any], Any]
    error: Optional[Type[BaseException]] = None
    message: str = ""
    check: Optional[Callable[[Any, Any], None]] = None
    xfail: Optional[str] = None

    def param(self):
        marks = [pytest.mark.xfail(strict=True, reason=self.xfail)] if self.xfail else []
        return pytest.param(self, id=self.name, marks=marks)


def _found(doc_id: str, query: str):
    def check(index, _report):
        hits = index.search(query).nodes + index.flat_search(query, k=5)
        assert doc_id in {h.doc_id for h in hits}, f"{doc_id} not found by {query!r}"
    return check


def _ingest(doc_id, **kwargs):
    return lambda index: index.add_documents([Document(id=doc_id, **kwargs)])


def _search(query, **kwargs):
    return lambda index: index.search(query, **kwargs)


def _fusion(weights):
    """A search whose FusionConfig is built (and refused) when the case runs."""
    return lambda index: index.search("x", fusion=FusionConfig(weights=weights))


def _some_result(index, result):
    assert isinstance(result.nodes, list) and all(h.text is not None for h in result.nodes)


def _empty(index, result):
    assert list(result) == []


INVALID_UTF8 = "REQUESTS.md 'hardening' #8: text with lone surrogates (invalid UTF-8 decoded leniently) fails deep inside with a bare UnicodeEncodeError/TypeError"
METADATA_JSON = "REQUESTS.md 'hardening' #9: metadata that JSON cannot round-trip (int keys, ints beyond int64, deep nesting) is not refused clearly"

DOCUMENT_CASES = [
    Case("zero-width-inside-words", _ingest("zw", text=f"zero{ZW}width joi{ZW}ner char{ZW}acters in a lighthouse log."),
         check=_found("zw", "lighthouse log")),
    Case("zero-width-only", _ingest("zw-only", text=ZW * 20),
         check=lambda index, report: report.added == ["zw-only"]),
    Case("control-characters", _ingest("ctrl", text="\x00\x01 bell\x07 esc\x1b[31mred alarm\x1b[0m \x7f del\x0b\x0c end."),
         check=_found("ctrl", "red alarm bell")),
    Case("right-to-left-and-bidi-overrides",
         _ingest("rtl", text="\u202eمنارة الميناء تضيء ليلا\u202c\n\n\u2067מגדלור בנמל\u2069 lighthouse"),
         check=_found("rtl", "منارة الميناء")),
    Case("mixed-scripts-emoji-combining", _ingest("mixed", text="Маяк 灯塔 φάρος 🏝️ e\u0301clairage de\u0301tail.\n\n" * 3),
         check=_found("mixed", "маяк")),
    Case("one-line-100kB", _ingest("line100k", text=("lighthouse keeper log entry " * 4000)[:100_000]),
         check=lambda index, report: index.stats()["nodes"] > 50),
    Case("blank-lines-200k", _ingest("blanks", text="first lighthouse" + "\n" * 200_000 + "last harbour"),
         check=_found("blanks", "first lighthouse")),
    Case("bytes-as-text", lambda index: Document(id="b", text=b"\xff\xfe bytes"), InvalidDocumentError, "decode"),
    Case("bytes-as-page", lambda index: Document(id="b", pages=["ok", b"\xff"]), InvalidDocumentError, "page 2"),
    Case("invalid-utf8-text", lambda index: index.add_documents([Document(id="sur", text=SURROGATE_TEXT)]),
         InvalidDocumentError, "UTF-8|surrogate"),
    Case("invalid-utf8-id", lambda index: index.add_documents([Document(id=SURROGATE_TEXT, text="fine text")]),
         InvalidDocumentError, "UTF-8|surrogate"),
    Case("invalid-utf8-metadata", lambda index: index.add_documents(
        [Document(id="sur-meta", text="fine", metadata={"name": SURROGATE_TEXT})]),
         InvalidDocumentError, "UTF-8|surrogate"),
    Case("metadata-datetime", lambda index: Document(id="m", text="x", metadata={"when": datetime.datetime.now()}),
         InvalidDocumentError, "cannot be stored as JSON"),
    Case("metadata-set", lambda index: Document(id="m", text="x", metadata={"tags": {"a", "b"}}),
         InvalidDocumentError, "cannot be stored as JSON"),
    Case("metadata-bytes", lambda index: Document(id="m", text="x", metadata={"raw": b"\x00"}),
         InvalidDocumentError, "cannot be stored as JSON"),
    Case("metadata-object", lambda index: Document(id="m", text="x", metadata={"obj": object()}),
         InvalidDocumentError, "cannot be stored as JSON"),
    Case("metadata-nan", lambda index: Document(id="m", text="x", metadata={"score": float("nan")}),
         InvalidDocumentError, "cannot be stored as JSON"),
    Case("metadata-infinity", lambda index: Document(id="m", text="x", metadata={"score": float("-inf")}),
         InvalidDocumentError, "cannot be stored as JSON"),
    Case("metadata-int-key", lambda index: Document(id="m", text="x", metadata={1: "one"}),
         InvalidDocumentError, "not a string"),
    Case("metadata-not-a-mapping", lambda index: Document(id="m", text="x", metadata=[("a", 1)]),
         InvalidDocumentError, "mapping"),
    Case("metadata-nested-int-key", lambda index: index.add_documents(
        [Document(id="nested-int-key", text="x", metadata={"n": {1: "one"}})]),
         InvalidDocumentError, "JSON|string"),
    Case("metadata-int-beyond-int64", lambda index: index.add_documents(
        [Document(id="bigint", text="x", metadata={"big": 2 ** 70})]),
         InvalidDocumentError, "int64|range|JSON"),
    Case("metadata-nested-5000-deep", lambda index: Document(id="deep", text="x", metadata={"d": _deep(5000)}),
         InvalidDocumentError, "JSON|deep|nest"),
    Case("not-a-document", lambda index: index.add_documents(["just text"]), InvalidDocumentError, "not Document"),
    Case("documents-as-a-string", lambda index: index.add_documents("just text"), InvalidDocumentError, "list"),
    Case("id-with-nul-slash-and-dots", _ingest("../\x00/..\\etc", text="path traversal lighthouse id"),
         check=lambda index, report: index.search(
             "lighthouse", filters={"doc_id": "../\x00/..\\etc"}).nodes[0].doc_id == "../\x00/..\\etc"),
]

QUERY_CASES = [
    Case("query-100k-words", _search("lighthouse " * 9091), check=_some_result),
    Case("query-100k-no-space", _search("a" * 100_000), check=_some_result),
    Case("query-100k-emoji", _search("🏝️" * 50_000), check=_some_result),
    Case("query-100k-zero-width", _search(ZW * 20_000), check=_some_result),
    Case("query-100k-nul", _search("\x00" * 100_000), check=_some_result),
    Case("query-100k-flat", lambda index: index.flat_search("harbour " * 12_500), check=lambda i, r: None),
    Case("query-invalid-utf8", _search(SURROGATE_TEXT), InvalidQueryError, "UTF-8|surrogate"),
    Case("query-none", _search(None), InvalidQueryError, "string"),
    Case("query-bytes", _search(b"lighthouse"), InvalidQueryError, "string"),
    Case("query-list", _search(["lighthouse"]), InvalidQueryError, "string"),
    Case("query-empty", _search(""), InvalidQueryError, "empty"),
    Case("query-whitespace", _search(" \n\t\r "), InvalidQueryError, "empty"),
]

FILTER_CASES = [
    Case("filter-string", _search("x", filters="doc_id=plain"), InvalidQueryError, "mapping"),
    Case("filter-list", _search("x", filters=[("doc_id", "plain")]), InvalidQueryError, "mapping"),
    Case("filter-none-value", _search("x", filters={"doc_id": None}), InvalidQueryError, "NoneType"),
    Case("filter-float", _search("x", filters={"year": 2020.0}), InvalidQueryError, "float"),
    Case("filter-nan", _search("x", filters={"year": float("nan")}), InvalidQueryError, "float"),
    Case("filter-empty-list", _search("x", filters={"doc_id": []}), InvalidQueryError, "empty"),
    Case("filter-mixed-types", _search("x", filters={"year": [2020, "2020"]}), InvalidQueryError, "mixes"),
    Case("filter-int-key", _search("x", filters={1: "plain"}), InvalidQueryError, "field name"),
    Case("filter-empty-key", _search("x", filters={"": "plain"}), InvalidQueryError, "field name"),
    Case("filter-bracket-key", _search("x", filters={"tags[]": "a"}), InvalidQueryError, "field name"),
    Case("filter-quote-key", _search("x", filters={'lang" OR "1"="1': "en"}), InvalidQueryError, "field name"),
    Case("filter-unknown-operator", _search("x", filters={"doc_id": {"$regex": "nobody"}}), InvalidQueryError,
         "unknown operator"),
    Case("filter-operator-wrong-type", _search("x", filters={"year": {"$gte": "2020"}}), InvalidQueryError, "number"),
    Case("filter-bytes", _search("x", filters={"doc_id": b"plain"}), InvalidQueryError, "bytes"),
    Case("filter-numpy-int", _search("x", filters={"year": np.int64(2020)}), InvalidQueryError, "int64"),
    Case("filter-bool-list", _search("x", filters={"is_leaf": [True, False]}), InvalidQueryError, "single bool"),
    Case("filter-string-for-int-field", _search("lighthouse", filters={"level": "0"}), check=_empty),
    # A metadata key no document has is a typo, not an empty result (issue 15).
    Case("filter-unknown-field", _search("lighthouse", filters={"no_such_field": "x"}), InvalidQueryError,
         "no indexed document"),
    Case("filter-100k-value", _search("lighthouse", filters={"doc_id": "p" * 100_000}), check=_empty),
    Case("filter-10k-key", _search("lighthouse", filters={"k" * 10_000: "v"}), InvalidQueryError, "no indexed document"),
    Case("filter-10k-values", _search("lighthouse", filters={"doc_id": [f"d{i}" for i in range(10_000)] + ["plain"]}),
         check=lambda index, r: {h.doc_id for h in r} == {"plain"}),
    Case("filter-int-beyond-int64", _search("x", filters={"year": 2 ** 64}), InvalidQueryError, "int64|range"),
    Case("filter-invalid-utf8", _search("x", filters={"lang": SURROGATE_TEXT}), InvalidQueryError, "UTF-8|surrogate"),
    Case("filter-injection-value-is-data", _search("lighthouse", filters={"lang": "en' OR '1'='1"}), check=_empty),
]

KNOB_CASES = [
    Case("beam-width-string", _search("x", method="fixed", beam_width="3"), ConfigError, "beam_width"),
    Case("beam-width-bool", _search("x", method="fixed", beam_width=True), ConfigError, "beam_width"),
    Case("sensitivity-nan", _search("x", method="sensitive_knee", sensitivity=float("nan")), ConfigError, "sensitivity"),
    Case("fusion-weights-infinite", _fusion([(float("inf"), 1.0)]), ConfigError, "non-finite"),
    Case("fusion-weights-shape", _fusion([(1.0,)]), ConfigError, "pair"),
    Case("method-unknown", _search("x", method="drop table"), ConfigError, "method must be one of"),
    Case("order-unknown", _search("x", order="random"), ConfigError, "order"),
    Case("max-roots-negative", _search("x", max_roots=-1), ConfigError, "max_roots"),
    Case("max-roots-a-billion", _search("lighthouse", max_roots=10 ** 9), check=_some_result),
    Case("beam-a-billion", _search("lighthouse", method="fixed", beam_width=10 ** 9), check=_some_result),
    Case("flat-k-a-billion", lambda index: index.flat_search("lighthouse", k=10 ** 9), check=lambda i, r: None),
    Case("flat-k-zero", lambda index: index.flat_search("lighthouse", k=0), InvalidQueryError, "k must"),
    Case("flat-k-string", lambda index: index.flat_search("lighthouse", k="5"), InvalidQueryError, "k must"),
    Case("flat-mode-unknown", lambda index: index.flat_search("lighthouse", mode="magic"), InvalidQueryError, "mode"),
]


@pytest.mark.parametrize("case", [c.param() for c in DOCUMENT_CASES + QUERY_CASES + FILTER_CASES + KNOB_CASES])
def test_hostile_input_gives_a_clear_error_or_a_sane_result(index, case):
    TRIED["inputs"] += 1
    before = index.store.count()
    outcome = bounded(DEADLINE, case.run, index)
    if case.error is not None:
        assert outcome.error is not None, f"{case.name}: expected {case.error.__name__}, got {outcome.value!r:.200}"
        assert isinstance(outcome.error, DragKneeError), (
            f"{case.name}: not a clear error: {type(outcome.error).__name__}: {str(outcome.error)[:300]}")
        assert isinstance(outcome.error, case.error), f"{case.name}: {type(outcome.error).__name__}: {outcome.error}"
        assert re.search(case.message, str(outcome.error)), f"{case.name}: message {str(outcome.error)!r} lacks {case.message!r}"
        assert index.store.count() == before, f"{case.name}: a refused input changed the index"
    else:
        if outcome.error is not None:
            raise outcome.error
        case.check(index, outcome.value)


# ---------------------------------------------------------------------------------------------
# very long single lines: the builder splits them, in bounded time (figures printed)
# ---------------------------------------------------------------------------------------------


def _single_line(size: int, kind: str) -> str:
    if kind == "words":
        return ("lighthouse keeper log entry " * (size // 28 + 1))[:size]
    return "x" * size  # no space and no sentence end: the builder must cut blindly


@pytest.mark.parametrize("size, kind, budget", [
    pytest.param(1_000_000, "words", 30.0, id="1MB-words"),
    pytest.param(1_000_000, "no-space", 30.0, id="1MB-no-space"),
    pytest.param(10_000_000, "words", 600.0, id="10MB-words", marks=pytest.mark.slow),
    pytest.param(10_000_000, "no-space", 600.0, id="10MB-no-space", marks=pytest.mark.slow),
])
def test_a_single_huge_line_is_split_by_the_builder_in_bounded_time(size, kind, budget):
    document = Document(id="huge", text=_single_line(size, kind))
    config = BuildConfig()
    started = time.process_time()
    outcome = bounded(budget, build_document_trees, [document], config)
    if outcome.error is not None:
        raise outcome.error
    (tree,) = outcome.value
    leaves = tree.leaves
    TRIED["inputs"] += 1
    print(f"\n[hardening] builder {size / 1e6:.0f} MB single line ({kind}): {len(leaves)} leaves, "
          f"{len(tree.nodes)} nodes in {outcome.seconds:.1f}s wall, {time.process_time() - started:.1f}s CPU")
    assert all(len(leaf.text) <= config.leaves.max_chars for leaf in leaves)
    assert sum(len(leaf.text) for leaf in leaves) >= size * 0.95  # only spaces may go


@pytest.mark.slow
def test_a_2mb_single_line_is_ingested_and_searchable_in_bounded_time(make_index):
    """The encoder is the cost here (~1,000 leaves); the figure is printed for the report."""
    index = make_index(collection="hostile_2mb")
    outcome = bounded(1800, index.add_documents, [Document(id="huge", text=_single_line(2_000_000, "words"))])
    if outcome.error is not None:
        raise outcome.error
    print(f"\n[hardening] 2 MB single line ingested: {outcome.value} ({outcome.seconds:.0f}s wall; "
          f"phases {outcome.value.phase_seconds})")
    assert index.search("lighthouse keeper").nodes


# ---------------------------------------------------------------------------------------------
# hostile PDFs (through the loader)
# ---------------------------------------------------------------------------------------------


def _pdfs(tmp_path):
    pypdf = pytest.importorskip("pypdf")
    from drag_knee_retriever.sample import text_pdf_bytes

    good = text_pdf_bytes(["A page about lighthouses.", "Another page about harbours."])
    made = {"truncated.pdf": good[: len(good) // 2], "empty.pdf": b"", "not-a-pdf.pdf": b"GIF89a not a pdf",
            "header-only.pdf": b"%PDF-1.7\n", "garbage-after-header.pdf": b"%PDF-1.4\n" + bytes(range(256)) * 40}
    blank = pypdf.PdfWriter()
    blank.add_blank_page(200, 200)
    buffer = io.BytesIO()
    blank.write(buffer)
    made["image-only.pdf"] = buffer.getvalue()
    locked = pypdf.PdfWriter(clone_from=io.BytesIO(good))
    locked.encrypt(user_password="s3cret", owner_password="owner", algorithm="RC4-128")  # AES needs the cryptography package
    buffer = io.BytesIO()
    locked.write(buffer)
    made["encrypted.pdf"] = buffer.getvalue()
    paths = {}
    for name, data in made.items():
        paths[name] = tmp_path / name
        paths[name].write_bytes(data)
    return paths


def test_hostile_pdfs_are_refused_clearly_in_bounded_time(tmp_path):
    from drag_knee_retriever.loaders import load_file

    for name, path in _pdfs(tmp_path).items():
        TRIED["inputs"] += 1
        outcome = bounded(DEADLINE, load_file, path)
        assert isinstance(outcome.error, InvalidDocumentError), f"{name}: {outcome.error!r} {outcome.value!r:.100}"
        assert name.split(".")[0].split("-")[0] in str(outcome.error) or path.name in str(outcome.error)


def test_report_inputs(capsys):
    with capsys.disabled():
        print(f"\n[hardening] hostile inputs tried: {TRIED}")


def test_flat_search_over_everything_with_k_beyond_the_collection_returns_only_nodes(index, request):
    TRIED["inputs"] += 1
    outcome = bounded(DEADLINE, index.flat_search, "lighthouse", k=10_000, scope="all", mode="dense")
    if outcome.error is not None:
        raise outcome.error
    assert len(outcome.value) == index.store.count()
