"""drag-knee-retriever: hierarchical, adaptive hybrid retrieval (DRAG with KNEE) over Qdrant.

The core imports neither LangChain nor LlamaIndex; adapters live in
``drag_knee_retriever.integrations``.
"""

from typing import TYPE_CHECKING

from drag_knee_retriever.config import (
    BuildConfig,
    EmbeddingConfig,
    EncoderRuntime,
    FocusConfig,
    FusionConfig,
    LeafConfig,
    SearchConfig,
    SearchOptions,
    SectionConfig,
    StoreConfig,
    SummaryConfig,
    VectorConfig,
)
from drag_knee_retriever.errors import (
    ConfigError,
    DragKneeError,
    InvalidDocumentError,
    InvalidOutputError,
    InvalidQueryError,
    InvalidScoresError,
    EmbeddingError,
    IndexDamagedError,
    InvalidSettingError,
    ModelLoadError,
    ModelMismatchError,
    OcrUnavailableError,
    StoreError,
    StoreIOError,
    StoreLockedError,
    SummarizerError,
)
from drag_knee_retriever.common._knee import knee_cut, knee_index
from drag_knee_retriever.build._ocr import OcrConfig
from drag_knee_retriever.model._nodes import Document, NodeText, ScoredNode, SearchResult, Span, Trace, TraceCandidate, TraceStep, TreeNode
from drag_knee_retriever.build._summarize import ExtractiveSummarizer, Summarizer, Summary, SummaryRequest

__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers (and the API docs) see; at run time imported lazily (below)
    from drag_knee_retriever.build._ingest import IngestReport, OrphanSweep, Progress
    from drag_knee_retriever.embeddings import Encoder
    from drag_knee_retriever.facade._index import DocumentInfo, DragKneeIndex, StoredDocument
    from drag_knee_retriever.model._nodes import QueryVectors
    from drag_knee_retriever.store import NodeStore, RankedHit


# What the index's public methods take and return, imported when first used: the index pulls in
# fastembed and onnxruntime, so `import drag_knee_retriever` stays cheap for users of the pure parts.
# (Full module names, so a search for a module's dotted name finds them.)
_LAZY = {
    "DragKneeIndex": "drag_knee_retriever.facade._index", "DocumentInfo": "drag_knee_retriever.facade._index",
    "StoredDocument": "drag_knee_retriever.facade._index", "IngestReport": "drag_knee_retriever.build._ingest",
    "OrphanSweep": "drag_knee_retriever.build._ingest", "Progress": "drag_knee_retriever.build._ingest",
    "Encoder": "drag_knee_retriever.embeddings", "NodeStore": "drag_knee_retriever.store",
    "RankedHit": "drag_knee_retriever.store",
    "QueryVectors": "drag_knee_retriever.model._nodes",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "CliError":
        from drag_knee_retriever.errors import CliError
        from drag_knee_retriever.model._settings import warn_deprecated

        warn_deprecated("drag_knee_retriever.CliError", "drag_knee_retriever.cli.CliError (the command's own error)")
        return CliError
    raise AttributeError(f"module 'drag_knee_retriever' has no attribute {name!r}")


__all__ = [
    "BuildConfig",
    "ConfigError",
    "Document",
    "DocumentInfo",
    "DragKneeError",
    "DragKneeIndex",
    "EmbeddingConfig",
    "Encoder",
    "EncoderRuntime",
    "ExtractiveSummarizer",
    "FocusConfig",
    "FusionConfig",
    "IngestReport",
    "InvalidDocumentError",
    "InvalidOutputError",
    "InvalidQueryError",
    "InvalidScoresError",
    "EmbeddingError",
    "IndexDamagedError",
    "InvalidSettingError",
    "LeafConfig",
    "ModelLoadError",
    "ModelMismatchError",
    "NodeText",
    "NodeStore",
    "OcrConfig",
    "OcrUnavailableError",
    "OrphanSweep",
    "Progress",
    "QueryVectors",
    "RankedHit",
    "ScoredNode",
    "SearchConfig",
    "SearchOptions",
    "SearchResult",
    "SectionConfig",
    "Span",
    "StoreConfig",
    "StoredDocument",
    "StoreError",
    "StoreIOError",
    "StoreLockedError",
    "SummarizerError",
    "Summarizer",
    "Summary",
    "SummaryConfig",
    "SummaryRequest",
    "Trace",
    "TraceCandidate",
    "TraceStep",
    "TreeNode",
    "VectorConfig",
    "knee_cut",
    "knee_index",
]
