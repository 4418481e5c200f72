"""The documents a framework user added, kept inside the trees: members of a source's tree.

LangChain and LlamaIndex users add *their* documents (a PDF page, a chunk, a node) and address
them by *their* ids: ``get_by_ids``, ``delete(ids)``, ``index()``'s cleanup, a docstore's upsert.
Our unit is a tree per source. This module maps one onto the other, for both adapters (it imports
neither framework):

- A :class:`Member` is one document the user added: its id, exact text and metadata, the tree it
  belongs to (``group``: its source file, else itself), its page in that source (0-based, or
  ``None``: arrival order) and, from LlamaIndex, the id of the document it came from (``ref``).
- Members of one group are ONE tree, whichever call added them: adding pages 5-9 of a file after
  pages 0-4, through ``add_documents``, ``index()``'s batches or a pipeline, rebuilds that file's
  tree with all ten (so spans keep the file's page numbers). A member id given again replaces that
  member; a member deleted by id leaves its tree without it (the last one deletes the tree).
- Each page's nodes carry its members (:data:`MEMBERS`: id, text, metadata, ref) and their ids
  (:data:`MEMBER_IDS`, for one lookup by id); a group of one member without a page number is a
  text document (sections, paragraphs) whose nodes carry :data:`MEMBER_IDS` and whose text is its
  text as given (kept on its root when the leaves do not give it back; an older tree's: its leaves
  joined).

Ids identify content: a document without an id of its own gets one derived from
its group, page and text, so two chunks of one source never replace each other, in one call or
in two, and adding the same chunk again changes nothing. Two different texts given the same id in
one call are refused, naming both.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from drag_knee_retriever.errors import InvalidDocumentError
from drag_knee_retriever.model._nodes import UNITS_KEY, Document, TreeNode
from drag_knee_retriever.integrations._common import META_PREFIX, check_source_metadata, user_metadata

log = logging.getLogger(__name__)

#: On a page's nodes: the members on that page, ``[{"id", "text", "metadata", "page", "ref", "seq"}]``.
MEMBERS = META_PREFIX + "members"
#: On a page's nodes (or every node of a one-member text tree): the ids of its members.
MEMBER_IDS = META_PREFIX + "member_ids"
#: Beside MEMBER_IDS: the ids of the source documents its members came from (LlamaIndex ``ref_doc_id``).
MEMBER_REFS = META_PREFIX + "member_refs"
#: On a tree whose members are chunks of a text (no page numbers), ``"chunks"``: its spans are
#: labelled as chunks, not pages (see ``_common``).
UNITS = UNITS_KEY  # the same key as _common.UNITS
# The shortest suffix / prefix overlap of two consecutive chunks taken for a splitter's overlap.
_MIN_OVERLAP = 12

# Filling a huge gap in page numbers with empty pages would make thousands of empty leaves.
_MAX_GAP_FACTOR = 4


@dataclass
class Member:
    """One document a user added (see the module docstring)."""

    id: str
    text: str
    metadata: Dict[str, Any]
    group: str
    page: Optional[int] = None
    ref: Optional[str] = None
    seq: int = 0
    where: str = ""
    #: Where the text starts in its source text (a splitter's ``start_index`` / ``start_char_idx``).
    start: Optional[int] = None

    def record(self) -> Dict[str, Any]:
        return {"id": self.id, "text": self.text, "metadata": self.metadata, "page": self.page,
                "ref": self.ref, "seq": self.seq, "start": self.start}

    @classmethod
    def from_record(cls, record: Mapping[str, Any], group: str) -> "Member":
        start = record.get("start")
        return cls(id=str(record["id"]), text=str(record.get("text") or ""), metadata=dict(record.get("metadata") or {}),
                   group=group, page=record.get("page"), ref=record.get("ref"), seq=int(record.get("seq") or 0),
                   start=start if isinstance(start, int) and not isinstance(start, bool) else None)


def content_id(group: Optional[str], page: Optional[int], text: str) -> str:
    """An id for a document the user gave none: what it is (its source, page and text), so the
    same chunk added again is the same member and two different chunks never share an id."""
    digest = hashlib.sha256(json.dumps([group, page, text], ensure_ascii=False).encode("utf-8")).hexdigest()
    return f"{group}#{digest[:16]}" if group else f"text-{digest[:16]}"


def check_members(members: Sequence[Member]) -> List[Member]:
    """Validate the members of one call; drop exact repeats; refuse one id given two contents."""
    seen: Dict[str, Member] = {}
    out: List[Member] = []
    for member in members:
        if not isinstance(member.text, str):
            raise InvalidDocumentError(f"{member.where}: its text is {type(member.text).__name__}, not str; "
                                       "give every document its text (decode bytes first).")
        if not member.text.strip():
            raise InvalidDocumentError(f"{member.where}: its text is empty or whitespace only; drop it or give it text.")
        check_source_metadata(member.metadata, member.where)
        try:
            Document(id=member.id, text=member.text, metadata=member.metadata)  # ids, Unicode, JSON metadata
        except InvalidDocumentError as exc:
            raise InvalidDocumentError(f"{member.where}: {exc}") from None
        earlier = seen.get(member.id)
        if earlier is not None:
            if (earlier.text, earlier.metadata, earlier.group, earlier.page) == (
                    member.text, member.metadata, member.group, member.page):
                log.info("%s repeats %s exactly; added once", member.where, earlier.where)
                continue
            raise InvalidDocumentError(
                f"{member.where} and {earlier.where} both have the id {member.id!r} but different content; "
                "ids must identify one document. Give them distinct ids, or drop the ids to get ids derived "
                "from the content. Nothing was written."
            )
        seen[member.id] = member
        out.append(member)
    _refuse_namesakes(out)
    return out


def _refuse_namesakes(members: Sequence[Member]) -> None:
    """One name, one thing (in one call): a member's id may not also name the tree other members
    join (their source, file or source document), or ``delete([id])`` could not tell them apart."""
    groups: Dict[str, List[Member]] = {}
    for m in members:
        groups.setdefault(m.group, []).append(m)
    for m in members:
        other = next((o for o in groups.get(m.id, ()) if o is not m), None)
        if other is not None:
            raise InvalidDocumentError(_clash(m, f"the source of {other.where}"))


def _clash(member: Member, what: str) -> str:
    return (f"{member.where} has the id {member.id!r}, which is also {what}; an id and a source cannot share a "
            f"name (delete([{member.id!r}]) would remove both): give it another id. Nothing was written.")


class MemberStore:
    """Members kept in a :class:`~drag_knee_retriever.DragKneeIndex` (one tree per group)."""

    def __init__(self, index: Any, ocr: Any = None) -> None:
        self.index = index
        self.ocr = ocr

    # -- reading ---------------------------------------------------------------------------------

    def _scroll(self, filters: Mapping[str, Any], *, with_text: bool) -> List[TreeNode]:
        from drag_knee_retriever.store import parse_filters

        return self.index.store.scroll_nodes(filters=parse_filters(filters), with_text=with_text)

    def locate(self, ids: Sequence[str]) -> Dict[str, str]:
        """member id -> the group (document id) that holds it, for the ids stored (one request)."""
        ids = [i for i in dict.fromkeys(ids) if isinstance(i, str) and i]
        if not ids:
            return {}
        found: Dict[str, str] = {}
        wanted = set(ids)
        for node in self._scroll({MEMBER_IDS: {"$in": ids}}, with_text=False):
            for member_id in node.metadata.get(MEMBER_IDS) or ():
                if member_id in wanted:  # not its page-mates: delete(ids) removed those too
                    found.setdefault(member_id, node.doc_id)
        # A tree made without members (the core API, an older release) is one member: itself.
        missing = [i for i in ids if i not in found]
        if missing:
            for info in self.index.store.retrieve([_root_id(i) for i in missing] + [_leaf0_id(i) for i in missing]):
                if info.level == 0 and info.doc_id in missing:
                    found.setdefault(info.doc_id, info.doc_id)
        return found

    def load(self, groups: Iterable[str]) -> Dict[str, List[Member]]:
        """The stored members of each group (an empty list for a group not stored)."""
        out: Dict[str, List[Member]] = {}
        for group in dict.fromkeys(groups):
            nodes = self._scroll({"doc_id": group}, with_text=True)
            out[group] = members_of_tree(group, nodes)
        return out

    def get(self, ids: Sequence[str]) -> List[Member]:
        """The members with these ids, in the order given; ids not stored are skipped."""
        where = self.locate(ids)
        groups = self.load(sorted(set(where.values())))
        by_id = {m.id: m for members in groups.values() for m in members}
        return [by_id[i] for i in dict.fromkeys(ids) if i in by_id]

    def matching(self, filters: Any) -> List[Member]:
        """The stored members whose own metadata satisfies ``filters`` (the core filter dialect; a
        member's ``doc_id`` is its tree's id); ``None``: every stored member. The trees holding a
        matching node are read, then each member is checked on its own metadata."""
        from types import SimpleNamespace

        from drag_knee_retriever.store import node_matches, parse_filters

        if filters is None:
            groups = [info.doc_id for info in self.index.list_documents()]
            return [m for members in self.load(groups).values() for m in members]
        spec = parse_filters(filters)
        self.index._check_filter_keys(spec)  # an unknown key is named, as in a search
        groups = sorted({n.doc_id for n in self.index.store.scroll_nodes(filters=spec, with_text=False)})
        return [m for members in self.load(groups).values() for m in members
                if node_matches(SimpleNamespace(id=m.id, metadata=m.metadata, doc_id=m.group, level=0,  # type: ignore[arg-type]
                                                is_leaf=True), spec)]

    def check(self, members: Sequence[Member]) -> List[Member]:
        """:func:`check_members`, and one name, one thing against what is stored (one request,
        before anything is written): a member's id may not name a stored tree of other members
        (a source's, or one the core API wrote), and members of a source may not join the stored
        document whose id is that source's name."""
        members = check_members(members)
        ids = {m.id for m in members}
        groups: Dict[str, List[Member]] = {}
        for m in members:
            groups.setdefault(m.group, []).append(m)
        names = list(dict.fromkeys([m.id for m in members] + list(groups)))
        stored: Dict[str, Dict[bool, TreeNode]] = {}
        for node in self.index.store.retrieve([_root_id(n) for n in names] + [_leaf0_id(n) for n in names]):
            stored.setdefault(node.doc_id, {})[node.level == 0] = node
        for name in names:
            nodes = stored.get(name, {})
            root = nodes.get(True)
            if root is None:
                continue
            held = root.metadata.get(MEMBER_IDS)
            if held == [name]:  # the stored tree is the one document of that id: it may be replaced or moved
                joiner = next((m for m in groups.get(name, ()) if m.id != name), None)
                if joiner is not None and name not in ids:
                    raise InvalidDocumentError(
                        f"{joiner.where} would join the stored document whose id is {name!r} (its source has that "
                        f"name); an id and a source cannot share a name (delete([{name!r}]) would remove both): "
                        "give the stored document another id, or these documents another source. Nothing was written.")
                continue
            core = not held and not (nodes.get(False) or root).metadata.get(MEMBER_IDS)
            for m in members:
                if m.id == name and not (core and m.group == name):
                    raise InvalidDocumentError(_clash(m, "the name of a stored tree of " + (
                        "a document the core API or an older release added" if core else "other documents (a source's)")))
        return members

    # -- writing ---------------------------------------------------------------------------------

    # Each write reads the stored members of the groups it touches and writes them back changed:
    # it holds the index's write lock throughout, so two calls on one source (threads, asyncio
    # tasks in worker threads, two stores over one index) never both read the old members and
    # lose one another's change. Across processes an embedded index's folder lock admits one
    # process at a time. The write itself goes through ``apply_documents``: journaled, so a kill
    # at any step leaves each source's old tree or its new one.

    def add(self, members: Sequence[Member], *, progress: Any = None,
            vectors: Optional[Mapping[str, Any]] = None) -> Any:
        """Add or replace members; every group touched is rebuilt as one tree. Returns the ingest
        report (``None`` when nothing was given). ``vectors``: member id -> its embedding by the
        index's own dense model (a pipeline's): the leaf holding exactly that member's text takes it."""
        with self.index.write_lock:
            members = self.check(members)  # against what is stored, under the lock: no clash slips in
            if not members:
                return None
            where = self.locate([m.id for m in members])
            touched = list(dict.fromkeys([m.group for m in members] + list(where.values())))
            stored = self.load(touched)
            new_ids = {m.id for m in members}
            for group in touched:
                stored[group] = [m for m in stored[group] if m.id not in new_ids]
            for member in members:
                kept = stored.setdefault(member.group, [])
                seq = max((m.seq for m in kept), default=-1) + 1
                kept.append(replace(member, seq=seq))
            given = {m.text: vectors[m.id] for m in members if vectors and vectors.get(m.id) is not None}
            return self._write(stored, progress=progress, leaf_vectors=given or None)

    def delete(self, ids: Sequence[str]) -> List[str]:
        """Remove members by id (an id that is a whole tree's removes the tree). Returns the ids
        that were stored."""
        ids = list(dict.fromkeys(ids))
        with self.index.write_lock:
            where = self.locate(ids)
            if not where:
                return []
            stored = self.load(set(where.values()))
            gone = set(where)
            for group, members in stored.items():
                if group in gone:  # the id names the whole tree
                    stored[group] = []
                else:
                    stored[group] = [m for m in members if m.id not in gone]
            self._write(stored)
        return [i for i in ids if i in gone]

    def delete_refs(self, refs: Sequence[str]) -> int:
        """Remove every member that came from these source documents (LlamaIndex ``ref_doc_id``);
        a tree named by one of them goes whole. Returns how many members went."""
        refs = [r for r in dict.fromkeys(refs) if isinstance(r, str) and r]
        if not refs:
            return 0
        with self.index.write_lock:
            groups = {n.doc_id for n in self._scroll({MEMBER_REFS: {"$in": refs}}, with_text=False)}
            groups |= set(self.locate(refs).values())
            stored = self.load(groups)
            removed = 0
            for group, members in stored.items():
                keep = [m for m in members if m.ref not in refs and m.id not in refs and group not in refs]
                removed += len(members) - len(keep)
                stored[group] = keep
            self._write(stored)
        return removed

    def _write(self, groups: Mapping[str, List[Member]], progress: Any = None, leaf_vectors: Any = None) -> Any:
        docs, empty = [], []
        for group, members in groups.items():
            (docs.append(self.document(group, members)) if members else empty.append(group))
        if not docs and not empty:
            return None
        extra = {"leaf_vectors": leaf_vectors} if leaf_vectors else {}
        report = self.index.apply_documents(docs, delete=empty, progress=progress, **extra)
        return report if docs else None

    def document(self, group: str, members: List[Member]) -> Document:
        """The core document of one group's members (see the module docstring)."""
        members = sorted(members, key=lambda m: m.seq)
        if len(members) == 1 and members[0].page is None:
            m = members[0]
            metadata = {**m.metadata, MEMBER_IDS: [m.id]}
            if m.ref is not None:
                metadata[MEMBER_REFS] = [m.ref]
            return Document(id=group, text=m.text, metadata=metadata, keep_text=True)
        numbered = all(m.page is not None for m in members)
        chunked = not numbered
        if chunked and all(m.start is not None for m in members):
            members = sorted(members, key=lambda m: (m.start, m.seq))  # the text's order, whatever the arrival
        slots: List[List[Member]]
        if numbered:
            by_page: Dict[int, List[Member]] = {}
            for m in members:
                by_page.setdefault(int(m.page), []).append(m)  # type: ignore[arg-type]
            last = max(by_page)
            if last + 1 > _MAX_GAP_FACTOR * len(by_page) + 16:
                log.warning("%s: page numbers go up to %d for %d pages; keeping their order without filling the gaps",
                            group, last + 1, len(by_page))
                slots = [by_page[p] for p in sorted(by_page)]
                numbered = False
            else:
                slots = [by_page.get(p, []) for p in range(last + 1)]
        else:
            slots = [[m] for m in members]
        pages = _without_overlaps(members) if chunked else ["\n\n".join(m.text for m in slot) for slot in slots]
        page_metadata = []
        for slot in slots:
            meta = _common([m.metadata for m in slot]) if slot else {}
            meta[MEMBER_IDS] = [m.id for m in slot]
            meta[MEMBERS] = [m.record() for m in slot]
            refs = sorted({m.ref for m in slot if m.ref is not None})
            if refs:
                meta[MEMBER_REFS] = refs
            page_metadata.append(meta)
        metadata = _common([m.metadata for m in members])
        if chunked:
            metadata[UNITS] = "chunks"
        if numbered and self.ocr is not None:
            from drag_knee_retriever.integrations._pages import ocr_group

            pages = ocr_group(group, pages, metadata, self.ocr, f"the pages of {group!r}")
        return Document(id=group, pages=pages, metadata=metadata, page_metadata=page_metadata)


def _without_overlaps(chunks: Sequence[Member]) -> List[str]:
    """Consecutive chunks' texts with the overlap a splitter repeats (``chunk_overlap``) cut from
    the start of each, so that a parent joining them reads the source text once. The overlap is
    where the start offsets say (both known and consistent), else the longest suffix of the one
    before that begins the chunk (at least ``_MIN_OVERLAP`` characters). A chunk is never cut to
    nothing; the members keep their texts as given."""
    out: List[str] = []
    for i, chunk in enumerate(chunks):
        text = chunk.text
        if i:
            prev = chunks[i - 1].text
            cut = 0
            if chunk.start is not None and chunks[i - 1].start is not None:
                shared = chunks[i - 1].start + len(prev) - chunk.start  # type: ignore[operator]
                if 0 < shared < len(text) and prev.endswith(text[:shared]):
                    cut = shared
            if not cut and len(text) > _MIN_OVERLAP:
                head = text[:_MIN_OVERLAP]
                at = prev.find(head, max(0, len(prev) - len(text) + 1))
                while at != -1:  # earliest match first: the longest overlap
                    if text.startswith(prev[at:]):
                        cut = len(prev) - at
                        break
                    at = prev.find(head, at + 1)
            if 0 < cut < len(text):
                text = text[cut:].lstrip()
        out.append(text)
    return out


def members_of_tree(group: str, nodes: Sequence[TreeNode]) -> List[Member]:
    """Rebuild a stored tree's members from its nodes (see the module docstring)."""
    if not nodes:
        return []
    root = next((n for n in nodes if n.level == 0), None)
    leaves = sorted((n for n in nodes if n.is_leaf), key=lambda n: n.span.first_leaf)
    if root is not None and root.metadata.get(MEMBER_IDS) and root.span.first_page is None:
        # A one-member text tree: its text is its leaves, joined.
        member_id = root.metadata[MEMBER_IDS][0]
        return [Member(id=member_id, text=_tree_text(root, leaves),
                       metadata=user_metadata(root.metadata), group=group, page=None,
                       ref=(root.metadata.get(MEMBER_REFS) or [None])[0])]
    found: Dict[str, Member] = {}
    for node in sorted(nodes, key=lambda n: (n.span.first_leaf, n.level)):
        for record in node.metadata.get(MEMBERS) or ():
            if record.get("id") not in found:
                found[str(record["id"])] = Member.from_record(record, group)
    if found:
        return sorted(found.values(), key=lambda m: m.seq)
    # A tree the core API made (or an older release): one member per page, or the whole text.
    meta = user_metadata(root.metadata) if root is not None else {}
    if leaves and leaves[0].span.first_page is not None:
        pages: Dict[int, List[str]] = {}
        for leaf in leaves:
            pages.setdefault(int(leaf.span.first_page), []).append(leaf.text)  # type: ignore[arg-type]
        return [Member(id=group if len(pages) == 1 else f"{group}#page{p}", text="\n\n".join(texts), metadata=dict(meta),
                       group=group, page=p - 1, seq=i) for i, (p, texts) in enumerate(sorted(pages.items()))]
    return [Member(id=group, text=_tree_text(root, leaves), metadata=meta, group=group)]


def _tree_text(root: Optional[TreeNode], leaves: Sequence[TreeNode]) -> str:
    """A text tree's text: as given (its root's ``source_text``), else (an older tree, or one whose
    leaves give it back) its leaves joined by a blank line."""
    if root is not None and root.source_text is not None:
        return root.source_text
    return "\n\n".join(leaf.text for leaf in leaves)


def members_of_node(node: TreeNode) -> List[Member]:
    """The members a returned node covers when it lies within one page (else ``[]``)."""
    return [Member.from_record(r, node.doc_id) for r in node.metadata.get(MEMBERS) or ()]


def _common(metadatas: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """What every mapping agrees on (a key missing from one, or with another value, is dropped)."""
    if not metadatas:
        return {}
    first = metadatas[0]
    return {k: v for k, v in first.items() if all(k in m and m[k] == v for m in metadatas[1:])}


def _root_id(doc_id: str) -> str:
    from drag_knee_retriever.build._builder import node_id

    return node_id(doc_id, "r")


def _leaf0_id(doc_id: str) -> str:
    from drag_knee_retriever.build._builder import leaf_id

    return leaf_id(doc_id, 0)


def ranked_members(index: Any, hits: Sequence[Any], *, with_leaves: bool = False) -> List[Any]:
    """Flat hits (leaves, best first) as the members they lie in, each once at its best leaf's
    score; a one-member text tree's member gets the tree's whole text (one fetch for all).
    ``with_leaves``: ``(member, score, id of that best leaf)`` triples (MMR reads its vector)."""
    out: List[Tuple[Member, float, str]] = []
    seen = set()
    whole: Dict[str, str] = {}  # member id -> its one-member text tree
    for hit in hits:
        members = members_of_node(hit.node)
        if not members:
            member_id = (hit.node.metadata.get(MEMBER_IDS) or [hit.node.doc_id])[0]
            whole[member_id] = hit.node.doc_id
            members = [Member(id=member_id, text=hit.text, metadata=user_metadata(hit.node.metadata),
                              group=hit.node.doc_id, ref=(hit.node.metadata.get(MEMBER_REFS) or [None])[0])]
        for m in members:
            if m.id not in seen:
                seen.add(m.id)
                out.append((m, hit.score, hit.node.id))
    if whole:
        texts = {d.doc_id: d.text for d in index.get_documents(sorted(set(whole.values())))}
        out = [(replace(m, text=texts.get(whole[m.id], m.text)) if m.id in whole else m, s, leaf) for m, s, leaf in out]
    return out if with_leaves else [(m, s) for m, s, _ in out]


def flat_members(index: Any, query: str, k: int, *, filters: Any = None, mode: str = "hybrid",
                 vectors: Any = None, with_leaves: bool = False) -> List[Any]:
    """The ``k`` members best ranked by flat search over the leaves (see :func:`ranked_members`).
    ``k`` is checked by the caller (under its own name); the leaves fetched never exceed the index's
    limit on ``k``, which a large ``k`` times 4 did (the error then named a ``k`` the user never gave)."""
    from drag_knee_retriever.model._settings import MAX_SETTING

    if index.store.count() == 0:
        return []
    want = k
    while True:
        fetch = min(want * 4, MAX_SETTING)
        hits = index.flat_search(query, k=fetch, mode=mode, filters=filters, query_vectors=vectors)
        out = ranked_members(index, hits, with_leaves=with_leaves)
        if len(out) >= k or len(hits) < fetch or fetch == MAX_SETTING:
            return out[:k]
        want *= 4


def leaf_vectors(index: Any, leaf_ids: Sequence[str], doc_ids: Sequence[str]) -> Dict[str, Any]:
    """The stored dense vectors of these leaves (of documents ``doc_ids``), by leaf id."""
    from drag_knee_retriever.store import parse_filters

    if not leaf_ids:
        return {}
    wanted = set(leaf_ids)
    spec = parse_filters({"doc_id": {"$in": sorted(set(doc_ids))}, "is_leaf": True})
    return {node.id: vector for node, vector in index.store.scroll_dense(filters=spec)
            if node.id in wanted and vector is not None}


def split_runs(members: List[Member], group_of: Any) -> List[Member]:
    """Members of a group whose name is only a file name (no path): consecutive pages are one
    file until a page number repeats or goes down, where another file of that name starts (chunks
    of one page, which share their page document's ``ref``, are not a new file). Each
    run becomes its own group, named by the file name and a hash of its pages (so two files of one
    name never share a tree, in one call or in two)."""
    out: List[Member] = []
    runs: List[List[Member]] = []
    last: Dict[str, Optional[int]] = {}
    current: Dict[str, List[Member]] = {}
    for m in members:
        key = group_of(m)
        if key is None:
            out.append(m)
            continue
        if key in current and m.page is not None and last[key] is not None and m.page <= last[key] \
                and not (m.ref is not None and any(o.ref == m.ref and o.page == m.page for o in current[key])):
            runs.append(current.pop(key))
        current.setdefault(key, []).append(m)
        last[key] = m.page
    runs.extend(current.values())
    named: Dict[int, str] = {}
    for run in runs:
        digest = hashlib.sha256("\x1f".join(f"{m.page}:{m.text}" for m in run).encode("utf-8")).hexdigest()[:12]
        for m in run:
            named[id(m)] = f"{run[0].group}#{digest}"
    if len(runs) > len({run[0].group for run in runs}):
        log.warning("%d files share the name(s) %s and have no file_path: each is indexed as its own document "
                    "(named by its content); give file_path (SimpleDirectoryReader sets it) so that a changed "
                    "file replaces its old version.", len(runs), sorted({run[0].group for run in runs}))
    return [replace(m, group=named[id(m)]) if id(m) in named else m for m in members]
