"""The parts behind DragKneeIndex: vector texts, the context fetch, the change check, the collection check,
and the eval harness taking its datasets and provenance from the caller (real builder, real summarisers)."""

from __future__ import annotations

from typing import List, Sequence

import pytest

from drag_knee_retriever.build._builder import build_document_trees
from drag_knee_retriever.search._compat import check_collection_compatible, stored_language
from drag_knee_retriever.config import BuildConfig, LeafConfig
from drag_knee_retriever.search._context import context_ids, live_with_text
from drag_knee_retriever.errors import ModelMismatchError
from drag_knee_retriever.build._ingest import IngestReport, Ingestor
from drag_knee_retriever.model._nodes import Document
from drag_knee_retriever.store import RankedHit
from drag_knee_retriever.build._summarize import ExtractiveSummarizer, Summarizer, Summary, SummaryRequest
from drag_knee_retriever.build._vectorize import Vectorizer

TEXT = [
    "Coronaviruses bind the ACE2 receptor. The spike protein mediates entry into host cells.",
    "Masks reduce droplet transmission. Distancing lowers the reproduction number of the virus.",
    "Vaccines train the immune system. Antibodies neutralise the spike protein of the virus.",
    "Ventilation dilutes aerosols indoors. Open windows cut the concentration of particles.",
]


class KeywordSummarizer:
    """A user summariser written before ``keywords_from_text`` existed: it does not say."""

    identity = "kw-test"

    def describe(self, requests: Sequence[SummaryRequest]) -> List[Summary]:
        return [Summary(text=None if r.is_leaf else "summary " + r.node_id, keywords=("synonymword",))
                for r in requests]


def _nodes(summarizer, config=None):
    config = config or BuildConfig(branching=2, leaves=LeafConfig(min_chars=10))
    tree = build_document_trees([Document(id="d1", pages=TEXT)], config, summarizer)[0]
    return config, tree.nodes


def test_auto_sparse_text_asks_the_summariser_not_its_type():
    config, nodes = _nodes(KeywordSummarizer())
    assert isinstance(KeywordSummarizer(), Summarizer)  # still a Summarizer without the new attribute
    vec = Vectorizer(config, encoder=None, summarizer=KeywordSummarizer())
    texts = vec.sparse_texts(nodes, [vec.dense_text(n) for n in nodes])
    assert all(t.endswith("\nsynonymword") for t in texts)  # an LLM-like summariser: text + keywords

    extractive = ExtractiveSummarizer(config)
    config, nodes = _nodes(extractive, config)
    vec = Vectorizer(config, encoder=None, summarizer=extractive)
    texts = vec.sparse_texts(nodes, [vec.dense_text(n) for n in nodes])
    leaf = next(i for i, n in enumerate(nodes) if n.is_leaf)
    assert nodes[leaf].keywords and texts[leaf] == vec.dense_text(nodes[leaf])  # keywords left out

    class SaysSo(KeywordSummarizer):
        keywords_from_text = True

    vec = Vectorizer(config, encoder=None, summarizer=SaysSo())
    assert vec.sparse_texts(nodes[:1], ["x"]) == ["x"]


def test_inner_span_text_joins_the_children_with_titles():
    config, nodes = _nodes(ExtractiveSummarizer())
    vec = Vectorizer(config, encoder=None, summarizer=ExtractiveSummarizer(config))
    texts = dict(zip((n.id for n in nodes), vec.sparse_texts(nodes, [vec.dense_text(n) for n in nodes])))
    root = nodes[-1]
    for leaf in (n for n in nodes if n.is_leaf):
        assert leaf.text in texts[root.id]


def test_context_keeps_live_hits_with_span_text_and_drops_a_replaced_document():
    _, nodes = _nodes(ExtractiveSummarizer())
    root = nodes[-1]
    ids = context_ids([root])
    assert root.id in ids and all(n.id in ids for n in nodes if n.is_leaf)
    fetched = [n for n in nodes if n.id in ids]
    kept, texts = live_with_text([RankedHit(node=root, score=1.0)], fetched)
    assert kept[0].node is root and texts[root.id] == "\n\n".join(n.text for n in nodes if n.is_leaf)

    from dataclasses import replace

    newer = [replace(n, doc_hash="other") if n.level == 0 else n for n in fetched]
    assert live_with_text([RankedHit(node=root, score=1.0)], newer) == ([], {})


def test_one_change_check_for_documents_and_nodes():
    report = IngestReport()
    existing = {"a": "h1", "b": "h2", "c": ""}
    assert Ingestor.triage("a", "h1", existing, report) is False
    assert Ingestor.triage("b", "new", existing, report) is True
    assert Ingestor.triage("z", "h9", existing, report) is True
    assert Ingestor.triage("c", "", existing, report) is True  # no hash: never taken as unchanged
    assert (report.unchanged, report.replaced, report.added) == (["a"], ["b", "c"], ["z"])


def test_collection_check_names_the_fix():
    info = {"model_id": "m1", "dense_size": 384, "sparse_model": "Qdrant/bm25:russian"}
    assert stored_language(info) == "russian" and stored_language({}) is None
    check_collection_compatible({}, collection="c", model_id="x", dense_size=1, sparse_model="y")
    check_collection_compatible(info, collection="c", model_id="m1", dense_size=384, sparse_model="Qdrant/bm25:russian")
    with pytest.raises(ModelMismatchError, match="language='russian'"):
        check_collection_compatible(info, collection="c", model_id="m1", dense_size=384,
                                    sparse_model="Qdrant/bm25:english")
    with pytest.raises(ModelMismatchError, match="384 dims"):
        check_collection_compatible(info, collection="c", model_id="m2", dense_size=768,
                                    sparse_model="Qdrant/bm25:russian")


def test_eval_takes_datasets_and_provenance_from_the_caller(monkeypatch, tmp_path):
    from benchmarks.datasets import DatasetError, datasets_root
    from drag_knee_retriever.eval.runner import code_version

    monkeypatch.delenv("DRAG_KNEE_DATASETS", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DatasetError, match="DRAG_KNEE_DATASETS"):
        datasets_root()
    monkeypatch.setenv("DRAG_KNEE_DATASETS", str(tmp_path))
    assert datasets_root() == tmp_path

    monkeypatch.delenv("DRAG_KNEE_CODE_COMMIT", raising=False)
    assert code_version() == {}  # no git run by the package
    monkeypatch.setenv("DRAG_KNEE_CODE_COMMIT", "abc123")
    monkeypatch.setenv("DRAG_KNEE_CODE_CHANGED", "a.py b.py")
    assert code_version() == {"commit": "abc123", "changed_files": ["a.py", "b.py"]}
