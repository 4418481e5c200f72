"""notebooks/quickstart.ipynb runs end to end (real model, real Qdrant, fake LLMs), so it cannot rot."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_executes(model_path, tmp_path, monkeypatch):
    # The kernel inherits this environment: the offline model, and no stray index settings.
    monkeypatch.setenv("DRAG_KNEE_MODEL_PATH", model_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # "python3" resolves to the interpreter running the tests (jupyter_client swaps a bare
    # `python` in the kernel spec for sys.executable), i.e. the project's venv.
    client = nbclient.NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=600,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()

    outputs = {}
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        text = []
        for output in cell.get("outputs", []):
            assert output.get("output_type") != "error", f"cell {number} failed: {output.get('evalue')}"
            text.append(output.get("text", ""))
            data = output.get("data", {})
            text.append(data.get("text/plain", ""))
        outputs[number] = "\n".join(text)
    everything = "\n".join(outputs.values())

    # The loaders read the sample files and reported the bad one.
    assert "lighthouse-manual.pdf" in everything and "4 pages" in everything
    assert "skipped notes.bin - looks binary" in everything
    # Ingestion, then idempotent re-ingestion.
    assert "5 added, 0 replaced, 0 unchanged" in everything
    assert "0 added, 0 replaced, 5 unchanged" in everything
    # Every method answered the narrow question with the fog page.
    for method in ("knee", "sensitive_knee", "fixed", "branch"):
        assert any(
            line.strip().startswith(method) and "lighthouse-manual.pdf p.2" in line for line in everything.splitlines()
        ), method
    # The trace, the plots, and both frameworks.
    assert "step 0 · roots" in everything and "suppressed by" in everything
    assert "image/png" in str(notebook.cells)
    assert "wrote trace.svg" in everything
    assert "Start the fog signal at once" in everything  # the fake chat model's answer
    assert "[lighthouse-manual.pdf p.2]" in everything  # the context the chain gave it
    assert "beekeeping.md" in everything  # the LlamaIndex query engine's source node
