"""The one engine switch of the test suite: a session fixture parametrised over the embedded engines.

A test (or a fixture of any scope) that takes ``engine`` runs once per engine; the shared indexes
of tests/conftest.py use the library's default engine (Qdrant Edge).
"""

from __future__ import annotations

from typing import Any

import pytest

#: The embedded Qdrant engines (both are core dependencies): every engine-dependent test runs on each.
ENGINES = ("edge", "local")


@pytest.fixture(scope="session", params=ENGINES)
def engine(request) -> str:
    """``"edge"`` or ``"local"``: the engine this run of the test uses."""
    return request.param


def make_store(engine: str, collection: str, location: str = ":memory:", batch: int = 2) -> Any:
    """A real store with a small upsert batch, so one document's write spans several steps."""
    if engine == "edge":
        from drag_knee_retriever.store.edge import EdgeStore

        return EdgeStore(collection, location=location, upsert_batch_size=batch)
    if engine == "memory":
        from drag_knee_retriever.store.memory import MemoryStore

        return MemoryStore(collection)
    from drag_knee_retriever.store.qdrant import QdrantClientStore

    return QdrantClientStore(collection, location=location, upsert_batch_size=batch)
