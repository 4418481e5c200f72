"""The public API is ``drag_knee_retriever.__all__``: what the public classes' public methods take
back from the package (their return annotations) is exported there, so a user can name it (type it,
``isinstance`` it, read its docs on the API page) without importing an internal module."""

from __future__ import annotations

import inspect
import sys
import typing

import pytest

import drag_knee_retriever

PACKAGE = "drag_knee_retriever"


def _package_classes(annotation: object) -> set:
    """The package's own classes inside a return annotation (``List[X]``, ``Optional[X]``, ``X``)."""
    found = set()
    if inspect.isclass(annotation) and annotation.__module__.startswith(PACKAGE):
        found.add(annotation)
    for arg in typing.get_args(annotation):
        found |= _package_classes(arg)
    return found


def returned_classes(cls: type) -> dict:
    """``{method name: the package classes it returns}`` for ``cls``'s public methods."""
    out = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not callable(member):
            continue
        annotation = getattr(member, "__annotations__", {}).get("return")
        if isinstance(annotation, str):  # ``from __future__ import annotations``: read in the method's module
            namespace = {**vars(typing), **vars(sys.modules[member.__module__])}
            annotation = eval(annotation, namespace)  # noqa: S307 (the package's own annotation)
        classes = _package_classes(annotation)
        if classes:
            out[name] = classes
    return out


PUBLIC_CLASSES = [getattr(drag_knee_retriever, name) for name in drag_knee_retriever.__all__
                  if inspect.isclass(getattr(drag_knee_retriever, name))]


def test_the_finder_sees_a_returned_class() -> None:
    found = returned_classes(drag_knee_retriever.DragKneeIndex)
    assert drag_knee_retriever.SearchResult in found["search"]


@pytest.mark.parametrize("cls", PUBLIC_CLASSES, ids=lambda c: c.__name__)
def test_what_public_methods_return_is_exported(cls: type) -> None:
    missing = {f"{cls.__name__}.{method} -> {c.__module__}.{c.__name__}"
               for method, classes in returned_classes(cls).items() for c in classes
               if c.__name__ not in drag_knee_retriever.__all__}
    assert not missing, f"returned by a public method, not in drag_knee_retriever.__all__: {sorted(missing)}"
