"""Every exception class of the package derives from DragKneeError and is exported: from
``drag_knee_retriever``, or, for eval's own errors, from ``drag_knee_retriever.eval`` (the core may
not import eval, see test_layering)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import drag_knee_retriever
from drag_knee_retriever import DragKneeError
from drag_knee_retriever.integrations import RetrieverSettings

EVAL = "drag_knee_retriever.eval"


def _exception_classes():
    for info in pkgutil.walk_packages(drag_knee_retriever.__path__, "drag_knee_retriever."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == info.name:
                yield f"{info.name}.{name}", obj


def test_every_exception_is_a_drag_knee_error_and_exported() -> None:
    found = dict(_exception_classes())
    assert "drag_knee_retriever.errors.InvalidScoresError" in found
    for qualified, cls in found.items():
        assert issubclass(cls, DragKneeError), f"{qualified} does not derive from DragKneeError"
        # eval's errors live in eval; the command's own error is exported by the CLI, not the library.
        home = (importlib.import_module(EVAL) if qualified.startswith(EVAL + ".") else
                importlib.import_module("drag_knee_retriever.cli") if cls.__name__ == "CliError" else drag_knee_retriever)
        assert cls.__name__ in home.__all__, f"{qualified} is not in {home.__name__}.__all__"
        assert getattr(home, cls.__name__) is cls


def test_retriever_settings_merge_per_call_options() -> None:
    settings = RetrieverSettings("k", method="knee", filters={"lang": "en"})
    assert settings.overrides == {"method": "knee", "filters": {"lang": "en"}}
    # A per-call k caps the results; the retriever's method still decides up to it (issue 15).
    assert settings.for_call({"k": 2}) == {"method": "knee", "max_results": 2, "filters": {"lang": "en"}}
    assert settings.for_call({"k": 2, "method": "branch"})["method"] == "branch"
    assert settings.for_call({}) is settings.overrides
    top = RetrieverSettings("similarity_top_k", similarity_top_k=3)
    assert top.overrides == {"max_results": 3}
    assert top.for_call({"method": "fixed", "beam_width": 5}) == {"max_results": 3, "method": "fixed", "beam_width": 5}
    with pytest.raises(drag_knee_retriever.ConfigError, match="beam_width=5 does nothing with method='knee'"):
        top.for_call({"method": "knee", "beam_width": 5})
    with pytest.raises(drag_knee_retriever.InvalidQueryError, match="similarity_top_k"):
        top.for_call({"k": 1})
    with pytest.raises(drag_knee_retriever.ConfigError):
        RetrieverSettings("k", k=0)
