"""How many of a dataset's documents and pages are statement pages (``SectionConfig(statements=True)``,
drag_knee_retriever.build._statements): the part of an index the setting changes at all. No index, no
model: the documents' page texts as the loaders give them. Aggregate counts only.

    python benchmarks/statement_reach.py financebench hotpotqa covidqa:30 covidqa xquad-en xquad-ru mmlongbench mmlongbench-shared qmsum

A document without a statement page is built, hashed and searched exactly as with the setting off,
so a dataset with none is unchanged by construction (no run needed). Per statement kind: the pages
found, and how many of them hold a question's gold evidence; and how many questions name a statement
(``model._statements.named_statements``: the questions ``focus.statement_pages`` routes, where their
document has pages of that statement).
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.identity_reach import load_spec  # noqa: E402
from drag_knee_retriever.build._statements import statement_pages  # noqa: E402
from drag_knee_retriever.model._statements import named_statements  # noqa: E402


def reach(spec: str) -> str:
    dataset = load_spec(spec)
    gold = collections.defaultdict(set)  # doc id -> gold pages (1-based)
    for question in dataset.questions:
        for doc_id, ordinal in question.gold:  # a page document's units are its pages, in order
            gold[doc_id].add(ordinal + 1)
    pages = docs = touched = gold_found = 0
    kinds = collections.Counter()
    start = time.perf_counter()
    for document in dataset.documents:
        docs += 1
        if document.pages is None:
            continue
        pages += len(document.pages)
        found = statement_pages(document.pages)
        touched += bool(found)
        kinds.update(page.kind for page in found.values())
        gold_found += len(set(found) & gold.get(document.id, set()))
    took = (time.perf_counter() - start) * 1e3 / max(pages, 1)
    kinds_text = ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()) or "-"
    named = sum(bool(named_statements(question.text)) for question in dataset.questions)
    return (f"| {spec} | {docs} | {pages} | {touched} | {sum(kinds.values())} ({kinds_text}) | {gold_found} | "
            f"{named} of {len(dataset.questions)} | {took:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", help="dataset specs: name, name:LIMIT_DOCS, mmlongbench-shared")
    args = parser.parse_args()
    print("| dataset | documents | pages | documents with statement pages | statement pages (by kind) | "
          "of them gold pages | questions naming a statement | ms a page |")
    print("|---|---:|---:|---:|---|---:|---:|---:|")
    for spec in args.datasets:
        print(reach(spec), flush=True)


if __name__ == "__main__":
    main()
