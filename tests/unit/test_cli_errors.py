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
