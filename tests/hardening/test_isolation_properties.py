"""Isolation: a filter never lets a node outside it through, on any engine, for any method.

One index per engine holds ten small random documents with random metadata (tenants, years,
booleans, lists, a nested owner, a field that is a bool in some documents and an int in others).
Hypothesis draws filters (doc ids, tree position, metadata; single values and lists; values that
exist and values that do not) and queries. For every search method, and for flat search in every
mode and scope, every returned node *and every trace candidate* must satisfy the filter by the
library's own rule (:func:`drag_knee_retriever.store.node_matches`) applied to the metadata the
test gave the document, not to what the store returned. Flat search over everything must also
return exactly the matching nodes (nothing missed either).
"""

from __future__ import annotations

import random
from typing import Any, Dict, List

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from drag_knee_retriever import Document, DragKneeIndex, StoreConfig
from drag_knee_retriever.build._builder import build_document_trees
from drag_knee_retriever.store import node_matches, parse_filters
from hardening_support import METHODS, make_store

WORDS = ("harbour tide moon ship volcano ash magma glacier ice crevasse bee hive flower honey lamp keeper "
         "storm wind rain river delta salmon forest fern moss owl").split()
TENANTS = ["acme", "globex", "initech"]
TAGS = ["red", "green", "blue"]
EXAMPLES = {"run": 0, "searches": 0, "checked": 0}


def _random_corpus(seed: int = 9) -> List[Document]:
    rng = random.Random(seed)
    docs = []
    for i in range(10):
        pages = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9))).capitalize() + "."
                 for _ in range(rng.randint(1, 5))]
        metadata: Dict[str, Any] = {"tenant": rng.choice(TENANTS), "year": rng.randint(2019, 2023)}
        if rng.random() < 0.7:
            metadata["public"] = rng.random() < 0.5
        if rng.random() < 0.7:
            metadata["tags"] = rng.sample(TAGS, rng.randint(0, 3))
        # The same field a bool in some documents and an int in others: True must not match 1.
        metadata["flag"] = rng.choice([True, False, 0, 1])
        if rng.random() < 0.5:
            metadata["owner"] = {"team": rng.choice(["blue", "red"])}
        docs.append(Document(id=f"doc-{i}", pages=pages, metadata=metadata))
    return docs


CORPUS = _random_corpus()
QUERIES = ["harbour tide and ships", "volcano ash", "glacier ice crevasse", "bees and honey",
           "storm over the river delta", "owl in the forest"]


@pytest.fixture(scope="module")
def corpus_index(engine, caching_encoder):
    index = DragKneeIndex(make_store(engine, "isolation", batch=256), embedding=caching_encoder, store=StoreConfig(collection="isolation"))
    index.add_documents(CORPUS)
    truth = {n.id: n for tree in build_document_trees(CORPUS, index.build_config, index.summarizer) for n in tree.nodes}
    yield index, truth
    index.close()


doc_ids = st.sampled_from([d.id for d in CORPUS] + ["doc-404", "DOC-1", "doc-1 ", ""])
values = {
    "doc_id": st.one_of(doc_ids, st.lists(doc_ids, min_size=1, max_size=3)),
    "level": st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), min_size=1, max_size=2)),
    "is_leaf": st.booleans(),
    "tenant": st.one_of(st.sampled_from(TENANTS + ["umbrella"]), st.lists(st.sampled_from(TENANTS), min_size=1, max_size=2)),
    "year": st.one_of(st.integers(2018, 2024), st.lists(st.integers(2018, 2024), min_size=1, max_size=3)),
    "public": st.booleans(),
    "tags": st.one_of(st.sampled_from(TAGS + ["black"]), st.lists(st.sampled_from(TAGS), min_size=1, max_size=2)),
    "flag": st.one_of(st.booleans(), st.sampled_from([0, 1])),
}
# A key no document has ("missing_field") is an InvalidQueryError since issue 15 (a typo, not an
# empty result): tests/integration/test_filter_dialects.py pins that, so it is not drawn here.
filters = st.dictionaries(st.sampled_from(sorted(values)), st.none(), min_size=1, max_size=2).flatmap(
    lambda keys: st.fixed_dictionaries({k: values[k] for k in keys}))


def _outside(truth, spec, node_id: str, doc_id: str) -> List[str]:
    node = truth.get(node_id)
    if node is None:
        return [f"{node_id} ({doc_id}) is not a node of the corpus"]
    return [] if node_matches(node, spec) else [f"{node_id} ({doc_id} L{node.level}, {dict(node.metadata)}) is outside"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(flt=filters, query=st.sampled_from(QUERIES), method=st.sampled_from(METHODS),
       beam_width=st.integers(1, 4), sensitivity=st.floats(0.05, 1.0))
def test_no_method_returns_or_ranks_a_node_outside_the_filter(corpus_index, flt, query, method, beam_width, sensitivity):
    index, truth = corpus_index
    spec = parse_filters(flt)
    EXAMPLES["run"] += 1
    problems = []
    for m in {method, "branch"}:  # branch ranks per parent: a different request shape, always checked
        knobs = {"beam_width": beam_width} if m == "fixed" else {"sensitivity": sensitivity} if m in (
            "sensitive_knee", "branch") else {}  # a method's own knobs only: elsewhere they are refused
        result = index.search(query, method=m, filters=flt, **knobs)
        for hit in result.nodes:
            problems += _outside(truth, spec, hit.node.id, hit.node.doc_id)
        for step in result.trace.steps:
            for c in step.candidates:
                problems += _outside(truth, spec, c.node_id, c.doc_id)
        EXAMPLES["searches"] += 1
        EXAMPLES["checked"] += len(result.nodes) + sum(len(s.candidates) for s in result.trace.steps)
    for mode in ("hybrid", "dense", "sparse"):
        for hit in index.flat_search(query, k=8, mode=mode, filters=flt):
            problems += _outside(truth, spec, hit.node.id, hit.node.doc_id)
        EXAMPLES["searches"] += 1
    assert problems == [], problems[:5]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(flt=filters)
def test_flat_search_over_everything_returns_exactly_the_matching_nodes(corpus_index, flt):
    index, truth = corpus_index
    spec = parse_filters(flt)
    expected = {i for i, n in truth.items() if node_matches(n, spec)}
    got = {h.node.id for h in index.flat_search("anything at all", k=len(truth) + 5, mode="dense", scope="all",
                                                filters=flt)}
    missed = sorted(f"{truth[i].doc_id} L{truth[i].level} {dict(truth[i].metadata)}" for i in expected - got)
    leaked = sorted(f"{truth[i].doc_id} L{truth[i].level} {dict(truth[i].metadata)}" for i in got - expected)
    assert (missed, leaked) == ([], []), f"filter {flt}: missed {missed[:3]}, leaked {leaked[:3]}"


@pytest.mark.parametrize("flt", [
    {"owner.team": "blue"},  # a nested metadata field: the engines read it as a path
])
def test_nested_metadata_keys_follow_one_rule(corpus_index, flt):
    """The engine and node_matches must agree on dotted keys (or parse_filters must refuse them)."""
    index, truth = corpus_index
    spec = parse_filters(flt)
    expected = {i for i, n in truth.items() if node_matches(n, spec)}
    got = {h.node.id for h in index.flat_search("anything", k=len(truth) + 5, mode="dense", scope="all", filters=flt)}
    assert got == expected


def test_report_examples(capsys):
    with capsys.disabled():
        print(f"\n[hardening] isolation: {EXAMPLES}")
