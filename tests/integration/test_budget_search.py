"""``search(max_tokens=...)`` on a real index (real MiniLM, Qdrant Edge and local mode): the budget
holds, the text is never repeated, clusters come back whole, sync and async agree, bad values fail."""

import asyncio

import pytest

from drag_knee_retriever import BuildConfig, LeafConfig, SearchConfig
from drag_knee_retriever.search._budget import count_words
from drag_knee_retriever.errors import InvalidSettingError
from support import CountingRank

BUDGETS = [20, 150, 600, 2000]


@pytest.fixture(scope="module")
def passage_vectors(passage_cache):
    """The session encoder, remembering passage vectors: the second engine's index encodes nothing
    (nor does test_passage_index.py's index of the same passages)."""
    return passage_cache


@pytest.fixture(scope="module")
def budget_index(make_index, covid_corpus, engine, passage_vectors):
    """The session's three COVID-QA papers, lines past 40 words split into passages under a page node."""
    docs, _ = covid_corpus
    index = make_index(collection=f"covid_budget_{engine}", engine=engine, encoder=passage_vectors,
                       build=BuildConfig(leaves=LeafConfig(passage_words=40, split_pages_over=None)))
    index.add_documents(docs)
    return index


def _leaves(index, hit):
    """The (doc, leaf ordinal) units a hit's text covers."""
    return {(hit.doc_id, i) for i in range(hit.span.first_leaf, hit.span.last_leaf + 1)}


def _check(index, result, budget, pages):
    words = sum(count_words(h.text) for h in result.nodes)
    assert words <= budget, f"{words} words returned for a budget of {budget}"
    seen = set()
    for hit in result.nodes:
        covered = _leaves(index, hit)
        assert not covered & seen, f"{hit.span} repeats text another result holds"
        seen |= covered
        if hit.node.is_leaf and hit.span.first_part is not None:
            assert hit.text in pages[hit.doc_id][hit.span.first_page - 1]
        elif not hit.node.is_leaf and hit.span.first_page is not None:
            whole = " ".join(" ".join(pages[hit.doc_id][p - 1] for p in range(hit.span.first_page,
                                                                           hit.span.last_page + 1)).split())
            text = " ".join(hit.text.split())
            # whole, or (the one case a text is cut) the single best result cut to the budget
            assert text == whole or (len(result.nodes) == 1 and whole.startswith(text) and words == budget)
    return words


@pytest.mark.parametrize("budget", BUDGETS)
def test_the_budget_holds_and_nothing_is_returned_twice(budget_index, covid_corpus, budget):
    docs, questions = covid_corpus
    pages = {d.id: d.pages for d in docs}
    used = []
    for question, _doc in questions[::3]:
        result = budget_index.search(question, max_tokens=budget)
        assert result.nodes
        used.append(_check(budget_index, result, budget, pages))
    if budget >= 600:
        # a budget is filled, not only capped: the default's ~3 passages would be far below it
        assert sum(used) / len(used) > 0.8 * budget


def test_a_budget_reads_past_the_knee_and_starts_where_the_knee_does(budget_index, covid_corpus):
    question = covid_corpus[1][0][0]
    plain = budget_index.search(question)
    wide = budget_index.search(question, max_tokens=2000)
    assert sum(count_words(h.text) for h in wide.nodes) > sum(count_words(h.text) for h in plain.nodes)
    first = plain.nodes[0]
    # the best result of the knee is inside the budget's best result (itself, or its page / region)
    best = wide.nodes[0]
    assert best.doc_id == first.doc_id and best.span.contains(first.span)
    # every leaf the knee keeps is in the budget's results (the fill starts with the knee's answer)
    for hit in plain.nodes:
        if hit.node.is_leaf:
            assert any(w.doc_id == hit.doc_id and w.span.contains(hit.span) for w in wide.nodes)


def test_where_the_passages_of_a_page_cluster_the_page_comes_back_whole(budget_index, covid_corpus):
    whole_pages = 0
    for question, _ in covid_corpus[1][::2]:
        result = budget_index.search(question, max_tokens=2000)
        whole_pages += sum(1 for h in result.nodes if not h.node.is_leaf)
        # the trace says which leaves a returned page or region holds
        focus = [s for s in result.trace.steps if s.kind == "focus"][-1]
        returned = {h.node.id for h in result.nodes}
        for candidate in focus.candidates:
            if candidate.outcome == "merged":
                assert candidate.suppressed_by in returned
            elif candidate.outcome == "kept":
                assert candidate.node_id in returned
        assert focus.kept_count == len(result.nodes)
    assert whole_pages, "some page or region came back whole over six questions"


def test_a_budget_below_the_best_leaf_returns_its_first_words(budget_index, covid_corpus):
    question = covid_corpus[1][0][0]
    result = budget_index.search(question, max_tokens=5)
    assert len(result.nodes) == 1
    hit = result.nodes[0]
    assert count_words(hit.text) == 5
    whole = budget_index.search(question, max_tokens=2000).nodes
    texts = [h.text for h in whole]
    assert any(t.startswith(hit.text) or hit.text in t for t in texts)


@pytest.mark.parametrize("method", ["fixed", "branch", "sensitive_knee"])
def test_every_method_keeps_to_the_budget(budget_index, covid_corpus, method):
    docs, questions = covid_corpus
    pages = {d.id: d.pages for d in docs}
    for question, _ in questions[:3]:
        result = budget_index.search(question, method=method, max_tokens=150)
        assert result.nodes
        _check(budget_index, result, 150, pages)


def test_async_gives_the_same_results(budget_index, covid_corpus):
    for question, _ in covid_corpus[1][::4]:
        sync = budget_index.search(question, max_tokens=600)
        got = asyncio.run(budget_index.asearch(question, max_tokens=600))
        assert [(h.node.id, h.text) for h in got.nodes] == [(h.node.id, h.text) for h in sync.nodes]


def test_a_budget_costs_a_few_reads_more_and_one_query_encoding(budget_index, covid_corpus, monkeypatch):
    question = covid_corpus[1][0][0]
    ranks = CountingRank(budget_index.store)
    monkeypatch.setattr(budget_index.store, "rank", ranks)
    before_requests = budget_index.store.requests
    before = budget_index.encoder.query_encodings
    plain = budget_index.search(question)
    plain_requests = budget_index.store.requests - before_requests
    plain_ranks = ranks.calls
    before_requests = budget_index.store.requests
    budget_index.search(question, max_tokens=2000)
    assert budget_index.encoder.query_encodings == before + 2
    # The same walk; at most one ranking more: the public [0, 1] score (relevance.py) of results
    # the focus pool did not score (leaves only the deeper global ranking reached), one dense-only
    # ranking over their ids.
    assert 2 * plain_ranks <= ranks.calls <= 2 * plain_ranks + 1, "the budget re-ranks"
    assert budget_index.store.requests - before_requests <= plain_requests + 4  # the fill's reads, that ranking
    assert plain.nodes


def test_the_index_wide_budget_and_a_per_call_one(make_index, covid_corpus, passage_vectors):
    docs, questions = covid_corpus
    index = make_index(collection="covid_budget_config", search=SearchConfig(max_tokens=80), encoder=passage_vectors,
                       build=BuildConfig(leaves=LeafConfig(passage_words=40, split_pages_over=None)))
    index.add_documents(docs[:1])
    question = questions[0][0]
    assert sum(count_words(h.text) for h in index.search(question).nodes) <= 80
    assert sum(count_words(h.text) for h in index.search(question, max_tokens=400).nodes) > 80


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "300", 2**40])
def test_a_bad_budget_fails_before_any_work(budget_index, bad):
    before = budget_index.store.requests
    with pytest.raises(InvalidSettingError, match="max_tokens"):
        budget_index.search("coronavirus", max_tokens=bad)
    with pytest.raises(InvalidSettingError, match="max_tokens"):
        asyncio.run(budget_index.asearch("coronavirus", max_tokens=bad))
    assert budget_index.store.requests == before
