"""The dense-embedder protocol and what every embedder module shares (prefixes, data folder)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol, Sequence, Tuple, runtime_checkable

import numpy as np

#: The package's data folder: the default model's tokenizer files, BM25 stopword lists.
DATA_DIR = Path(__file__).parent.parent / "data"
SparseVector = Tuple[np.ndarray, np.ndarray]
# e5 models are trained with these prefixes; without them their retrieval quality drops.
_E5_NAME = re.compile(r"(^|/)(multilingual-)?e5-", re.IGNORECASE)
E5_PREFIXES = ("query: ", "passage: ")


@runtime_checkable
class DenseEmbedder(Protocol):
    """What the index needs from a dense model.

    ``embed_passages`` returns one row per text (shape ``(n, dimension)``), ``embed_query`` one
    vector; each side applies its own conventions (query/passage prefixes or methods).
    ``identity`` names the model and its settings: it is stored with the collection and compared
    when the collection is opened again. An optional ``async aembed_query(text)`` is used by
    ``asearch``.
    """

    identity: str
    dimension: int

    def embed_passages(self, texts: Sequence[str]) -> Any: ...

    def embed_query(self, text: str) -> Any: ...


def default_prefixes(model_name: str) -> Tuple[str, str]:
    """The (query, passage) prefixes a model is trained with: e5 models' :data:`E5_PREFIXES`, else none."""
    return E5_PREFIXES if _E5_NAME.search(model_name) else ("", "")

