"""The word budget's fill (budget.fill, pack, first_words): pure functions over ids, words and groups."""

import pytest

from drag_knee_retriever.search._budget import Group, count_words, fill, first_words, pack
from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.store import RankedHit


def ranked(*ids):
    return [(i, 10.0 - n) for n, i in enumerate(ids)]


def test_first_fit_in_rank_order():
    words = {"a": 60, "b": 50, "c": 30, "d": 10}
    out = fill(ranked("a", "b", "c", "d"), words, {}, budget=100, merge_ratio=0.5)
    # b no longer fits after a; c and d, shorter and ranked later, still do
    assert [e.node_id for e in out.entries] == ["a", "c", "d"]
    assert out.used == 100 and not out.cut_to_budget


def test_a_page_replaces_its_passages_when_most_are_chosen_and_it_fits():
    page = Group("page", ("p1", "p2", "p3"))
    groups = {leaf: [page] for leaf in page.leaves}
    words = {"p1": 20, "p2": 20, "p3": 20, "x": 30}
    out = fill(ranked("p2", "x", "p1", "p3"), words, groups, budget=200, merge_ratio=0.5)
    ids = [e.node_id for e in out.entries]
    # p2 and p1 chosen (2 of 3 > 0.5): the page comes back whole in p2's place; p3 is inside it
    assert ids == ["page", "x"]
    assert out.used == 90  # the page once (60) and x, nothing twice
    assert out.entries[0].score == 10.0  # the best passage's score


def test_a_page_that_does_not_fit_leaves_its_passages_as_they_are():
    page = Group("page", ("p1", "p2", "p3"))
    groups = {leaf: [page] for leaf in page.leaves}
    words = {"p1": 20, "p2": 20, "p3": 200}
    out = fill(ranked("p1", "p2", "p3"), words, groups, budget=100, merge_ratio=0.5)
    assert [e.node_id for e in out.entries] == ["p1", "p2"]
    assert out.used == 40


def test_no_merge_at_or_below_the_ratio_nor_without_a_ratio():
    page = Group("page", ("p1", "p2", "p3", "p4"))
    groups = {leaf: [page] for leaf in page.leaves}
    words = dict.fromkeys(page.leaves, 10)
    half = fill(ranked("p1", "p2"), words, groups, budget=100, merge_ratio=0.5)
    assert [e.node_id for e in half.entries] == ["p1", "p2"]  # 2 of 4 is not more than half
    off = fill(ranked("p1", "p2", "p3"), words, groups, budget=100, merge_ratio=None)
    assert [e.node_id for e in off.entries] == ["p1", "p2", "p3"]


def test_pages_become_their_page_range():
    left, right = Group("pL", ("a1", "a2")), Group("pR", ("b1", "b2"))
    region = Group("range", ("a1", "a2", "b1", "b2"))
    groups = {"a1": [left, region], "a2": [left, region], "b1": [right, region], "b2": [right, region]}
    words = dict.fromkeys(region.leaves, 25)
    out = fill(ranked("a1", "a2", "b1"), words, groups, budget=100, merge_ratio=0.5)
    # a1+a2 -> page L; then b1 makes 3 of 4 leaves of the range: the range replaces both
    assert [e.node_id for e in out.entries] == ["range"]
    assert out.entries[0].leaves == region.leaves and out.used == 100


def test_unknown_lengths_stop_the_fill_and_are_asked_for():
    page = Group("page", ("p1", "p2", "p3"))
    groups = {leaf: [page] for leaf in page.leaves}
    out = fill(ranked("p1", "p2", "z"), {"p1": 5, "p2": 5}, groups, budget=100, merge_ratio=0.5)
    assert out.missing == {"p3"}  # the page's third passage must be read to price the page
    assert out.wants_more  # z's length is unknown: the ranking's read prefix ended there
    assert [e.node_id for e in out.entries] == ["p1", "p2"]


def test_the_best_leaf_longer_than_the_budget_comes_back_cut():
    out = fill(ranked("long", "longer"), {"long": 500, "longer": 900}, {}, budget=50, merge_ratio=0.5)
    assert out.cut_to_budget and [e.node_id for e in out.entries] == ["long"] and out.used == 50
    # ... but a shorter leaf further down is taken whole instead
    out = fill(ranked("long", "short"), {"long": 500, "short": 40}, {}, budget=50, merge_ratio=0.5)
    assert not out.cut_to_budget and [e.node_id for e in out.entries] == ["short"]


def test_first_words_keeps_the_text_as_written():
    text = "One  two\nthree\n\nfour five"
    assert first_words(text, 3) == "One  two\nthree"
    assert first_words(text, 99) == text
    assert count_words(first_words(text, 4)) == 4


def _hit(nid, score):
    node = TreeNode(id=nid, doc_id="d", level=1, is_leaf=True, span=Span(0, 0), text="")
    return RankedHit(node=node, score=score)


def test_pack_keeps_what_fits_in_order_and_cuts_the_best_when_nothing_does():
    hits = [_hit("a", 3.0), _hit("b", 2.0), _hit("c", 1.0)]
    texts = {"a": "w " * 60, "b": "w " * 50, "c": "w " * 30}
    kept, kept_texts = pack(hits, texts, 100)
    assert [h.node.id for h in kept] == ["a", "c"] and set(kept_texts) == {"a", "c"}
    kept, kept_texts = pack(hits, texts, 10)
    assert [h.node.id for h in kept] == ["a"] and count_words(kept_texts["a"]) == 10


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "100", 2**40])
def test_a_bad_budget_is_refused_with_what_to_give(bad):
    from drag_knee_retriever import SearchConfig
    from drag_knee_retriever.errors import ConfigError

    with pytest.raises(ConfigError, match=r"SearchConfig.max_tokens must be an integer >= 1 .*the results' token budget"):
        SearchConfig(max_tokens=bad)


def test_a_budget_starts_with_the_cut_then_follows_the_global_ranking():
    from drag_knee_retriever.search._page_ranking import budget_order
    from drag_knee_retriever.search._traversal import FocusPool

    pool = FocusPool(ranked=[_hit("a", 5.0), _hit("b", 4.0), _hit("c", 3.0), _hit("r", 1.0)],
                     global_hits=[_hit("c", 0.9), _hit("g", 0.8), _hit("a", 0.7)],
                     deeper=[_hit("c", 0.9), _hit("g", 0.8), _hit("d", 0.1)])
    order = budget_order(pool, keep=2)
    # the two leaves the cut keeps, the global ranking, the deeper ranking's new leaf, then the rest
    # of the pool; a leaf the pool did not score (g, d) gets the pool's lowest score
    assert [h.node.id for h in order] == ["a", "b", "c", "g", "d", "r"]
    assert [h.score for h in order] == [5.0, 4.0, 3.0, 1.0, 1.0, 1.0]


# -- the unit of a budget: model tokens (issue 40) ----------------------------------------------------


def _minilm_tokenizer():
    from pathlib import Path

    from tokenizers import Tokenizer

    import drag_knee_retriever

    return Tokenizer.from_file(str(Path(drag_knee_retriever.__file__).parent / "data" / "minilm" / "tokenizer.json"))


def test_a_tokenizer_counts_the_whole_text_and_cuts_at_a_token():
    from drag_knee_retriever.search._budget import token_unit

    tok = _minilm_tokenizer()  # shipped with truncation at 128 and padding: the budget turns both off
    unit = token_unit(tok)
    text = "angiotensin-converting enzyme 2 " * 100
    assert unit.count(text) > 128
    assert unit.count(text) > 2 * len(text.split())  # biomedical words are several word pieces each
    cut = unit.cut(text, 7)
    assert unit.count(cut) == 7 and text.startswith(cut)
    assert tok.truncation is not None  # the user's (or the model's) tokenizer is left as it was


def test_a_function_or_an_encode_method_counts_too():
    from drag_knee_retriever.search._budget import token_unit

    chars = token_unit(len, "len")
    assert chars.count("abc def") == 7
    assert chars.cut("abc def ghi", 8) == "abc def"

    class Tiktokenish:  # tiktoken's Encoding.encode takes no add_special_tokens
        def encode(self, text):
            return list(text.replace(" ", ""))

    assert token_unit(Tiktokenish()).count("ab cd") == 4


def test_a_wrong_token_counter_is_refused():
    from drag_knee_retriever.search._budget import token_unit
    from drag_knee_retriever.errors import ConfigError

    with pytest.raises(ConfigError, match="token_counter must be a tokenizer"):
        token_unit(42)
    with pytest.raises(ConfigError, match="must return the number of tokens"):
        token_unit(lambda text: "many").count("a b")


def test_the_encoders_input_limit_has_its_own_name():
    """EmbeddingConfig.max_tokens was the encoder's truncation in word pieces, the name the search
    budget now has: it is max_input_tokens, the old keyword kept with a warning."""
    from drag_knee_retriever import EmbeddingConfig

    assert EmbeddingConfig(max_input_tokens=128).max_input_tokens == 128
    with pytest.warns(DeprecationWarning, match=r"EmbeddingConfig\(max_input_tokens=...\)"):
        assert EmbeddingConfig(max_tokens=128).max_input_tokens == 128
