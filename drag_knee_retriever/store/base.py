"""The store interface every engine implements, its request and hit types, and what engines share.

Engines (``qdrant.py``, ``edge/``, ``memory.py``) import only this module and ``filters`` of the
store package (and the stored point's schema, :mod:`drag_knee_retriever.model._point_schema`), never each
other: what two engines would otherwise repeat (request planning, side limits, hit order, the
bookkeeping of :class:`NodeStore`) lives here, or in the modules this one re-exports: the folder
layouts (:mod:`.layout`) and the roots' copy's rules (:mod:`.copies`).

Every method that talks to the engine counts one request in ``self.requests``: a search makes one
round trip per tree level, so the count is what tests and benchmarks check.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import operator
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.common._bm25_idf import SCHEME as IDF_SCHEME
# The two engine constants that shape a search are declared and documented with the settings.
from drag_knee_retriever.config import MIN_SIDE_LIMIT, TIE_MARGIN  # noqa: F401 - the engines read them from here
# Checked by StoreConfig too, so it lives with the settings; the engines read it from here.
from drag_knee_retriever.config import check_collection_name  # noqa: F401
from drag_knee_retriever.errors import InvalidQueryError, ModelMismatchError
from drag_knee_retriever.model._ids import root_ids
from drag_knee_retriever.model._nodes import FILE_STAMP_KEY, QueryVectors, TreeNode
from drag_knee_retriever.model._point_schema import SCHEMA_VERSION, meta_payload
from drag_knee_retriever.store.pending import PENDING_FILE, PendingDocs  # noqa: F401 - engines import it from here
# The roots' copy: which requests it answers, how its versions compare.
from drag_knee_retriever.store.copies import payload_stamp, root_version, roots_ranking, stamp_ids  # noqa: F401
# Folder layouts (and which engine a folder holds): the engines and callers read them from here.
from drag_knee_retriever.store.layout import (EDGE_MARKER, EDGE_ROOTS_DIR, LOCAL_DIR, LOCAL_MARKER, ROOTS_SUFFIX,  # noqa: F401
                     detect_engine, lock_file_error)

if TYPE_CHECKING:  # pragma: no cover
    from drag_knee_retriever.common._bm25_idf import ClientIdf
    from drag_knee_retriever.store.integrity import RecordFile
    from drag_knee_retriever.store.journal import WriteJournal

# A parsed user filter: filters.Condition values that must all hold (see filters.parse_filters).
FilterSpec = Tuple[Any, ...]



@dataclass(frozen=True)
class NodeRecord:
    """A node with its vectors, ready to upsert."""

    node: TreeNode
    dense: Sequence[float]
    sparse_indices: Sequence[int]
    sparse_values: Sequence[float]


@dataclass(frozen=True)
class RankRequest:
    """Rank a candidate set by hybrid RRF.

    ``candidate_ids`` restricts the ranking to those nodes (``None``: no restriction);
    ``level`` / ``leaves_only`` restrict by tree position; ``filters`` by payload.
    """

    limit: int
    weights: Tuple[float, float] = (1.0, 1.0)
    candidate_ids: Optional[Tuple[str, ...]] = None
    level: Optional[int] = None
    leaves_only: bool = False
    filters: FilterSpec = ()
    # None: fuse both sides by RRF; "dense" / "sparse": one side only (for baselines).
    only: Optional[str] = None
    # Also fill each hit's dense cosine and BM25 score (RankedHit.dense_score / sparse_score): the
    # engine adds the two side rankings to the same batch, so it stays one round trip. Why: RRF
    # scores carry ranks only, and a cut that tracks need wants magnitudes (issue 14).
    with_scores: bool = False


@dataclass(frozen=True)
class RankedHit:
    """One ranked node: fused score, its rank on each side (0-based; None = not matched), and with
    ``RankRequest.with_scores`` its dense cosine and BM25 score (see :func:`score_limit`)."""

    node: TreeNode
    score: float
    dense_rank: Optional[int] = None
    sparse_rank: Optional[int] = None
    dense_score: Optional[float] = None
    sparse_score: Optional[float] = None


def fetch_limit(request: RankRequest, light: bool) -> int:
    """How many hits to ask the engine for: the limit plus :data:`TIE_MARGIN`, cut again by the store.

    The engines return equal scores in an internal order (Qdrant Edge's changes from process to
    process), so a list cut at exactly ``limit`` kept an arbitrary part of a tie group at the
    cut: over-fetching and cutting after ordering ties by id (:func:`stable_order`) gives the
    same list every run, unless a tie group at the cut is longer than the margin. A full ranking
    (flat search) reads the extra hits' payloads too: a few microseconds each.
    """
    more = request.limit + TIE_MARGIN
    if request.candidate_ids is not None:
        more = min(more, len(request.candidate_ids))
    return max(request.limit, more)


def stable_order(hits: List[Any], id_of: Optional[Callable[[Any], Any]] = None,
                 score_of: Optional[Callable[[Any], Any]] = None) -> List[Any]:
    """Order by score, ties broken by node id, so every engine agrees on tied candidates.

    ``hits`` are :class:`RankedHit` by default; ``id_of`` / ``score_of`` read another item's id and
    score (the engines' side rankings, as ``(point id, score)`` pairs: :data:`PAIR_ID`, :data:`PAIR_SCORE`).
    """
    # By id, then a stable sort by score (reverse=True keeps equal scores in id order): the same
    # order as the key (-score, id), with C-level keys instead of a Python lambda per hit.
    ordered = sorted(hits, key=id_of or _NODE_ID)
    ordered.sort(key=score_of or _HIT_SCORE, reverse=True)
    return ordered


_NODE_ID = operator.attrgetter("node.id")
_HIT_SCORE = operator.attrgetter("score")
#: The id and the score of a ``(point id, score)`` pair, for :func:`stable_order`.
PAIR_ID = operator.itemgetter(0)
PAIR_SCORE = operator.itemgetter(1)


def side_order(pairs: List[Tuple[str, float]], limit: int) -> List[Tuple[str, float]]:
    """A side ranking (dense or BM25, ``(point id, score)`` pairs as an engine returned them)
    ordered by score, ties by id (:func:`stable_order`), cut at ``limit``.

    Why: the engines return equal scores in an internal order, and the fusion reads each side's
    positions, so a tie ordered another way fused another list. Ordered so, one request and the
    same request split into several (``store/edge/split.py``) give the same ranking. The engine
    was asked for ``limit + TIE_MARGIN`` (see :func:`fetch_limit`): a tie at the cut is cut by id.
    Without equal scores, a descending list is returned as it is (no sort).
    """
    scores = list(map(PAIR_SCORE, pairs))
    if not all(map(operator.gt, scores, scores[1:])):
        pairs = stable_order(pairs, PAIR_ID, PAIR_SCORE)
    return pairs[:limit]


def side_limit(request: RankRequest) -> int:
    """How many hits each side (dense, BM25) of a fused request ranks before the fusion."""
    return request.limit if request.candidate_ids is not None else max(request.limit, MIN_SIDE_LIMIT)


def score_limit(request: RankRequest) -> int:
    """How many hits each side reads to score a ``with_scores`` request's hits.

    A candidate set is scored whole (every candidate gets its cosine; a candidate BM25 does not
    match gets 0.0, see :func:`side_scores`); an open ranking reads :func:`side_limit` per side,
    and a hit beyond that on one side gets None there (its score is below the side's last one).
    """
    if request.candidate_ids is not None:
        return max(side_limit(request), len(request.candidate_ids))
    return side_limit(request)


def side_scores(hits: List[RankedHit], request: RankRequest, dense: Optional[Dict[str, float]],
                sparse: Optional[Dict[str, float]]) -> List[RankedHit]:
    """``hits`` with their dense and BM25 scores from the two side rankings (id -> score)."""
    if dense is None or sparse is None:
        return hits
    # The sparse side returns only nodes sharing a term with the query. In a candidate set, or in an
    # open ranking where that side returned fewer hits than it was asked for, a node it did not
    # return matches no term: BM25 0.0 exactly. Otherwise a missing score is only "below the side's
    # limit" (None). (Filling such nodes with the weakest returned score instead made a leaf with no
    # query term tie the weakest match, so a constant dense model left nothing to rank by.)
    exhaustive = request.candidate_ids is not None or len(sparse) < score_limit(request)
    missing = 0.0 if exhaustive else None
    out = []
    for h in hits:
        nid = h.node.id
        out.append(RankedHit(h.node, h.score, h.dense_rank, h.sparse_rank, dense.get(nid),
                             sparse.get(nid, missing)))
    return out


def check_collection_compatible(info: Mapping[str, Any], *, collection: str, model_id: str, dense_size: int,
                                sparse_model: str) -> None:
    """Raise :class:`ModelMismatchError` (saying how to open it) unless a collection recorded as
    ``info`` (see :func:`stored_collection_info`) was built with this BM25 model, dense model and
    dimension. A new collection (empty ``info``) is compatible with anything."""
    stored_sparse = info.get("sparse_model")
    if stored_sparse and stored_sparse != sparse_model:
        raise ModelMismatchError(
            f"Collection {collection!r} was built with BM25 {stored_sparse!r} but this index uses "
            f"{sparse_model!r}; open it with language={str(stored_sparse).rsplit(':', 1)[-1]!r} "
            "or choose another collection."
        )
    if info.get("model_id") and (info["model_id"] != model_id or info.get("dense_size") != dense_size):
        # The encoder's identity ends in "|max_tokens=N" when it reads fewer word pieces than the model.
        stored_limit = re.search(r"\|max_tokens=(\d+)", str(info["model_id"]))
        if stored_limit:
            how = f"Open it with EmbeddingConfig(max_tokens={stored_limit.group(1)}) and the same model"
        elif "|max_tokens=" in model_id:
            how = "Open it with the same model and EmbeddingConfig(max_tokens=None)"
        else:
            how = "Open it with the same model"
        raise ModelMismatchError(
            f"Collection {collection!r} was built with model {info['model_id']!r} "
            f"({info.get('dense_size')} dims) but this index uses {model_id!r} ({dense_size} dims). "
            f"{how}, or choose another collection name."
        )


#: What an engine must implement (NodeStore's abstract methods; see NodeStore's docstring).
ENGINE_PROTOCOL = frozenset({"_exists", "_create", "upsert", "delete_nodes", "rank", "retrieve", "scroll_nodes", "count",
                             "collection_info", "close", "_put_meta"})
#: What no engine writes again: NodeStore's own, for every engine (an engine may extend ``writing``
#: around it, as Qdrant Edge defers its flushes to the block's end).
SHARED_BOOKKEEPING = ("open_collection", "_count", "_note_write", "_idf_scheme", "_idf_in_step", "_begin_records", "_end_records",
                      "_begin_delete", "_end_delete", "_write_meta", "_check_existing_collection", "_record_format",
                      "_close_record", "_sync_copies", "root_stamps")


def check_rrf_k(rrf_k: object) -> None:
    """What every engine's ``rank`` refuses before ranking: an RRF constant that is not an int >= 1."""
    if isinstance(rrf_k, bool) or not isinstance(rrf_k, int) or rrf_k < 1:
        raise InvalidQueryError(
            f"rrf_k must be an integer >= 1 (k = 0 makes the top rank's score infinite), got {rrf_k!r}."
        )


class NodeStore(abc.ABC):
    """What the index needs from a vector store. Implementations: qdrant-client, Qdrant Edge, memory.

    Two parts. **The engine protocol** is what an engine implements (abstract here, see
    :data:`ENGINE_PROTOCOL`): open (:meth:`_exists`, :meth:`_create`; :meth:`open_collection` runs
    them with the check on open), :meth:`upsert`, :meth:`delete_nodes`, :meth:`rank`,
    :meth:`retrieve`, :meth:`scroll_nodes`, :meth:`count`, :meth:`collection_info`, :meth:`close`,
    and the storage of the two bookkeeping points (:meth:`_put_meta`; reading them back,
    :meth:`_meta_payloads`, defaults to none). An engine may also answer faster or more than the
    defaults here do (:meth:`retrieve_roots`, :meth:`scroll_dense`, :meth:`set_root_metadata`,
    :meth:`count_roots`, :meth:`count_points`, :meth:`_sample_nodes`, :meth:`arank`, :meth:`aretrieve`)
    and, if it keeps a roots' copy (:func:`roots_ranking`), read and copy its points
    (:meth:`_stored_root_versions`, :meth:`_copy_roots`, :meth:`_drop_root_copies`, :meth:`_copied_stamps`).

    **The bookkeeping every engine shares** lives here once (see :data:`SHARED_BOOKKEEPING`):
    request counting (:meth:`_count`), the refusal of writes on a read-only index and the record's
    "writing" mark (:meth:`_note_write`), the pending documents around writes and deletes
    (:meth:`writing`, :meth:`_begin_records` / :meth:`_end_records`, :meth:`_begin_delete` /
    :meth:`_end_delete`; the list itself is :mod:`.pending`), the write journal's place
    (``journal``, :mod:`.journal`), the BM25 frequencies kept in step when a write fails
    (:meth:`_idf_in_step`), the bookkeeping points' payload (:meth:`_write_meta`), the integrity
    check on open and the counts recorded at close (:meth:`_check_existing_collection`,
    :meth:`_record_format`, :meth:`_close_record`, rules in :mod:`.integrity`), which roots the
    copy gains or loses (:meth:`_sync_copies`) and the file stamps an ingest reads (:meth:`root_stamps`).
    """

    engine: str = "abstract"
    #: Documents with a write in flight (embedded engines; None: the store does not keep one, and
    #: an orphan sweep must list every node). See :mod:`~drag_knee_retriever.store.pending`.
    pending: Optional[PendingDocs] = None

    #: The new versions of documents a write is giving them, replayed if it was cut short (embedded
    #: engines; None: a store shared with other processes). See :mod:`~drag_knee_retriever.store.journal`.
    journal: Optional["WriteJournal"] = None

    #: The BM25 IDF this store applies itself, in exact arithmetic (embedded Qdrant engines; None:
    #: the engine's own, or none). See :mod:`~drag_knee_retriever.common._bm25_idf`.
    _idf: Optional["ClientIdf"] = None

    #: The record file of an embedded folder (None: the collection's bookkeeping points only).
    #: See :mod:`~drag_knee_retriever.store.integrity`.
    record: Optional["RecordFile"] = None

    def __init__(self) -> None:
        self.requests = 0
        self._count_lock = threading.Lock()
        #: Why this store refuses writes (an index of a newer format), or None.
        self.read_only: Optional[str] = None
        self._write_noted = False
        self._record_cache: Any = None
        #: Set once the collection passed the check on open (or was created here): only then are
        #: its counts recorded at close (a damaged index must never be recorded as whole).
        self._checked = False

    def writing(self, doc_ids: Sequence[str]) -> ContextManager[None]:
        """Around a sequence of writes of these documents: noted as pending until it all succeeds."""
        self._note_write()
        return self.pending.hold(doc_ids) if self.pending is not None else contextlib.nullcontext()

    def _note_write(self) -> None:
        """Before any write: refused on a read-only index; the first one of a session marks the
        record's counts as no longer valid (see :mod:`.integrity`)."""
        if self.read_only:
            from drag_knee_retriever.errors import StoreError

            raise StoreError(self.read_only)
        if self.record is not None and not self._write_noted:
            from drag_knee_retriever.store.integrity import note_write

            note_write(self)

    def _begin_records(self, records: Sequence["NodeRecord"]) -> None:
        """Before an upsert: note the documents whose non-root nodes are written (see ``pending``)."""
        self._note_write()
        if self.pending is not None:
            self.pending.begin({r.node.doc_id for r in records if r.node.parent_id is not None})

    def _end_records(self, records: Sequence["NodeRecord"]) -> None:
        """After an upsert: the documents whose root landed are whole again."""
        if self.pending is not None:
            self.pending.end({r.node.doc_id for r in records if r.node.parent_id is None})

    def _begin_delete(self, doc_id: str) -> None:
        """Before a delete's first engine write: the document is pending until :meth:`_end_delete`
        (a delete cut short leaves rootless nodes of it; see ``pending``)."""
        if self.pending is not None:
            self.pending.begin([doc_id])

    def _end_delete(self, doc_id: str) -> None:
        """After a delete finished: the document is no longer pending."""
        if self.pending is not None:
            self.pending.end([doc_id])

    def _count(self, n: int = 1) -> None:
        with self._count_lock:
            self.requests += n

    def open_collection(self, *, dense_size: int, model_id: str, sparse_model: str) -> None:
        """Create the collection, or check that an existing one was built with the same model.

        The same steps for every engine: one request counted; an existing collection is loaded
        (:meth:`_load_existing`) and passes the check on open (:meth:`_check_existing_collection`);
        a new one is made (:meth:`_create`), needs no check, and records its model
        (:meth:`_write_meta`); then the engine's own steps (:meth:`_opened`: its roots' copy), all
        while the engine is held (:meth:`_engine_held`); a new collection's pending list covers
        every write from then on."""
        self._count()
        exists = self._exists()
        with self._engine_held():
            if exists:
                self._load_existing()
                self._check_existing_collection(dense_size=dense_size, model_id=model_id, sparse_model=sparse_model)
            else:
                self._create(dense_size)
                self._checked = True  # made here: nothing to check
                self._write_meta(dense_size, model_id, sparse_model)
            self._opened(dense_size, created=not exists)
        if not exists and self.pending is not None:
            self.pending.reset()  # a new collection: the list covers every write from here on

    @abc.abstractmethod
    def _exists(self) -> bool:
        """Whether the collection exists already (made by an earlier session or this one)."""

    @abc.abstractmethod
    def _create(self, dense_size: int) -> None:
        """Make the new, empty collection (and its roots' copy, if the engine keeps one)."""

    def _load_existing(self) -> None:
        """Before an existing collection's check on open: what the engine reads first (its schema,
        how its BM25 IDF is applied). None by default."""

    def _opened(self, dense_size: int, *, created: bool) -> None:
        """After the collection was made or passed its check: the engine's own steps (bringing its
        roots' copy in step, :meth:`_record_format`). None by default."""

    def _engine_held(self) -> ContextManager[Any]:
        """Held around the steps of :meth:`open_collection` (an engine that serialises its calls)."""
        return contextlib.nullcontext()

    @abc.abstractmethod
    def upsert(self, records: Sequence[NodeRecord]) -> None:
        """Write nodes with their vectors (in batches)."""

    @abc.abstractmethod
    def delete_nodes(self, doc_id: str, *, except_hash: Optional[str] = None) -> None:
        """Delete a document's nodes (all, or those whose doc_hash differs from ``except_hash``).

        The root goes first: it is the commit point of a tree (written last), so a delete cut short
        leaves only rootless nodes, which no search walks to and the next ingest removes. (A
        store with a roots' collection, see :func:`roots_ranking`, deletes the root's copy there
        before the root, and writes it after the root.)
        """

    @abc.abstractmethod
    def retrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        """Fetch nodes by id (missing ids are skipped), in one request."""

    def retrieve_roots(self, ids: Sequence[str]) -> List[TreeNode]:
        """The stored roots among ``ids`` (missing ids and non-roots skipped), with at least the
        walk's fields (:data:`~drag_knee_retriever.model._point_schema.WALK_FIELDS`: doc_id, level,
        doc_hash...), in one request: what an ingest's change check reads (the engines read those
        payload fields only, no text)."""
        return [node for node in self.retrieve(ids) if node.level == 0]

    def root_stamps(self, doc_ids: Sequence[str]) -> Dict[str, str]:
        """doc_id -> the file stamp stored on the root of each stored document among ``doc_ids``
        that has one (``metadata["file_stamp"]``, build key included), in one request: what a
        re-ingest's stamp check reads (:meth:`~drag_knee_retriever.build._ingest.Ingestor.file_stamps`).

        A store with a roots' collection reads the stamps from there (only roots, the stamp alone)
        and counts them only once the nodes' collection confirms those roots (Edge: a count of
        them; qdrant-client: their versions), see :meth:`_copied_stamps`; otherwise, or when they
        disagree, the nodes' roots are read (:meth:`retrieve_roots`: both possible root ids, so
        each document's first leaf comes back too)."""
        if not doc_ids:
            return {}
        copied = self._copied_stamps(doc_ids)
        if copied is not None:
            return copied
        out: Dict[str, str] = {}
        for node in self.retrieve_roots([i for d in doc_ids for i in root_ids(d)]):
            stamp = node.metadata.get(FILE_STAMP_KEY)
            if isinstance(stamp, str):
                out[node.doc_id] = stamp
        return out

    def _copied_stamps(self, doc_ids: Sequence[str]) -> Optional[Dict[str, str]]:
        """:meth:`root_stamps` as the roots' own collection answers it, once the nodes' collection
        confirms those roots; None where there is no copy to read or it disagrees (the nodes'
        roots are then read). This version keeps no copy."""
        return None

    def set_root_metadata(self, root_id: str, values: Mapping[str, Any]) -> None:
        """Set metadata keys of a stored root (and its copy), leaving every vector and the tree
        as they are: what a re-ingest writes when only a file's stamp changed. A store that
        cannot does nothing (the file is then read again next time)."""

    def sync_roots(self) -> None:
        """Bring the roots' own collection in step with the stored roots (stores that keep one:
        after a write cut between a root and its copy; ``open_collection`` does it too)."""

    @abc.abstractmethod
    def rank(self, requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool,
             light: bool = False) -> List[List[RankedHit]]:
        """Run several hybrid rankings in one round trip; one hit list per request, best first.

        ``explain``: fill each hit's dense and sparse rank. ``light``: the hits' nodes carry only
        :data:`~drag_knee_retriever.model._point_schema.WALK_FIELDS`; rankings and scores are the same either way.
        """

    @abc.abstractmethod
    def scroll_nodes(self, *, filters: FilterSpec = (), level: Optional[int] = None, with_text: bool = True) -> List[TreeNode]:
        """Every node matching the conditions (used for stats and listings, not for search)."""

    def scroll_dense(self, *, filters: FilterSpec = ()) -> List[Tuple[TreeNode, Optional[Sequence[float]]]]:
        """Every node matching the conditions, whole, with its stored dense vector: what a
        replacement reads to reuse the vectors of unchanged texts (``Ingestor``). A store that
        cannot read vectors back returns ``[]`` (everything is encoded again)."""
        return []

    @abc.abstractmethod
    def count(self) -> int:
        """Number of nodes stored (the collection's own bookkeeping excluded)."""

    @abc.abstractmethod
    def collection_info(self) -> Dict[str, Any]:
        """What the collection records about itself: model, vector size, schema, engine."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the engine (and any folder lock)."""

    def describe(self) -> str:
        """A short human-readable name of the engine and where it keeps the index."""
        return self.engine

    def _check_existing_collection(self, *, dense_size: int, model_id: str, sparse_model: str) -> None:
        """An existing collection: its format, its model (against every record of it) and its
        integrity, checked before it answers (:func:`.integrity.open_existing`); lost records are
        written again, a model is never adopted."""
        from drag_knee_retriever.store.integrity import open_existing

        open_existing(self, dense_size=dense_size, model_id=model_id, sparse_model=sparse_model,
                      current_format=SCHEMA_VERSION, compatible=check_collection_compatible)
        self._checked = True

    def _record_format(self) -> None:
        """After an older index was brought to this format (its roots' copy made): say so in its
        bookkeeping point. An index of a newer format keeps its number."""
        info = self.collection_info()
        if info.get("model_id") and int(info.get("schema_version") or 1) < SCHEMA_VERSION:
            self._write_meta(int(info["dense_size"]), str(info["model_id"]), str(info.get("sparse_model") or ""))

    def _write_meta(self, dense_size: int, model_id: str, sparse_model: str,
                    meta: Optional[Mapping[str, Any]] = None) -> None:
        """Record which model built the collection in both bookkeeping points (no search sees
        them); ``meta``: the payload to write as it is (restoring a lost point from another record).
        A write like any other: refused on a read-only index, noted in the record (see :meth:`_note_write`)."""
        self._note_write()
        # The same bookkeeping points in every engine (see point_schema.meta_payload).
        payload = dict(meta) if meta else meta_payload(dense_size, model_id, sparse_model, self._idf_scheme())
        self._put_meta(payload, dense_size)

    def _idf_scheme(self) -> Optional[str]:
        """How this store applies BM25's IDF, as the bookkeeping point records it (None: the engine's own)."""
        return IDF_SCHEME if self._idf is not None and self._idf.enabled else None

    @contextlib.contextmanager
    def _idf_in_step(self) -> Iterator[None]:
        """Around a write: one that fails may or may not have landed, so the BM25 frequencies this
        store keeps are counted again before the next query."""
        try:
            yield
        except BaseException:
            if self._idf is not None:
                self._idf.stale = self._idf.enabled
            raise

    @abc.abstractmethod
    def _put_meta(self, payload: Dict[str, Any], dense_size: int) -> None:
        """Write ``payload`` as both bookkeeping points (ids :data:`~drag_knee_retriever.model._ids.META_IDS`,
        dense vector :func:`~drag_knee_retriever.model._point_schema.meta_vector`), durably."""

    # -- the roots' copy (stores that keep one, see roots_ranking) ------------------------------------

    def _sync_copies(self, *, prune: bool = True) -> Tuple[int, int]:
        """Bring the roots' copy in step with the stored roots: every root the copy lacks, or holds
        in another version (:func:`root_version`), is copied again, and (``prune``) every copy whose
        root is gone is removed. Returns (roots copied, copies removed). The engine reads the
        versions and copies the points (:meth:`_stored_root_versions`, :meth:`_copy_roots`,
        :meth:`_drop_root_copies`); the caller makes the copy's collection first and flushes after."""
        wanted = self._stored_root_versions(copy=False)
        held = self._stored_root_versions(copy=True)
        stale = [pid for pid, version in wanted.items() if held.get(pid) != version]
        extra = [pid for pid in held if pid not in wanted] if prune else []
        if stale:
            self._copy_roots(stale)
        if extra:
            self._drop_root_copies(extra)
        return len(stale), len(extra)

    def _stored_root_versions(self, *, copy: bool) -> Dict[str, str]:
        """Point id -> :func:`root_version` of every root the nodes' collection (``copy``: the roots'
        copy) holds. Stores that keep a copy implement this and the two below."""
        raise NotImplementedError

    def _copy_roots(self, point_ids: List[str]) -> None:
        """Copy these roots, vectors and payload, from the nodes' collection to the roots' copy."""
        raise NotImplementedError

    def _drop_root_copies(self, point_ids: List[str]) -> None:
        """Remove these points from the roots' copy."""
        raise NotImplementedError

    def _meta_payloads(self) -> List[Optional[Dict[str, Any]]]:
        """The payloads of the two bookkeeping points (None where one is missing), in one request."""
        return [None, None]

    def _sample_nodes(self, limit: int, roots: bool = False) -> List[Tuple[Any, ...]]:
        """The first ``limit`` stored nodes in the engine's id order (``roots``: of the roots' own
        collection, none where there is none), as (id, payload
        with :data:`.checksums.SAMPLE_FIELDS`, dense vector or None, (BM25 term ids, values) or
        None): what the check on open reads (see :mod:`.integrity`)."""
        return []

    def count_roots(self) -> int:
        """Number of documents (stored roots)."""
        return len(self.scroll_nodes(level=0, with_text=False))

    def count_points(self) -> int:
        """Every point of the collection, the bookkeeping points included: the engine's own count
        (what the check on open compares, see :mod:`.integrity`; Edge answers it in microseconds)."""
        return self.count()

    def _close_record(self) -> None:
        """At close, after the writes were flushed: record the counts (see :mod:`.integrity`)."""
        if self.record is None or self.read_only or not self._checked:
            return
        from drag_knee_retriever.store.integrity import record_counts

        try:
            record_counts(self)
        except Exception:  # closing must not raise: the next open only skips the count check once
            import logging

            logging.getLogger(__name__).warning("could not record the index's counts on close", exc_info=True)

    # Async variants: an in-process engine answers in microseconds, so a worker thread is enough;
    # a store that talks to a server overrides these with its native async client.

    async def arank(self, requests: Sequence[RankRequest], query: QueryVectors, *, rrf_k: int, explain: bool,
                    light: bool = False) -> List[List[RankedHit]]:
        """:meth:`rank` without blocking the event loop."""
        return await asyncio.to_thread(self.rank, requests, query, rrf_k=rrf_k, explain=explain, light=light)

    async def aretrieve(self, ids: Sequence[str]) -> List[TreeNode]:
        """:meth:`retrieve` without blocking the event loop."""
        return await asyncio.to_thread(self.retrieve, ids)
