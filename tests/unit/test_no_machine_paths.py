"""No absolute machine path in any git-tracked text file (issue 42).

A path such as ``/work/cache/emb``, ``/home/<user>/...``, ``/root/.cache/...`` or
``/tmp/pytest-of-<user>/...`` names one machine's folders: it breaks for every other user and says
nothing they can act on. Scripts derive their folders from their own location
(``Path(__file__).resolve().parents[1]``), read an environment variable with such a default, or
take a required argument; prose and results write a path relative to the repository
(``benchmarks/results/...``) or a placeholder (``DIR``, ``CACHE/...``, ``$DRAG_KNEE_DATASETS``).

Not flagged, on purpose: system paths that are the same on every machine and that the hardening
tests name in their attack descriptions (``/dev/zero``, ``/etc/passwd``, ``/proc/...``,
``/usr/bin/chromium``), URLs (``https://host/work/...``: the path follows a host name), relative
paths (``../shared/datasets``, ``~/.cache``, ``{doc_id}/root/...``) and plain ``/tmp/<name>`` in example
commands (any machine has one).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(REPO).as_posix()

# A path starts a new token: not after a word character (a URL's host, ``src/work/``), a dot or tilde
# (``../work/``, ``~/work/``), or the end of an expression (``{doc_id}/root/``, ``$(pwd)/work/``).
_START = r"(?<![\w.~}\])$])"
PATTERNS: List[Tuple[str, "re.Pattern[str]"]] = [
    ("/work/...", re.compile(_START + r"/work/")),
    ("/home/<user>/...", re.compile(_START + r"/home/[\w.-]+/")),
    ("/root/...", re.compile(_START + r"/root/")),
    ("/Users/<user>/... (macOS)", re.compile(_START + r"/Users/[\w.-]+/")),
    ("/tmp/pytest-of-<user>/... (a pytest temp folder)", re.compile(r"/tmp/pytest-of-")),
    ("/var/folders/... (a macOS temp folder)", re.compile(_START + r"(?:/private)?/var/folders/\w\w/")),
    ("C:\\Users\\<user>\\... (Windows)", re.compile(r"\b[A-Za-z]:[\\/]+Users[\\/]+\w")),
]

# Narrow allow-list, by repository path. Every entry says why.
ALLOWED = {
    THIS,  # this test: its docstring, patterns and self-checks spell the paths it looks for
}

ADVICE = ("write a path relative to the repository (benchmarks/results/...) or a placeholder (DIR, CACHE/..., "
          "$DRAG_KNEE_DATASETS); in a script derive it from Path(__file__).resolve().parents[1], an environment "
          "variable with such a default, or a required argument")


def machine_paths(text: str) -> Iterator[Tuple[int, str, str]]:
    """(line number, what was matched, the pattern's name) for every machine path in ``text``."""
    for number, line in enumerate(text.splitlines(), 1):
        for name, pattern in PATTERNS:
            for match in pattern.finditer(line):
                end = match.end()
                while end < len(line) and not line[end].isspace() and line[end] not in "\"'`),;]>|":
                    end += 1
                yield number, line[match.start():end], name


def tracked_files() -> List[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout (or no git): the tracked files cannot be listed")
    return [name for name in out.decode("utf-8", "surrogateescape").split("\0") if name]


def read_text(path: Path):
    """The file as text, or None for a binary file (a NUL byte in its first 8 KB) or one gone missing."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):  # deleted in the working tree, or a submodule
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def test_no_tracked_file_holds_a_machine_path():
    found = []
    for name in tracked_files():
        if name in ALLOWED:
            continue
        text = read_text(REPO / name)
        if text is None:
            continue
        for number, match, kind in machine_paths(text):
            found.append(f"{name}:{number}: {match!r} (an absolute machine path, {kind})")
    if found:
        pytest.fail(f"{len(found)} absolute machine path(s) in tracked files; {ADVICE}:\n  " + "\n  ".join(found),
                    pytrace=False)


@pytest.mark.parametrize("line", [
    "    parser.add_argument('--out', default='/work/cache/budget/dump')",
    "OUT=${OUT:-/work/cache/longdoc/runs}",
    '"folder": "/root/.cache/drag-knee-retriever/eval-cache"',
    "see /home/alice/projects/x.py",
    "E   at /tmp/pytest-of-root/pytest-3/test_x0/index",
    "(cd /Users/bob/src && make)",
    "C:\\Users\\carol\\repo",
    "file:///work/main/README.md",
])
def test_machine_paths_are_caught(line):
    assert list(machine_paths(line)), line


@pytest.mark.parametrize("line", [
    "a symlink to /dev/zero or /etc/passwd inside the folder",
    "open('/proc/self/status')",
    "chromium at /usr/bin/chromium",
    "https://github.com/owner/work/blob/main/x.py and https://example.org/home/alice/",
    "DRAG_KNEE_DATASETS=../shared/datasets python benchmarks/splitters.py",
    "~/.cache/drag-knee-retriever/eval-cache",
    'uuid.uuid5(uuid.NAMESPACE_URL, f"{doc_id}/root/leaf")',
    "$DRAG_KNEE_BENCH_CACHE/work/x and $(pwd)/work/y",
    "git worktree add /tmp/main main",
    "a root's roots/ folder, the tree's root/leaf ids",
])
def test_legitimate_paths_are_not_caught(line):
    assert not list(machine_paths(line)), line
