"""The CLI's error mapping: every exception becomes one stderr line and an exit code (in-process)."""

from __future__ import annotations

import pytest

from drag_knee_retriever import DragKneeError
from drag_knee_retriever.cli import CliError
from drag_knee_retriever.cli import EXIT_USAGE, main, run


def test_usage_errors_exit_2_with_one_line(capsys: pytest.CaptureFixture) -> None:
    assert run(["search", "--no-such-option", "x"]) == EXIT_USAGE
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("drag-knee: error: ") and "--help" in lines[0]


def test_cli_error_code_and_message(tmp_path, capsys: pytest.CaptureFixture) -> None:
    assert run(["stats", "--index", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err
    assert "No index at" in err and "drag-knee ingest" in err and "Traceback" not in err
    assert run(["search", "   "]) == EXIT_USAGE


def test_main_exits_with_the_code() -> None:
    with pytest.raises(SystemExit) as info:
        main(["search", "   "])
    assert info.value.code == EXIT_USAGE


def test_cli_error_is_a_drag_knee_error() -> None:
    assert issubclass(CliError, DragKneeError)
    assert CliError("x", 7).code == 7


def test_the_search_commands_options_reach_index_search_under_their_own_names() -> None:
    # The command's per-search options are read from its parameters by name (SEARCH_OPTIONS), so a
    # new setting needs only its option; the CLI's own spellings map to the index's.
    import inspect

    from drag_knee_retriever.cli.commands import _search_kwargs, search
    from drag_knee_retriever.cli.options import Engine, Method, Order
    from drag_knee_retriever.config import SEARCH_OPTIONS

    shared = set(inspect.signature(search).parameters) & set(SEARCH_OPTIONS)
    assert shared == {"method", "sensitivity", "beam_width", "max_roots", "order", "max_tokens", "max_words"}
    params = dict(query="q", method=Method.fixed, beam_width=2, sensitivity=None, max_roots=None, order=Order.document,
                  top_k=3, score_threshold=0.5, filter_=["kind=pdf"], trace=True, chars=240, engine=Engine.auto)
    assert _search_kwargs(params) == {"method": "fixed", "beam_width": 2, "order": "document", "max_results": 3,
                                      "min_score": 0.5, "filters": {"kind": "pdf"}}
    assert _search_kwargs(dict(query="q", trace=False, filter_=None)) == {}
