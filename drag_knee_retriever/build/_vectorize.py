"""Which text feeds which vector of a node, and the vectors themselves.

A node gets one dense vector and one BM25 vector. :class:`BuildConfig` says what they encode
(``leaf_text``, ``inner_vectors``, ``sparse_text``, ``inner_sparse``); the summariser says, through
its ``keywords_from_text`` attribute (see :class:`~drag_knee_retriever.build._summarize.Summarizer`),
whether its keywords add words the text lacks, which decides ``sparse_text="auto"``.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any, Callable, ContextManager, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from drag_knee_retriever.config import BuildConfig
from drag_knee_retriever.embeddings import Encoder
from drag_knee_retriever.model._nodes import TreeNode
from drag_knee_retriever.store import NodeRecord

Progress = Callable[[str, int, int], None]
Timer = Callable[[str], ContextManager[None]]


def _no_timer(phase: str) -> ContextManager[None]:
    return contextlib.nullcontext()


def summarizer_keywords_from_text(summarizer: object) -> bool:
    """Whether a summariser's keywords are words of the node's text already (default: no, as an
    LLM's are; a summariser that does not say is treated like one)."""
    return bool(getattr(summarizer, "keywords_from_text", False))


def titled(title: Optional[str], text: str) -> str:
    """A text with its section heading in front (headings often hold the words a question uses)."""
    return f"{title}\n{text}" if title else text


def leaf_context(node: TreeNode) -> Optional[str]:
    """What a leaf's vectors read in front of its text: its context path when the builder wrote
    one (``BuildConfig.leaf_context``), else its section title."""
    return node.context if node.context is not None else node.title


class Vectorizer:
    """Turns built nodes into :class:`NodeRecord` objects (dense + BM25 vectors) for the store."""

    def __init__(self, config: BuildConfig, encoder: Encoder, summarizer: object) -> None:
        self.config = config
        self.encoder = encoder
        self.summarizer = summarizer

    def records(self, nodes: Sequence[TreeNode], progress: Optional[Progress] = None,
                timer: Optional[Timer] = None, known: Optional[Mapping[str, np.ndarray]] = None) -> List[NodeRecord]:
        """Dense and BM25 vectors for nodes (children always precede their parents in ``nodes``).

        ``timer(phase)``, if given, is entered around the ``"dense"`` and ``"bm25"`` encodings
        (the ingest's phase times). ``known``: dense vectors of stored nodes by vector key
        (:meth:`reusable`): a node with the same key gets that vector and is not encoded again."""
        timer = timer or _no_timer
        dense_texts = [self.dense_text(n) for n in nodes]
        with timer("dense"):
            vectors = self._dense_vectors(nodes, dense_texts, progress,
                                          vector_keys(nodes, dense_texts) if known else {}, known or {})
        with timer("bm25"):
            sparse = self.encoder.encode_sparse(self.sparse_texts(nodes, dense_texts))
        return [
            NodeRecord(node=node, dense=vectors[node.id], sparse_indices=s[0], sparse_values=s[1])
            for node, s in zip(nodes, sparse)
        ]

    def reusable(self, stored: Sequence[Tuple[TreeNode, Optional[Sequence[float]]]]) -> Dict[str, np.ndarray]:
        """Stored nodes (whole trees) with their dense vectors -> ``{vector key: vector}`` for
        :meth:`records`' ``known`` (see :func:`vector_keys`)."""
        nodes = [node for node, _ in stored]
        keys = vector_keys(nodes, [self.dense_text(n) for n in nodes])
        return {keys[node.id]: np.asarray(vector, dtype=np.float32)
                for node, vector in stored if vector is not None and node.id in keys}

    def dense_inputs(self, nodes: Sequence[TreeNode]) -> List[str]:
        """Exactly the texts :meth:`records` gives the dense encoder for ``nodes`` (inner nodes
        with ``inner_vectors="centroid"`` are not encoded): what a throughput floor must time."""
        return [self.dense_text(nodes[i]) for i in self._encoded_positions(nodes)]

    def _encoded_positions(self, nodes: Sequence[TreeNode]) -> List[int]:
        mode = self.config.vectors.inner_dense
        return [i for i, n in enumerate(nodes) if n.is_leaf or mode in ("summary", "both")]

    def dense_text(self, node: TreeNode) -> str:
        """What a node's dense vector encodes (an inner node: its description)."""
        if not node.is_leaf:
            return node.text
        mode = self.config.vectors.leaf_dense
        if mode == "description" and node.description:
            return node.description
        # A leaf is indexed with its section heading in front (headings are titles, not leaf text,
        # and often hold the very words a question uses); the text returned stays the leaf's own.
        text = titled(leaf_context(node), node.text)
        if mode == "own+description" and node.description:
            return f"{text}\n\n{node.description}"
        return text

    def sparse_texts(self, nodes: Sequence[TreeNode], dense_texts: Sequence[str]) -> List[str]:
        """What every node's BM25 vector encodes (children before parents in ``nodes``)."""
        span_texts: Dict[str, str] = {}
        if self.config.vectors.inner_sparse == "span":
            for node in nodes:  # children first, so a parent joins its children's span texts
                if node.is_leaf:
                    span_texts[node.id] = titled(leaf_context(node), node.text)
                else:
                    span_texts[node.id] = titled(node.title, "\n".join(span_texts[c] for c in node.child_ids))
        return [self._sparse_text(n, span_texts[n.id] if (not n.is_leaf and span_texts) else t)
                for n, t in zip(nodes, dense_texts)]

    def _sparse_text(self, node: TreeNode, text: str) -> str:
        mode = self.config.vectors.sparse
        if mode == "auto":
            # Keywords drawn from the text only double-count its words in BM25 (measured: README "Speed").
            mode = "text" if summarizer_keywords_from_text(self.summarizer) else "text+keywords"
        keywords = " ".join(node.keywords)
        if mode == "keywords" and keywords:
            return keywords
        if mode == "text+keywords" and keywords:
            return f"{text}\n{keywords}"
        return text

    def _dense_vectors(self, nodes: Sequence[TreeNode], dense_texts: Sequence[str], progress: Optional[Progress],
                       keys: Mapping[str, str], known: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Leaves: their encoded text. Inner nodes: the encoded summary, the normalised centroid of
        their children's vectors, or the normalised sum of both (``inner_vectors``). A node whose
        vector key is ``known`` takes that vector (the same batches as before when none is)."""
        mode = self.config.vectors.inner_dense
        reused = {i for i, n in enumerate(nodes) if known and keys.get(n.id) in known}
        needs_encoding = [i for i in self._encoded_positions(nodes) if i not in reused]
        encoded: Any = self.encoder.encode_dense(
            [dense_texts[i] for i in needs_encoding],
            progress=(lambda done, total: progress("embedding", done, total)) if progress else None,
        ) if needs_encoding else []
        slot = {i: row for row, i in enumerate(needs_encoding)}
        vectors: Dict[str, np.ndarray] = {}
        for i, node in enumerate(nodes):
            if i in reused:
                vector = known[keys[node.id]]
            elif node.is_leaf or mode == "summary":
                vector = encoded[slot[i]]
            else:
                centroid = np.mean([vectors[c] for c in node.child_ids], axis=0)
                centroid /= np.linalg.norm(centroid) or 1.0
                vector = centroid if mode == "centroid" else encoded[slot[i]] + centroid
                vector = vector / (np.linalg.norm(vector) or 1.0)
            vectors[node.id] = vector
        return vectors


def vector_keys(nodes: Sequence[TreeNode], dense_texts: Sequence[str]) -> Dict[str, str]:
    """node id -> what its dense vector is a function of: a leaf's text as encoded; an inner
    node's encoded summary and its children's keys (its centroid). Equal keys, equal vectors, so a
    replaced tree's stored vectors serve the new tree's nodes of equal key. Nodes whose children
    are not all among ``nodes`` get no key."""
    by_id = {n.id: (n, t) for n, t in zip(nodes, dense_texts)}
    keys: Dict[str, str] = {}

    def key(node_id: str) -> Optional[str]:
        if node_id in keys:
            return keys[node_id]
        if node_id not in by_id:
            return None
        node, text = by_id[node_id]
        if node.is_leaf:
            value = "leaf\x1f" + text
        else:
            children = [key(c) for c in node.child_ids]
            if any(c is None for c in children):
                return None
            value = "inner\x1f" + text + "\x1f" + "\x1f".join(children)  # type: ignore[arg-type]
        keys[node_id] = hashlib.sha256(value.encode("utf-8")).hexdigest()
        return keys[node_id]

    for node in nodes:
        key(node.id)
    return keys
