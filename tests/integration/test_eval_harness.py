"""The evaluation harness end to end on a tiny real subset: 3 COVID-QA papers, 10 questions.

Real model (offline MiniLM), real Qdrant, real LlamaIndex AutoMergingRetriever, real matplotlib.
One run through ``python benchmarks/eval.py`` (the benchmark loader, then the `drag-knee eval`
typer app of the wheel), shared by the tests of this module.
"""

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("typer")


# The embedded default engine (the engine fixture in tests/support covers both engines elsewhere).
TEST_ENGINE = "edge"
from benchmarks.datasets import DatasetError, datasets_root  # noqa: E402

try:
    datasets_root()
except DatasetError:  # pragma: no cover
    pytest.skip("shared datasets folder not found (set DRAG_KNEE_DATASETS)", allow_module_level=True)

REQUIRED_METRICS = {"recall", "token_precision", "tokens", "latency_ms"}


def benchmark_eval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "benchmarks/eval.py", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=900)


@pytest.fixture(scope="module")
def run(tmp_path_factory, model_path):
    out = tmp_path_factory.mktemp("eval") / "covid3"
    done = benchmark_eval("--dataset", "covidqa", "--out", str(out), "--limit-docs", "3", "--limit-questions", "10",
                          "--json", "--quiet", "--traces", "2", "--engine", TEST_ENGINE, "--model-path", model_path)
    assert done.returncode == 0, done.stderr
    return out, json.loads(done.stdout)


def test_json_has_summary_and_headline(run):
    _, payload = run
    summary = payload["summary"]
    for name in ("flat_dense_k1", "flat_bm25_k10", "flat_hybrid_k3", "flat_hybrid_knee", "collapsed_k5",
                 "drag_fixed_w1", "drag_fixed_w3", "drag_fixed_w5", "drag_knee", "drag_sensitive_0.5",
                 "drag_sensitive_0.85", "drag_branch", "drag_knee_fusion", "automerging_k6"):
        assert name in summary, name
        assert REQUIRED_METRICS <= set(summary[name]), name
        assert 0.0 <= summary[name]["recall"] <= 1.0
        assert summary[name]["latency_ms"] > 0
    headline = payload["headline"]
    assert isinstance(headline["knee_recall_gain_at_equal_tokens"], float)
    assert headline["knee_recall"] == summary["drag_knee"]["recall"]
    # every dataset's headline: the default method's gain at equal tokens, with its interval
    assert headline["default_method"] == "drag_knee"
    assert headline["default_recall_gain_at_equal_tokens"] == headline["knee_recall_gain_at_equal_tokens"]
    low, high = headline["default_recall_gain_ci95"]
    assert low <= headline["default_recall_gain_at_equal_tokens"] <= high
    budget = headline["budget"]["drag_knee"]
    assert budget["tokens_p90"] >= budget["tokens_p50"] > 0
    assert 0.0 <= budget["flat_recall_at_matched_budget"] <= 1.0
    assert headline["knee_recall_per_1k_tokens"] > 0 and headline["automerging_recall_per_1k_tokens"] > 0


def test_metrics_are_consistent_with_their_definitions(run):
    _, payload = run
    summary = payload["summary"]
    # Flat top-k returns exactly k leaves (the 3 papers hold far more than 10 leaves).
    for k in (1, 2, 3, 5, 10):
        assert summary[f"flat_hybrid_k{k}"]["results"] == k
    # A longer top-k never loses evidence.
    recalls = [summary[f"flat_hybrid_k{k}"]["recall"] for k in (1, 2, 3, 5, 10)]
    assert recalls == sorted(recalls)
    # On its own curve, flat hybrid's gain at equal tokens is zero.
    assert abs(summary["flat_hybrid_k3"]["recall_gain_at_equal_tokens"]) < 1e-9


def test_every_question_encoded_once_for_all_methods(run):
    _, payload = run
    assert payload["meta"]["dataset"]["questions"] == 10
    assert payload["meta"]["query_encodings"] == 10
    # the benchmark loader's options reach the report's meta, as when the wheel loaded datasets
    assert (payload["meta"]["limit_docs"], payload["meta"]["limit_questions"]) == (3, 10)
    assert (payload["meta"]["max_doc_pages"], payload["meta"]["shared_store"]) == (None, False)


def test_files_written(run):
    out, payload = run
    for name in ("table.md", "summary.json", "questions.jsonl.gz", "recall_vs_tokens.png", "traces.jsonl.gz"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert (out / "recall_vs_tokens.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (out / "table.md").read_text()
    assert "knee_recall_gain_at_equal_tokens" in table and "| **drag_knee** |" in table
    rows = [json.loads(line) for line in gzip.open(out / "questions.jsonl.gz", "rt").read().splitlines()][1:]
    assert len(rows) == 10
    assert set(rows[0]["methods"]) == set(payload["summary"])
    first = rows[0]["methods"]["drag_knee"]
    assert {"metrics", "returned"} <= set(first)
    saved = json.loads((out / "summary.json").read_text())
    assert saved["headline"]["knee_recall_gain_at_equal_tokens"] == payload["headline"]["knee_recall_gain_at_equal_tokens"]


def test_python_dash_m_entry_point_answers_help_with_the_own_data_options_only():
    done = subprocess.run([sys.executable, "-m", "drag_knee_retriever.eval", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--corpus" in done.stdout and "--questions" in done.stdout
    assert "--dataset" not in done.stdout and "--shared-store" not in done.stdout


def test_the_benchmark_entry_point_lists_its_dataset_options_and_the_eval_options():
    done = benchmark_eval("--help")
    assert done.returncode == 0, done.stderr
    for option in ("--dataset", "--limit-docs", "--max-doc-pages", "--shared-store", "--build-variant", "--json"):
        assert option in done.stdout, option
    assert "hotpotqa" in done.stdout and "qmsum" in done.stdout


def test_bad_dataset_name_is_a_clear_usage_error():
    done = benchmark_eval("--dataset", "squad", "--out", "x")
    assert done.returncode == 2
    assert "squad" in done.stderr


def test_an_option_the_dataset_does_not_take_is_refused_naming_those_that_do():
    done = benchmark_eval("--dataset", "covidqa", "--max-doc-pages", "20", "--out", "x")
    assert done.returncode == 1
    assert "covidqa takes no max_doc_pages" in done.stderr and "mmlongbench" in done.stderr


def test_the_wheel_eval_without_a_corpus_points_at_the_benchmark_script():
    from typer.testing import CliRunner

    from drag_knee_retriever.eval.cli import app

    result = CliRunner().invoke(app, ["--out", "x"])
    assert result.exit_code == 2
    assert "--corpus" in result.output and "benchmarks/eval.py" in result.output
