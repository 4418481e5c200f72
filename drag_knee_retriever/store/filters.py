"""Filters: the user's filter parsed once, and every engine's conditions built by one rule.

:func:`parse_filters` checks a user's ``{"doc_id": [...], "lang": "ru"}``; :func:`node_matches` is
the rule the engines apply (used by in-memory rankers and tests). The ``*_conditions`` functions
say which conditions a request, a listing, a count or a delete needs, as engine-neutral
:class:`Condition` values that each engine turns into its own filter types: so the engines cannot
drift apart on what a request means (the bookkeeping point kept out, the root deleted first...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from ..errors import InvalidQueryError
from ..nodes import TreeNode, check_unicode
from .base import FilterSpec, RankRequest

# Payload fields a filter may name directly; any other key is looked up in the document metadata.
TOP_LEVEL_FIELDS = ("doc_id", "level", "is_leaf")


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


def parse_filters(filters: Optional[Mapping[str, Any]]) -> FilterSpec:
    """Turn a user's ``{"doc_id": [...], "lang": "ru"}`` into typed conditions.

    Values must be str, int or bool, or a non-empty list of those (any of them matches). Keys other
    than ``doc_id``, ``level`` and ``is_leaf`` name document metadata fields.
    """
    if filters is None:
        return ()
    if not isinstance(filters, Mapping):
        raise InvalidQueryError(
            f"filters must be a mapping like {{'doc_id': ['a', 'b'], 'lang': 'ru'}}, got {type(filters).__name__}."
        )
    spec: List[Tuple[str, Tuple[Any, ...]]] = []
    for key, value in filters.items():
        check_filter_key(key)
        values = tuple(value) if isinstance(value, (list, tuple, set, frozenset)) else (value,)
        if not values:
            raise InvalidQueryError(f"filter {key!r} has an empty list; give at least one value.")
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
            else:
                raise InvalidQueryError(
                    f"filter {key!r} has value {item!r} of type {type(item).__name__}; "
                    "use str, int or bool (or a list of them)."
                )
        if len(kinds) > 1:
            raise InvalidQueryError(f"filter {key!r} mixes value types {sorted(k.__name__ for k in kinds)}; use one type.")
        if bool in kinds and len(values) > 1:
            raise InvalidQueryError(f"filter {key!r}: give a single bool, not a list.")
        field = key if key in TOP_LEVEL_FIELDS else f"metadata.{key}"
        spec.append((field, values))
    return tuple(spec)


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


def node_matches(node: TreeNode, spec: FilterSpec) -> bool:
    """Whether a node satisfies a parsed filter (the same rule the engines apply)."""
    for field, values in spec:
        if field.startswith("metadata."):
            actual = _lookup(node.metadata, field[len("metadata.") :].split("."))
        else:
            actual = getattr(node, field)
        if isinstance(actual, list):
            if not any(_same(a, v) for a in actual for v in values):
                return False
        elif not any(_same(actual, v) for v in values):
            return False
    return True


# -- engine-neutral conditions -------------------------------------------------------------------

MATCH = "match"  # the payload field equals one of ``values`` (one value: an exact match)
IDS = "ids"      # the point id is one of ``values``
NODES = "nodes"  # ``level >= 0``: every node, never the bookkeeping point (which has no level)


@dataclass(frozen=True)
class Condition:
    """One condition of a filter's ``must`` (or ``must_not``) list, before an engine builds it."""

    kind: str
    field: str = ""
    values: Tuple[Any, ...] = ()


def match(field: str, value: Any) -> Condition:
    """The field equals ``value``."""
    return Condition(MATCH, field, (value,))


def spec_conditions(spec: FilterSpec) -> List[Condition]:
    """A parsed user filter as conditions (a list of values: any of them matches)."""
    return [Condition(MATCH, field, tuple(values)) for field, values in spec]


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
