"""Credentials out of everything printed or logged: URLs with a user:password part or a key parameter.

A user may write the key into the URL (``http://user:KEY@host:6333`` or ``...?api_key=KEY``). The
library never prints such a URL as given: :func:`redact_url` replaces the password (and the user
name, which often is a key too) and the values of key-like query parameters with ``***``;
:func:`secrets_in_url` lists the values so that :class:`RedactingFilter` (installed on the
library's loggers and those of qdrant-client and httpx while a server store is open) and
:func:`redact_text` can take them out of any message, including a dependency's.
"""

from __future__ import annotations

import logging
import threading
from typing import Iterable, List, Optional, Set
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

MASK = "***"
#: Query parameters that carry credentials (compared case-insensitively).
SECRET_PARAMETERS = frozenset({"api_key", "apikey", "api-key", "key", "token", "access_token", "auth", "password",
                               "secret", "jwt"})
#: Loggers that may print a request URL: the library's own and its HTTP stack.
LOGGERS = ("drag_knee_retriever", "qdrant_client", "httpx", "httpcore", "urllib3", "grpc")


def _split(url: str):
    try:
        return urlsplit(url)
    except ValueError:  # e.g. an invalid IPv6 literal: nothing can be parsed, so mask it all
        return None


def secrets_in_url(url: Optional[str]) -> List[str]:
    """The credential values written inside ``url`` (user name, password, key-like parameters)."""
    if not url or not isinstance(url, str):
        return []
    parts = _split(url)
    if parts is None:
        return [url]
    found: List[str] = []
    if parts.password:
        found.append(parts.password)
    elif parts.username:  # "http://KEY@host": the user name is the key (a plain user name is masked in URLs only)
        found.append(parts.username)
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if name.lower() in SECRET_PARAMETERS and value:
            found.append(value)
    # Both the decoded and the percent-encoded spelling can appear in messages.
    return sorted({s for value in found for s in (value, unquote(value), quote(value, safe="")) if len(s) >= 3},
                  key=len, reverse=True)


def redact_url(url: Optional[str]) -> Optional[str]:
    """``url`` with its user info and key-like query parameters masked (``***``); None stays None."""
    if not url or not isinstance(url, str):
        return url
    parts = _split(url)
    if parts is None:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if k.lower() in SECRET_PARAMETERS and v else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of the given secrets replaced by ``***``."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret:
            text = text.replace(secret, MASK)
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that masks registered secrets in every record it sees (message, args, traceback)."""

    def __init__(self) -> None:
        super().__init__()
        self._secrets: Set[str] = set()
        self._lock = threading.Lock()

    def add(self, secrets: Iterable[str]) -> None:
        with self._lock:
            self._secrets.update(s for s in secrets if s)

    @property
    def secrets(self) -> List[str]:
        with self._lock:
            return list(self._secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self.secrets
        if not secrets:
            return True
        message = record.getMessage()
        clean = redact_text(message, secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            # A formatted traceback would quote the exception's text: format it now, masked.
            formatted = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact_text(formatted, secrets)
            record.exc_info = None
        return True


_FILTER = RedactingFilter()


def protect(url: Optional[str], extra: Iterable[str] = ()) -> List[str]:
    """Register the secrets of ``url`` (and ``extra``, e.g. an API key) with every relevant logger."""
    secrets = secrets_in_url(url) + [s for s in extra if s]
    if secrets:
        _FILTER.add(secrets)
        for name in LOGGERS:
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)
        root = logging.getLogger()
        for handler in root.handlers:  # records of child loggers reach handlers, not the root's filters
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
    return secrets


__all__ = ["MASK", "RedactingFilter", "protect", "redact_text", "redact_url", "secrets_in_url"]
