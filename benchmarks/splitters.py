"""Hand-written splitters against maintained ones (issue 27 item 10): speed and what they split.

    DRAG_KNEE_DATASETS=../shared/datasets .venv/bin/python benchmarks/splitters.py

- sentences: ``summarize.split_sentences`` (a regex) against NLTK's punkt (the copy of its data
  that llama-index-core ships; punkt is not a dependency of the core) and pySBD (when installed)
  on 60 COVID-QA papers (what each costs in recall: ``benchmarks/splitter_eval.py``);
- Markdown headings: ``builder._markdown_sections`` (a line scanner) against markdown-it-py
  (installed with rich) on the README, four times over.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, List

from drag_knee_retriever.build._builder import _markdown_sections
from drag_knee_retriever.build._summarize import _SENTENCE_END, split_sentences

DATA = Path(os.environ.get("DRAG_KNEE_DATASETS", "../shared/datasets"))
README = Path(__file__).resolve().parents[1] / "README.md"


def _plain() -> Callable[[str], List[str]]:
    """The rule before abbreviations and initials were known (every full stop before a capital ends a sentence)."""
    return lambda text: [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _punkt() -> Callable[[str], List[str]]:
    import llama_index.core
    import nltk
    from nltk.tokenize import PunktTokenizer

    nltk.data.path.insert(0, str(Path(llama_index.core.__file__).parent / "_static" / "nltk_cache"))
    return PunktTokenizer("english").tokenize


def _pysbd() -> Callable[[str], List[str]]:
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False)
    return lambda text: [s.strip() for s in segmenter.segment(text) if s.strip()]


def main() -> None:
    data = json.loads((DATA / "covidqa_200423" / "raw" / "200423_covidQA.json").read_text())
    texts = [p["context"] for a in data["data"] for p in a["paragraphs"]][:60]
    chars = sum(map(len, texts))
    t = time.perf_counter()
    ours = [split_sentences(x) for x in texts]
    t_ours = time.perf_counter() - t
    example = "Dr. Smith met Mr. Jones in the U.S. Army. They talked."
    print(f"sentences, {chars / 1e6:.1f} M characters of COVID-QA: regex {t_ours:.2f} s, {sum(map(len, ours))} sentences")
    print(f"  regex: {split_sentences(example)}")
    for name, make in (("regex without abbreviations (before)", _plain), ("punkt", _punkt), ("pysbd", _pysbd)):
        try:
            split = make()
        except ImportError as exc:
            print(f"  {name} not measured: {exc}")
            continue
        t = time.perf_counter()
        theirs = [[s for block in x.split("\n") for s in split(block)] for x in texts]
        t_theirs = time.perf_counter() - t
        print(f"  {name} {t_theirs:.2f} s ({t_theirs / t_ours:.1f}x), {sum(map(len, theirs))} sentences")
        print(f"  {name}: {split(example)}")
    text = README.read_text(encoding="utf-8") * 4
    t = time.perf_counter()
    sections = _markdown_sections(text) or []
    t_re = time.perf_counter() - t
    from markdown_it import MarkdownIt

    t = time.perf_counter()
    tokens = MarkdownIt("commonmark").parse(text)
    t_md = time.perf_counter() - t
    headings = sum(1 for tok in tokens if tok.type == "heading_open")
    print(f"Markdown, {len(text) / 1e3:.0f} k characters: line scanner {t_re * 1e3:.1f} ms ({len(sections) - 1} headings), "
          f"markdown-it-py {t_md * 1e3:.1f} ms ({t_md / t_re:.0f}x, {headings} headings)")


if __name__ == "__main__":
    main()
