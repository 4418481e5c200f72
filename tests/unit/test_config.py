"""Search settings are validated once, when built."""

import pytest

from drag_knee_retriever import SearchConfig, StoreConfig
from drag_knee_retriever.errors import ConfigError, InvalidQueryError
from drag_knee_retriever.store import parse_filters


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(method="magic"), "Unknown search method"),
        (dict(beam_width=0), "beam_width"),
        (dict(beam_width=True), "beam_width"),
        (dict(sensitivity=0.0), r"sensitivity must be in \(0, 1\]"),
        (dict(sensitivity=1.2), "sensitivity"),
        (dict(max_roots=0), "max_roots"),
        (dict(fusion_weights=[(0.0, 0.0)]), "switches both rankings off"),
        (dict(fusion_weights=[(1.0,)]), "dense, sparse"),
        (dict(fusion_weights=[(-1.0, 1.0)]), "negative"),
        (dict(order="random"), "order"),
    ],
)
def test_bad_search_settings(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SearchConfig(**kwargs)


def test_fusion_schedule_reuses_the_last_pair():
    config = SearchConfig(fusion_weights=[(0.2, 0.8), (0.5, 0.5), (1.0, 0.0)])
    assert config.weights_for_level(0) == (0.2, 0.8)
    assert config.weights_for_level(2) == (1.0, 0.0)
    assert config.weights_for_level(7) == (1.0, 0.0)
    assert SearchConfig().weights_for_level(3) == (1.0, 1.0)


def test_knee_sensitivity_is_one_and_sensitive_knee_uses_setting():
    assert SearchConfig(method="knee", sensitivity=0.5).effective_sensitivity == 1.0
    assert SearchConfig(method="sensitive_knee", sensitivity=0.5).effective_sensitivity == 0.5


def test_api_key_is_not_in_repr():
    config = StoreConfig(url="http://localhost:6333", api_key="s3cret-key")
    assert "s3cret" not in repr(config)


def test_filters_become_typed_conditions():
    spec = parse_filters({"doc_id": ["a", "b"], "lang": "ru", "year": 2020})
    from drag_knee_retriever.store.filters import MATCH, Condition

    assert spec == (Condition(MATCH, "doc_id", ("a", "b")), Condition(MATCH, "metadata.lang", ("ru",)),
                    Condition(MATCH, "metadata.year", (2020,)))


@pytest.mark.parametrize(
    "filters, message",
    [
        ("doc_id=a", "mapping"),
        ({"doc_id": []}, "empty list"),
        ({"lang": 1.5}, "type float"),
        ({"lang": {"$ne": {"x": 1}}}, "type dict"),
        ({"lang": ["a", 1]}, "mixes value types"),
        ({"bad'key": "x"}, "is not a field name"),
    ],
)
def test_bad_filters(filters, message):
    with pytest.raises(InvalidQueryError, match=message):
        parse_filters(filters)
