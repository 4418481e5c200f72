"""Search settings are validated once, when built."""

import pytest

from drag_knee_retriever import FusionConfig, SearchConfig, StoreConfig
from drag_knee_retriever.search._traversal import knee_sensitivity, level_weights
from drag_knee_retriever.errors import ConfigError, InvalidQueryError
from drag_knee_retriever.store import parse_filters


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(method="magic"), "SearchConfig.method must be one of 'fixed', 'knee'"),
        (dict(method="fixed", beam_width=0), "beam_width"),
        (dict(method="fixed", beam_width=True), "beam_width"),
        (dict(method="sensitive_knee", sensitivity=0.0), r"sensitivity must be a number in \(0, 1\]"),
        (dict(method="sensitive_knee", sensitivity=1.2), "sensitivity"),
        (dict(max_roots=0), "max_roots"),
        (dict(fusion=lambda: FusionConfig(weights=[(0.0, 0.0)])), "switches both rankings off"),
        (dict(order="random"), "order"),
    ],
)
def test_bad_search_settings(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SearchConfig(**{k: v() if callable(v) else v for k, v in kwargs.items()})


@pytest.mark.parametrize("weights, message", [([(1.0,)], "dense, sparse"), ([(-1.0, 1.0)], "negative"),
                                              ([(0.0, 0.0)], "switches both rankings off"), ("0.5,0.5", "list")])
def test_bad_fusion_weights(weights, message):
    with pytest.raises(ConfigError, match=message):
        FusionConfig(weights=weights)


def test_fusion_schedule_reuses_the_last_pair():
    config = SearchConfig(fusion=FusionConfig(weights=[(0.2, 0.8), (0.5, 0.5), (1.0, 0.0)]))
    assert level_weights(config.fusion.weights, 0) == (0.2, 0.8)
    assert level_weights(config.fusion.weights, 2) == (1.0, 0.0)
    assert level_weights(config.fusion.weights, 7) == (1.0, 0.0)
    assert level_weights(SearchConfig().fusion.weights, 3) == (1.0, 1.0)


def test_knee_sensitivity_is_one_and_sensitive_knee_uses_setting():
    assert knee_sensitivity(SearchConfig(method="knee")) == 1.0
    assert knee_sensitivity(SearchConfig(method="sensitive_knee", sensitivity=0.5)) == 0.5
    assert knee_sensitivity(SearchConfig(method="branch")) == 0.85  # the method's default


def test_api_key_is_not_in_repr():
    config = StoreConfig(api_key="s3cret-key")
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
