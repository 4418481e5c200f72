"""A check stored with every node that ties its payload to its vectors (issue 38, item 7).

Swapping one storage folder of an Edge index (its dense vectors, its BM25 vectors or its payloads)
with another index's of the same shape, or permuting the dense vectors inside one index, leaves
every vector a unit vector and every payload whole: the counts and the sample of
:mod:`.integrity` passed, and a query about volcanoes was answered with a text about sourdough.
Each node is therefore written with :data:`CHECK_FIELD` in its payload, computed from what is
written with it, and the check on open compares it with what the engine gives back for a sample
of nodes (:func:`problems`). The check is one short string (a payload field of one string costs the
engine least to store and the write path least to make, ~5 us a node), of three parts:

- ``node``: a 64-bit BLAKE2b of the point id and the node's text (exact: ids and texts come back
  as written). A payload that is another point's (payload storage or id tracker replaced) fails it.
- ``dense``: :data:`PROJECTIONS` projections of the unit-length dense vector onto fixed +-1
  patterns (each about N(0, 1) for a unit vector), rounded to 4 decimals and compared with
  :data:`DENSE_TOLERANCE`. The engine normalises cosine vectors and may store them in float32 or
  float16: a projection then moves by < 1e-2 (float16, worst case) and usually < 1e-3, while
  another node's vector at distance d moves each one by about d (two texts of one topic: d ~ 0.2
  to 0.6), so a hash of the vector's bits would raise false alarms where this does not.
- ``bm25``: the number and the sum of the BM25 vector's term ids (exact, whatever order the engine
  gives them back in), and the sum of its values compared with a relative tolerance of
  :data:`BM25_TOLERANCE` (stored as float32).

The field is a payload field no search, filter or returned node reads (:func:`full_node` and
:func:`light_node` take named fields), so rankings and returned metadata are unchanged. Nodes
written before this field existed have none: they are skipped by the check (and logged once),
and checked once they are written again (any re-ingest of their document).

Cost: one numpy product per written batch and two small hashes per written node; on open, the
sample's texts, checks and sparse vectors are read with its walk fields and verified in one
product (``benchmarks/open_check.py``).
"""

from __future__ import annotations

import hashlib
import math
import re
import uuid
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from drag_knee_retriever.model._point_schema import WALK_FIELDS

#: The payload field that holds a node's check (one short string; see the module docstring).
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

_SKETCH = " ".join(["%.4f"] * PROJECTIONS)
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


def _node_hash(point_id: Any, text: Any) -> str:
    # An id holds no NUL, so id NUL text is unambiguous.
    data = _point_key(point_id).encode() + b"\0" + str(text or "").encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _terms(indices: Sequence[int]) -> str:
    """The BM25 vector's term ids, whatever their order: how many and their sum (the engines refuse
    a sparse vector whose ids repeat, and term ids are 32-bit hashes of the words)."""
    return f"{len(indices)}:{sum(indices):x}"


def _projections(dense: np.ndarray) -> np.ndarray:
    """Rows of ``dense`` scaled to unit length (as the engine stores cosine vectors), projected (the
    projections scaled, not the rows: no temporary of the rows' size)."""
    norms = np.sqrt(np.einsum("ij,ij->i", dense, dense))
    return (dense @ _patterns(dense.shape[1])) / np.where(norms > 0, norms, 1.0)[:, None]


def add_checks(payloads: Sequence[Dict[str, Any]], ids: Sequence[Any], dense: Sequence[Sequence[float]],
               sparse: Sequence[Tuple[Sequence[int], Sequence[float]]]) -> None:
    """Set :data:`CHECK_FIELD` in each payload about to be written, from the point id, its text and
    the vectors written with it (``sparse``: (term ids, values as written)).

    The check is one short string (a payload field of one string costs the engine least to store):
    ``"<version> <node hash> <BM25 term count>:<sum of term ids> <BM25 values sum> <projection> ..."``."""
    if not payloads:
        return
    rows = np.asarray(dense, dtype=np.float64)
    projected = _projections(rows).tolist() if rows.ndim == 2 and rows.size else [[0.0] * PROJECTIONS] * len(payloads)
    for payload, point_id, sketch, (indices, values) in zip(payloads, ids, projected, sparse):
        node = _node_hash(point_id, payload.get("text"))
        payload[CHECK_FIELD] = f"{VERSION} {node} {_terms(indices)} {sum(values):.4f} " + _SKETCH % tuple(sketch)


def _parse(check: Any) -> Optional[Tuple[str, str, float, List[float]]]:
    if not isinstance(check, str):
        return None
    fields = check.split(" ")
    if len(fields) != 4 + PROJECTIONS or fields[0] != str(VERSION):
        return None
    try:
        return fields[1], fields[2], float(fields[3]), [float(x) for x in fields[4:]]
    except ValueError:
        return None


def problem(point_id: Any, payload: Optional[Mapping[str, Any]], dense: Optional[Sequence[float]],
            sparse: Sparse) -> Optional[str]:
    """Why a stored node's vectors or payload are not the ones written with it ("" if they are);
    None when the node has no check of this version (written before checks existed)."""
    return problems([(point_id, payload, dense, sparse)])[0]


def problems(sample: Sequence[Tuple[Any, Optional[Mapping[str, Any]], Any, Sparse]]) -> List[Optional[str]]:
    """:func:`problem` of each sampled (id, payload, dense vector (a sequence or an array) or None,
    sparse); the dense vectors are projected and compared in one product."""
    checks = [_parse(payload.get(CHECK_FIELD)) if payload else None for _, payload, _, _ in sample]
    compared = [i for i, ((_, _, vector, _), check) in enumerate(zip(sample, checks))
                if check is not None and vector is not None]
    dense_ok: Dict[int, bool] = {}
    if compared and len({len(sample[i][2]) for i in compared}) == 1:  # type: ignore[arg-type]
        got = _projections(np.asarray([sample[i][2] for i in compared], dtype=np.float64))
        written = np.asarray([checks[i][3] for i in compared], dtype=np.float64)  # type: ignore[index]
        dense_ok = dict(zip(compared, (np.abs(got - written).max(axis=1) <= DENSE_TOLERANCE).tolist()))
    out: List[Optional[str]] = []
    for i, ((point_id, payload, vector, sparse), check) in enumerate(zip(sample, checks)):
        if check is None:
            out.append(None)
            continue
        node, terms, total, _ = check
        indices, values = sparse if sparse is not None else ((), ())
        if node != _node_hash(point_id, payload.get("text")):  # type: ignore[union-attr]
            out.append("its payload is another point's (the payloads or the id tracker were replaced?)")
        elif vector is not None and not dense_ok.get(i, False):
            out.append("its dense vector is not the one written with its text (the dense vectors or the payloads "
                       "were replaced or reordered?)")
        elif terms != _terms(indices) or not math.isclose(sum(values), total, rel_tol=BM25_TOLERANCE, abs_tol=1e-3):
            out.append("its BM25 vector is not the one written with its text (the BM25 vectors or the payloads "
                       "were replaced or reordered?)")
        else:
            out.append("")
    return out


def sparse_pair(vector: Any) -> Sparse:
    """(indices, values) of an engine's sparse vector (Edge's or qdrant-client's), None if absent."""
    if vector is None:
        return None
    return list(getattr(vector, "indices", ()) or ()), list(getattr(vector, "values", ()) or ())


__all__: List[str] = ["BM25_TOLERANCE", "CHECK_FIELD", "DENSE_TOLERANCE", "PROJECTIONS", "SAMPLE_FIELDS", "Sample",
                      "VERSION", "add_checks", "problem", "problems", "sparse_pair"]
