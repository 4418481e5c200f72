"""The operations a search pipeline yields (:mod:`.pipeline`), answered by a driver (:mod:`.drivers`).

Each is a plain value; the answer a driver sends back is named on each class. The store is never
touched by the pipeline itself, so one pipeline serves the synchronous and the asynchronous search.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

__all__ = ["AskModel", "Encode", "Rank", "Requests", "Retrieve", "ScrollRoots", "REQUESTS", "SCROLL_ROOTS"]


class Rank(NamedTuple):
    """``store.rank(requests, vectors, ...)`` (``arank`` asynchronously): one hit list per request."""

    requests: Sequence[Any]
    vectors: Any
    rrf_k: int
    explain: bool
    light: bool


class Retrieve(NamedTuple):
    """``store.retrieve(ids)`` (``aretrieve``): the stored nodes among ``ids``."""

    ids: Sequence[str]


class ScrollRoots(NamedTuple):
    """Every root without text (``store.scroll_nodes(level=0, with_text=False)``, synchronous in both
    drivers, as it always was)."""


class Requests(NamedTuple):
    """The store's request counter (``store.requests``)."""


class Encode(NamedTuple):
    """The query's vectors (``encoder.encode_query``; asynchronously the encoder's own
    ``aencode_query`` or the same in a worker thread)."""

    text: str


class AskModel(NamedTuple):
    """A self-query model's filters for the query (``model.filters`` / ``model.afilters``)."""

    model: Any
    query: str
    values: Any


SCROLL_ROOTS = ScrollRoots()
REQUESTS = Requests()
