"""How often a dataset's questions name a document by its identity, per ``identity_coverage``: the
part of a search the identity can change at all (no index, no model: the documents' metadata as the
index stores it on their roots, and the questions' words). Aggregate counts only.

    python benchmarks/identity_reach.py financebench hotpotqa covidqa:30 xquad-en xquad-ru mmlongbench-shared qmsum

Per dataset: the documents' identity fields and how many of them are shared with other documents
(``IdentityIndex.fields`` / ``facets``), then per coverage the share of questions naming at least one
document and the share whose best-named document holds their gold evidence. A question that names
no document is searched exactly as with the identity off (the walk and the focus see no match), so
where ``fields`` (or ``two_fields``) names none the search is unchanged by construction.

``--against CHECKOUT`` compares, question by question, the documents this code's identity names
with those another checkout's ``drag_knee_retriever/search/_identity.py`` names (e.g. a worktree of main),
at ``--coverage`` (the default's ``two_fields``): a dataset whose named documents are the same for
every question searches the same with either, by construction. Counts only (no question texts or
ids: several datasets are CC BY-NC).

    git worktree add /tmp/main main
    python benchmarks/identity_reach.py --against /tmp/main financebench hotpotqa covidqa:30 xquad-en xquad-ru mmlongbench-shared qmsum
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.datasets import load_dataset  # noqa: E402
from drag_knee_retriever.search._identity import IDENTITY_COVERAGES, IdentityIndex  # noqa: E402


def load_spec(spec: str):
    """A dataset spec (``name``, ``name:LIMIT_DOCS`` or ``mmlongbench-shared``) loaded."""
    name, _, limit = spec.partition(":")
    options: Dict[str, object] = {"limit_docs": int(limit)} if limit else {}
    if name == "mmlongbench-shared":
        name, options["shared_store"] = "mmlongbench", True
    return load_dataset(name, **options)


def _identity_module(checkout: str) -> ModuleType:
    """Another checkout's identity module, loaded on its own (it imports the standard library only)."""
    path = Path(checkout) / "drag_knee_retriever" / "search" / "_identity.py"
    spec = importlib.util.spec_from_file_location("_other_identity", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"no identity module at {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def diff(spec: str, other: ModuleType, coverage: str) -> Dict[str, object]:
    """Per question, the documents named here against those ``other``'s identity names: counts of
    questions whose named set, scores or best-named document changed, and of gold named / best before
    and after."""
    ds = load_spec(spec)
    indexes: Tuple[object, object] = (other.IdentityIndex(), IdentityIndex())
    for doc in ds.documents:
        for index in indexes:
            index.add(doc.id, doc.id, "", doc.metadata)  # type: ignore[attr-defined]
    counts = collections.Counter()
    for question in ds.questions:
        old, new = (index.match(question.text, coverage=coverage) for index in indexes)  # type: ignore[attr-defined]
        old_best, new_best = (next(iter(m.scores), None) for m in (old, new))
        counts["set changed"] += set(old.scores) != set(new.scores)
        counts["scores changed"] += {d: round(v, 9) for d, v in old.scores.items()} != \
            {d: round(v, 9) for d, v in new.scores.items()}
        counts["best changed"] += old_best != new_best
        counts["named before"] += bool(old)
        counts["named after"] += bool(new)
        counts["gold named before"] += bool(set(old.scores) & question.gold_docs)
        counts["gold named after"] += bool(set(new.scores) & question.gold_docs)
        counts["best holds gold before"] += old_best in question.gold_docs
        counts["best holds gold after"] += new_best in question.gold_docs
        counts["gold newly named"] += bool(set(new.scores) & question.gold_docs) and not set(old.scores) & question.gold_docs
        counts["gold no longer named"] += bool(set(old.scores) & question.gold_docs) and not set(new.scores) & question.gold_docs
        counts["wrong newly named"] += bool(set(new.scores) - set(old.scores) - question.gold_docs)
    return {"dataset": spec, "questions": len(ds.questions), **counts}


DIFF_COLUMNS = ("set changed", "scores changed", "best changed", "named before", "named after", "gold named before", "gold named after",
                "gold newly named", "gold no longer named", "wrong newly named", "best holds gold before",
                "best holds gold after")


def reach(spec: str) -> Dict[str, object]:
    """The counts for one dataset spec (``name``, ``name:LIMIT_DOCS`` or ``mmlongbench-shared``)."""
    ds = load_spec(spec)
    index = IdentityIndex()
    for doc in ds.documents:
        index.add(doc.id, doc.id, "", doc.metadata)
    row: Dict[str, object] = {
        "dataset": spec, "documents": len(ds.documents), "questions": len(ds.questions),
        "fields per doc": dict(sorted(collections.Counter(len(index.fields(d.id)) for d in ds.documents).items())),
        "shared per doc": dict(sorted(collections.Counter(index.facets(d.id) for d in ds.documents).items())),
    }
    for coverage in IDENTITY_COVERAGES:
        named = right = 0
        for question in ds.questions:
            match = index.match(question.text, coverage=coverage)
            if match:
                named += 1
                right += next(iter(match.scores)) in question.gold_docs
        row[coverage] = (named / max(1, len(ds.questions)), right / max(1, len(ds.questions)))
    return row


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", help="dataset names; name:N keeps N documents")
    parser.add_argument("--against", metavar="CHECKOUT", help="compare per question with this checkout's identity")
    parser.add_argument("--coverage", default="two_fields", choices=IDENTITY_COVERAGES, help="with --against")
    args = parser.parse_args(argv)
    if args.against:
        other = _identity_module(args.against)
        print(f"Questions (counts) against {args.against}, coverage {args.coverage}; 'wrong newly named': a "
              "question that now names a document holding none of its gold.")
        print("| dataset | questions | " + " | ".join(DIFF_COLUMNS) + " |")
        print("|---|---:|" + "---:|" * len(DIFF_COLUMNS))
        for spec in args.datasets:
            d = diff(spec, other, args.coverage)
            print(f"| {spec} | {d['questions']} | " + " | ".join(str(d.get(c, 0)) for c in DIFF_COLUMNS) + " |")
        return
    print("| dataset | docs | questions | fields per doc | shared fields per doc | "
          + " | ".join(f"{c}: named, best named holds gold" for c in IDENTITY_COVERAGES) + " |")
    print("|---|---:|---:|---|---|" + "---|" * len(IDENTITY_COVERAGES))
    for spec in args.datasets:
        r = reach(spec)
        cells = " | ".join(f"{r[c][0]:.2f}, {r[c][1]:.2f}" for c in IDENTITY_COVERAGES)  # type: ignore[index]
        print(f"| {r['dataset']} | {r['documents']} | {r['questions']} | {r['fields per doc']} | {r['shared per doc']} | {cells} |")


if __name__ == "__main__":
    main()
