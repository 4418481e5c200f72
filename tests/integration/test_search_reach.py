"""Issue 40 items 1, 3, 4 on the core search and both retrievers (real model, real in-memory index).

1. A filter on a page's own metadata (or ``level`` / ``is_leaf``) returned nothing in tree search:
   the walk starts at the roots, which do not carry a page's keys. Now it reaches the pages.
3. The public score is the cosines made monotone along the ranking: never rising, in [0, 1], so a
   threshold keeps a prefix and the knee of another library runs on our results.
4. ``fill=True`` (the stores' ``k``, ``adaptive=False``) returns ``max_results`` results.
"""

from __future__ import annotations

import pytest

from drag_knee_retriever import Document

# Every search mode: the knee methods with their focus, without it, with a word budget; fixed; branch.
MODES = {
    "knee": {"method": "knee"},
    "sensitive_knee": {"method": "sensitive_knee"},
    "knee_no_focus": {"method": "knee", "focus": False},
    "budget": {"method": "knee", "max_tokens": 300},
    "fixed": {"method": "fixed"},
    "branch": {"method": "branch"},
}


@pytest.fixture(scope="module")
def paged_index(make_index, covid_corpus):
    """The three COVID-QA papers with per-page metadata (``paragraph``, ``part``), as a PDF loader's pages."""
    docs, _ = covid_corpus
    paged = [Document(id=d.id, pages=list(d.pages), metadata=dict(d.metadata),
                      page_metadata=[{"paragraph": i, "part": "intro" if i < 4 else "body"} for i in range(len(d.pages))])
             for d in docs]
    index = make_index(collection="issue40_pages")
    index.add_documents(paged)
    return index


def _questions(covid_corpus, n=3):
    return [q for q, _ in covid_corpus[1][:n]]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_filter_on_a_page_key_reaches_the_pages_in_every_mode(paged_index, covid_corpus, mode):
    for question in _questions(covid_corpus):
        for flt, holds in (({"paragraph": 3}, lambda n: n.metadata.get("paragraph") == 3),
                           ({"part": "intro", "lang": "en"}, lambda n: n.metadata.get("part") == "intro"),
                           ({"paragraph": {"$in": [2, 5]}}, lambda n: n.metadata.get("paragraph") in (2, 5))):
            assert paged_index.flat_search(question, k=3, filters=flt), flt  # the pages are there
            nodes = paged_index.search(question, filters=flt, **MODES[mode]).nodes
            assert nodes, (mode, flt)  # main: [] (no root carries a page's key)
            assert all(holds(h.node) for h in nodes), [(h.node.span, h.node.metadata) for h in nodes]


@pytest.mark.parametrize("mode", ["knee", "fixed", "branch"])
def test_filters_on_level_and_is_leaf_reach_those_nodes(paged_index, covid_corpus, mode):
    question = _questions(covid_corpus, 1)[0]
    leaves = paged_index.search(question, filters={"is_leaf": True}, **MODES[mode]).nodes
    assert leaves and all(h.node.is_leaf for h in leaves)
    second = paged_index.search(question, filters={"level": 2}, **MODES[mode]).nodes
    assert second and all(h.node.level == 2 for h in second)


def test_a_document_level_filter_keeps_the_plain_walk(paged_index, covid_corpus):
    """A key every page of a document agrees on holds on the roots: no seed, the same steps as before."""
    question = _questions(covid_corpus, 1)[0]
    doc = covid_corpus[0][0].id
    result = paged_index.search(question, filters={"doc_id": doc})
    assert result.nodes and {h.doc_id for h in result.nodes} == {doc}
    assert result.trace.steps[0].kind == "roots"


def test_a_page_filter_on_the_langchain_retriever(paged_index, covid_corpus):
    from drag_knee_retriever.integrations.langchain import DragKneeRetriever

    question = _questions(covid_corpus, 1)[0]
    docs = DragKneeRetriever(index=paged_index, filter={"paragraph": 1}).invoke(question)
    assert docs and all(d.metadata["paragraph"] == 1 for d in docs)


@pytest.mark.parametrize("mode", ["knee", "sensitive_knee", "knee_no_focus", "fixed", "branch"])
def test_fill_returns_max_results_results_in_every_mode(covid_index, covid_corpus, mode):
    for question in _questions(covid_corpus):
        capped = covid_index.search(question, max_results=6, **MODES[mode]).nodes
        filled = covid_index.search(question, max_results=6, fill=True, **MODES[mode])
        assert len(capped) <= 6 and len(filled.nodes) == 6, (len(capped), len(filled.nodes))
        # no text twice: no result lies inside another
        spans = [(h.doc_id, h.node.span.first_leaf, h.node.span.last_leaf) for h in filled.nodes]
        for i, (d, a, b) in enumerate(spans):
            assert not any(d == e and not (b < c or f < a) for j, (e, c, f) in enumerate(spans) if j != i), spans
        scores = [h.score for h in filled.nodes]
        assert scores == sorted(scores, reverse=True)


def test_k_is_a_count_with_adaptive_false_and_a_cap_by_default(covid_index, covid_corpus):
    from drag_knee_retriever.errors import ConfigError
    from drag_knee_retriever.integrations.langchain import DragKneeRetriever
    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever as LlamaRetriever

    question = _questions(covid_corpus, 1)[0]
    assert len(DragKneeRetriever(index=covid_index, k=7, adaptive=False).invoke(question)) == 7
    assert len(DragKneeRetriever(index=covid_index, k=7).invoke(question)) < 7  # the knee decides: the default
    assert len(LlamaRetriever(covid_index, similarity_top_k=7, adaptive=False).retrieve(question)) == 7
    with pytest.raises(ConfigError, match="adaptive=False returns k results: give k"):
        DragKneeRetriever(index=covid_index, adaptive=False)


@pytest.mark.parametrize("mode", sorted(MODES) + ["flat"])
def test_scores_never_rise_along_the_ranking_and_a_threshold_keeps_a_prefix(covid_index, covid_corpus, mode):
    for question in _questions(covid_corpus, 4):
        if mode == "flat":
            nodes = covid_index.flat_search(question, k=10)
        else:
            nodes = covid_index.search(question, max_results=10, fill=True, **MODES[mode]).nodes
        ranked = sorted(nodes, key=lambda h: h.rank)
        scores = [h.score for h in ranked]
        assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True), scores
        assert all(h.cosine is not None and 0.0 <= h.cosine <= 1.0 for h in nodes)
        if mode != "flat" and len(scores) > 2:
            threshold = scores[len(scores) // 2]
            kept = covid_index.search(question, max_results=10, fill=True, min_score=threshold, **MODES[mode]).nodes
            assert [h.node.id for h in kept] == [h.node.id for h in ranked][:len(kept)]
            assert len(kept) >= len(scores) // 2 + 1


def test_the_knee_of_both_frameworks_runs_on_our_own_results(covid_index, covid_corpus):
    from llama_index.core.postprocessor import SimilarityPostprocessor
    from llama_index.core.schema import QueryBundle

    from drag_knee_retriever.integrations.langchain import DragKneeRetriever, KneeDocumentCompressor
    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever as LlamaRetriever
    from drag_knee_retriever.integrations.llamaindex import KneeNodePostprocessor

    for question in _questions(covid_corpus, 4):
        nodes = LlamaRetriever(covid_index, similarity_top_k=10, adaptive=False).retrieve(question)
        kept = KneeNodePostprocessor().postprocess_nodes(nodes, query_bundle=QueryBundle(question))  # main: raised
        assert 1 <= len(kept) <= len(nodes) and [n.node.node_id for n in kept] == [n.node.node_id for n in nodes][:len(kept)]
        cutoff = nodes[2].score
        above = SimilarityPostprocessor(similarity_cutoff=cutoff).postprocess_nodes(nodes)
        assert [n.node.node_id for n in above] == [n.node.node_id for n in nodes][:len(above)] and len(above) >= 3
        docs = DragKneeRetriever(index=covid_index, k=10, adaptive=False).invoke(question)
        assert KneeDocumentCompressor().compress_documents(docs, question)
        threshold = docs[2].metadata["drag_score"]
        top = DragKneeRetriever(index=covid_index, k=10, adaptive=False, score_threshold=threshold).invoke(question)
        assert [d.page_content for d in top] == [d.page_content for d in docs][:len(top)] and len(top) >= 3
        assert all("drag_cosine" in d.metadata for d in docs)
