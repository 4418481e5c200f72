"""The store package's layering: each engine library is imported by its engine only, and the shared
modules import no engine (the engines' own import rule is in test_layering.py's RULES).

Read from the source (AST), so a lazy import inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Tuple

import drag_knee_retriever

PACKAGE = Path(drag_knee_retriever.__file__).resolve().parent
STORE = PACKAGE / "store"
SHARED = {"base", "filters", "pending", "layout", "copies"}


def imports(path: Path) -> Iterator[Tuple[str, int]]:
    """Every import of a module as an absolute dotted name (relative ones resolved)."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if node.module is None or name in ("drag_knee_retriever.store", "drag_knee_retriever.store.edge"):
                for alias in node.names:  # "from . import filters": the module imported is the alias
                    yield f"{name}.{alias.name}", node.lineno
            else:
                yield name, node.lineno


def test_each_engine_library_is_imported_in_one_place_only():
    for path in sorted(PACKAGE.rglob("*.py")):
        for name, line in imports(path):
            where = f"{path.relative_to(PACKAGE)}:{line}"
            if name.split(".")[0] == "qdrant_edge":
                assert path.parent == STORE / "edge", f"{where} imports qdrant_edge outside store/edge/"
            if name.split(".")[0] == "qdrant_client":
                assert path == STORE / "qdrant.py" or not path.is_relative_to(STORE), \
                    f"{where} imports qdrant_client in another store module"


def test_shared_store_modules_import_no_engine():
    for name in SHARED:
        for imported, line in imports(STORE / f"{name}.py"):
            assert not imported.startswith(("drag_knee_retriever.store.qdrant", "drag_knee_retriever.store.edge",
                                            "drag_knee_retriever.store.memory", "qdrant")), f"{name}.py:{line}"
