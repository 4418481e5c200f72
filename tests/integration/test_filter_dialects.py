"""Filters in each framework's language select exactly what a brute-force check selects.

One random filter tree (hypothesis) is written three ways: LangChain's dict (``$eq $ne $in $nin
$gt $gte $lt $lte $and $or``), a qdrant-client ``models.Filter`` and LlamaIndex ``MetadataFilters``
(nested, AND / OR / NOT). Each is run against a real index (Qdrant Edge and qdrant-client local
mode) and must select exactly the documents that :func:`oracle` (plain Python over the metadata
the documents were ingested with, written independently of the library) selects; a filtered
search returns only such documents, at every level of the walk.
"""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from drag_knee_retriever import Document, DragKneeIndex, InvalidQueryError, StoreConfig
from drag_knee_retriever.store import parse_filters

qm = pytest.importorskip("qdrant_client.models")

LANGS = ["en", "ru", "de"]
TAGS = ["bio", "geo", "chem", "art"]


def _meta(i: int) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"year": 2015 + i % 9, "lang": LANGS[i % 3], "rating": round(0.37 * i % 5, 2),
                            "tags": [TAGS[i % 4], TAGS[(i * 3 + 1) % 4]], "draft": i % 4 == 0}
    if i % 5 == 0:
        del meta["lang"]  # missing fields: $ne / $nin pass, everything else fails
    return meta


TOPICS = ["honeybee colonies and varroa mites", "basaltic lava and shield volcanoes", "sourdough starters and flour",
          "tidal energy and ocean currents", "medieval castles and sieges", "orbital mechanics of comets"]
DOCS = [Document(id=f"d{i:02d}", text=f"Document {i} is about {TOPICS[i % len(TOPICS)]}.\n\n"
                 f"A second paragraph of document {i} on {TOPICS[(i + 1) % len(TOPICS)]}.\n\n"
                 f"A third paragraph: {TOPICS[(i + 2) % len(TOPICS)]}.", metadata=_meta(i))
        for i in range(24)]
META = {d.id: dict(d.metadata) for d in DOCS}


# -- the oracle: Mongo-style semantics over the ingested metadata (lists: any element) ----------


def _values(meta: Dict[str, Any], key: str) -> List[Any]:
    if key not in meta or meta[key] is None:
        return []
    value = meta[key]
    return list(value) if isinstance(value, list) else [value]


def _eq(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def oracle(meta: Dict[str, Any], node: tuple) -> bool:
    kind = node[0]
    if kind == "and":
        return all(oracle(meta, n) for n in node[1])
    if kind == "or":
        return any(oracle(meta, n) for n in node[1])
    if kind == "not":
        return not any(oracle(meta, n) for n in node[1])
    _, key, op, value = node
    vals = _values(meta, key)
    if op == "eq":
        return any(_eq(v, value) for v in vals)
    if op == "ne":
        return not any(_eq(v, value) for v in vals)
    if op == "in":
        return any(_eq(v, w) for v in vals for w in value)
    if op == "nin":
        return not any(_eq(v, w) for v in vals for w in value)
    nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
    test = {"gt": lambda v: v > value, "gte": lambda v: v >= value, "lt": lambda v: v < value, "lte": lambda v: v <= value}[op]
    return any(test(v) for v in nums)


# -- random filter trees --------------------------------------------------------------------------

_leaf = st.one_of(
    st.tuples(st.just("leaf"), st.just("year"), st.sampled_from(["eq", "ne", "gt", "gte", "lt", "lte"]),
              st.integers(2014, 2024)),
    st.tuples(st.just("leaf"), st.just("year"), st.sampled_from(["in", "nin"]),
              st.lists(st.integers(2014, 2024), min_size=1, max_size=3, unique=True)),
    st.tuples(st.just("leaf"), st.just("rating"), st.sampled_from(["gt", "gte", "lt", "lte"]),
              st.floats(0, 5, allow_nan=False).map(lambda x: round(x, 2))),
    st.tuples(st.just("leaf"), st.sampled_from(["lang", "tags"]), st.sampled_from(["eq", "ne"]),
              st.sampled_from(LANGS + TAGS)),
    st.tuples(st.just("leaf"), st.sampled_from(["lang", "tags"]), st.sampled_from(["in", "nin"]),
              st.lists(st.sampled_from(LANGS + TAGS), min_size=1, max_size=3, unique=True)),
    st.tuples(st.just("leaf"), st.just("draft"), st.sampled_from(["eq", "ne"]), st.booleans()),
)
trees = st.recursive(_leaf, lambda inner: st.tuples(st.sampled_from(["and", "or", "not"]),
                                                    st.lists(inner, min_size=1, max_size=3)), max_leaves=6)


def to_langchain(node: tuple) -> Dict[str, Any]:
    kind = node[0]
    if kind in ("and", "or"):
        return {f"${kind}": [to_langchain(n) for n in node[1]]}
    if kind == "not":
        return {"$not": {"$or": [to_langchain(n) for n in node[1]]}}
    _, key, op, value = node
    return {key: {f"${op}": value}}


def to_qdrant(node: tuple) -> Any:
    kind = node[0]
    if kind == "and":
        return qm.Filter(must=[to_qdrant(n) for n in node[1]])
    if kind == "or":
        return qm.Filter(should=[to_qdrant(n) for n in node[1]])
    if kind == "not":
        return qm.Filter(must_not=[to_qdrant(n) for n in node[1]])
    _, key, op, value = node
    key = f"metadata.{key}"
    if op in ("gt", "gte", "lt", "lte"):
        return qm.FieldCondition(key=key, range=qm.Range(**{op: value}))
    if op == "eq":
        return qm.FieldCondition(key=key, match=qm.MatchValue(value=value))
    if op == "in":
        return qm.FieldCondition(key=key, match=qm.MatchAny(any=value))
    if op == "nin":
        return qm.FieldCondition(key=key, match=qm.MatchExcept(**{"except": value}))
    return qm.Filter(must_not=[qm.FieldCondition(key=key, match=qm.MatchValue(value=value))])


def to_llamaindex(node: tuple) -> Any:
    from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

    kind = node[0]
    if kind in ("and", "or", "not"):
        return MetadataFilters(filters=[to_llamaindex(n) for n in node[1]], condition=FilterCondition(kind))
    _, key, op, value = node
    ops = {"eq": "EQ", "ne": "NE", "gt": "GT", "gte": "GTE", "lt": "LT", "lte": "LTE", "in": "IN", "nin": "NIN"}
    return MetadataFilter(key=key, operator=getattr(FilterOperator, ops[op]), value=value)


# -- the indexes ------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["edge", "local"])
def index(request, encoder):
    idx = DragKneeIndex(embedding=encoder, store=StoreConfig(collection=f"filters_{request.param}", engine=request.param))
    idx.add_documents(DOCS)
    yield idx
    idx.close()


def _selected(index: DragKneeIndex, filters: Any) -> set:
    return {n.doc_id for n in index.store.scroll_nodes(filters=parse_filters(filters), level=0, with_text=False)}


def _has_bool(node: tuple) -> bool:
    if node[0] in ("and", "or", "not"):
        return any(_has_bool(n) for n in node[1])
    return isinstance(node[3], bool)


def _brute(tree: tuple) -> set:
    return {doc_id for doc_id, meta in META.items() if oracle(meta, tree)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees)
def test_langchain_and_qdrant_dialects_select_what_brute_force_selects(index, tree):
    expected = _brute(tree)
    assert _selected(index, to_langchain(tree)) == expected
    assert _selected(index, qm.Filter(must=[to_qdrant(tree)])) == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees)
def test_llamaindex_metadata_filters_select_what_brute_force_selects(index, tree):
    pytest.importorskip("llama_index.core")
    from drag_knee_retriever.integrations.llamaindex import metadata_filters_to_dict

    assume(not _has_bool(tree))  # MetadataFilter values are str, int, float or lists of them
    assert _selected(index, metadata_filters_to_dict(to_llamaindex(tree))) == _brute(tree)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees)
def test_filtered_search_returns_only_selected_documents_at_every_level(index, tree):
    expected = _brute(tree)
    for method in ("knee", "fixed", "branch"):
        result = index.search("honeybee colonies and volcanoes", method=method, filters=to_langchain(tree))
        assert {hit.node.doc_id for hit in result.nodes} <= expected
        for step in result.trace.steps:
            assert {c.doc_id for c in step.candidates} <= expected


@pytest.mark.parametrize("bad, message", [
    ({"year": {"$between": [1, 2]}}, "unknown operator '\\$between'"),
    ({"year": {"$gt": "2019"}}, "\\$gt takes a finite number"),
    ({"year": {"$in": 2019}}, "\\$in takes a list"),
    ({"rating": 2.5}, "Use a range instead"),
    ({"$or": {"year": 2019}}, "\\$or takes a non-empty list"),
    ({"$gte": 3}, "not a field"),
    ({"year": {}}, "empty operator mapping"),
    ({"lang": ["en", 3]}, "mixes value types"),
])
def test_bad_filters_are_clear_errors(bad, message):
    with pytest.raises(InvalidQueryError, match=message):
        parse_filters(bad)


def test_unsupported_qdrant_condition_is_a_clear_error():
    with pytest.raises(InvalidQueryError, match="IsEmpty|not supported"):
        parse_filters(qm.Filter(must=[qm.IsEmptyCondition(is_empty=qm.PayloadField(key="metadata.lang"))]))


def test_a_key_no_document_has_is_a_clear_error_in_search_and_flat_search(index):
    """A filter on a metadata key no indexed document carries is a typo, not an empty result."""
    for run in (lambda: index.search("anything", filters={"missing_field": "x"}),
                lambda: index.flat_search("anything", k=3, filters={"missing_field": "x"}),
                lambda: index.search("anything", filters={"$or": [{"year": 2020}, {"yeer": 2021}]})):
        with pytest.raises(InvalidQueryError, match=r"in no indexed document's metadata"):
            run()


def test_the_shared_translator_builds_qdrant_client_filters_and_reports_range_fields():
    """store.filters.QdrantFilters, as the qdrant-client engine wires it: nested groups, a missing-field
    exception and a range, each the qdrant-client object written by hand; the range field is reported
    (a server creates its payload index there)."""
    from drag_knee_retriever.store import QdrantClientStore
    from drag_knee_retriever.store.filters import QdrantFilters

    store = QdrantClientStore("t", location=":memory:")
    try:
        seen: List[str] = []
        translate = QdrantFilters(filter=qm.Filter, field=qm.FieldCondition, range=qm.Range,
                                  has_id=lambda ids: qm.HasIdCondition(has_id=list(ids)),
                                  match_value=lambda v: qm.MatchValue(value=v), match_any=lambda vs: qm.MatchAny(any=vs),
                                  on_range=seen.append)
        spec = parse_filters({"lang": {"$ne": "en"}, "$or": [{"year": {"$gte": 2020}}, {"tags": ["bio", "geo"]}]})
        expected = [
            qm.Filter(must_not=[qm.FieldCondition(key="metadata.lang", match=qm.MatchValue(value="en"))]),
            qm.Filter(should=[qm.FieldCondition(key="metadata.year", range=qm.Range(gte=2020)),
                              qm.FieldCondition(key="metadata.tags", match=qm.MatchAny(any=["bio", "geo"]))]),
        ]
        assert translate.conditions(spec) == expected and seen == ["metadata.year"]
        assert store._filters.conditions(spec) == expected  # the engine's own wiring builds the same
    finally:
        store.close()
