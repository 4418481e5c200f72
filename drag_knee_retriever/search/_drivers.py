"""The two drivers of a search pipeline: :func:`run` (synchronous) and :func:`arun` (asynchronous).

They are the only places a search calls the store, the encoder or a self-query model: each takes
the generator of :mod:`.pipeline` (or any generator of :mod:`.ops` operations), answers every
operation it yields, and returns what the generator returns. An exception of the store, the
encoder or the model propagates to the caller as it is.
"""

from __future__ import annotations

import asyncio
from typing import Any, Generator, TypeVar

from drag_knee_retriever.search._ops import AskModel, Encode, Rank, Requests, Retrieve, ScrollRoots

__all__ = ["arun", "run"]

T = TypeVar("T")
Steps = Generator[Any, Any, T]


def run(steps: "Steps[T]", store: Any, encoder: Any = None) -> T:
    """Run ``steps`` against ``store`` (and ``encoder`` for :class:`~.ops.Encode`) synchronously."""
    try:
        op = next(steps)
        while True:
            kind = type(op)
            if kind is Rank:
                answer = store.rank(op.requests, op.vectors, rrf_k=op.rrf_k, explain=op.explain, light=op.light)
            elif kind is Retrieve:
                answer = store.retrieve(op.ids)
            elif kind is Requests:
                answer = store.requests
            elif kind is ScrollRoots:
                answer = store.scroll_nodes(level=0, with_text=False)
            elif kind is Encode:
                answer = encoder.encode_query(op.text)
            elif kind is AskModel:
                answer = op.model.filters(op.query, op.values)
            else:
                raise TypeError(f"a search pipeline yielded {op!r}, not an operation of search.ops")
            op = steps.send(answer)
    except StopIteration as done:
        return done.value


async def arun(steps: "Steps[T]", store: Any, encoder: Any = None) -> T:
    """:func:`run` through the store's async methods (``arank``, ``aretrieve``), the encoder's
    ``aencode_query`` (else ``encode_query`` in a worker thread) and the model's ``afilters``;
    reading the roots and the request counter stay synchronous."""
    try:
        op = next(steps)
        while True:
            kind = type(op)
            if kind is Rank:
                answer = await store.arank(op.requests, op.vectors, rrf_k=op.rrf_k, explain=op.explain, light=op.light)
            elif kind is Retrieve:
                answer = await store.aretrieve(op.ids)
            elif kind is Requests:
                answer = store.requests
            elif kind is ScrollRoots:
                answer = store.scroll_nodes(level=0, with_text=False)
            elif kind is Encode:
                answer = await _aencode_query(encoder, op.text)
            elif kind is AskModel:
                answer = await op.model.afilters(op.query, op.values)
            else:
                raise TypeError(f"a search pipeline yielded {op!r}, not an operation of search.ops")
            op = steps.send(answer)
    except StopIteration as done:
        return done.value


async def _aencode_query(encoder: Any, text: str) -> Any:
    # The embedder's own async method when its class has one (a LangChain/LlamaIndex model's
    # aembed_query); wrappers that only define encode_query run it in a worker thread.
    if callable(getattr(type(encoder), "aencode_query", None)):
        return await encoder.aencode_query(text)
    return await asyncio.to_thread(encoder.encode_query, text)
