"""Your own corpus + questions file as an evaluation dataset: gold by document, page and passage."""

from __future__ import annotations

import json

import pytest

from drag_knee_retriever.eval.dataset import DatasetError
from drag_knee_retriever.eval.own import load_own_dataset

BEES = ("# Bees\n\n" + "Varroa mites spread deformed wing virus through honeybee colonies, and untreated colonies "
        "with heavy mite loads rarely survive a second winter in temperate climates.\n\n"
        + "Beekeepers first reported colony collapse in large numbers in the winter of 2006, when hives "
        "were found abandoned by their workers with the queen and the stores left behind.\n")
LAVA = ("Basaltic lava is hot and runny and builds broad shield volcanoes such as those of Hawaii, "
        "whose gentle slopes come from flow after flow of fluid rock.\n\n"
        "Andesitic magma is viscous and traps gas, so stratovolcanoes erupt explosively and build "
        "steep cones of ash and lava layers.\n")


@pytest.fixture()
def corpus(tmp_path):
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "bees.md").write_text(BEES)
    (root / "lava.txt").write_text(LAVA)
    return root


def _questions(tmp_path, rows):
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_gold_by_passage_document_and_id(corpus, tmp_path):
    q = _questions(tmp_path, [
        {"id": "when", "question": "When was collapse first reported?", "gold": [{"text": "in the  WINTER of 2006"}]},
        {"question": "Which volcanoes erupt explosively?", "gold": ["lava.txt"]},
    ])
    ds = load_own_dataset(corpus, q)
    assert sorted(ds.units) == ["lava.txt", "notes/bees.md"]
    when, lava = ds.questions
    assert when.id == "when" and lava.id == "2"
    (doc, ordinal), = when.gold
    unit = ds.units[doc][ordinal]
    start, end = when.answer_spans[(doc, ordinal)]
    assert doc == "notes/bees.md" and unit[start:end] == "in the winter of 2006"
    assert lava.gold == {("lava.txt", i) for i in range(len(ds.units["lava.txt"]))}


@pytest.mark.parametrize("row, message", [
    ({"question": "x", "gold": ["nowhere.txt"]}, "unknown document 'nowhere.txt'"),
    ({"question": "x", "gold": [{"text": "not in the corpus at all"}]}, "is in no leaf"),
    ({"question": "x", "gold": [{"doc": "lava.txt", "pages": [2]}]}, "has no page 2"),
    ({"question": "", "gold": ["lava.txt"]}, "non-empty \"question\""),
    ({"question": "x"}, "needs \"gold\""),
    ("{not json", "not JSON"),
])
def test_bad_lines_name_the_line(corpus, tmp_path, row, message):
    with pytest.raises(DatasetError, match=message) as err:
        load_own_dataset(corpus, _questions(tmp_path, [row]))
    assert "line 1" in str(err.value)
