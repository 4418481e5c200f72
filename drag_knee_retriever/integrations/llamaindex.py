"""LlamaIndex adapter: a drop-in ``BaseRetriever``, a ``NodeParser`` that builds the document trees
during ingestion, and the knee as a ``BaseNodePostprocessor`` for any other retriever.

Install with ``pip install "drag-knee-retriever[llamaindex]"``.

The adapter converts types and delegates to the core: :meth:`DragKneeIndex.search` /
:meth:`~DragKneeIndex.asearch` for queries, :func:`drag_knee_retriever.build._builder.build_trees` for the
hierarchy, :meth:`~DragKneeIndex.add_documents` / :meth:`~DragKneeIndex.add_nodes` for ingestion
and :func:`drag_knee_retriever.common._knee.knee_cut` for the postprocessor. It scores, encodes and stores
nothing itself.

The retriever is in ``_llamaindex_retriever``, the conversions in ``_llamaindex_convert``;
every name is re-exported here, so import from this module.

Example::

    from llama_index.core.query_engine import RetrieverQueryEngine
    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever

    retriever = DragKneeRetriever.from_documents(SimpleDirectoryReader("docs").load_data(), model_path=...)
    engine = RetrieverQueryEngine.from_args(retriever, llm=my_llm)
    engine.query("what do the authors measure?")
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence, Tuple

# First: _llamaindex_convert raises the ImportError naming the extra when LlamaIndex is missing.
from drag_knee_retriever.integrations._llamaindex_convert import (
    page_entries,
    from_llamaindex_documents,
    index_parsed_nodes,
    metadata_filters_to_dict,
    to_node_with_score,
    to_text_node,
    to_tree_node,
)
from drag_knee_retriever.integrations._llamaindex_retriever import DragKneeRetriever, DragKneeTraceEvent
from drag_knee_retriever.integrations._llamaindex_store import DragKneeVectorStore, members_from_llamaindex
from drag_knee_retriever.integrations._common import knee_keep
from drag_knee_retriever.integrations._pages import group_paged_documents

from llama_index.core.bridge.pydantic import Field, field_serializer, field_validator
from llama_index.core.node_parser import NodeParser
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode

from drag_knee_retriever.config import BuildConfig
from drag_knee_retriever.errors import ConfigError
from drag_knee_retriever.model._nodes import TreeNode

log = logging.getLogger(__name__)

__all__ = [
    "DragKneeRetriever",
    "DragKneeVectorStore",
    "DragKneeTraceEvent",
    "metadata_filters_to_dict",
    "DragTreeNodeParser",
    "KneeNodePostprocessor",
    "from_llamaindex_documents",
    "index_parsed_nodes",
    "to_node_with_score",
    "to_tree_node",
]


class DragTreeNodeParser(NodeParser):
    """Build the DRAG document trees from LlamaIndex documents, as a ``NodeParser``.

    Returns every node of every tree (roots, inner nodes, leaves) as ``TextNode`` objects with
    stable ids and PARENT / CHILD relationships, so ``get_root_nodes`` / ``get_leaf_nodes`` work and
    consecutive leaves are linked PREVIOUS / NEXT. Inner nodes carry their summary as text. Usable
    as a transformation of an ``IngestionPipeline``; feed its output to
    :func:`index_parsed_nodes` (or :meth:`DragKneeRetriever.from_nodes`) to index it unchanged.

    - ``build``: the :class:`~drag_knee_retriever.BuildConfig` (branching, leaf sizes, summaries).
    - ``summarizer``: a :class:`~drag_knee_retriever.Summarizer`; ``None`` = the extractive default.
    - ``group_pages``: merge per-page documents of one file into one tree (see
      :func:`from_llamaindex_documents`).

    Give the parser the same ``BuildConfig`` and summariser as the index that will ingest its
    nodes: they are part of each document's hash, so a document parsed with other settings is
    rebuilt (replaced) when it is later added with ``index.add_documents``. Node ids are the
    builder's deterministic ids; ``id_func`` is not used.
    """

    build: Any = Field(default_factory=BuildConfig, description="BuildConfig of the trees.")
    summarizer: Any = Field(default=None, description="Summarizer of inner nodes (None: extractive).")
    group_pages: bool = Field(default=True, description="Merge the pages of one file into one tree.")
    # The base class would link every consecutive pair of returned nodes PREVIOUS/NEXT, mixing
    # levels; the parser links consecutive leaves itself instead.
    include_prev_next_rel: bool = Field(default=False, description="Base-class linking (off: the parser links leaves).")

    @field_validator("build")
    @classmethod
    def _check_build(cls, value: Any) -> Any:
        if value is None:
            return BuildConfig()
        if not isinstance(value, BuildConfig):
            raise ConfigError(f"build must be a drag_knee_retriever.BuildConfig, got {type(value).__name__}.")
        return value

    @field_validator("summarizer")
    @classmethod
    def _check_summarizer(cls, value: Any) -> Any:
        if value is not None and not hasattr(value, "describe"):
            raise ConfigError(
                f"summarizer must implement the Summarizer protocol (describe, identity), got {type(value).__name__}."
            )
        return value

    # The ingestion cache keys on str(to_dict()); give it the settings, not object addresses.
    @field_serializer("build")
    def _dump_build(self, value: BuildConfig) -> str:
        return value.fingerprint()  # the same string as before the settings were grouped: caches stay valid

    @field_serializer("summarizer")
    def _dump_summarizer(self, value: Any) -> Optional[str]:
        return None if value is None else str(getattr(value, "identity", type(value).__name__))

    @classmethod
    def class_name(cls) -> str:
        return "DragTreeNodeParser"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> List[BaseNode]:
        from drag_knee_retriever.build._builder import build_trees
        from drag_knee_retriever.build._summarize import ExtractiveSummarizer

        nodes = list(nodes)
        entries = page_entries(nodes, self.group_pages)
        pairs = group_paged_documents(entries)
        summarizer = self.summarizer if self.summarizer is not None else ExtractiveSummarizer(self.build)
        tree_nodes = build_trees([doc for doc, _ in pairs], self.build, summarizer)
        # SOURCE: a tree made from one input document points to it (so the base class can place
        # leaves in its text); a tree merged from several pages points to the file's document id.
        sources: Dict[str, Optional[RelatedNodeInfo]] = {}
        for doc, positions in pairs:
            single = len(positions) == 1 and entries[positions[0]].group is None
            sources[doc.id] = nodes[positions[0]].as_related_node_info() if single else None
        out: List[BaseNode] = []
        previous_leaf: Dict[str, TextNode] = {}
        for tree_node in sorted(tree_nodes, key=_document_order):
            text_node = to_text_node(tree_node, sources.get(tree_node.doc_id))
            if tree_node.is_leaf:
                before = previous_leaf.get(tree_node.doc_id)
                if before is not None:
                    before.relationships[NodeRelationship.NEXT] = text_node.as_related_node_info()
                    text_node.relationships[NodeRelationship.PREVIOUS] = before.as_related_node_info()
                previous_leaf[tree_node.doc_id] = text_node
            out.append(text_node)
        log.debug("parsed %d documents into %d tree nodes", len(pairs), len(out))
        return out


def _document_order(node: TreeNode) -> Tuple[str, int, int, int]:
    # Per document: top-down by level, then by position; leaves end up in reading order.
    return (node.doc_id, node.level, node.span.first_leaf, node.span.last_leaf)


class KneeNodePostprocessor(BaseNodePostprocessor):
    """Cut any retriever's ranked nodes at the knee of their scores.

    Add it to a query engine (``node_postprocessors=[KneeNodePostprocessor()]``) to keep an
    adaptive number of nodes instead of a fixed ``similarity_top_k``. Nodes must arrive best
    first, every one with a score; ``sensitivity`` in (0, 1] (1.0 = plain knee, smaller keeps
    more); ``higher_is_better=False`` for distances. Fewer than three nodes are kept as they are.
    """

    sensitivity: float = Field(default=1.0, gt=0.0, le=1.0, description="Knee sensitivity in (0, 1].")
    higher_is_better: bool = Field(default=True, description="False if scores are distances.")

    @classmethod
    def class_name(cls) -> str:
        return "KneeNodePostprocessor"

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        nodes = list(nodes)
        if not nodes:
            return []
        return knee_keep(
            nodes,
            [getattr(item, "score", None) for item in nodes],
            sensitivity=self.sensitivity,
            higher_is_better=self.higher_is_better,
            what="nodes",
            bad_score=lambda position, score: (
                f"nodes[{position}] has score {score!r}; the knee needs every node scored. Put "
                "KneeNodePostprocessor after a retriever or reranker that sets NodeWithScore.score."
            ),
            expects=(
                "KneeNodePostprocessor expects nodes best first "
                f"({'highest' if self.higher_is_better else 'lowest'} score first)."
            ),
        )
