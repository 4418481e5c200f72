"""A check stored with every node that ties its payload to its vectors (issue 38, item 7).

Swapping one storage folder of an Edge index (its dense vectors, its BM25 vectors or its payloads)
with another index's of the same shape, or permuting the dense vectors inside one index, leaves
every vector a unit vector and every payload whole: the counts and the sample of
:mod:`.integrity` passed, and a query about volcanoes was answered with a text about sourdough.
Each node is therefore written with :data:`CHECK_FIELD` in its payload, computed from what is
written with it, and the check on open compares it with what the engine gives back for a sample
of nodes (:func:`problem`):

- ``node``: a 64-bit BLAKE2b of the point id and the node's text (exact: ids and texts come back
  as written). A payload that is another point's (payload storage or id tracker replaced) fails it.
- ``dense``: :data:`PROJECTIONS` projections of the unit-length dense vector onto fixed +-1
  patterns (each about N(0, 1) for a unit vector), rounded to 4 decimals and compared with
  :data:`DENSE_TOLERANCE`. The engine normalises cosine vectors and may store them in float32 or
  float16: a projection then moves by < 1e-2 (float16, worst case) and usually < 1e-3, while
  another node's vector at distance d moves each one by about d (two texts of one topic: d ~ 0.2
  to 0.6), so a hash of the vector's bits would raise false alarms where this does not.
- ``bm25``: a 64-bit BLAKE2b of the BM25 vector's sorted term ids (exact), and the sum of its
  values compared with a relative tolerance of :data:`BM25_TOLERANCE` (stored as float32).

The field is a payload field no search, filter or returned node reads (:func:`full_node` and
:func:`light_node` take named fields), so rankings and returned metadata are unchanged. Nodes
written before this field existed have none: they are skipped by the check (and logged once),
and checked once they are written again (any re-ingest of their document).

Cost: one numpy product and two small hashes per written node; on open, the sample's texts and
sparse vectors are read with its walk fields (``benchmarks/open_check.py``).
"""

from __future__ import annotations

import hashlib
import math
import re
import uuid
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..point_schema import WALK_FIELDS

#: The payload field that holds a node's check (a dict; see the module docstring).
CHECK_FIELD = "drag_check"
#: The version of the check's layout: a check of another version is skipped, never failed.
VERSION = 1
#: How many projections of the dense vector the check keeps.
PROJECTIONS = 4
#: The largest difference of a projection between what was written and what the engine gives back
#: (float16 storage moves one by at most ~0.0096 for a 384-value unit vector; float32 by ~1e-6).
DENSE_TOLERANCE = 0.02
#: The relative difference allowed between the sums of BM25 values written and given back.
BM25_TOLERANCE = 1e-3

_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

Sparse = Optional[Tuple[Sequence[int], Sequence[float]]]
#: A sampled node as the check on open reads it: (id, payload, dense vector, (term ids, values)).
Sample = Tuple[str, Optional[Dict[str, Any]], Optional[List[float]], Sparse]
#: The payload fields the check on open reads of a sampled node: the walk's, the text, the check.
SAMPLE_FIELDS = WALK_FIELDS + ("text", CHECK_FIELD)


@lru_cache(maxsize=8)
def _patterns(size: int) -> np.ndarray:
    """``size`` x :data:`PROJECTIONS` matrix of +-1, the same in every process and release."""
    columns = []
    for column in range(PROJECTIONS):
        stream = b"".join(hashlib.sha256(f"drag-knee check {column} {block}".encode()).digest()
                          for block in range((size + 255) // 256))
        bits = np.unpackbits(np.frombuffer(stream, dtype=np.uint8))[:size]
        columns.append(bits.astype(np.float64) * 2.0 - 1.0)
    return np.stack(columns, axis=1)


def _point_key(point_id: Any) -> str:
    """A point id as the engines give it back (a canonical UUID string; Edge returns ``uuid.UUID``)."""
    text = str(point_id)
    if _CANONICAL_UUID.fullmatch(text):
        return text
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return text


def _digest(*parts: bytes) -> str:
    digest = hashlib.blake2b(digest_size=8)
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


def _node_hash(point_id: Any, text: Any) -> str:
    return _digest(_point_key(point_id).encode(), str(text or "").encode("utf-8", "surrogatepass"))


def _terms_hash(indices: Sequence[int]) -> str:
    return _digest(np.unique(np.asarray(list(indices), dtype=np.int64)).astype("<i8").tobytes())


def _projections(dense: np.ndarray) -> np.ndarray:
    """Rows of ``dense`` scaled to unit length (as the engine stores cosine vectors), projected."""
    norms = np.linalg.norm(dense, axis=1, keepdims=True)
    unit = np.divide(dense, norms, out=np.zeros_like(dense), where=norms > 0)
    return unit @ _patterns(dense.shape[1])


def add_checks(payloads: Sequence[Dict[str, Any]], ids: Sequence[Any], dense: Sequence[Sequence[float]],
               sparse: Sequence[Tuple[Sequence[int], Sequence[float]]]) -> None:
    """Set :data:`CHECK_FIELD` in each payload about to be written, from the point id, its text and
    the vectors written with it (``sparse``: (term ids, values as written))."""
    if not payloads:
        return
    rows = np.asarray([np.asarray(v, dtype=np.float64) for v in dense])
    projected = np.round(_projections(rows), 4).tolist() if rows.ndim == 2 else [None] * len(payloads)
    for payload, point_id, sketch, (indices, values) in zip(payloads, ids, projected, sparse):
        payload[CHECK_FIELD] = {"v": VERSION, "node": _node_hash(point_id, payload.get("text")),
                                "dense": sketch, "bm25": _terms_hash(indices),
                                "bm25_sum": round(float(sum(values)), 4)}


def problem(point_id: Any, payload: Optional[Mapping[str, Any]], dense: Optional[Sequence[float]],
            sparse: Sparse) -> Optional[str]:
    """Why a stored node's vectors or payload are not the ones written with it ("" if they are);
    None when the node has no check of this version (written before checks existed)."""
    check = payload.get(CHECK_FIELD) if payload else None
    if not isinstance(check, Mapping) or check.get("v") != VERSION:
        return None
    if check.get("node") != _node_hash(point_id, payload.get("text")):  # type: ignore[union-attr]
        return "its payload is another point's (the payloads or the id tracker were replaced?)"
    sketch = check.get("dense")
    if dense is not None and isinstance(sketch, list) and len(sketch) == PROJECTIONS:
        got = _projections(np.asarray([dense], dtype=np.float64))[0]
        if not np.all(np.abs(got - np.asarray(sketch, dtype=np.float64)) <= DENSE_TOLERANCE):
            return ("its dense vector is not the one written with its text (the dense vectors or the payloads were "
                    "replaced or reordered?)")
    indices, values = sparse if sparse is not None else ((), ())
    written = float(check.get("bm25_sum") or 0.0)
    if check.get("bm25") != _terms_hash(indices) or not math.isclose(
            float(sum(values)), written, rel_tol=BM25_TOLERANCE, abs_tol=1e-3):
        return ("its BM25 vector is not the one written with its text (the BM25 vectors or the payloads were replaced "
                "or reordered?)")
    return ""


def sparse_pair(vector: Any) -> Sparse:
    """(indices, values) of an engine's sparse vector (Edge's or qdrant-client's), None if absent."""
    if vector is None:
        return None
    return list(getattr(vector, "indices", ()) or ()), list(getattr(vector, "values", ()) or ())


__all__: List[str] = ["BM25_TOLERANCE", "CHECK_FIELD", "DENSE_TOLERANCE", "PROJECTIONS", "SAMPLE_FIELDS", "Sample",
                      "VERSION", "add_checks", "problem", "sparse_pair"]
