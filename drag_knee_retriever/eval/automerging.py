"""The LlamaIndex ``AutoMergingRetriever`` baseline over the same dataset and the same dense vectors.

Needs llama-index-core (the ``llamaindex`` extra); :func:`llama_index_available` says whether it is
installed, and everything else imports it only when called.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from drag_knee_retriever.eval.baselines import Method, Retrieval
from drag_knee_retriever.eval.dataset import EvalDataset
from drag_knee_retriever.eval.errors import EvalConsistencyError
from drag_knee_retriever.eval.metrics import ContextHit, count_tokens

log = logging.getLogger(__name__)


def llama_index_available() -> bool:
    """Whether llama-index-core can be imported (the AutoMerging baseline needs it)."""
    try:
        import llama_index.core  # noqa: F401
    except ImportError:
        return False
    return True


def make_llamaindex_embedding(encoder: Any) -> Any:
    """Our dense encoder as a LlamaIndex ``BaseEmbedding`` (so both sides use the same vectors)."""
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr

    class DenseEncoderEmbedding(BaseEmbedding):
        """LlamaIndex embedding backed by drag-knee-retriever's fastembed dense encoder."""

        _encoder: Any = PrivateAttr()

        def __init__(self, wrapped: Any, **kwargs: Any) -> None:
            super().__init__(model_name=getattr(wrapped, "model_id", "drag-knee-dense"), embed_batch_size=64, **kwargs)
            self._encoder = wrapped

        @classmethod
        def class_name(cls) -> str:
            return "DragKneeDenseEmbedding"

        def _get_query_embedding(self, query: str) -> List[float]:
            return [float(x) for x in self._encoder.encode_query(query).dense]

        async def _aget_query_embedding(self, query: str) -> List[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> List[float]:
            return self._encoder.encode_dense([text])[0].tolist()

        def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
            return [v.tolist() for v in self._encoder.encode_dense(list(texts))]

    return DenseEncoderEmbedding(encoder)


@dataclass
class AutoMergingSetup:
    """A LlamaIndex hierarchy over a dataset: the storage, the vector index and node offsets."""

    storage_context: Any
    vector_index: Any
    offsets: Dict[str, Tuple[str, int, int]]  # node id -> (doc_id, start, end) in dataset.full_text
    leaf_count: int
    node_count: int
    chunk_sizes: Tuple[int, ...]
    seconds: float


def build_automerging(dataset: EvalDataset, encoder: Any, *, chunk_sizes: Sequence[int] = (2048, 512, 128),
                      progress: Optional[Callable[[str, int, int], None]] = None) -> AutoMergingSetup:
    """Parse every document with ``HierarchicalNodeParser``, embed the leaf nodes with our encoder
    into an in-memory ``VectorStoreIndex``, and keep all nodes in the docstore (for merging).

    LlamaIndex stores a child's ``start_char_idx`` relative to its parent chunk, so absolute offsets
    are rebuilt by adding the parents' offsets, and checked against the document text.
    """
    from llama_index.core import Document as LlamaDocument
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import HierarchicalNodeParser, get_leaf_nodes
    from llama_index.core.schema import MetadataMode

    start = time.perf_counter()
    documents = [LlamaDocument(text=dataset.full_text(d.id), id_=d.id) for d in dataset.documents]
    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=list(chunk_sizes))
    nodes = parser.get_nodes_from_documents(documents)
    by_id = {n.node_id: n for n in nodes}
    offsets: Dict[str, Tuple[str, int, int]] = {}

    def absolute(node: Any) -> int:
        if node.node_id in offsets:
            return offsets[node.node_id][1]
        parent = node.parent_node
        base = absolute(by_id[parent.node_id]) if parent is not None and parent.node_id in by_id else 0
        content = node.get_content(metadata_mode=MetadataMode.NONE)
        doc_id = node.ref_doc_id
        text = dataset.full_text(doc_id)
        position = base + (node.start_char_idx or 0)
        if text[position : position + len(content)] != content:
            # Not where the offsets say: search for it from the parent's start.
            found = text.find(content, base)
            if found < 0:
                found = text.find(content)
            if found < 0:
                raise EvalConsistencyError(
                    f"LlamaIndex node {node.node_id} of document {doc_id!r} is not a substring of the "
                    "document text; cannot map it to leaves (check the llama-index-core version)."
                )
            position = found
        offsets[node.node_id] = (doc_id, position, position + len(content))
        return position

    for node in nodes:
        absolute(node)
    leaves = get_leaf_nodes(nodes)
    storage_context = StorageContext.from_defaults()
    storage_context.docstore.add_documents(nodes)
    embed_model = make_llamaindex_embedding(encoder)
    if progress:
        progress("automerging", 0, len(leaves))
    vector_index = VectorStoreIndex(leaves, storage_context=storage_context, embed_model=embed_model)
    if progress:
        progress("automerging", len(leaves), len(leaves))
    seconds = time.perf_counter() - start
    log.info("AutoMerging hierarchy: %d nodes, %d leaves embedded in %.1fs", len(nodes), len(leaves), seconds)
    return AutoMergingSetup(storage_context, vector_index, offsets, len(leaves), len(nodes),
                            tuple(chunk_sizes), seconds)


def hits_from_chunks(dataset: EvalDataset, spans: Sequence[Tuple[str, int, int]]) -> List[ContextHit]:
    """Map character ranges of ``dataset.full_text`` to hits over the leaves they overlap.

    A leaf is touched when the chunk holds at least one of its tokens; the hit carries only the
    tokens of each leaf that the chunk actually contains, and the character range of every leaf it
    cuts (so the metrics can tell whether the cut part holds the evidence).
    """
    hits = []
    cache: Dict[str, List[Tuple[int, int]]] = {}
    for doc_id, lo, hi in spans:
        units = dataset.units[doc_id]
        offsets = cache.setdefault(doc_id, dataset.unit_offsets(doc_id))
        leaf_tokens: Dict[int, int] = {}
        partial: Dict[int, Tuple[int, int]] = {}
        for ordinal, (a, b) in enumerate(offsets):
            if a < hi and lo < b:
                local = (max(lo, a) - a, min(hi, b) - a)
                tokens = count_tokens(units[ordinal][local[0] : local[1]])
                if tokens:
                    leaf_tokens[ordinal] = tokens
                    if local != (0, b - a):
                        partial[ordinal] = local
        hits.append(ContextHit(doc_id, leaf_tokens, char_ranges=partial))
    return hits


def automerging_methods(setup: AutoMergingSetup, dataset: EvalDataset, *,
                        top_ks: Sequence[int] = (6,), ratio: float = 0.5) -> List[Method]:
    """LlamaIndex ``AutoMergingRetriever`` over the leaf vector index, one method per top-k."""
    from llama_index.core.retrievers import AutoMergingRetriever
    from llama_index.core.schema import QueryBundle

    methods = []
    for k in top_ks:
        base = setup.vector_index.as_retriever(similarity_top_k=k)
        retriever = AutoMergingRetriever(base, setup.storage_context, simple_ratio_thresh=ratio, verbose=False)

        def run(text: str, qv: Any, retriever=retriever) -> Retrieval:
            # The query embedding computed once for the question is handed over, not recomputed.
            bundle = QueryBundle(query_str=text, embedding=[float(x) for x in qv.dense])
            start = time.perf_counter()
            found = retriever.retrieve(bundle)
            latency = (time.perf_counter() - start) * 1000.0
            spans = [setup.offsets[n.node.node_id] for n in found]
            hits = hits_from_chunks(dataset, spans)
            # [doc_id, first_leaf, last_leaf, level (None: a chunk), is_leaf, score], plus char range.
            returned = [[d, min(h.leaf_tokens, default=-1), max(h.leaf_tokens, default=-1), None, False,
                         round(float(n.score or 0.0), 5), a, b]
                        for (d, a, b), h, n in zip(spans, hits, found)]
            return Retrieval(hits, latency, returned)

        methods.append(Method(f"automerging_k{k}", "automerging",
                              {"similarity_top_k": k, "simple_ratio_thresh": ratio,
                               "chunk_sizes": list(setup.chunk_sizes)}, run, adaptive=True))
    return methods
