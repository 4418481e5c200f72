"""`drag-knee eval` on QMSum (the benchmark loader's dataset handed to the wheel's command, as
``benchmarks/eval.py --dataset qmsum`` does) end to end on one real meeting: per-question document filters,
a passage build variant measured against flat hybrid on its own leaves, and the budget figures.
Real model, real store; per-question output goes to a temporary folder (QMSum text stays out of git)."""

import json

import pytest

pytest.importorskip("typer")

from benchmarks.datasets import DatasetError, datasets_root, load_dataset  # noqa: E402

try:
    if not (datasets_root() / "qmsum" / "load.py").is_file():
        raise DatasetError("no qmsum")
except DatasetError:  # pragma: no cover
    pytest.skip("qmsum not in the shared datasets folder", allow_module_level=True)


def test_qmsum_single_document_run_with_a_passage_variant(tmp_path, model_path):
    from typer.testing import CliRunner

    from drag_knee_retriever.eval.cli import app

    dataset = load_dataset("qmsum", limit_docs=1, limit_questions=4)
    result = CliRunner().invoke(app, [
        "--out", str(tmp_path / "q"),
        "--json", "--quiet", "--no-plot", "--model-path", model_path, "--build-variant", "leaves.passage_words=60,leaves.split_pages_over=none",
        "-m", "flat_hybrid_*", "-m", "drag_knee*",
    ], obj={"dataset": dataset})
    assert result.exit_code == 0, (result.output, result.exception)
    payload = json.loads(result.stdout)
    headline, meta = payload["headline"], payload["meta"]
    assert meta["per_question_filters"] is True and meta["query_encodings"] == 4
    assert isinstance(headline["default_recall_gain_at_equal_tokens"], float)
    assert "drag_knee[leaves.passage_words=60,leaves.split_pages_over=none]" in headline["gains_on_own_index"]
    assert "flat_hybrid_k5[leaves.passage_words=60,leaves.split_pages_over=none]" in payload["summary"]
    variant = meta["indexes"]["leaves.passage_words=60,leaves.split_pages_over=none"]["stats"]
    assert variant["leaves"] > meta["dataset"]["leaves"], "blocks over 60 words became passages"
    assert headline["budget"]["drag_knee"]["all_gold_multi"]["questions"] >= 1


def test_shared_store_flag_index_folder_reuse_and_word_budgets(tmp_path, model_path):
    """The shared store (``shared_store=True``, benchmarks/eval.py's `--shared-store`) drops the per-question filter; `--index-dir`
    keeps the index, and a second run reopens it without building and gives the same figures;
    flat hybrid is read within each word budget too."""
    from typer.testing import CliRunner

    from drag_knee_retriever.eval.cli import app

    dataset = load_dataset("qmsum", limit_docs=1, limit_questions=3, shared_store=True)

    def run(out):
        result = CliRunner().invoke(app, [
            "--out", str(tmp_path / out), "--json", "--quiet", "--no-plot", "--model-path", model_path,
            "--index-dir", str(tmp_path / "indexes"), "-m", "flat_hybrid_*", "-m", "drag_knee",
        ], obj={"dataset": dataset})
        assert result.exit_code == 0, (result.output, result.exception)
        return json.loads(result.stdout)

    first, second = run("a"), run("b")
    assert first["dataset"] == "qmsum-shared" and "per_question_filters" not in first["meta"]
    assert first["meta"]["shared_store"] is True
    assert first["meta"]["indexes"]["default"]["nodes_written"] > 0
    assert second["meta"]["indexes"]["default"]["nodes_written"] == 0, "the kept index was rebuilt"
    assert second["summary"]["drag_knee"] == {**first["summary"]["drag_knee"],
                                              "latency_ms": second["summary"]["drag_knee"]["latency_ms"]}
    budgets = first["headline"]["word_budgets"]
    assert set(budgets) == {"500", "1000", "1500", "2000"}
    assert budgets["500"]["flat_hybrid_w500"]["tokens"] <= 500
    assert first["summary"]["flat_hybrid_w1000"]["right_document"] == 1.0
