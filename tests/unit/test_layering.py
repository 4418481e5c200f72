"""The import layering of the package, read from the source (ast), not from a running import.

Every ``import`` / ``from ... import`` of every module counts, also those inside functions (a lazy
import is still a dependency); only ``if TYPE_CHECKING:`` blocks are left out. Rules:

- no import climbs a layer: :data:`LAYERS` lists the layers bottom first, and a module imports only
  its own layer and those below (the search side sits below the build side, so this alone keeps
  reading apart from writing);
- the search path (the walk, the context fetch, the store and its engines, the encoder and what
  they import, transitively) imports nothing of the build path (builder, ingest, vectorize,
  summarize, loaders, OCR, headings, statements, LLM);
- ids (``ids.py``) and the stored point's schema (``point_schema.py``) have one owner each, below
  both paths: ``ids`` imports nothing of the package, ``point_schema`` only the node types;
- core modules (everything but the adapters, the CLI and eval) import no adapter, no CLI, no eval;
- ``nodes.py`` imports nothing of the package but ``errors``;
- no module uses another module's private (``_x``) name: a name used outside its module is public
  there (documented) or lives where it is used;
- the package imports nothing of the repository outside it (``benchmarks``, whose dataset loaders
  are not in the wheel; the tests);
- no import cycle among the package's modules.

A new rule is one line in ``RULES``: (modules it applies to, what they may not import) or an
allow-list with ``only=`` (e.g. the store engines may import only ``store.base``,
``store.filters``, the ids and the point schema); ``transitive=True`` checks everything the
modules import, directly or not.

``python tests/unit/test_layering.py`` prints the layers, every import that climbs one and every
private name used across modules (the figures of issue 23; ``benchmarks/query_path.py`` traces a
real search through the layers).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

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

#: The package's layers, bottom first. A module may import its own layer and those below, never one
#: above (``test_no_import_climbs_a_layer``). A module belongs to the layer of its longest prefix
#: here; the package's ``__init__`` is the facade. The read side (a search) sits below the write
#: side (an ingest): the search path imports nothing of the build path, while an ingest may use
#: what a search uses.
LAYERS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("base", ("errors", "redact", "disk", "knee", "bm25_idf")),
    # settings / languages (the declarative settings of issue 23's part A) sit with config.
    ("data", ("nodes", "ids", "point_schema", "config", "settings", "languages", "query_args")),
    ("encoding", ("embeddings",)),
    ("store", ("store",)),
    # search/: the one search pipeline (plan, roots, pipeline) and its two drivers, over the walk,
    # the budget fill, the context check and the relevance scores.
    ("read", ("magnitude", "identity", "identity_terms", "traversal", "context", "budget", "page_ranking", "relevance", "compat",
              "search")),
    ("write", ("headings", "statements", "ocr", "summarize", "loaders", "builder", "vectorize", "ingest", "llm")),
    ("facade", ("index", "opening", "listing", "render", "sample", "settings_reference", "")),
    ("edge", ("integrations", "eval", "cli")),
)
LAYER_NAMES = tuple(name for name, _ in LAYERS)
#: The build path: what an ingest runs and a search never imports.
BUILD_PATH = LAYERS[LAYER_NAMES.index("write")][1]


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer (longest matching prefix)."""
    best, where = -1, -1
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in _p(*prefixes):
            if (module == prefix or (prefix != PACKAGE and module.startswith(prefix + "."))) and len(prefix) > best:
                best, where = len(prefix), number
    if where < 0:
        raise KeyError(f"{module} is in no layer of LAYERS: add it")
    return where


def closure(modules: Iterable[str]) -> Set[str]:
    """``modules`` and everything they import, directly or not."""
    seen: Set[str] = set()
    todo = list(modules)
    while todo:
        module = todo.pop()
        if module in seen or module not in GRAPH:
            continue
        seen.add(module)
        todo.extend(GRAPH[module])
    return seen


@dataclass(frozen=True)
class Rule:
    """Modules under ``applies`` (minus ``exempt``) may import nothing under ``forbid``, or, with
    ``only``, nothing of the package outside ``only``; ``transitive``: nor may anything they import."""

    name: str
    applies: Tuple[str, ...]
    forbid: Tuple[str, ...] = ()
    only: Optional[Tuple[str, ...]] = None
    exempt: Tuple[str, ...] = field(default=())
    transitive: bool = False

    def modules(self) -> List[str]:
        return [m for m in MODULES if _under(m, self.applies) and not _under(m, self.exempt)]

    def violations(self, module: str) -> List[str]:
        imported = closure([module]) - {module} if self.transitive else GRAPH[module]
        if self.only is not None:
            return sorted(m for m in imported if not _under(m, self.only))
        return sorted(m for m in imported if _under(m, self.forbid))


#: What a search runs: the pipeline and its drivers (``search/``), the walk, the budget fill, the
#: context fetch, the scores, the identities, the flat page ranking, the collection check, the store
#: with its engines and the query encoder (``DragKneeIndex.search`` builds the plan and runs the
#: pipeline; the facade itself serves both paths).
SEARCH_PATH = _p("search", "traversal", "budget", "context", "relevance", "identity", "identity_terms", "magnitude", "page_ranking",
                 "compat", "store", "embeddings", "knee")

RULES = [
    Rule("core modules import no adapter, no CLI, no eval", applies=_p(""), forbid=EDGE, exempt=EDGE),
    Rule("the search path imports nothing of the build path, directly or not", applies=SEARCH_PATH,
         forbid=_p(*BUILD_PATH), transitive=True),
    Rule("nodes.py imports nothing of the package but errors", applies=_p("nodes"), only=_p("errors")),
    # The search's operations are plain values and its two drivers know only them (and the store,
    # the encoder and the model they are handed), so any read-layer module may yield operations.
    Rule("search.ops and search.drivers import nothing of the package but search.ops",
         applies=_p("search.ops", "search.drivers"), only=_p("search.ops")),
    Rule("ids.py (every derived id) imports nothing of the package", applies=_p("ids"), only=()),
    Rule("point_schema.py (the stored point) imports only the node types", applies=_p("point_schema"),
         only=_p("nodes", "errors")),
    # The engines share store.base/filters, the integrity check on open (and its node checks), the write
    # journal, the ids and the point schema
    # (and the data types) and never import each other; which engine library each may import is test_store_layering.py's job.
    Rule("store engines import only store.base/filters, ids and point_schema",
         # (qdrant_rank / qdrant_roots: the qdrant-client engine's rankings and roots' copy, mixins of store.qdrant)
         applies=_p("store.qdrant", "store.qdrant_rank", "store.qdrant_roots", "store.edge", "store.memory"),
         only=_p("store.base", "store.filters", "store.pending", "store.journal", "store.checksums", "store.integrity", "store.edge",
                 "store.qdrant_rank", "store.qdrant_roots", "ids", "point_schema", "errors", "nodes",
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


# -- layers ----------------------------------------------------------------------------------------


def climbs(graph: Dict[str, Set[str]]) -> List[Tuple[str, str]]:
    """Every import ``(importer, imported)`` that reaches a higher layer than the importer's."""
    return sorted((a, b) for a in graph for b in graph[a] if b in MODULES and layer_of(b) > layer_of(a))


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)  # raises naming the module
    assert LAYER_NAMES.index("read") < LAYER_NAMES.index("write")
    assert layer_of(f"{PACKAGE}.store.edge.engine") == LAYER_NAMES.index("store")
    assert layer_of(PACKAGE) == LAYER_NAMES.index("facade")


def test_the_climb_finder_finds_a_climb() -> None:
    graph = {f"{PACKAGE}.context": {f"{PACKAGE}.builder", f"{PACKAGE}.nodes"}, f"{PACKAGE}.builder": {f"{PACKAGE}.ids"}}
    assert climbs(graph) == [(f"{PACKAGE}.context", f"{PACKAGE}.builder")]


def test_no_import_climbs_a_layer() -> None:
    found = climbs(GRAPH)
    assert not found, "imports that climb a layer (see LAYERS): " + "; ".join(
        f"{a} ({LAYER_NAMES[layer_of(a)]}) imports {b} ({LAYER_NAMES[layer_of(b)]})" for a, b in found)


# -- private names ---------------------------------------------------------------------------------


def private_uses(module: str, source: Optional[str] = None) -> List[Tuple[str, str]]:
    """The private names ``(owner module, _name)`` that ``module`` takes from another package module:
    ``from .x import _name`` and ``x._name`` on an imported module (``_x`` modules themselves, a
    package's internal files, may be imported; dunder names are not private)."""
    path = MODULES.get(module)
    is_package = path is not None and path.name == "__init__.py"
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))  # type: ignore[union-attr]
    aliases: Dict[str, str] = {}
    found: Set[Tuple[str, str]] = set()

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source_module = _resolve(module, is_package, node.level, node.module)
            if not (source_module == PACKAGE or source_module.startswith(PACKAGE + ".")):
                continue
            for alias in node.names:
                candidate = f"{source_module}.{alias.name}"
                if candidate in MODULES:
                    aliases[alias.asname or alias.name] = candidate
                elif private(alias.name) and source_module != module:
                    found.add((source_module, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and private(node.attr)):
            found.add((aliases[node.value.id], node.attr))
    return sorted(found)


def test_the_private_name_finder_finds_one() -> None:
    source = ("from .builder import _paragraphs, leaf_id\nfrom .store.edge import fast\n"
              "from . import knee as K\nx = fast._fuse, K._PURE_MAX, fast.__doc__\n")
    assert private_uses(f"{PACKAGE}.context", source) == [
        (f"{PACKAGE}.builder", "_paragraphs"), (f"{PACKAGE}.knee", "_PURE_MAX"), (f"{PACKAGE}.store.edge.fast", "_fuse")]


def test_no_private_name_crosses_a_module() -> None:
    found = {m: private_uses(m) for m in MODULES}
    found = {m: uses for m, uses in found.items() if uses}
    assert not found, "private names used outside their module (make them public there, documented, or " \
        "move them where they are used): " + "; ".join(
            f"{m} uses {', '.join(f'{o}.{n}' for o, n in uses)}" for m, uses in found.items())


def test_the_package_imports_nothing_of_the_repository_outside_it() -> None:
    """The wheel holds the package only: no module may import the benchmarks (their dataset loaders) or tests."""
    found = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            found += [(module, n) for n in names if n.split(".")[0] in ("benchmarks", "tests", "support")]
    assert not found, f"the package imports outside itself: {found}"


if __name__ == "__main__":  # the figures: layers, climbs, private names across modules
    short = lambda m: m[len(PACKAGE) + 1:] or PACKAGE  # noqa: E731
    for number, (name, _) in enumerate(LAYERS):
        print(f"{number} {name:<9} " + " ".join(sorted(short(m) for m in MODULES if layer_of(m) == number)))
    found_climbs = climbs(GRAPH)
    print(f"imports that climb a layer: {len(found_climbs)}")
    for a, b in found_climbs:
        print(f"  {short(a)} -> {short(b)}")
    uses = [(m, o, n) for m in MODULES for o, n in private_uses(m)]
    print(f"private names used outside their module: {len({(o, n) for _, o, n in uses})} names, {len(uses)} uses")
    for m, o, n in uses:
        print(f"  {short(m)} uses {short(o)}.{n}")
    search = closure(SEARCH_PATH_MODULES := [m for m in MODULES if _under(m, SEARCH_PATH)])
    print(f"the search path's import closure: {len(search)} modules, of the build path: "
          f"{sorted(short(m) for m in search if _under(m, _p(*BUILD_PATH)))}")
