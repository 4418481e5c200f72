"""LLM-written node descriptions and keywords, and self-query filters, through the user's own LangChain
or LlamaIndex model.

>>> from drag_knee_retriever.llm import LangChainSummarizer          # doctest: +SKIP
>>> summarizer = LangChainSummarizer(chat_model, cache="descriptions.sqlite", max_concurrency=8)
>>> index = DragKneeIndex("./index", summarizer=summarizer)          # doctest: +SKIP
>>> index.add_documents(docs); print(summarizer.last_report)         # doctest: +SKIP

Importing this package imports neither framework: each adapter imports its framework when it is
constructed and raises ImportError naming the extra to install when it is missing.
"""

from drag_knee_retriever.errors import InvalidOutputError, SummarizerError
from drag_knee_retriever.llm.answers import parse_answer_text, validate_answer
from drag_knee_retriever.llm.backend import ChatBackend, ModelReply, PromptMessage, StructuredFallback, Usage
from drag_knee_retriever.llm.cache import SummaryCache
from drag_knee_retriever.llm.core import LLMSummarizer
from drag_knee_retriever.llm.prompts import detect_language
from drag_knee_retriever.llm.report import SummarizerReport
from drag_knee_retriever.llm.settings import SummarizerSettings
from drag_knee_retriever.llm.langchain import LangChainBackend, LangChainSummarizer
from drag_knee_retriever.llm.llamaindex import LlamaIndexBackend, LlamaIndexSummarizer
from drag_knee_retriever.llm.prompts import DEFAULT_PROMPTS, SummaryPrompts
from drag_knee_retriever.llm.self_query import LangChainSelfQuery, LlamaIndexSelfQuery, SelfQuery, validate_filters

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
