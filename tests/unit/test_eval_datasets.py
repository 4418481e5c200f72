"""The benchmark dataset loaders (benchmarks/datasets, outside the wheel): counts and gold mappings as the
dataset READMEs describe them."""

import pytest

from benchmarks.datasets import DatasetError, datasets_root, load_dataset
from benchmarks.datasets.covidqa import covidqa_lines, load_covidqa, resolve_answer_span
from benchmarks.datasets.hotpotqa import load_hotpotqa
from benchmarks.datasets.xquad import load_xquad
from drag_knee_retriever.model._nodes import Document

try:
    datasets_root()
    HAVE_DATA = True
except DatasetError:
    HAVE_DATA = False

needs_data = pytest.mark.skipif(not HAVE_DATA, reason="shared datasets folder not found (set DRAG_KNEE_DATASETS)")


# -- pure helpers (no data needed) -------------------------------------------------------------


def test_answer_span_exact_leading_space_and_shifted():
    context = "Header\nThe virus binds ACE2 receptors.\nMore text."
    start = context.index("The virus")
    exact = resolve_answer_span(context, "The virus binds ACE2", start)
    assert exact == (start, start + len("The virus binds ACE2"), "exact")
    # Quirk 1: the answer starts with a space that answer_start does not count.
    lead = resolve_answer_span(context, " The virus binds ACE2", start)
    assert lead == (start, start + len("The virus binds ACE2"), "unstripped")
    # Quirk 2: offsets shifted by a few characters -> nearest occurrence.
    shifted = resolve_answer_span(context, "binds ACE2", context.index("binds") + 3)
    assert shifted == (context.index("binds"), context.index("binds") + len("binds ACE2"), "nearest")
    assert resolve_answer_span(context, "not in the text", 0) is None


def test_nearest_occurrence_prefers_the_closest_copy():
    context = "alpha beta\n" + "x" * 50 + "\nalpha beta"
    second = context.rindex("alpha")
    assert resolve_answer_span(context, "alpha beta", second - 2)[0] == second


def test_covidqa_lines_skip_blank_lines_and_keep_offsets():
    context = "Title\n\n   \nAbstract: a b\nText: c"
    lines = covidqa_lines(context)
    assert [t for _, _, t in lines] == ["Title", "Abstract: a b", "Text: c"]
    for lo, hi, text in lines:
        assert context[lo:hi] == text


def test_unknown_dataset_and_bad_limits_are_clear_errors(tmp_path):
    with pytest.raises(DatasetError, match="Unknown dataset"):
        load_dataset("squad", tmp_path)
    with pytest.raises(DatasetError, match="No datasets folder"):
        datasets_root(tmp_path / "missing")
    if HAVE_DATA:
        with pytest.raises(DatasetError, match="positive integer"):
            load_xquad("en", limit_docs=0)


# -- the real files ----------------------------------------------------------------------------


def _check_consistent(ds):
    by_id = {d.id: d for d in ds.documents}
    for doc in ds.documents:
        assert isinstance(doc, Document)
        assert doc.pages is not None and list(doc.pages) == ds.units[doc.id]
        assert all(p.strip() == p and p for p in doc.pages)
    for q in ds.questions:
        assert q.gold, q.id
        for doc_id, ordinal in q.gold:
            assert doc_id in by_id
            assert 0 <= ordinal < len(ds.units[doc_id])
    for doc_id in list(ds.units)[:5]:
        text = ds.full_text(doc_id)
        for unit, (lo, hi) in zip(ds.units[doc_id], ds.unit_offsets(doc_id)):
            assert text[lo:hi] == unit


@needs_data
def test_covidqa_full_counts_match_the_readme():
    ds = load_covidqa()
    assert len(ds.documents) == 98
    assert ds.leaf_count == 5269
    assert len(ds.questions) == 1380  # every answer resolves after the two quirks
    assert sum(1 for q in ds.questions if len(q.gold) > 1) == 75
    assert any("leading space" in n and n.endswith("196") for n in ds.notes)
    assert any("nearest" in n and n.endswith("38") for n in ds.notes)
    _check_consistent(ds)


@needs_data
def test_covidqa_gold_lines_contain_the_answer():
    ds = load_covidqa(limit_docs=3)
    checked = 0
    for q in ds.questions:
        if len(q.gold) == 1:
            doc_id, ordinal = next(iter(q.gold))
            assert q.answer in ds.units[doc_id][ordinal]
            checked += 1
    assert checked >= 10


@needs_data
def test_covidqa_limits_keep_questions_on_kept_docs_only():
    ds = load_covidqa(limit_docs=3, limit_questions=10)
    assert len(ds.documents) == 3
    assert len(ds.questions) == 10
    kept = {d.id for d in ds.documents}
    assert all(q.gold_docs <= kept for q in ds.questions)
    _check_consistent(ds)


@needs_data
@pytest.mark.parametrize("lang", ["en", "ru"])
def test_xquad_articles_paragraphs_and_gold(lang):
    ds = load_xquad(lang)
    assert ds.language == ("russian" if lang == "ru" else "english")
    assert len(ds.documents) == 48 and ds.leaf_count == 240
    assert len(ds.questions) == 1190
    assert all(len(q.gold) == 1 for q in ds.questions)
    assert all("\ufeff" not in u for units in ds.units.values() for u in units)
    q = ds.questions[0]
    (doc_id, ordinal), = q.gold
    assert q.answer in ds.units[doc_id][ordinal]
    _check_consistent(ds)


@needs_data
def test_xquad_question_ids_are_parallel_across_languages():
    en = load_xquad("en", limit_docs=2)
    ru = load_xquad("ru", limit_docs=2)
    assert [q.id[len("xquad-en-"):] for q in en.questions] == [q.id[len("xquad-ru-"):] for q in ru.questions]
    assert [q.gold for q in en.questions] == [
        frozenset((d.replace("-ru-", "-en-"), o) for d, o in q.gold) for q in ru.questions
    ]


@needs_data
def test_hotpotqa_sentences_and_two_document_gold():
    ds = load_hotpotqa()
    assert len(ds.documents) == 994
    assert ds.leaf_count == 4139 - 2  # two blank sentences are dropped (never gold)
    assert len(ds.questions) == 100
    assert all(len(q.gold_docs) == 2 for q in ds.questions)
    assert sum(len(q.gold) for q in ds.questions) == 229
    _check_consistent(ds)


@needs_data
def test_hotpotqa_doc_limit_keeps_whole_question_pools():
    ds = load_hotpotqa(limit_docs=30)
    assert len(ds.documents) == 30
    assert len(ds.questions) >= 2  # the first pools are complete, so their questions survive
    kept = {d.id for d in ds.documents}
    assert all(q.gold_docs <= kept for q in ds.questions)


@needs_data
@pytest.mark.parametrize("name", ["covidqa", "xquad-en", "xquad-ru", "hotpotqa"])
def test_answer_spans_point_at_the_evidence_inside_each_gold_leaf(name):
    ds = load_dataset(name, limit_docs=30)
    assert ds.questions
    for q in ds.questions:
        assert set(q.answer_spans) == set(q.gold)
        for (doc_id, ordinal), (a, b) in q.answer_spans.items():
            unit = ds.units[doc_id][ordinal]
            assert 0 <= a < b <= len(unit)
            if name == "hotpotqa":
                assert (a, b) == (0, len(unit))
            elif len(q.gold) == 1:
                assert unit[a:b] == q.answer.strip()


# -- the registry (benchmarks/datasets/__init__.py) ------------------------------------------------


def test_a_registered_loader_is_found_gets_only_the_options_it_declares_and_records_them(tmp_path):
    from benchmarks.datasets import LOADERS, dataset, dataset_names
    from benchmarks.datasets.common import make_dataset
    from drag_knee_retriever.eval.dataset import Question

    calls = []

    def load_tiny(root=None, *, limit_docs=None, limit_questions=None, shared_store=False):
        calls.append((root, limit_docs, limit_questions, shared_store))
        docs = [("a", ["one unit", "two units"], {}), ("b", ["three"], {})]
        questions = [Question(id="q", text="which?", gold=frozenset({("a", 1)}))]
        return make_dataset("tiny", "english", docs, questions, limit_docs, limit_questions, "here", [])

    dataset_names()  # the real loaders first
    dataset("tiny")(load_tiny)
    try:
        assert "tiny" in dataset_names() and "hotpotqa" in dataset_names()
        ds = load_dataset("tiny", tmp_path, limit_docs=1, shared_store=True, max_doc_pages=None)
        assert calls == [(tmp_path, 1, None, True)] and [d.id for d in ds.documents] == ["a"]
        assert ds.load_options == {"limit_docs": 1, "limit_questions": None, "max_doc_pages": None, "shared_store": True}
        with pytest.raises(DatasetError, match="tiny takes no max_doc_pages: max_doc_pages applies to mmlongbench."):
            load_dataset("tiny", tmp_path, max_doc_pages=20)
        with pytest.raises(ValueError, match="registered twice"):
            dataset("tiny")(lambda root=None, **kw: None)
    finally:
        LOADERS.pop("tiny", None)
