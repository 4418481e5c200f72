"""Fixtures of the hardening suite (the shared ones, ``encoder`` and ``make_index``, are in tests/conftest.py)."""

from __future__ import annotations

import pytest

from support import CachingEncoder


@pytest.fixture(scope="session")
def caching_encoder(passage_cache):
    """The real session encoder, memoised (queries too): re-writing the same documents costs no encoding.
    Passages come through the session's ``passage_cache``, which ``make_index`` indexes share."""
    return CachingEncoder(passage_cache)
