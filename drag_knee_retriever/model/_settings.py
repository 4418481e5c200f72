"""One declarative way to declare, document and validate a setting.

Every settings class of the package (:class:`~drag_knee_retriever.SearchConfig`, ``BuildConfig``,
``EmbeddingConfig``, ``StoreConfig``, ``OcrConfig``, ``SummarizerSettings`` and their nested groups)
is a frozen dataclass made with :func:`settings_class`, whose fields are declared with
:func:`setting`: the default, a one-line doc, and the rule (type, range, choices, whether ``None``
is allowed, and for a method-specific setting the method it belongs to). One validator reads those
rules when the object is built (never per query), so a range lives next to the field it bounds and
the README's settings table is generated from the same declarations (:func:`settings_table`).

Why not pydantic (which qdrant-client brings): these objects are frozen dataclasses that the code
copies with :func:`dataclasses.replace` and hashes into document fingerprints; every error must be a
:class:`~drag_knee_retriever.errors.ConfigError` that says what to write instead; and ``import
drag_knee_retriever`` stays light. The rules below are about 150 lines and cover every field.

Renamed and moved fields keep working for one release: a class lists them in ``moved`` and
:func:`settings_class` maps the old keyword (and the old attribute read) onto the new place with a
:class:`DeprecationWarning` naming the new spelling.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import warnings
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar

from drag_knee_retriever.errors import ConfigError

__all__ = ["Rule", "Settings", "iter_settings", "off_when_none", "setting", "settings_class", "settings_table",
           "unexpected_keywords", "warn_deprecated"]

#: The largest count or constant a setting may take: the engines take 32-bit (Edge: Rust usize /
#: u32) values, and 2**70 raised OverflowError inside Qdrant Edge. A billion is accepted.
MAX_SETTING = 2**31 - 1

T = TypeVar("T")


@dataclass(frozen=True)
class Rule:
    """What a setting accepts. ``kind``: ``int``, ``float``, ``bool``, ``str``, ``"choice"``,
    ``"names"`` (a tuple of non-empty strings), ``"any"``, or a settings class (a nested group)."""

    doc: str
    kind: Any
    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False          # low itself is refused: (low, high]
    choices: Tuple[Any, ...] = ()
    optional: bool = False          # None is accepted (its meaning is in the doc)
    hint: str = ""                  # appended to the message of a refusal ("1.0 is the plain knee")
    check: Optional[Callable[[str, Any], Any]] = None  # a composite value's own check; returns the value kept
    # A method-specific setting: (controlling field, the values under which it applies, its default
    # there, what to use instead elsewhere). None elsewhere; given elsewhere it is refused.
    only: Optional[Tuple[str, Tuple[Any, ...], Any, str]] = None


def setting(default: Any = MISSING, *, doc: str, kind: Any, low: Optional[float] = None,
            high: Optional[float] = None, low_open: bool = False, choices: Sequence[Any] = (),
            optional: bool = False, hint: str = "", check: Optional[Callable[[str, Any], Any]] = None,
            only: Optional[Tuple[str, Tuple[Any, ...], Any, str]] = None,
            default_factory: Any = MISSING, repr: bool = True) -> Any:
    """A dataclass field with its rule and doc in the metadata (see :class:`Rule`)."""
    rule = Rule(doc=doc, kind=kind, low=low, high=high, low_open=low_open, choices=tuple(choices),
                optional=optional or only is not None, hint=hint, check=check, only=only)
    return field(default=default, default_factory=default_factory, repr=repr, metadata={"rule": rule})


class Settings:
    """Base of every settings class: validates each field from its :class:`Rule` when built."""

    if TYPE_CHECKING:
        # settings_class makes the dataclass at runtime, which type checkers do not see: without this
        # they read object's __init__ and flag every StoreConfig(collection=...) as an error. (Typed
        # fields need each setting()'s default given by keyword and its accepted input types, e.g.
        # a list of weight pairs, in the annotation; until then a misspelled field is caught at runtime.)
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for f in fields(self):  # type: ignore[arg-type]
            rule: Optional[Rule] = f.metadata.get("rule")
            if rule is not None:
                object.__setattr__(self, f.name, _validate(owner, f.name, getattr(self, f.name), rule))
        for f in fields(self):  # type: ignore[arg-type]
            rule = f.metadata.get("rule")
            if rule is not None and rule.only is not None:
                _apply_only(self, f.name, rule)
        self._check()

    def _check(self) -> None:
        """Rules that tie fields together (a class overrides it); single-field rules are declared."""

    def to_dict(self) -> Dict[str, Any]:
        """The settings as plain values, nested groups as dicts (for JSON reports)."""
        out: Dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, Settings):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = [list(v) if isinstance(v, tuple) else v for v in value]
            out[f.name] = value
        return out

    def with_path(self: T, path: str, value: Any) -> T:
        """A copy with the setting at a dotted ``path`` (``"focus.pool"``) replaced, validated again."""
        head, _, rest = path.partition(".")
        names = {f.name for f in fields(self)}  # type: ignore[arg-type]
        if head not in names:
            moved = getattr(type(self), "_moved", {})
            if head in moved and not rest:
                return replace(self, **{head: value})  # type: ignore[type-var]
            raise ConfigError(f"{type(self).__name__} has no setting {head!r}; the settings are {', '.join(sorted(names))}.")
        if not rest:
            return replace(self, **{head: value})  # type: ignore[type-var]
        group = getattr(self, head)
        if group is None:
            group = _group_class(type(self), head)()
        return replace(self, **{head: group.with_path(rest, value)})  # type: ignore[type-var]


def _group_class(cls: type, name: str) -> Type[Any]:
    rule = cls.__dataclass_fields__[name].metadata["rule"]  # type: ignore[attr-defined]
    return rule.kind


def _refuse(owner: str, name: str, rule: Rule, value: Any, what: str) -> ConfigError:
    extra = f" ({rule.hint})" if rule.hint else ""
    none = " or None" if rule.optional else ""
    return ConfigError(f"{owner}.{name} must be {what}{none}{extra}, got {value!r}.")


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _range(rule: Rule) -> str:
    if rule.low is not None and rule.high == MAX_SETTING:
        return f" >= {rule.low:g} (at most {MAX_SETTING:,})"
    if rule.low is not None and rule.high is not None:
        return f" in {'(' if rule.low_open else '['}{rule.low:g}, {rule.high:g}]"
    if rule.low is not None:
        return f" {'>' if rule.low_open else '>='} {rule.low:g}"
    return ""


def _in_range(value: float, rule: Rule) -> bool:
    if rule.low is not None and (value <= rule.low if rule.low_open else value < rule.low):
        return False
    return rule.high is None or value <= rule.high


def _validate(owner: str, name: str, value: Any, rule: Rule) -> Any:
    if value is None and rule.optional:
        return None
    kind = rule.kind
    if rule.check is not None:
        try:
            return rule.check(name, value)
        except ConfigError as exc:
            message = str(exc)
            raise ConfigError(f"{owner}.{message}" if message.startswith(name) else f"{owner}.{name}: {message}") from None
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or not _in_range(value, rule):
            raise _refuse(owner, name, rule, value, f"an integer{_range(rule)}")
        return value
    if kind is float:
        if not _number(value) or not _in_range(float(value), rule):
            raise _refuse(owner, name, rule, value, f"a number{_range(rule)}")
        return float(value)
    if kind is bool:
        if not isinstance(value, bool):
            raise _refuse(owner, name, rule, value, "True or False")
        return value
    if kind is str:
        if not isinstance(value, str) or not value.strip():
            raise _refuse(owner, name, rule, value, "a non-empty string")
        return value
    if kind == "choice":
        if value not in rule.choices:
            raise _refuse(owner, name, rule, value, "one of " + ", ".join(repr(c) for c in rule.choices))
        return value
    if kind == "names":
        parts = (value,) if isinstance(value, str) else value
        if not isinstance(parts, (tuple, list)) or not all(isinstance(p, str) and p.strip() for p in parts):
            raise _refuse(owner, name, rule, value, "a tuple of non-empty strings")
        return tuple(parts)
    if kind == "any":
        return value
    if isinstance(kind, type):
        if isinstance(value, Mapping):  # a nested group given as a dict (a JSON report read back)
            return kind(**value)
        if not isinstance(value, kind):
            raise _refuse(owner, name, rule, value, f"a {kind.__name__}")
        return value
    raise TypeError(f"unknown setting kind {kind!r}")  # pragma: no cover - a declaration bug


def _apply_only(obj: Any, name: str, rule: Rule) -> None:
    controller, applies, default, instead = rule.only  # type: ignore[misc]
    current = getattr(obj, controller)
    value = getattr(obj, name)
    if current in applies:
        if value is None:
            object.__setattr__(obj, name, default)
        return
    if value == default:
        # The method's own default carried over by a copy (``replace(config, method="knee")``):
        # nothing was asked for, so nothing is refused; the setting is simply not in play.
        object.__setattr__(obj, name, None)
    elif value is not None:
        where = " or ".join(repr(a) for a in applies)
        raise ConfigError(
            f"{type(obj).__name__}.{name}={value!r} does nothing with {controller}={current!r} (it applies with "
            f"{controller}={where}); {instead}"
        )


def warn_deprecated(old: str, new: str, stacklevel: int = 2) -> None:
    """One DeprecationWarning, worded the same everywhere: the old spelling and the new one."""
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}.",
                  DeprecationWarning, stacklevel=stacklevel + 1)


def unexpected_keywords(call: str, given: Sequence[str], valid: Sequence[str], takes: str) -> TypeError:
    """The TypeError for keywords ``call`` does not take: each one named with the valid keyword it is
    closest to (a typo such as ``serach=`` is said to mean ``search=``), then what ``call`` takes."""
    parts = []
    for name in sorted(given):
        close = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
        parts.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    return TypeError(f"{call} got unexpected keyword argument(s) {', '.join(parts)}; {takes}")


# -- classes ---------------------------------------------------------------------------------------

# moved: old keyword -> (new field, nested field or None, how to convert the value or None).
Moved = Mapping[str, Tuple[str, Optional[str], Optional[Callable[[Any], Any]]]]


def settings_class(cls: Optional[type] = None, *, moved: Optional[Moved] = None) -> Any:
    """Make ``cls`` a frozen, validated settings dataclass; ``moved`` keeps old spellings working."""

    def make(cls: type) -> type:
        cls = dataclass(frozen=True)(cls)
        if moved:
            cls._moved = dict(moved)  # type: ignore[attr-defined]
            init = cls.__init__

            @functools.wraps(init)
            def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
                if not kwargs.keys() & moved.keys():
                    init(self, *args, **kwargs)
                    return
                init(self, *args, **_move_keywords(cls, kwargs, moved))

            def __getattr__(self: Any, name: str) -> Any:
                if name not in moved or name.startswith("__"):
                    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
                target, inner, _ = moved[name]
                warn_deprecated(f"{type(self).__name__}.{name}", f"{type(self).__name__}.{target}"
                                + (f".{inner}" if inner else ""), stacklevel=2)
                value = object.__getattribute__(self, target)
                if inner is None:
                    return value
                return None if value is None else getattr(value, inner)

            cls.__init__ = __init__  # type: ignore[misc]
            cls.__getattr__ = __getattr__  # type: ignore[attr-defined]
        _name_misspelled_keywords(cls, tuple(f.name for f in fields(cls)), tuple(moved or ()))
        return cls

    return make(cls) if cls is not None else make


def _name_misspelled_keywords(cls: type, names: Tuple[str, ...], old_names: Tuple[str, ...]) -> None:
    """``SearchConfig(beam_widht=3)``: the dataclass's TypeError, with the setting meant named (only
    when building fails, so a valid construction pays one frame)."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError:
            unknown = sorted(set(kwargs) - set(names) - set(old_names))
            if not unknown:
                raise
            raise unexpected_keywords(f"{cls.__name__}()", unknown, names + old_names,
                                      f"its settings are {', '.join(names)}.") from None

    cls.__init__ = __init__  # type: ignore[misc]


def _move_keywords(cls: type, kwargs: Dict[str, Any], moved: Moved) -> Dict[str, Any]:
    out = {k: v for k, v in kwargs.items() if k not in moved}
    nested: Dict[str, Dict[str, Any]] = {}
    disabled: List[str] = []
    for old, value in kwargs.items():
        if old not in moved:
            continue
        target, inner, convert = moved[old]
        group_cls = _group_class(cls, target) if inner else None
        new = f"{cls.__name__}({target}={group_cls.__name__}({inner}=...))" if group_cls else f"{cls.__name__}({target}=...)"
        warn_deprecated(f"{cls.__name__}({old}=...)", new, stacklevel=3)
        if convert is not None:
            value = convert(value)
        if inner is None:
            out[target] = value
        elif value is _DISABLE:
            disabled.append(target)
        else:
            nested.setdefault(target, {})[inner] = value
    for target, changes in nested.items():
        base = out.get(target)
        if base is None:
            base = _group_class(cls, target)()
        out[target] = replace(base, **changes)
    for target in disabled:
        out[target] = None
    return out


#: A ``moved`` converter returns this to say "the old value None switched the whole group off".
_DISABLE = object()


def off_when_none(value: Any) -> Any:
    """Converter for an old flat setting whose ``None`` meant "no such step" (the group becomes None)."""
    return _DISABLE if value is None else value


# -- documentation ---------------------------------------------------------------------------------


def iter_settings(cls: type, prefix: str = "") -> List[Tuple[str, Any, Rule]]:
    """Every setting of ``cls`` and its nested groups: (dotted name, default, rule)."""
    out: List[Tuple[str, Any, Rule]] = []
    for f in fields(cls):
        rule: Optional[Rule] = f.metadata.get("rule")
        if rule is None:
            continue
        default = f.default if f.default is not MISSING else (
            f.default_factory() if f.default_factory is not MISSING else None)  # type: ignore[misc]
        if isinstance(rule.kind, type) and is_dataclass(rule.kind) and issubclass(rule.kind, Settings):
            out.append((prefix + f.name, rule.kind.__name__ + ("()" if default is not None else "") if default is not None else None, rule))
            out.extend(iter_settings(rule.kind, prefix + f.name + "."))
        else:
            out.append((prefix + f.name, default, rule))
    return out


def _default_text(default: Any, rule: Rule) -> str:
    if rule.only is not None:
        return f"None ({rule.only[2]!r} with {rule.only[0]}={'/'.join(map(repr, rule.only[1]))})"
    if isinstance(default, str) and default.endswith("()"):
        return default
    return repr(default)


def settings_table(cls: type) -> str:
    """A Markdown table of ``cls``'s settings (name, default, what it does), from their declarations."""
    rows = ["| setting | default | what it shapes |", "| --- | --- | --- |"]
    for name, default, rule in iter_settings(cls):
        doc = " ".join(rule.doc.split()).replace("|", "\\|")
        rows.append(f"| `{name}` | `{_default_text(default, rule)}` | {doc} |")
    return "\n".join(rows)


def fields_of(cls: type) -> Tuple[str, ...]:
    """The field names of a settings class (its constructor keywords, old spellings excluded)."""
    return tuple(f.name for f in dataclasses.fields(cls))
