"""LlamaIndex adapter, vector store: :class:`DragKneeVectorStore`, a ``BasePydanticVectorStore``.

Part of :mod:`drag_knee_retriever.integrations.llamaindex`, which re-exports every name here;
import from there. What a LlamaIndex user wires to a vector store works with this one:
``IngestionPipeline(transformations=[...], docstore=..., vector_store=store)`` (its upserts and
de-duplication included: ``delete(ref_doc_id)`` removes what that document brought),
``VectorStoreIndex.from_vector_store(store)`` and its ``as_retriever()`` / ``as_query_engine()`` /
``as_chat_engine()``, ``get_nodes`` / ``delete_nodes`` / ``clear``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Dict, List, Optional, Sequence

from drag_knee_retriever.integrations._llamaindex_convert import (  # first: it raises the missing-framework ImportError
    metadata_filters_to_dict,
    to_node_with_score,
)
from drag_knee_retriever.integrations._common import check_index, make_index, node_metadata, qdrant_style_index_kwargs
from drag_knee_retriever.integrations._members import MEMBER_REFS, Member, MemberStore, content_id, flat_members, split_runs
from drag_knee_retriever.integrations._pages import page_number_from_label

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode, NodeRelationship, ObjectType, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from drag_knee_retriever.errors import ConfigError, InvalidDocumentError, InvalidQueryError
from drag_knee_retriever.model._query_args import check_count, check_dense

log = logging.getLogger("drag_knee_retriever.integrations.llamaindex")

__all__ = ["DragKneeVectorStore", "members_from_llamaindex"]

# Keys identifying the file a page came from (SimpleDirectoryReader sets file_path, PDFReader alone
# sets file_name).
_FILE_KEYS = ("file_path", "file_name")


def _random_id(node_id: Any) -> bool:
    """Whether an id is LlamaIndex's default (a random UUID4), not one the user or reader chose."""
    try:
        return uuid.UUID(str(node_id)).version == 4 and str(uuid.UUID(str(node_id))) == node_id
    except (ValueError, TypeError, AttributeError):
        return False


def members_from_llamaindex(nodes: Sequence[Any], *, keep_ids: bool, group_pages: bool = True) -> List[Member]:
    """LlamaIndex documents or nodes as members (see ``_members``).

    Pages (``page_label`` with ``file_path`` or ``file_name``) are members of their file's tree,
    numbered by their label; any other node is a member of its source document's tree
    (``ref_doc_id``), else its own. ``keep_ids``: the nodes' ids are kept as they are (a vector
    store's ``add``: the pipeline and docstore know them); otherwise a random id (LlamaIndex's
    default for documents) is replaced by one derived from the content, so ingesting the same
    file again duplicates nothing. Pages known by a file name only are split into files where a
    page number repeats (:func:`~._members.split_runs`).
    """
    if isinstance(nodes, BaseNode) or not isinstance(nodes, Sequence):
        raise InvalidDocumentError(
            f"expected a list of LlamaIndex documents or nodes, got {type(nodes).__name__}; wrap a single one in a list."
        )
    members: List[Member] = []
    bare: set = set()
    for position, node in enumerate(nodes):
        where = f"{'nodes' if keep_ids else 'documents'}[{position}] (id={getattr(node, 'node_id', None)!r})"
        if not isinstance(node, BaseNode):
            raise InvalidDocumentError(f"{where} is a {type(node).__name__}, not a LlamaIndex Document or node.")
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        if not isinstance(text, str):
            raise InvalidDocumentError(f"{where} has no text (an image or other non-text node); drop it.")
        meta = dict(node.metadata or {})
        ref = node.ref_doc_id if getattr(node, "ref_doc_id", None) else None
        file_key = next((str(meta[k]) for k in _FILE_KEYS if meta.get(k)), None)
        page = page_number_from_label(meta.get("page_label")) if group_pages and file_key and "page_label" in meta else None
        if page is not None and not meta.get("file_path"):
            bare.add(file_key)
        if keep_ids or not _random_id(node.node_id):
            member_id = node.node_id
        elif meta.get("file_path"):
            # A path names one file: its page (or the whole file) is that member, so a changed
            # file or page replaces its old version.
            member_id = f"{meta['file_path']}#page={meta['page_label']}" if page is not None else str(meta["file_path"])
        else:
            member_id = content_id(file_key, page, text)
        if page is not None:
            group = file_key
        elif ref and ref != member_id:
            group = ref  # chunks of one source document are one tree
        else:
            group = member_id
        members.append(Member(id=member_id, text=text, metadata=meta, group=group, page=page,
                              ref=ref if ref != member_id else None, where=where))
    if bare:
        members = split_runs(members, lambda m: m.group if m.group in bare else None)
    return members


def _as_text_node(member: Member) -> TextNode:
    relationships = {}
    if member.ref:
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=member.ref, node_type=ObjectType.DOCUMENT)
    return TextNode(id_=member.id, text=member.text, metadata=dict(member.metadata), relationships=relationships)


class DragKneeVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store over a :class:`~drag_knee_retriever.DragKneeIndex`.

    ``DragKneeVectorStore(index)``, or ``DragKneeVectorStore(embed_model=..., **index_kwargs)`` for
    a new index (``embed_model``: the index's dense model; else the offline MiniLM).

    - ``add(nodes)`` stores the nodes (ids kept; text and metadata exactly as given): nodes of one
      file's pages, or of one source document, are ONE tree whichever call brought them. The
      index encodes them with its own model (an embedding the pipeline computed is not reused:
      give the index the same ``embed_model`` to keep one vector space).
    - ``delete(ref_doc_id)`` removes every node that document brought; ``delete_nodes(ids)``,
      ``get_nodes(ids)`` (the added nodes, and tree nodes by node id), ``clear()``.
    - ``query``: ``query_mode="tree"`` (default) runs the tree search (the index's method, the
      knee by default; ``similarity_top_k`` caps it) and returns tree nodes with their span text;
      ``"flat"`` (or a query in ``SPARSE`` mode) ranks the leaves flat and returns the nodes as
      added. Similarities are the library's one scale (in [0, 1], higher is better).
      ``MetadataFilters`` apply; ``doc_ids`` restricts to nodes of those source documents.

    ``is_embedding_query`` is False: the query text is encoded by the index (dense and BM25), so
    no query embedding is computed for nothing.
    """

    stores_text: bool = True
    is_embedding_query: bool = False
    flat_metadata: bool = False
    query_mode: str = "tree"

    _index: Any = PrivateAttr()
    _members: Any = PrivateAttr()

    def __init__(self, index: Any = None, *, query_mode: str = "tree", embed_model: Any = None,
                 **index_kwargs: Any) -> None:
        if query_mode not in ("tree", "flat"):
            raise ConfigError(f"query_mode must be 'tree' or 'flat', got {query_mode!r}.")
        super().__init__(query_mode=query_mode)
        if index is not None and embed_model is not None:
            raise ConfigError("index was given, so embed_model cannot configure a new one; drop one of them.")
        if index is None and embed_model is not None:
            index_kwargs = {**index_kwargs, "embedding": embed_model}
        # llama-index-vector-stores-qdrant's spelling (client=, collection_name=, url=, api_key=)
        index_kwargs = qdrant_style_index_kwargs(index_kwargs)
        self._index = check_index(make_index(index, index_kwargs))
        self._members = MemberStore(self._index)

    @classmethod
    def class_name(cls) -> str:
        return "DragKneeVectorStore"

    @property
    def client(self) -> Any:
        """The :class:`DragKneeIndex` (LlamaIndex's name for a store's backend)."""
        return self._index

    @property
    def index(self) -> Any:
        return self._index

    # -- writing ---------------------------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> List[str]:
        members = members_from_llamaindex(list(nodes), keep_ids=True)
        self._members.add(members, progress=add_kwargs.get("progress"))
        return [m.id for m in members]

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[str]:
        """:meth:`add` in a worker thread (encoding is CPU-bound): the event loop runs on."""
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        self._members.delete_refs([ref_doc_id])

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    def delete_nodes(self, node_ids: Optional[List[str]] = None, filters: Optional[MetadataFilters] = None,
                     **delete_kwargs: Any) -> None:
        if filters is not None:
            raise InvalidQueryError("delete_nodes by filters is not supported; pass node_ids.")
        if node_ids:
            self._members.delete(list(node_ids))

    async def adelete_nodes(self, node_ids: Optional[List[str]] = None, filters: Optional[MetadataFilters] = None,
                            **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    def clear(self) -> None:
        for info in self._index.list_documents():
            self._index.delete_document(info.doc_id)

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    # -- reading ---------------------------------------------------------------------------------

    def get_nodes(self, node_ids: Optional[List[str]] = None, filters: Optional[MetadataFilters] = None) -> List[BaseNode]:
        """The nodes added with these ids (as added), and tree nodes by node id (a parent with its
        whole span's text); ids found nowhere are skipped."""
        if filters is not None:
            raise InvalidQueryError("get_nodes by filters is not supported; pass node_ids.")
        ids = list(node_ids or [])
        found: Dict[str, BaseNode] = {m.id: _as_text_node(m) for m in self._members.get(ids)}
        rest = [i for i in ids if i not in found]
        for node in self._index.get_nodes(rest) if rest else ():
            found[node.node.id] = TextNode(id_=node.node.id, text=node.text, metadata=node_metadata(node.node))
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    async def aget_nodes(self, node_ids: Optional[List[str]] = None,
                         filters: Optional[MetadataFilters] = None) -> List[BaseNode]:
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)

    def _query_filters(self, query: VectorStoreQuery) -> Any:
        if query.node_ids:
            raise InvalidQueryError("VectorStoreQuery.node_ids is not supported; use filters or doc_ids.")
        check_count(query.similarity_top_k, "similarity_top_k")  # said "max_results", or a k 4x the one given
        filters = metadata_filters_to_dict(query.filters) if query.filters is not None else None
        if query.doc_ids:
            refs = {MEMBER_REFS: {"$in": self._doc_ids(query.doc_ids)}}
            filters = refs if filters is None else {"$and": [filters, refs]}
        return filters

    def _doc_ids(self, doc_ids: Any) -> List[str]:
        """``VectorStoreQuery.doc_ids``, checked in the user's words (the filter they become names
        an internal key, which the index's unknown-key check would otherwise quote)."""
        from drag_knee_retriever.store import parse_filters

        if isinstance(doc_ids, (str, bytes)) or not all(isinstance(d, str) and d for d in doc_ids):
            raise InvalidQueryError(f"doc_ids must be a list of document ids (the ref_doc_id of the nodes to "
                                    f"search), got {doc_ids!r:.80}.")
        ids = list(doc_ids)
        try:
            self._index._check_filter_keys(parse_filters({MEMBER_REFS: {"$in": ids}}))
        except InvalidQueryError:
            raise InvalidQueryError(
                f"doc_ids={ids!r:.80} selects nodes by the document they came from (their ref_doc_id), but no "
                "node in this store has one: every node was added without a source document. Add nodes that "
                "have one (a node parser's output, node.ref_doc_id set), or select by metadata with filters= "
                "instead of doc_ids=."
            ) from None
        return ids

    def _flat(self, query: VectorStoreQuery, text: Optional[str], filters: Any) -> VectorStoreQueryResult:
        mode, vectors = "hybrid", None
        if query.mode == VectorStoreQueryMode.SPARSE:
            mode = "sparse"
        if text is None:
            from drag_knee_retriever.store import QueryVectors

            if query.query_embedding is None:
                raise InvalidQueryError("a query needs its text (query_str), or an embedding of the index's model "
                                        "(query_embedding).")
            dense = check_dense(query.query_embedding, self._index.encoder.dense_size, "query_embedding")
            vectors = QueryVectors(dense=dense, sparse_indices=(), sparse_values=())
            mode, text = "dense", "vector query"
        ranked = flat_members(self._index, text, query.similarity_top_k, filters=filters, mode=mode, vectors=vectors)
        nodes = [_as_text_node(m) for m, _ in ranked]
        return VectorStoreQueryResult(nodes=nodes, similarities=[s for _, s in ranked], ids=[n.node_id for n in nodes])

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        filters = self._query_filters(query)
        text = query.query_str
        if self.query_mode == "flat" or query.mode == VectorStoreQueryMode.SPARSE or not text:
            return self._flat(query, text or None, filters)
        result = self._index.search(text, max_results=query.similarity_top_k, filters=filters)
        return self._tree_result(result)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        filters = self._query_filters(query)
        text = query.query_str
        if self.query_mode == "flat" or query.mode == VectorStoreQueryMode.SPARSE or not text:
            return await asyncio.to_thread(self._flat, query, text or None, filters)
        result = await self._index.asearch(text, max_results=query.similarity_top_k, filters=filters)
        return self._tree_result(result)

    @staticmethod
    def _tree_result(result: Any) -> VectorStoreQueryResult:
        scored = [to_node_with_score(hit) for hit in result.nodes]
        return VectorStoreQueryResult(nodes=[s.node for s in scored], similarities=[float(s.score) for s in scored],
                                      ids=[s.node.node_id for s in scored])

    def close(self) -> None:
        """Close the index (a Qdrant client you passed in stays open)."""
        self._index.close()
