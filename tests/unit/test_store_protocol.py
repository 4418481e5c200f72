"""The engine protocol and the bookkeeping every engine shares (issue 39): an engine implements a
few methods, and what NodeStore owns (request counting, read-only refusal, pending documents, the
bookkeeping points, the check on open, the roots' copy sync) is written once, in NodeStore."""

from __future__ import annotations

import pytest

from drag_knee_retriever.store import EdgeStore, MemoryStore, NodeStore, QdrantClientStore
from drag_knee_retriever.store.base import ENGINE_PROTOCOL, SHARED_BOOKKEEPING

ENGINES = [EdgeStore, QdrantClientStore, MemoryStore]


def test_the_engine_protocol_is_nodestores_abstract_methods():
    assert set(NodeStore.__abstractmethods__) == set(ENGINE_PROTOCOL)
    assert len(ENGINE_PROTOCOL) <= 11


@pytest.mark.parametrize("engine", ENGINES, ids=lambda cls: cls.__name__)
def test_no_engine_writes_the_shared_bookkeeping_again(engine):
    assert not engine.__abstractmethods__
    for name in SHARED_BOOKKEEPING:
        assert getattr(engine, name) is getattr(NodeStore, name), f"{engine.__name__} overrides {name}"


@pytest.mark.parametrize("engine", [EdgeStore, QdrantClientStore], ids=lambda cls: cls.__name__)
def test_the_engines_with_a_roots_copy_implement_its_three_steps(engine):
    for name in ("_stored_root_versions", "_copy_roots", "_drop_root_copies", "_copied_stamps"):
        assert getattr(engine, name) is not getattr(NodeStore, name), f"{engine.__name__} lacks {name}"
