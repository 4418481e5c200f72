"""The core imports no framework, and an adapter without its framework says which extra to install.

Each check runs in a fresh interpreter: the test process itself has both frameworks loaded.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Makes `import langchain_core` / `import llama_index` fail as if the package were not installed.
_BLOCKER = textwrap.dedent(
    """
    import sys

    class _Block:
        def __init__(self, prefixes):
            self.prefixes = prefixes

        def find_spec(self, name, path=None, target=None):
            if any(name == p or name.startswith(p + ".") for p in self.prefixes):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _Block(BLOCKED))
    """
)


def _run(code: str, blocked: tuple = ()) -> subprocess.CompletedProcess:
    script = f"BLOCKED = {blocked!r}\n" + _BLOCKER + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def test_core_import_loads_no_framework() -> None:
    result = _run(
        """
        import sys
        import drag_knee_retriever
        import drag_knee_retriever.integrations
        from drag_knee_retriever import knee_cut, SearchConfig, Document
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("langchain_core", "langchain", "llama_index"))
        print("LOADED", loaded)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "LOADED []" in result.stdout


def test_core_import_works_with_both_frameworks_missing() -> None:
    result = _run(
        """
        import drag_knee_retriever
        from drag_knee_retriever.integrations import hit_metadata, check_query
        print("OK", drag_knee_retriever.__version__)
        """,
        blocked=("langchain_core", "llama_index"),
    )
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("drag_knee_retriever.integrations.langchain", ("langchain_core",), '"drag-knee-retriever[langchain]"'),
        ("drag_knee_retriever.integrations.llamaindex", ("llama_index",), '"drag-knee-retriever[llamaindex]"'),
    ],
)
def test_adapter_without_its_framework_names_the_extra(module: str, blocked: tuple, extra: str) -> None:
    result = _run(
        f"""
        try:
            import {module}
        except ImportError as exc:
            print("MESSAGE", exc)
        else:
            print("IMPORTED")
        """,
        blocked=blocked,
    )
    assert result.returncode == 0, result.stderr
    assert "IMPORTED" not in result.stdout
    assert f"pip install {extra}" in result.stdout


def test_each_adapter_imports_only_its_own_framework() -> None:
    result = _run(
        """
        import sys
        import drag_knee_retriever.integrations.langchain
        print("LLAMA", any(m.startswith("llama_index") for m in sys.modules))
        """,
        blocked=("llama_index",),
    )
    assert result.returncode == 0, result.stderr
    assert "LLAMA False" in result.stdout
    result = _run(
        """
        import sys
        import drag_knee_retriever.integrations.llamaindex
        print("OK")
        """,
        blocked=("langchain_core",),
    )
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout
