"""The answer schema handed to frameworks that support structured output.

Pydantic is a dependency of both LangChain and LlamaIndex (and of qdrant-client), so this module
adds no requirement; the summariser core does not import it and validates answers itself.
"""

from __future__ import annotations

from typing import List

from pydantic import BaseModel, Field


class NodeDescription(BaseModel):
    """Search-index entry for one part of a document: a description read by semantic search and
    anchor keywords read by keyword (BM25) search."""

    description: str = Field(
        description=(
            "3-5 factual, technical sentences about the content, in the language of the input, "
            "written for semantic search."
        )
    )
    keywords: List[str] = Field(
        description=(
            "5-10 short anchor terms in base (dictionary) form, including abbreviations with their "
            "expansions, synonyms and English equivalents, written for keyword search."
        )
    )
