"""Helpers the test suites share (not tests): one fake ranker, one caching encoder, one engine fixture.

``tests/`` is on ``sys.path`` (pytest puts a conftest's folder there), so tests write
``from support import FakeRanker``.
"""

from .encoders import CachingEncoder
from .engines import ENGINES, engine, make_store
from .index_checks import CountingRank, ancestors
from .ranker import FakeRanker

__all__ = ["CachingEncoder", "CountingRank", "ENGINES", "FakeRanker", "ancestors", "engine", "make_store"]
