"""The `drag-knee` command, driven as a subprocess on the real offline model and a real embedded Qdrant.

One module-scoped ingest of a temp folder (txt, md, a PDF made here, and bad files) feeds the
search / docs / stats tests; every bad-input case checks its exit code, its one-line message on
stderr and that no traceback leaks. Each subprocess loads the model, so the runs are few.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from drag_knee_retriever.sample import text_pdf_bytes, write_sample_files

MODEL_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8"
SCRIPT = Path(sys.executable).with_name("drag-knee")
TIMEOUT = 240


def _engine() -> str:
    """The engine the CLI is run with: its default (auto); the engine fixture covers both engines elsewhere."""
    return "auto"


def _env(tmp_root: Path, **extra: str) -> dict:
    env = dict(os.environ)
    env.pop("DRAG_KNEE_INDEX", None)
    env.pop("DRAG_KNEE_DEBUG", None)
    env["DRAG_KNEE_MODEL_PATH"] = os.environ.get("DRAG_KNEE_MODEL_PATH", str(MODEL_DIR))
    # The per-user default index goes under a temp folder, never into the real user's data dir.
    env["XDG_DATA_HOME"] = str(tmp_root / "xdg-data")
    env["COLUMNS"] = "200"  # wide, so result lines are not wrapped in the middle of an id
    env["DRAG_KNEE_ENGINE"] = _engine()
    env.update(extra)
    return env


def _command() -> list:
    if SCRIPT.exists():
        return [str(SCRIPT)]
    return [sys.executable, "-m", "drag_knee_retriever.cli"]


def run(tmp_root: Path, *args: str, input: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        _command() + [str(a) for a in args],
        input=input,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env or _env(tmp_root),
        cwd=tmp_root,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def error_line(proc: subprocess.CompletedProcess) -> str:
    """The single error line on stderr (other stderr lines are progress or skipped-file notes)."""
    lines = [line for line in proc.stderr.splitlines() if line.startswith("drag-knee: error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cli")


@pytest.fixture(scope="module")
def corpus(workdir) -> Path:
    root = workdir / "corpus"
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "kayak.md").write_text(
        "# Sea Kayaking\n\nA sea kayak is long and narrow so that it tracks straight across open water.\n\n"
        "## Rolling\n\nThe Eskimo roll rights a capsized kayak without leaving the cockpit: a hip flick "
        "and a sweep of the paddle bring the boat upright again.\n\n"
        "## Tides\n\nPaddlers plan crossings around slack water, when the tidal stream is weakest.",
        encoding="utf-8",
    )
    (root / "orchard.txt").write_text(
        "Apple trees are pruned in winter while they are dormant, removing crossing branches so light "
        "reaches the centre of the tree.\n\nGrafting joins a scion of a chosen variety onto a rootstock, "
        "which decides how large the tree will grow.",
        encoding="utf-8",
    )
    (root / "telescope.pdf").write_bytes(
        text_pdf_bytes(
            [
                "Collimation aligns the mirrors of a reflecting telescope so that stars focus to sharp points.",
                "Eyepieces set the magnification: the focal length of the telescope divided by that of the eyepiece.",
                "Dark adaptation takes twenty minutes; a red torch keeps the eyes adapted while reading charts.",
            ],
            title="Telescope Notes",
        )
    )
    (root / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")  # ignored in a folder
    (root / "scan.pdf").write_bytes(text_pdf_bytes(["", ""]))  # image-only: reported, not fatal
    (root / "drafts").mkdir()
    (root / "drafts" / "wip.md").write_text("# Draft\n\nnot ready", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def index_dir(workdir, corpus) -> Path:
    """The corpus ingested once (plus a document from stdin) by `drag-knee ingest`."""
    target = workdir / "index"
    proc = run(
        workdir, "ingest", corpus, "-", "--index", target, "--exclude", "drafts/*", "--stdin-name", "piped.md",
        input="# Piped Notes\n\nBread dough rises because yeast ferments the sugars and releases carbon dioxide.",
    )
    assert proc.returncode == 0, proc.stderr
    assert "Ingested 4 document(s)" in proc.stdout
    assert "4 added, 0 replaced, 0 unchanged" in proc.stdout
    assert "scan.pdf: has no extractable text" in proc.stderr
    assert "1 file(s) skipped" in proc.stdout
    for phase in ("reading", "building", "embedding", "writing"):
        assert f"{phase}:" in proc.stderr
    # Not a terminal: plain lines with the measured throughput and the time left.
    assert "pages: 0/" in proc.stderr and " pages/s" in proc.stderr
    assert "pages at " in proc.stdout and " pages/s)" in proc.stdout
    return target


def test_ingest_again_reads_no_unchanged_file(workdir, corpus, index_dir):
    """A re-run on the same folder: every file's size and mtime match the stored stamp, so none is
    read (the image-only scan has no document, so it is read and skipped again)."""
    proc = run(workdir, "ingest", corpus, "--index", index_dir, "--exclude", "drafts/*")
    assert proc.returncode == 0, proc.stderr
    assert "0 added, 0 replaced, 3 unchanged" in proc.stdout and "0 nodes written" in proc.stdout
    assert "reading: 1/1" in proc.stderr  # only scan.pdf was opened


def test_search_prints_document_span_score_and_snippet(workdir, index_dir):
    proc = run(workdir, "search", "How do I right a capsized kayak?", "--index", index_dir)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("1. guides/kayak.md")
    assert "score" in first
    assert "hip flick" in proc.stdout
    assert "method knee" in proc.stdout
    assert "suppressed by" not in proc.stdout  # no trace without --trace


def test_search_trace_draws_the_walk(workdir, index_dir):
    # A low sensitivity keeps more than the plain knee, so the document root survives the cut
    # and is then suppressed by its better page.
    proc = run(
        workdir, "search", "telescope eyepiece magnification", "--index", index_dir, "--trace",
        "--method", "sensitive_knee", "--sensitivity", "0.3",
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "1. telescope.pdf  p.2" in out
    assert "step 0 · roots · level 0" in out
    assert "step 1 · beam · level 1" in out
    assert "knee: the list is cut here" in out
    assert "✔" in out and "kept" in out and "cut" in out
    assert "✘" in out and "telescope.pdf pp.1-3" in out and "suppressed by telescope.pdf p.2" in out


def test_search_json_is_the_search_result(workdir, index_dir):
    proc = run(
        workdir, "search", "pruning apple trees in winter", "--index", index_dir, "--json",
        "--method", "branch", "--filter", "kind=text", "--plot", workdir / "walk.svg",
    )
    assert proc.returncode == 0, proc.stderr
    assert "<svg" in (workdir / "walk.svg").read_text()  # the knee plot of every step
    data = json.loads(proc.stdout)  # stdout holds only the JSON; messages went to stderr
    assert data["method"] == "branch"
    assert data["query"] == "pruning apple trees in winter"
    assert data["nodes"] and all(n["doc_id"] == "orchard.txt" for n in data["nodes"])
    assert data["nodes"][0]["metadata"]["kind"] == "text"
    assert data["trace"]["steps"][0]["kind"] == "roots"


def test_search_max_words_and_max_tokens_keep_the_results_within_their_budget(workdir, index_dir):
    proc = run(workdir, "search", "How do I right a capsized kayak?", "--index", index_dir, "--json",
               "--max-words", "12")
    assert proc.returncode == 0, proc.stderr
    nodes = json.loads(proc.stdout)["nodes"]
    assert nodes and sum(len(n["text"].split()) for n in nodes) <= 12
    tokens = run(workdir, "search", "How do I right a capsized kayak?", "--index", index_dir, "--json",
                 "--max-tokens", "12")
    assert tokens.returncode == 0, tokens.stderr
    from drag_knee_retriever.search._budget import token_unit
    from tokenizers import Tokenizer
    import drag_knee_retriever
    unit = token_unit(Tokenizer.from_file(str(Path(drag_knee_retriever.__file__).parent / "data" / "minilm" / "tokenizer.json")))
    assert sum(unit.count(n["text"]) for n in json.loads(tokens.stdout)["nodes"]) <= 12
    for option in ("--max-tokens", "--max-words"):
        for bad in ("0", "-5"):
            refused = run(workdir, "search", "kayak", "--index", index_dir, option, bad)
            assert refused.returncode == 2 and option in error_line(refused)
    both = run(workdir, "search", "kayak", "--index", index_dir, "--max-words", "5", "--max-tokens", "5")
    assert both.returncode == 2 and "give one" in error_line(both)


def test_search_top_k_and_a_json_filter_in_the_python_dialect(workdir, index_dir):
    """Issue 27 item 7: -k/--top-k caps the results; --filter takes a JSON object with ranges and
    $or, the same dialect as Python; --score-threshold is on the [0, 1] scale."""
    wide = json.loads(run(workdir, "search", "trees kayak telescope bread", "--index", index_dir, "--json",
                          "--method", "fixed", "--beam-width", "4").stdout)
    assert len(wide["nodes"]) > 1 and all(0.0 <= n["score"] <= 1.0 for n in wide["nodes"])
    capped = run(workdir, "search", "trees kayak telescope bread", "--index", index_dir, "--json",
                 "--method", "fixed", "--beam-width", "4", "-k", "1")
    assert capped.returncode == 0, capped.stderr
    assert [n["node_id"] for n in json.loads(capped.stdout)["nodes"]] == [wide["nodes"][0]["node_id"]]
    either = run(workdir, "search", "trees kayak telescope bread", "--index", index_dir, "--json",
                 "--filter", '{"$or": [{"kind": "text"}, {"doc_id": {"$in": ["telescope.pdf"]}}]}')
    assert either.returncode == 0, either.stderr
    docs = {n["doc_id"] for n in json.loads(either.stdout)["nodes"]}
    assert docs and docs <= {"orchard.txt", "telescope.pdf"}
    both = run(workdir, "search", "telescope", "--index", index_dir, "--json", "--filter", "kind=pdf",
               "--filter", '{"pages": {"$gte": 2}}')
    assert both.returncode == 0 and all(n["doc_id"] == "telescope.pdf" for n in json.loads(both.stdout)["nodes"])
    high = json.loads(run(workdir, "search", "telescope eyepiece magnification", "--index", index_dir, "--json",
                          "--score-threshold", "0.99").stdout)
    assert high["nodes"] == []
    bad = run(workdir, "search", "x", "--index", index_dir, "--filter", '{"kind": ')
    assert bad.returncode == 2 and "not valid JSON" in error_line(bad)


def test_docs_list_delete_and_stats(workdir, index_dir):
    listed = run(workdir, "docs", "list", "--index", index_dir, "--json")
    assert listed.returncode == 0, listed.stderr
    ids = [d["doc_id"] for d in json.loads(listed.stdout)]
    assert ids == ["guides/kayak.md", "orchard.txt", "piped.md", "telescope.pdf"]

    deleted = run(workdir, "docs", "delete", "piped.md", "--index", index_dir)
    assert deleted.returncode == 0, deleted.stderr
    assert "Deleted piped.md" in deleted.stdout

    again = run(workdir, "docs", "delete", "piped.md", "--index", index_dir)
    assert again.returncode == 1
    assert "No document 'piped.md'" in error_line(again)

    stats = run(workdir, "stats", "--index", index_dir, "--json")
    assert stats.returncode == 0, stats.stderr
    data = json.loads(stats.stdout)
    assert data["documents"] == 3
    assert data["nodes"] > data["leaves"] >= 3 + 3  # telescope pages + kayak sections + orchard paragraphs

    table = run(workdir, "docs", "list", "--index", index_dir)
    assert "Telescope Notes" in table.stdout and "piped.md" not in table.stdout


def test_demo_runs_offline_on_the_built_in_sample(workdir):
    proc = run(workdir, "demo")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "indexing 5 sample documents in memory" in out
    assert "query 1: What should a keeper do when fog rolls in?" in out
    assert "1. lighthouse-manual.pdf  p.2" in out  # the narrow question: one page
    assert "query 2: What does a beekeeper do through the year?" in out
    # The broad one: the walk keeps the whole document, the focus step the paragraph that answers.
    assert "1. beekeeping.md" in out and "the walk chose beekeeping.md ¶0-6" in out and "(whole span)" in out
    assert out.count("step 0 · roots") == 2  # both traces drawn
    assert not (workdir / "xdg-data" / "drag-knee-retriever").exists()  # nothing written to disk


# -- bad input: one line on stderr, non-zero exit, no traceback ---------------------------------


def test_missing_path(workdir):
    proc = run(workdir, "ingest", "no/such/folder", "--index", workdir / "unused")
    assert proc.returncode == 1
    assert "Path 'no/such/folder' does not exist" in error_line(proc)
    assert not (workdir / "unused").exists()


def test_binary_file(workdir):
    (workdir / "blob.txt").write_bytes(b"\x00\x01\x02\x03" * 64)
    proc = run(workdir, "ingest", "blob.txt", "--index", workdir / "unused")
    assert proc.returncode == 1
    assert "blob.txt: looks binary" in proc.stderr
    assert "Nothing to ingest: all 1 file(s) were skipped" in error_line(proc)


def test_empty_folder(workdir):
    (workdir / "empty").mkdir()
    (workdir / "empty" / "picture.jpg").write_bytes(b"\xff\xd8\xff")
    proc = run(workdir, "ingest", "empty", "--index", workdir / "unused")
    assert proc.returncode == 1
    line = error_line(proc)
    assert "no .txt, .md or .pdf files found in empty" in line and "--include" in line


def test_search_before_any_ingest_uses_the_default_folder(workdir):
    proc = run(workdir, "search", "anything")
    assert proc.returncode == 1
    line = error_line(proc)
    assert "No index at" in line and str(workdir / "xdg-data" / "drag-knee-retriever" / "index") in line
    assert "drag-knee ingest" in line
    env_proc = run(workdir, "docs", "list", env=_env(workdir, DRAG_KNEE_INDEX=str(workdir / "from-env")))
    assert env_proc.returncode == 1 and str(workdir / "from-env") in error_line(env_proc)


def test_corrupt_index_folder(workdir):
    broken = workdir / "broken"
    (broken / "drag_knee").mkdir(parents=True)
    (broken / "drag_knee" / "edge_config.json").write_text("{ not json")
    (broken / "collection" / "drag_knee").mkdir(parents=True)
    (broken / "meta.json").write_text("{ not json")
    proc = run(workdir, "search", "anything", "--index", broken)
    assert proc.returncode == 1
    line = error_line(proc)
    assert "broken" in line and ("damaged" in line or "failed to load" in line or "drag-knee" in line)


def test_locked_index_folder(workdir, index_dir):
    # Another process holds the folder: the CLI says so instead of failing inside the engine.
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, time\n"
            "from drag_knee_retriever import DragKneeIndex, StoreConfig\n"
            f"index = DragKneeIndex({str(index_dir)!r}, store=StoreConfig(engine={_engine()!r}))\n"
            "print('open', flush=True)\n"
            "sys.stdin.read()\n"
        )],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env(workdir),
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        proc = run(workdir, "search", "kayak", "--index", index_dir)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert proc.returncode == 1
    line = error_line(proc)
    assert "open in another process" in line


def test_usage_errors_are_one_line_with_exit_code_2(workdir, index_dir):
    bad_filter = run(workdir, "search", "kayak", "--index", index_dir, "--filter", "kind")
    assert bad_filter.returncode == 2
    assert "is not KEY=VALUE" in error_line(bad_filter)
    bad_method = run(workdir, "search", "kayak", "--method", "sideways")
    assert bad_method.returncode == 2
    assert "--method" in error_line(bad_method) and "sideways" in error_line(bad_method)
    both = run(workdir, "search", "kayak", "--index", index_dir, "--url", "http://localhost:6333")
    assert both.returncode == 2 and "not both" in error_line(both)


def test_ctrl_c_during_ingest_keeps_the_index_usable(workdir):
    source = workdir / "many"
    for number in range(3):
        write_sample_files(source / f"set{number}")
    target = workdir / "interrupted"
    proc = subprocess.Popen(
        _command() + ["ingest", str(source), "--index", str(target)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(workdir), cwd=workdir,
        # A shell without job control starts background jobs with SIGINT ignored, and a child
        # inherits that (Python then installs no KeyboardInterrupt handler): give the CLI the
        # default disposition a user's terminal gives it, however pytest was launched.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("building:"):  # the trees are built; embedding (seconds of work) starts now
            proc.send_signal(signal.SIGINT)
            break
    out, rest = proc.communicate(timeout=TIMEOUT)
    stderr = "".join(seen) + rest
    assert "Traceback" not in stderr
    assert proc.returncode == 130, stderr
    assert "Interrupted" in stderr and "run the same command again" in stderr

    rerun = run(workdir, "ingest", source, "--index", target)
    assert rerun.returncode == 0, rerun.stderr
    assert "Ingested 15 document(s)" in rerun.stdout
    listed = run(workdir, "docs", "list", "--index", target, "--json")
    assert len(json.loads(listed.stdout)) == 15


def test_eval_is_reachable_from_the_cli(workdir):
    proc = run(workdir, "eval", "--help")
    if proc.returncode == 1 and "not available" in proc.stderr:
        pytest.skip("drag_knee_retriever.eval.cli is not present in this checkout")
    assert proc.returncode == 0, proc.stderr
    assert "Usage: drag-knee eval" in proc.stdout


# -- in-process checks of the pieces the commands use --------------------------------------------


def test_filter_arguments_are_typed_and_repeated_keys_mean_any_of():
    from drag_knee_retriever.cli import CliError, parse_filter_args

    assert parse_filter_args([]) is None
    assert parse_filter_args(["kind=pdf", "kind=text", "level=1", "is_leaf=true", "year=2021", "doc_id=2021"]) == {
        "kind": ["pdf", "text"], "level": 1, "is_leaf": True, "year": 2021, "doc_id": "2021",
    }
    assert parse_filter_args(["title=a=b"]) == {"title": "a=b"}
    with pytest.raises(CliError, match="KEY=VALUE"):
        parse_filter_args(["=x"])


def test_default_index_folder_follows_the_platform(monkeypatch, tmp_path):
    from drag_knee_retriever.cli import default_index_dir

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert default_index_dir() == tmp_path / "drag-knee-retriever" / "index"
    assert default_index_dir().name == "index"


def test_ingest_splits_long_pdf_pages_unless_told_not_to(workdir):
    long_page = " ".join(f"Lighthouse keepers trimmed wick number {i} every night." for i in range(40))  # 280 words
    folder = workdir / "long-pdf"
    folder.mkdir()
    (folder / "keepers.pdf").write_bytes(text_pdf_bytes(["A short cover page.", long_page]))
    leaves = {}
    for label, extra in (("default", ()), ("whole pages", ("--passage-words", "0"))):
        target = workdir / f"long-pdf-index-{len(leaves)}"
        proc = run(workdir, "ingest", folder, "--index", target, *extra)
        assert proc.returncode == 0, proc.stderr
        listed = run(workdir, "docs", "list", "--index", target, "--json")
        leaves[label] = json.loads(listed.stdout)[0]["leaves"]
    assert leaves == {"default": 1 + 3, "whole pages": 2}  # 280 words -> 120 + 120 + 40
    bad = run(workdir, "ingest", folder, "--index", workdir / "long-pdf-bad", "--passage-words", "5")
    assert bad.returncode != 0 and "passage_words must be an integer >= 20" in bad.stderr
