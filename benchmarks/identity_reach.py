"""How often a dataset's questions name a document by its identity, per ``identity_coverage``: the
part of a search the identity can change at all (no index, no model: the documents' metadata as the
index stores it on their roots, and the questions' words). Aggregate counts only.

    python benchmarks/identity_reach.py financebench hotpotqa covidqa:30 xquad-en xquad-ru mmlongbench-shared qmsum

Per dataset: the documents' identity fields and how many of them are shared with other documents
(``IdentityIndex.fields`` / ``facets``), then per coverage the share of questions naming at least one
document and the share whose best-named document holds their gold evidence. A question that names
no document is searched exactly as with the identity off (the walk and the focus see no match), so
where ``fields`` (or ``two_fields``) names none the search is unchanged by construction.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.datasets import load_dataset  # noqa: E402
from drag_knee_retriever.identity import IDENTITY_COVERAGES, IdentityIndex  # noqa: E402


def reach(spec: str) -> Dict[str, object]:
    """The counts for one dataset spec (``name``, ``name:LIMIT_DOCS`` or ``mmlongbench-shared``)."""
    name, _, limit = spec.partition(":")
    options: Dict[str, object] = {"limit_docs": int(limit)} if limit else {}
    if name == "mmlongbench-shared":
        name, options["shared_store"] = "mmlongbench", True
    ds = load_dataset(name, **options)
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
    args = parser.parse_args(argv)
    print("| dataset | docs | questions | fields per doc | shared fields per doc | "
          + " | ".join(f"{c}: named, best named holds gold" for c in IDENTITY_COVERAGES) + " |")
    print("|---|---:|---:|---|---|" + "---|" * len(IDENTITY_COVERAGES))
    for spec in args.datasets:
        r = reach(spec)
        cells = " | ".join(f"{r[c][0]:.2f}, {r[c][1]:.2f}" for c in IDENTITY_COVERAGES)  # type: ignore[index]
        print(f"| {r['dataset']} | {r['documents']} | {r['questions']} | {r['fields per doc']} | {r['shared per doc']} | {cells} |")


if __name__ == "__main__":
    main()
