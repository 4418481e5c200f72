"""The import layering of the package, read from the source (ast), not from a running import.

Every ``import`` / ``from ... import`` of every module counts, also those inside functions (a lazy
import is still a dependency); only ``if TYPE_CHECKING:`` blocks are left out. Rules:

- core modules (everything but the adapters, the CLI and eval) import no adapter, no CLI, no eval;
- ``nodes.py`` imports nothing of the package but ``errors``;
- no import cycle among the package's modules.

A new rule is one line in ``RULES``: (modules it applies to, what they may not import) or an
allow-list with ``only=`` (e.g. the store engines may import only ``store.base``,
``store.filters`` and ``store.payload``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import pytest

import drag_knee_retriever

PACKAGE = "drag_knee_retriever"
ROOT = Path(drag_knee_retriever.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: Dict[str, Path] = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, is_package: bool, level: int, target: Optional[str]) -> str:
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(module: str) -> Set[str]:
    """The package modules ``module`` imports (``from P import name`` counts as P.name when that
    is a module, else as P)."""
    path = MODULES[module]
    is_package = path.name == "__init__.py"
    found: Set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                source = _resolve(module, is_package, child.level, child.module)
                for alias in child.names:
                    candidate = f"{source}.{alias.name}"
                    found.add(candidate if candidate in MODULES else source)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return {name for name in found if name == PACKAGE or name.startswith(PACKAGE + ".")} - {module}


GRAPH: Dict[str, Set[str]] = {module: _imports(module) for module in MODULES}


def _under(module: str, prefixes: Tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _p(*names: str) -> Tuple[str, ...]:
    return tuple(f"{PACKAGE}.{name}" if name else PACKAGE for name in names)


EDGE = _p("integrations", "cli", "eval")


@dataclass(frozen=True)
class Rule:
    """Modules under ``applies`` (minus ``exempt``) may import nothing under ``forbid``, or, with
    ``only``, nothing of the package outside ``only``."""

    name: str
    applies: Tuple[str, ...]
    forbid: Tuple[str, ...] = ()
    only: Optional[Tuple[str, ...]] = None
    exempt: Tuple[str, ...] = field(default=())

    def modules(self) -> List[str]:
        return [m for m in MODULES if _under(m, self.applies) and not _under(m, self.exempt)]

    def violations(self, module: str) -> List[str]:
        imported = GRAPH[module]
        if self.only is not None:
            return sorted(m for m in imported if not _under(m, self.only))
        return sorted(m for m in imported if _under(m, self.forbid))


RULES = [
    Rule("core modules import no adapter, no CLI, no eval", applies=_p(""), forbid=EDGE, exempt=EDGE),
    Rule("nodes.py imports nothing of the package but errors", applies=_p("nodes"), only=_p("errors")),
    # The engines share base/filters/payload (and the data types) and never import each other;
    # which engine library each may import is tests/unit/test_store_layering.py's job.
    Rule("store engines import only store.base/filters/payload", applies=_p("store.qdrant", "store.edge", "store.memory"),
         only=_p("store.base", "store.filters", "store.payload", "store.integrity", "store.edge", "errors", "nodes",
                 "config",
                 # engine-neutral helpers of issue 16: exact BM25 IDF, disk refusals, URL redaction
                 "bm25_idf", "disk", "redact")),
]


def test_every_module_is_seen() -> None:
    assert f"{PACKAGE}.nodes" in MODULES and f"{PACKAGE}.cli" in MODULES and len(MODULES) > 20
    # The parser resolves relative imports: nodes imports errors, the CLI imports the index.
    assert GRAPH[f"{PACKAGE}.nodes"] == {f"{PACKAGE}.errors"}
    assert f"{PACKAGE}.index" in set().union(*(GRAPH[m] for m in MODULES if m.startswith(f"{PACKAGE}.cli")))


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_layering_rule(rule: Rule) -> None:
    modules = rule.modules()
    assert modules, f"rule {rule.name!r} applies to no module: its prefixes are stale"
    broken = {m: rule.violations(m) for m in modules}
    broken = {m: v for m, v in broken.items() if v}
    assert not broken, f"{rule.name}: " + "; ".join(f"{m} imports {', '.join(v)}" for m, v in broken.items())


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    out: List[List[str]] = []
    counter = [0]

    def connect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle() -> None:
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles: " + " | ".join(" <-> ".join(c) for c in cycles)
