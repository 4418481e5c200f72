"""Shared fixtures: the real offline model, real datasets, and indexes built once per session."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DRAG_KNEE_SHARED", REPO.parent / "shared"))
MODEL_DIR = SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"
DATASETS = SHARED / "datasets"

# Tests load the offline model from shared/ (no hub): every index and subprocess sees this.
if MODEL_DIR.is_dir():
    os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(MODEL_DIR))
# The eval harness reads datasets only from an argument or this variable (it guesses no folder).
if DATASETS.is_dir():
    os.environ.setdefault("DRAG_KNEE_DATASETS", str(DATASETS))


# The one engine switch: tests (and fixtures) that take ``engine`` run on every embedded engine.
from support.engines import engine  # noqa: E402,F401  (a fixture, registered by this import)


@pytest.fixture(scope="session")
def model_path() -> str:
    if not MODEL_DIR.is_dir():
        pytest.fail(f"offline model folder missing: {MODEL_DIR} (see shared/models/README.md)")
    return str(MODEL_DIR)


@pytest.fixture(scope="session")
def encoder(model_path):
    """One real encoder (dense MiniLM + BM25) for the whole session."""
    from drag_knee_retriever.embeddings import Encoder
    from drag_knee_retriever.config import EmbeddingConfig

    return Encoder(EmbeddingConfig(model_path=model_path))


@pytest.fixture(scope="session")
def passage_cache(encoder):
    """The session encoder, remembering every passage's dense and BM25 vectors (queries are encoded
    each time): the suite builds COVID-QA's papers into a dozen indexes in as many files, and the
    model reads each text once for all of them. The vectors are the model's own (a text encoded
    in a later index gets the vector its first encoding gave)."""
    from support import CachingEncoder

    return CachingEncoder(encoder, cache_queries=False)


def load_covid(limit_docs: int = 3, questions_per_doc: int = 4) -> Tuple[list, List[Tuple[str, str]]]:
    """The first papers of COVID-QA as page-per-paragraph Documents, with (question, doc_id) pairs."""
    from drag_knee_retriever import Document

    data = json.loads((DATASETS / "covidqa_200423" / "raw" / "200423_covidQA.json").read_text())
    docs, questions = [], []
    for article in data["data"][:limit_docs]:
        paragraph = article["paragraphs"][0]
        doc_id = f"covid-{paragraph['document_id']}"
        lines = [line for line in paragraph["context"].split("\n") if line.strip()]
        docs.append(Document(id=doc_id, pages=lines, metadata={"dataset": "covidqa", "lang": "en"}))
        questions += [(qa["question"], doc_id) for qa in paragraph["qas"][:questions_per_doc]]
    return docs, questions


@pytest.fixture(scope="session")
def covid_corpus():
    """(documents, [(question, doc_id)]) for three COVID-QA papers."""
    return load_covid()


@pytest.fixture(scope="session")
def make_index(passage_cache, tmp_path_factory) -> Iterator[Callable[..., object]]:
    """Factory for DragKneeIndex objects sharing the session encoder; all closed at the end.

    A test helper's shorthand: ``collection`` / ``engine`` become the index's ``StoreConfig``, ``store`` (a
    NodeStore) its location, ``encoder`` its ``embedding`` (by default the session's ``passage_cache``);
    everything else goes to ``DragKneeIndex``.
    """
    from drag_knee_retriever import DragKneeIndex, StoreConfig

    made = []

    def factory(*, collection="drag_knee", engine="auto", encoder=passage_cache, store=None, **kwargs):
        index = DragKneeIndex(store if store is not None else ":memory:", embedding=encoder,
                              store=StoreConfig(collection=collection, engine=engine), **kwargs)
        made.append(index)
        return index

    yield factory
    for index in made:
        try:
            index.close()
        except Exception:
            pass


@pytest.fixture(scope="session")
def covid_index(make_index, covid_corpus):
    """Three COVID-QA papers indexed once for the session (read-only: do not add or delete)."""
    docs, _ = covid_corpus
    index = make_index(collection="covid_shared")
    index.add_documents(docs)
    return index
