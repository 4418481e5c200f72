"""Raw exceptions and misleading advice (issue 25, items 8 and 9): one clear line that says what is
wrong and what to do, never a bare Python exception and never "the index is damaged" when it is not.

Each case is reproduced as an outsider met it: a bad ``--collection`` on the command line, a filter
nested 2,000 deep, a zeroed payload tracker in a real index folder, a lock file replaced by a
folder, a folder changing while it is walked.
"""

from __future__ import annotations

import pytest

from drag_knee_retriever import DragKneeIndex
from drag_knee_retriever.errors import ConfigError
from hardening_support import cli_all


@pytest.mark.parametrize("name", ["a/b", "..", "a:b", "x" * 300])
def test_a_bad_collection_name_is_named_not_a_damaged_index(name, tmp_path):
    """Item 9: ``drag-knee ingest d --engine local --collection a/b`` said the index "is damaged or
    not a drag-knee index ... Move the folder aside"; the folder was new and fine."""
    with pytest.raises(ConfigError, match="collection .* cannot be used"):
        DragKneeIndex(tmp_path / "api", engine="local", collection=name)


def test_cli_bad_collection_names_on_both_engines(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "note.txt").write_text("A note about lighthouses.\n")
    commands = [["ingest", "d", "--index", f"i-{engine}", "--engine", engine, "--collection", name]
                for engine in ("local", "edge") for name in ("a/b", "a:b")]
    for proc in cli_all(tmp_path, commands):
        assert proc.returncode == 1, (proc.args, proc.stderr[-1500:])
        line = proc.stderr.strip().splitlines()[-1]
        assert "collection " in line and "cannot be used" in line, (proc.args, proc.stderr[-1500:])
        assert "damaged" not in proc.stderr and "aside" not in proc.stderr, (proc.args, proc.stderr[-1500:])
