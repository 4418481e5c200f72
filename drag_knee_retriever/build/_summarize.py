"""Node descriptions: the Summarizer protocol and the default extractive, LLM-free summariser.

The builder asks a summariser to describe nodes level by level, bottom-up: first the leaves (a
summariser may leave a leaf's text as it is and only add keywords), then each parent from its
children's descriptions. An LLM summariser (``drag_knee_retriever.llm``) plugs in here.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, runtime_checkable

import numpy as np

from drag_knee_retriever.config import BuildConfig


@dataclass(frozen=True)
class SummaryRequest:
    """What a summariser gets for one node.

    ``child_texts`` are the children's descriptions (their summaries, or the leaves' text);
    ``leaf_texts`` are the full texts of every leaf beneath the node, in document order (for a
    leaf: its own text). ``content_hash`` identifies the content (for caching).
    """

    node_id: str
    doc_id: str
    level: int
    is_leaf: bool
    child_texts: Tuple[str, ...]
    leaf_texts: Tuple[str, ...]
    content_hash: str
    title: Optional[str] = None
    metadata: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Summary:
    """A node's description (what dense search sees) and keywords (what BM25 sees in addition).

    ``text=None`` for a leaf means "keep the leaf's own text".
    """

    text: Optional[str]
    keywords: Tuple[str, ...] = ()


@runtime_checkable
class Summarizer(Protocol):
    """Describes nodes. ``describe`` receives one tree level's requests at a time, in order, and
    returns one :class:`Summary` per request (so implementations may batch or fan out).

    Optional attribute ``keywords_from_text: bool`` (default False when absent): True when the
    keywords are words of the node's own text, so ``BuildConfig(sparse_text="auto")`` leaves them
    out of BM25 (they would only double-count). It is not a protocol member, so summarisers
    written before it keep passing ``isinstance(x, Summarizer)``.
    """

    def describe(self, requests: Sequence[SummaryRequest]) -> List[Summary]:  # pragma: no cover - protocol
        ...

    @property
    def identity(self) -> str:  # pragma: no cover - protocol
        """A stable name of the summariser and its settings (recorded, and used in cache keys)."""
        ...


_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[\"'«(\[]?[A-ZА-ЯЁ0-9])")
# A word that ends with a full stop yet rarely ends a sentence: titles, Latin and reference
# abbreviations, and initials (one capital letter, so also each letter of "U.S." or "J. R. R.").
# "Dr. Smith met Mr. Jones in the U.S. Army." is one sentence; the price is that a sentence that
# really ends in one capital letter ("... vitamin D. Then") runs on into the next one.
_ABBREVIATION = re.compile(
    r"(?:^|[\s(\[\"'.])(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|Gen|Col|Lt|Sgt|Capt|Gov|Rev|Hon|vs|al|cf|Fig|Figs|Eq|"
    r"No|Nos|Vol|pp|Inc|Ltd|Co|Corp|e\.g|i\.e|[A-ZА-ЯЁ])\.$"
)
_STOP = frozenset(
    """a an the and or but if then else of to in on at by for with from as is are was were be been being
    this that these those it its they them their there here we our you your he she his her not no nor so
    than too very can will just do does did doing have has had having into over under about after before
    between through during above below up down out off again further once all any both each few more most
    other some such only own same also may might must shall should would could which who whom whose what
    when where why how i me my myself et al fig figure table using used use however thus therefore
    и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было вот
    от меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас нибудь опять
    уж вам ведь там потом себя ничего ей может они тут где есть надо ней для мы тебя их чем была сам чтобы без
    будто чего раз тоже себе под будет ж тогда кто этот того потому этого какой совсем ним здесь этом один почти
    мой тем чтобы нее сейчас были куда зачем всех никогда можно при наконец два об другой хоть после над больше
    тот через эти нас про всего них какая много разве три эту моя впрочем хорошо свою этой перед иногда лучше
    чуть том нельзя такой им более всегда конечно всю между это также""".split()
)


def ends_in_abbreviation(text: str, end: int) -> bool:
    """Whether ``text[:end]`` ends in an abbreviation or an initial ("Dr.", "e.g.", "J.", the "S." of
    "U.S."): a full stop there ends no sentence."""
    return bool(_ABBREVIATION.search(text[max(0, end - 8) : end]))


def split_sentences(text: str) -> List[str]:
    """Split text into sentences (a simple rule that works for English and Russian prose).

    A sentence ends at a line break, or at ``.``, ``!``, ``?`` or ``…`` followed by a space and a
    capital letter or digit, except after an abbreviation or initial (:func:`ends_in_abbreviation`).
    A rule, not a trained splitter: NLTK's punkt measured the same recall at 10-30x the time (see
    ``benchmarks/RESULTS.md``, "Sentence and section splitters").
    """
    parts: List[str] = []
    for block in re.split(r"\n\s*\n|\n", text):
        block = block.strip()
        start = 0
        for end in _SENTENCE_END.finditer(block):
            if not ends_in_abbreviation(block, end.start()):
                parts.append(block[start : end.start()].strip())
                start = end.end()
        parts.append(block[start:].strip())
    return [p for p in parts if p]


def tokenize(text: str) -> List[str]:
    """Lower-cased word tokens without stop words (for keywords and centrality)."""
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if len(w) > 2 and w not in _STOP]


class ExtractiveSummarizer:
    """The default, LLM-free summariser.

    An inner node's description is its most central sentences: sentences of the subtree are
    scored by TF-IDF cosine similarity to the subtree's centroid, picked greedily with a diversity
    penalty (maximal marginal relevance), kept in document order and capped at
    ``BuildConfig.summary.max_chars``. Keywords are the terms most distinctive of the subtree (TF-IDF against
    the other nodes of the same level of the document). Leaves keep their own text and get keywords.
    """

    #: Its keywords are words of the text (see :class:`Summarizer`): BM25 indexes the text alone.
    keywords_from_text = True

    def __init__(self, config: Optional[BuildConfig] = None, *, diversity: float = 0.5) -> None:
        self.config = config or BuildConfig()
        self.diversity = diversity

    @property
    def identity(self) -> str:
        c = self.config
        return f"extractive(s={c.summary.sentences},chars={c.summary.max_chars},kw={c.summary.keywords},div={self.diversity})"

    def describe(self, requests: Sequence[SummaryRequest]) -> List[Summary]:
        # Keywords are distinctive against the node's siblings at the same level of the same document.
        token_lists = [tokenize(" ".join(r.leaf_texts)) for r in requests]
        doc_freq: Dict[str, Counter] = {}
        doc_sizes: Counter = Counter()
        for r, tokens in zip(requests, token_lists):
            doc_freq.setdefault(r.doc_id, Counter()).update(set(tokens))
            doc_sizes[r.doc_id] += 1
        out: List[Summary] = []
        for r, tokens in zip(requests, token_lists):
            keywords = self._keywords(tokens, doc_freq[r.doc_id], doc_sizes[r.doc_id])
            if r.is_leaf:
                out.append(Summary(text=None, keywords=keywords))
            else:
                out.append(Summary(text=self._central_sentences(r), keywords=keywords))
        return out

    def _keywords(self, tokens: Sequence[str], df: Counter, n_docs: int) -> Tuple[str, ...]:
        if not tokens or self.config.summary.keywords == 0:
            return ()
        tf = Counter(tokens)
        scored = sorted(
            tf.items(),
            key=lambda kv: (-(1 + math.log(kv[1])) * math.log((1 + n_docs) / (1 + df.get(kv[0], 0)) + 1.0), kv[0]),
        )
        return tuple(word for word, _ in scored[: self.config.summary.keywords])

    def _central_sentences(self, request: SummaryRequest) -> str:
        cfg = self.config
        sentences = [s for text in request.leaf_texts for s in split_sentences(text)]
        if not sentences:
            return ""
        # Very long subtrees: bound the work by sampling sentences evenly across the span.
        if len(sentences) > 400:
            step = len(sentences) / 400.0
            sentences = [sentences[int(i * step)] for i in range(400)]
        token_lists = [tokenize(s) for s in sentences]
        vocab: Dict[str, int] = {}
        for tokens in token_lists:
            for t in tokens:
                vocab.setdefault(t, len(vocab))
        if not vocab:
            return _cap(" ".join(sentences[: cfg.summary.sentences]), cfg.summary.max_chars)
        matrix = np.zeros((len(sentences), len(vocab)), dtype=np.float32)
        for i, tokens in enumerate(token_lists):
            for t, c in Counter(tokens).items():
                matrix[i, vocab[t]] = 1.0 + math.log(c)
        df = (matrix > 0).sum(axis=0)
        matrix *= np.log((1 + len(sentences)) / (1 + df)) + 1.0
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        matrix /= norms
        centroid = matrix.mean(axis=0)
        centroid /= np.linalg.norm(centroid) or 1.0
        relevance = matrix @ centroid
        chosen: List[int] = []
        budget = cfg.summary.max_chars
        candidates = set(range(len(sentences)))
        while candidates and len(chosen) < cfg.summary.sentences:
            if chosen:
                redundancy = (matrix[list(candidates)] @ matrix[chosen].T).max(axis=1)
            else:
                redundancy = np.zeros(len(candidates))
            order = list(candidates)
            mmr = (1 - self.diversity) * relevance[order] - self.diversity * redundancy
            best = order[int(np.argmax(mmr))]
            candidates.discard(best)
            if len(sentences[best]) > budget and chosen:
                continue
            chosen.append(best)
            budget -= len(sentences[best]) + 1
            if budget <= 0:
                break
        text = " ".join(sentences[i] for i in sorted(chosen))
        if request.title:
            text = f"{request.title}. {text}"
        return _cap(text, cfg.summary.max_chars)


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"
