"""Settings grouped by what they shape (issue 23): one declarative rule per field, refusals of settings that do
nothing under the chosen method, the old flat spellings (DeprecationWarning), and the docs generated from the
declarations."""

from __future__ import annotations

import dataclasses
import re
import warnings
from pathlib import Path

import pytest

import drag_knee_retriever
from drag_knee_retriever import (
    BuildConfig,
    ConfigError,
    EmbeddingConfig,
    EncoderRuntime,
    FocusConfig,
    FusionConfig,
    LeafConfig,
    OcrConfig,
    SearchConfig,
    SectionConfig,
    StoreConfig,
    SummaryConfig,
    VectorConfig,
)
from drag_knee_retriever.errors import InvalidSettingError
from drag_knee_retriever.llm.settings import SummarizerSettings
from drag_knee_retriever.model._settings import Settings
from drag_knee_retriever.facade._settings_reference import REFERENCE_BEGIN, REFERENCE_END, reference

ALL = (SearchConfig, FusionConfig, FocusConfig, BuildConfig, LeafConfig, SectionConfig, SummaryConfig,
       VectorConfig, EmbeddingConfig, EncoderRuntime, StoreConfig, OcrConfig, SummarizerSettings)
SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "settings.md"


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_field_is_declared_with_a_rule_and_a_doc(cls):
    assert issubclass(cls, Settings) and dataclasses.is_dataclass(cls)
    for field in dataclasses.fields(cls):
        rule = field.metadata.get("rule")
        assert rule is not None, f"{cls.__name__}.{field.name} has no declared rule"
        assert len(rule.doc.split()) >= 3, f"{cls.__name__}.{field.name} has no doc"
    cls()  # the defaults pass their own rules


def test_the_docs_reference_is_the_generated_one():
    text = SETTINGS_PAGE.read_text()
    start, end = text.index(REFERENCE_BEGIN), text.index(REFERENCE_END) + len(REFERENCE_END)
    assert text[start:end] == reference(), ("docs/reference/settings.md is stale: paste "
                                            "drag_knee_retriever.facade._settings_reference.reference() into it")
    for cls in ALL:
        assert cls.__name__ in text


def test_field_counts_and_nesting():
    """The shape the issue asked for: the method's knobs flat, the rest in groups (fields per class)."""
    counts = {cls.__name__: len(dataclasses.fields(cls)) for cls in ALL}
    assert counts == {"SearchConfig": 16, "FusionConfig": 2, "FocusConfig": 16, "BuildConfig": 5, "LeafConfig": 4,
                      "SectionConfig": 4, "SummaryConfig": 3, "VectorConfig": 6, "EmbeddingConfig": 11,
                      "EncoderRuntime": 5, "StoreConfig": 6, "OcrConfig": 13, "SummarizerSettings": 13}


# -- refusals: a setting that does nothing under the chosen method ------------------------------------


@pytest.mark.parametrize("kwargs, applies", [
    (dict(sensitivity=0.7), r"method='sensitive_knee' or 'branch'.*focus\.region_sensitivity"),
    (dict(method="fixed", sensitivity=0.7), "method='sensitive_knee' or 'branch'"),
    (dict(beam_width=5), r"method='fixed'.*max_roots bounds the roots"),
    (dict(method="branch", beam_width=5), "method='fixed'"),
    (dict(method="fixed", max_roots=10), "set beam_width"),
    (dict(method="fixed", focus=FocusConfig(pool=20)), "the focus step applies with method='knee' or 'sensitive_knee'"),
    (dict(method="branch", focus=FocusConfig(global_leaves=None)), "fixed and branch never focus"),
])
def test_a_setting_that_does_nothing_under_the_method_is_refused_naming_the_one_that_applies(kwargs, applies):
    with pytest.raises(ConfigError, match=applies):
        SearchConfig(**kwargs)


def test_unset_method_knobs_take_the_methods_default_and_vanish_elsewhere():
    assert (SearchConfig().beam_width, SearchConfig().sensitivity, SearchConfig().max_roots) == (None, None, 20)
    fixed = SearchConfig(method="fixed")
    assert (fixed.beam_width, fixed.max_roots, fixed.sensitivity) == (3, None, None)
    assert SearchConfig(method="branch").sensitivity == SearchConfig(method="sensitive_knee").sensitivity == 0.85
    # A copy that only changes the method keeps no knob the new method ignores (the default carried over).
    assert dataclasses.replace(fixed, method="knee") == SearchConfig()
    # ... but a knob the user set is not silently dropped by a plain copy.
    with pytest.raises(ConfigError, match="beam_width=5"):
        dataclasses.replace(SearchConfig(method="fixed", beam_width=5), method="knee")


def test_a_per_search_method_change_drops_the_old_methods_knobs():
    fixed = SearchConfig(method="fixed", beam_width=5, focus=None)
    assert fixed.with_overrides(method="knee") == SearchConfig(focus=None)
    sensitive = SearchConfig(method="sensitive_knee", sensitivity=0.5, focus=FocusConfig(pool=20))
    assert sensitive.with_overrides(method="fixed") == SearchConfig(method="fixed")
    assert sensitive.with_overrides(method="knee").focus == FocusConfig(pool=20)  # the focus still applies
    assert SearchConfig().with_overrides(method="fixed", beam_width=1).beam_width == 1
    assert SearchConfig().with_overrides(focus=False).focus is None
    with pytest.raises(InvalidSettingError, match="sensitivity=0.5 does nothing with method='knee'"):
        SearchConfig().with_overrides(sensitivity=0.5)


def test_sibling_weight_belongs_to_magnitude_scores():
    with pytest.raises(ConfigError, match=r"sibling_weight=0.1 does nothing with scores='rrf'"):
        FocusConfig(scores="rrf", sibling_weight=0.1)
    assert dataclasses.replace(FocusConfig(), scores="rrf").sibling_weight is None


@pytest.mark.parametrize("build, message", [
    (lambda: LeafConfig(min_chars=3000), r"min_chars must be an integer in \[0, max_chars\)"),
    (lambda: LeafConfig(passage_words=5), "passage_words must be an integer >= 20 or None"),
    (lambda: SectionConfig(outline="yes"), "SectionConfig.outline must be True or False"),
    (lambda: SummaryConfig(keywords=-1), "SummaryConfig.keywords must be an integer >= 0"),
    (lambda: VectorConfig(sparse="bm42"), "VectorConfig.sparse must be one of 'auto', 'text\\+keywords'"),
    (lambda: EncoderRuntime(parallel=65), r"EncoderRuntime.parallel must be an integer in \[1, 64\]"),
    (lambda: EmbeddingConfig(language="french"), "'english' or 'russian'"),
    (lambda: EmbeddingConfig(dense=lambda texts: [[1.0]] * len(texts), model_path="/m"),
     "dense is your own dense model, so model_path"),
    (lambda: StoreConfig(engine="cloud"), "StoreConfig.engine must be one of 'edge', 'local', 'server', 'auto'"),
    (lambda: StoreConfig(timeout=0), r"StoreConfig.timeout must be a number in \(0, 3600\]"),
    (lambda: OcrConfig(languages=("english", "klingon")), "OCR language 'klingon' is not known"),
    (lambda: SummarizerSettings(language=""), "language must be a language name"),
    (lambda: BuildConfig(leaves={"max_chars": 10}), "LeafConfig.max_chars must be an integer >= 50"),
])
def test_every_rule_names_the_setting_and_what_it_takes(build, message):
    with pytest.raises(ConfigError, match=message):
        build()


# -- the old flat spellings ------------------------------------------------------------------------


FLAT_SEARCH = [("fusion_weights", [(0.2, 0.8)], "fusion", "weights"),
               ("focus_pool", 20, "focus", "pool"), ("region_sensitivity", 0.9, "focus", "region_sensitivity"),
               ("focus_global", None, "focus", "global_leaves"), ("merge_ratio", None, "focus", "merge_ratio"),
               ("focus_scores", "rrf", "focus", "scores"), ("sibling_weight", 0.5, "focus", "sibling_weight")]


@pytest.mark.parametrize("old, value, group, name", FLAT_SEARCH)
def test_old_flat_search_settings_warn_and_land_in_their_group(old, value, group, name):
    with pytest.warns(DeprecationWarning, match=rf"SearchConfig\({old}=...\) is deprecated and will be removed in 0\.2\.0.*use "
                                                rf"SearchConfig\({group}=\w+Config\({name}=...\)\)"):
        config = SearchConfig(**{old: value})
    expected = value if not isinstance(value, list) else tuple(tuple(p) for p in value)
    assert getattr(getattr(config, group), name) == expected
    with pytest.warns(DeprecationWarning, match=rf"SearchConfig.{old} is deprecated.*SearchConfig.{group}.{name}"):
        assert getattr(config, old) == expected


def test_focus_pool_none_switches_the_focus_off_and_flat_names_combine():
    with pytest.warns(DeprecationWarning):
        assert SearchConfig(focus_pool=None).focus is None
        combined = SearchConfig(focus_pool=20, focus_scores="rrf", focus_global=None, fusion_weights=[(0.2, 0.8)])
    assert combined == SearchConfig(fusion=FusionConfig(weights=((0.2, 0.8),)), focus=FocusConfig(pool=20, scores="rrf",
                                                                                    global_leaves=None))
    with pytest.warns(DeprecationWarning):  # dataclasses.replace with an old name, as benchmarks did
        assert dataclasses.replace(SearchConfig(), focus_pool=5).focus.pool == 5


FLAT_BUILD = [("max_leaf_chars", 900, "leaves", "max_chars"), ("min_leaf_chars", 20, "leaves", "min_chars"),
              ("passage_words", None, "leaves", "passage_words"), ("split_pages_over", 300, "leaves", "split_pages_over"),
              ("use_outline", True, "sections", "outline"), ("detect_headings", True, "sections", "headings"),
              ("inner_vectors", "centroid", "vectors", "inner_dense"), ("leaf_text", "description", "vectors", "leaf_dense"),
              ("sparse_text", "keywords", "vectors", "sparse"),
              ("leaf_context", ("title",), "vectors", "context"), ("context_metadata", ("year",), "vectors", "context_metadata")]


@pytest.mark.parametrize("old, value, group, name", FLAT_BUILD)
def test_old_flat_build_settings_warn_and_land_in_their_group(old, value, group, name):
    with pytest.warns(DeprecationWarning, match=rf"BuildConfig\({old}=...\).*BuildConfig\({group}="):
        config = BuildConfig(**{old: value})
    assert getattr(getattr(config, group), name) == value
    # The document fingerprint keeps the flat form of the release before: stored indexes stay valid.
    assert f"{old}={value!r}" in config.fingerprint()


def test_the_document_fingerprint_is_the_one_of_the_flat_release():
    assert BuildConfig().fingerprint() == (
        "BuildConfig(branching=3, max_leaf_chars=2000, min_leaf_chars=200, summary_sentences=3, summary_max_chars=600, "
        "keywords=8, inner_vectors='both', use_markdown_sections=True, leaf_text='own', sparse_text='auto', "
        "inner_sparse='span', passage_words=120, split_pages_over=200, use_outline=False, detect_headings=False, "
        "leaf_context=('section',), context_metadata=())")


@pytest.mark.parametrize("cls, old", [(SearchConfig, "rrf_k"), (BuildConfig, "summary_sentences"),
                                      (BuildConfig, "summary_max_chars"), (BuildConfig, "keywords"),
                                      (BuildConfig, "use_markdown_sections"), (BuildConfig, "inner_sparse"),
                                      (EmbeddingConfig, "batch_size"), (EmbeddingConfig, "max_batch_chars")])
def test_the_old_spellings_no_readme_taught_are_gone(cls, old):
    """Issue 39 item 5: settled before the first tagged release; CHANGELOG lists them with the new names."""
    with pytest.raises(TypeError, match=rf"{cls.__name__}\(\) got unexpected keyword argument\(s\) '{old}'"):
        cls(**{old: 3})


@pytest.mark.parametrize("old", ["threads", "providers", "parallel"])
def test_old_flat_embedding_runtime_settings_warn(old):
    value = ("CPUExecutionProvider",) if old == "providers" else 8
    with pytest.warns(DeprecationWarning, match=rf"EmbeddingConfig\(runtime=EncoderRuntime\({old}=...\)\)"):
        config = EmbeddingConfig(**{old: value})
    assert getattr(config.runtime, old) == value


def test_the_new_spellings_warn_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SearchConfig(method="fixed", beam_width=2, fusion=FusionConfig(rrf_k=3), focus=None)
        BuildConfig(leaves=LeafConfig(passage_words=None), vectors=VectorConfig(context=("title",)))
        EmbeddingConfig(runtime=EncoderRuntime(threads=1))
        OcrConfig(languages=("english", "russian"))


# -- one language vocabulary -----------------------------------------------------------------------


def test_one_language_vocabulary_lower_case_names():
    assert EmbeddingConfig(language="Russian").language == "russian"
    assert OcrConfig(languages=("english", "russian")).tesseract_languages == "eng+rus"
    assert OcrConfig(languages="english+german").languages == ("english", "german")
    assert SummarizerSettings(language="russian").prompt_language == "Russian"
    with pytest.warns(DeprecationWarning, match=r"Tesseract codes.*OcrConfig\(languages=\('english', 'russian'\)\)"):
        old = OcrConfig(languages="eng+rus")
    assert old == OcrConfig(languages=("english", "russian")) and old.tesseract_languages == "eng+rus"  # same cache key


# -- the public face -------------------------------------------------------------------------------


def test_the_package_exports_what_public_methods_take_and_return():
    exported = set(drag_knee_retriever.__all__)
    assert "CliError" not in exported
    assert {"DocumentInfo", "StoredDocument", "OrphanSweep", "IngestReport", "QueryVectors", "NodeStore", "Encoder",
            "StoreConfig", "FocusConfig", "FusionConfig", "LeafConfig", "SectionConfig", "SummaryConfig",
            "VectorConfig", "EncoderRuntime", "SearchOptions"} <= exported
    from drag_knee_retriever.facade._index import DocumentInfo, StoredDocument
    from drag_knee_retriever.build._ingest import OrphanSweep

    assert drag_knee_retriever.DocumentInfo is DocumentInfo and drag_knee_retriever.StoredDocument is StoredDocument
    assert drag_knee_retriever.OrphanSweep is OrphanSweep
    with pytest.warns(DeprecationWarning, match=r"drag_knee_retriever.cli.CliError"):
        from drag_knee_retriever.cli import CliError

        assert drag_knee_retriever.CliError is CliError


def test_the_constructor_reads_at_a_glance():
    import inspect

    from drag_knee_retriever import DragKneeIndex

    params = inspect.signature(DragKneeIndex.__init__).parameters
    assert list(params) == ["self", "location", "embedding", "build", "search", "summarizer", "store", "deprecated"]
    assert params["location"].default == ":memory:"
    assert re.search(r"one argument", DragKneeIndex.__doc__ or "")


def test_a_misspelled_setting_names_the_one_meant():
    with pytest.raises(TypeError, match=r"SearchConfig\(\) got .*'beam_widht' \(did you mean 'beam_width'\?\)"):
        drag_knee_retriever.SearchConfig(beam_widht=3)
    with pytest.raises(TypeError, match=r"'colection' \(did you mean 'collection'\?\); its settings are collection,"):
        drag_knee_retriever.StoreConfig(colection="x")
    with pytest.raises(TypeError, match=r"'focus_pol' \(did you mean 'focus_pool'\?\)"):  # an old spelling is meant
        drag_knee_retriever.SearchConfig(focus_pol=3)
    with pytest.raises(TypeError, match=r"its settings are method,.*explain, identity_weight, identity_coverage, identity_keys, max_tokens, max_words\.$"):  # the old ones are not offered
        drag_knee_retriever.SearchConfig(xyzzy=1)
    with pytest.warns(DeprecationWarning):
        assert drag_knee_retriever.SearchConfig(focus_pool=20).focus.pool == 20  # old spellings still work
    assert dataclasses.replace(drag_knee_retriever.SearchConfig(), explain=True).explain  # replace() unaffected
