"""The framework-free core of the LLM summarisers.

:class:`LLMSummarizer` implements the :class:`~drag_knee_retriever.summarize.Summarizer` protocol on
top of any :class:`ChatBackend` (an object with an ``identity`` and an async ``acall(messages)``).
It owns everything that does not depend on LangChain or LlamaIndex: the prompts, parsing and
validation of answers, bounded retries, the per-node LLM-free fallback, the cache, the bounded
async fan-out and the report. The adapters in :mod:`drag_knee_retriever.llm.langchain` and
:mod:`drag_knee_retriever.llm.llamaindex` only convert messages and answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import threading
import time
import weakref
from dataclasses import asdict, dataclass, field
from typing import (
    Any,
    Awaitable,
    Dict,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    runtime_checkable,
)

from ..config import BuildConfig
from ..errors import InvalidOutputError, SummarizerError
from ..summarize import ExtractiveSummarizer, Summarizer, Summary, SummaryRequest
from .cache import SummaryCache
from .prompts import DEFAULT_PROMPTS, SCHEMA_VERSION, SummaryPrompts, fill

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: A chat message as the core builds it: ``(role, text)`` with role ``"system"``, ``"user"`` or
#: ``"assistant"``.
PromptMessage = Tuple[str, str]

_MAX_FAILURE_SAMPLES = 10




@dataclass(frozen=True)
class Usage:
    """Tokens one model call consumed, as the model reported them."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class ModelReply:
    """What a backend returns for one call.

    ``output`` is the structured answer when the framework parsed one (a dict or a pydantic
    object), else ``None``; ``text`` is the answer's raw text (parsed as JSON when ``output`` is
    ``None``, and quoted back to the model in the repair message); ``usage`` is ``None`` when the
    model did not report tokens; ``error`` is a parsing error the framework reported.
    """

    output: Any = None
    text: str = ""
    usage: Optional[Usage] = None
    error: Optional[str] = None


@runtime_checkable
class ChatBackend(Protocol):
    """A model the core can call: a stable ``identity`` (part of cache keys) and one async call."""

    @property
    def identity(self) -> str:  # pragma: no cover - protocol
        ...

    async def acall(self, messages: Sequence[PromptMessage]) -> ModelReply:  # pragma: no cover - protocol
        ...


@dataclass
class SummarizerReport:
    """What describing cost: counted per ``describe`` call and accumulated over a summariser's life.

    - ``requests``: nodes asked for; ``described``: nodes the model answered validly in this run;
      ``cache_hits``: nodes served from the cache; ``deduplicated``: identical nodes of one call
      served by a single answer; ``extractive``: leaves left to the LLM-free summariser on purpose
      (``describe_leaves=False``).
    - ``calls``: model calls including retries; ``retries``: calls after a node's first;
      ``failures``: failed calls, split into ``invalid_outputs``, ``errors`` (exceptions) and
      ``timeouts``; ``fallbacks``: nodes that got the LLM-free description after every attempt failed.
    - tokens: summed over the ``calls_with_usage`` calls whose model reported usage (0 otherwise).
    """

    requests: int = 0
    described: int = 0
    cache_hits: int = 0
    deduplicated: int = 0
    extractive: int = 0
    calls: int = 0
    retries: int = 0
    failures: int = 0
    invalid_outputs: int = 0
    errors: int = 0
    timeouts: int = 0
    fallbacks: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    calls_with_usage: int = 0
    max_in_flight: int = 0
    seconds: float = 0.0
    failure_samples: List[str] = field(default_factory=list)

    def add_usage(self, usage: Optional[Usage]) -> None:
        """Count one call's reported tokens."""
        if usage is None:
            return
        self.calls_with_usage += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.total_tokens += usage.total_tokens or (usage.input_tokens + usage.output_tokens)

    def note_failure(self, message: str) -> None:
        """Keep the first few failure messages for the report (and the logs)."""
        if len(self.failure_samples) < _MAX_FAILURE_SAMPLES:
            self.failure_samples.append(message)

    def merge(self, other: "SummarizerReport") -> None:
        """Add another report's counts to this one."""
        for name, value in asdict(other).items():
            if name == "failure_samples":
                for sample in other.failure_samples:
                    self.note_failure(sample)
            elif name == "max_in_flight":
                self.max_in_flight = max(self.max_in_flight, other.max_in_flight)
            else:
                setattr(self, name, getattr(self, name) + value)

    def copy(self) -> "SummarizerReport":
        """An independent copy."""
        clone = SummarizerReport()
        clone.merge(self)
        return clone

    def as_dict(self) -> Dict[str, Any]:
        """Plain data (for logs, JSON and the ingest report)."""
        return asdict(self)

    def __str__(self) -> str:
        tokens = (
            f"{self.total_tokens} tokens ({self.input_tokens} in, {self.output_tokens} out)"
            if self.calls_with_usage
            else "tokens not reported"
        )
        return (
            f"{self.requests} nodes: {self.described} described, {self.cache_hits} from cache, "
            f"{self.fallbacks} fallbacks, {self.extractive} extractive; {self.calls} calls "
            f"({self.retries} retries, {self.failures} failures: {self.invalid_outputs} invalid, "
            f"{self.errors} errors, {self.timeouts} timeouts); {tokens}; {self.seconds:.2f} s"
        )


# -- answer parsing and validation ----------------------------------------------------------------

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_SPACES = re.compile(r"\s+")
_KEYWORD_STRIP = "\"'`«»“”„#*•·-–—:;,. \t\n"


def parse_answer_text(text: str) -> Dict[str, Any]:
    """Parse a model's text answer into a JSON object (tolerating code fences and stray prose).

    Raises :class:`InvalidOutputError` saying whether the answer was prose or broken JSON.
    """
    stripped = (text or "").strip()
    if not stripped:
        raise InvalidOutputError("the answer was empty")
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        value = json.loads(stripped)
    except ValueError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start < 0:
            raise InvalidOutputError(
                f"the answer is prose, not a JSON object (it begins {stripped[:80]!r})"
            ) from None
        if end <= start:
            raise InvalidOutputError("the answer is broken JSON (an object is opened but never closed)") from None
        try:
            value = json.loads(stripped[start : end + 1])
        except ValueError as exc:
            raise InvalidOutputError(f"the answer is broken JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidOutputError(f"the answer is a JSON {type(value).__name__}, not an object")
    return value


def validate_answer(
    output: Any,
    text: str = "",
    *,
    max_keywords: int = 10,
    min_description_chars: int = 20,
    max_description_chars: int = 1500,
) -> Tuple[str, Tuple[str, ...]]:
    """Turn a model's answer into a clean ``(description, keywords)`` pair or raise
    :class:`InvalidOutputError`.

    ``output`` may be a dict, a pydantic object or a JSON string; when it is ``None`` the raw
    ``text`` is parsed. The description must be a non-empty string of at least
    ``min_description_chars`` characters (longer ones are cut at a word boundary); keywords must be
    a list of strings, of which at least one survives cleaning (quotes, bullets, duplicates and
    overlong entries are dropped; the first ``max_keywords`` are kept).
    """
    obj: Any = output if output is not None else text
    if hasattr(obj, "model_dump") and callable(obj.model_dump):
        obj = obj.model_dump()
    if isinstance(obj, str):
        obj = parse_answer_text(obj)
    if not isinstance(obj, Mapping):
        raise InvalidOutputError(f"the answer is a {type(obj).__name__}, not a JSON object")
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    if "description" not in lowered and "summary" in lowered:
        lowered["description"] = lowered["summary"]
    description = lowered.get("description")
    if description is None:
        raise InvalidOutputError(
            f"the object has no \"description\" field (fields: {', '.join(map(str, obj)) or 'none'})"
        )
    if not isinstance(description, str):
        raise InvalidOutputError(f"\"description\" is a {type(description).__name__}, not a string")
    description = _SPACES.sub(" ", description).strip()
    if not description:
        raise InvalidOutputError("\"description\" is empty")
    if len(description) < min_description_chars:
        raise InvalidOutputError(
            f"\"description\" is too short ({len(description)} characters, at least {min_description_chars} needed)"
        )
    keywords = lowered.get("keywords")
    if keywords is None:
        raise InvalidOutputError("the object has no \"keywords\" field")
    if not isinstance(keywords, (list, tuple)):
        raise InvalidOutputError(f"\"keywords\" is a {type(keywords).__name__}, not a list of strings")
    clean: List[str] = []
    seen = set()
    for item in keywords:
        if not isinstance(item, str):
            continue
        word = _SPACES.sub(" ", item).strip(_KEYWORD_STRIP)
        if not word or len(word) > 80:
            continue
        folded = word.casefold()
        if folded in seen:
            continue
        seen.add(folded)
        clean.append(word)
    if not clean:
        raise InvalidOutputError("\"keywords\" holds no usable keyword strings")
    return _cap(description, max_description_chars), tuple(clean[:max_keywords])


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"


def usage_from_mapping(data: Any) -> Optional[Usage]:
    """Read token usage from a mapping or object in any common shape (LangChain ``usage_metadata``,
    OpenAI ``usage``, Anthropic ``usage``); ``None`` when it holds no token counts."""
    if data is None:
        return None

    def pick(*names: str) -> Optional[int]:
        for name in names:
            value = data.get(name) if isinstance(data, Mapping) else getattr(data, name, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return int(value)
        return None

    prompt = pick("input_tokens", "prompt_tokens", "prompt_token_count", "input_token_count")
    completion = pick("output_tokens", "completion_tokens", "candidates_token_count", "output_token_count")
    total = pick("total_tokens", "total_token_count")
    if prompt is None and completion is None and total is None:
        return None
    prompt, completion = prompt or 0, completion or 0
    return Usage(input_tokens=prompt, output_tokens=completion, total_tokens=total if total is not None else prompt + completion)


# -- running coroutines from synchronous code ------------------------------------------------------


class _LoopThread:
    """One event loop in a daemon thread, kept for the summariser's life.

    ``describe`` is synchronous but the fan-out is async. Running every call on one persistent loop
    (instead of ``asyncio.run`` per call) works whether or not the caller's thread already runs a
    loop (Jupyter, an async web handler, a worker thread), and keeps async clients of remote models
    (httpx pools) bound to the same loop from one call to the next.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None

    def run(self, coro: Awaitable[T]) -> T:
        loop = self._ensure()
        if threading.current_thread() is self._thread:
            # Blocking on our own loop would deadlock.
            close = getattr(coro, "close", None)
            if close:
                close()
            raise RuntimeError(
                "describe() was called from inside the summariser's own event loop; "
                "use `await summarizer.adescribe(requests)` there instead."
            )
        future = asyncio.run_coroutine_threadsafe(coro, loop)  # type: ignore[arg-type]
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed() or not (self._thread and self._thread.is_alive()):
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=self._serve, args=(loop,), name="drag-knee-llm", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                loop.close()

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)


# -- the summariser ---------------------------------------------------------------------------------

CacheSetting = Union[bool, str, "os.PathLike[str]", SummaryCache, None]


class LLMSummarizer:
    """Node descriptions and keywords written by an LLM, with a per-node LLM-free fallback.

    Implements :class:`~drag_knee_retriever.summarize.Summarizer`. Leaves (pages) are described
    from their own text; parents from their children's descriptions (a generalising summary of the
    whole scope). Each node gets ``Summary(text=description, keywords=(...))``; which of them feeds
    the dense and the sparse vector is chosen by ``BuildConfig.leaf_text`` / ``sparse_text``.

    Use :class:`~drag_knee_retriever.llm.LangChainSummarizer` or
    :class:`~drag_knee_retriever.llm.LlamaIndexSummarizer` for a framework model; this class takes
    any :class:`ChatBackend`.

    Args:
        backend: the model (see :class:`ChatBackend`).
        prompts: prompt templates (:data:`~drag_knee_retriever.llm.prompts.DEFAULT_PROMPTS`).
        config: the index's :class:`BuildConfig`, used by the default fallback.
        fallback: the LLM-free summariser used for nodes whose every attempt failed (and for leaves
            when ``describe_leaves=False``); default :class:`ExtractiveSummarizer`.
        cache: ``True`` (in memory, default), ``False``/``None`` (off), a file path (``.json`` or
            SQLite for any other suffix) or a :class:`SummaryCache` (to share one).
        max_concurrency: model calls in flight at once.
        timeout: seconds per model call (``None``: no limit).
        max_retries: further calls after a node's first failed one (0 = no retry).
        retry_backoff: seconds before the first retry, doubled for each further one.
        min_keywords / max_keywords: the range the prompt asks for; at most ``max_keywords`` are
            kept and at least one valid keyword is required.
        describe_leaves: ``False`` asks the model for parents only (leaves keep their text and get
            extractive keywords), which cuts the calls to roughly a third with branching 3.
        language: ``"auto"`` (Cyrillic text is named Russian, other text "the language of the
            text") or a language name used verbatim in the prompt.
        max_input_chars: the longest input passed to the model per node (longer is cut).
        min_description_chars / max_description_chars: bounds on a valid description.
        on_failure: ``"fallback"`` (default) or ``"raise"`` (:class:`SummarizerError`).
    """

    def __init__(
        self,
        backend: ChatBackend,
        *,
        prompts: Optional[SummaryPrompts] = None,
        config: Optional[BuildConfig] = None,
        fallback: Optional[Summarizer] = None,
        cache: CacheSetting = True,
        max_concurrency: int = 4,
        timeout: Optional[float] = 120.0,
        max_retries: int = 2,
        retry_backoff: float = 0.5,
        min_keywords: int = 5,
        max_keywords: int = 10,
        describe_leaves: bool = True,
        language: str = "auto",
        max_input_chars: int = 12_000,
        min_description_chars: int = 20,
        max_description_chars: int = 1500,
        on_failure: Literal["fallback", "raise"] = "fallback",
    ) -> None:
        if not isinstance(backend, ChatBackend):
            raise TypeError(
                f"backend must have an `identity` and an async `acall(messages)`, got {type(backend).__name__}; "
                "use LangChainSummarizer(chat_model) or LlamaIndexSummarizer(llm) for a framework model."
            )
        _check_int("max_concurrency", max_concurrency, 1)
        _check_int("max_retries", max_retries, 0)
        _check_int("min_keywords", min_keywords, 1)
        _check_int("max_keywords", max_keywords, min_keywords)
        _check_int("max_input_chars", max_input_chars, 200)
        _check_int("min_description_chars", min_description_chars, 1)
        _check_int("max_description_chars", max_description_chars, max(50, min_description_chars))
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ValueError(f"timeout must be a number of seconds > 0 or None, got {timeout!r}.")
        if isinstance(retry_backoff, bool) or not isinstance(retry_backoff, (int, float)) or retry_backoff < 0:
            raise ValueError(f"retry_backoff must be a number of seconds >= 0, got {retry_backoff!r}.")
        if on_failure not in ("fallback", "raise"):
            raise ValueError(f"on_failure must be 'fallback' or 'raise', got {on_failure!r}.")
        if not isinstance(language, str) or not language.strip():
            raise ValueError(f"language must be 'auto' or a language name such as 'Russian', got {language!r}.")
        if prompts is not None and not isinstance(prompts, SummaryPrompts):
            raise TypeError(
                f"prompts must be a SummaryPrompts, got {type(prompts).__name__}; "
                "use DEFAULT_PROMPTS.replace(leaf=...) to change one template."
            )
        self.backend = backend
        self.prompts = prompts or DEFAULT_PROMPTS
        self.config = config or BuildConfig()
        self.fallback: Summarizer = fallback if fallback is not None else ExtractiveSummarizer(self.config)
        self.cache: Optional[SummaryCache] = _make_cache(cache)
        self.max_concurrency = max_concurrency
        self.timeout = float(timeout) if timeout is not None else None
        self.max_retries = max_retries
        self.retry_backoff = float(retry_backoff)
        self.min_keywords = min_keywords
        self.max_keywords = max_keywords
        self.describe_leaves = bool(describe_leaves)
        self.language = language.strip()
        self.max_input_chars = max_input_chars
        self.min_description_chars = min_description_chars
        self.max_description_chars = max_description_chars
        self.on_failure = on_failure
        self.report = SummarizerReport()
        self.last_report = SummarizerReport()
        self._report_lock = threading.Lock()
        self._trackers: List[SummarizerReport] = []
        self._semaphores: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]" = (
            weakref.WeakKeyDictionary()
        )
        self._in_flight = 0
        self._runner = _LoopThread()
        self._finalizer = weakref.finalize(self, self._runner.close)

    # -- identity -------------------------------------------------------------------------------

    @property
    def model_identity(self) -> str:
        """The backend's identity (part of every cache key)."""
        return str(self.backend.identity)

    @property
    def prompt_identity(self) -> str:
        """A hash of the prompts and every setting that changes the answer (part of every cache key)."""
        settings = json.dumps(
            [
                self.prompts.identity,
                SCHEMA_VERSION,
                self.min_keywords,
                self.max_keywords,
                self.language,
                self.max_input_chars,
                self.min_description_chars,
                self.max_description_chars,
            ]
        )
        return hashlib.sha256(settings.encode()).hexdigest()[:12]

    @property
    def identity(self) -> str:
        """``llm(model=..., prompts=..., leaves=llm|extractive)``: recorded with the index."""
        leaves = "llm" if self.describe_leaves else "extractive"
        return f"llm(model={self.model_identity},prompts={self.prompt_identity},leaves={leaves})"

    def cache_key(self, request: SummaryRequest) -> str:
        """The cache key of a node: its content (a leaf's content hash; a parent's children's
        descriptions), its title, the model identity and the prompt identity."""
        if request.is_leaf:
            content = request.content_hash or _hash_texts(request.leaf_texts)
            kind = "leaf"
        else:
            # A parent is described from its children's descriptions, so those are its content:
            # a changed child description re-describes the parent, an unchanged one does not.
            content = _hash_texts(request.child_texts or request.leaf_texts)
            kind = "parent"
        raw = "\x1f".join([SCHEMA_VERSION, self.model_identity, self.prompt_identity, kind, content, request.title or ""])
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()

    # -- prompts --------------------------------------------------------------------------------

    def build_messages(self, request: SummaryRequest) -> List[PromptMessage]:
        """The chat messages sent for one node (system + user)."""
        common = {"min_keywords": self.min_keywords, "max_keywords": self.max_keywords}
        title = f"Title: {request.title.strip()}\n" if request.title and request.title.strip() else ""
        if request.is_leaf:
            text = _clip("\n\n".join(t for t in request.leaf_texts if t), self.max_input_chars)
            user = fill(
                self.prompts.leaf,
                {**common, "title": title, "text": text, "language": self._language_of(text)},
            )
        else:
            children = [t for t in (request.child_texts or request.leaf_texts) if t and t.strip()]
            per_child = max(200, self.max_input_chars // max(1, len(children)))
            listing = "\n".join(f"[{i}] {_clip(_SPACES.sub(' ', t).strip(), per_child)}" for i, t in enumerate(children, 1))
            user = fill(
                self.prompts.parent,
                {
                    **common,
                    "title": title,
                    "children": listing,
                    "count": len(children),
                    "language": self._language_of(listing),
                },
            )
        return [("system", fill(self.prompts.system, common)), ("user", user)]

    def _language_of(self, text: str) -> str:
        if self.language.lower() != "auto":
            return self.language
        return detect_language(text)

    # -- describing -----------------------------------------------------------------------------

    def describe(self, requests: Sequence[SummaryRequest]) -> List[Summary]:
        """Describe one tree level's nodes (blocking); see :meth:`adescribe`."""
        requests = list(requests)
        if not requests:
            return []
        return self._runner.run(self.adescribe(requests))

    async def adescribe(self, requests: Sequence[SummaryRequest]) -> List[Summary]:
        """Describe nodes concurrently (at most ``max_concurrency`` model calls in flight).

        Returns one :class:`Summary` per request, in order. A node whose every attempt fails gets
        the fallback's description; the whole call never fails because of one node (unless
        ``on_failure="raise"``). Updates :attr:`last_report` and :attr:`report`.
        """
        requests = list(requests)
        report = SummarizerReport(requests=len(requests))
        started = time.perf_counter()
        results: List[Optional[Summary]] = [None] * len(requests)
        to_fallback: List[int] = []
        jobs: Dict[str, List[int]] = {}
        try:
            for i, request in enumerate(requests):
                if request.is_leaf and not self.describe_leaves:
                    to_fallback.append(i)
                    report.extractive += 1
                    continue
                key = self.cache_key(request)
                hit = self.cache.get(key) if self.cache is not None else None
                if hit is not None:
                    results[i] = Summary(text=hit[0], keywords=hit[1])
                    report.cache_hits += 1
                    continue
                jobs.setdefault(key, []).append(i)
            report.deduplicated = sum(len(idx) - 1 for idx in jobs.values())

            semaphore = self._semaphore()
            keys = list(jobs)
            answers = await asyncio.gather(
                *(self._describe_node(requests[jobs[k][0]], semaphore, report) for k in keys)
            )
            failed: List[SummaryRequest] = []
            for key, answer in zip(keys, answers):
                if answer is None:
                    to_fallback.extend(jobs[key])
                    report.fallbacks += len(jobs[key])
                    failed.append(requests[jobs[key][0]])
                    continue
                report.described += len(jobs[key])
                if self.cache is not None:
                    self.cache.put(key, answer[0], answer[1])
                for i in jobs[key]:
                    results[i] = Summary(text=answer[0], keywords=answer[1])
            if failed and self.on_failure == "raise":
                first = failed[0]
                raise SummarizerError(
                    f"{len(failed)} node(s) could not be described by {self.model_identity} after "
                    f"{1 + self.max_retries} attempts each (first: node {first.node_id} of document "
                    f"{first.doc_id!r}; failures: {'; '.join(report.failure_samples[:3])}). Check the "
                    "model and its credentials, raise timeout/max_retries, or use on_failure='fallback' "
                    "to give such nodes the LLM-free description."
                )
            if to_fallback:
                self._fill_fallbacks(requests, sorted(to_fallback), results)
        finally:
            if self.cache is not None:
                self.cache.flush()
            report.seconds = time.perf_counter() - started
            self._record(report)
        if report.fallbacks:
            logger.warning(
                "LLM summariser: %d of %d nodes fell back to the LLM-free description (%s).",
                report.fallbacks,
                report.requests,
                "; ".join(report.failure_samples[:3]),
            )
        logger.info("LLM summariser (%s): %s", self.model_identity, report)
        return [r if r is not None else Summary(text=None) for r in results]

    async def _describe_node(
        self, request: SummaryRequest, semaphore: asyncio.Semaphore, report: SummarizerReport
    ) -> Optional[Tuple[str, Tuple[str, ...]]]:
        base = self.build_messages(request)
        messages = list(base)
        attempts = 1 + self.max_retries
        last_error = ""
        for attempt in range(attempts):
            if attempt:
                report.retries += 1
                if self.retry_backoff:
                    await asyncio.sleep(self.retry_backoff * (2 ** (attempt - 1)))
            report.calls += 1
            try:
                async with semaphore:
                    self._in_flight += 1
                    report.max_in_flight = max(report.max_in_flight, self._in_flight)
                    try:
                        reply = await self._call(messages)
                    finally:
                        self._in_flight -= 1
            except InvalidOutputError as exc:
                # The framework parsed and rejected the answer itself (LlamaIndex structured_predict).
                report.failures += 1
                report.invalid_outputs += 1
                last_error = str(exc)
                report.note_failure(f"node {request.node_id}: {_clip(last_error, 300)}")
                messages = list(base)
                continue
            except asyncio.TimeoutError:
                report.failures += 1
                report.timeouts += 1
                last_error = (
                    f"no answer within {self.timeout:g} s" if self.timeout is not None else "the model client timed out"
                )
                report.note_failure(f"node {request.node_id}: {last_error}")
                messages = list(base)
                continue
            except Exception as exc:  # any model/client error is one failed attempt, never fatal
                report.failures += 1
                report.errors += 1
                last_error = f"{type(exc).__name__}: {exc}"
                report.note_failure(f"node {request.node_id}: {_clip(last_error, 300)}")
                logger.debug("LLM call for node %s raised", request.node_id, exc_info=True)
                messages = list(base)
                continue
            if not isinstance(reply, ModelReply):
                reply = ModelReply(output=reply)
            report.add_usage(reply.usage)
            try:
                return validate_answer(
                    reply.output,
                    reply.text,
                    max_keywords=self.max_keywords,
                    min_description_chars=self.min_description_chars,
                    max_description_chars=self.max_description_chars,
                )
            except Exception as exc:  # InvalidOutputError, or an answer object too odd to read
                report.failures += 1
                report.invalid_outputs += 1
                last_error = str(exc) if isinstance(exc, InvalidOutputError) else f"unreadable answer ({type(exc).__name__}: {exc})"
                report.note_failure(f"node {request.node_id}: {_clip(last_error, 300)}")
                # Show the model what it answered and what was wrong: a repair turn fixes most
                # format slips in one more call.
                messages = list(base) + [
                    ("assistant", _clip(reply.text or _render(reply.output), 4000) or "(empty)"),
                    (
                        "user",
                        fill(
                            self.prompts.repair,
                            {"error": last_error, "min_keywords": self.min_keywords, "max_keywords": self.max_keywords},
                        ),
                    ),
                ]
        # Per node at INFO (a broken model would flood the log); adescribe warns once per call.
        logger.info(
            "LLM description of node %s (document %r, level %d) failed after %d attempt(s): %s; "
            "using the LLM-free description.",
            request.node_id,
            request.doc_id,
            request.level,
            attempts,
            last_error,
        )
        return None

    async def _call(self, messages: Sequence[PromptMessage]) -> ModelReply:
        if self.timeout is None:
            return await self.backend.acall(messages)
        return await asyncio.wait_for(self.backend.acall(messages), self.timeout)

    def _semaphore(self) -> asyncio.Semaphore:
        # One semaphore per event loop: it bounds every describe running on that loop together.
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = asyncio.Semaphore(self.max_concurrency)
            self._semaphores[loop] = semaphore
        return semaphore

    def _fill_fallbacks(
        self, requests: List[SummaryRequest], indices: List[int], results: List[Optional[Summary]]
    ) -> None:
        # The extractive summariser picks keywords distinctive against the node's siblings, so it
        # gets the whole level and we keep only the nodes that need it.
        try:
            summaries = self.fallback.describe(requests)
            if len(summaries) != len(requests):
                raise ValueError(f"returned {len(summaries)} summaries for {len(requests)} requests")
        except Exception:
            logger.exception(
                "The fallback summariser %s failed; those nodes keep their own text without keywords.",
                getattr(self.fallback, "identity", type(self.fallback).__name__),
            )
            summaries = [
                Summary(text=None if r.is_leaf else _clip(" ".join(r.child_texts or r.leaf_texts), self.config.summary_max_chars))
                for r in requests
            ]
        for i in indices:
            results[i] = summaries[i]

    # -- reports --------------------------------------------------------------------------------

    def _record(self, report: SummarizerReport) -> None:
        with self._report_lock:
            self.last_report = report
            self.report.merge(report)
            for tracker in self._trackers:
                tracker.merge(report)

    def reset_report(self) -> SummarizerReport:
        """Start a fresh cumulative :attr:`report`; returns the previous one."""
        with self._report_lock:
            previous, self.report = self.report, SummarizerReport()
        return previous

    @contextlib.contextmanager
    def track(self) -> Iterator[SummarizerReport]:
        """Count what the block costs: ``with summarizer.track() as cost: index.add_documents(docs)``."""
        tracker = SummarizerReport()
        with self._report_lock:
            self._trackers.append(tracker)
        try:
            yield tracker
        finally:
            with self._report_lock:
                self._trackers.remove(tracker)

    # -- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the background event loop and close the cache file (the summariser can still be
        used afterwards: the loop restarts on demand)."""
        self._runner.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> "LLMSummarizer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identity}, max_concurrency={self.max_concurrency}, cache={self.cache!r})"


# -- helpers ----------------------------------------------------------------------------------------


def detect_language(text: str) -> str:
    """``"Russian"`` (or ``"Ukrainian"``) for Cyrillic text, else a neutral phrase for the prompt."""
    cyrillic = latin = 0
    ukrainian = False
    for ch in text[:4000]:
        if "\u0400" <= ch <= "\u04ff":
            cyrillic += 1
            if ch in "іїєґІЇЄҐ":
                ukrainian = True
        elif ("a" <= ch <= "z") or ("A" <= ch <= "Z"):
            latin += 1
    if cyrillic > latin:
        return "Ukrainian" if ukrainian else "Russian"
    return "the language the text is written in"


def _hash_texts(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for t in texts:
        digest.update((t or "").encode("utf-8"))
        digest.update(b"\x1e")
    return digest.hexdigest()


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " […]"


def _render(output: Any) -> str:
    if output is None:
        return ""
    if hasattr(output, "model_dump_json"):
        try:
            return str(output.model_dump_json())
        except Exception:  # pragma: no cover - defensive
            pass
    try:
        return json.dumps(output, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(output)


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")


def _make_cache(setting: CacheSetting) -> Optional[SummaryCache]:
    if setting is None or setting is False:
        return None
    if setting is True:
        return SummaryCache()
    if isinstance(setting, SummaryCache):
        return setting
    if isinstance(setting, (str, os.PathLike)):
        return SummaryCache(setting)
    raise TypeError(
        f"cache must be True, False, a file path or a SummaryCache, got {type(setting).__name__}."
    )
