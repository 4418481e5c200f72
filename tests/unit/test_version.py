"""The version is written once and every place that names it agrees: ``drag_knee_retriever.__version__`` (the
one place), ``pyproject.toml`` (which reads it at build time, as the build itself does), the top section of
CHANGELOG.md, and the release steps in docs/contributing.md. A PEP 440 version; a pre-release until a release
is tagged."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.version import Version

import drag_knee_retriever

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_pep_440_and_a_pre_release_until_one_is_tagged():
    version = Version(drag_knee_retriever.__version__)
    assert str(version) == drag_knee_retriever.__version__, "write the version in PEP 440's normal form"
    top = re.search(r"^## \[([^\]]+)\](.*)$", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    if "unreleased" in top.group(2).lower():
        # Nothing tagged under this number yet: it must not claim to be a final release.
        assert version.is_prerelease or version.is_devrelease, \
            f"{version} is a final version, but CHANGELOG.md says it is unreleased"


def test_pyproject_takes_the_version_from_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"], "pyproject.toml writes a version of its own; read the package's"
    assert "version" in project["project"].get("dynamic", [])
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "drag_knee_retriever.__version__"}
    # What the build reads (setuptools, statically: without importing the package).
    from setuptools.config.pyprojecttoml import read_configuration

    built = read_configuration(ROOT / "pyproject.toml")["project"]["version"]
    assert built == drag_knee_retriever.__version__


def test_the_changelog_top_section_is_this_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert sections, "CHANGELOG.md has no version section (## [X.Y.Z] - date or Unreleased)"
    assert sections[0] == drag_knee_retriever.__version__, \
        f"CHANGELOG.md's top section is [{sections[0]}], the package says {drag_knee_retriever.__version__}"
    assert len(sections) == len(set(sections)), "a version has two sections in CHANGELOG.md"
    for version in sections:
        Version(version)


def test_the_release_steps_tag_the_version():
    steps = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    assert "## Tagging a release" in steps and re.search(r"git tag -a v\d", steps)
