"""The README cannot drift from the code (issue 27 item 8):

- the demo output shown is a real run: every line of the block appears, in order, in what
  ``drag-knee demo`` prints (timings aside; a line holding only "…" stands for lines left out);
- every Python block runs as written, in a fresh folder holding the files the blocks name
  (``~/notes``, ``paper.pdf``, ``scans/``): fake chat models and embeddings where the blocks say so,
  the real offline model inside the index. A block that cannot run here says why in the README source,
  on the line before it: ``<!-- readme-test: skip (a Qdrant server at localhost:6333) -->``; a block that
  goes on from the one before it (its names) is marked ``<!-- readme-test: continues -->`` and runs in
  that block's namespace;
- every Python block, skipped or not, at least compiles.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import warnings
from contextlib import redirect_stdout
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
TEXT = README.read_text(encoding="utf-8")


def _blocks(lang: str, after: str = "", before: str = "") -> list:
    text = TEXT
    if after:
        text = text[text.index(after):]
    if before:
        text = text[: text.index(before)]
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _normal(line: str) -> str:
    line = re.sub(r"\d+(\.\d+)? ms", "<ms>", line)
    return re.sub(r"in \d+(\.\d+)? s", "in <s>", line).rstrip()


def test_the_demo_output_shown_is_what_the_demo_prints():
    shown = _blocks("text", after="## What the demo shows", before="## The `drag-knee` command")[0].splitlines()
    env = dict(os.environ, COLUMNS="110")
    script = Path(sys.executable).with_name("drag-knee")
    proc = subprocess.run([str(script), "demo"], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    printed = [_normal(line) for line in proc.stdout.splitlines()]
    position = 0
    for line in shown:
        if line.strip() == "…":
            continue
        want = _normal(line)
        while position < len(printed) and printed[position] != want:
            position += 1
        assert position < len(printed), f"README demo line not in the demo's output (in order): {line!r}"
        position += 1


_BLOCK = re.compile(r"(?:<!-- readme-test: (skip|continues)\b(.*?)-->\n)?```python\n(.*?)```", re.S)


_FENCED = re.compile(r"^```.*?^```", re.S | re.M)  # code blocks: their "# comments" are no headings


def _python_chains() -> list:
    """Each runnable block with the blocks that continue it: (id, [code, ...]); skipped blocks as None."""
    chains: list = []
    for match in _BLOCK.finditer(TEXT):
        marker, reason, code = match.groups()
        line = TEXT[: match.start(3)].count("\n")
        heading = re.findall(r"^#+ (.*)$", _FENCED.sub("", TEXT[: match.start()]), flags=re.M)[-1]
        if marker == "continues":
            assert chains and chains[-1][1] is not None, f"README line {line}: continues a skipped block"
            chains[-1][1].append((line, code))
        elif marker == "skip":
            chains.append((f"line {line} ({heading}): skipped, {reason.strip(' ()')}", None))
        else:
            chains.append((f"line {line} ({heading})", [(line, code)]))
    return chains


CHAINS = _python_chains()


@pytest.fixture
def readers_folder(tmp_path, monkeypatch):
    """A working folder with what the blocks name as the reader's own: ~/notes, paper.pdf, scans/."""
    from drag_knee_retriever.sample import text_pdf_bytes

    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "policy.md").write_text("# Policy 2024\n\nWhat changed in the 2024 policy: remote work "
                                                  "is allowed two days a week.\n", encoding="utf-8")
    (tmp_path / "paper.pdf").write_bytes(text_pdf_bytes(["Tides follow the moon.", "Spring tides are larger."]))
    (tmp_path / "scans").mkdir()
    (tmp_path / "scans" / "letter.pdf").write_bytes(text_pdf_bytes(["A letter about the harbour."]))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("chain", [c[1] for c in CHAINS], ids=[c[0] for c in CHAINS])
def test_every_python_block_runs(chain, readers_folder):
    if chain is None:
        pytest.skip("marked in the README source (readme-test: skip)")
    from drag_knee_retriever import DragKneeIndex

    namespace: dict = {"__name__": "readme"}
    out = io.StringIO()
    try:
        with redirect_stdout(out), warnings.catch_warnings():
            # The README shows the current spelling: our own DeprecationWarnings are failures here.
            warnings.filterwarnings("error", message=".*is deprecated and will be removed", category=DeprecationWarning)
            for line, code in chain:
                exec(compile(code, f"README.md block at line {line}", "exec"), namespace)
    finally:
        for value in namespace.values():  # the folder locks of indexes a block left open
            if isinstance(value, DragKneeIndex):
                value.close()
    assert "print(" not in "".join(code for _, code in chain) or out.getvalue().strip()


def test_the_markers_are_few_and_say_why():
    skipped = [c[0] for c in CHAINS if c[1] is None]
    assert len(CHAINS) - len(skipped) >= 11, [c[0] for c in CHAINS]
    assert all("skipped, " in s and len(s.split("skipped, ")[1]) > 10 for s in skipped), skipped


def test_every_python_block_compiles():
    blocks = _blocks("python")
    assert len(blocks) > 10
    for number, code in enumerate(blocks):
        compile(code, f"README python block {number}", "exec")
