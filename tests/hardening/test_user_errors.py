"""Raw or misleading errors met through the public APIs (issue 38, item 6): each is now one line
naming the argument as the user gave it, saying what was wrong and what to pass instead.

- LangChain ``similarity_search(k=2**31)`` said "got 8589934592" (the store asked the index for
  4 x k leaves), and refused a ``k=10**9`` that the index takes; LlamaIndex named ``max_results``.
- ``score_threshold="0.5"`` was a bare ``TypeError`` from inside LangChain's comparison (stores),
  or a pydantic ``ValidationError`` / "SearchConfig.score_threshold" (retrievers).
- A NaN or infinite query vector ranked nothing and returned ``[]``, silently.
- ``VectorStoreQuery(doc_ids=...)`` on nodes added without a source named ``drag_member_refs``.
- An unreadable ``roots/`` folder of an Edge index (chmod 000; as root, run without the
  capabilities that bypass permissions, ``setpriv --bounding-set -dac_override,-dac_read_search``,
  so the refusal is the kernel's own) was a bare ``PermissionError`` through the API and
  "damaged ... move the folder aside" on the command line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from drag_knee_retriever import Document, DragKneeIndex, StoreConfig
from drag_knee_retriever.errors import DragKneeError, InvalidQueryError
from drag_knee_retriever.model._nodes import QueryVectors
from hardening_support import cli_command, cli_env

NAN, INF = float("nan"), float("inf")
TEXTS = {"lighthouse.txt": "Lighthouses guide ships past the rocks at night.",
         "bread.txt": "Sourdough bread needs a starter and a long, cool rise."}


def _one_line(error: BaseException) -> str:
    message = str(error)
    assert isinstance(error, DragKneeError), f"{type(error).__name__}: {message}"
    assert "\n" not in message and "SearchConfig" not in message and "drag_" not in message, message
    return message


@pytest.fixture(scope="module")
def stores(make_index, engine):
    """A LangChain and a LlamaIndex store (each over its own index) and the core index of the first."""
    from langchain_core.documents import Document as LCDocument
    from llama_index.core.schema import TextNode

    from drag_knee_retriever.integrations.langchain import DragKneeVectorStore as LangChainStore
    from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore as LlamaStore

    index = make_index(collection=f"user_errors_lc_{engine}", engine=engine)
    langchain = LangChainStore(index)
    langchain.add_documents([LCDocument(page_content=t, metadata={"source": s}) for s, t in TEXTS.items()])
    llama = LlamaStore(make_index(collection=f"user_errors_li_{engine}", engine=engine))
    llama.add([TextNode(text=t, metadata={"file": s}) for s, t in TEXTS.items()])  # no source document
    return langchain, llama, index


def test_k_is_named_as_given_and_a_large_one_runs(stores):
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore as LlamaStore

    langchain, llama, _ = stores
    flat = LlamaStore(llama.index, query_mode="flat")
    # Main: "k must be an integer >= 1 (at most 2,147,483,647), got 4000000000."
    assert [d.metadata["source"] for d in langchain.similarity_search("ships at night", k=10**9)][0] == "lighthouse.txt"
    assert flat.query(VectorStoreQuery(query_str="ships at night", similarity_top_k=10**9)).nodes
    with pytest.raises(InvalidQueryError) as info:
        langchain.similarity_search("ships", k=2**31)
    assert "k must be" in _one_line(info.value) and "2147483648" in str(info.value)
    assert "8589934592" not in str(info.value), info.value
    for store in (llama, flat):  # main: the tree query said "SearchConfig.max_results must be ..."
        for bad in (0, 2**31, "3"):
            with pytest.raises(InvalidQueryError) as info:
                store.query(VectorStoreQuery(query_str="ships", similarity_top_k=bad))
            assert _one_line(info.value).startswith("similarity_top_k must be") and repr(bad) in str(info.value)


def test_a_string_score_threshold_is_one_clear_line(stores, caching_encoder):
    from llama_index.core.vector_stores.types import VectorStoreQuery  # noqa: F401  (LlamaIndex is there)

    from drag_knee_retriever.integrations.langchain import DragKneeRetriever as LangChainRetriever
    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever as LlamaRetriever

    langchain, _, index = stores
    attempts = {
        # main: TypeError: '>=' not supported between instances of 'float' and 'str'
        "similarity_search": lambda: langchain.similarity_search("ships", score_threshold="0.5"),
        "with_relevance_scores": lambda: langchain.similarity_search_with_relevance_scores("ships", score_threshold="0.5"),
        # main: pydantic ValidationError, "SearchConfig.score_threshold must be a number"
        "as_retriever": lambda: langchain.as_retriever(search_kwargs={"score_threshold": "0.5"}),
        "langchain invoke": lambda: LangChainRetriever(index=index).invoke("ships", score_threshold="0.5"),
        "llamaindex retriever": lambda: LlamaRetriever(index, score_threshold="0.5"),
        "llamaindex retrieve": lambda: LlamaRetriever(index).retrieve("ships", score_threshold="0.5"),
        "nan": lambda: langchain.similarity_search("ships", score_threshold=NAN),
    }
    for name, attempt in attempts.items():
        with pytest.raises(DragKneeError) as info:
            attempt()
        message = _one_line(info.value)
        assert message.startswith("score_threshold must be a number"), (name, message)
        assert "'0.5' (a str)" in message or name == "nan", (name, message)
    assert langchain.similarity_search("ships at night", score_threshold=0.1)  # a number still works


def test_a_nan_or_infinite_query_vector_is_refused(stores):
    from llama_index.core.schema import QueryBundle
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever as LlamaRetriever

    langchain, llama, index = stores
    size = index.encoder.dense_size
    good = list(index.encoder.encode_query("ships at night").dense)
    assert langchain.similarity_search_by_vector(good, k=1)  # the same vector, finite, answers
    for bad_value in (NAN, INF, -INF):
        bad = good[:7] + [bad_value] + good[8:]
        vectors = QueryVectors(dense=tuple(bad), sparse_indices=(), sparse_values=())
        attempts = {  # main: [] (or no nodes) for each, without a word
            "embedding": lambda: langchain.similarity_search_by_vector(bad, k=2),
            "query_embedding": lambda: llama.query(VectorStoreQuery(query_embedding=bad, similarity_top_k=2)),
            "query_vectors.dense": lambda: index.flat_search("ships", query_vectors=vectors),
            "query_vectors.dense ": lambda: index.search("ships", query_vectors=vectors),
            "QueryBundle.embedding": lambda: LlamaRetriever(index).retrieve(QueryBundle("ships", embedding=bad)),
        }
        for name, attempt in attempts.items():
            with pytest.raises(InvalidQueryError) as info:
                attempt()
            message = _one_line(info.value)
            assert name.strip() in message and "NaN or infinite" in message and "position 7" in message, message
    with pytest.raises(InvalidQueryError, match=rf"embedding has 3 values, but the index's model makes vectors of {size}"):
        langchain.similarity_search_by_vector([0.1, 0.2, 0.3])


def test_doc_ids_on_nodes_without_a_source_speak_the_users_words(stores):
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from drag_knee_retriever.integrations.llamaindex import DragKneeVectorStore as LlamaStore

    _, llama, _ = stores
    for store in (llama, LlamaStore(llama.index, query_mode="flat")):
        with pytest.raises(InvalidQueryError) as info:  # main: "filter key(s) ['drag_member_refs'] ..."
            store.query(VectorStoreQuery(query_str="ships", doc_ids=["lighthouse-doc"], similarity_top_k=2))
        message = _one_line(info.value)
        assert "doc_ids" in message and "ref_doc_id" in message, message
    # With nodes that came from a document, doc_ids selects them (and nothing else).
    sourced = TextNode(text="Keepers log the tides in the lighthouse book.",
                       relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="keepers-doc")})
    llama.add([sourced])
    found = llama.query(VectorStoreQuery(query_str="ships and tides", doc_ids=["keepers-doc"], similarity_top_k=5))
    assert found.nodes and all("Keepers" in n.get_content() for n in found.nodes), found.nodes


# ---------------------------------------------------------------------------------------------
# an unreadable roots/ folder
# ---------------------------------------------------------------------------------------------


def _without_override() -> list:
    """The command prefix that runs a child without the capabilities that let root read any file."""
    if os.geteuid() != 0:
        return []  # chmod 000 already stops this user
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux): chmod 000 cannot stop root")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]


_OPEN = """
import json, sys
from drag_knee_retriever import DragKneeIndex, StoreConfig
try:
    DragKneeIndex(sys.argv[1], store=StoreConfig(engine="edge")).close()
    print(json.dumps(["opened", ""]))
except BaseException as exc:
    print(json.dumps([type(exc).__name__, str(exc)]))
"""


def test_an_unreadable_roots_folder_is_a_permission_error_not_damage(tmp_path, caching_encoder):
    folder = tmp_path / "index"
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine="edge")) as index:
        index.add_documents([Document(id=name, text=text) for name, text in TEXTS.items()])
    roots = folder / "drag_knee" / "roots"
    assert roots.is_dir(), sorted(p.name for p in roots.parent.iterdir())
    prefix = _without_override()
    env = cli_env(tmp_path)
    roots.chmod(0)
    try:
        api = subprocess.run(prefix + [sys.executable, "-c", _OPEN, str(folder)], capture_output=True, text=True,
                             timeout=120, env=env, cwd=tmp_path)
        commands = [cli_command("stats", "--index", str(folder)), cli_command("search", "ships", "--index", str(folder))]
        runs = [subprocess.run(prefix + command, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
                for command in commands]
    finally:
        roots.chmod(0o755)
    kind, message = json.loads(api.stdout.strip().splitlines()[-1])
    # Main: PermissionError: [Errno 13] Permission denied: '.../roots/edge_config.json'
    assert kind == "StoreIOError", (kind, message, api.stderr[-1500:])
    for text in [message] + [run.stderr.strip().splitlines()[-1] for run in runs]:
        assert str(roots) in text and "permission was denied" in text and "permissions" in text, text
        assert "damaged" not in text and "aside" not in text, text  # main (CLI): "damaged ... Move the folder aside"
    for run in runs:
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-1500:]
    with DragKneeIndex(folder, embedding=caching_encoder, store=StoreConfig(engine="edge")) as index:
        assert {d.doc_id for d in index.list_documents()} == set(TEXTS)  # the fix the message gives
