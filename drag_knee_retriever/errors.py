"""One exception hierarchy. Every message says what was wrong and how to fix it."""

from __future__ import annotations


class DragKneeError(Exception):
    """Base class of every error this library raises on purpose."""


class ConfigError(DragKneeError, ValueError):
    """A setting is out of range or of the wrong type (raised when a config is built)."""


class InvalidDocumentError(DragKneeError, ValueError):
    """A document cannot be ingested as given (empty, wrong type, duplicate id, bad metadata)."""


class InvalidQueryError(DragKneeError, ValueError):
    """A query or its search options cannot be run (empty, wrong type, bad filter)."""


class InvalidSettingError(ConfigError, InvalidQueryError):
    """A per-search setting (``beam_width=``, ``rrf_k=``, ...) is out of range: both a config and a query error."""


class ModelLoadError(DragKneeError, RuntimeError):
    """No embedding model could be loaded; the message lists the ways to provide one."""


class EmbeddingError(DragKneeError, RuntimeError):
    """A dense embedder returned vectors of the wrong shape, or values that are not finite."""


class ModelMismatchError(DragKneeError, RuntimeError):
    """The collection was built with another embedding model or vector size."""


class StoreLockedError(DragKneeError, RuntimeError):
    """An embedded index folder is held by another process."""


class StoreError(DragKneeError, RuntimeError):
    """The vector store failed or holds data this library cannot read."""


class StoreIOError(StoreError):
    """The disk refused the index a read or a write (full, read-only, no permission); the index is intact.

    ``errno_code`` is the operating system's error number (``errno.ENOSPC``, ``errno.EROFS``, ...).
    """

    def __init__(self, message: str, *, errno_code: int | None = None) -> None:
        super().__init__(message)
        self.errno_code = errno_code


class IndexDamagedError(StoreError):
    """The index's files are damaged (lost nodes, unreadable vectors or payloads, records that
    disagree): detected when it opens, before it answers; nothing is changed."""


class InvalidScoresError(DragKneeError, ValueError):
    """A score list given to the knee is not finite or not in descending order."""


class SummarizerError(DragKneeError, RuntimeError):
    """A node could not be described by the LLM summariser and ``on_failure="raise"`` was chosen."""


class InvalidOutputError(DragKneeError, ValueError):
    """A model's answer is not a usable ``{"description", "keywords"}`` object (triggers a retry).

    LLM backends raise it when their framework rejected an answer while parsing it."""


class CliError(DragKneeError):
    """A user-facing failure of the ``drag-knee`` command: one line on stderr, then exit ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class OcrUnavailableError(DragKneeError, RuntimeError):
    """OCR was needed or asked for, but the renderer, the engine or a language is not installed."""


class CollectionNotFoundError(StoreError, ValueError):
    """A collection opened for reading does not exist (a misspelt name would otherwise open a new,
    empty index); the message names the collections that do."""
