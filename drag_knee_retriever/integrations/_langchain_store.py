"""LangChain adapter, vector store: :class:`DragKneeVectorStore`, a ``VectorStore`` over the index.

Part of :mod:`drag_knee_retriever.integrations.langchain`, which re-exports every name here;
import from there. Code written for langchain-qdrant's ``QdrantVectorStore`` runs with only its
constructor line changed: ``add_documents`` / ``add_texts`` (ids kept, content ids otherwise),
``similarity_search*`` (flat hybrid search over the leaves, returning the documents as they were
added), ``get_by_ids``, ``delete(ids)``, and ``as_retriever(search_type=..., search_kwargs=...)``,
which returns the tree search (:class:`DragKneeRetriever`) instead of a flat one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from drag_knee_retriever.errors import ConfigError, InvalidDocumentError
from drag_knee_retriever.integrations._common import check_query, node_metadata, user_metadata
from drag_knee_retriever.integrations._members import Member, MemberStore, content_id, flat_members
from drag_knee_retriever.model._query_args import check_count, check_dense, check_threshold

log = logging.getLogger("drag_knee_retriever.integrations.langchain")

__all__ = ["DragKneeVectorStore", "members_from_langchain", "read_langchain_documents"]


def read_langchain_documents(documents: Any) -> List[Tuple[str, LCDocument, Optional[str], Optional[int]]]:
    """Check that ``documents`` is a list of LangChain Documents; each one's ``(where, document,
    source, page)``: ``where`` names it in errors, ``source`` is ``metadata["source"]`` as a non-blank
    string (else None), ``page`` is ``metadata["page"]`` when it is an int (not a bool), else None.
    The one reading of LangChain documents for the vector store and the retriever."""
    if isinstance(documents, (LCDocument, str)) or not isinstance(documents, Sequence):
        raise InvalidDocumentError(
            "documents must be a list of LangChain Document objects, got "
            f"{type(documents).__name__}; wrap a single document in a list."
        )
    read = []
    for position, doc in enumerate(documents):
        where = f"documents[{position}]"
        if not isinstance(doc, LCDocument):
            raise InvalidDocumentError(
                f"{where} is a {type(doc).__name__}, not a langchain_core.documents.Document; "
                "convert it, or use DragKneeIndex.add_documents for drag_knee_retriever.Document."
            )
        meta = doc.metadata or {}
        source = meta.get("source")
        source = str(source) if source is not None and str(source).strip() else None
        page = meta.get("page")
        read.append((where, doc, source, page if isinstance(page, int) and not isinstance(page, bool) else None))
    return read


def members_from_langchain(documents: Sequence[LCDocument], ids: Optional[Sequence[Optional[str]]] = None,
                           *, group_pages: bool = True) -> List[Member]:
    """LangChain documents as members (see ``_members``): the id is ``ids[i]``, else the
    document's ``id``, else derived from its content; documents with ``metadata["source"]`` are
    members of that source's tree, ordered by ``metadata["page"]`` (0-based, as PyPDFLoader gives
    it) where every one has it, else in the order added."""
    read = read_langchain_documents(documents)
    if ids is not None and len(ids) != len(documents):
        raise InvalidDocumentError(f"{len(ids)} ids for {len(documents)} documents; give one id per document.")
    members = []
    for position, (where, doc, source, page) in enumerate(read):
        meta = dict(doc.metadata or {})
        page = page if group_pages and source is not None and page is not None and page >= 0 else None
        given = (ids[position] if ids is not None else None) or getattr(doc, "id", None)
        member_id = str(given) if given else content_id(source, page, doc.page_content if isinstance(doc.page_content, str) else "")
        group = source if (source is not None and group_pages) else member_id
        start = meta.get("start_index")  # a splitter's add_start_index=True
        members.append(Member(id=member_id, text=doc.page_content, metadata=meta, group=group, page=page,
                              where=f"{where} (source={source!r})" if source else where,
                              start=start if isinstance(start, int) and not isinstance(start, bool) else None))
    return members


# QdrantVectorStore's constructor / from_documents keywords that mean what ours do under another name.
_QDRANT_ALIASES = {"collection_name": "collection"}
# ... and those that configure what this store decides itself (one schema: dense + BM25, cosine).
_QDRANT_FIXED = ("retrieval_mode", "vector_name", "sparse_vector_name", "distance", "content_payload_key",
                 "metadata_payload_key", "sparse_embedding", "vector_params", "sparse_vector_params")


def _qdrant_store_kwargs(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Keywords written for langchain-qdrant's QdrantVectorStore, in DragKneeIndex's spelling."""
    from drag_knee_retriever.integrations._common import qdrant_style_index_kwargs

    out = qdrant_style_index_kwargs(kwargs)
    fixed = sorted(k for k in out if k in _QDRANT_FIXED)
    if fixed:
        raise ConfigError(f"{fixed} configure langchain-qdrant's own schema; this store always keeps a dense and a "
                          "BM25 vector per node (cosine, fused by RRF). Drop them.")
    if out.pop("force_recreate", False):
        raise ConfigError("force_recreate=True would delete an existing collection; delete its documents "
                          "(store.delete(ids)) or use another collection name instead.")
    return out


def member_document(member: Member, score: Optional[float] = None) -> LCDocument:
    """A member as the LangChain document it was added as (its id, text and metadata)."""
    return LCDocument(id=member.id, page_content=member.text, metadata=dict(member.metadata))


class DragKneeVectorStore(VectorStore):
    """A LangChain ``VectorStore`` over a :class:`~drag_knee_retriever.DragKneeIndex`.

    ``DragKneeVectorStore(index)`` wraps an index; ``DragKneeVectorStore(embedding=emb,
    **index_kwargs)`` builds one (``location``, ``client``, ``build``, ...; ``embedding`` is the
    dense model, else the offline MiniLM). ``from_documents`` / ``from_texts`` as for any store.

    - Documents keep their id (``ids=`` or ``Document.id``); one without gets an id derived from
      its source, page and text, so adding it again changes nothing. Documents sharing
      ``metadata["source"]`` are one tree whichever call added them (pages ordered by
      ``metadata["page"]``); an id given again replaces that document.
    - ``similarity_search*`` rank the leaves by hybrid search (dense + BM25, fused by RRF: flat,
      no tree) and return the documents as they were added, each once (ranked by its best leaf).
      Scores are the library's one scale (in [0, 1], higher is better, never rising along the
      ranking: the query's cosine with each document's best leaf, made monotone, see
      :mod:`~drag_knee_retriever.search._relevance`); ``similarity_search_with_relevance_scores`` returns
      the same numbers.
    - ``as_retriever()`` returns the tree search, a :class:`DragKneeRetriever`: ``search_kwargs``
      ``k`` (default 4: ``k`` results, as from any store: the tree search's own, then the best
      leaves none of them covers), ``filter`` (any key, a page's too), ``score_threshold`` and the
      search settings; ``{"adaptive": True}`` lets the knee decide how many (``k`` then caps
      them); ``search_type="similarity_score_threshold"`` is the same with a threshold;
      ``"mmr"`` returns LangChain's ``VectorStoreRetriever`` over :meth:`max_marginal_relevance_search`
      (flat, ``k`` / ``fetch_k`` / ``lambda_mult``), as langchain-qdrant's does.
    - ``max_marginal_relevance_search*``: MMR over the ``fetch_k`` best of the flat search, on the
      stored dense vectors. ``client`` (the ``QdrantClient``; none on the embedded Edge engine),
      ``collection_name``, ``from_existing_collection`` (an unknown name is an error naming those
      that exist; the constructor opening a folder, URL or client by name checks the same).
    - ``get_by_ids`` takes the ids of added documents and the ids of tree nodes (a result's
      ``drag_node_id`` / ``drag_parent_id``: a parent comes back with its whole span's text).
    - ``filter``: a dict (``{"source": "a.pdf"}``, ``{"year": {"$gte": 2020}}``, ``$or`` ...) or a
      qdrant-client ``models.Filter`` (``key="metadata.source"`` as langchain-qdrant writes it).
    """

    #: The class ``as_retriever`` returns (``langchain.DragKneeRetriever``, set where it is defined).
    retriever_class: Any = None

    def __init__(self, index: Any = None, *, embedding: Optional[Embeddings] = None, ocr: Any = None,
                 create: bool = False, **index_kwargs: Any) -> None:
        from drag_knee_retriever.integrations._common import check_index, make_index, require_existing_collection

        if index is not None and embedding is not None:
            raise ConfigError("index was given, so embedding= cannot configure a new one; drop one of them.")
        index_kwargs = _qdrant_store_kwargs(index_kwargs)
        if index is None and not create and index_kwargs.get("location", ":memory:") != ":memory:":
            # As langchain-qdrant's constructor: a store opened by name reads an existing collection
            # (a misspelt name was a new, empty index); from_documents / from_texts create one.
            require_existing_collection(index_kwargs)
        if index is None and embedding is not None:
            index_kwargs = {**index_kwargs, "embedding": embedding}
        self.index = check_index(make_index(index, index_kwargs))
        self._embedding = embedding
        self._members = MemberStore(self.index, ocr=ocr)

    # -- properties ------------------------------------------------------------------------------

    @property
    def embeddings(self) -> Optional[Embeddings]:
        return self._embedding

    @property
    def collection_name(self) -> str:
        """The Qdrant collection the index lives in (``collection_name=``)."""
        return self.index.store_config.collection

    @property
    def client(self) -> Any:
        """The ``QdrantClient`` holding the collection (qdrant-client local mode, a server, or the
        client you passed); the embedded Edge engine has none (AttributeError saying what to use)."""
        from drag_knee_retriever.integrations._common import qdrant_client_of

        return qdrant_client_of(self.index)

    # -- writing ---------------------------------------------------------------------------------

    def add_documents(self, documents: List[LCDocument], **kwargs: Any) -> List[str]:
        """Add or replace documents; returns their ids, one per document given."""
        ids = kwargs.pop("ids", None)
        progress = kwargs.pop("progress", None)
        # index() passes its batch_size; the index writes in batches of its own (upsert_batch_size).
        kwargs.pop("batch_size", None)
        if kwargs:
            raise TypeError(f"add_documents takes ids=, progress= and batch_size= only, got {sorted(kwargs)}.")
        members = members_from_langchain(documents, ids)
        self._members.add(members, progress=progress)
        return [m.id for m in members]

    async def aadd_documents(self, documents: List[LCDocument], **kwargs: Any) -> List[str]:
        """:meth:`add_documents` in a worker thread (encoding is CPU-bound): the event loop runs on."""
        return await asyncio.to_thread(self.add_documents, documents, **kwargs)

    async def aadd_texts(self, texts: Iterable[str], metadatas: Optional[List[Dict[str, Any]]] = None, *,
                         ids: Optional[List[str]] = None, **kwargs: Any) -> List[str]:
        return await asyncio.to_thread(self.add_texts, list(texts), metadatas, ids=ids, **kwargs)

    def delete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        """Remove documents by id (a source's id, e.g. ``"report.pdf"``, removes its whole tree).
        Ids not stored are ignored. Returns True."""
        if kwargs:
            raise TypeError(f"delete takes only ids, got {sorted(kwargs)}.")
        if ids is None:
            raise ValueError("delete needs ids (the document ids to remove); there is no delete-all.")
        if isinstance(ids, str):
            raise ValueError("delete takes a list of ids; wrap a single id in a list.")
        self._members.delete(list(ids))
        return True

    async def adelete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        return await asyncio.to_thread(self.delete, ids, **kwargs)

    # -- reading ---------------------------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> List[LCDocument]:
        """The documents with these ids (as added), and tree nodes by node id (their span text,
        metadata with the ``drag_*`` fields); ids found nowhere are skipped."""
        ids = list(ids)
        found = {m.id: member_document(m) for m in self._members.get(ids)}
        rest = [i for i in ids if i not in found]
        if rest:
            for node in self.index.get_nodes(rest):
                found[node.node.id] = LCDocument(id=node.node.id, page_content=node.text, metadata=node_metadata(node.node))
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    async def aget_by_ids(self, ids: Sequence[str], /) -> List[LCDocument]:
        return await asyncio.to_thread(self.get_by_ids, ids)

    def similarity_search(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> List[LCDocument]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k=k, filter=filter, **kwargs)]

    def similarity_search_with_score(self, query: str, k: int = 4, filter: Any = None,
                                     **kwargs: Any) -> List[Tuple[LCDocument, float]]:
        """The ``k`` added documents best ranked by flat hybrid search, with their scores (in
        [0, 1], higher is better; see :mod:`~drag_knee_retriever.search._relevance`)."""
        query = check_query(query)
        return self._flat(query, k, filter, kwargs, vectors=None)

    def similarity_search_by_vector(self, embedding: List[float], k: int = 4, filter: Any = None,
                                    **kwargs: Any) -> List[LCDocument]:
        """Dense-only flat search with a query vector of the index's model (no text, no BM25)."""
        from drag_knee_retriever.store import QueryVectors

        dense = check_dense(embedding, self.index.encoder.dense_size, "embedding")  # NaN ranked nothing, silently
        vectors = QueryVectors(dense=dense, sparse_indices=(), sparse_values=())
        return [doc for doc, _ in self._flat("vector query", k, filter, dict(kwargs, mode="dense"), vectors=vectors)]

    def similarity_search_with_relevance_scores(self, query: str, k: int = 4,
                                                **kwargs: Any) -> List[Tuple[LCDocument, float]]:
        # LangChain's base class compares score_threshold itself (a str raised a bare TypeError).
        check_threshold(kwargs.get("score_threshold"))
        return super().similarity_search_with_relevance_scores(query, k, **kwargs)

    async def asimilarity_search_with_relevance_scores(self, query: str, k: int = 4,
                                                       **kwargs: Any) -> List[Tuple[LCDocument, float]]:
        check_threshold(kwargs.get("score_threshold"))
        return await super().asimilarity_search_with_relevance_scores(query, k, **kwargs)

    def _flat(self, query: str, k: int, filter: Any, kwargs: Dict[str, Any], vectors: Any) -> List[Tuple[LCDocument, float]]:
        filters = kwargs.pop("filters", None)
        if filter is not None and filters is not None:
            raise ConfigError("filter= and filters= are the same setting; give only one of them.")
        filter = filter if filter is not None else filters
        mode = kwargs.pop("mode", "hybrid")
        threshold = check_threshold(kwargs.pop("score_threshold", None))
        if kwargs:
            raise TypeError(f"Unknown search option(s) {sorted(kwargs)}; the options are k, filter, score_threshold.")
        k = check_count(k, "k")
        out = [(member_document(m), s) for m, s in flat_members(self.index, query, k, filters=filter, mode=mode,
                                                                 vectors=vectors)]
        if threshold is not None:
            out = [(d, s) for d, s in out if s >= threshold]
        return out

    # -- maximal marginal relevance ---------------------------------------------------------------

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                      filter: Any = None, **kwargs: Any) -> List[LCDocument]:
        """The ``k`` documents picked by maximal marginal relevance among the ``fetch_k`` best of a
        flat hybrid search (as langchain-qdrant: ``lambda_mult`` 1 is pure relevance, 0 pure
        diversity), on the stored dense vectors of each document's best leaf and the query's."""
        query = check_query(query)
        vectors = self.index.encoder.encode_query(query)  # one encoding: the search's and MMR's
        return [d for d, _ in self._mmr(query, vectors.dense, vectors, k, fetch_k, lambda_mult, filter, kwargs)]

    def max_marginal_relevance_search_by_vector(self, embedding: List[float], k: int = 4, fetch_k: int = 20,
                                                lambda_mult: float = 0.5, filter: Any = None,
                                                **kwargs: Any) -> List[LCDocument]:
        """:meth:`max_marginal_relevance_search` with a query vector of the index's model (dense only)."""
        return [d for d, _ in self.max_marginal_relevance_search_with_score_by_vector(
            embedding, k=k, fetch_k=fetch_k, lambda_mult=lambda_mult, filter=filter, **kwargs)]

    def max_marginal_relevance_search_with_score_by_vector(
            self, embedding: List[float], k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
            filter: Any = None, **kwargs: Any) -> List[Tuple[LCDocument, float]]:
        from drag_knee_retriever.store import QueryVectors

        dense = check_dense(embedding, self.index.encoder.dense_size, "embedding")
        vectors = QueryVectors(dense=dense, sparse_indices=(), sparse_values=())
        return self._mmr("vector query", dense, vectors, k, fetch_k, lambda_mult, filter, dict(kwargs, mode="dense"))

    def _mmr(self, query: str, dense: Any, vectors: Any, k: int, fetch_k: int, lambda_mult: float, filter: Any,
             kwargs: Dict[str, Any]) -> List[Tuple[LCDocument, float]]:
        import numpy as np
        from langchain_core.vectorstores.utils import maximal_marginal_relevance

        from drag_knee_retriever.integrations._members import leaf_vectors

        k, fetch_k = check_count(k, "k"), check_count(fetch_k, "fetch_k")
        if isinstance(lambda_mult, bool) or not isinstance(lambda_mult, (int, float)) or not 0 <= lambda_mult <= 1:
            raise ConfigError(f"lambda_mult must be a number in [0, 1] (1: relevance only, 0: diversity only), "
                              f"got {lambda_mult!r}.")
        filters = kwargs.pop("filters", None)
        if filter is not None and filters is not None:
            raise ConfigError("filter= and filters= are the same setting; give only one of them.")
        mode = kwargs.pop("mode", "hybrid")
        threshold = check_threshold(kwargs.pop("score_threshold", None))
        if kwargs:
            raise TypeError(f"Unknown search option(s) {sorted(kwargs)}; the options are k, fetch_k, lambda_mult, "
                            "filter, score_threshold.")
        ranked = flat_members(self.index, query, max(k, fetch_k), filters=filter if filter is not None else filters,
                              mode=mode, vectors=vectors, with_leaves=True)
        if threshold is not None:
            ranked = [r for r in ranked if r[1] >= threshold]
        if not ranked:
            return []
        stored = leaf_vectors(self.index, [leaf for _, _, leaf in ranked], [m.group for m, _, _ in ranked])
        missing = [i for i, (_, _, leaf) in enumerate(ranked) if leaf not in stored]
        if missing:  # a store that cannot read vectors back (the in-process one): encode those texts
            encoded = self.index.encoder.encode_dense([ranked[i][0].text for i in missing])
            stored.update({ranked[i][2]: encoded[row] for row, i in enumerate(missing)})
        candidates = [np.asarray(stored[leaf], dtype=np.float32).tolist() for _, _, leaf in ranked]
        picked = maximal_marginal_relevance(np.asarray(dense, dtype=np.float32), candidates, lambda_mult=lambda_mult, k=k)
        return [(member_document(ranked[i][0]), ranked[i][1]) for i in picked]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        # The scores already are relevance scores in [0, 1] (search/_relevance.py).
        return lambda score: score

    # -- constructors and retriever -------------------------------------------------------------

    @classmethod
    def from_texts(cls, texts: List[str], embedding: Optional[Embeddings] = None,
                   metadatas: Optional[List[Dict[str, Any]]] = None, *, ids: Optional[List[str]] = None,
                   index: Any = None, **kwargs: Any) -> "DragKneeVectorStore":
        """A new store (or ``index``'s) holding ``texts``; ``kwargs`` go to :class:`DragKneeIndex`."""
        progress = kwargs.pop("progress", None)
        store = cls(index=index, embedding=embedding, create=True, **kwargs)
        docs = [LCDocument(page_content=t, metadata=dict(m or {})) for t, m in
                zip(texts, metadatas if metadatas is not None else [{}] * len(texts))]
        store.add_documents(docs, ids=ids, progress=progress)
        return store

    @classmethod
    def from_documents(cls, documents: List[LCDocument], embedding: Optional[Embeddings] = None,
                       **kwargs: Any) -> "DragKneeVectorStore":
        """A new store holding ``documents`` (their ids kept); ``kwargs`` go to :class:`DragKneeIndex`."""
        ids = kwargs.pop("ids", None)
        progress = kwargs.pop("progress", None)
        index = kwargs.pop("index", None)
        store = cls(index=index, embedding=embedding, create=True, **kwargs)
        store.add_documents(list(documents), ids=ids, progress=progress)
        return store

    @classmethod
    def from_existing_collection(cls, collection_name: str, embedding: Optional[Embeddings] = None,
                                 **kwargs: Any) -> "DragKneeVectorStore":
        """The store over an existing collection (``location`` / ``path`` / ``url`` / ``client``
        say where), as langchain-qdrant's: a name that does not exist there raises
        :class:`~drag_knee_retriever.errors.CollectionNotFoundError` naming those that do."""
        from drag_knee_retriever.integrations._common import require_existing_collection

        if "create" in kwargs:
            raise TypeError("from_existing_collection opens an existing collection; create one with from_documents.")
        index_kwargs = _qdrant_store_kwargs({**kwargs, "collection_name": collection_name})
        require_existing_collection(index_kwargs)  # ":memory:" too: a new in-memory index holds nothing
        return cls(embedding=embedding, create=True, **kwargs, collection_name=collection_name)

    @classmethod
    async def afrom_documents(cls, documents: List[LCDocument], embedding: Optional[Embeddings] = None,
                              **kwargs: Any) -> "DragKneeVectorStore":
        return await asyncio.to_thread(cls.from_documents, documents, embedding, **kwargs)

    @classmethod
    async def afrom_texts(cls, texts: List[str], embedding: Optional[Embeddings] = None,
                          metadatas: Optional[List[Dict[str, Any]]] = None, *, ids: Optional[List[str]] = None,
                          **kwargs: Any) -> "DragKneeVectorStore":
        return await asyncio.to_thread(cls.from_texts, texts, embedding, metadatas, ids=ids, **kwargs)

    def as_retriever(self, **kwargs: Any) -> Any:
        """The tree search over this store, as a LangChain retriever (see the class docstring)."""
        DragKneeRetriever = self.retriever_class  # set by .langchain, which imports this module
        search_type = kwargs.pop("search_type", "similarity")
        search_kwargs = dict(kwargs.pop("search_kwargs", None) or {})
        tags = kwargs.get("tags") or [*self._get_retriever_tags()]
        if search_type == "mmr":
            # What langchain-qdrant returns for it: LangChain's own retriever over this store's
            # max_marginal_relevance_search (flat; the tree search has a knee instead of MMR).
            from langchain_core.vectorstores import VectorStoreRetriever

            return VectorStoreRetriever(vectorstore=self, search_type="mmr", search_kwargs=search_kwargs,
                                        **{**kwargs, "tags": tags})
        if search_type not in ("similarity", "similarity_score_threshold", "mmr"):
            raise ConfigError(f"search_type must be 'similarity', 'similarity_score_threshold' or 'mmr', got "
                              f"{search_type!r}.")
        if search_type == "similarity_score_threshold" and not isinstance(search_kwargs.get("score_threshold"), float):
            given = search_kwargs.get("score_threshold")
            raise ConfigError("search_type='similarity_score_threshold' needs search_kwargs={'score_threshold': "
                              "0.5} (a float in [0, 1])" + (f", got {given!r}." if given is not None else "."))
        # k means k results, as from any store, unless the user asks for the knee's adaptive width.
        adaptive = search_kwargs.pop("adaptive", False)
        if not adaptive:
            search_kwargs.setdefault("k", 4)  # VectorStoreRetriever's default
        search_kwargs["adaptive"] = adaptive
        tags = kwargs.pop("tags", None) or [*self._get_retriever_tags()]
        return DragKneeRetriever(index=self.index, search_kwargs=search_kwargs or None, tags=tags, **kwargs)

    def close(self) -> None:
        """Close the index (a Qdrant client you passed in stays open)."""
        self.index.close()
