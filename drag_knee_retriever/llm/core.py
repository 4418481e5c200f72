"""The framework-free LLM summariser.

:class:`LLMSummarizer` implements the :class:`~drag_knee_retriever.build._summarize.Summarizer` protocol on
top of any :class:`ChatBackend` (an object with an ``identity`` and an async ``acall(messages)``).
It owns everything that does not depend on LangChain or LlamaIndex: prompts, validation of answers
(:mod:`.answers`), bounded retries, the per-node LLM-free fallback, the cache, the bounded async
fan-out (on the loop of :mod:`.loop`) and the report (:mod:`.report`). Its settings are one
:class:`~drag_knee_retriever.llm.settings.SummarizerSettings`. The adapters in
:mod:`drag_knee_retriever.llm.langchain` and :mod:`drag_knee_retriever.llm.llamaindex` only convert
messages and answers (with the structured-output policy of :mod:`.backend`).

The names that lived here before the split (``Usage``, ``ModelReply``, ``SummarizerReport``,
``parse_answer_text``...) are still importable from this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import threading
import time
import weakref
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from drag_knee_retriever.config import BuildConfig
from drag_knee_retriever.errors import InvalidOutputError, SummarizerError
from drag_knee_retriever.build._summarize import ExtractiveSummarizer, Summarizer, Summary, SummaryRequest
from drag_knee_retriever.llm.answers import SPACES, parse_answer_text, validate_answer
from drag_knee_retriever.llm.backend import ChatBackend, ModelReply, PromptMessage, Usage, usage_from_mapping
from drag_knee_retriever.llm.cache import SummaryCache
from drag_knee_retriever.llm.loop import LoopThread
from drag_knee_retriever.llm.prompts import SCHEMA_VERSION, SummaryPrompts, detect_language, fill
from drag_knee_retriever.llm.report import SummarizerReport
from drag_knee_retriever.llm.settings import SummarizerSettings

logger = logging.getLogger(__name__)

__all__ = [
    "CacheSetting",
    "ChatBackend",
    "InvalidOutputError",
    "LLMSummarizer",
    "ModelReply",
    "PromptMessage",
    "SummarizerError",
    "SummarizerReport",
    "SummarizerSettings",
    "Usage",
    "detect_language",
    "parse_answer_text",
    "usage_from_mapping",
    "validate_answer",
]

CacheSetting = Union[bool, str, "os.PathLike[str]", SummaryCache, None]


class LLMSummarizer:
    """Node descriptions and keywords written by an LLM, with a per-node LLM-free fallback.

    Implements :class:`~drag_knee_retriever.build._summarize.Summarizer`. Leaves (pages) are described
    from their own text; parents from their children's descriptions (a generalising summary of the
    whole scope). Each node gets ``Summary(text=description, keywords=(...))``; which of them feeds
    the dense and the sparse vector is chosen by ``BuildConfig.leaf_text`` / ``sparse_text``.

    Use :class:`~drag_knee_retriever.llm.LangChainSummarizer` or
    :class:`~drag_knee_retriever.llm.LlamaIndexSummarizer` for a framework model; this class takes
    any :class:`ChatBackend`.

    Args:
        backend: the model (see :class:`ChatBackend`).
        settings: a :class:`SummarizerSettings` (how it asks, retries and checks); every setting
            can also be given as a keyword (``max_concurrency=8``), which overrides ``settings``.
        config: the index's :class:`BuildConfig`, used by the default fallback.
        fallback: the LLM-free summariser used for nodes whose every attempt failed (and for leaves
            when ``describe_leaves=False``); default :class:`ExtractiveSummarizer`.
        cache: ``True`` (in memory, default), ``False``/``None`` (off), a file path (``.json`` or
            SQLite for any other suffix) or a :class:`SummaryCache` (to share one).
    """

    def __init__(
        self,
        backend: ChatBackend,
        settings: Optional[SummarizerSettings] = None,
        *,
        config: Optional[BuildConfig] = None,
        fallback: Optional[Summarizer] = None,
        cache: CacheSetting = True,
        **options: Any,
    ) -> None:
        if not isinstance(backend, ChatBackend):
            raise TypeError(
                f"backend must have an `identity` and an async `acall(messages)`, got {type(backend).__name__}; "
                "use LangChainSummarizer(chat_model) or LlamaIndexSummarizer(llm) for a framework model."
            )
        if settings is None:
            settings = SummarizerSettings()
        elif not isinstance(settings, SummarizerSettings):
            raise TypeError(f"settings must be a SummarizerSettings, got {type(settings).__name__}.")
        if options:
            settings = settings.replace(**options)
        self.settings: SummarizerSettings = settings
        self.backend = backend
        self.config = config or BuildConfig()
        self.fallback: Summarizer = fallback if fallback is not None else ExtractiveSummarizer(self.config)
        self.cache: Optional[SummaryCache] = _make_cache(cache)
        self.report = SummarizerReport()
        self.last_report = SummarizerReport()
        self._report_lock = threading.Lock()
        self._trackers: List[SummarizerReport] = []
        self._semaphores: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]" = (
            weakref.WeakKeyDictionary()
        )
        self._in_flight = 0
        self._runner = LoopThread()
        self._finalizer = weakref.finalize(self, self._runner.close)

    @property
    def prompts(self) -> SummaryPrompts:
        """The prompt templates (``settings.prompts``)."""
        return self.settings.prompts

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
                self.settings.prompts.identity,
                SCHEMA_VERSION,
                self.settings.min_keywords,
                self.settings.max_keywords,
                self.settings.prompt_language,
                self.settings.max_input_chars,
                self.settings.min_description_chars,
                self.settings.max_description_chars,
            ]
        )
        return hashlib.sha256(settings.encode()).hexdigest()[:12]

    @property
    def identity(self) -> str:
        """``llm(model=..., prompts=..., leaves=llm|extractive)``: recorded with the index."""
        leaves = "llm" if self.settings.describe_leaves else "extractive"
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
        common = {"min_keywords": self.settings.min_keywords, "max_keywords": self.settings.max_keywords}
        title = f"Title: {request.title.strip()}\n" if request.title and request.title.strip() else ""
        if request.is_leaf:
            text = _clip("\n\n".join(t for t in request.leaf_texts if t), self.settings.max_input_chars)
            user = fill(
                self.settings.prompts.leaf,
                {**common, "title": title, "text": text, "language": self._language_of(text)},
            )
        else:
            children = [t for t in (request.child_texts or request.leaf_texts) if t and t.strip()]
            per_child = max(200, self.settings.max_input_chars // max(1, len(children)))
            listing = "\n".join(f"[{i}] {_clip(SPACES.sub(' ', t).strip(), per_child)}" for i, t in enumerate(children, 1))
            user = fill(
                self.settings.prompts.parent,
                {
                    **common,
                    "title": title,
                    "children": listing,
                    "count": len(children),
                    "language": self._language_of(listing),
                },
            )
        return [("system", fill(self.settings.prompts.system, common)), ("user", user)]

    def _language_of(self, text: str) -> str:
        if self.settings.language != "auto":
            return self.settings.prompt_language
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
                if request.is_leaf and not self.settings.describe_leaves:
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
            if failed and self.settings.on_failure == "raise":
                first = failed[0]
                raise SummarizerError(
                    f"{len(failed)} node(s) could not be described by {self.model_identity} after "
                    f"{1 + self.settings.max_retries} attempts each (first: node {first.node_id} of document "
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
        attempts = 1 + self.settings.max_retries
        last_error = ""
        for attempt in range(attempts):
            if attempt:
                report.retries += 1
                if self.settings.retry_backoff:
                    await asyncio.sleep(self.settings.retry_backoff * (2 ** (attempt - 1)))
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
                    f"no answer within {self.settings.timeout:g} s" if self.settings.timeout is not None else "the model client timed out"
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
                    max_keywords=self.settings.max_keywords,
                    min_description_chars=self.settings.min_description_chars,
                    max_description_chars=self.settings.max_description_chars,
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
                            self.settings.prompts.repair,
                            {"error": last_error, "min_keywords": self.settings.min_keywords, "max_keywords": self.settings.max_keywords},
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
        if self.settings.timeout is None:
            return await self.backend.acall(messages)
        return await asyncio.wait_for(self.backend.acall(messages), self.settings.timeout)

    def _semaphore(self) -> asyncio.Semaphore:
        # One semaphore per event loop: it bounds every describe running on that loop together.
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = asyncio.Semaphore(self.settings.max_concurrency)
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
                Summary(text=None if r.is_leaf else _clip(" ".join(r.child_texts or r.leaf_texts), self.config.summary.max_chars))
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
        return f"{type(self).__name__}({self.identity}, max_concurrency={self.settings.max_concurrency}, cache={self.cache!r})"


# -- helpers ----------------------------------------------------------------------------------------


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
