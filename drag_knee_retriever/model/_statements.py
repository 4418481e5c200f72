"""The names of a financial report's primary statements, as its pages head them and as questions say them.

A filing heads a statement's page with its own form of the name ("Consolidated Statements of
Operations", "Statement of Financial Position"); a question names it as analysts do ("the income
statement", "capex from the cash flow statement", "the P&L"). Both map onto one kind (a
:data:`STATEMENT_NAMES` key): the build marks the pages of each statement with its kind
(:mod:`drag_knee_retriever.build._statements`), and a search routes a question that names a
statement to those pages (:func:`named_statements`, :mod:`drag_knee_retriever.search._statement_route`).
"""

from __future__ import annotations

import re
from typing import Dict, FrozenSet, Optional

__all__ = ["STATEMENT_NAMES", "HEADING_NAME", "named_statements", "statement_of"]

#: Each primary statement's common names, as a question may call it (the words indexed with its pages).
STATEMENT_NAMES: Dict[str, str] = {
    "income": "income statement, statement of income, operations, earnings, profit or loss",
    "comprehensive": "statement of comprehensive income",
    "balance": "balance sheet, statement of financial position",
    "cash": "cash flow statement, statement of cash flows",
    "equity": "statement of shareholders' equity, stockholders' equity, changes in equity",
}

# Longest alternatives first: "statements of comprehensive income" before "statements of income".
HEADING_NAME = re.compile(
    r"(?:condensed\s+)?(?:consolidated\s+|combined\s+)?"
    r"(?P<name>balance\s+sheets?|income\s+statements?|statements?\s+of\s+(?:consolidated\s+)?"
    r"(?:comprehensive\s+(?:income|loss|earnings)|cash\s+flows?|financial\s+position|operations|income|earnings|"
    r"(?:changes\s+in\s+)?(?:stockholders|shareholders|share\s*owners)['\u2019]?\s+equity|changes\s+in\s+equity))",
    re.IGNORECASE)


def statement_of(name: str) -> Optional[str]:
    """Which statement (a :data:`STATEMENT_NAMES` key) a heading's name is, or None."""
    lowered = " ".join(name.lower().split())
    if "comprehensive" in lowered:
        return "comprehensive"
    if "cash flow" in lowered:
        return "cash"
    if "balance sheet" in lowered or "financial position" in lowered:
        return "balance"
    if "equity" in lowered:
        return "equity"
    if any(word in lowered for word in ("operations", "income", "earnings")):
        return "income"
    return None


# How a question names a statement: a heading's name (above), or the analysts' short forms.
_ASKED = re.compile(
    r"\b(?:balance\s+sheets?|income\s+statements?|cash[\s-]+flows?\s+statements?|"
    r"p\s*&\s*l|profit\s+(?:and|&)\s+loss(?:\s+statements?)?|"
    r"statements?\s+of\s+(?:consolidated\s+)?(?:comprehensive\s+(?:income|loss|earnings)|cash\s+flows?|"
    r"financial\s+position|operations|income|earnings|(?:changes\s+in\s+)?(?:stockholders|shareholders|"
    r"share\s*owners)['\u2019]?\s+equity|changes\s+in\s+equity))\b",
    re.IGNORECASE)


def named_statements(text: str) -> FrozenSet[str]:
    """The statements (:data:`STATEMENT_NAMES` keys) a question names: "the balance sheet and the
    statement of income" -> {"balance", "income"}; a question that names none -> empty."""
    kinds = set()
    for match in _ASKED.finditer(text):
        name = match.group(0).lower()
        kind = "income" if name.startswith("p") else statement_of(name)  # "P&L", "profit and loss"
        if kind is not None:
            kinds.add(kind)
    return frozenset(kinds)
