"""Hostile folders (issue 16, items 2, 3, 4 and 8): never hang, never follow a link out, never lose the batch.

Each test builds the folder the issue's reproduction describes (a FIFO, a link to ``/dev/zero``,
links to ``/etc/passwd`` and to a private key outside the folder, link loops, PDFs that break
pypdf, files above the size limits) next to good files, and checks through the real loader, in a
thread with a deadline (:func:`hardening_support.bounded`), that the command finishes, that each
hostile entry is skipped with the reason and the fix, that every good file is loaded, and that
``strict=True`` fails fast. The end-to-end test runs the same folder through the ``drag-knee``
command on the real model and engine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from drag_knee_retriever.errors import InvalidDocumentError
from drag_knee_retriever.loaders import DEFAULT_MAX_TEXT_BYTES, load_paths
from hardening_support import bounded
from hostile_files import aes256_pdf, bomb_pdf, deep_page_tree_pdf

DEADLINE = 30.0
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n"


def _good(folder: Path, n: int = 2) -> None:
    for i in range(n):
        (folder / f"good{i}.txt").write_text(f"A good note number {i} about lighthouses and harbours.\n")


def _reasons(report) -> dict:
    return {Path(s.path).name: s.reason for s in report.skipped}


def _loaded(report) -> set:
    return {d.id for d in report.documents}


def test_fifo_in_a_folder_is_skipped_not_read(tmp_path):
    """Item 2: ``mkfifo d/pipe.txt; drag-knee ingest d`` hung for ever."""
    d = tmp_path / "d"
    d.mkdir()
    _good(d)
    os.mkfifo(d / "pipe.txt")
    outcome = bounded(DEADLINE, load_paths, [d])
    assert outcome.error is None, outcome.error
    report = outcome.value
    assert _loaded(report) == {"good0.txt", "good1.txt"}
    assert "named pipe" in _reasons(report)["pipe.txt"] and "regular file" in _reasons(report)["pipe.txt"]
    # Named directly, too: skipped, not opened (opening a FIFO blocks until a writer comes).
    direct = bounded(DEADLINE, load_paths, [d / "pipe.txt", d / "good0.txt"])
    assert direct.error is None and _loaded(direct.value) == {"good0.txt"}
    assert "named pipe" in _reasons(direct.value)["pipe.txt"]
    strict = bounded(DEADLINE, load_paths, [d], strict=True)
    assert isinstance(strict.error, InvalidDocumentError) and "named pipe" in str(strict.error)


def test_link_to_dev_zero_is_refused_before_reading(tmp_path):
    """Item 2: ``ln -s /dev/zero d/zero.txt`` read until memory ran out (3.8 GB)."""
    d = tmp_path / "d"
    d.mkdir()
    _good(d)
    os.symlink("/dev/zero", d / "zero.txt")
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    plain = bounded(DEADLINE, load_paths, [d])
    followed = bounded(DEADLINE, load_paths, [d], follow_links=True)
    direct = bounded(DEADLINE, load_paths, [d / "zero.txt"])  # named on purpose: still a device
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    for outcome in (plain, followed, direct):
        assert outcome.error is None, outcome.error
    assert _loaded(plain.value) == _loaded(followed.value) == {"good0.txt", "good1.txt"}
    assert "outside the folder" in _reasons(plain.value)["zero.txt"]
    assert "character device" in _reasons(followed.value)["zero.txt"]
    assert "character device" in _reasons(direct.value)["zero.txt"]
    assert grown_mb < 100, f"peak memory grew by {grown_mb:.0f} MB while refusing /dev/zero"
    print(f"\n[hardening] /dev/zero behind a link: refused in {plain.seconds + followed.seconds:.2f} s, "
          f"peak memory +{grown_mb:.0f} MB")


def test_oversized_file_is_refused_before_a_byte_is_read(tmp_path):
    """Items 2 and 8: the size cap is checked on the file's size, not after reading it."""
    d = tmp_path / "d"
    d.mkdir()
    _good(d)
    with open(d / "huge.txt", "wb") as handle:  # sparse: 1 GB on paper, nothing on disk
        handle.truncate(1 << 30)
    (d / "big.md").write_text("# Big\n\n" + "A sentence about lighthouses. " * 40_000)  # ~1.2 MB
    outcome = bounded(DEADLINE, load_paths, [d], max_text_bytes=1_000_000)
    assert outcome.error is None, outcome.error
    reasons = _reasons(outcome.value)
    assert _loaded(outcome.value) == {"good0.txt", "good1.txt"}
    assert "1024.0 MB, above the 1.0 MB limit" in reasons["huge.txt"] and "--max-text-mb" in reasons["huge.txt"]
    assert "above the 1.0 MB limit" in reasons["big.md"]
    assert outcome.seconds < 5, f"refusing a 1 GB file took {outcome.seconds:.1f} s (was it read?)"
    raised = load_paths([d / "big.md"], max_text_bytes=2_000_000)
    assert _loaded(raised) == {"big.md"}
    with pytest.raises(InvalidDocumentError, match="max_text_bytes must be"):
        load_paths([d], max_text_bytes=0)


def test_default_text_limit_skips_a_20_mb_text_and_a_50_mb_line(tmp_path):
    """Item 8: a 20 MB text and a 50 MB single line are skipped with the limit named (not built for hours)."""
    d = tmp_path / "d"
    d.mkdir()
    _good(d)
    (d / "twenty.txt").write_bytes(b"A paragraph about lighthouses and harbours.\n\n" * (20 * 1024 * 1024 // 46))
    (d / "line.txt").write_bytes(b"lighthouse harbour " * (50 * 1024 * 1024 // 19))
    outcome = bounded(DEADLINE, load_paths, [d])
    assert outcome.error is None, outcome.error
    reasons = _reasons(outcome.value)
    assert _loaded(outcome.value) == {"good0.txt", "good1.txt"}
    limit = f"above the {DEFAULT_MAX_TEXT_BYTES / 2**20:.1f} MB limit"
    assert limit in reasons["twenty.txt"] and limit in reasons["line.txt"]
    assert outcome.seconds < 5
    print(f"\n[hardening] 20 MB text and 50 MB line refused in {outcome.seconds:.2f} s "
          f"(limit {DEFAULT_MAX_TEXT_BYTES / 2**20:.0f} MB per document)")


def test_links_out_of_the_folder_are_not_followed(tmp_path):
    """Item 3: ``ln -s /etc/passwd d/etc_passwd.txt`` and a link to a private key were ingested."""
    d = tmp_path / "d"
    d.mkdir()
    _good(d)
    secret = tmp_path / "home" / ".ssh"
    secret.mkdir(parents=True)
    (secret / "id_ed25519").write_text(KEY)
    os.symlink("/etc/passwd", d / "etc_passwd.txt")
    os.symlink(secret / "id_ed25519", d / "key.txt")
    os.symlink(secret, d / "ssh")  # a folder outside, with a supported file inside once followed
    (secret / "notes.txt").write_text("ssh notes " + KEY)
    os.symlink(d / "good0.txt", d / "alias.txt")  # inside the folder: followed (and loaded once)
    (d / "sub").mkdir()
    os.symlink("../good1.txt", d / "sub" / "up.txt")
    report = load_paths([d])
    loaded = _loaded(report)
    assert loaded == {"good0.txt", "good1.txt"}, loaded  # the inside links name files already loaded
    assert not any("PRIVATE KEY" in (doc.text or "") or "root:" in (doc.text or "") for doc in report.documents)
    reasons = _reasons(report)
    for name in ("etc_passwd.txt", "key.txt", "ssh"):
        assert "outside the folder" in reasons[name] and "--follow-links" in reasons[name], reasons
    inside_only = load_paths([d / "sub"])  # up.txt points out of the root "sub": not followed
    assert "outside the folder" in _reasons(inside_only)["up.txt"]
    followed = load_paths([d], follow_links=True)
    assert {"etc_passwd.txt", "key.txt", "ssh/notes.txt"} <= _loaded(followed)  # asked for: followed
    with pytest.raises(InvalidDocumentError, match="outside the folder"):
        load_paths([d], strict=True)


def test_link_loops_are_reported_and_the_rest_loaded(tmp_path):
    """Item 4: a symlink loop ended discovery with a RuntimeError and nothing was ingested."""
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    _good(d)
    os.symlink("self.txt", d / "self.txt")
    os.symlink("b.txt", d / "a.txt")
    os.symlink("a.txt", d / "b.txt")
    os.symlink("..", d / "sub" / "up")  # a folder link back to an ancestor
    os.symlink("loop", d / "loop")
    outcome = bounded(DEADLINE, load_paths, [d])
    assert outcome.error is None, outcome.error
    reasons = _reasons(outcome.value)
    assert _loaded(outcome.value) == {"good0.txt", "good1.txt"}
    for name in ("self.txt", "a.txt", "b.txt", "loop", "up"):
        assert "loop" in reasons[name], (name, reasons)
    direct = load_paths([d / "self.txt", d / "good0.txt"])
    assert _loaded(direct) == {"good0.txt"} and "loop" in _reasons(direct)["self.txt"]


@pytest.fixture(scope="module")
def bad_pdfs(tmp_path_factory):
    pytest.importorskip("pypdf")
    folder = tmp_path_factory.mktemp("pdfs")
    (folder / "deep.pdf").write_bytes(deep_page_tree_pdf(150))
    (folder / "bomb.pdf").write_bytes(bomb_pdf(204))
    (folder / "aes256.pdf").write_bytes(aes256_pdf())
    _good(folder)
    return folder


def test_pdfs_that_break_the_parser_are_skipped_not_fatal(bad_pdfs):
    """Item 4: a page tree deeper than 100, a 200 KB PDF inflating to 204 MB (LimitReachedError) and an
    AES-256 PDF without ``cryptography`` (DependencyError) each ended the batch with "unexpected ..."."""
    try:
        import cryptography  # noqa: F401
        has_crypto = True
    except ImportError:
        has_crypto = False
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcome = bounded(120, load_paths, [bad_pdfs])
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    assert outcome.error is None, outcome.error
    reasons = _reasons(outcome.value)
    assert _loaded(outcome.value) == {"good0.txt", "good1.txt"}
    assert "safety limit" in reasons["deep.pdf"] and "page tree depth" in reasons["deep.pdf"]
    assert "safety limit" in reasons["bomb.pdf"] and "decompress" in reasons["bomb.pdf"]
    if has_crypto:  # the AES file is made up (wrong keys): with cryptography it is password-protected
        assert "password" in reasons["aes256.pdf"] or "encrypted" in reasons["aes256.pdf"]
    else:
        assert "pip install cryptography" in reasons["aes256.pdf"], reasons["aes256.pdf"]
    assert grown_mb < 400, f"peak memory grew by {grown_mb:.0f} MB on the bomb"
    print(f"\n[hardening] 3 parser-breaking PDFs skipped in {outcome.seconds:.2f} s, peak memory +{grown_mb:.0f} MB")
    with pytest.raises(InvalidDocumentError):
        load_paths([bad_pdfs], strict=True)


# ---------------------------------------------------------------------------------------------
# end to end: the same folder through the drag-knee command
# ---------------------------------------------------------------------------------------------

MODEL_DIR = Path(__file__).resolve().parents[3] / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8"


def _cli(tmp_path: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "xdg"), COLUMNS="200")
    env.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL_DIR))
    env.pop("DRAG_KNEE_DEBUG", None)
    script = Path(sys.executable).with_name("drag-knee")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "drag_knee_retriever.cli"]
    return subprocess.run(command + list(args), capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=tmp_path)


def test_cli_ingests_the_rest_of_a_hostile_folder_and_never_prints_a_linked_key(tmp_path, bad_pdfs, engine):
    """Items 2, 3, 4 through ``drag-knee ingest`` and ``search``: finishes, skips each, ingests the rest."""
    d = tmp_path / "d"
    d.mkdir()
    _good(d, 3)
    os.mkfifo(d / "pipe.txt")
    os.symlink("/dev/zero", d / "zero.txt")
    (tmp_path / "id_ed25519").write_text(KEY)
    os.symlink(tmp_path / "id_ed25519", d / "key.txt")
    os.symlink("loop.txt", d / "loop.txt")
    for name in ("deep.pdf", "bomb.pdf", "aes256.pdf"):
        (d / name).write_bytes((bad_pdfs / name).read_bytes())
    index = tmp_path / "index"
    proc = _cli(tmp_path, "ingest", str(d), "--index", str(index), "--engine", engine)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr.lower()
    assert "Ingested 3 document(s)" in proc.stdout, proc.stdout
    for name in ("pipe.txt", "zero.txt", "key.txt", "loop.txt", "deep.pdf", "bomb.pdf", "aes256.pdf"):
        assert f"skipped {d / name}" in proc.stderr.replace("\n", " ") or name in proc.stderr, (name, proc.stderr)
    found = _cli(tmp_path, "search", "OPENSSH PRIVATE KEY", "--index", str(index), "--engine", engine)
    assert found.returncode == 0, found.stderr
    assert "PRIVATE KEY" not in found.stdout and "b3BlbnNzaC1rZXkt" not in found.stdout
    strict = _cli(tmp_path, "ingest", str(d), "--index", str(tmp_path / "strict"), "--engine", engine, "--strict")
    assert strict.returncode == 1 and "Traceback" not in strict.stderr, strict.stderr
