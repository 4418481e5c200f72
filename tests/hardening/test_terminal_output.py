"""What the ``drag-knee`` command prints (issue 16, items 5 and 10): never what a terminal executes,
JSON exact, and a reader that goes away does not stop an ingest.

A file holding ``ESC]0;PWNED BEL`` (set the window title) and ``ESC[2J`` (clear the screen), and a
file named ``ctrl ESC[31m red.txt``, reached the terminal raw through ``search`` and ``docs list``.
``drag-knee ingest corpus 2>&1 | head -n 1`` ended the ingest silently at the first progress line
written after ``head`` had gone. Every case runs the real command on the real model and engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from drag_knee_retriever import DragKneeIndex

MODEL_DIR = Path(__file__).resolve().parents[3] / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8"
TITLE = "\x1b]0;PWNED\x07"
CLEAR = "\x1b[2J"
NAME = "ctrl\x1b[31mred.txt"


def _env(tmp: Path) -> dict:
    env = dict(os.environ, XDG_DATA_HOME=str(tmp / "xdg"), COLUMNS="200")
    env.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL_DIR))
    env.pop("DRAG_KNEE_DEBUG", None)
    return env


def _command() -> list:
    script = Path(sys.executable).with_name("drag-knee")
    return [str(script)] if script.exists() else [sys.executable, "-m", "drag_knee_retriever.cli"]


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(_command() + list(args), capture_output=True, text=True, timeout=300, env=_env(tmp), cwd=tmp)


def _raw_controls(text: str) -> list:
    return sorted({f"{ord(c):#04x}" for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0})


@pytest.fixture(scope="module")
def hostile_index(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("terminal")
    corpus = tmp / "corpus"
    corpus.mkdir()
    (corpus / "evil.txt").write_text(f"Lighthouse{TITLE} keepers{CLEAR} log the PWNED storms.\n\nMore about harbours.\n")
    (corpus / NAME).write_text(f"{CLEAR}Title with escapes{TITLE}\n\nA note on red lighthouses and PWNED tides.\n")
    (corpus / "plain.txt").write_text("A plain note about tides.\n")
    index = tmp / "index"
    done = _cli(tmp, "ingest", str(corpus), "--index", str(index))
    assert done.returncode == 0, done.stderr
    return tmp, index


def test_document_text_and_names_are_shown_with_escapes_not_executed(hostile_index):
    tmp, index = hostile_index
    for args in (("search", "PWNED storms lighthouse", "--index", str(index)),
                 ("search", "PWNED", "--index", str(index), "--trace"),
                 ("docs", "list", "--index", str(index)),
                 ("stats", "--index", str(index))):
        done = _cli(tmp, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert _raw_controls(done.stdout + done.stderr) == [], (args, _raw_controls(done.stdout), done.stdout[:2000])
    listing = _cli(tmp, "docs", "list", "--index", str(index)).stdout
    assert "ctrl\\x1b[31mred.txt" in listing, listing
    found = _cli(tmp, "search", "PWNED storms lighthouse", "--index", str(index)).stdout
    assert "\\x1b]0;PWNED\\x07" in found or "\\x1b[2J" in found, found


def test_json_output_stays_exact(hostile_index):
    tmp, index = hostile_index
    done = _cli(tmp, "search", "PWNED storms lighthouse", "--index", str(index), "--json")
    assert done.returncode == 0, done.stderr
    assert _raw_controls(done.stdout) == []  # JSON escapes control characters itself (\\u001b)
    texts = [n["text"] for n in json.loads(done.stdout)["nodes"]]
    assert any(TITLE in t or CLEAR in t for t in texts), texts  # the exact text, escapes included
    listing = json.loads(_cli(tmp, "docs", "list", "--index", str(index), "--json").stdout)
    assert NAME in json.dumps(listing, ensure_ascii=False) or any(NAME == d.get("doc_id") for d in listing)


@pytest.mark.parametrize("shell", ["2>&1 | head -n 1", "2>&-"], ids=["stderr-piped-to-head", "stderr-closed"])
def test_a_closed_stderr_does_not_abort_the_ingest(tmp_path, shell):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(30):
        (corpus / f"note{i:02d}.txt").write_text(f"Note {i} about lighthouses and harbours.\n\nTides of day {i}.\n")
    index = tmp_path / "index"
    command = " ".join(f"'{part}'" for part in _command()) + f" -v ingest '{corpus}' --index '{index}' {shell}"
    subprocess.run(["bash", "-c", command], env=_env(tmp_path), cwd=tmp_path, timeout=300, capture_output=True)
    with DragKneeIndex(index) as opened:
        assert len(opened.list_documents()) == 30


# Issue 38 item 8: every character that breaks a line (str.splitlines' list), in a file name.
BREAKS = {"\n": "\\n", "\r": "\\x0d", "\v": "\\x0b", "\f": "\\x0c", "\x1c": "\\x1c", "\x1d": "\\x1d",
          "\x1e": "\\x1e", "\x85": "\\x85", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _forged(output: str, names: dict) -> list:
    """Lines of ``output`` where a name's tail stands without its head (the name broke the line),
    or a raw line-breaking character other than the newline that ends each line."""
    problems = [f"raw {ch!r}" for ch in BREAKS if ch != "\n" and ch in output]
    for marker, shown in names.items():
        problems += [line for line in output.split("\n") if marker in line and shown not in line]
    return problems


def test_a_line_break_in_a_file_name_forges_no_line(tmp_path):
    """``n0<newline>FORGED0 Ingested 999 document(s).txt`` printed a line of its own in ``ingest``
    and an extra row in ``docs list`` (and U+2028 went out raw); a skipped file's name too."""
    corpus, bad = tmp_path / "corpus", tmp_path / "bad"
    corpus.mkdir()
    bad.mkdir()
    names = {}
    for i, (char, escaped) in enumerate(BREAKS.items()):
        (corpus / f"n{i}{char}FORGED{i} Ingested 999 document(s).txt").write_text(f"Note {i} about lighthouses.\n")
        names[f"FORGED{i} "] = f"n{i}{escaped}FORGED{i} "
    (corpus / "x\nSKIPPED.pdf").write_bytes(b"not a pdf")  # skipped, with its name on the skip line
    (bad / "y\u2028SKIPPED2.pdf").write_bytes(b"not a pdf")
    names.update({"SKIPPED.pdf": "x\\nSKIPPED.pdf", "SKIPPED2.pdf": "y\\u2028SKIPPED2.pdf"})
    index = str(tmp_path / "index")
    ingest = _cli(tmp_path, "ingest", str(corpus), "--index", index)
    assert ingest.returncode == 0 and f"Ingested {len(BREAKS)} document(s)" in ingest.stdout, ingest.stderr
    runs = {"ingest": ingest,
            "docs list": _cli(tmp_path, "docs", "list", "--index", index),
            "search --trace": _cli(tmp_path, "search", "lighthouses note", "--index", index, "--trace"),
            # the loaders' own log line ("skipped %s: %s") is shown with -vv
            "-vv ingest": _cli(tmp_path, "-vv", "ingest", str(bad), "--index", index)}
    for what, done in runs.items():
        assert _forged(done.stdout + done.stderr, names) == [], (what, done.stdout[-3000:], done.stderr[-3000:])
    listing = runs["docs list"].stdout
    assert all(shown in listing for marker, shown in names.items() if marker.startswith("FORGED")), listing
    assert "x\\nSKIPPED.pdf" in ingest.stderr and "y\\u2028SKIPPED2.pdf" in runs["-vv ingest"].stderr
    exact = {d["doc_id"] for d in json.loads(_cli(tmp_path, "docs", "list", "--index", index, "--json").stdout)}
    assert {p.name for p in corpus.glob("*.txt")} == exact  # --json keeps every name exact
    hostile = next(name for name in exact if name.startswith("n0\n"))
    deleted = _cli(tmp_path, "docs", "delete", hostile, "--index", index)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip() == "Deleted " + hostile.replace("\n", "\\n") + ".", deleted.stdout
