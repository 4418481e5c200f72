"""The docs site builds strictly: every page in the nav, every link and anchor resolved, the API
reference generated from the public API's docstrings, the CHANGELOG included; and it covers what it
must (every name of ``drag_knee_retriever.__all__`` on the API page, the picture of how-it-works
current with the script that draws it).

Skips, saying why, only where mkdocs (the ``docs`` extra, also in ``dev``) is not installed.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mkdocs_missing() -> str:
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        try:
            found = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            found = None
        if found is None:
            return f"{module} is not installed (pip install -e \".[docs]\")"
    return ""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    missing = _mkdocs_missing()
    if missing:
        pytest.skip(missing)
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_the_site_builds_strictly(site):
    for page in ("index.html", "getting-started/index.html", "guides/langchain/index.html",
                 "guides/agents/index.html", "how-it-works/index.html", "reference/settings/index.html",
                 "reference/api/index.html", "benchmarks/index.html", "changelog/index.html"):
        assert (site / page).is_file(), page
    assert (site / "assets" / "how-it-works.svg").is_file()


def test_the_api_page_documents_every_public_name(site):
    import drag_knee_retriever

    html = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="([\w.]+)"', html))
    missing = [name for name in drag_knee_retriever.__all__
               if not any(i == name or i.endswith("." + name) for i in ids)]
    assert not missing, f"not on the API page: {missing}"


def test_the_changelog_page_is_the_changelog(site):
    html = (site / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "History before the changelog" in html and "Unreleased" in html


def test_the_pictures_are_the_scripts(tmp_path):
    """The committed pictures are what docs/scripts/make_diagram.py draws (compared by their texts: path
    data differs between matplotlib releases)."""
    pytest.importorskip("matplotlib")
    spec = importlib.util.spec_from_file_location("make_diagram", ROOT / "docs" / "scripts" / "make_diagram.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def texts(svg: Path) -> list:
        return re.findall(r"<text[^>]*>([^<]+)</text>", svg.read_text(encoding="utf-8"))

    for draw, name in ((module.draw, "how-it-works.svg"), (module.draw_gains, "gains.svg")):
        drawn = texts(draw(tmp_path / name))
        assert drawn and drawn == texts(ROOT / "docs" / "assets" / name), \
            f"docs/assets/{name} is stale: run python docs/scripts/make_diagram.py"


def test_the_screenshot_script_renders_pages_in_chromium(tmp_path):
    """docs/scripts/screenshots.py in a real browser: skipped, saying why, without Chromium or mkdocs."""
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "docs" / "scripts" / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if module.find_chromium() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    missing = _mkdocs_missing()
    if missing:
        pytest.skip(missing)
    assert module.main(["--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(name for name, _ in module.PAGES)
