"""drag-knee-retriever: hierarchical, adaptive hybrid retrieval (DRAG with KNEE) over Qdrant.

The core imports neither LangChain nor LlamaIndex; adapters live in
``drag_knee_retriever.integrations``.
"""

from typing import TYPE_CHECKING

from .config import BuildConfig, EmbeddingConfig, SearchConfig, StoreConfig
from .errors import (
    CliError,
    ConfigError,
    DragKneeError,
    InvalidDocumentError,
    InvalidOutputError,
    InvalidQueryError,
    InvalidScoresError,
    EmbeddingError,
    InvalidSettingError,
    ModelLoadError,
    ModelMismatchError,
    OcrUnavailableError,
    StoreError,
    StoreIOError,
    StoreLockedError,
    SummarizerError,
)
from .knee import knee_cut, knee_index
from .ocr import OcrConfig
from .nodes import Document, ScoredNode, SearchResult, Span, Trace, TraceCandidate, TraceStep, TreeNode
from .summarize import ExtractiveSummarizer, Summarizer, Summary, SummaryRequest

__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers see; at run time the two are imported lazily (below)
    from .index import DragKneeIndex
    from .ingest import IngestReport


def __getattr__(name: str):
    # The index pulls in fastembed and onnxruntime; import it lazily so that `import
    # drag_knee_retriever` stays cheap for users of the pure parts (knee, configs, types).
    if name == "DragKneeIndex":
        from .index import DragKneeIndex

        return DragKneeIndex
    if name == "IngestReport":
        from .ingest import IngestReport

        return IngestReport
    raise AttributeError(f"module 'drag_knee_retriever' has no attribute {name!r}")


__all__ = [
    "BuildConfig",
    "CliError",
    "ConfigError",
    "Document",
    "DragKneeError",
    "DragKneeIndex",
    "EmbeddingConfig",
    "ExtractiveSummarizer",
    "IngestReport",
    "InvalidDocumentError",
    "InvalidOutputError",
    "InvalidQueryError",
    "InvalidScoresError",
    "EmbeddingError",
    "InvalidSettingError",
    "ModelLoadError",
    "ModelMismatchError",
    "OcrConfig",
    "OcrUnavailableError",
    "ScoredNode",
    "SearchConfig",
    "SearchResult",
    "Span",
    "StoreConfig",
    "StoreError",
    "StoreIOError",
    "StoreLockedError",
    "SummarizerError",
    "Summarizer",
    "Summary",
    "SummaryRequest",
    "Trace",
    "TraceCandidate",
    "TraceStep",
    "TreeNode",
    "knee_cut",
    "knee_index",
]
