"""A query's path through the package: the files a search runs code in, and where it climbs a layer.

    python benchmarks/query_path.py [--engine edge|local] [--method knee|branch|...] [--verbose]

Builds a small in-memory index (the offline model: ``DRAG_KNEE_MODEL_PATH``), runs one search to
warm it, then runs the same search under ``sys.setprofile`` and records every call from one of the
package's modules into another. It prints

- **files visited**: the package modules a search runs Python code in;
- **call climbs**: calls from a module into one of a *higher* layer (the layers are
  ``LAYERS`` in ``tests/unit/test_layering.py``, bottom first), e.g. the walk calling into the
  builder for ids;
- **import climbs**: imports of the visited modules that reach a higher layer (read from the
  source, as the layering test does; lazy imports count);
- **build path**: the modules of the build path (``BUILD_PATH`` there) in the import closure of
  the visited modules other than the facade (``facade/_index.py`` wires both paths).

A call into the search's own ranker (the closure ``DragKneeIndex.search`` hands the walk) is an
injected callback, not a dependency: it is listed apart and not counted as a climb.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "unit"))
sys.path.insert(0, str(REPO))

import test_layering as layering  # noqa: E402  (LAYERS, the import graph)

import drag_knee_retriever  # noqa: E402

PACKAGE_DIR = Path(drag_knee_retriever.__file__).resolve().parent

DOCS = {
    "keys.md": "# Keys\n\nRotate the signing keys every ninety days.\n\nOld keys stay valid for a week.\n\n"
               "# Backups\n\nBackups run nightly at two.\n\nRestores are tested monthly.",
    "tides.txt": "Tides follow the moon.\n\nSpring tides come at new and full moon.\n\n"
                 "Neap tides come at the quarters.\n\nA tide table lists the times.",
    "bees.txt": "Colony collapse started in the winter of 2006.\n\nBeekeepers lost a third of their hives.\n\n"
                "Mites and viruses were blamed.\n\nSome colonies recovered by spring.",
}


def module_of(filename: str) -> Optional[str]:
    path = Path(filename)
    try:
        rel = path.resolve().relative_to(PACKAGE_DIR.parent)
    except (ValueError, OSError):
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    name = ".".join(parts)
    return name if name in layering.MODULES else None


def trace_search(index, query: str, method: Optional[str]) -> Tuple[List[str], Counter]:
    """The modules a search calls into (in first-call order) and the calls between modules."""
    visited: Dict[str, None] = {}
    edges: Counter = Counter()

    def profile(frame, event, arg):
        if event != "call":
            return
        callee = module_of(frame.f_code.co_filename)
        if callee is None:
            return
        visited.setdefault(callee, None)
        caller_frame = frame.f_back
        while caller_frame is not None and module_of(caller_frame.f_code.co_filename) is None:
            caller_frame = caller_frame.f_back  # through the engine library's frames
        if caller_frame is None:
            return
        caller = module_of(caller_frame.f_code.co_filename)
        if caller != callee:
            edges[(caller, callee, frame.f_code.co_name)] += 1

    kwargs = {"method": method} if method else {}
    sys.setprofile(profile)
    try:
        index.search(query, **kwargs)
    finally:
        sys.setprofile(None)
    return list(visited), edges


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="edge", choices=["edge", "local"])
    parser.add_argument("--method", default=None, help="SearchConfig.method (default: the default method)")
    parser.add_argument("--verbose", "-v", action="store_true", help="list every call edge between modules")
    args = parser.parse_args(argv)
    if not os.environ.get("DRAG_KNEE_MODEL_PATH"):
        default = REPO.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8"
        if default.is_dir():
            os.environ["DRAG_KNEE_MODEL_PATH"] = str(default)

    from drag_knee_retriever import Document, DragKneeIndex, StoreConfig

    with DragKneeIndex(":memory:", store=StoreConfig(engine=args.engine)) as index:
        index.add_documents([Document(id=k, text=v) for k, v in DOCS.items()])
        query = "when did colony collapse start"
        index.search(query)  # warm: caches, lazy imports
        visited, edges = trace_search(index, query, args.method)

    layer = layering.layer_of
    short = lambda m: m[len(layering.PACKAGE) + 1:] or layering.PACKAGE  # noqa: E731
    search_modules = set(visited)
    call_climbs = [(a, b, f, n) for (a, b, f), n in sorted(edges.items())
                   if layer(b) > layer(a) and not (b == f"{layering.PACKAGE}.facade._index" and f == "rank")]
    callbacks = [(a, b, f, n) for (a, b, f), n in sorted(edges.items())
                 if b == f"{layering.PACKAGE}.facade._index" and f == "rank"]
    import_climbs = sorted((a, b) for a in search_modules for b in layering.GRAPH[a] if layer(b) > layer(a))
    reached = layering.closure(search_modules - {f"{layering.PACKAGE}.facade._index"})
    build = sorted(short(m) for m in reached if layering._under(m, layering._p(*layering.BUILD_PATH)))

    print(f"files visited: {len(visited)}")
    for m in visited:
        print(f"  {layering.LAYER_NAMES[layer(m)]:<10} {short(m)}")
    print(f"call climbs (a call into a higher layer): {len(call_climbs)}")
    for a, b, f, n in call_climbs:
        print(f"  {short(a)} -> {short(b)}.{f} (x{n})")
    print(f"import climbs of the visited files: {len(import_climbs)}")
    for a, b in import_climbs:
        print(f"  {short(a)} imports {short(b)}")
    print(f"build-path modules the search's modules import (directly or not): {len(build)} {build}")
    for a, b, f, n in callbacks:
        print(f"(injected ranker, not counted: {short(a)} -> {short(b)}.{f} x{n})")
    if args.verbose:
        print("every call between modules:")
        for (a, b, f), n in sorted(edges.items()):
            print(f"  {short(a)} -> {short(b)}.{f} x{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
