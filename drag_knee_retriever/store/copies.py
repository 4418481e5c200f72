"""The roots' copy every Qdrant engine keeps (a collection or shard of the roots alone): which
requests it answers, and how a copy is told apart from its root's current version.

Part of the store interface (:mod:`.base` re-exports every name here).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, TYPE_CHECKING

from drag_knee_retriever.model._ids import root_ids
from drag_knee_retriever.model._nodes import FILE_STAMP_KEY

if TYPE_CHECKING:  # pragma: no cover
    from drag_knee_retriever.store.base import RankRequest


def stamp_ids(doc_ids: Sequence[str]) -> Dict[str, str]:
    """Point id -> doc_id for the two ids each document's root can have (:func:`~drag_knee_retriever.model._ids.root_ids`)."""
    return {pid: d for d in doc_ids for pid in root_ids(d)}


def payload_stamp(payload: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The file stamp in a payload read with :data:`~drag_knee_retriever.model._point_schema.STAMP_FIELDS` (None: none)."""
    metadata = payload.get("metadata") if payload else None
    stamp = metadata.get(FILE_STAMP_KEY) if isinstance(metadata, Mapping) else None
    return stamp if isinstance(stamp, str) else None


def root_version(payload: Optional[Mapping[str, Any]]) -> str:
    """A root's version as the roots' copy is kept in step by: ``"<doc_hash>|<file stamp>"`` (so a
    copy whose stamp lags its root's, a stamp update cut between the two, is copied again too)."""
    return f"{(payload or {}).get('doc_hash', '')}|{payload_stamp(payload) or ''}"


def roots_ranking(request: RankRequest) -> bool:
    """Whether a request ranks roots (``level = 0``): the walk's first step, over the whole
    (filtered) index, and the roots of the documents the query names, ranked in the same round trip.

    Such a request goes to the roots' own collection (qdrant-client: ``<collection>__roots``; Edge:
    ``<folder>/<collection>/roots/``), a copy of every root with the same id, vectors and payload,
    kept in step by every write. Why: a filter ``level = 0`` over every point scans the whole
    collection; measured on Qdrant Edge at 1M nodes, the roots' ranking cost ~74 ms that way and
    ~10 ms in a shard of their own (benchmarks/RESULTS.md, "scale"). Scores are the same: the
    copy's points are the roots' points, and BM25's IDF is the nodes' collection's. The named roots
    go there too, so the first step is one engine call (one request to a server), not one per
    collection; their ids come from the identity table, which is read from the same copy.
    """
    return request.level == 0
