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
    with_embed_model,
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
        start = getattr(node, "start_char_idx", None)  # where a node parser cut it from its document
        members.append(Member(id=member_id, text=text, metadata=meta, group=group, page=page,
                              ref=ref if ref != member_id else None, where=where,
                              start=start if isinstance(start, int) and not isinstance(start, bool) else None))
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
    a new index (``embed_model``: the index's dense model; else ``Settings.embed_model`` if you set
    one, else the offline MiniLM).

    - ``add(nodes)`` stores the nodes (ids kept; text and metadata exactly as given): nodes of one
      file's pages, or of one source document, are ONE tree whichever call brought them. The
      index's dense model is ``embed_model``, else ``Settings.embed_model`` if you set one, else
      the offline MiniLM; with your model, the embeddings the nodes carry (a pipeline's) are the
      leaves' vectors (not computed again) and the inner nodes are encoded with the same model.
      Nodes carrying embeddings the store cannot use (no model of yours given) log a warning.
    - ``delete(ref_doc_id)`` removes every node that document brought; ``delete_nodes(ids)``,
      ``get_nodes(ids)`` (the added nodes, and tree nodes by node id), ``clear()``.
    - ``query``: ``query_mode="tree"`` (default) runs the tree search and returns tree nodes with
      their span text: ``similarity_top_k`` of them, as from any store (the tree search's own, then
      the best leaves none of them covers); ``adaptive=True`` (on the store, or per query through
      ``vector_store_kwargs={"adaptive": True}``) lets the knee decide how many, up to
      ``similarity_top_k``. ``"flat"`` (or a query in ``SPARSE`` mode) ranks the leaves flat and
      returns ``similarity_top_k`` nodes as added. Similarities are the library's one scale (in
      [0, 1], higher is better, never rising along the ranking: :mod:`~drag_knee_retriever.search._relevance`).
      ``MetadataFilters`` apply (a page's or a chunk's keys too); ``doc_ids`` restricts to nodes of
      those source documents.

    ``is_embedding_query`` is False: the query text is encoded by the index (dense and BM25), so
    no query embedding is computed for nothing.
    """

    stores_text: bool = True
    is_embedding_query: bool = False
    flat_metadata: bool = False
    query_mode: str = "tree"
    adaptive: bool = False

    _index: Any = PrivateAttr()
    _members: Any = PrivateAttr()
    _missing: Any = PrivateAttr(default=None)
    _pending: Any = PrivateAttr(default=None)
    _warned_embeddings: bool = PrivateAttr(default=False)

    def __init__(self, index: Any = None, *, query_mode: str = "tree", adaptive: bool = False,
                 embed_model: Any = None, **index_kwargs: Any) -> None:
        if query_mode not in ("tree", "flat"):
            raise ConfigError(f"query_mode must be 'tree' or 'flat', got {query_mode!r}.")
        if not isinstance(adaptive, bool):
            raise ConfigError(f"adaptive must be True or False, got {adaptive!r}.")
        super().__init__(query_mode=query_mode, adaptive=adaptive)
        if index is not None and embed_model is not None:
            raise ConfigError("index was given, so embed_model cannot configure a new one; drop one of them.")
        if index is None:
            # embed_model=, else a Settings.embed_model you set (as VectorStoreIndex does); an
            # existing collection checks it against the model it was built with.
            index_kwargs = with_embed_model(index_kwargs, embed_model)
        # llama-index-vector-stores-qdrant's spelling (client=, collection_name=, url=, api_key=)
        index_kwargs = qdrant_style_index_kwargs(index_kwargs)
        self._missing = None
        if index is None and index_kwargs.get("location", ":memory:") != ":memory:":
            # As llama-index-vector-stores-qdrant: a new collection is made for the nodes added; a
            # read before any (a misspelt name) is an error naming the collections there (_read_check).
            from drag_knee_retriever.config import StoreConfig
            from drag_knee_retriever.facade._opening import existing_collections

            names = existing_collections(index_kwargs["location"], index_kwargs.get("store") or StoreConfig())
            if names is not None and (index_kwargs.get("store") or StoreConfig()).collection not in names:
                self._missing = (index_kwargs["location"], index_kwargs.get("store") or StoreConfig(), names)
        if self._missing is not None:
            # Opened (and the collection made) by the first add, not here: a misspelt name read
            # from leaves nothing behind.
            self._index, self._members, self._pending = None, None, index_kwargs
        else:
            self._index = check_index(make_index(index, index_kwargs))
            self._members = MemberStore(self._index)

    @property
    def _ix(self) -> Any:
        """The index, opened (its collection made) on first use when it did not exist."""
        if self._index is None:
            self._index = check_index(make_index(None, self._pending))
            self._members = MemberStore(self._index)
            self._pending = None
        return self._index

    @property
    def _mem(self) -> Any:
        """The members of the index, opened as :attr:`_ix` is."""
        return MemberStore(self._ix) if self._members is None else self._members

    @classmethod
    def class_name(cls) -> str:
        return "DragKneeVectorStore"

    def _read_check(self) -> None:
        """A read of a collection that did not exist when this store was made and that nothing
        was added to since: the name is likely misspelt (CollectionNotFoundError naming the
        collections there). One made since (by another process) is opened."""
        if self._missing is None:
            return
        if self._index is None:
            from drag_knee_retriever.facade._opening import collection_not_found, existing_collections

            location, config, _ = self._missing
            names = existing_collections(location, config) or []
            if config.collection not in names:
                raise collection_not_found(location, config, names)
        self._missing = None

    def _absent(self) -> bool:
        """Whether the collection still does not exist (a delete then has nothing to remove)."""
        if self._missing is None or self._index is not None:
            return False
        try:
            self._read_check()
        except Exception:
            return True
        return False

    @property
    def client(self) -> Any:
        """The ``QdrantClient`` holding the collection, as llama-index-vector-stores-qdrant's
        (qdrant-client local mode, a server, or the client you passed); the embedded Edge engine
        has none (AttributeError saying what to use). The index itself is :attr:`index`."""
        from drag_knee_retriever.integrations._common import qdrant_client_of

        return qdrant_client_of(self._ix)

    @property
    def collection_name(self) -> str:
        """The Qdrant collection the index lives in (``collection_name=``)."""
        if self._index is None:  # not opened yet: no collection of that name exists
            return self._missing[1].collection
        return self._index.store_config.collection

    @property
    def index(self) -> Any:
        return self._ix

    # -- writing ---------------------------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> List[str]:
        """Store the nodes (see the class docstring). Embeddings the nodes carry (an
        IngestionPipeline's) are the leaves' vectors when the index encodes with your LlamaIndex
        model (``embed_model=`` or ``Settings.embed_model``): those texts are not encoded again."""
        nodes = list(nodes)
        members = members_from_llamaindex(nodes, keep_ids=True)
        self._mem.add(members, progress=add_kwargs.get("progress"), vectors=self._node_vectors(nodes, members))
        return [m.id for m in members]

    def _node_vectors(self, nodes: Sequence[BaseNode], members: Sequence[Member]) -> Optional[Dict[str, Any]]:
        """member id -> the embedding its node carries, when the index's dense model is the user's
        LlamaIndex model (the pipeline's); otherwise None, with a warning once if they carry some."""
        from drag_knee_retriever.embeddings.frameworks import LlamaIndexEmbedder

        carried: Dict[str, Any] = {m.id: n.embedding for n, m in zip(nodes, members)
                                   if getattr(n, "embedding", None) is not None}
        if not carried:
            return None
        encoder = self._ix.encoder
        if isinstance(getattr(encoder, "dense", None), LlamaIndexEmbedder):
            return carried
        if not self._warned_embeddings:
            self._warned_embeddings = True
            size = len(next(iter(carried.values())))
            log.warning("the nodes carry embeddings (%d dimensions) that this store does not use: it encodes with %s. "
                        "Pass embed_model=your model (or set Settings.embed_model) to the store to keep yours.",
                        size, encoder.model_id)
        return None

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[str]:
        """:meth:`add` in a worker thread (encoding is CPU-bound): the event loop runs on."""
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        if not self._absent():
            self._mem.delete_refs([ref_doc_id])

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    def delete_nodes(self, node_ids: Optional[List[str]] = None, filters: Optional[MetadataFilters] = None,
                     **delete_kwargs: Any) -> None:
        """Remove the nodes with these ids and/or matching ``filters`` (both: those doing both).
        Neither removes nothing (``clear()`` removes everything)."""
        if self._absent():
            return
        if filters is not None:
            ids = [m.id for m in self._mem.matching(metadata_filters_to_dict(filters))]
            node_ids = ids if node_ids is None else [i for i in node_ids if i in set(ids)]
        if node_ids:
            self._mem.delete(list(node_ids))

    async def adelete_nodes(self, node_ids: Optional[List[str]] = None, filters: Optional[MetadataFilters] = None,
                            **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    def clear(self) -> None:
        if self._absent():
            return
        for info in self._ix.list_documents():
            self._ix.delete_document(info.doc_id)

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    # -- reading ---------------------------------------------------------------------------------

    def get_nodes(self, node_ids: Optional[List[str]] = None, filters: Optional[MetadataFilters] = None) -> List[BaseNode]:
        """The nodes added with these ids (as added), and tree nodes by node id (a parent with its
        whole span's text); ids found nowhere are skipped. ``filters`` (``MetadataFilters``): the
        added nodes whose metadata match (with ``node_ids``: those of them that match); neither:
        every added node, as llama-index-vector-stores-qdrant's."""
        self._read_check()
        if filters is not None or node_ids is None:
            matching = self._mem.matching(metadata_filters_to_dict(filters) if filters is not None else None)
            if node_ids is None:
                return [_as_text_node(m) for m in matching]
            wanted = set(node_ids)
            return [_as_text_node(m) for m in matching if m.id in wanted]
        ids = list(node_ids)
        found: Dict[str, BaseNode] = {m.id: _as_text_node(m) for m in self._mem.get(ids)}
        rest = [i for i in ids if i not in found]
        for node in self._ix.get_nodes(rest) if rest else ():
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
            self._ix._check_filter_keys(parse_filters({MEMBER_REFS: {"$in": ids}}))
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
            dense = check_dense(query.query_embedding, self._ix.encoder.dense_size, "query_embedding")
            vectors = QueryVectors(dense=dense, sparse_indices=(), sparse_values=())
            mode, text = "dense", "vector query"
        ranked = flat_members(self._ix, text, query.similarity_top_k, filters=filters, mode=mode, vectors=vectors)
        nodes = [_as_text_node(m) for m, _ in ranked]
        return VectorStoreQueryResult(nodes=nodes, similarities=[s for _, s in ranked], ids=[n.node_id for n in nodes])

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        self._read_check()
        filters = self._query_filters(query)
        text = query.query_str
        if self.query_mode == "flat" or query.mode == VectorStoreQueryMode.SPARSE or not text:
            return self._flat(query, text or None, filters)
        result = self._ix.search(text, max_results=query.similarity_top_k, filters=filters,
                                    fill=not self._adaptive(kwargs))
        return self._tree_result(result)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        self._read_check()
        filters = self._query_filters(query)
        text = query.query_str
        if self.query_mode == "flat" or query.mode == VectorStoreQueryMode.SPARSE or not text:
            return await asyncio.to_thread(self._flat, query, text or None, filters)
        result = await self._ix.asearch(text, max_results=query.similarity_top_k, filters=filters,
                                           fill=not self._adaptive(kwargs))
        return self._tree_result(result)

    def _adaptive(self, kwargs: Dict[str, Any]) -> bool:
        """Whether the knee decides how many nodes (``similarity_top_k`` a cap), for one query:
        ``adaptive=`` of the query (``vector_store_kwargs``), else the store's."""
        adaptive = kwargs.get("adaptive", self.adaptive)
        if not isinstance(adaptive, bool):
            raise InvalidQueryError(f"adaptive must be True or False, got {adaptive!r}.")
        return adaptive

    @staticmethod
    def _tree_result(result: Any) -> VectorStoreQueryResult:
        scored = [to_node_with_score(hit) for hit in result.nodes]
        return VectorStoreQueryResult(nodes=[s.node for s in scored], similarities=[float(s.score) for s in scored],
                                      ids=[s.node.node_id for s in scored])

    def close(self) -> None:
        """Close the index (a Qdrant client you passed in stays open)."""
        if self._index is not None:
            self._index.close()
