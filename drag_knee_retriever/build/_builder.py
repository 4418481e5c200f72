"""Documents -> leaves -> trees. No I/O, no vectors: the index embeds and writes what this builds.

Leaves are pages (when a document has pages: one leaf each, never merged; a page longer than
``BuildConfig.passage_words`` becomes a page node over its passage leaves), otherwise
Markdown sections' paragraphs (headings become natural parents) or plain paragraphs, merged below
``min_leaf_chars`` and split above ``max_leaf_chars`` at sentence boundaries. Consecutive siblings
are grouped by ``branching`` until one root per document remains (a one-leaf document's root is
that leaf). Ids come from :mod:`.ids` (a leaf's from its document id and ordinal, an inner node's
from its document id and path), so re-ingesting the same document gives the same ids.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.config import BuildConfig
from drag_knee_retriever.build._headings import find_headings, headings_outline
from drag_knee_retriever.model._ids import ROOT_PATH, leaf_id, node_id
from drag_knee_retriever.model._nodes import CHUNK_UNITS, FILE_STAMP_KEY, UNITS_KEY, Document, Span, TreeNode
from drag_knee_retriever.model._point_schema import OCR_PAGES_KEY, TEXT_SOURCE_KEY, TEXT_SOURCE_MIXED, TEXT_SOURCE_OCR, TEXT_SOURCE_PDF
from drag_knee_retriever.build._statements import StatementPage, document_statements, statement_kind
from drag_knee_retriever.build._summarize import ExtractiveSummarizer, Summarizer, Summary, SummaryRequest, ends_in_abbreviation, split_sentences

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
# A setext underline: only '=' or only '-' (at least three), up to three spaces of indent.
_SETEXT = re.compile(r"^ {0,3}(=+|-{3,})\s*$")


@dataclass
class _Leaf:
    text: str
    page: Optional[int] = None
    title: Optional[str] = None
    part: Optional[int] = None  # passage number within its page (1-based), if the page was split
    path: Tuple[str, ...] = ()  # the headings above it, outer first (its title is the last)


@dataclass
class _Draft:
    """A node while the tree is being shaped (before ids, spans and summaries)."""

    leaf: Optional[_Leaf] = None
    ordinal: int = -1
    title: Optional[str] = None
    children: List["_Draft"] = field(default_factory=list)

    is_leaf = property(lambda self: self.leaf is not None)


@dataclass
class DocumentTree:
    """One document's nodes, ordered leaves first and root last (the order they are written in)."""

    doc_id: str
    doc_hash: str
    nodes: List[TreeNode]

    @property
    def root(self) -> TreeNode:
        return self.nodes[-1]

    @property
    def leaves(self) -> List[TreeNode]:
        return sorted((n for n in self.nodes if n.is_leaf), key=lambda n: n.span.first_leaf)


# -- leaves ----------------------------------------------------------------------------------


def _split_long(text: str, limit: int) -> List[str]:
    if len(text) <= limit:
        return [text]
    pieces: List[str] = []
    current = ""
    for sentence in split_sentences(text) or [text]:
        # A sentence longer than a leaf: cut at a space. The cuts move an offset instead of slicing
        # the rest off each time (that copied the remainder per cut: quadratic, a 50 MB line ran for
        # hours); the pieces are the same.
        start, end = 0, len(sentence)
        while end - start > limit:
            cut = sentence.rfind(" ", start, start + limit) - start
            cut = cut if cut > limit // 2 else limit
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence[start : start + cut].strip())
            start += cut
            while start < end and sentence[start].isspace():
                start += 1
        if start:
            sentence = sentence[start:]
        if current and len(current) + 1 + len(sentence) > limit:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        pieces.append(current)
    return [p for p in pieces if p]


# Where a passage may end: after a sentence's end mark and its whitespace, or at a line break
# (PDF text layers put table rows and list items on lines of their own); never after an
# abbreviation or initial ("Dr. Smith", "U.S. Army": summarize.ends_in_abbreviation).
_PASSAGE_BREAK = re.compile(r"(?<=[.!?;:])\s+|\s*\n\s*")


def passage_bounds(text: str, max_words: int) -> List[Tuple[int, int]]:
    """``[start, end)`` character ranges of ``text``'s passages of at most ~``max_words`` words.

    Consecutive sentences / lines are packed greedily; a segment longer than ``max_words`` is cut
    at a word boundary; a last passage under a fifth of ``max_words`` joins the one before. Every
    range is an exact, stripped substring of ``text`` (so a passage can be found in its page).
    """
    segments: List[Tuple[int, int]] = []
    start = 0
    for match in _PASSAGE_BREAK.finditer(text):
        if "\n" not in match.group(0) and ends_in_abbreviation(text, match.start()):
            continue
        if match.start() > start:
            segments.append((start, match.start()))
        start = match.end()
    if start < len(text):
        segments.append((start, len(text)))
    pieces: List[Tuple[int, int]] = []
    for lo, hi in segments:  # cut over-long segments at word boundaries
        words = list(re.finditer(r"\S+", text[lo:hi]))
        for i in range(0, len(words), max_words):
            chunk = words[i : i + max_words]
            pieces.append((lo + chunk[0].start(), lo + chunk[-1].end()))
    passages: List[List[int]] = []
    count = 0
    for lo, hi in pieces:
        n = len(text[lo:hi].split())
        if passages and count + n <= max_words:
            passages[-1][1] = hi
            count += n
        else:
            passages.append([lo, hi])
            count = n
    if len(passages) > 1 and len(text[passages[-1][0]:passages[-1][1]].split()) < max_words / 5:
        last = passages.pop()
        passages[-1][1] = last[1]
    return [(lo, hi) for lo, hi in passages]


def split_passages(text: str, max_words: int) -> List[str]:
    """``text`` as passages of at most ~``max_words`` words (see :func:`passage_bounds`)."""
    return [text[lo:hi] for lo, hi in passage_bounds(text, max_words)]


def _splits(page: str, config: BuildConfig) -> bool:
    """Whether a page becomes passages: ``passage_words`` is set and the page is longer than
    ``split_pages_over`` words (or, unset, than one passage)."""
    leaves = config.leaves
    limit = leaves.split_pages_over if leaves.split_pages_over is not None else leaves.passage_words
    return bool(leaves.passage_words) and len(page.split()) > limit


def _paragraphs(text: str, config: BuildConfig) -> List[str]:
    """Paragraphs (blank-line separated), merged when short and split when long."""
    # Paragraphs are separated by blank lines; text without any blank line but with line breaks
    # (one paragraph per line, as many exports write it) is split at the line breaks instead.
    separator = r"\n\s*\n" if re.search(r"\n\s*\n", text.strip()) else r"\n"
    raw = [re.sub(r"[ \t]*\n[ \t]*", "\n", p).strip() for p in re.split(separator, text)]
    raw = [p for p in raw if p]
    merged: List[str] = []
    for paragraph in raw:
        if merged and len(merged[-1]) < config.leaves.min_chars and len(merged[-1]) + len(paragraph) + 2 <= config.leaves.max_chars:
            merged[-1] = f"{merged[-1]}\n\n{paragraph}"
        else:
            merged.append(paragraph)
    if len(merged) > 1 and len(merged[-1]) < config.leaves.min_chars and len(merged[-2]) + len(merged[-1]) + 2 <= config.leaves.max_chars:
        last = merged.pop()
        merged[-1] = f"{merged[-1]}\n\n{last}"
    out: List[str] = []
    for paragraph in merged:
        out.extend(_split_long(paragraph, config.leaves.max_chars))
    return out


def _markdown_sections(text: str) -> Optional[List[Tuple[int, Optional[str], str]]]:
    """(heading level, heading, body) per section, or None when the text has no headings.

    ATX headings (``# Title``) and setext headings (a line underlined with ``===`` for level 1 or
    ``---`` for level 2, CommonMark's rule: the underline follows a non-blank paragraph line);
    nothing inside a code fence. A line scanner, not markdown-it-py (installed with rich): that
    parser is over an order of magnitude slower at finding the same headings
    (``benchmarks/splitters.py``).
    """
    sections: List[Tuple[int, Optional[str], List[str]]] = [(0, None, [])]
    in_fence = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        body = sections[-1][2]
        underline = None if in_fence else _SETEXT.match(line)
        if underline and body and body[-1].strip() and not _HEADING.match(body[-1]) \
                and not (len(body) > 1 and body[-2].strip() and underline.group(1)[0] == "-"):
            # "Title\n=====": the line above becomes the heading (a "---" under a paragraph of
            # several lines is a thematic break in plain text more often than a heading: kept as text)
            title = body.pop().strip()
            sections.append((1 if underline.group(1)[0] == "=" else 2, title, []))
        elif match:
            sections.append((len(match.group(1)), match.group(2).strip(), []))
        else:
            body.append(line)
    if len(sections) == 1:
        return None
    return [(lvl, title, "\n".join(body)) for lvl, title, body in sections]


def _outline_page_paths(outline: Sequence[dict], pages: int) -> Dict[int, Tuple[str, ...]]:
    """Each page's section path: the outline entries open at the page, outer first (the innermost
    is the last one starting on or before it), so a page is indexed with the headings it sits under."""
    paths: Dict[int, Tuple[str, ...]] = {}
    entries = sorted(enumerate(outline), key=lambda e: (e[1]["page"], e[0]))
    stack: List[Tuple[int, str]] = []
    at = 0
    for page in range(1, pages + 1):
        while at < len(entries) and entries[at][1]["page"] <= page:
            level, title = entries[at][1].get("level", 0), entries[at][1]["title"]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            at += 1
        if stack:
            paths[page] = tuple(t for _, t in stack)
    return paths


def _detected_sections(text: str) -> Optional[List[Tuple[int, Optional[str], str]]]:
    """Like :func:`_markdown_sections`, from the headings :func:`find_headings` finds in a text."""
    headings = find_headings([text])
    if not headings:
        return None
    lines = text.splitlines()
    sections: List[Tuple[int, Optional[str], str]] = [(0, None, "\n".join(lines[: headings[0].line]))]
    for i, h in enumerate(headings):
        end = headings[i + 1].line if i + 1 < len(headings) else len(lines)
        sections.append((h.level + 1, h.title, "\n".join(lines[h.line + 1 : end])))
    return sections


_OPAQUE_NAME = re.compile(r"[0-9a-f]{16,}|[0-9a-f-]{32,}", re.IGNORECASE)


def document_title(metadata: Mapping[str, Any]) -> Optional[str]:
    """A document's title for its leaves' context: ``metadata["title"]``, else the loader's file
    ``path`` (a file name such as ``ACME_10-K_2023.pdf`` often names the company and year; it
    loses its folder, suffix and underscores); none when it is an opaque id such as a hash."""
    title = metadata.get("title")
    if not isinstance(title, str) or not title.strip():
        path = metadata.get("path")
        if not isinstance(path, str) or not path.strip():
            return None
        title = re.split(r"[\\/]", path.strip())[-1]
    title = " ".join(title.split())
    stem = re.sub(r"\.(pdf|md|markdown|txt|html?|docx?)$", "", title, flags=re.IGNORECASE)
    if stem != title:
        title = re.sub(r"[_]+", " ", stem).strip()
    if not title or _OPAQUE_NAME.fullmatch(title):
        return None
    return title[:200]


def _leaf_context(leaf: "_Leaf", document: Document, config: BuildConfig) -> Optional[str]:
    """The context path a leaf's vectors read in front of its text (``BuildConfig.leaf_context``);
    ``None`` for the default (the section title alone, as :func:`vectorize.titled` puts it)."""
    if not config.writes_context:
        return None
    parts: List[str] = []
    for part in config.vectors.context:
        if part == "title":
            title = document_title(document.metadata)
            if title:
                parts.append(title)
        elif part == "section" and leaf.title:
            parts.append(leaf.title)
        elif part == "path" and (leaf.path or leaf.title):
            parts.append(" > ".join(leaf.path or (leaf.title,)))
        elif part == "page" and leaf.page is not None:
            parts.append(f"page {leaf.page}")
    for key in config.vectors.context_metadata:
        value = document.metadata.get(key)
        if value is not None and str(value).strip():
            parts.append(f"{key}: {' '.join(str(value).split())[:200]}")
    return " | ".join(parts)


def _outline_sections(drafts: List[Tuple[int, _Draft]], outline: Sequence[dict], branching: int) -> _Draft:
    """Pages nested under the document's own sections (outline entries by level); a page belongs
    to the innermost section open at it; pages before the first entry stay at the top. Sections
    holding no page vanish; a section's pages are grouped by ``branching`` under its title."""
    entries = sorted(enumerate(outline), key=lambda e: (e[1]["page"], e[0]))
    stack: List[Tuple[int, Optional[str], List[_Draft]]] = [(-1, None, [])]

    def close() -> None:
        _level, title, items = stack.pop()
        if items:
            stack[-1][2].append(_group(items, branching, title))

    at = 0
    for page, draft in drafts:
        while at < len(entries) and entries[at][1]["page"] <= page:
            level, title = entries[at][1]["level"], entries[at][1]["title"]
            while len(stack) > 1 and stack[-1][0] >= level:
                close()
            stack.append((level, title, []))
            at += 1
        stack[-1][2].append(draft)
    while len(stack) > 1:
        close()
    return _group(stack[0][2], branching)


def _group(items: List[_Draft], branching: int, title: Optional[str] = None) -> _Draft:
    """Group consecutive items by ``branching`` until one node remains."""
    level = items
    while len(level) > 1:
        groups = [level[i : i + branching] for i in range(0, len(level), branching)]
        if len(groups) > 1 and len(groups[-1]) == 1:  # a one-child parent adds nothing
            groups[-2].extend(groups.pop())
        level = [_Draft(children=g) for g in groups]
        if len(level) == 1:
            break
    top = level[0]
    if title and not top.is_leaf and top.title is None:
        top.title = title
    return top


def _shape(document: Document, config: BuildConfig,
           statements: Mapping[int, StatementPage]) -> Tuple[_Draft, List[_Leaf]]:
    leaves: List[_Leaf] = []

    def new_leaf(text: str, page: Optional[int] = None, path: Tuple[str, ...] = (),
                 part: Optional[int] = None) -> _Draft:
        leaf = _Leaf(text=text, page=page, title=path[-1] if path else None, part=part, path=path)
        leaves.append(leaf)
        return _Draft(leaf=leaf, ordinal=len(leaves) - 1)

    if document.pages is not None:
        outline = list(document.outline or ()) if config.sections.outline else []
        if not outline and config.sections.headings:
            # No bookmarks: the headings in the page text are the document's sections.
            outline = headings_outline(document.pages)
        paths = _outline_page_paths(outline, len(document.pages))
        drafts: List[Tuple[int, _Draft]] = []
        for n, page in enumerate(document.pages, start=1):
            text = page.strip()
            if not text:
                continue
            path = paths.get(n, ())
            statement = statements.get(n)
            if statement is not None:
                # A statement's page is read under the statement's name as a section's page is under
                # its title; under its own heading's section (SectionConfig.headings) it replaces that.
                named = path and path[-1].lower() == statement.heading.lower()
                path = (path[:-1] if named else path) + (statement.title,)
            parts = split_passages(text, config.leaves.passage_words) if _splits(text, config) else [text]
            if len(parts) == 1:
                drafts.append((n, new_leaf(text, page=n, path=path)))
            else:
                # A page node: its passages are the leaves the dense side reads whole; the node
                # itself is what a user cites and returns the whole page.
                drafts.append((n, _Draft(children=[new_leaf(part, page=n, part=i, path=path)
                                                   for i, part in enumerate(parts, 1)])))
        if outline:
            return _outline_sections(drafts, outline, config.branching), leaves
        return _group([d for _, d in drafts], config.branching), leaves

    text = document.text or ""
    sections = _markdown_sections(text) if config.sections.markdown else None
    if not sections and config.sections.headings:
        sections = _detected_sections(text)
    if not sections:
        drafts = [new_leaf(p) for p in _paragraphs(text, config)]
        return _group(drafts, config.branching), leaves

    # Headings nest: a section holds its paragraphs and the deeper sections that follow it.
    stack: List[Tuple[int, Optional[str], List[_Draft]]] = [(0, None, [])]

    def close_section() -> None:
        level, title, items = stack.pop()
        if items:
            stack[-1][2].append(_group(items, config.branching, title))

    for level, title, body in sections:
        if title is not None:
            while len(stack) > 1 and stack[-1][0] >= level:
                close_section()
            stack.append((level, title, []))
        path = tuple(t for _, t, _ in stack if t)
        for paragraph in _paragraphs(body, config):
            stack[-1][2].append(new_leaf(paragraph, path=path))
    while len(stack) > 1:
        close_section()
    items = stack[0][2]
    if not items:
        # Headings only, no body: index the headings themselves.
        items = [new_leaf(t) for _, t, _ in sections if t]
    return _group(items, config.branching), leaves


# -- trees -----------------------------------------------------------------------------------


def document_hash(document: Document, config: BuildConfig, summarizer_identity: str,
                  statements: Optional[Mapping[int, StatementPage]] = None) -> str:
    """A hash of everything that shapes a document's tree: content, metadata, settings, summariser.

    ``statements``: the document's statement pages when the caller has read them already."""
    digest = hashlib.sha256()
    body: Dict[str, Any] = {"text": document.text, "pages": None if document.pages is None else list(document.pages)}
    body.update({"outline": [dict(e) for e in document.outline]} if document.outline else {})
    body.update({"keep_text": True} if document.keep_text and document.text is not None else {})
    digest.update(json.dumps(body, ensure_ascii=False, sort_keys=True).encode())
    # The file stamp (size and mtime) says when to read a file again, not what its tree is.
    metadata = {k: v for k, v in document.metadata.items() if k != FILE_STAMP_KEY}
    digest.update(json.dumps(metadata, ensure_ascii=False, sort_keys=True, default=str).encode())
    if document.page_metadata is not None:
        digest.update(json.dumps([dict(m) for m in document.page_metadata], ensure_ascii=False, sort_keys=True,
                                 default=str).encode())
    digest.update(config.fingerprint().encode())
    # Statement titles change only the trees of documents that have statement pages: every other
    # document keeps the hash it had before the setting existed (and is not rebuilt).
    statements = document_statements(document, config) if statements is None else statements
    if statements:
        # The kind too: a tree's statement pages are marked with it (TreeNode.statement).
        digest.update(json.dumps(sorted((n, p.title, p.kind) for n, p in statements.items()),
                                 ensure_ascii=False).encode())
    digest.update(summarizer_identity.encode())
    return digest.hexdigest()[:32]


def build_document_trees(
    documents: Sequence[Document],
    config: Optional[BuildConfig] = None,
    summarizer: Optional[Summarizer] = None,
) -> List[DocumentTree]:
    """Build one tree per document; summaries are requested level by level, bottom-up."""
    config = config or BuildConfig()
    summarizer = summarizer if summarizer is not None else ExtractiveSummarizer(config)
    identity = getattr(summarizer, "identity", type(summarizer).__name__)

    shaped = []
    for document in documents:
        statements = document_statements(document, config)
        root, leaves = _shape(document, config, statements)
        shaped.append((document, root, leaves, document_hash(document, config, identity, statements), statements))

    # Assign ids, paths, levels, spans; collect nodes by height (leaves = 0) for summarising.
    records: Dict[int, dict] = {}
    by_height: Dict[int, List[int]] = {}

    def visit(draft: _Draft, document: Document, doc_hash: str, path: str, level: int,
              parent: Optional[str], leaves: List[_Leaf]) -> int:
        key = id(draft)
        if draft.is_leaf:
            nid = leaf_id(document.id, draft.ordinal)
            leaf = draft.leaf
            assert leaf is not None
            span = Span(draft.ordinal, draft.ordinal, leaf.page, leaf.page, leaf.part, leaf.part,
                        document.metadata.get(UNITS_KEY) == CHUNK_UNITS)
            records[key] = dict(id=nid, doc=document, doc_hash=doc_hash, path=path, level=level, parent=parent,
                                children=[], span=span, height=0, title=leaf.title, leaf_texts=[leaf.text],
                                context=_leaf_context(leaf, document, config))
        else:
            nid = node_id(document.id, path)
            child_keys = [visit(c, document, doc_hash, f"{path}.{i}", level + 1, nid, leaves)
                          for i, c in enumerate(draft.children)]
            kids = [records[k] for k in child_keys]
            first, last = kids[0]["span"], kids[-1]["span"]
            span = Span(first.first_leaf, last.last_leaf, first.first_page, last.last_page, chunks=first.chunks)
            records[key] = dict(id=nid, doc=document, doc_hash=doc_hash, path=path, level=level, parent=parent,
                                children=child_keys, span=span, height=1 + max(k["height"] for k in kids),
                                title=draft.title, leaf_texts=[t for k in kids for t in k["leaf_texts"]])
        by_height.setdefault(records[key]["height"], []).append(key)
        return key

    roots = []
    for document, root, leaves, doc_hash, _statements in shaped:
        roots.append(visit(root, document, doc_hash, ROOT_PATH, 0, None, leaves))

    descriptions: Dict[int, Summary] = {}
    for height in sorted(by_height):
        keys = by_height[height]
        requests = []
        for key in keys:
            rec = records[key]
            child_texts = tuple(_described_text(records[c], descriptions[c]) for c in rec["children"])
            requests.append(SummaryRequest(
                node_id=rec["id"], doc_id=rec["doc"].id, level=rec["level"], is_leaf=height == 0,
                child_texts=child_texts or tuple(rec["leaf_texts"]), leaf_texts=tuple(rec["leaf_texts"]),
                content_hash=_content_hash(rec, child_texts), title=rec["title"],
                metadata=rec["doc"].metadata,
            ))
        summaries = summarizer.describe(requests)
        if len(summaries) != len(requests):
            raise RuntimeError(
                f"summariser {identity} returned {len(summaries)} summaries for {len(requests)} nodes"
            )
        for key, summary in zip(keys, summaries):
            descriptions[key] = summary

    trees: List[DocumentTree] = []
    for (document, _root, leaves, doc_hash, statements), root_key in zip(shaped, roots):
        nodes: List[TreeNode] = []
        # Post-order within the document puts every child before its parent and the root last.
        def emit(key: int) -> None:
            rec = records[key]
            for child in rec["children"]:
                emit(child)
            summary = descriptions[key]
            is_leaf = rec["height"] == 0
            text = rec["leaf_texts"][0] if is_leaf else _described_text(rec, summary)
            nodes.append(TreeNode(
                id=rec["id"], doc_id=document.id, level=rec["level"], is_leaf=is_leaf, span=rec["span"],
                text=text, parent_id=rec["parent"], child_ids=tuple(records[c]["id"] for c in rec["children"]),
                keywords=tuple(summary.keywords), title=rec["title"], path=rec["path"],
                metadata=_node_metadata(_page_metadata(document, rec["span"]), rec["span"]), doc_hash=doc_hash,
                description=summary.text if is_leaf and summary.text else None,
                context=rec.get("context"),
                statement=statement_kind(statements, rec["span"]),
            ))
        emit(root_key)
        if document.keep_text and document.text is not None and "\n\n".join(x.text for x in leaves) != document.text:
            nodes[-1] = replace(nodes[-1], source_text=document.text)  # the root keeps the text as given
        trees.append(DocumentTree(doc_id=document.id, doc_hash=doc_hash, nodes=nodes))
    return trees


#: On the nodes spanning several pages of a document with ``page_metadata``: the keys only its pages have.
PAGE_KEYS = "drag_page_keys"


def _page_metadata(document: Document, span: Span) -> Mapping[str, Any]:
    """The document's metadata, with its page's own (``Document.page_metadata``) over it for a
    node within one page."""
    pages = document.page_metadata
    if pages is None:
        return document.metadata
    if span.first_page is None or span.first_page != span.last_page:
        # The keys only pages have, so that a filter naming one (flat search over the leaves)
        # is not refused as a typo (DragKneeIndex._check_filter_keys reads the roots).
        keys = sorted({k for m in pages for k in m if k not in document.metadata and (not k.startswith("drag_") or k == "drag_member_refs")})
        return {**document.metadata, PAGE_KEYS: keys} if keys else document.metadata
    return {**document.metadata, **pages[span.first_page - 1]}


def _node_metadata(metadata: Mapping[str, Any], span: Span) -> Dict[str, Any]:
    """A node's metadata: the document's, with the OCR page list turned into the node's ``text_source``.

    A leaf says where its page's text came from (``"pdf"`` or ``"ocr"``); an inner node says the
    same of its span (``"mixed"`` when it has both). The list itself stays on the document only,
    so a 500-page scan does not copy 500 numbers onto every node.
    """
    out = dict(metadata)
    ocr_pages = out.pop(OCR_PAGES_KEY, None)
    if ocr_pages is None or span.first_page is None:
        return out
    ocr = set(ocr_pages)
    span_pages = range(span.first_page, (span.last_page or span.first_page) + 1)
    inside = sum(1 for p in span_pages if p in ocr)
    out[TEXT_SOURCE_KEY] = (TEXT_SOURCE_PDF if inside == 0 else TEXT_SOURCE_OCR if inside == len(span_pages)
                            else TEXT_SOURCE_MIXED)
    return out


def build_trees(
    documents: Sequence[Document],
    config: Optional[BuildConfig] = None,
    summarizer: Optional[Summarizer] = None,
) -> List[TreeNode]:
    """All nodes of all documents' trees (each document: leaves first, root last)."""
    return [node for tree in build_document_trees(documents, config, summarizer) for node in tree.nodes]


def _described_text(record: dict, summary: Summary) -> str:
    if record["height"] == 0:
        return summary.text or record["leaf_texts"][0]
    if summary.text and summary.text.strip():
        return summary.text.strip()
    return " ".join(record["leaf_texts"])[:600]


def _content_hash(record: dict, child_texts: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for text in record["leaf_texts"] if record["height"] == 0 else child_texts:
        digest.update(text.encode())
        digest.update(b"\x1f")
    return digest.hexdigest()[:32]
