"""Filters: the user's filter parsed once, and every engine's conditions built by one rule.

:func:`parse_filters` turns a user's filter into engine-neutral :class:`Condition` values (a tuple
that must all hold); :func:`node_matches` is the rule the engines apply (used by in-memory rankers
and tests). The ``*_conditions`` functions say which conditions a request, a listing, a count or a
delete needs, and :class:`QdrantFilters` turns them into Qdrant's filter types for both Qdrant
engines (qdrant-client's ``models`` and Qdrant Edge's classes, passed in), so the engines cannot
drift apart on what a request means (the bookkeeping point kept out, the root deleted first...).

The filter language is LangChain's (Mongo-style), which the LlamaIndex adapter also translates
into:

- ``{"year": 2019}`` equality; ``{"tag": ["a", "b"]}`` any of; several keys: all must hold;
- ``{"year": {"$gte": 2020, "$lt": 2023}}`` with ``$eq $ne $in $nin $gt $gte $lt $lte``;
- ``{"$or": [{...}, {...}]}``, ``{"$and": [...]}``, ``{"$not": {...}}``, nested freely.

A qdrant-client ``models.Filter`` is translated into the same conditions (keys as stored:
``metadata.year`` or ``year``, ``doc_id``, ``level``, ``is_leaf``). Keys other than ``doc_id``,
``level`` and ``is_leaf`` name document metadata fields (dotted paths reach nested values).
Semantics are Qdrant's: on a list-valued field a match holds if any element matches, ``$ne`` /
``$nin`` hold when no element matches (and when the field is missing), a range holds if an element
is a number in range (never for a missing field, a string or a bool).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from drag_knee_retriever.errors import InvalidQueryError
from drag_knee_retriever.model._nodes import FILTER_FIELDS, TreeNode, check_unicode
from drag_knee_retriever.store.base import FilterSpec, RankRequest

# Payload fields a filter may name directly; any other key is looked up in the document metadata
# (a Document refuses metadata keys of these names: nodes.FILTER_FIELDS).
TOP_LEVEL_FIELDS = tuple(FILTER_FIELDS)

# -- engine-neutral conditions -------------------------------------------------------------------

MATCH = "match"    # the field equals one of ``values`` (one value: an exact match)
EXCEPT = "except"  # the field equals none of ``values`` (a missing field passes)
RANGE = "range"    # ``values`` = (gt, gte, lt, lte), None where unbounded; numbers only
IDS = "ids"        # the point id is one of ``values``
NODES = "nodes"    # ``level >= 0``: every node, never the bookkeeping point (which has no level)
ALL = "and"        # every condition in ``values`` holds
ANY = "or"         # at least one condition in ``values`` holds
NONE = "not"       # no condition in ``values`` holds

OPERATORS = ("$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte")
_BOUNDS = ("$gt", "$gte", "$lt", "$lte")
_EXAMPLE = "{'year': {'$gte': 2020}, 'lang': {'$in': ['en', 'ru']}}"


@dataclass(frozen=True)
class Condition:
    """One condition of a filter's ``must`` (or ``must_not``) list, before an engine builds it."""

    kind: str
    field: str = ""
    values: Tuple[Any, ...] = ()


def match(field: str, value: Any) -> Condition:
    """The field equals ``value``."""
    return Condition(MATCH, field, (value,))


def any_of(field: str, values: Sequence[Any]) -> Condition:
    """The field equals one of ``values`` (str or int, one type; at least one)."""
    return Condition(MATCH, field, tuple(values))


# -- parsing -------------------------------------------------------------------------------------

# A metadata field name as both engines' JSON paths accept it: words (letters, digits, "_", "-",
# in any script) joined by dots. Spaces, "$", quotes, brackets, emoji, control and zero-width
# characters made both raise a bare ValueError ("invalid JSON path").
_FIELD_KEY = re.compile(r"[\w-]+(?:\.[\w-]+)*")


def check_filter_key(key: Any) -> None:
    """Raise :class:`InvalidQueryError` unless ``key`` is a field name both engines accept."""
    if not isinstance(key, str):
        raise InvalidQueryError(f"filter key {key!r} must be a string (a metadata field name such as 'lang').")
    check_unicode(key, "filter key", InvalidQueryError)
    if not _FIELD_KEY.fullmatch(key) or any(not (ch.isalnum() or ch in "_-.") for ch in key):
        raise InvalidQueryError(
            f"filter key {key!r} is not a field name: use letters, digits, '_' and '-', with '.' between the "
            "parts of a nested field (e.g. 'lang' or 'author.name'); spaces, '$', quotes, brackets, emoji and "
            "control characters cannot be matched."
        )



def _field(key: Any) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidQueryError(f"filter key {key!r} must be a plain field name string.")
    if key.startswith("$"):
        raise InvalidQueryError(
            f"filter key {key!r} is not a field, and the only operators allowed as keys are $and, $or "
            f"and $not; comparison operators go inside a field: {_EXAMPLE}."
        )
    check_filter_key(key)
    return key if key in TOP_LEVEL_FIELDS else f"metadata.{key}"


def _label(field: str) -> str:
    return field[len("metadata."):] if field.startswith("metadata.") else field


def _match_values(field: str, op: str, value: Any, *, listed: bool) -> Tuple[Any, ...]:
    """Values an equality-type operator compares with: str, int or bool, one type."""
    key = _label(field)
    if listed:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
            raise InvalidQueryError(f"filter {key!r}: {op} takes a list of values, got {value!r}.")
        values = tuple(value)
        if not values:
            raise InvalidQueryError(f"filter {key!r} has an empty list for {op}; give at least one value.")
    else:
        values = (value,)
    kinds = set()
    for item in values:
        if isinstance(item, bool):
            kinds.add(bool)
        elif isinstance(item, int):
            if not -(2**63) <= item <= 2**63 - 1:
                raise InvalidQueryError(f"filter {key!r} value {item} does not fit in int64 (64-bit integers).")
            kinds.add(int)
        elif isinstance(item, str):
            check_unicode(item, f"filter {key!r} value", InvalidQueryError)
            kinds.add(str)
        elif isinstance(item, float):
            raise InvalidQueryError(
                f"filter {key!r} compares {item!r} (type float) for equality ({op}); Qdrant matches only str, "
                f"int and bool exactly. Use a range instead: {{{key!r}: {{'$gte': {item!r}, '$lte': {item!r}}}}}."
            )
        else:
            raise InvalidQueryError(
                f"filter {key!r} has value {item!r} of type {type(item).__name__} for {op}; "
                "use str, int or bool (or a list of them)."
            )
    if len(kinds) > 1:
        raise InvalidQueryError(f"filter {key!r} mixes value types {sorted(k.__name__ for k in kinds)}; use one type.")
    if bool in kinds and len(values) > 1:
        raise InvalidQueryError(f"filter {key!r}: give a single bool, not a list.")
    return values


def _bound(field: str, op: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidQueryError(
            f"filter {_label(field)!r}: {op} takes a finite number, got {value!r} ({type(value).__name__})."
        )
    return value


def _field_conditions(field: str, value: Any) -> List[Condition]:
    if not isinstance(value, Mapping):
        listed = isinstance(value, (list, tuple, set, frozenset))
        return [Condition(MATCH, field, _match_values(field, "$in" if listed else "$eq", value, listed=listed))]
    if not value:
        raise InvalidQueryError(f"filter {_label(field)!r} has an empty operator mapping; e.g. {_EXAMPLE}.")
    out: List[Condition] = []
    bounds: List[Optional[float]] = [None, None, None, None]
    for op, operand in value.items():
        if op not in OPERATORS:
            raise InvalidQueryError(
                f"filter {_label(field)!r}: unknown operator {op!r}; supported: {', '.join(OPERATORS)} "
                "(and $and / $or / $not around fields)."
            )
        if op in _BOUNDS:
            bounds[_BOUNDS.index(op)] = _bound(field, op, operand)
        elif op == "$eq":
            out.append(Condition(MATCH, field, _match_values(field, op, operand, listed=False)))
        elif op == "$in":
            out.append(Condition(MATCH, field, _match_values(field, op, operand, listed=True)))
        elif op == "$ne":
            out.append(Condition(EXCEPT, field, _match_values(field, op, operand, listed=False)))
        else:
            out.append(Condition(EXCEPT, field, _match_values(field, op, operand, listed=True)))
    if any(b is not None for b in bounds):
        out.append(Condition(RANGE, field, tuple(bounds)))
    return out


def _parse_mapping(filters: Mapping[str, Any], where: str = "filter") -> List[Condition]:
    out: List[Condition] = []
    for key, value in filters.items():
        if key in ("$and", "$or"):
            if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) or not value:
                raise InvalidQueryError(f"{where}: {key} takes a non-empty list of filters, e.g. {{{key!r}: [{_EXAMPLE}]}}.")
            parts = []
            for i, part in enumerate(value):
                if not isinstance(part, Mapping):
                    raise InvalidQueryError(f"{where}: {key}[{i}] must be a filter mapping, got {type(part).__name__}.")
                parts.append(_group(ALL, _parse_mapping(part, f"{where} {key}[{i}]")))
            out.append(Condition(ALL if key == "$and" else ANY, "", tuple(parts)))
        elif key == "$not":
            if not isinstance(value, Mapping) or not value:
                raise InvalidQueryError(f"{where}: $not takes one filter mapping, e.g. {{'$not': {{'lang': 'en'}}}}.")
            out.append(Condition(NONE, "", (_group(ALL, _parse_mapping(value, f"{where} $not")),)))
        else:
            out.extend(_field_conditions(_field(key), value))
    if not out:
        raise InvalidQueryError(f"{where} is empty; give at least one condition or no filter at all.")
    return out


def _group(kind: str, conditions: List[Condition]) -> Condition:
    return conditions[0] if len(conditions) == 1 else Condition(kind, "", tuple(conditions))


def _is_qdrant_filter(value: Any) -> bool:
    return type(value).__name__ == "Filter" and all(hasattr(value, a) for a in ("must", "should", "must_not"))


def _as_list(value: Any) -> List[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _qdrant_key(key: str) -> str:
    return key if key in TOP_LEVEL_FIELDS or key.startswith("metadata.") else f"metadata.{key}"


def _from_qdrant_condition(cond: Any) -> Condition:
    name = type(cond).__name__
    if name == "Filter":
        return _group(ALL, _from_qdrant_filter(cond))
    if name == "HasIdCondition":
        return Condition(IDS, "", tuple(str(i) for i in cond.has_id))
    if name == "FieldCondition":
        field = _qdrant_key(_field_key(cond.key))
        parts: List[Condition] = []
        if cond.match is not None:
            m = cond.match
            kind = type(m).__name__
            if kind == "MatchValue":
                parts.append(Condition(MATCH, field, _match_values(field, "MatchValue", m.value, listed=False)))
            elif kind == "MatchAny":
                parts.append(Condition(MATCH, field, _match_values(field, "MatchAny", m.any, listed=True)))
            elif kind == "MatchExcept":
                parts.append(Condition(EXCEPT, field, _match_values(field, "MatchExcept", getattr(m, "except_", None)
                                                                    or getattr(m, "except", None), listed=True)))
            else:
                raise InvalidQueryError(
                    f"Qdrant filter on {cond.key!r}: {kind} is not supported here; use MatchValue, MatchAny, "
                    "MatchExcept or Range."
                )
        if cond.range is not None:
            r = cond.range
            if type(r).__name__ != "Range":
                raise InvalidQueryError(f"Qdrant filter on {cond.key!r}: {type(r).__name__} is not supported; use Range.")
            bounds = tuple(None if getattr(r, b) is None else _bound(field, b, getattr(r, b))
                           for b in ("gt", "gte", "lt", "lte"))
            parts.append(Condition(RANGE, field, bounds))
        others = [a for a in ("geo_bounding_box", "geo_radius", "geo_polygon", "values_count", "is_empty", "is_null")
                  if getattr(cond, a, None) is not None]
        if others or not parts:
            raise InvalidQueryError(
                f"Qdrant filter on {cond.key!r}: only match (value/any/except) and range conditions are "
                f"supported, not {others or 'an empty condition'}."
            )
        return _group(ALL, parts)
    raise InvalidQueryError(
        f"Qdrant filter condition {name} is not supported; use FieldCondition (match / range), "
        "HasIdCondition or a nested Filter."
    )


def _field_key(key: Any) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidQueryError(f"Qdrant filter key {key!r} must be a field name string.")
    check_filter_key(key)
    return key


def _from_qdrant_filter(flt: Any) -> List[Condition]:
    out: List[Condition] = [_from_qdrant_condition(c) for c in _as_list(flt.must)]
    should = [_from_qdrant_condition(c) for c in _as_list(flt.should)]
    if should:
        out.append(_group(ANY, should))
    must_not = [_from_qdrant_condition(c) for c in _as_list(flt.must_not)]
    if must_not:
        out.append(Condition(NONE, "", tuple(must_not)))
    if getattr(flt, "min_should", None) is not None:
        raise InvalidQueryError("Qdrant filter: min_should is not supported; use should (any of).")
    return out


#: Deepest nesting of $and / $or / $not (or Filter in Filter) a filter may have: a hand-written
#: filter nests a few levels; 2,000 raised a bare RecursionError from the parser.
MAX_FILTER_DEPTH = 32


def _check_depth(filters: Any) -> None:
    """Refuse a filter nested deeper than :data:`MAX_FILTER_DEPTH`, looked at without recursion."""
    stack = [(filters, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_FILTER_DEPTH:
            raise InvalidQueryError(
                f"filter is nested more than {MAX_FILTER_DEPTH} levels deep ($and / $or / $not inside each other); "
                "flatten it: conditions side by side in one mapping (or one $and list) all hold."
            )
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (Mapping, list, tuple)))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, depth) for v in value if isinstance(v, (Mapping, list, tuple)) or _is_qdrant_filter(v))
        elif _is_qdrant_filter(value):
            for part in ("must", "should", "must_not"):
                stack.extend((v, depth + 1) for v in _as_list(getattr(value, part, None)) if _is_qdrant_filter(v))


def parse_filters(filters: Any) -> FilterSpec:
    """Parse a user's filter into conditions that must all hold (``()`` for no filter).

    Takes the LangChain / Mongo-style mapping described in this module's docstring or a
    qdrant-client ``models.Filter``. Raises :class:`InvalidQueryError` naming the key, operator or
    value that is wrong, and how to write it.
    """
    if filters is None:
        return ()
    _check_depth(filters)
    if _is_qdrant_filter(filters):
        return tuple(_from_qdrant_filter(filters))
    if not isinstance(filters, Mapping):
        raise InvalidQueryError(
            f"filters must be a mapping like {_EXAMPLE} or a qdrant_client.models.Filter, got {type(filters).__name__}."
        )
    if not filters:
        return ()
    return tuple(_parse_mapping(filters))


def filter_fields(spec: Iterable[Condition], kinds: Sequence[str] = (MATCH, EXCEPT, RANGE)) -> Set[str]:
    """The payload fields the conditions of ``kinds`` name (nested groups included)."""
    found: Set[str] = set()
    for c in spec:
        if c.kind in (ALL, ANY, NONE):
            found |= filter_fields(c.values, kinds)
        elif c.kind in kinds:
            found.add(c.field)
    return found


# -- the rule --------------------------------------------------------------------------------------


_MISSING = object()


def _lookup(value: Any, parts: Sequence[str]) -> Any:
    """Follow a dotted path through nested metadata as the engines do (a list: any element)."""
    if not parts:
        return value
    if isinstance(value, list):
        found = [_lookup(item, parts) for item in value]
        flat = [x for f in found for x in (f if isinstance(f, list) else [f]) if x is not _MISSING]
        return flat if flat else _MISSING
    if isinstance(value, Mapping):
        return _lookup(value.get(parts[0], _MISSING), parts[1:]) if parts[0] in value else _MISSING
    return _MISSING


def _same(actual: Any, wanted: Any) -> bool:
    return type(actual) is type(wanted) and actual == wanted if isinstance(wanted, bool) else (
        not isinstance(actual, bool) and actual == wanted
    )


def _in_range(actual: Any, bounds: Tuple[Any, ...]) -> bool:
    if isinstance(actual, bool) or not isinstance(actual, (int, float)):
        return False
    gt, gte, lt, lte = bounds
    return ((gt is None or actual > gt) and (gte is None or actual >= gte)
            and (lt is None or actual < lt) and (lte is None or actual <= lte))


def _holds(node: TreeNode, c: Condition) -> bool:
    if c.kind == ALL:
        return all(_holds(node, sub) for sub in c.values)
    if c.kind == ANY:
        return any(_holds(node, sub) for sub in c.values)
    if c.kind == NONE:
        return not any(_holds(node, sub) for sub in c.values)
    if c.kind == IDS:
        return node.id in c.values
    if c.kind == NODES:
        return node.level >= 0
    if c.field.startswith("metadata."):
        actual = _lookup(node.metadata, c.field[len("metadata."):].split("."))
    else:
        actual = getattr(node, c.field)
    items = actual if isinstance(actual, list) else ([] if actual is _MISSING or actual is None else [actual])
    if c.kind == MATCH:
        return any(_same(a, v) for a in items for v in c.values)
    if c.kind == EXCEPT:
        return not any(_same(a, v) for a in items for v in c.values)
    if c.kind == RANGE:
        return any(_in_range(a, c.values) for a in items)
    raise ValueError(f"unknown condition kind {c.kind!r}")


def _coerce(spec: Iterable[Any]) -> List[Condition]:
    # A bare (field, values) pair is the older spelling of a match condition (kept for callers
    # that build a spec by hand, e.g. (("doc_id", ("a",)),)).
    return [c if isinstance(c, Condition) else Condition(MATCH, c[0], tuple(c[1])) for c in spec]


def node_matches(node: TreeNode, spec: FilterSpec) -> bool:
    """Whether a node satisfies a parsed filter (the same rule the engines apply)."""
    return all(_holds(node, c) for c in _coerce(spec))


# -- what each operation asks the engine -----------------------------------------------------------


def spec_conditions(spec: FilterSpec) -> List[Condition]:
    """A parsed user filter as conditions (all must hold)."""
    return _coerce(spec)


def request_conditions(request: RankRequest) -> List[Condition]:
    """The conditions of one ranking request.

    An unrestricted request (flat search over every level) gets ``level >= 0``, so that it never
    meets the bookkeeping point (a dense vector, no level).
    """
    must: List[Condition] = []
    if request.candidate_ids is not None:
        must.append(Condition(IDS, "", tuple(request.candidate_ids)))
    if request.level is not None:
        must.append(match("level", request.level))
    if request.leaves_only:
        must.append(match("is_leaf", True))
    must.extend(spec_conditions(request.filters))
    if request.candidate_ids is None and request.level is None and not request.leaves_only:
        must.append(Condition(NODES))
    return must


def roots_copy_conditions(request: RankRequest) -> List[Condition]:
    """The conditions of a roots ranking (``level = 0``) answered by the roots' own collection.

    :func:`request_conditions` without ``level = 0``: every point of that collection is a root, so
    the condition admits them all and costs the engine a filter check per point (Qdrant Edge at 1M
    nodes, 7,024 roots: ~0.4 ms of a ~1.8 ms request). A user's filter on another level stays (it
    then matches no root, as before).
    """
    every_root = match("level", 0)
    return [c for c in request_conditions(request) if c != every_root]


def scroll_conditions(spec: FilterSpec, level: Optional[int]) -> List[Condition]:
    """The conditions of a listing: the user's filter, a level if given, nodes only."""
    must = spec_conditions(spec)
    if level is not None:
        must.append(match("level", level))
    must.append(Condition(NODES))
    return must


def count_conditions() -> List[Condition]:
    """The conditions of a node count: nodes only."""
    return [Condition(NODES)]


def delete_plan(doc_id: str, except_hash: Optional[str]) -> Tuple[List[List[Condition]], List[Condition]]:
    """The deletes of a document's nodes, in order, and the ``must_not`` they share.

    The root goes first (the NodeStore contract): it is the tree's commit point, so a delete cut
    short leaves only rootless nodes, which no search reaches and the next ingest removes.
    ``except_hash`` keeps the nodes of that version.
    """
    must_not = [match("doc_hash", except_hash)] if except_hash else []
    of_doc = match("doc_id", doc_id)
    return [[of_doc, match("level", 0)], [of_doc]], must_not


# -- into Qdrant's filter types ----------------------------------------------------------------------


class QdrantFilters:
    """Engine-neutral conditions as one Qdrant API's filter types: the translator both Qdrant engines use.

    The constructors are passed in, so this module imports no engine library: qdrant-client's
    ``models.Filter`` / ``FieldCondition`` / ... (``store/qdrant.py``) and Qdrant Edge's classes of
    the same names (``store/edge/engine.py``) differ only in how a few take their arguments, which
    the engine's small adapters say. ``filter(must=, should=, must_not=)`` and ``field(key=,
    match= | range=)`` take keywords; ``range`` takes ``gt= gte= lt= lte=``; ``has_id``,
    ``match_value`` and ``match_any`` take the ids, the value, the list of values. ``on_range`` is
    called with the field of every range condition built (a server creates a payload index there).
    """

    def __init__(self, *, filter: Callable[..., Any], field: Callable[..., Any], has_id: Callable[[Sequence[Any]], Any],
                 match_value: Callable[[Any], Any], match_any: Callable[[List[Any]], Any], range: Callable[..., Any],
                 on_range: Optional[Callable[[str], None]] = None) -> None:
        self.filter, self.field, self.has_id = filter, field, has_id
        self.match_value, self.match_any, self.range, self.on_range = match_value, match_any, range, on_range

    def conditions(self, conditions: Sequence[Condition]) -> List[Any]:
        """The engine's conditions for a ``must`` (or ``must_not``) list."""
        return [self.condition(c) for c in conditions]

    def request_filter(self, request: RankRequest) -> Any:
        """The filter of one ranking request (see :func:`request_conditions`), None if it has none."""
        return self.filter_of(request_conditions(request))

    def filter_of(self, conditions: Sequence[Condition]) -> Any:
        """The engine's filter of a ``must`` list, None if the list is empty."""
        must = self.conditions(conditions)
        return self.filter(must=must) if must else None

    def condition(self, c: Condition) -> Any:
        """One condition in the engine's types."""
        if c.kind == IDS:
            return self.has_id(c.values)
        if c.kind == NODES:  # every node has level >= 0; the bookkeeping point has no level
            return self.field(key="level", range=self.range(gte=0))
        if c.kind == MATCH:
            return self._match(c)
        if c.kind == EXCEPT:  # must_not of the match: a missing field passes, as in node_matches
            return self.filter(must_not=[self._match(c)])
        if c.kind == RANGE:
            gt, gte, lt, lte = c.values
            if self.on_range is not None:
                self.on_range(c.field)
            return self.field(key=c.field, range=self.range(gt=gt, gte=gte, lt=lt, lte=lte))
        parts = [self.condition(sub) for sub in c.values]
        if c.kind == ALL:
            return self.filter(must=parts)
        if c.kind == ANY:
            return self.filter(should=parts)
        return self.filter(must_not=parts)  # NONE

    def _match(self, c: Condition) -> Any:
        if len(c.values) == 1:
            return self.field(key=c.field, match=self.match_value(c.values[0]))
        # parse_filters allows lists of str or int only (a single bool otherwise)
        return self.field(key=c.field, match=self.match_any(list(c.values)))
