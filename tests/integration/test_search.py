"""Search invariants on three real COVID-QA papers, for every method."""

import asyncio
import json

import pytest

from drag_knee_retriever import ConfigError, Document, FocusConfig, FusionConfig, InvalidQueryError, SearchConfig
from drag_knee_retriever.model._ids import leaf_id
from drag_knee_retriever.render import trace_text
from support import CountingRank, ancestors

METHODS = ["fixed", "knee", "sensitive_knee", "branch"]


@pytest.mark.parametrize("method", METHODS)
def test_method_invariants(covid_index, covid_corpus, method):
    _, questions = covid_corpus
    for question, _doc in questions[:6]:
        result = covid_index.search(question, method=method)
        assert result.nodes, "a populated index returns something"
        ids = [hit.node.id for hit in result.nodes]
        assert len(ids) == len(set(ids))
        stored = {n.id for n in covid_index.store.retrieve(ids)}
        assert stored == set(ids), "every result is an existing node"
        for hit in result.nodes:
            assert not set(ancestors(covid_index, hit.node)) & set(ids), "a node came with its ancestor"
            if not hit.node.is_leaf:
                leaves = covid_index.store.retrieve(
                    [leaf_id(hit.doc_id, i) for i in range(hit.span.first_leaf, hit.span.last_leaf + 1)])
                assert hit.text == "\n\n".join(l.text for l in sorted(leaves, key=lambda l: l.span.first_leaf))
        spans = [(h.doc_id, h.span.first_leaf, h.span.last_leaf) for h in result.nodes]
        for i, a in enumerate(spans):
            for b in spans[i + 1:]:
                assert a[0] != b[0] or a[2] < b[1] or b[2] < a[1], "overlapping spans returned twice"
        json.loads(result.to_json())  # the trace is serialisable


@pytest.mark.parametrize("method", METHODS)
def test_one_encoding_and_one_round_trip_per_level(covid_index, covid_corpus, method, monkeypatch):
    question = covid_corpus[1][0][0]
    counter = CountingRank(covid_index.store)
    monkeypatch.setattr(covid_index.store, "rank", counter)
    encodings = covid_index.encoder.query_encodings
    requests_before = covid_index.store.requests
    result = covid_index.search(question, method=method)
    assert covid_index.encoder.query_encodings == encodings + 1
    # The global leaves ride in the focus step's round trip.
    levels_visited = len({(s.kind, s.level) for s in result.trace.steps if s.kind not in ("roots", "global")})
    # Plus one dense-only ranking of the results the walk read no cosine for (their public score,
    # relevance.py): fixed and branch always, the focus only for a region returned whole.
    focus = [s for s in result.trace.steps if s.kind == "focus"]
    scored_by_walk = {c.node_id for s in focus for c in s.candidates if c.dense_score is not None}
    scoring = 0 if all(h.node.id in scored_by_walk for h in result.nodes) or not result.nodes else 1
    assert counter.calls == 1 + levels_visited + scoring
    context_fetch = 1 if result.nodes else 0  # span leaves and the documents' roots, in one request
    assert covid_index.store.requests - requests_before == counter.calls + context_fetch
    assert result.trace.requests == counter.calls + context_fetch


def test_knee_focus_ranks_the_leaves_under_the_walk_regions(covid_index, covid_corpus):
    """The knee's last step ranks the leaves under the nodes the walk kept, in one request, and
    returns those at the knee (or a region most of whose leaves survive): real model, real store."""
    from dataclasses import replace

    _, questions = covid_corpus
    # The focus on RRF over the regions' leaves alone (the default before focus.scores="magnitude").
    rrf = replace(covid_index.search_config, focus=FocusConfig(scores="rrf", global_leaves=None))
    walk_only = replace(rrf, focus=None, method="sensitive_knee", sensitivity=0.85)
    focused_tokens = walk_tokens = 0
    for question, _doc in questions[:8]:
        result = covid_index.search(question, method="knee", config=rrf)
        focus = result.trace.steps[-1]
        assert focus.kind == "focus" and focus.candidates and all(c.is_leaf for c in focus.candidates)
        assert len(focus.candidates) <= covid_index.search_config.focus.pool
        regions = covid_index.search(question, config=walk_only).nodes  # the walk at the region sensitivity
        covered = {leaf_id(r.doc_id, i) for r in regions for i in range(r.span.first_leaf, r.span.last_leaf + 1)}
        assert {c.node_id for c in focus.candidates} <= covered
        kept = {c.node_id for c in focus.candidates if c.outcome == "kept"}
        for hit in result.nodes:
            assert hit.node.id in kept or (not hit.node.is_leaf and hit.node.id in {r.node.id for r in regions})
        focused_tokens += sum(len(h.text.split()) for h in result.nodes)
        walk_tokens += sum(len(h.text.split()) for h in regions)
    assert focused_tokens < walk_tokens  # the point of the step: less context than the regions


def test_fixed_width_bounds_the_beam(covid_index, covid_corpus):
    question = covid_corpus[1][0][0]
    for width in (1, 2, 3):
        result = covid_index.search(question, method="fixed", beam_width=width)
        assert 1 <= len(result.nodes) <= width


def test_knee_with_one_dominant_root_keeps_one(make_index):
    index = make_index(collection="dominant")
    index.add_documents([
        Document(id="zebra", text="Zebras graze on the savanna in large herds.\n\nZebra stripes may deter biting flies."),
        Document(id="tax", text="Income tax returns are due in April.\n\nDeductions lower the taxable income."),
        Document(id="rust", text="The Rust compiler checks borrows.\n\nCargo builds Rust crates."),
    ])
    result = index.search("zebra stripes biting flies", method="knee")
    roots = result.trace.steps[0]
    assert roots.kept_count == 1 and roots.candidates[0].doc_id == "zebra"
    assert {h.doc_id for h in result.nodes} == {"zebra"}


def test_sensitive_knee_at_one_equals_knee(covid_index, covid_corpus):
    question = covid_corpus[1][2][0]
    knee = covid_index.search(question, method="knee")
    same = covid_index.search(question, method="sensitive_knee", sensitivity=1.0)
    assert [h.node.id for h in knee.nodes] == [h.node.id for h in same.nodes]
    looser = covid_index.search(question, method="sensitive_knee", sensitivity=0.3)
    assert looser.trace.steps[0].kept_count >= knee.trace.steps[0].kept_count


def test_filters_apply_at_every_level(covid_index, covid_corpus):
    docs, questions = covid_corpus
    target = docs[1].id
    for method in METHODS:
        result = covid_index.search(questions[0][0], method=method, filters={"doc_id": target})
        assert result.nodes and {h.doc_id for h in result.nodes} == {target}
        for step in result.trace.steps:
            assert {c.doc_id for c in step.candidates} == {target}
    assert covid_index.search(questions[0][0], filters={"lang": "ru"}).nodes == []
    assert covid_index.search(questions[0][0], filters={"lang": "en"}).nodes


def test_fusion_schedule_and_document_order(covid_index, covid_corpus):
    schedule = [(0.2, 0.8), (0.5, 0.5), (0.8, 0.2), (1.0, 0.0)]
    result = covid_index.search(covid_corpus[1][3][0], fusion=FusionConfig(weights=schedule), method="sensitive_knee",
                                order="document", sensitivity=0.5)
    assert result.trace.steps[0].weights == (0.2, 0.8)
    assert all(s.weights == tuple(schedule[min(s.level, 3)]) for s in result.trace.steps)
    keys = [(h.doc_id, h.span.first_leaf) for h in result.nodes]
    assert keys == sorted(keys)


def test_trace_records_ranks_and_suppression(covid_index, covid_corpus):
    question = covid_corpus[1][0][0]
    explained = covid_index.search_config.with_overrides(explain=True)
    result = covid_index.search(question, method="sensitive_knee", sensitivity=0.5, config=explained)
    candidates = [c for s in result.trace.steps for c in s.candidates]
    assert any(c.dense_rank is not None for c in candidates)
    assert all(c.outcome in ("kept", "suppressed", "cut", "merged") for c in candidates)
    # explain only adds the per-side ranks: same results, same fused scores, same decisions.
    plain = covid_index.search(question, method="sensitive_knee", sensitivity=0.5)
    assert [(h.node.id, h.score) for h in plain.nodes] == [(h.node.id, h.score) for h in result.nodes]
    plain_candidates = [c for s in plain.trace.steps for c in s.candidates]
    assert all(c.dense_rank is None and c.sparse_rank is None for c in plain_candidates)
    assert [(c.node_id, c.fused_score, c.outcome) for c in plain_candidates] == [
        (c.node_id, c.fused_score, c.outcome) for c in candidates]
    for c in candidates:
        if c.outcome == "suppressed":
            assert c.suppressed_by
    assert "step 0 [roots]" in trace_text(result.trace)


@pytest.mark.parametrize(
    "query, kwargs, error, message",
    [
        ("", {}, InvalidQueryError, "empty"),
        ("   ", {}, InvalidQueryError, "empty"),
        (42, {}, InvalidQueryError, "must be a string"),
        ("q", {"method": "magic"}, ConfigError, "method must be one of"),
        ("q", {"beam_width": 0}, ConfigError, "beam_width"),
        ("q", {"sensitivity": 1.5}, ConfigError, "sensitivity"),
        ("q", {"filters": {"doc_id": 3.5}}, InvalidQueryError, "type float"),
        ("q", {"filters": "doc_id=x"}, InvalidQueryError, "mapping"),
    ],
)
def test_bad_queries(covid_index, query, kwargs, error, message):
    with pytest.raises(error, match=message):
        covid_index.search(query, **kwargs)


def test_huge_query_and_unknown_filter_field_are_sane(covid_index):
    result = covid_index.search("coronavirus " * 10_000)
    assert result.nodes
    # A metadata key no document has is a typo: a clear error naming the keys there are (issue 15).
    with pytest.raises(InvalidQueryError, match="no_such_field.*dataset"):
        covid_index.search("coronavirus", filters={"no_such_field": "x"})
    assert covid_index.search("coronavirus", filters={"dataset": "nope"}).nodes == []


def test_empty_collection_gives_an_empty_result(make_index):
    index = make_index(collection="empty")
    for method in METHODS:
        assert index.search("anything", method=method).nodes == []


def test_flat_search_modes(covid_index, covid_corpus):
    question = covid_corpus[1][0][0]
    for mode in ("hybrid", "dense", "sparse"):
        hits = covid_index.flat_search(question, k=5, mode=mode)
        assert 1 <= len(hits) <= 5 and all(h.node.is_leaf for h in hits)
    everything = covid_index.flat_search(question, k=10, scope="all")
    assert len(everything) == 10


async def test_asearch_matches_search_under_gather(covid_index, covid_corpus):
    questions = [q for q, _ in covid_corpus[1][:5]]
    sequential = [[h.node.id for h in covid_index.search(q).nodes] for q in questions]
    concurrent = await asyncio.gather(*(covid_index.asearch(q) for q in questions * 4))
    assert [[h.node.id for h in r.nodes] for r in concurrent] == sequential * 4


class AwaitableClient:
    """Stands in for qdrant-client's AsyncQdrantClient (same method names, awaited) over a local
    client, and records which calls went through it. No Qdrant server is reachable here."""

    def __init__(self, client):
        self.client, self.calls = client, []

    async def query_batch_points(self, *args, **kwargs):
        self.calls.append("query_batch_points")
        return self.client.query_batch_points(*args, **kwargs)

    async def retrieve(self, *args, **kwargs):
        self.calls.append("retrieve")
        return self.client.retrieve(*args, **kwargs)

    async def close(self):
        pass


async def test_asearch_uses_the_store_async_client(make_index, covid_corpus):
    from drag_knee_retriever.store import QdrantClientStore

    docs, questions = covid_corpus
    index = make_index(collection="async_path", engine="local")
    index.add_documents(docs[:1])
    assert isinstance(index.store, QdrantClientStore)
    index.search("warm-up")  # the first search reads the roots' identities once (one more store request)
    index.store.async_client = AwaitableClient(index.store.client)
    for method in METHODS:
        knobs = {"sensitivity": 0.5} if method in ("sensitive_knee", "branch") else {}
        expected = index.search(questions[0][0], method=method, **knobs)
        got = await index.asearch(questions[0][0], method=method, **knobs)
        assert [(h.node.id, h.score) for h in got.nodes] == [(h.node.id, h.score) for h in expected.nodes]
        assert got.trace.requests == expected.trace.requests
    assert index.store.async_client.calls.count("query_batch_points") >= 4
    index.store.async_client = None


MAGNITUDE = [SearchConfig(focus=FocusConfig(scores="magnitude", global_leaves=50, merge_ratio=None)),
             SearchConfig(focus=FocusConfig(scores="magnitude", global_leaves=50, merge_ratio=0.5)),
             SearchConfig(method="sensitive_knee", focus=FocusConfig(scores="magnitude", sibling_weight=0.0))]


@pytest.mark.parametrize("config", MAGNITUDE, ids=["magnitude", "magnitude+merge", "sensitive, walk only"])
def test_magnitude_focus_invariants_on_the_real_index(covid_index, covid_corpus, config, monkeypatch):
    """Scores with magnitude: no node with its ancestor, one query encoding, one round trip per
    level (the global leaves ride with the focus), and the trace carries each leaf's cosine and BM25."""
    _, questions = covid_corpus
    for question, doc in questions[:6]:
        counter = CountingRank(covid_index.store)
        monkeypatch.setattr(covid_index.store, "rank", counter)
        encodings = covid_index.encoder.query_encodings
        result = covid_index.search(question, config=config)
        monkeypatch.undo()
        assert covid_index.encoder.query_encodings == encodings + 1
        ids = [hit.node.id for hit in result.nodes]
        assert result.nodes and len(ids) == len(set(ids))
        for hit in result.nodes:
            assert not set(ancestors(covid_index, hit.node)) & set(ids), "a node came with its ancestor"
        steps = result.trace.steps
        assert counter.calls == 1 + len({(s.kind, s.level) for s in steps if s.kind not in ("roots", "global")})
        focus = steps[-1]
        assert focus.kind == "focus" and focus.candidates
        # A global leaf beyond one side's limit has no score there (None); every leaf has one side.
        assert all(c.dense_score is not None or c.sparse_score is not None for c in focus.candidates)
        assert all(-1.0 - 1e-6 <= c.dense_score <= 1.0 + 1e-6 for c in focus.candidates if c.dense_score is not None)
        assert all(c.sparse_score >= 0.0 for c in focus.candidates if c.sparse_score is not None)
        scores = [c.fused_score for c in focus.candidates]
        assert scores == sorted(scores, reverse=True)
        assert (config.focus.global_leaves is not None) == any(s.kind == "global" for s in steps)
        json.loads(result.to_json())


def test_the_final_fetch_reads_the_roots_each_document_version_can_have(make_index, covid_corpus, monkeypatch):
    """The final fetch reads each met document's root: for a version of which the walk met a node
    with a parent only its inner root's id (its first leaf is no root), else both ids a root can
    have (a one-leaf document's root is that leaf). The same results and trace as reading both ids
    of every document."""
    import drag_knee_retriever.search._context as context
    from drag_knee_retriever.model._ids import root_ids

    docs, questions = covid_corpus
    index = make_index(collection="final_fetch_roots")
    one_leaf = Document(id="note", text="The incubation period of the new coronavirus is about five days.")
    index.add_documents(list(docs[:2]) + [one_leaf])
    fetched = []
    retrieve = index.store.retrieve
    monkeypatch.setattr(index.store, "retrieve", lambda ids: fetched.append(list(ids)) or retrieve(ids))
    both = lambda doc_id, versions, parented: root_ids(doc_id)
    for question in [q for q, _ in questions[:4]] + [one_leaf.text]:
        fetched.clear()
        result = index.search(question)
        ids = set(fetched[-1])
        met = {c.doc_id for s in result.trace.steps if s.kind in ("global", "focus") for c in s.candidates}
        met |= {n.doc_id for n in result.nodes}
        under_hits = {leaf_id(n.doc_id, i) for n in result.nodes for i in range(n.span.first_leaf, n.span.last_leaf + 1)}
        for doc_id in met:
            inner, first = root_ids(doc_id)
            assert inner in ids
            # Only the one-leaf document (or a first leaf the results hold) has its first leaf read.
            assert (first in ids) == (doc_id == "note" or first in under_hits), (question, doc_id)
        with monkeypatch.context() as m:
            m.setattr(context, "root_ids_to_read", both)
            fetched.clear()
            again = index.search(question)
            assert len(set(fetched[-1])) > len(ids) or "note" in met
        assert [(n.node, n.score, n.text) for n in result.nodes] == [(n.node, n.score, n.text) for n in again.nodes]
        view = lambda t: [[(c.node_id, c.fused_score, c.outcome) for c in s.candidates] for s in t.steps]
        assert view(result.trace) == view(again.trace)
    assert any(n.node.doc_id == "note" for n in result.nodes), "the one-leaf document is found and kept live"
