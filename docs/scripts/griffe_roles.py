"""A griffe extension for the API reference: the docstrings' Sphinx roles as Markdown code.

The package's docstrings cross-reference with reST roles (``:class:`~drag_knee_retriever.StoreConfig```);
mkdocstrings renders Markdown, where they would show as typed. This turns each into inline code: the
last name part after ``~`` (Sphinx's convention), else the whole path. mkdocs.yml loads it.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const|type):`(~?)([^`]+)`")


def plain(text: str) -> str:
    return ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)


class SphinxRoles(Extension):
    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
