"""What a LangChain user builds instead: chunked langchain-qdrant hybrid search against our default, same models.

    python benchmarks/peer_langchain.py [--docs text|le20] [--cache DIR] [--limit-questions N]
        [--build leaves.passage_words=120,...] [--search focus.scores=rrf,...]
    python benchmarks/peer_langchain.py --dataset financebench --setting both [--ours-dir DIR] [--peer-dir DIR]
        [--build-only] [--peer-ks 1,2,4,6,8,10,15,20] [--ours-collection eval_default]

MMLongBench-Doc (single-document setting: every search filtered to the question's document) or
FinanceBench (``--setting shared``: all 48 filings in one store, no filter; ``single``: the
question's filing; ``both``: one run, the same stores, both settings), on the same questions and
the same offline models:

- peer: each page split by ``RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)``
  (one LangChain ``Document`` per page, as ``PyPDFLoader`` + ``split_documents`` give), stored in a
  langchain-qdrant ``QdrantVectorStore`` in ``RetrievalMode.HYBRID`` on qdrant-client local mode;
  dense = our offline MiniLM through a LangChain ``Embeddings`` wrapper, sparse = our BM25 through
  langchain-qdrant's ``SparseEmbeddings`` interface (with Qdrant's IDF modifier, so the sparse side
  is BM25 as ours is, not bare term frequency); ``similarity_search_with_score(q, k)``, k = 1..20;
- ours: ``Document(pages=...)`` per PDF in a ``DragKneeIndex`` (default build and search config),
  ``index.search(q, filters={"doc_id": ...})`` and ``index.flat_search(q, k=1..20, filters=...)``;
  ``--build`` / ``--search`` (``key=value,...`` as the eval's ``--build``) change our index's
  ``BuildConfig`` / ``SearchConfig`` (flat runs on that same index, so passages compare with passages).

Metric: page recall (share of gold pages that some returned chunk/node lies on) against returned
words (whitespace words of the returned texts, chunk overlaps counted twice as an LLM reads them).
Printed per setting: both curves, our default's recall against the peer's interpolated at our mean
words, the gain with a 95% paired bootstrap (questions resampled; the peer curve rebuilt on each
sample), the right-document rate (a result in the question's document), recall within 500 / 1,000 /
1,500 / 2,000 words (each list filled to the budget in rank order, as the eval's ``flat_hybrid_w*``),
and latency per query including query encoding (interleaved question by question). ``--ours-dir`` /
``--peer-dir`` keep both stores in folders and reuse them (a re-run then costs only the searches); a
peer build that stopped part-way is resumed (its points are upserted in chunk order, so the stored
ones are the first chunks: checked by their texts, the rest added). ``--build-only`` builds both
stores and stops (the peer first, so a run beside an eval of the same dataset on the same vector
cache finds our passages cached). ``--ours-collection eval_default`` with ``--ours-dir`` on a copy of
an eval's ``--index-dir`` build (``<index-dir>/<corpus>/default``) searches that index instead of
building one. ``--peer-ks`` reads the peer at fewer k's: each k is one local-mode search, which
on a store of tens of thousands of chunks costs seconds.

Dense passage vectors (chunks and pages) are cached on disk in ``<cache>/emb`` (keyed by text
SHA-1, one file per encoder fingerprint), so a re-run costs only BM25, upserts and search time.
MMLongBench is CC BY-NC: this script prints and writes aggregate figures only (``--json``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DRAG_KNEE_SHARED", REPO.parent / "shared"))
# Caches live outside the checkout: $DRAG_KNEE_BENCH_CACHE, else ../cache beside it.
CACHE = Path(os.environ.get("DRAG_KNEE_BENCH_CACHE") or REPO.parent / "cache")
KS = list(range(1, 21))
log = logging.getLogger("peer_langchain")


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def words(text: str) -> int:
    return len(text.split())


class SharedQuery:
    """One query encoding per search for the peer too: LangChain asks the dense and the sparse
    model separately for the same text, so both read the one ``encode_query`` of that text."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self._text = None
        self._vectors = None

    def get(self, text: str):
        if text != self._text:
            self._vectors = self.encoder.encode_query(text)
            self._text = text
        return self._vectors


def make_peer_models(encoder: Any, shared: SharedQuery):
    """Our MiniLM as a LangChain ``Embeddings`` and our BM25 as a langchain-qdrant ``SparseEmbeddings``."""
    from langchain_core.embeddings import Embeddings
    from langchain_qdrant import SparseEmbeddings, SparseVector

    class OurDense(Embeddings):
        def embed_documents(self, texts: List[str]) -> List[List[float]]:
            return encoder.encode_dense(list(texts)).tolist()

        def embed_query(self, text: str) -> List[float]:
            return list(shared.get(text).dense)

    class OurBM25(SparseEmbeddings):
        def embed_documents(self, texts: List[str]) -> List[SparseVector]:
            return [SparseVector(indices=[int(i) for i in idx], values=[float(v) for v in val])
                    for idx, val in encoder.encode_sparse(list(texts))]

        def embed_query(self, text: str) -> SparseVector:
            q = shared.get(text)
            return SparseVector(indices=list(q.sparse_indices), values=list(q.sparse_values))

    return OurDense(), OurBM25()


def build_peer(documents: Sequence[Any], encoder: Any, shared: SharedQuery):
    """The chunked langchain-qdrant hybrid store; returns (store, chunk count, seconds)."""
    from langchain_core.documents import Document as LCDocument
    from langchain_qdrant import QdrantVectorStore, RetrievalMode
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from qdrant_client import QdrantClient, models

    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
    pages = [LCDocument(page_content=text, metadata={"doc_id": d.id, "page": i})
             for d in documents for i, text in enumerate(d.pages)]
    chunks = splitter.split_documents(pages)
    dense, sparse = make_peer_models(encoder, shared)
    started = time.perf_counter()
    client = QdrantClient(":memory:")  # qdrant-client local mode
    client.create_collection(
        "peer",
        vectors_config={"dense": models.VectorParams(size=encoder.dense_size, distance=models.Distance.COSINE)},
        sparse_vectors_config={"sparse": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    store = QdrantVectorStore(client=client, collection_name="peer", embedding=dense, sparse_embedding=sparse,
                              retrieval_mode=RetrievalMode.HYBRID, vector_name="dense", sparse_vector_name="sparse")
    store.add_documents(chunks, batch_size=256)
    return store, len(chunks), time.perf_counter() - started


def peer_filter(doc_id: str):
    from qdrant_client import models

    return models.Filter(must=[models.FieldCondition(key="metadata.doc_id", match=models.MatchValue(value=doc_id))])


def page_recall(found: set, gold: set) -> float:
    return len(found & gold) / len(gold)


def node_pages(hits: Sequence[Any]) -> set:
    """(doc_id, 0-based page) of every page a returned node lies on (spans number pages from 1)."""
    out = set()
    for h in hits:
        span = h.node.span
        if span.first_page is None:
            continue
        for page in range(span.first_page, (span.last_page or span.first_page) + 1):
            out.add((h.node.doc_id, page - 1))
    return out


def bootstrap_gain(ours: Sequence[Tuple[float, float]], curve: Dict[int, List[Tuple[float, float]]],
                   resamples: int = 2000, seed: int = 0) -> Tuple[float, float, float, float]:
    """Our mean recall minus the curve's interpolated at our mean words, and its 95% paired
    bootstrap interval; ``ours`` and each ``curve[k]`` are per-question (words, recall)."""
    import numpy as np

    from drag_knee_retriever.eval.metrics import interpolate_curve

    ow = np.array([w for w, _ in ours], dtype=float)
    orc = np.array([r for _, r in ours], dtype=float)
    cw = {k: np.array([w for w, _ in v], dtype=float) for k, v in curve.items()}
    cr = {k: np.array([r for _, r in v], dtype=float) for k, v in curve.items()}

    def gain(sample):
        at, _ = interpolate_curve([(cw[k][sample].mean(), cr[k][sample].mean()) for k in curve], ow[sample].mean())
        return orc[sample].mean() - at, at

    full = np.arange(len(ow))
    point, at = gain(full)
    rng = np.random.default_rng(seed)
    gains = [gain(rng.integers(0, len(ow), len(ow)))[0] for _ in range(resamples)]
    low, high = np.percentile(gains, [2.5, 97.5])
    return point, at, float(low), float(high)


def parse_config(cls: Any, spec: str | None) -> Any:
    """``"leaves.passage_words=120,sections.outline=false"`` -> ``cls()`` with those settings (dotted paths)."""
    config = cls()
    for part in (spec or "").split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise SystemExit(f"{part!r} is not key=value (e.g. leaves.passage_words=120).")
        key, value = (x.strip() for x in part.split("=", 1))
        parsed: Any
        if value.lower() in ("true", "false"):
            parsed = value.lower() == "true"
        elif value.lower() == "none":
            parsed = None
        else:
            try:
                parsed = int(value)
            except ValueError:
                try:
                    parsed = float(value)
                except ValueError:
                    parsed = value
        config = config.with_path(key, parsed)
    return config


def fill(items: Sequence[Tuple[int, Any]], budget: int) -> List[Tuple[int, Any]]:
    """(words, item) pairs in rank order that fit in ``budget`` words (an item too long is skipped)."""
    kept, left = [], budget
    for words_, item in items:
        if words_ <= left:
            kept.append((words_, item))
            left -= words_
    return kept


BUDGETS = (500, 1000, 1500, 2000)


def load_questions(args: Any):
    from benchmarks.datasets.financebench import load_financebench
    from benchmarks.datasets.mmlongbench import load_mmlongbench

    if args.dataset == "financebench":
        return load_financebench(limit_questions=args.limit_questions, limit_docs=args.limit_docs)
    return load_mmlongbench(max_doc_pages=20 if args.docs == "le20" else None, limit_questions=args.limit_questions,
                            limit_docs=args.limit_docs)


def open_peer(documents: Sequence[Any], encoder: Any, shared: "SharedQuery", folder: str | None):
    """The peer store, built (or, with ``folder``, reopened when it holds the same chunk count)."""
    if folder is None:
        return build_peer(documents, encoder, shared)
    from langchain_core.documents import Document as LCDocument
    from langchain_qdrant import QdrantVectorStore, RetrievalMode
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from qdrant_client import QdrantClient

    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
    chunks = splitter.split_documents([LCDocument(page_content=text, metadata={"doc_id": d.id, "page": i})
                                       for d in documents for i, text in enumerate(d.pages)])
    client = QdrantClient(path=folder)
    dense, sparse = make_peer_models(encoder, shared)
    stored = client.count("peer").count if client.collection_exists("peer") else 0
    if stored and stored <= len(chunks) and _stored_texts(client) == sorted(c.page_content for c in chunks[:stored]):
        # The whole store, or the first chunks of a build that stopped (points are upserted in
        # chunk order, one after another): add what is missing and reuse the rest.
        store = QdrantVectorStore(client=client, collection_name="peer", embedding=dense, sparse_embedding=sparse,
                                  retrieval_mode=RetrievalMode.HYBRID, vector_name="dense", sparse_vector_name="sparse")
        started = time.perf_counter()
        if stored < len(chunks):
            log.info("peer store: %d of %d chunks stored, adding the rest", stored, len(chunks))
            _add_in_parts(store, chunks, stored)
        return store, len(chunks), time.perf_counter() - started
    client.close()
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    store, n, _ = _build_peer_in(QdrantClient(path=folder), chunks, encoder, shared)
    return store, n, time.perf_counter() - started


def _stored_texts(client: Any) -> List[str]:
    """The sorted texts of every point in the peer collection."""
    texts, offset = [], None
    while True:
        points, offset = client.scroll("peer", limit=2048, offset=offset, with_payload=True, with_vectors=False)
        texts += [p.payload.get("page_content", "") for p in points]
        if offset is None:
            return sorted(texts)


def _build_peer_in(client: Any, chunks: Sequence[Any], encoder: Any, shared: "SharedQuery"):
    from langchain_qdrant import QdrantVectorStore, RetrievalMode
    from qdrant_client import models

    dense, sparse = make_peer_models(encoder, shared)
    client.create_collection(
        "peer",
        vectors_config={"dense": models.VectorParams(size=encoder.dense_size, distance=models.Distance.COSINE)},
        sparse_vectors_config={"sparse": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    store = QdrantVectorStore(client=client, collection_name="peer", embedding=dense, sparse_embedding=sparse,
                              retrieval_mode=RetrievalMode.HYBRID, vector_name="dense", sparse_vector_name="sparse")
    _add_in_parts(store, chunks, 0)
    return store, len(chunks), 0.0


def _add_in_parts(store: Any, chunks: Sequence[Any], start: int) -> None:
    """``chunks[start:]`` added in order, in parts, so a long build shows where it is."""
    for lo in range(start, len(chunks), 2048):
        store.add_documents(list(chunks[lo:lo + 2048]), batch_size=256)
        log.info("peer store: %d of %d chunks", min(lo + 2048, len(chunks)), len(chunks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=["mmlongbench", "financebench"], default="mmlongbench")
    parser.add_argument("--setting", choices=["single", "shared", "both"], default=None,
                        help="single: each question filtered to its document; shared: no filter; "
                             "default: single for mmlongbench, both for financebench")
    parser.add_argument("--docs", choices=["text", "le20"], default="text",
                        help="mmlongbench: text: every document with a text layer that has a question (57 docs, 172 q); "
                             "le20: the documents of <= 20 pages (23 docs, 93 q)")
    parser.add_argument("--cache", default=str(CACHE / "peer"),
                        help="folder for the passage-vector cache (emb/); default: %(default)s")
    parser.add_argument("--ours-dir", help="keep our index in this folder and reuse it")
    parser.add_argument("--ours-collection", default="peer_ours",
                        help="our index's collection in --ours-dir (eval_default reopens a copy of the eval's "
                             "--index-dir build, <index-dir>/<corpus>/default: unchanged documents are skipped)")
    parser.add_argument("--peer-dir", help="keep the peer's langchain-qdrant store in this folder and reuse it")
    parser.add_argument("--limit-questions", type=int)
    parser.add_argument("--limit-docs", type=int, help="the first N documents only (a smoke test)")
    parser.add_argument("--engine", default="edge", help="our index's engine (edge or local)")
    parser.add_argument("--threads", type=int, default=1, help="ONNX threads of the dense model (shared machine)")
    parser.add_argument("--build", help="our BuildConfig as key=value,... (e.g. leaves.passage_words=120)")
    parser.add_argument("--search", help="our SearchConfig as key=value,... (e.g. focus.scores=rrf)")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--build-only", action="store_true",
                        help="build (or check) both stores in --ours-dir / --peer-dir and stop; a later run reuses them")
    parser.add_argument("--peer-ks", help="the peer's k's, e.g. 1,2,4,6,8,10,15,20 (default 1..20): each k is one "
                                         "local-mode search, the cost of a large store")
    parser.add_argument("--json", help="write the aggregate figures to this file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    os.environ.setdefault("DRAG_KNEE_MODEL_PATH", str(SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"))
    os.environ.setdefault("DRAG_KNEE_DATASETS", str(SHARED / "datasets"))
    from drag_knee_retriever import DragKneeIndex
    from drag_knee_retriever.config import BuildConfig, EmbeddingConfig, EncoderRuntime, SearchConfig, StoreConfig
    from drag_knee_retriever.embeddings.encoder import Encoder
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # benchmarks.datasets
    from drag_knee_retriever.eval.encoding import CachingEncoder

    peer_ks = sorted({int(k) for k in args.peer_ks.split(",")}) if args.peer_ks else KS
    if not {4, 10, max(KS)} <= set(peer_ks):
        raise SystemExit(f"--peer-ks {args.peer_ks}: give at least 4, 10 and {max(KS)} (LangChain's default, the "
                         "latency row and the budget fill)")
    setting = args.setting or ("both" if args.dataset == "financebench" else "single")
    settings = ["shared", "single"] if setting == "both" else [setting]
    ds = load_questions(args)
    questions = ds.questions
    gold_pages = [set(q.gold) for q in questions]  # (doc_id, unit ordinal) = (doc_id, 0-based page)
    total_pages = sum(len(d.pages) for d in ds.documents)
    print(f"{ds.name} ({args.docs if args.dataset == 'mmlongbench' else 'all filings'}): {len(ds.documents)} documents, "
          f"{total_pages} pages with text, {len(questions)} questions; settings {', '.join(settings)}")
    encoder = CachingEncoder(Encoder(EmbeddingConfig(runtime=EncoderRuntime(threads=args.threads))), Path(args.cache) / "emb")
    shared = SharedQuery(encoder)

    # The peer first: a run beside an eval of the same dataset (on the same vector cache) then
    # finds our passages' vectors cached by the time our index is built.
    peer, n_chunks, peer_build_s = open_peer(ds.documents, encoder, shared, args.peer_dir)
    encoder.save()
    print(f"peer: {n_chunks} chunks in langchain-qdrant (local mode), built in {peer_build_s:.0f}s; "
          f"vector cache hits {encoder.hits}, misses {encoder.misses}", flush=True)
    encoder = CachingEncoder(encoder._inner, Path(args.cache) / "emb")  # what other runs saved meanwhile
    started = time.perf_counter()
    build, search = parse_config(BuildConfig, args.build), parse_config(SearchConfig, args.search)
    ours = DragKneeIndex(args.ours_dir or ":memory:", embedding=encoder, build=build, search=search,
                         store=StoreConfig(collection=args.ours_collection, engine=args.engine))
    ours.add_documents(ds.documents)
    ours_build_s = time.perf_counter() - started
    encoder.save()
    stats = ours.stats()
    print(f"ours: {stats['nodes']} nodes ({stats['leaves']} leaves), engine {stats['engine']}, "
          f"built in {ours_build_s:.0f}s; method {ours.search_config.method!r}; --build {args.build or '(default)'}; "
          f"--search {args.search or '(default)'}; vector cache hits {encoder.hits}, misses {encoder.misses}",
          flush=True)
    if args.build_only:
        ours.close()
        return

    out: Dict[str, Any] = {"dataset": ds.name, "docs": args.docs, "documents": len(ds.documents), "pages": total_pages,
                           "questions": len(questions), "peer_chunks": n_chunks, "ours_nodes": stats["nodes"],
                           "ours_leaves": stats["leaves"], "ours_method": ours.search_config.method,
                           "build": args.build, "search": args.search,
                           "build_s": {"ours": ours_build_s, "peer": peer_build_s}, "settings": {}}
    for name in settings:
        out["settings"][name] = run_setting(name, ours, peer, encoder, shared, questions, gold_pages, args.resamples,
                                            peer_ks)
    ours.close()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


def run_setting(setting: str, ours: Any, peer: Any, encoder: Any, shared: "SharedQuery", questions: Sequence[Any],
                gold_pages: Sequence[set], resamples: int, peer_ks: Sequence[int] = KS) -> Dict[str, Any]:
    """Every question in one setting: our default, our flat sweep and the peer's (figures and a printout)."""
    def scope(q: Any) -> Dict[str, Any]:
        return {"filters": {"doc_id": q.metadata["doc_id"]}} if setting == "single" else {}

    def peer_scope(q: Any) -> Dict[str, Any]:
        return {"filter": peer_filter(q.metadata["doc_id"])} if setting == "single" else {}

    for q in questions[:3]:  # warm up the ONNX session and both stores
        ours.search(q.text, **scope(q))
        peer.similarity_search_with_score(q.text, k=4, **peer_scope(q))

    names = ["ours_default", *[f"flat_k{k}" for k in KS], *[f"peer_k{k}" for k in peer_ks],
             *[f"{who}_w{b}" for who in ("flat", "peer") for b in BUDGETS]]
    rows: Dict[str, Any] = {n: [] for n in names}
    right: Dict[str, List[float]] = {"ours_default": [], "flat_k5": [], "flat_k10": [], "peer_k4": [], "peer_k10": []}
    latency: Dict[str, List[float]] = {"ours_default": [], "flat_k10": [], "peer_k4": [], "peer_k10": []}
    encodings_before = encoder.query_encodings
    t_run = time.perf_counter()
    for n, (q, gold) in enumerate(zip(questions, gold_pages), 1):
        doc = q.metadata["doc_id"]
        t = time.perf_counter()
        result = ours.search(q.text, **scope(q))
        latency["ours_default"].append((time.perf_counter() - t) * 1e3)
        rows["ours_default"].append((sum(words(h.text) for h in result.nodes), page_recall(node_pages(result.nodes), gold)))
        right["ours_default"].append(float(any(h.node.doc_id == doc for h in result.nodes)))
        vectors = encoder.encode_query(q.text)  # one encoding serves the flat sweep (timed at k=10 below)
        top = ours.flat_search(q.text, k=max(KS), query_vectors=vectors, **scope(q))
        for k in KS:
            hits = top[:k]
            rows[f"flat_k{k}"].append((sum(words(h.text) for h in hits), page_recall(node_pages(hits), gold)))
            if f"flat_k{k}" in right:
                right[f"flat_k{k}"].append(float(any(h.node.doc_id == doc for h in hits)))
        for b in BUDGETS:
            kept = [h for _, h in fill([(words(h.text), h) for h in top], b)]
            rows[f"flat_w{b}"].append((sum(words(h.text) for h in kept), page_recall(node_pages(kept), gold)))
        t = time.perf_counter()
        ours.flat_search(q.text, k=10, **scope(q))
        latency["flat_k10"].append((time.perf_counter() - t) * 1e3)
        for k in peer_ks:
            shared._text = None  # every peer search encodes its query, as LangChain does
            t = time.perf_counter()
            docs = peer.similarity_search_with_score(q.text, k=k, **peer_scope(q))
            ms = (time.perf_counter() - t) * 1e3
            if f"peer_k{k}" in latency:
                latency[f"peer_k{k}"].append(ms)
            found = {(d.metadata["doc_id"], d.metadata["page"]) for d, _ in docs}
            rows[f"peer_k{k}"].append((sum(words(d.page_content) for d, _ in docs), page_recall(found, gold)))
            if f"peer_k{k}" in right:
                right[f"peer_k{k}"].append(float(any(d.metadata["doc_id"] == doc for d, _ in docs)))
            if k == max(KS):
                for b in BUDGETS:
                    kept = [d for _, d in fill([(words(d.page_content), d) for d, _ in docs], b)]
                    found = {(d.metadata["doc_id"], d.metadata["page"]) for d in kept}
                    rows[f"peer_w{b}"].append((sum(words(d.page_content) for d in kept), page_recall(found, gold)))
        if n % 20 == 0:
            log.info("%s: %d/%d questions, %.0fs", setting, n, len(questions), time.perf_counter() - t_run)

    def mean(name: str) -> Tuple[float, float]:
        return (statistics.mean(w for w, _ in rows[name]), statistics.mean(r for _, r in rows[name]))

    print(f"\n== {setting} ==\n{'k':>3} {'peer words':>10} {'peer recall':>11} {'flat words':>10} {'flat recall':>11}")
    for k in KS:
        pw, pr = mean(f"peer_k{k}") if k in peer_ks else (float("nan"), float("nan"))
        fw, fr = mean(f"flat_k{k}")
        print(f"{k:>3} {pw:>10.0f} {pr:>11.3f} {fw:>10.0f} {fr:>11.3f}")
    ow, orc = mean("ours_default")
    peer_curve = {k: rows[f"peer_k{k}"] for k in peer_ks}
    flat_curve = {k: rows[f"flat_k{k}"] for k in KS}
    g_peer, at_peer, lo_peer, hi_peer = bootstrap_gain(rows["ours_default"], peer_curve, resamples)
    g_flat, at_flat, lo_flat, hi_flat = bootstrap_gain(rows["ours_default"], flat_curve, resamples)
    # The peer against our flat hybrid, at the peer's LangChain-default k=4 words.
    g_pf, at_pf, lo_pf, hi_pf = bootstrap_gain(rows["peer_k4"], flat_curve, resamples)
    print(f"\nours default: recall {orc:.3f} at {ow:.0f} words")
    print(f"  peer at {ow:.0f} words: {at_peer:.3f}; gain vs peer {g_peer:+.3f} (95% CI {lo_peer:+.3f} .. {hi_peer:+.3f})")
    print(f"  flat hybrid at {ow:.0f} words: {at_flat:.3f}; gain vs flat {g_flat:+.3f} (95% CI {lo_flat:+.3f} .. {hi_flat:+.3f})")
    print(f"peer k=4 vs our flat hybrid at its words: {g_pf:+.3f} (95% CI {lo_pf:+.3f} .. {hi_pf:+.3f})")
    print("right document: " + ", ".join(f"{n} {statistics.mean(v):.3f}" for n, v in right.items()))
    print("recall within a word budget (words used): " + "; ".join(
        f"{b}: flat {mean(f'flat_w{b}')[1]:.3f} ({mean(f'flat_w{b}')[0]:.0f}), peer {mean(f'peer_w{b}')[1]:.3f} "
        f"({mean(f'peer_w{b}')[0]:.0f})" for b in BUDGETS))
    queries = len(questions)
    print(f"latency per query incl. query encoding, ms ({queries} questions):")
    print(f"{'method':<14} {'p50':>7} {'p95':>7}")
    for name, values in latency.items():
        print(f"{name:<14} {statistics.median(values):>7.1f} {p95(values):>7.1f}")
    print(f"query encodings: {encoder.query_encodings - encodings_before} for {queries} questions "
          f"(ours: 1 per search + 1 for the flat sweep + 1 timed flat; peer: 1 per search)")
    print(f"peer_gain_at_equal_words={g_peer:+.3f} ci95=[{lo_peer:+.3f},{hi_peer:+.3f}] ours_words={ow:.0f} "
          f"ours_p50_ms={statistics.median(latency['ours_default']):.1f} "
          f"peer_k4_p50_ms={statistics.median(latency['peer_k4']):.1f}")
    return {
        "curves": {name: {"words": mean(name)[0], "recall": mean(name)[1]} for name in rows},
        "ours_gain_vs_peer": {"gain": g_peer, "peer_at_ours_words": at_peer, "ci95": [lo_peer, hi_peer]},
        "ours_gain_vs_flat": {"gain": g_flat, "flat_at_ours_words": at_flat, "ci95": [lo_flat, hi_flat]},
        "peer_k4_gain_vs_flat": {"gain": g_pf, "ci95": [lo_pf, hi_pf]},
        "right_document": {n: statistics.mean(v) for n, v in right.items()},
        "latency_ms": {n: {"p50": statistics.median(v), "p95": p95(v)} for n, v in latency.items()},
    }


if __name__ == "__main__":
    main()
