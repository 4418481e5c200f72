"""Passages under pages on a real index (real MiniLM, real store): invariants for every method."""

import pytest

from drag_knee_retriever import BuildConfig, FocusConfig, LeafConfig
from drag_knee_retriever.model._ids import leaf_id
from support import CountingRank, ancestors

METHODS = ["fixed", "knee", "sensitive_knee", "branch"]


@pytest.fixture(scope="module")
def passage_corpus(covid_corpus):
    """The session's three COVID-QA papers (one page per line; many lines run past 40 words)."""
    return covid_corpus


@pytest.fixture(scope="module")
def passage_index(make_index, passage_corpus):
    docs, _ = passage_corpus
    index = make_index(collection="covid_passages", build=BuildConfig(leaves=LeafConfig(passage_words=40, split_pages_over=None)))
    index.add_documents(docs)
    return index


def test_long_pages_are_split_and_pages_still_map(passage_index, passage_corpus):
    docs, _ = passage_corpus
    infos = {i.doc_id: i for i in passage_index.list_documents()}
    for doc in docs:
        pages = [p for p in doc.pages if p.strip()]
        info = infos[doc.id]
        assert info.leaves > len(pages), "some COVID-QA lines are longer than 40 words"
        assert (info.first_page, info.last_page) == (1, len(doc.pages))


@pytest.mark.parametrize("method", METHODS + ["knee+global"])
def test_invariants_with_passages(passage_index, passage_corpus, method):
    from drag_knee_retriever import SearchConfig

    docs, questions = passage_corpus
    pages = {d.id: d.pages for d in docs}
    kwargs = {"config": SearchConfig(focus=FocusConfig(global_leaves=20))} if method == "knee+global" else {"method": method}
    for question, _doc in questions[:4]:
        result = passage_index.search(question, **kwargs)
        assert result.nodes
        ids = [h.node.id for h in result.nodes]
        assert len(ids) == len(set(ids))
        for hit in result.nodes:
            assert not set(ancestors(passage_index, hit.node)) & set(ids), "a node came with its ancestor"
            span = hit.span
            if hit.node.is_leaf and span.first_part is not None:
                page = pages[hit.doc_id][span.first_page - 1]
                assert hit.text in page and str(span).startswith(f"p.{span.first_page} ¶")
            elif span.first_page == span.last_page:
                # a page node (or an unsplit page) returns the whole page
                page = pages[hit.doc_id][span.first_page - 1]
                assert " ".join(hit.text.split()) == " ".join(page.split())


@pytest.mark.parametrize("method", METHODS + ["knee+global"])
def test_one_encoding_per_search_with_passages(passage_index, passage_corpus, method, monkeypatch):
    from drag_knee_retriever import SearchConfig

    question = passage_corpus[1][0][0]
    counter = CountingRank(passage_index.store)
    monkeypatch.setattr(passage_index.store, "rank", counter)
    before = passage_index.encoder.query_encodings
    kwargs = {"config": SearchConfig(focus=FocusConfig(global_leaves=20))} if method == "knee+global" else {"method": method}
    result = passage_index.search(question, **kwargs)
    assert passage_index.encoder.query_encodings == before + 1
    # the global leaf list rides in the focus step's round trip: not a level of its own
    levels = len({(s.kind, s.level) for s in result.trace.steps if s.kind not in ("roots", "global")})
    # fixed and branch read no cosine in their walk: one dense-only ranking of the results scores
    # them on the public scale (relevance.py); the focus step reads its leaves' cosines itself
    scoring = 1 if method in ("fixed", "branch") and result.nodes else 0
    assert counter.calls == 1 + levels + scoring


def test_flat_search_finds_passages_with_page_citations(passage_index, passage_corpus):
    question = passage_corpus[1][0][0]
    hits = passage_index.flat_search(question, k=10)
    parts = [h for h in hits if h.span.first_part is not None]
    assert parts, "the top passages of long pages are leaves of their own"
    stored = passage_index.store.retrieve([leaf_id(parts[0].doc_id, parts[0].span.first_leaf)])
    assert stored[0].span == parts[0].span


def test_flat_search_by_page_returns_distinct_whole_pages_ranked_by_their_best_passage(passage_index,
                                                                                      passage_corpus):
    docs, questions = passage_corpus
    pages = {d.id: d.pages for d in docs}
    question = questions[1][0]
    leaves = passage_index.flat_search(question, k=40)
    by_page = passage_index.flat_search(question, k=5, unit="page")
    assert len(by_page) == 5
    cited = [(h.doc_id, h.span.first_page) for h in by_page]
    assert len(set(cited)) == 5, "one result per page"
    # the order is the order of each page's first (best) leaf in the leaf ranking
    first_seen = []
    for h in leaves:
        if (h.doc_id, h.span.first_page) not in first_seen:
            first_seen.append((h.doc_id, h.span.first_page))
    assert cited == first_seen[:5]
    best = {}
    for h in leaves:
        best.setdefault((h.doc_id, h.span.first_page), h.raw_score)
    for hit in by_page:
        assert hit.span.first_part is None, "a passage comes back as its whole page"
        # ranked by its best passage's raw RRF value; its public score is the page's own cosine
        assert hit.raw_score == pytest.approx(best[(hit.doc_id, hit.span.first_page)])
        assert 0.0 <= hit.score <= 1.0
        page = pages[hit.doc_id][hit.span.first_page - 1]
        assert " ".join(hit.text.split()) == " ".join(page.split())
    assert any(not h.node.is_leaf for h in by_page), "some winning pages were split into passages"


def test_flat_search_by_page_on_an_index_without_passages_is_the_leaf_ranking(make_index, passage_corpus):
    docs, questions = passage_corpus
    pages = make_index(collection="covid_whole_pages", build=BuildConfig(leaves=LeafConfig(passage_words=None)))
    pages.add_documents(docs[:1])
    question = questions[0][0]
    leaves = pages.flat_search(question, k=8)
    by_page = pages.flat_search(question, k=8, unit="page")
    assert len(leaves) == 8
    assert [(h.node.id, h.score) for h in by_page] == [(h.node.id, h.score) for h in leaves]


def test_flat_search_by_page_rejects_bad_units(passage_index):
    from drag_knee_retriever import InvalidQueryError

    with pytest.raises(InvalidQueryError, match="unit must be 'leaf' or 'page'"):
        passage_index.flat_search("virus", unit="pages")
    with pytest.raises(InvalidQueryError, match="scope='leaves'"):
        passage_index.flat_search("virus", unit="page", scope="all")
