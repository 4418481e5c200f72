"""Odd filter keys and numeric settings (issue 16, item 6): validated before any engine sees them.

Filter keys with an emoji, a space, a NUL or ``$or`` raised a bare ``ValueError`` ("invalid JSON
path") from both engines; ``beam_width``, ``max_roots`` or ``rrf_k`` = 2**70 raised
``OverflowError`` inside Qdrant Edge. Property tests (Hypothesis) draw keys and numbers, run them
through the real index on every embedded engine, and accept exactly two outcomes: an
``InvalidQueryError`` naming the key or setting (and the accepted range), or a sane result; the
validator's verdict must not depend on the engine.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drag_knee_retriever import Document, DragKneeIndex, FocusConfig, FusionConfig, SearchConfig, StoreConfig
from drag_knee_retriever.config import MAX_SETTING
from drag_knee_retriever.errors import ConfigError, DragKneeError, InvalidQueryError
from support import ENGINES, make_store

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def indexes(caching_encoder):
    made = {}
    for engine in ENGINES:
        index = DragKneeIndex(make_store(engine, "odd", batch=256), embedding=caching_encoder, store=StoreConfig(collection="odd"))
        index.add_documents([
            Document(id="a", text="Lighthouses guard harbours.\n\nKeepers lived in them.", metadata={"lang": "en", "year": 2020}),
            Document(id="b", text="Маяки стоят у гаваней.", metadata={"lang": "ru", "year": 2021}),
        ])
        made[engine] = index
    yield made
    for index in made.values():
        index.close()


def _outcome(call):
    """("ok", result) or ("error", exception class, message); anything but a DragKneeError fails."""
    try:
        return ("ok", call())
    except DragKneeError as exc:
        return ("error", type(exc), str(exc))


# ------------------------------------------------------------------ numeric settings ---------

SETTINGS = {
    "beam_width": lambda index, v: index.search("lighthouse", method="fixed", beam_width=v),
    "max_roots": lambda index, v: index.search("lighthouse", max_roots=v),
    "k": lambda index, v: index.flat_search("lighthouse", k=v),
    "rrf_k": lambda index, v: index.flat_search("lighthouse", rrf_k=v),
}
NUMBERS = st.one_of(st.integers(-(2**80), 2**80), st.sampled_from([0, 1, MAX_SETTING, MAX_SETTING + 1, 2**63, 2**64, 2**70]))


@PROPERTY
@given(name=st.sampled_from(sorted(SETTINGS)), value=NUMBERS)
def test_numeric_settings_are_validated_before_the_engine(indexes, name, value):
    verdicts = set()
    for engine, index in indexes.items():
        outcome = _outcome(lambda: SETTINGS[name](index, value))
        if 1 <= value <= MAX_SETTING:
            assert outcome[0] == "ok", (engine, name, value, outcome)
            nodes = outcome[1].nodes if hasattr(outcome[1], "nodes") else outcome[1]
            assert nodes and all(n.doc_id in {"a", "b"} for n in nodes)
        else:
            assert outcome[0] == "error" and issubclass(outcome[1], InvalidQueryError), (engine, name, value, outcome)
            assert name in outcome[2] and f"{MAX_SETTING:,}" in outcome[2], outcome[2]
        verdicts.add(outcome[0])
    assert len(verdicts) == 1  # both engines agree


@pytest.mark.parametrize("cls, field, extra", [(SearchConfig, "beam_width", {"method": "fixed"}),
                                               (SearchConfig, "max_roots", {}), (FusionConfig, "rrf_k", {}),
                                               (FocusConfig, "pool", {}), (SearchConfig, "max_depth", {})])
def test_configs_refuse_huge_numbers_when_built(cls, field, extra):
    with pytest.raises(ConfigError, match=rf"{field} must be an integer >= 1 \(at most 2,147,483,647\)"):
        cls(**{field: 2**70}, **extra)
    cls(**{field: MAX_SETTING}, **extra)  # the bound itself is accepted


# ------------------------------------------------------------------ filter keys --------------

ODD_KEYS = ["emoji😀", "with space", "nul\x00key", "$or", "a.b", "", " ", "x" * 300, "tab\tkey", "новый", "k[0]",
            'q"uote', "dots..", ".lead", "trail.", "a/b", "semi;colon", "$where", "__proto__", "lang"]


@PROPERTY
@given(key=st.one_of(st.sampled_from(ODD_KEYS), st.text(min_size=0, max_size=40)))
def test_filter_keys_are_validated_before_the_engine(indexes, key):
    verdicts = {}
    for engine, index in indexes.items():
        flat = _outcome(lambda: index.flat_search("lighthouse", k=5, filters={key: "en"}))
        walk = _outcome(lambda: index.search("lighthouse", filters={key: "en"}))
        assert flat[0] == walk[0], (engine, key, flat, walk)
        if flat[0] == "error":
            assert issubclass(flat[1], InvalidQueryError), (engine, key, flat)
            assert repr(key)[:30].strip("'\"")[:10] in flat[2] or "filter key" in flat[2], flat[2]
        else:
            wanted = {"a"} if key == "lang" else set()
            assert {n.doc_id for n in flat[1]} <= wanted, (engine, key, flat)
        verdicts[engine] = flat[0]
    assert len(set(verdicts.values())) == 1, (key, verdicts)


@pytest.mark.parametrize("key", ["emoji😀", "with space", "nul\x00key", "$or"])
def test_the_issue_filter_keys_give_invalid_query_error(indexes, key):
    """The four keys of the issue's reproduction: a clear InvalidQueryError, on every engine."""
    for engine, index in indexes.items():
        # "$or" is an operator, so its message says how to write one (it takes a list of filters).
        expected = r"\$or takes a non-empty list" if key == "$or" else "filter key"
        with pytest.raises(InvalidQueryError, match=expected):
            index.flat_search("lighthouse", filters={key: "en"})
        with pytest.raises(InvalidQueryError, match=expected):
            index.search("lighthouse", filters={key: "en"})
