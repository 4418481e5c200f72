"""Your own data and connections: ``drag-knee eval --corpus --questions`` on a small corpus,
``drag-knee --version``, ``DragKneeIndex(client=...)`` with a user's QdrantClient, and a collection
this library did not build being refused with a message that says so. Real offline model, real
Qdrant (local mode), the real command as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from drag_knee_retriever import ConfigError, Document, DragKneeIndex, __version__, StoreConfig

BEES = ("Varroa mites spread deformed wing virus through honeybee colonies, and untreated colonies "
        "with heavy mite loads rarely survive a second winter in temperate climates.\n\n"
        "Beekeepers first reported colony collapse in large numbers in the winter of 2006, when hives "
        "were found abandoned by their workers with the queen and the stores left behind.\n")
LAVA = ("Basaltic lava is hot and runny and builds broad shield volcanoes such as those of Hawaii, "
        "whose gentle slopes come from flow after flow of fluid rock.\n\n"
        "Andesitic magma is viscous and traps gas, so stratovolcanoes erupt explosively and build "
        "steep cones of ash and lava layers.\n")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_DATA_HOME=str(cwd / "xdg"), COLUMNS="200")
    proc = subprocess.run([sys.executable, "-m", "drag_knee_retriever.cli", *args], capture_output=True, text=True,
                          timeout=600, env=env, cwd=cwd)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_version(tmp_path):
    proc = _cli("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == f"drag-knee-retriever {__version__}"


def test_eval_on_your_own_corpus_and_questions(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "bees.md").write_text(BEES)
    (corpus / "lava.txt").write_text(LAVA)
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(q) for q in [
        {"question": "When was colony collapse first reported?", "gold": [{"text": "in the winter of 2006"}]},
        {"question": "Which volcanoes erupt explosively?", "gold": [{"doc": "lava.txt", "text": "stratovolcanoes erupt explosively"}]},
        {"question": "What do varroa mites spread?", "gold": ["bees.md"]},
    ]) + "\n")
    out = tmp_path / "run"
    proc = _cli("eval", "--corpus", str(corpus), "--questions", str(questions), "--out", str(out),
                "--json", "--no-plot", "--quiet", "--method", "flat_hybrid_k*", "--method", "drag_knee",
                "--automerging-k", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["dataset"] == "corpus"
    summary = report["summary"]
    assert {"flat_hybrid_k1", "drag_knee"} <= set(summary)
    for row in summary.values():
        assert 0.0 <= row["recall"] <= 1.0 and row["tokens"] > 0
    assert summary["flat_hybrid_k10"]["recall"] == 1.0  # every leaf returned: every gold covered
    assert (out / "table.md").is_file()
    bad = _cli("eval", "--corpus", str(corpus), "--questions", str(tmp_path / "missing.jsonl"), "--out", str(out),
               cwd=tmp_path)
    assert bad.returncode != 0 and "missing.jsonl" in bad.stderr
    neither = _cli("eval", "--out", str(out), cwd=tmp_path)
    assert neither.returncode != 0 and "--corpus" in neither.stderr


def test_a_users_qdrant_client(encoder, tmp_path):
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(tmp_path / "q"))
    index = DragKneeIndex(client, embedding=encoder, store=StoreConfig(collection="mine"))
    index.add_documents([Document(id="bees", text=BEES)])
    assert index.search("what do varroa mites spread?").nodes[0].node.doc_id == "bees"
    assert client.collection_exists("mine")  # the user's own client holds the collection
    # The spellings of the release before: still refused as they were (each also warns).
    with pytest.raises(ConfigError, match="not also client=, url="):
        DragKneeIndex(client=client, url="http://localhost:6333", embedding=encoder)
    with pytest.raises(ConfigError, match="client= takes a qdrant_client.QdrantClient"):
        DragKneeIndex(client="http://localhost:6333", embedding=encoder)


def test_a_collection_not_built_by_this_library_is_refused(encoder, tmp_path):
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(tmp_path / "q"))
    # What langchain-qdrant makes: one unnamed dense vector, payload page_content + metadata.
    client.create_collection("theirs", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE))
    client.upsert("theirs", [models.PointStruct(id=1, vector=[0.1] * 384,
                                                payload={"page_content": "x", "metadata": {}})])
    with pytest.raises(Exception) as err:
        DragKneeIndex(client, embedding=encoder, store=StoreConfig(collection="theirs"))
    message = str(err.value)
    assert "theirs" in message and "not" in message and "drag-knee" in message.lower().replace("_", "-")
