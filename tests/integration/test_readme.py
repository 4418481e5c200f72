"""The README and the docs site cannot drift from the code:

- the README is short and finds its way: at most 250 lines, the two commands of the first screen as CI runs
  them, each of the five things a newcomer looks for (an LCEL chain, a query engine, an agent tool, the
  langchain-qdrant swap, a server URL) linked from its first 100 lines to a README section whose code does
  it, which links on to a docs section (an anchor GitHub and the docs site both make) that does it too;
- no absolute machine path (a folder of this machine) in the README or the docs;
- the demo output shown (docs/getting-started.md) is a real run: every line of the block appears, in order, in what
  ``drag-knee demo`` prints (timings aside; a line holding only "…" stands for lines left out);
- every Python block of README.md and docs/**/*.md runs as written, in a fresh folder holding the files the blocks name
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
import unicodedata
import sys
import warnings
from contextlib import redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").rglob("*.md"))
#: Every page whose Python blocks run here: (name, text).
PAGES = [("README.md", TEXT)] + [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in DOCS]
GETTING_STARTED = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")


def _blocks(lang: str, after: str = "", before: str = "", text: str = TEXT) -> list:
    if after:
        text = text[text.index(after):]
    if before:
        text = text[: text.index(before)]
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _normal(line: str) -> str:
    line = re.sub(r"\d+(\.\d+)? ms", "<ms>", line)
    return re.sub(r"in \d+(\.\d+)? s", "in <s>", line).rstrip()


def test_the_demo_output_shown_is_what_the_demo_prints():
    shown = _blocks("text", after="## What the demo shows", before="## Loaders and pictures in Python",
                    text=GETTING_STARTED)[0].splitlines()
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
        assert position < len(printed), f"docs/getting-started.md demo line not in the demo's output (in order): {line!r}"
        position += 1


_BLOCK = re.compile(r"(?:<!-- readme-test: (skip|continues)\b(.*?)-->\n)?```python\n(.*?)```", re.S)


_FENCED = re.compile(r"^```.*?^```", re.S | re.M)  # code blocks: their "# comments" are no headings


def _python_chains() -> list:
    """Each runnable block with the blocks that continue it: (id, [code, ...]); skipped blocks as None.

    Over the README and every docs page; a chain whose code repeats one already listed runs once."""
    chains: list = []
    seen: set = set()
    for name, text in PAGES:
        page: list = []
        for match in _BLOCK.finditer(text):
            marker, reason, code = match.groups()
            line = text[: match.start(3)].count("\n")
            headings = re.findall(r"^#+ (.*)$", _FENCED.sub("", text[: match.start()]), flags=re.M)
            heading = headings[-1] if headings else name
            if marker == "continues":
                assert page and page[-1][1] is not None, f"{name} line {line}: continues a skipped block"
                page[-1][1].append((f"{name} block at line {line}", code))
            elif marker == "skip":
                page.append((f"{name} line {line} ({heading}): skipped, {reason.strip(' ()')}", None))
            else:
                page.append((f"{name} line {line} ({heading})", [(f"{name} block at line {line}", code)]))
        for chain in page:
            key = None if chain[1] is None else tuple(code for _, code in chain[1])
            if key is None or key not in seen:
                chains.append(chain)
                seen.add(key)
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
        pytest.skip("marked in the page's source (readme-test: skip)")
    from drag_knee_retriever import DragKneeIndex

    namespace: dict = {"__name__": "readme"}
    out = io.StringIO()
    try:
        with redirect_stdout(out), warnings.catch_warnings():
            # The README shows the current spelling: our own DeprecationWarnings are failures here.
            warnings.filterwarnings("error", message=".*is deprecated and will be removed", category=DeprecationWarning)
            for where, code in chain:
                exec(compile(code, where, "exec"), namespace)
    finally:
        for value in namespace.values():  # the folder locks of indexes a block left open
            if isinstance(value, DragKneeIndex):
                value.close()
    assert "print(" not in "".join(code for _, code in chain) or out.getvalue().strip()


def test_the_markers_are_few_and_say_why():
    skipped = [c[0] for c in CHAINS if c[1] is None]
    assert len(CHAINS) - len(skipped) >= 20, [c[0] for c in CHAINS]
    readme_runs = [c[0] for c in CHAINS if c[1] is not None and c[0].startswith("README.md")]
    assert len(readme_runs) >= 6, readme_runs
    assert all("skipped, " in s and len(s.split("skipped, ")[1]) > 10 for s in skipped), skipped


def test_every_python_block_compiles():
    count = 0
    for name, text in PAGES:
        for number, code in enumerate(_blocks("python", text=text)):
            compile(code, f"{name} python block {number}", "exec")
            count += 1
    assert count > 20


# -- the README as a newcomer reads it -------------------------------------------------------------

#: The first screen's two commands, byte for byte (.ci/run runs them; a newcomer copies them).
# editable_mode=compat: the checkout on the import path, so type checkers see the package (issue 40;
# pip's default editable install is an import hook mypy cannot follow).
FIRST_COMMANDS = ('python3 -m venv .venv && .venv/bin/pip install -e ".[all]" --config-settings editable_mode=compat '
                  '&& .venv/bin/drag-knee demo',
                  '.venv/bin/pip install -e ".[all,dev]" --config-settings editable_mode=compat && .venv/bin/python -m pytest')


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_short_and_starts_with_the_two_commands():
    lines = TEXT.splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"
    first_screen = lines[:25]
    for command in FIRST_COMMANDS:
        assert command in first_screen, f"the first screen lost {command!r}"


def test_ci_installs_and_tests_as_the_readme_says():
    """CI (.ci/run) runs the first screen's two commands (quietly: ``-q``), so a change to one reaches
    the other; it had kept the old install line when the README's gained editable_mode=compat."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in FIRST_COMMANDS:
        quiet = command.replace("pip install -e", "pip install -q -e").replace("python -m pytest", "python -m pytest -q")
        assert quiet in ci, f".ci/run does not run the README's {command!r}"


def _docs_slug(heading: str) -> str:
    """The docs site's anchor for a heading (Python-Markdown's toc ``slugify``, which MkDocs uses)."""
    value = unicodedata.normalize("NFKD", heading.strip()).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", value).strip().lower())


def _sections(text: str) -> dict:
    """Each heading's anchor -> (line number, 1-based, of the heading; the text up to the next heading of
    the same or a higher level), for GitHub's and the docs site's anchors alike."""
    lines = text.splitlines()
    fenced = set()
    for match in _FENCED.finditer(text):
        first = text[: match.start()].count("\n")
        fenced.update(range(first, first + match.group(0).count("\n") + 1))
    heads = [(i, len(m.group(1)), m.group(2)) for i, line in enumerate(lines)
             if i not in fenced and (m := re.match(r"^(#+) (.*)$", line))]
    out = {}
    for n, (i, level, heading) in enumerate(heads):
        end = next((j for j, lv, _ in heads[n + 1:] if lv <= level), len(lines))
        body = "\n".join(lines[i:end])
        out.setdefault(_slug(heading), (i + 1, body))
        out.setdefault(_docs_slug(heading), (i + 1, body))
    return out


#: What a newcomer looks for: (what, words of the README link's label, what its code holds).
TOPICS = [
    ("an LCEL chain", ("lcel",), r"\| prompt \| llm \|"),
    ("a query engine", ("query engine",), r"RetrieverQueryEngine\.from_args\(|\.as_query_engine\("),
    ("an agent tool", ("agent",), r"create_retriever_tool\(|\.as_tool\("),
    ("the langchain-qdrant swap", ("langchain-qdrant",), r"# was: QdrantVectorStore"),
    ("a server URL", ("server",), r"http://localhost:6333"),
]


def _topic_walk(words: tuple, code: str) -> dict:
    """How a newcomer reaches a topic from the README's top: the contents link (its line, within the first
    100), the README section it opens (its line; click 1), the code there, and the docs section that
    section links to (page and anchor; click 2), each found as a reader would follow it."""
    top = "\n".join(TEXT.splitlines()[:100])
    readme = _sections(TEXT)
    links = [(label, target, top[: m.start()].count("\n") + 1)
             for m in re.finditer(r"\[([^\]]+)\]\(#([^)]+)\)", top)
             for label, target in [m.groups()] if any(word in label.lower() for word in words)]
    assert links, f"no link to it in README.md's first 100 lines (words {words})"
    label, target, link_line = links[0]
    assert target in readme, f"README.md links {label!r} to #{target}, which no heading makes"
    line, body = readme[target]
    assert re.search(code, body), f"README.md's section #{target} holds no {code!r}"
    docs = re.findall(r"\]\((docs/[^)#]+\.md)#([^)]+)\)", body)
    assert docs, f"README.md's section #{target} links to no docs section (docs/PAGE.md#ANCHOR)"
    page, anchor = docs[0]
    sections = _sections((ROOT / page).read_text(encoding="utf-8"))
    assert anchor in sections, f"README.md's #{target} links to {page}#{anchor}, which no heading there makes"
    assert _slug(next(h for h in re.findall(r"^#+ (.*)$", sections[anchor][1], flags=re.M))) == anchor, \
        f"{page}#{anchor}: GitHub and the docs site name this heading differently; link one both make"
    docs_line, docs_body = sections[anchor]
    assert re.search(code, docs_body), f"{page}#{anchor} holds no {code!r}"
    return {"link_line": link_line, "section_line": line, "code_line": line + body[: re.search(code, body).start()]
            .count("\n"), "docs": f"{page}#{anchor}", "docs_line": docs_line}


@pytest.mark.parametrize("what, words, code", TOPICS, ids=[t[0] for t in TOPICS])
def test_the_readme_reaches_each_topic_from_its_first_100_lines(what, words, code):
    """Each of the five from a contents link in the README's first 100 lines: one click to a README
    section whose code does it, a second to the docs section (an anchor both GitHub and the site make)
    that does it too."""
    walk = _topic_walk(words, code)
    assert walk["link_line"] <= 100


def test_relative_links_of_the_readme_exist():
    for target in re.findall(r"\]\(((?!https?:|#)[^)#]+)", TEXT):
        assert (ROOT / target).exists(), f"README.md links to {target}, which does not exist"


def test_no_absolute_machine_path_in_the_readme_or_docs():
    for name, text in PAGES:
        found = re.findall(r"(?<![\w.~])/(?:work|root|home/\w+|tmp/\w+)/\S*", text)
        assert not found, f"{name} holds machine paths: {found[:5]}"
