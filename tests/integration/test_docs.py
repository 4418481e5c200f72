"""The docs site builds strictly: every page in the nav, every link and anchor resolved, the API
reference generated from the public API's docstrings, the CHANGELOG included; and it covers what it
must (every name of ``drag_knee_retriever.__all__`` on the API page, the picture of how-it-works
current with the script that draws it); the README's links into it land on pages and headings that exist,
in the built HTML and in headless Chromium.

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


def _screenshots_module():
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "docs" / "scripts" / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_links_into_the_site_resolve(site):
    """Every ``docs/PAGE.md`` link of the README is a page of the built site, and its ``#ANCHOR`` an id there
    (mkdocs --strict checks the links between docs pages, not the README's)."""
    module = _screenshots_module()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]+\.md)(?:#([^)\s]+))?\)", readme)
    assert len([a for _, a in links if a]) >= 5, "the README links to fewer docs sections than the five topics"
    for page, anchor in links:
        html = site / module.site_path(page) / "index.html"
        assert html.is_file(), f"README.md links to {page}, which the site does not build"
        if anchor:
            assert f'id="{anchor}"' in html.read_text(encoding="utf-8"), \
                f"README.md links to {page}#{anchor}, an id the built page does not have"


def test_a_browser_follows_each_readme_link_to_its_docs_section(site):
    """docs/scripts/screenshots.py --walk in headless Chromium, on the site built above: each README link
    to a docs section reaches a rendered heading with that id, and a link to a missing one is reported."""
    module = _screenshots_module()
    chromium = module.find_chromium()
    if chromium is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    real = module.readme_docs_links()
    module.readme_docs_links = lambda: real + [(0, "docs/guides/langchain.md", "no-such-section")]
    server, base = module.serve(site)
    try:
        problems = module.walk(chromium, base, site.parent / "chromium-profile")
    finally:
        server.shutdown()
    assert problems == ["README.md:0: docs/guides/langchain.md#no-such-section has no heading with that id in "
                        "the rendered page"]
