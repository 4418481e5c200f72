"""Metadata filters read from a question by the user's own LLM (the self-query pattern).

Without a model, a query that names its document ("Acme's FY2023 capital expenditure") is routed by
the document's identity (:mod:`drag_knee_retriever.search._identity`: title, file name and metadata matched
against the query's words, a soft preference). With a model, :class:`SelfQuery` asks it which of
the index's metadata values the question names and turns its answer into a filter, so the search
only reads those documents; abbreviations and paraphrases a word match cannot see ("JnJ", "the
second fiscal quarter of 2023") are what the model adds.

The model is shown each identity key with the values the index holds (at most ``max_values`` per
key) and answers one JSON object, e.g. ``{"company": "Acme", "doc_period": [2022, 2023]}``. Every
key and value is checked against the index: unknown keys are dropped, a value must equal a stored
one (case and spacing aside; ``"2023"`` matches the number 2023), a list becomes ``$in``. An answer
that names nothing valid, or that the model fails to give in time, means no filter: the search runs
as without a model. ``DragKneeIndex.search`` also drops the filter when it leaves no result.

>>> from drag_knee_retriever.llm import LangChainSelfQuery                   # doctest: +SKIP
>>> index.self_query = LangChainSelfQuery(ChatOpenAI(model="gpt-4o-mini"))   # doctest: +SKIP
>>> index.search("What was Acme's FY2023 capex?").trace.self_query           # doctest: +SKIP
{'filters': {'company': 'Acme', 'doc_period': 2023}, 'used': True}
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence

from drag_knee_retriever.errors import InvalidOutputError
from drag_knee_retriever.llm.answers import parse_answer_text
from drag_knee_retriever.llm.backend import ChatBackend
from drag_knee_retriever.llm.loop import LoopThread

logger = logging.getLogger(__name__)

__all__ = ["LangChainSelfQuery", "LlamaIndexSelfQuery", "SelfQuery", "validate_filters"]

SYSTEM = (
    "You read a question about a collection of documents and say which documents it asks about, by "
    "their metadata. Answer with one JSON object mapping metadata keys to the value (or list of values) "
    "the question names, using only the keys and values listed. Leave out every key the question does "
    "not name. Answer {} when it names none. No prose."
)


def _norm(value: Any) -> str:
    return " ".join(str(value).split()).casefold()


def validate_filters(answer: Mapping[str, Any], fields: Mapping[str, Sequence[Any]]) -> Dict[str, Any]:
    """A model's ``{key: value or [values]}`` answer as a filter over ``fields`` (key -> the values
    the index holds): unknown keys and values are dropped; a value takes the stored value's type and
    spelling; several values become ``{"$in": [...]}``; an empty result means no filter."""
    out: Dict[str, Any] = {}
    for key, given in answer.items():
        known = fields.get(key)
        if not known or given is None:
            continue
        wanted = given if isinstance(given, (list, tuple)) else [given]
        by_norm = {_norm(v): v for v in known}
        chosen: List[Any] = []
        for value in wanted:
            if isinstance(value, (dict, list, tuple)):
                continue
            stored = by_norm.get(_norm(value))
            if stored is not None and stored not in chosen:
                chosen.append(stored)
        if len(chosen) == 1:
            out[key] = chosen[0]
        elif chosen:
            out[key] = {"$in": chosen}
    return out


class SelfQuery:
    """Filters from a question, by any :class:`~drag_knee_retriever.llm.ChatBackend`.

    ``keys``: the metadata keys the model may filter on (None: the index's identity keys, see
    :meth:`DragKneeIndex.metadata_values`); ``max_values``: values shown per key (the most frequent
    first); ``timeout``: seconds the model has before the search goes on without a filter.
    Use :class:`LangChainSelfQuery` or :class:`LlamaIndexSelfQuery` for a framework model.
    """

    def __init__(self, backend: ChatBackend, *, keys: Optional[Sequence[str]] = None, max_values: int = 60,
                 timeout: float = 30.0) -> None:
        if not isinstance(backend, ChatBackend):
            raise TypeError(f"backend must have an `identity` and an async `acall(messages)`, got "
                            f"{type(backend).__name__}; use LangChainSelfQuery(chat_model) or LlamaIndexSelfQuery(llm).")
        if isinstance(max_values, bool) or not isinstance(max_values, int) or max_values < 1:
            raise ValueError(f"max_values must be an integer >= 1, got {max_values!r}.")
        self.backend = backend
        self.keys = tuple(keys) if keys is not None else None
        self.max_values = max_values
        self.timeout = float(timeout)
        self._runner = LoopThread()

    @property
    def identity(self) -> str:
        """The model's identity (as the summariser's cache keys name it)."""
        return self.backend.identity

    def messages(self, query: str, fields: Mapping[str, Sequence[Any]]) -> List[tuple]:
        """The prompt: the keys with their values, then the question."""
        listing = {key: list(values)[: self.max_values] for key, values in fields.items() if values}
        user = (f"Metadata keys and their values:\n{json.dumps(listing, ensure_ascii=False, default=str)}\n\n"
                f"Question: {query}\n\nJSON:")
        return [("system", SYSTEM), ("user", user)]

    async def afilters(self, query: str, fields: Mapping[str, Sequence[Any]]) -> Dict[str, Any]:
        """The filter the model reads from ``query`` (``{}``: none, also when it fails)."""
        if self.keys is not None:
            fields = {k: v for k, v in fields.items() if k in self.keys}
        if not any(fields.values()):
            return {}
        try:
            reply = await asyncio.wait_for(self.backend.acall(self.messages(query, fields)), self.timeout)
            answer = reply.output if isinstance(reply.output, Mapping) else parse_answer_text(reply.text)
        except (InvalidOutputError, asyncio.TimeoutError) as exc:
            logger.info("self-query: no filter from %s (%s)", self.identity, exc)
            return {}
        except Exception as exc:  # the user's model failed: search on without a filter, say why
            logger.warning("self-query: the model %s failed (%s: %s); searching without a filter",
                           self.identity, type(exc).__name__, exc)
            return {}
        return validate_filters(answer, fields)

    def filters(self, query: str, fields: Mapping[str, Sequence[Any]]) -> Dict[str, Any]:
        """:meth:`afilters` for synchronous callers (on one background event loop)."""
        return self._runner.run(self.afilters(query, fields))

    def close(self) -> None:
        """Stop the background event loop (it also stops with the process)."""
        self._runner.close()


class LangChainSelfQuery(SelfQuery):
    """:class:`SelfQuery` over a LangChain chat model (``ChatOpenAI``, ``ChatOllama``, ...)."""

    def __init__(self, chat_model: Any, *, run_config: Optional[Mapping[str, Any]] = None, **options: Any) -> None:
        from drag_knee_retriever.llm.langchain import LangChainBackend

        super().__init__(LangChainBackend(chat_model, structured=False, run_config=run_config), **options)


class LlamaIndexSelfQuery(SelfQuery):
    """:class:`SelfQuery` over a LlamaIndex LLM (``OpenAI``, ``Ollama``, ...)."""

    def __init__(self, llm: Any, *, llm_kwargs: Optional[Mapping[str, Any]] = None, **options: Any) -> None:
        from drag_knee_retriever.llm.llamaindex import LlamaIndexBackend

        super().__init__(LlamaIndexBackend(llm, structured=False, llm_kwargs=llm_kwargs), **options)
