"""DragKneeIndex: add, delete and search documents kept as hybrid-indexed trees in Qdrant.

The index owns one store (one client, created once), one encoder (models loaded once) and the
builder settings. A search encodes the query once (dense and sparse) and hands the vectors to
every ranking request: one round trip for the roots, one per tree level visited, and one to fetch
the leaves' text of the inner nodes returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .builder import DocumentTree, build_document_trees, document_hash, leaf_id, node_id, span_leaf_ids
from .config import BuildConfig, EmbeddingConfig, SearchConfig, StoreConfig
from .embeddings import Encoder
from .errors import ConfigError, InvalidDocumentError, InvalidQueryError, ModelMismatchError
from .nodes import Document, ScoredNode, SearchResult, Trace, TreeNode, check_unicode
from .store import NodeRecord, NodeStore, QdrantClientStore, QueryVectors, RankedHit, RankRequest, parse_filters
from .summarize import ExtractiveSummarizer, Summarizer
from .traversal import awalk, walk

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
# Longer queries are cut (a dense model reads at most a few hundred tokens anyway).
MAX_QUERY_CHARS = 8192
_INGEST_CHUNK_DOCS = 64


@dataclass
class IngestReport:
    """What an ``add_documents`` call did."""

    added: List[str] = field(default_factory=list)
    replaced: List[str] = field(default_factory=list)
    unchanged: List[str] = field(default_factory=list)
    nodes_written: int = 0
    seconds: float = 0.0
    phase_seconds: Dict[str, float] = field(default_factory=dict)
    # What the summariser spent, when it reports it (LLM summarisers: calls, tokens, fallbacks).
    summarizer: Optional[Dict[str, Any]] = None

    def __str__(self) -> str:
        text = (
            f"{len(self.added)} added, {len(self.replaced)} replaced, {len(self.unchanged)} unchanged; "
            f"{self.nodes_written} nodes written in {self.seconds:.1f}s"
        )
        if self.summarizer:
            text += f"; summariser: {self.summarizer.get('summary', self.summarizer)}"
        return text


@dataclass(frozen=True)
class DocumentInfo:
    """One indexed document as listed by :meth:`DragKneeIndex.list_documents`."""

    doc_id: str
    leaves: int
    metadata: Mapping[str, Any]
    doc_hash: str
    first_page: Optional[int] = None
    last_page: Optional[int] = None


class DragKneeIndex:
    """Hierarchical hybrid retrieval over Qdrant.

    ``location`` is ``":memory:"`` or a folder for an embedded index (Qdrant Edge by default,
    ``engine="local"`` for qdrant-client local mode); ``url`` (and ``api_key``, or the environment
    variable ``QDRANT_API_KEY``) selects a Qdrant server or cluster with the same code.
    """

    def __init__(
        self,
        location: Union[str, Path, None] = ":memory:",
        *,
        path: Union[str, Path, None] = None,
        url: Optional[str] = None,
        api_key: Optional[str] = None,
        collection: str = "drag_knee",
        engine: str = "auto",
        model_name: Optional[str] = None,
        model_path: Optional[str] = None,
        language: Optional[str] = None,
        build: Optional[BuildConfig] = None,
        search: Optional[SearchConfig] = None,
        embedding: Optional[EmbeddingConfig] = None,
        summarizer: Optional[Summarizer] = None,
        encoder: Optional[Encoder] = None,
        store: Optional[NodeStore] = None,
    ) -> None:
        import os

        if path is not None:
            location = path
        self.build_config = build or BuildConfig()
        self.search_config = search or SearchConfig()
        if not isinstance(self.build_config, BuildConfig) or not isinstance(self.search_config, SearchConfig):
            raise ConfigError("build= takes a BuildConfig and search= a SearchConfig.")
        emb = embedding or EmbeddingConfig()
        overrides = {k: v for k, v in (("model_name", model_name), ("model_path", model_path), ("language", language)) if v}
        if overrides:
            from dataclasses import replace

            emb = replace(emb, **overrides)
        self.store_config = StoreConfig(
            location=str(location) if location is not None else ":memory:",
            url=url,
            api_key=api_key or (os.environ.get("QDRANT_API_KEY") if url else None),
            collection=collection,
            engine=engine,  # type: ignore[arg-type]
        )
        self.summarizer: Summarizer = summarizer if summarizer is not None else ExtractiveSummarizer(self.build_config)
        self.store = store if store is not None else _make_store(self.store_config)
        self._write_lock = threading.RLock()
        try:
            stored_sparse = _stored_sparse_model(self.store)
            if language is None and encoder is None and stored_sparse and ":" in stored_sparse:
                # An existing collection keeps the BM25 language it was built with.
                from dataclasses import replace

                emb = replace(emb, language=stored_sparse.rsplit(":", 1)[1])
            self.encoder = encoder if encoder is not None else Encoder(emb)
            if stored_sparse and stored_sparse != self.encoder.sparse_model:
                raise ModelMismatchError(
                    f"Collection {collection!r} was built with BM25 {stored_sparse!r} but this index uses "
                    f"{self.encoder.sparse_model!r}; open it with language={stored_sparse.rsplit(':', 1)[-1]!r} "
                    "or choose another collection."
                )
            self.store.open_collection(
                dense_size=self.encoder.dense_size, model_id=self.encoder.model_id, sparse_model=self.encoder.sparse_model
            )
        except Exception:
            self.store.close()
            raise

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the store (and the embedded folder's lock)."""
        self.store.close()

    def __enter__(self) -> "DragKneeIndex":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"DragKneeIndex(store={self.store.describe()!r}, collection={self.store_config.collection!r}, "
            f"model={self.encoder.model_id!r})"
        )

    # -- ingestion -------------------------------------------------------------------------------

    def add_documents(self, documents: Iterable[Document], *, progress: Optional[Progress] = None) -> IngestReport:
        """Index documents. Unchanged documents are skipped; changed ones replace their old tree.

        Every document is checked before anything is written, so bad input loses nothing stored.
        A document becomes visible to search only when its root (written last) is stored.
        """
        started = time.perf_counter()
        docs = _validate_documents(documents)
        report = IngestReport()
        track = getattr(self.summarizer, "track", None)
        with self._write_lock, (track() if callable(track) else contextlib.nullcontext()) as cost:
            existing = self._existing_hashes([d.id for d in docs])
            for start in range(0, len(docs), _INGEST_CHUNK_DOCS):
                chunk = docs[start : start + _INGEST_CHUNK_DOCS]
                self._ingest_chunk(chunk, existing, report, progress, done_before=start, total=len(docs))
        if cost is not None and hasattr(cost, "as_dict"):
            report.summarizer = {**cost.as_dict(), "summary": str(cost)}
        report.seconds = time.perf_counter() - started
        log.info("ingest: %s", report)
        return report

    def _ingest_chunk(self, docs: List[Document], existing: Dict[str, str], report: IngestReport,
                      progress: Optional[Progress], done_before: int, total: int) -> None:
        timer = _PhaseTimer(report)
        identity = getattr(self.summarizer, "identity", type(self.summarizer).__name__)
        changed: List[Document] = []
        for doc in docs:
            old = existing.get(doc.id)
            if old == document_hash(doc, self.build_config, identity):
                report.unchanged.append(doc.id)  # skipped before any building or encoding
            else:
                (report.replaced if old is not None else report.added).append(doc.id)
                changed.append(doc)
        if not changed:
            if progress:
                progress("building", done_before + len(docs), total)
            return
        with timer("building"):
            fresh = build_document_trees(changed, self.build_config, self.summarizer)
        if progress:
            progress("building", done_before + len(docs), total)
        with timer("embedding"):
            records = self._vectorise([n for t in fresh for n in t.nodes], progress)
        with timer("writing"):
            self._write_trees(fresh, records, existing, progress)
        report.nodes_written += len(records)

    def add_nodes(self, nodes: Sequence[TreeNode], *, progress: Optional[Progress] = None) -> IngestReport:
        """Index pre-built trees (e.g. from ``DragTreeNodeParser``): every document's full node set."""
        started = time.perf_counter()
        report = IngestReport()
        by_doc: Dict[str, List[TreeNode]] = {}
        for node in nodes:
            if not isinstance(node, TreeNode):
                raise InvalidDocumentError(f"add_nodes takes TreeNode objects, got {type(node).__name__}.")
            by_doc.setdefault(node.doc_id, []).append(node)
        trees = []
        for doc_id, doc_nodes in by_doc.items():
            ids = {n.id for n in doc_nodes}
            roots = [n for n in doc_nodes if n.parent_id is None]
            if len(roots) != 1:
                raise InvalidDocumentError(f"document {doc_id!r}: expected exactly one root node, found {len(roots)}.")
            missing = [c for n in doc_nodes for c in n.child_ids if c not in ids]
            if missing:
                raise InvalidDocumentError(f"document {doc_id!r}: child ids {missing[:3]} are not among the nodes given.")
            ordered = sorted(doc_nodes, key=lambda n: -n.level)  # deepest first, root last
            trees.append(DocumentTree(doc_id=doc_id, doc_hash=roots[0].doc_hash, nodes=ordered))
        with self._write_lock:
            existing = self._existing_hashes(list(by_doc))
            fresh = []
            for tree in trees:
                old = existing.get(tree.doc_id)
                if old is not None and old == tree.doc_hash and tree.doc_hash:
                    report.unchanged.append(tree.doc_id)
                    continue
                (report.replaced if old is not None else report.added).append(tree.doc_id)
                fresh.append(tree)
            if fresh:
                records = self._vectorise([n for t in fresh for n in t.nodes], progress)
                self._write_trees(fresh, records, existing, progress)
                report.nodes_written = len(records)
        report.seconds = time.perf_counter() - started
        return report

    def _existing_hashes(self, doc_ids: Sequence[str]) -> Dict[str, str]:
        """doc_id -> doc_hash of the documents whose root is stored (one request)."""
        if not doc_ids:
            return {}
        ids = [i for d in doc_ids for i in (node_id(d, "r"), leaf_id(d, 0))]
        found = {}
        for node in self.store.retrieve(ids):
            if node.level == 0:
                found[node.doc_id] = node.doc_hash
        return found

    def _vectorise(self, nodes: List[TreeNode], progress: Optional[Progress]) -> List[NodeRecord]:
        """Dense and BM25 vectors for nodes (children always precede their parents in ``nodes``)."""
        cfg = self.build_config
        dense_texts: List[str] = []
        needs_encoding: List[int] = []
        for i, node in enumerate(nodes):
            text = self._dense_text(node)
            dense_texts.append(text)
            if node.is_leaf or cfg.inner_vectors in ("summary", "both"):
                needs_encoding.append(i)
        encoded = self.encoder.encode_dense(
            [dense_texts[i] for i in needs_encoding],
            progress=(lambda done, total: progress("embedding", done, total)) if progress else None,
        )
        vectors: Dict[str, np.ndarray] = {}
        slot = {i: row for row, i in enumerate(needs_encoding)}
        for i, node in enumerate(nodes):
            if node.is_leaf or cfg.inner_vectors == "summary":
                vector = encoded[slot[i]]
            else:
                centroid = np.mean([vectors[c] for c in node.child_ids], axis=0)
                centroid /= np.linalg.norm(centroid) or 1.0
                vector = centroid if cfg.inner_vectors == "centroid" else encoded[slot[i]] + centroid
                vector = vector / (np.linalg.norm(vector) or 1.0)
            vectors[node.id] = vector
        span_texts: Dict[str, str] = {}
        if cfg.inner_sparse == "span":
            for node in nodes:  # children first, so a parent joins its children's span texts
                if node.is_leaf:
                    span_texts[node.id] = _titled(node.title, node.text)
                else:
                    span_texts[node.id] = _titled(node.title, "\n".join(span_texts[c] for c in node.child_ids))
        sparse = self.encoder.encode_sparse([
            self._sparse_text(n, span_texts[n.id] if (not n.is_leaf and span_texts) else t)
            for n, t in zip(nodes, dense_texts)
        ])
        return [
            NodeRecord(node=node, dense=vectors[node.id], sparse_indices=s[0], sparse_values=s[1])
            for node, s in zip(nodes, sparse)
        ]

    def _dense_text(self, node: TreeNode) -> str:
        if not node.is_leaf:
            return node.text
        mode = self.build_config.leaf_text
        if mode == "description" and node.description:
            return node.description
        # A leaf is indexed with its section heading in front (headings are titles, not leaf text,
        # and often hold the very words a question uses); the text returned stays the leaf's own.
        text = _titled(node.title, node.text)
        if mode == "own+description" and node.description:
            return f"{text}\n\n{node.description}"
        return text

    def _sparse_text(self, node: TreeNode, dense_text: str) -> str:
        mode = self.build_config.sparse_text
        if mode == "auto":
            mode = "text" if isinstance(self.summarizer, ExtractiveSummarizer) else "text+keywords"
        keywords = " ".join(node.keywords)
        if mode == "keywords" and keywords:
            return keywords
        if mode == "text+keywords" and keywords:
            return f"{dense_text}\n{keywords}"
        return dense_text

    def _write_trees(self, trees: List[DocumentTree], records: List[NodeRecord], existing: Dict[str, str],
                     progress: Optional[Progress]) -> None:
        by_id = {r.node.id: r for r in records}
        # The root is a tree's commit point: nothing is written after it, so a stored root always
        # means one whole tree of one version. First every node of the document goes (a changed
        # document's old tree, or the rootless leftovers of an interrupted ingest), then the body,
        # then the roots. A document being replaced is invisible until its new root lands.
        for tree in trees:
            self.store.delete_nodes(tree.doc_id)
        body = [by_id[n.id] for t in trees for n in t.nodes[:-1]]
        roots = [by_id[t.root.id] for t in trees]
        total = len(body) + len(roots)
        self.store.upsert(body)
        if progress:
            progress("writing", len(body), total)
        self.store.upsert(roots)
        if progress:
            progress("writing", total, total)

    def delete_document(self, doc_id: str) -> bool:
        """Remove a document's whole tree. Returns False if it was not indexed."""
        if not isinstance(doc_id, str) or not doc_id:
            raise InvalidDocumentError(f"doc_id must be a non-empty string, got {doc_id!r}.")
        with self._write_lock:
            known = doc_id in self._existing_hashes([doc_id])
            # Delete even when the root is missing: that clears what an interrupted ingest left.
            self.store.delete_nodes(doc_id)
        return known

    # -- listing ---------------------------------------------------------------------------------

    def list_documents(self) -> List[DocumentInfo]:
        """Every indexed document (from its root node)."""
        roots = self.store.scroll_nodes(level=0)
        infos = []
        for root in sorted(roots, key=lambda n: n.doc_id):
            infos.append(DocumentInfo(
                doc_id=root.doc_id, leaves=root.span.last_leaf + 1,
                metadata=root.metadata, doc_hash=root.doc_hash,
                first_page=root.span.first_page, last_page=root.span.last_page,
            ))
        return infos

    def stats(self) -> Dict[str, Any]:
        """Documents, nodes per level, model and collection."""
        nodes = self.store.scroll_nodes(with_text=False)
        per_level: Dict[int, int] = {}
        docs = set()
        leaves = 0
        for node in nodes:
            per_level[node.level] = per_level.get(node.level, 0) + 1
            docs.add(node.doc_id)
            leaves += node.is_leaf
        info = self.store.collection_info()
        return {
            "documents": sum(1 for n in nodes if n.level == 0),
            "nodes": len(nodes),
            "leaves": leaves,
            "nodes_per_level": dict(sorted(per_level.items())),
            "embedding_model": self.encoder.model_id,
            "embedding_source": getattr(self.encoder, "model_source", None),
            "dense_size": self.encoder.dense_size,
            "sparse_model": self.encoder.sparse_model,
            "collection": self.store_config.collection,
            "engine": self.store.describe(),
            "stored_model": info.get("model_id"),
        }

    # -- search ----------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        method: Optional[str] = None,
        beam_width: Optional[int] = None,
        max_roots: Optional[int] = None,
        sensitivity: Optional[float] = None,
        fusion_weights: Optional[Sequence[Tuple[float, float]]] = None,
        filters: Optional[Mapping[str, Any]] = None,
        order: Optional[str] = None,
        config: Optional[SearchConfig] = None,
        query_vectors: Optional[QueryVectors] = None,
    ) -> SearchResult:
        """Walk the trees for ``query``; see :class:`SearchConfig` for the knobs."""
        plan = self._plan(query, method=method, beam_width=beam_width, max_roots=max_roots, sensitivity=sensitivity,
                          fusion_weights=fusion_weights, filters=filters, order=order, config=config)
        vectors = query_vectors if query_vectors is not None else self.encoder.encode_query(plan.query)
        plan.mark("encode")

        # The walk reads only the nodes' structure (light rankings); the final fetch brings the
        # chosen nodes whole, with their spans' text, and checks that they are still live.
        def rank(requests: Sequence[RankRequest]):
            return self.store.rank(requests, vectors, rrf_k=plan.settings.rrf_k, explain=plan.settings.explain,
                                   light=True)

        hits = walk(rank, plan.settings, plan.filters, plan.trace)
        plan.mark("walk")
        fetched = self.store.retrieve(self._context_ids([h.node for h in hits], with_nodes=True))
        return self._result(plan, *self._live_with_text(hits, fetched, refresh=True))

    async def asearch(self, query: str, **kwargs: Any) -> SearchResult:
        """``search`` without blocking the event loop: same arguments, same results.

        The query is encoded in a worker thread (CPU-bound); the walk's round trips go through the
        store's async methods (qdrant-client's async client for a server).
        """
        query_vectors = kwargs.pop("query_vectors", None)
        plan = self._plan(query, **kwargs)
        vectors = query_vectors if query_vectors is not None else await asyncio.to_thread(self.encoder.encode_query, plan.query)
        plan.mark("encode")

        async def rank(requests: Sequence[RankRequest]):
            return await self.store.arank(requests, vectors, rrf_k=plan.settings.rrf_k, explain=plan.settings.explain,
                                          light=True)

        hits = await awalk(rank, plan.settings, plan.filters, plan.trace)
        plan.mark("walk")
        fetched = await self.store.aretrieve(self._context_ids([h.node for h in hits], with_nodes=True))
        return self._result(plan, *self._live_with_text(hits, fetched, refresh=True))

    def _plan(self, query: Any, *, method: Optional[str] = None, beam_width: Optional[int] = None,
              max_roots: Optional[int] = None, sensitivity: Optional[float] = None,
              fusion_weights: Optional[Sequence[Tuple[float, float]]] = None,
              filters: Optional[Mapping[str, Any]] = None, order: Optional[str] = None,
              config: Optional[SearchConfig] = None) -> "_SearchPlan":
        """Validate everything about a search before any work is done."""
        started = time.perf_counter()
        query = _validate_query(query)
        settings = (config or self.search_config).with_overrides(
            method=method, beam_width=beam_width, max_roots=max_roots, sensitivity=sensitivity,
            fusion_weights=fusion_weights, order=order,
        )
        return _SearchPlan(query=query, settings=settings, filters=parse_filters(filters),
                           trace=Trace(query=query, method=settings.method),
                           requests_before=self.store.requests, started=started)

    def _result(self, plan: "_SearchPlan", hits: Sequence[Any], texts: Dict[str, str]) -> SearchResult:
        nodes = [ScoredNode(node=h.node, score=h.score, rank=i, text=texts[h.node.id]) for i, h in enumerate(hits)]
        if plan.settings.order == "document":
            nodes.sort(key=lambda s: (s.node.doc_id, s.node.span.first_leaf))
        plan.mark("context")
        plan.trace.requests = self.store.requests - plan.requests_before
        plan.trace.timings_ms["total"] = (time.perf_counter() - plan.started) * 1e3
        return SearchResult(query=plan.query, method=plan.settings.method, nodes=nodes, trace=plan.trace)

    def flat_search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: str = "hybrid",
        scope: str = "leaves",
        filters: Optional[Mapping[str, Any]] = None,
        query_vectors: Optional[QueryVectors] = None,
        rrf_k: Optional[int] = None,
    ) -> List[ScoredNode]:
        """Flat top-k (the baseline): leaves only, or every node of every level (``scope="all"``)."""
        query = _validate_query(query)
        if mode not in ("hybrid", "dense", "sparse"):
            raise InvalidQueryError(f"mode must be 'hybrid', 'dense' or 'sparse', got {mode!r}.")
        if scope not in ("leaves", "all"):
            raise InvalidQueryError(f"scope must be 'leaves' or 'all', got {scope!r}.")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidQueryError(f"k must be an integer >= 1, got {k!r}.")
        spec = parse_filters(filters)
        if query_vectors is None:
            query_vectors = self.encoder.encode_query(query)
        request = RankRequest(limit=k, leaves_only=scope == "leaves", filters=spec,
                              only=None if mode == "hybrid" else mode)
        hits = self.store.rank([request], query_vectors, rrf_k=rrf_k if rrf_k is not None else self.search_config.rrf_k,
                               explain=False)[0]
        hits, texts = self._live_with_text(hits, self.store.retrieve(self._context_ids([h.node for h in hits])))
        return [ScoredNode(node=h.node, score=h.score, rank=i, text=texts[h.node.id]) for i, h in enumerate(hits)]

    @staticmethod
    def _span_leaf_ids(nodes: Sequence[TreeNode]) -> Dict[str, List[str]]:
        """For each inner node, the ids of the leaves it covers (leaf ids follow from the ordinals)."""
        return {n.id: list(span_leaf_ids(n)) for n in nodes if not n.is_leaf}

    def _context_ids(self, nodes: Sequence[TreeNode], *, with_nodes: bool = False) -> List[str]:
        """One fetch for a result: the leaves under its inner nodes and the root of every document.

        ``with_nodes``: the result's own nodes too (a light walk holds them without their text).
        """
        ids = {i for leaf_ids in self._span_leaf_ids(nodes).values() for i in leaf_ids}
        if with_nodes:
            ids.update(n.id for n in nodes)
        for doc_id in {n.doc_id for n in nodes}:
            ids.update((node_id(doc_id, "r"), leaf_id(doc_id, 0)))  # the root, whichever it is
        return sorted(ids)

    def _live_with_text(self, hits: Sequence[Any], fetched: Sequence[TreeNode], *,
                        refresh: bool = False) -> Tuple[List[Any], Dict[str, str]]:
        """Keep the hits whose document still has the same committed tree, with their span text.

        A writer may replace or delete a document while a search walks it: a hit is kept only if its
        document's root (fetched now) carries the hit's version and every leaf of its span does too,
        so every result is consistent with the state at this final read. ``refresh``: the hits' own
        nodes were fetched too (a light walk): each must carry the hit's version as well, and the
        fetched, whole node replaces the walk's light one.
        """
        by_id = {n.id: n for n in fetched}
        live = {(n.doc_id, n.doc_hash) for n in fetched if n.level == 0}
        wanted = self._span_leaf_ids([h.node for h in hits])
        kept, texts = [], {}
        for hit in hits:
            node = hit.node
            leaf_ids = wanted.get(node.id, ())
            whole = by_id.get(node.id) if refresh else node
            if whole is None or whole.doc_hash != node.doc_hash or (node.doc_id, node.doc_hash) not in live or any(
                i not in by_id or by_id[i].doc_hash != node.doc_hash for i in leaf_ids
            ):
                log.debug("dropped %s of %s: its document changed during the search", node.id, node.doc_id)
                continue
            if whole is not node:
                hit = RankedHit(node=whole, score=hit.score, dense_rank=hit.dense_rank, sparse_rank=hit.sparse_rank)
                node = whole
            kept.append(hit)
            texts[node.id] = node.text if node.is_leaf else "\n\n".join(by_id[i].text for i in leaf_ids)
        return kept, texts


@dataclass
class _SearchPlan:
    """A validated search: its settings, parsed filters, trace, and a stopwatch."""

    query: str
    settings: SearchConfig
    filters: Any
    trace: Trace
    requests_before: int
    started: float
    last: float = 0.0

    def mark(self, phase: str) -> None:
        now = time.perf_counter()
        self.trace.timings_ms[phase] = (now - (self.last or self.started)) * 1e3
        self.last = now


class _PhaseTimer:
    def __init__(self, report: IngestReport) -> None:
        self.report = report

    def __call__(self, phase: str) -> "_PhaseTimer":
        self.phase = phase
        return self

    def __enter__(self) -> None:
        self.started = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        spent = time.perf_counter() - self.started
        self.report.phase_seconds[self.phase] = self.report.phase_seconds.get(self.phase, 0.0) + spent


def _titled(title: Optional[str], text: str) -> str:
    return f"{title}\n{text}" if title else text


def _validate_documents(documents: Iterable[Document]) -> List[Document]:
    if isinstance(documents, Document):
        documents = [documents]
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Iterable):
        raise InvalidDocumentError("add_documents takes a list of Document objects.")
    docs = list(documents)
    seen: Dict[str, int] = {}
    for position, doc in enumerate(docs):
        if not isinstance(doc, Document):
            raise InvalidDocumentError(
                f"item {position} is {type(doc).__name__}, not Document; wrap text as Document(id=..., text=...)."
            )
        if doc.id in seen:
            raise InvalidDocumentError(
                f"document id {doc.id!r} appears twice in one call (items {seen[doc.id]} and {position}); "
                "ids must be unique. Nothing was written."
            )
        seen[doc.id] = position
    return docs


def _validate_query(query: Any) -> str:
    if not isinstance(query, str):
        raise InvalidQueryError(f"query must be a string, got {type(query).__name__}.")
    if not query.strip():
        raise InvalidQueryError("query is empty; give some words to search for.")
    check_unicode(query, "query", InvalidQueryError)
    if len(query) > MAX_QUERY_CHARS:
        log.warning("query of %d characters cut to %d", len(query), MAX_QUERY_CHARS)
        query = query[:MAX_QUERY_CHARS]
    return query


def _stored_sparse_model(store: NodeStore) -> Optional[str]:
    """The BM25 model an existing collection was built with (None for a new collection)."""
    try:
        return store.collection_info().get("sparse_model")
    except Exception:  # no collection yet: the engines differ in how they say so
        return None


def _make_store(config: StoreConfig) -> NodeStore:
    engine = config.resolved_engine
    if engine == "edge":
        from .edge_store import EdgeStore

        return EdgeStore(config.collection, location=config.location, upsert_batch_size=config.upsert_batch_size)
    return QdrantClientStore(
        config.collection,
        location=config.location,
        url=config.url if engine == "server" else None,
        api_key=config.api_key,
        upsert_batch_size=config.upsert_batch_size,
    )
