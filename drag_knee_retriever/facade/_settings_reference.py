"""The README's "Settings reference": every settings class's table, generated from the declarations.

Apart from :mod:`drag_knee_retriever.model._settings` (which every settings class imports) so that it may
import all of them; tests/unit/test_settings.py checks that the README holds exactly this text.
"""

from __future__ import annotations

from typing import Any

from drag_knee_retriever.model._settings import settings_table

__all__ = ["REFERENCE_BEGIN", "REFERENCE_END", "reference"]

#: README markers around the generated settings reference (tests/unit/test_settings.py checks it).
REFERENCE_BEGIN = ("<!-- settings reference: generated from the declarations by "
                   "drag_knee_retriever.facade._settings_reference.reference(); do not edit by hand -->")
REFERENCE_END = "<!-- end of settings reference -->"


def _constant_doc(module: Any, name: str) -> str:
    """The ``#:`` comment above a module constant, joined into one line."""
    import inspect

    lines = inspect.getsource(module).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{name} ="))
    doc = []
    while at > 0 and lines[at - 1].startswith("#:"):
        at -= 1
        doc.insert(0, lines[at][2:].strip())
    return " ".join(doc).replace("|", "\\|")


def reference() -> str:
    """Every settings class's table, as the README's "Settings reference" shows it."""
    from drag_knee_retriever.config import BuildConfig, EmbeddingConfig, SearchConfig, StoreConfig
    from drag_knee_retriever.llm.settings import SummarizerSettings
    from drag_knee_retriever.build._ocr import OcrConfig

    parts = [REFERENCE_BEGIN]
    for cls, where in ((SearchConfig, "DragKneeIndex(search=...)`, or per call: `index.search(q, method=..., focus=FocusConfig(...), ...)"),
                       (BuildConfig, "DragKneeIndex(build=...)"), (EmbeddingConfig, "DragKneeIndex(embedding=...)"),
                       (StoreConfig, "DragKneeIndex(location, store=...)"),
                       (OcrConfig, "load_paths(..., ocr=OcrConfig(...))"),
                       (SummarizerSettings, "LangChainSummarizer(model, settings=...)` / `LlamaIndexSummarizer(...)")):
        summary = (cls.__doc__ or "").strip().split("\n")[0]
        parts += ["", f"#### `{cls.__name__}` (`{where}`)", "", summary, "", settings_table(cls)]
    from drag_knee_retriever import config

    parts += ["", "#### Engine constants (not settings; `drag_knee_retriever.config`)", "",
              "| constant | value | what it shapes |", "| --- | --- | --- |"]
    for name in ("MIN_SIDE_LIMIT", "TIE_MARGIN"):
        parts.append(f"| `{name}` | `{getattr(config, name)}` | {_constant_doc(config, name)} |")
    parts += ["", REFERENCE_END]
    return "\n".join(parts)
