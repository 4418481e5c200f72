"""The evaluation harness's errors: all :class:`~drag_knee_retriever.errors.DragKneeError` subclasses.

Each also derives from the built-in type it replaced (ValueError, RuntimeError, KeyError), so code
that caught those keeps working.
"""

from __future__ import annotations

from drag_knee_retriever.errors import DragKneeError


class EvalError(DragKneeError):
    """Something about an evaluation run is wrong; the message says what and how to fix it."""


class EvalSetupError(EvalError, ValueError):
    """Bad run options: a build variant, an encoder for another language, no questions left."""


class EvalConsistencyError(EvalError, RuntimeError):
    """The indexes do not map to the dataset as the metrics assume (leaves per unit, chunk offsets)."""


class UnknownDocumentError(EvalError, KeyError):
    """A method returned a document the dataset does not hold."""
