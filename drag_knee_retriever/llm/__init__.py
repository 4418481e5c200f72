"""LLM-written node descriptions and keywords, and self-query filters, through the user's own LangChain
or LlamaIndex model.

>>> from drag_knee_retriever.llm import LangChainSummarizer          # doctest: +SKIP
>>> summarizer = LangChainSummarizer(chat_model, cache="descriptions.sqlite", max_concurrency=8)
>>> index = DragKneeIndex("./index", summarizer=summarizer)          # doctest: +SKIP
>>> index.add_documents(docs); print(summarizer.last_report)         # doctest: +SKIP

Importing this package imports neither framework: each adapter imports its framework when it is
constructed and raises ImportError naming the extra to install when it is missing.
"""

from ..errors import InvalidOutputError, SummarizerError
from .answers import parse_answer_text, validate_answer
from .backend import ChatBackend, ModelReply, PromptMessage, StructuredFallback, Usage
from .cache import SummaryCache
from .core import LLMSummarizer
from .prompts import detect_language
from .report import SummarizerReport
from .settings import SummarizerSettings
from .langchain import LangChainBackend, LangChainSummarizer
from .llamaindex import LlamaIndexBackend, LlamaIndexSummarizer
from .prompts import DEFAULT_PROMPTS, SummaryPrompts
from .self_query import LangChainSelfQuery, LlamaIndexSelfQuery, SelfQuery, validate_filters

__all__ = [
    "DEFAULT_PROMPTS",
    "ChatBackend",
    "InvalidOutputError",
    "LLMSummarizer",
    "LangChainBackend",
    "LangChainSelfQuery",
    "LangChainSummarizer",
    "LlamaIndexBackend",
    "LlamaIndexSelfQuery",
    "LlamaIndexSummarizer",
    "ModelReply",
    "PromptMessage",
    "SelfQuery",
    "StructuredFallback",
    "SummarizerError",
    "SummarizerReport",
    "SummarizerSettings",
    "SummaryCache",
    "SummaryPrompts",
    "Usage",
    "detect_language",
    "parse_answer_text",
    "validate_answer",
    "validate_filters",
]
