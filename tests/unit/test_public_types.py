"""Issue 27 item 6: type checkers see the public API.

``from drag_knee_retriever import DragKneeIndex`` was ``Any`` to mypy (a lazy import), so
``search(methd=...)`` passed a type check and results were untyped. mypy runs here on a small user
script: a correct one checks clean (the old constructor spellings included: they are deprecated, not
errors), a misspelled keyword of the constructor, ``search`` / ``asearch`` / ``flat_search`` and both
retrievers' constructors is an error naming it. Third-party packages are skipped (not what is tested, and
analysing them costs a minute).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mypy")

REPO = Path(__file__).resolve().parents[2]

CONFIG = """
[mypy]
follow_imports = silent
ignore_missing_imports = True
[mypy-qdrant_client.*,qdrant_edge.*,numpy.*,fastembed.*,onnxruntime.*,rich.*,typer.*,platformdirs.*,pypdf.*,pypdfium2.*,langchain_core.*,llama_index.*,pydantic.*,tokenizers.*,httpx.*,click.*,matplotlib.*]
follow_imports = skip
"""

GOOD = """
from typing import List
from drag_knee_retriever import (DragKneeIndex, EmbeddingConfig, FusionConfig, LeafConfig, BuildConfig, ScoredNode,
                                 SearchConfig, SearchResult, StoreConfig)
from drag_knee_retriever.integrations.langchain import DragKneeRetriever as LangChainRetriever
from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever as LlamaIndexRetriever

search = SearchConfig(method="fixed", beam_width=2, fusion=FusionConfig(weights=[(0.2, 0.8)]))
build = BuildConfig(leaves=LeafConfig(passage_words=None))
with DragKneeIndex(":memory:", build=build, search=search, store=StoreConfig(collection="c")) as index:
    result: SearchResult = index.search("q", method="knee", max_results=3, min_score=0.5, filters={"y": 1})
    fixed = index.search("q", method="fixed", beam_width=2, fusion=FusionConfig(), focus=False, explain=True)
    best: float = result.nodes[0].score
    raw = result.nodes[0].raw_score
    flat: List[ScoredNode] = index.flat_search("q", k=5, mode="dense")
    LangChainRetriever(index=index, k=3, filter={"y": 1}, score_threshold=0.1, tags=["t"])
    LlamaIndexRetriever(index, similarity_top_k=3, method="fixed", beam_width=2)
old_spelling = DragKneeIndex(url="http://localhost:6333", engine="server", model_name="m")
# Issue 40: settings classes are typed dataclasses (list inputs accepted where a tuple is kept), the
# budget's two units, progress=True, explain per call, the Qdrant stores' collection_name=.
SearchConfig(identity_keys=["company"], fusion=FusionConfig(weights=[(0.2, 0.8)]), max_words=500, max_tokens=None)
EmbeddingConfig(max_input_tokens=256, token_counter=len)
with DragKneeIndex(":memory:") as other:
    other.add_documents([], progress=True)
    other.search("q", max_tokens=100, explain=True)
    LangChainRetriever(index=other, max_words=300).invoke("q", explain=True)
LangChainRetriever.from_documents([], collection_name="c", k=3, max_tokens=500, explain=True, progress=True)
LlamaIndexRetriever.from_documents([], collection_name="c", retriever_kwargs={"similarity_top_k": 3})

async def later(index: DragKneeIndex) -> SearchResult:
    return await index.asearch("q", max_results=2)
"""

BAD = """
from drag_knee_retriever import DragKneeIndex, SearchConfig
from drag_knee_retriever.integrations.langchain import DragKneeRetriever as LangChainRetriever
from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever as LlamaIndexRetriever

index = DragKneeIndex(":memory:")
index.search("q", methd="knee")
index.flat_search("q", kk=5)
wrong: str = index.search("q")
DragKneeIndex(":memory:", serach=SearchConfig())
LangChainRetriever(index=index, kk=3)
LlamaIndexRetriever(index, similarity_topk=3)
index.search("q", beam_width="3")

async def later() -> None:
    await index.asearch("q", max_result=2)
SearchConfig(beam_widht=3)
LangChainRetriever.from_documents([], colection_name="c")
LlamaIndexRetriever.from_documents([], colection_name="c")
"""


def test_mypy_sees_the_index_its_methods_and_results(tmp_path):
    (tmp_path / "mypy.ini").write_text(CONFIG)
    (tmp_path / "good.py").write_text(textwrap.dedent(GOOD))
    (tmp_path / "bad.py").write_text(textwrap.dedent(BAD))
    env = dict(os.environ, MYPYPATH=str(REPO))  # an editable install is an import hook mypy cannot follow
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--no-error-summary",
                           "good.py", "bad.py"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert not [line for line in lines if line.startswith("good.py")], proc.stdout
    errors: dict = {}
    for line in lines:
        if line.startswith("bad.py"):
            errors[int(line.split(":")[1])] = errors.get(int(line.split(":")[1]), "") + line
    for line, word in ((7, '"methd"'), (8, '"kk"'), (9, "SearchResult"), (10, '"serach"'), (11, '"kk"'),
                       (12, '"similarity_topk"'), (13, '"beam_width"'), (16, '"max_result"'),
                       (17, '"beam_widht"'), (18, '"colection_name"'), (19, '"colection_name"')):
        assert word in errors.get(line, ""), f"bad.py:{line} should be an error naming {word}:\n{proc.stdout}"
