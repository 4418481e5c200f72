"""Framework adapters, and the framework-free conversions they share.

The adapters live in submodules that import their framework:

- :mod:`drag_knee_retriever.integrations.langchain` (``pip install "drag-knee-retriever[langchain]"``)
- :mod:`drag_knee_retriever.integrations.llamaindex` (``pip install "drag-knee-retriever[llamaindex]"``)

This package module imports neither framework and holds no implementation: it re-exports the
shared parts from :mod:`._common` (metadata, settings, index check, knee) and :mod:`._pages`
(framework documents -> core documents).
"""

from drag_knee_retriever.integrations._common import (
    CHILD_IDS,
    DESCRIPTION,
    DOC_HASH,
    DOC_ID,
    FIRST_LEAF,
    FIRST_PAGE,
    INSTALL_HINT,
    IS_LEAF,
    KEYWORDS,
    LAST_LEAF,
    LAST_PAGE,
    LEVEL,
    META_PREFIX,
    NODE_ID,
    PARENT_ID,
    PATH,
    RANK,
    SCORE,
    SEARCH_SETTINGS,
    SPAN,
    TITLE,
    RetrieverSettings,
    check_index,
    check_query,
    check_source_metadata,
    hit_metadata,
    knee_keep,
    make_index,
    search_overrides,
    tree_node_from_metadata,
    tree_node_metadata,
)
from drag_knee_retriever.integrations._pages import PageEntry, group_paged_documents, page_number_from_label

__all__ = [
    "META_PREFIX",
    "PageEntry",
    "RetrieverSettings",
    "check_query",
    "group_paged_documents",
    "hit_metadata",
    "search_overrides",
    "tree_node_from_metadata",
    "tree_node_metadata",
]
