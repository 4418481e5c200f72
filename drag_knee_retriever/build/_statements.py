"""The pages of a financial report's primary statements, and the names a reader calls them by.

A question about a filing names a statement the way analysts say it ("the income statement", "the
balance sheet", "capex from the cash flow statement"), while the filing heads the page with its own
form of the name ("Consolidated Statements of Operations", "Statement of Financial Position") on a
page that is otherwise a table of figures. :func:`statement_pages` finds those pages; the builder
indexes each of their leaves with the statement's heading and its common names in front (the leaf's
section title, as an outline's section title is), so the words of the question reach the page, and
marks every node within the page with the statement's kind (:func:`statement_kind`), so that a question
naming the statement can be routed to its pages (:mod:`drag_knee_retriever.search._statement_route`).

A page is a statement's page when one of its first lines (or two of them read together: text layers
often break a heading, "CONSOLIDATED STATEMENTS OF" / "OPERATIONS(in thousands)") is a short line
naming exactly one statement, and the page is a table: at least :data:`MIN_FIGURES` of its words
hold a digit. Running text that mentions a statement, a table of contents or an index of the
statements (several names at the top of one page), and the notes are not statement pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

from drag_knee_retriever.config import BuildConfig
from drag_knee_retriever.model._nodes import Document, Span
from drag_knee_retriever.model._statements import HEADING_NAME, STATEMENT_NAMES, statement_of

__all__ = ["STATEMENT_NAMES", "StatementPage", "document_statements", "statement_kind", "statement_of", "statement_pages"]

#: The least share of a statement page's words that hold a digit (measured on FinanceBench's 10-K
#: statement pages: 0.16-0.40, median 0.32; pages that only mention a statement: median ~0.2).
MIN_FIGURES = 0.2
_HEAD_LINES = 8  # a statement's heading sits above its table, within the page's first lines
_MAX_WORDS = 14  # a heading line with the company's name or the units beside it, not a sentence


@dataclass(frozen=True)
class StatementPage:
    """A page of a primary statement: its heading as the page writes it, and which statement it is."""

    heading: str
    kind: str  # a STATEMENT_NAMES key

    @property
    def title(self) -> str:
        """What the page's leaves are indexed with: the heading, then the statement's common names."""
        return f"{self.heading} ({STATEMENT_NAMES[self.kind]})"


def _figures_share(text: str) -> float:
    words = text.split()
    return sum(any(c.isdigit() for c in w) for w in words) / len(words) if words else 0.0


def _heading_on(lines: List[str]) -> Optional[StatementPage]:
    """The one statement heading among a page's first lines (spacing normalised), or None when none
    or several statements are named there (an index of the statements)."""
    found: Dict[str, str] = {}  # kind -> the heading that names it first
    for i, line in enumerate(lines):
        for text in (line, f"{line} {lines[i + 1]}" if i + 1 < len(lines) else None):
            if text is None or len(text.split()) > _MAX_WORDS:
                continue
            match = HEADING_NAME.search(text)
            if match is None:
                continue
            kind = statement_of(match.group("name"))
            if kind is not None:
                found.setdefault(kind, " ".join(match.group(0).split()))
            break  # the line alone named it: the joined pair would name the same
    if len(found) != 1:
        return None
    (kind, heading), = found.items()
    return StatementPage(heading[:1].upper() + heading[1:] if heading.islower() else heading, kind)


def statement_pages(pages: Sequence[str]) -> Dict[int, StatementPage]:
    """The pages (1-based) of ``pages`` that show a primary financial statement."""
    out: Dict[int, StatementPage] = {}
    for number, page in enumerate(pages, start=1):
        if not page:
            continue
        found = _heading_on([ln.strip() for ln in page.splitlines() if ln.strip()][:_HEAD_LINES])
        if found is not None and _figures_share(page) >= MIN_FIGURES:
            out[number] = found
    return out


def statement_kind(statements: Optional[Mapping[int, StatementPage]], span: Span) -> Optional[str]:
    """Which statement a node within one statement page shows (its page's kind), else None."""
    if not statements or span.first_page is None or span.first_page != span.last_page:
        return None
    page = statements.get(span.first_page)
    return page.kind if page is not None else None


def document_statements(document: Document, config: BuildConfig) -> Dict[int, StatementPage]:
    """The document's statement pages where ``SectionConfig.statements`` applies (read once a build)."""
    return statement_pages(document.pages) if config.sections.statements and document.pages is not None else {}
