"""Writing documents: change detection, builder -> vectorizer -> store, root-last writes.

:class:`Ingestor` is what ``DragKneeIndex.add_documents`` / ``add_nodes`` / ``delete_document``
run. Both ways in share one change check (:meth:`Ingestor.triage`) and one write
(:meth:`Ingestor.write_trees`): a tree's root is its commit point and is written last, one
document after the other.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence

from drag_knee_retriever.build._builder import DocumentTree, build_document_trees, document_hash
from drag_knee_retriever.config import BuildConfig
from drag_knee_retriever.errors import ConfigError, InvalidDocumentError, StoreError
from drag_knee_retriever.model._ids import root_ids
from drag_knee_retriever.model._nodes import FILE_STAMP_KEY, Document, TreeNode
from drag_knee_retriever.store import NodeStore
from drag_knee_retriever.store.filters import parse_filters
from drag_knee_retriever.build._vectorize import Vectorizer

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
_INGEST_CHUNK_DOCS = 64


@dataclass(frozen=True)
class OrphanSweep:
    """What :meth:`Ingestor.sweep_orphans` removed: rootless documents and their node count."""

    doc_ids: List[str] = field(default_factory=list)
    nodes: int = 0


#: The phases of :attr:`IngestReport.phase_seconds`, in pipeline order.
PHASES = ("building", "summarising", "dense", "bm25", "writing", "sweeping")


@dataclass
class IngestReport:
    """What an ``add_documents`` call did.

    ``phase_seconds`` is where the wall time went, per phase (:data:`PHASES`): ``building`` (the
    trees, without the summariser), ``summarising`` (the summariser's ``describe`` calls),
    ``dense`` (the dense encoder), ``bm25`` (the sparse encoder), ``writing`` (deleting the old
    trees and upserting the new ones), ``sweeping`` (the orphan check at the end). A phase that
    did not run is absent; ``seconds`` also counts the change check and the bookkeeping between
    phases. ``pages`` is how many pages were written (:func:`page_count`: a paged document's
    pages, a text document one per 3,000 characters; ``add_nodes``: the leaves), so
    ``pages / seconds`` is the ingest's throughput.
    """

    added: List[str] = field(default_factory=list)
    replaced: List[str] = field(default_factory=list)
    unchanged: List[str] = field(default_factory=list)
    nodes_written: int = 0
    pages: int = 0
    seconds: float = 0.0
    phase_seconds: Dict[str, float] = field(default_factory=dict)
    # What the summariser spent, when it reports it (LLM summarisers: calls, tokens, fallbacks).
    summarizer: Optional[Dict[str, Any]] = None

    # Rootless leftovers of an earlier interrupted ingest or delete, removed at the end of this one.
    orphans_removed: int = 0

    def __str__(self) -> str:
        text = (
            f"{len(self.added)} added, {len(self.replaced)} replaced, {len(self.unchanged)} unchanged; "
            f"{self.nodes_written} nodes written in {self.seconds:.1f}s"
        )
        if self.summarizer:
            text += f"; summariser: {self.summarizer.get('summary', self.summarizer)}"
        return text


class Ingestor:
    """Builds, vectorises and writes document trees into one store (one writer at a time)."""

    def __init__(self, store: NodeStore, config: BuildConfig, summarizer: Any, vectorizer: Vectorizer) -> None:
        self.store = store
        self.config = config
        self.summarizer = summarizer
        self.vectorizer = vectorizer
        self.lock = threading.RLock()

    def add_documents(self, documents: Iterable[Document], progress: Optional[Progress] = None) -> IngestReport:
        """Every document is checked before anything is written, so bad input loses nothing stored.

        ``progress(phase, done, total)`` hears the phases of each chunk of documents (``building``,
        ``embedding``, ``writing``). A callback with the attribute ``wants_pages = True`` (the
        CLI's) also hears ``pages`` over the whole call: pages written out of the pages of every
        changed document (:func:`page_count`), advancing within a chunk as its texts are encoded,
        so it can show pages/s and the time left. (Opt-in: callbacks written for the three phases
        keep seeing only those.)
        """
        started = time.perf_counter()
        self._check_writable()
        docs = [self._stamped(d) for d in validate_documents(documents)]
        report = IngestReport()
        track = getattr(self.summarizer, "track", None)
        identity = self._identity()
        with self.lock, (track() if callable(track) else contextlib.nullcontext()) as cost:
            stored = self._stored_roots([d.id for d in docs])
            existing = {doc_id: root.doc_hash for doc_id, root in stored.items()}
            # Unchanged documents are skipped before any building or encoding (one hash each).
            hashes = [document_hash(d, self.config, identity) for d in docs]
            todo = [(d, h) for d, h in zip(docs, hashes) if self.triage(d.id, h, existing, report)]
            self._restamp([d for d, h in zip(docs, hashes) if existing.get(d.id) == h and h], stored)
            pages = _PageProgress(progress if getattr(progress, "wants_pages", False) else None,
                                  sum(page_count(d) for d, _ in todo))
            for start in range(0, len(todo), _INGEST_CHUNK_DOCS):
                chunk = [d for d, _ in todo[start : start + _INGEST_CHUNK_DOCS]]
                self._ingest_chunk(chunk, report, progress, pages, done_before=start, total=len(todo))
            self._sweep_after_ingest(report)
        if cost is not None and hasattr(cost, "as_dict"):
            report.summarizer = {**cost.as_dict(), "summary": str(cost)}
        report.seconds = time.perf_counter() - started
        log.info("ingest: %s", report)
        return report

    def _ingest_chunk(self, docs: List[Document], report: IngestReport, progress: Optional[Progress],
                      pages: "_PageProgress", done_before: int, total: int) -> None:
        timer = _PhaseTimer(report)
        summarizer = _TimedSummarizer(self.summarizer)
        with timer("building"):
            fresh = build_document_trees(docs, self.config, summarizer)
        # The summariser runs inside the build: its share is a phase of its own.
        report.phase_seconds["building"] -= summarizer.seconds
        if summarizer.seconds:
            report.phase_seconds["summarising"] = report.phase_seconds.get("summarising", 0.0) + summarizer.seconds
        if progress:
            progress("building", done_before + len(docs), total)
        chunk_pages = sum(page_count(d) for d in docs)

        def tick(phase: str, done: int, of: int) -> None:
            if progress:
                progress(phase, done, of)
                if phase == "embedding" and of:
                    pages.advance(chunk_pages * done / of)

        replaced = set(report.replaced)
        known = self._stored_vectors([d.id for d in docs if d.id in replaced])
        records = self.vectorizer.records([n for t in fresh for n in t.nodes], tick if progress else None,
                                          timer=timer, known=known)
        with timer("writing"):
            self.write_trees(fresh, records, progress)
        report.nodes_written += len(records)
        report.pages += chunk_pages
        pages.finish_chunk(chunk_pages)

    def _stored_vectors(self, doc_ids: Sequence[str]) -> Dict[str, Any]:
        """The dense vectors of the stored trees being replaced, by the text they encode: a new
        version re-encodes only its changed texts (a chunk added to a 300-page source encodes the
        chunk and the summaries above it, not the 300 pages)."""
        if not doc_ids:
            return {}
        return self.vectorizer.reusable(self.store.scroll_dense(filters=_docs_filter(doc_ids)))

    def add_nodes(self, nodes: Sequence[TreeNode], progress: Optional[Progress] = None) -> IngestReport:
        """Index pre-built trees: every document's full node set, checked before anything is written."""
        started = time.perf_counter()
        self._check_writable()
        report = IngestReport()
        trees = trees_from_nodes(nodes)
        with self.lock:
            existing = self.existing_hashes([t.doc_id for t in trees])
            fresh = [t for t in trees if self.triage(t.doc_id, t.doc_hash, existing, report)]
            if fresh:
                timer = _PhaseTimer(report)
                records = self.vectorizer.records([n for t in fresh for n in t.nodes], progress, timer=timer)
                with timer("writing"):
                    self.write_trees(fresh, records, progress)
                report.nodes_written = len(records)
                report.pages = sum(1 for t in fresh for n in t.nodes if n.is_leaf)
            self._sweep_after_ingest(report)
        report.seconds = time.perf_counter() - started
        return report

    def _check_writable(self) -> None:
        """A store opened read-only (an index of a newer format) refuses before any work is done."""
        reason = getattr(self.store, "read_only", None)
        if reason:
            raise StoreError(reason)

    @staticmethod
    def triage(doc_id: str, new_hash: str, existing: Dict[str, str], report: IngestReport) -> bool:
        """The one change check: True (and listed as added or replaced) when the document must be
        written; False (listed unchanged) when its stored version has this hash. An empty hash
        never counts as unchanged."""
        old = existing.get(doc_id)
        if old is not None and new_hash and old == new_hash:
            report.unchanged.append(doc_id)
            return False
        (report.replaced if old is not None else report.added).append(doc_id)
        return True

    def _identity(self) -> str:
        return getattr(self.summarizer, "identity", type(self.summarizer).__name__)

    def build_key(self) -> str:
        """What, besides a file's content, shapes its tree: the build settings and the summariser."""
        return hashlib.sha1(f"{self.config.fingerprint()}|{self._identity()}".encode()).hexdigest()[:12]

    def _stamped(self, doc: Document) -> Document:
        """A loaded file's document with the build key after its stamp (see :meth:`file_stamps`)."""
        stamp = doc.metadata.get(FILE_STAMP_KEY)
        if not isinstance(stamp, str) or not stamp:
            return doc
        return replace(doc, metadata={**doc.metadata, FILE_STAMP_KEY: f"{stamp.split('|', 1)[0]}|{self.build_key()}"})

    def file_stamps(self, doc_ids: Sequence[str]) -> Dict[str, str]:
        """doc_id -> the file stamp (``"<size>:<mtime_ns>"``) of the stored documents among
        ``doc_ids`` whose tree was built with today's settings (no texts: the stamp and version of
        each root, ``NodeStore.root_stamps``). A document built with other settings (or not from a
        file) has none: its file must be read again."""
        if not doc_ids:
            return {}
        suffix = f"|{self.build_key()}"
        cut = -len(suffix)
        return {doc_id: stamp[:cut] for doc_id, stamp in self.store.root_stamps(doc_ids).items()
                if stamp.endswith(suffix)}

    def _stored_roots(self, doc_ids: Sequence[str]) -> Dict[str, TreeNode]:
        """doc_id -> the stored root (light: the walk's fields and the file stamp), one request."""
        if not doc_ids:
            return {}
        ids = [i for d in doc_ids for i in root_ids(d)]
        return {node.doc_id: node for node in self.store.retrieve_roots(ids) if node.level == 0}

    def existing_hashes(self, doc_ids: Sequence[str]) -> Dict[str, str]:
        """doc_id -> doc_hash of the documents whose root is stored (one request, no texts)."""
        return {doc_id: root.doc_hash for doc_id, root in self._stored_roots(doc_ids).items()}

    def _restamp(self, unchanged: Sequence[Document], stored: Dict[str, TreeNode]) -> None:
        """An unchanged document read again because its file's stamp moved (touched, copied back):
        store the new stamp on its root, so the next re-ingest does not read it again."""
        for doc in unchanged:
            stamp = doc.metadata.get(FILE_STAMP_KEY)
            root = stored.get(doc.id)
            if isinstance(stamp, str) and root is not None and root.metadata.get(FILE_STAMP_KEY) != stamp:
                self.store.set_root_metadata(root.id, {FILE_STAMP_KEY: stamp})

    def write_trees(self, trees: List[DocumentTree], records: List[Any], progress: Optional[Progress]) -> None:
        """Replace each tree's document in turn: its old nodes go, then its body, then its root."""
        by_id = {r.node.id: r for r in records}
        # The root is a tree's commit point: nothing is written after it, so a stored root always
        # means one whole tree of one version. Per document, first all its nodes go (a changed
        # document's old tree, or the rootless leftovers of an interrupted ingest), then its body,
        # then its root, so a document being replaced is invisible only while its own nodes are
        # written: an ingest killed there hides that one document until the re-run (writing the
        # batch's deletes, bodies and roots in three passes hid up to the whole 64-document batch).
        # The store notes the batch's documents as pending first (one file write per batch), so a
        # crash anywhere in here leaves rootless nodes only where the next ingest's sweep looks.
        total = len(records)
        written = 0
        with self.store.writing([t.doc_id for t in trees]):
            for tree in trees:
                self.store.delete_nodes(tree.doc_id)
                self.store.upsert([by_id[n.id] for n in tree.nodes])  # deepest first, the root last
                written += len(tree.nodes)
                if progress:
                    progress("writing", written, total)

    def sweep_orphans(self) -> OrphanSweep:
        """Delete the nodes of every document that has nodes but no root, and say what went.

        The root is a tree's commit point (written last, deleted first), so a rootless document is
        the leftover of an ingest or delete cut short: no search reaches it, yet it takes space and
        ``docs delete`` cannot name it. One light listing of every node (no text), then the store's
        own delete path per rootless document (root-first, though there is none). This is the
        thorough check (``docs gc``); an ingest runs :meth:`sweep_pending` instead.
        """
        self._check_writable()
        with self.lock:
            nodes: Dict[str, int] = {}
            rooted = set()
            for node in self.store.scroll_nodes(with_text=False):
                nodes[node.doc_id] = nodes.get(node.doc_id, 0) + 1
                if node.level == 0:
                    rooted.add(node.doc_id)
            orphans = sorted(d for d in nodes if d not in rooted)
            for doc_id in orphans:
                self.store.delete_nodes(doc_id)
            self.store.sync_roots()  # a write cut between a root and its copy: copy it now
            if self.store.pending is not None:
                self.store.pending.reset()  # every node was seen: nothing else can be rootless
        return self._swept(orphans, sum(nodes[d] for d in orphans))

    def sweep_pending(self) -> OrphanSweep:
        """:meth:`sweep_orphans` over the documents the store lists as mid-write only.

        Every rootless document is among them (``store/pending.py``), so this finds what the full
        listing finds, at the cost of what changed: nothing pending (the usual case) is one set
        lookup; else one fetch of their roots and one count per rootless one. A store without that
        list, or a folder written before it existed, gets the full listing (once, for the folder).
        """
        pending = self.store.pending
        if pending is None or not pending.known:
            return self.sweep_orphans()
        with self.lock:
            suspects = sorted(pending.snapshot())
            if not suspects:
                return OrphanSweep()
            rooted = set(self.existing_hashes(suspects))
            if rooted:
                # A write or delete cut between a root and its copy in the roots' collection.
                self.store.sync_roots()
            orphans, count = [], 0
            for doc_id in suspects:
                if doc_id in rooted:
                    continue
                left = len(self.store.scroll_nodes(filters=_doc_filter(doc_id), with_text=False))
                if left:
                    orphans.append(doc_id)
                    count += left
                    self.store.delete_nodes(doc_id)
            pending.end(suspects)
        return self._swept(orphans, count)

    @staticmethod
    def _swept(orphans: List[str], nodes: int) -> OrphanSweep:
        sweep = OrphanSweep(doc_ids=orphans, nodes=nodes)
        if orphans:
            log.info("removed %d rootless node(s) of %d document(s): %s", sweep.nodes, len(orphans), orphans)
        return sweep

    def _sweep_after_ingest(self, report: IngestReport) -> None:
        # Only on a store one process owns (Edge, local mode, memory): on a shared server another
        # writer's tree is rootless until its root lands, and a sweep would delete it mid-write.
        if getattr(self.store, "engine", None) == "server":
            return
        # The pending list makes this proportional to what changed (nothing pending: ~0 s); the
        # full listing it replaced cost ~0.19 s per 1,000 nodes on Edge on every ingest.
        started = time.perf_counter()
        report.orphans_removed = self.sweep_pending().nodes
        report.phase_seconds["sweeping"] = time.perf_counter() - started

    def delete_document(self, doc_id: str) -> bool:
        """Remove a document's whole tree. Returns False if it was not indexed."""
        if not isinstance(doc_id, str) or not doc_id:
            raise InvalidDocumentError(f"doc_id must be a non-empty string, got {doc_id!r}.")
        self._check_writable()
        with self.lock:
            known = doc_id in self.existing_hashes([doc_id])
            # Delete even when the root is missing: that clears what an interrupted ingest left.
            self.store.delete_nodes(doc_id)
        return known

    def apply(self, documents: Sequence[Document], deletes: Sequence[str] = (),
              progress: Optional[Progress] = None) -> IngestReport:
        """Give ``documents`` their new version and remove the documents ``deletes`` names, so that
        a crash at any step leaves each document's old tree or its new one, never less.

        Everything is checked first (bad input writes nothing, the journal included); then each
        document's new version (or its removal) is written to the store's journal
        (:mod:`~drag_knee_retriever.store.journal`), the trees are replaced, and the journal entries
        go. A write cut short (a kill, a failed engine write) leaves its entries: the next
        :meth:`apply` and the next open of the index replay them. What the vector stores' adds
        and deletes run, under :attr:`lock` with their read of the stored members.
        """
        self._check_writable()
        docs = validate_documents(documents)
        kept = {doc.id for doc in docs}
        gone = [d for d in dict.fromkeys(deletes) if d not in kept]
        for doc_id in gone:
            if not isinstance(doc_id, str) or not doc_id:
                raise InvalidDocumentError(f"doc_id must be a non-empty string, got {doc_id!r}.")
        journal = self.store.journal
        with self.lock:
            self._replay_quietly()
            changes: Dict[str, Optional[Document]] = {d.id: d for d in docs}
            changes.update({doc_id: None for doc_id in gone})
            tokens = journal.record(changes) if journal is not None and changes else {}
            try:
                report = self.add_documents(docs, progress) if docs else IngestReport()
                for doc_id in gone:
                    self.delete_document(doc_id)
            except Exception:
                # Cut short (a failed engine write): finish it now if the store lets us, so the
                # documents are not left without a tree until the next write. The error still
                # reaches the caller, who may retry (the same write again changes nothing).
                if tokens:
                    self._replay_quietly()
                raise
            if tokens:
                journal.clear(tokens)  # type: ignore[union-attr]
        return report

    def _replay_quietly(self) -> None:
        try:
            self.replay_journal()
        except Exception as exc:  # the entries stay for the next write or open
            log.warning("could not finish an earlier unfinished document write (%s); the next write tries again", exc)

    def replay_journal(self) -> int:
        """Finish the writes a crash or an error cut short (see :meth:`apply`): each journaled
        document gets the version its write was giving it. Returns how many were replayed.

        An entry that cannot be built (its document is refused: the write failed before it
        touched that document's tree) is dropped with a warning; after any other error (the store,
        the encoder) every entry stays for the next try."""
        journal = self.store.journal
        if journal is None or not journal or getattr(self.store, "read_only", None):
            return 0
        with self.lock:
            entries = journal.entries()
            if not entries:
                return 0
            tokens = {e.doc_id: e.token for e in entries}
            try:
                docs = [e.document for e in entries if e.document is not None]
                if docs:
                    self.add_documents(docs)
                for entry in entries:
                    if entry.document is None:
                        self.delete_document(entry.doc_id)
            except (InvalidDocumentError, ConfigError) as exc:
                journal.clear(tokens)
                log.warning("dropped the unfinished write(s) of %s: %s", sorted(tokens)[:10], exc)
                raise
            journal.clear(tokens)
            log.warning("finished %d document write(s) an earlier process or call left unfinished: %s",
                        len(entries), sorted(tokens)[:10])
            return len(entries)


class _PhaseTimer:
    """``with timer("dense"): ...`` adds the block's wall time to ``report.phase_seconds``."""

    def __init__(self, report: IngestReport) -> None:
        self.report = report

    @contextlib.contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - started
            self.report.phase_seconds[phase] = self.report.phase_seconds.get(phase, 0.0) + spent


class _TimedSummarizer:
    """The summariser, with the time its ``describe`` calls take (they run inside the build)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.seconds = 0.0

    def describe(self, requests: Sequence[Any]) -> List[Any]:
        started = time.perf_counter()
        try:
            return self._inner.describe(requests)
        finally:
            self.seconds += time.perf_counter() - started

    @property
    def identity(self) -> str:
        # The builder's own fallback for a summariser without one, so node hashes do not change.
        return getattr(self._inner, "identity", type(self._inner).__name__)

    def __getattr__(self, name: str) -> Any:  # keywords_from_text, track, ... as the summariser has them
        return getattr(self._inner, name)


#: Characters of a text document counted as one page (about a printed page of prose).
TEXT_PAGE_CHARS = 3_000


def page_count(doc: Document) -> int:
    """A document's pages for throughput and progress: its pages, or for a text document one per
    :data:`TEXT_PAGE_CHARS` characters (at least one)."""
    if doc.pages is not None:
        return len(doc.pages)
    return max(1, -(-len(doc.text or "") // TEXT_PAGE_CHARS))


class _PageProgress:
    """Reports ``("pages", done, total)``: finished chunks plus the encoded share of the current one."""

    def __init__(self, progress: Optional[Progress], total: int) -> None:
        self.progress = progress
        self.total = total
        self.done = 0
        self.reported = -1
        if total:
            self._report(0)  # the clock of a caller's pages/s starts here

    def advance(self, within_chunk: float) -> None:
        self._report(min(self.total, self.done + int(within_chunk)))

    def finish_chunk(self, pages: int) -> None:
        self.done += pages
        self._report(self.done)

    def _report(self, done: int) -> None:
        if self.progress and done != self.reported:
            self.reported = done
            self.progress("pages", done, self.total)


def _doc_filter(doc_id: str) -> Any:
    return parse_filters({"doc_id": doc_id})


def _docs_filter(doc_ids: Sequence[str]) -> Any:
    return parse_filters({"doc_id": {"$in": list(doc_ids)}})


def trees_from_nodes(nodes: Sequence[TreeNode]) -> List[DocumentTree]:
    """Group pre-built nodes into one tree per document (deepest first, root last), checked whole."""
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
    return trees


def validate_documents(documents: Iterable[Document]) -> List[Document]:
    """The documents as a list, refused whole (nothing written) if any item is bad or an id repeats."""
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
