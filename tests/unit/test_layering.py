"""The import layering of the package, read from the source (ast), not from a running import.

Every ``import`` / ``from ... import`` of every module counts, also those inside functions (a lazy
import is still a dependency); only ``if TYPE_CHECKING:`` blocks are left out. Rules:

- no import climbs a layer: :data:`LAYERS` lists the layers bottom first, and a module imports only
  its own layer and those below (the search side sits below the build side, so this alone keeps
  reading apart from writing);
- the search path (the walk, the context fetch, the store and its engines, the encoder and what
  they import, transitively) imports nothing of the build path (builder, ingest, vectorize,
  summarize, loaders, OCR, headings, statements, LLM);
- ids (``model/_ids.py``) and the stored point's schema (``model/_point_schema.py``) have one owner
  each, below both paths: ``ids`` imports nothing of the package, ``point_schema`` only the node types;
- core modules (everything but the adapters, the CLI and eval) import no adapter, no CLI, no eval;
- ``model/_nodes.py`` imports nothing of the package but ``errors``;
- no module uses another module's private (``_x``) name: a name used outside its module is public
  there (documented) or lives where it is used;
- the package imports nothing of the repository outside it (``benchmarks``, whose dataset loaders
  are not in the wheel; the tests);
- no import cycle among the package's modules;
- the folders are the layers: the package's top level holds the folders of :data:`LAYERS` and the
  public modules it names (``errors``, ``config``, ``render``, ``sample``), nothing else; the modules of the
  layer folders in :data:`PRIVATE_FOLDERS` are private (``_x.py``), their public names exported
  from the package's ``__init__``;
- what users read (README, docs, notebooks) imports no private module (the tests and benchmarks may);
- no module over 600 lines without a ``# Over 600 lines:`` note saying why, none over 800.

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
import re
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

#: The package's layers, bottom first, each its folders (and the few public modules at the top
#: level, which users import by name). A module may import its own layer and those below, never one
#: above (``test_no_import_climbs_a_layer``). A module belongs to the layer of its longest prefix
#: here; the package's ``__init__`` is the facade. The read side (a search) sits below the write
#: side (an ingest): the search path imports nothing of the build path, while an ingest may use
#: what a search uses. ``test_the_folders_are_the_layers`` checks the package's top level against
#: this table, so a new folder or top-level module has to be placed here.
LAYERS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("base", ("errors", "common")),
    # model/: the node types, the ids, the stored point, the declarative settings; config.py (public:
    # the settings classes and the engine constants) sits with them.
    ("data", ("model", "config")),
    ("encoding", ("embeddings",)),
    ("store", ("store",)),
    # search/: the one search pipeline (plan, roots, pipeline) and its two drivers, over the walk,
    # the budget fill, the context check, the identities and the relevance scores.
    ("read", ("search",)),
    ("write", ("build", "loaders", "llm")),
    # facade/: DragKneeIndex and its helpers; render.py (public: trace_text, plot_knee) and sample.py
    # (public: the quickstart's sample corpus) beside it.
    ("facade", ("facade", "render", "sample", "")),
    ("edge", ("integrations", "eval", "cli")),
)
#: The layer folders whose modules are all private (``_x.py``): the package's ``__init__`` exports
#: their public names. (store/, embeddings/, loaders/, llm/ and the edges are public folders, their
#: modules imported by name, e.g. ``drag_knee_retriever.store.QdrantClientStore``.)
PRIVATE_FOLDERS = ("common", "model", "search", "build", "facade")
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
SEARCH_PATH = _p("search", "store", "embeddings", "common._knee")

RULES = [
    Rule("core modules import no adapter, no CLI, no eval", applies=_p(""), forbid=EDGE, exempt=EDGE),
    Rule("the search path imports nothing of the build path, directly or not", applies=SEARCH_PATH,
         forbid=_p(*BUILD_PATH), transitive=True),
    Rule("model._nodes imports nothing of the package but errors", applies=_p("model._nodes"), only=_p("errors")),
    # The search's operations are plain values and its two drivers know only them (and the store,
    # the encoder and the model they are handed), so any read-layer module may yield operations.
    Rule("search._ops and search._drivers import nothing of the package but search._ops",
         applies=_p("search._ops", "search._drivers"), only=_p("search._ops")),
    Rule("model._ids (every derived id) imports nothing of the package", applies=_p("model._ids"), only=()),
    Rule("model._point_schema (the stored point) imports only the node types", applies=_p("model._point_schema"),
         only=_p("model._nodes", "errors")),
    # The engines share store.base/filters, the integrity check on open (and its node checks), the write
    # journal, the ids and the point schema
    # (and the data types) and never import each other; which engine library each may import is test_store_layering.py's job.
    Rule("store engines import only store.base/filters, ids and point_schema",
         # (qdrant_rank / qdrant_roots: the qdrant-client engine's rankings and roots' copy, mixins of store.qdrant)
         applies=_p("store.qdrant", "store.qdrant_rank", "store.qdrant_roots", "store.edge", "store.memory"),
         only=_p("store.base", "store.filters", "store.pending", "store.journal", "store.checksums", "store.integrity", "store.edge",
                 "store.qdrant_rank", "store.qdrant_roots", "model._ids", "model._point_schema", "errors", "model._nodes",
                 "config",
                 # engine-neutral helpers of issue 16: exact BM25 IDF, disk refusals, URL redaction
                 "common._bm25_idf", "common._disk", "common._redact")),
]


def test_every_module_is_seen() -> None:
    assert f"{PACKAGE}.model._nodes" in MODULES and f"{PACKAGE}.cli" in MODULES and len(MODULES) > 20
    # The parser resolves imports: nodes imports errors, the CLI imports the index.
    assert GRAPH[f"{PACKAGE}.model._nodes"] == {f"{PACKAGE}.errors"}
    assert f"{PACKAGE}.facade._index" in set().union(*(GRAPH[m] for m in MODULES if m.startswith(f"{PACKAGE}.cli")))


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
    context, builder = f"{PACKAGE}.search._context", f"{PACKAGE}.build._builder"
    graph = {context: {builder, f"{PACKAGE}.model._nodes"}, builder: {f"{PACKAGE}.model._ids"}}
    assert climbs(graph) == [(context, builder)]


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
    source = ("from ..build._builder import _paragraphs, leaf_id\nfrom ..store.edge import fast\n"
              "from drag_knee_retriever.common import _knee as K\nx = fast._fuse, K._PURE_MAX, fast.__doc__\n")
    assert private_uses(f"{PACKAGE}.search._context", source) == [
        (f"{PACKAGE}.build._builder", "_paragraphs"), (f"{PACKAGE}.common._knee", "_PURE_MAX"),
        (f"{PACKAGE}.store.edge.fast", "_fuse")]


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


# -- folders ---------------------------------------------------------------------------------------

PUBLIC_TOP_MODULES = ("errors", "config", "render", "sample")


def test_the_folders_are_the_layers() -> None:
    placed = {prefix for _, prefixes in LAYERS for prefix in prefixes if prefix}
    top = {p.stem if p.is_file() else p.name for p in ROOT.iterdir()
           if (p.is_dir() and (p / "__init__.py").is_file()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert top == placed, f"the package's top level against LAYERS: not placed {sorted(top - placed)}, " \
        f"placed but missing {sorted(placed - top)}"
    assert {p for p in placed if (ROOT / f"{p}.py").is_file()} == set(PUBLIC_TOP_MODULES), \
        "a module at the top level is public; an internal one goes in its layer's folder"


def test_the_modules_of_the_layer_folders_are_private() -> None:
    public = [str(p.relative_to(ROOT)) for folder in PRIVATE_FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))
              if not p.name.startswith("_")]
    assert not public, f"public modules in a private layer folder (name them _x.py, export from __init__): {public}"


def private_module_imports(text: str) -> List[str]:
    """The private package modules (``drag_knee_retriever.f._x``) a text imports: ``import M``,
    ``from M import``, ``from P import _x`` and mkdocstrings' ``::: M.name`` (a prose mention is not an
    import)."""
    private = rf"{PACKAGE}(?:\.\w+)*\._(?!_)\w+"
    found = set(re.findall(rf"(?:^|\s|\")(?:import|from|:::)\s+({private})", text, flags=re.MULTILINE))
    found |= {f"{m}.{n}" for m, n in re.findall(rf"from ({PACKAGE}(?:\.\w+)*) import (_(?!_)\w+)", text)}
    return sorted(found)


def test_the_private_module_finder_finds_one() -> None:
    assert private_module_imports(f"from {PACKAGE}.search._traversal import walk\nfrom {PACKAGE}.model import _ids\n"
                                  f"::: {PACKAGE}.build._ingest.Progress\nsee {PACKAGE}.facade._index, "
                                  f"{PACKAGE}.__version__\nfrom {PACKAGE} import DragKneeIndex") == [
        f"{PACKAGE}.build._ingest", f"{PACKAGE}.model._ids", f"{PACKAGE}.search._traversal"]


def test_what_users_read_imports_no_private_module() -> None:
    repo = ROOT.parent
    texts = [repo / "README.md", *sorted((repo / "docs").rglob("*.md")), *sorted((repo / "notebooks").glob("*.ipynb"))]
    found = {str(p.relative_to(repo)): private_module_imports(p.read_text(encoding="utf-8"))
             for p in texts if p.name != "changelog.md"}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"user-facing text names private modules (use the public name): {found}"


#: A module over this many lines says why in a comment line starting ``# Over 600 lines:``; none is
#: over ``MAX_LINES``.
NOTE_LINES, MAX_LINES = 600, 800
#: Over NOTE_LINES without the note, for now (module -> why); each entry must still be over, so the
#: list shrinks as they are split.
UNNOTED = {f"{PACKAGE}.config": "the settings rework of issue 39 splits it"}


def test_modules_are_small() -> None:
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in MODULES.items()}
    too_big = {m: n for m, n in sizes.items() if n > MAX_LINES}
    assert not too_big, f"modules over {MAX_LINES} lines: {too_big}"
    unnoted = {m: n for m, n in sizes.items() if n > NOTE_LINES and m not in UNNOTED
               and "# Over 600 lines:" not in MODULES[m].read_text(encoding="utf-8")}
    assert not unnoted, f"modules over {NOTE_LINES} lines without a '# Over 600 lines: why' note: {unnoted}"
    stale = [m for m in UNNOTED if sizes.get(m, 0) <= NOTE_LINES]
    assert not stale, f"no longer over {NOTE_LINES} lines, drop them from UNNOTED: {stale}"


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
