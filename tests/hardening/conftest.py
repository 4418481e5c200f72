"""Fixtures of the hardening suite (the shared ones, ``encoder`` and ``make_index``, are in tests/conftest.py)."""

from __future__ import annotations

import pytest

from support import CachingEncoder


@pytest.fixture(scope="session")
def caching_encoder(encoder):
    """The real session encoder, memoised: re-writing the same documents costs no encoding."""
    return CachingEncoder(encoder)
