"""Release basics: one version everywhere, a changelog entry for it, the licence text, metadata."""

import hashlib
import importlib.metadata
import json
import re
import tomllib
from pathlib import Path

import steerable_agent_runtime
import steerable_sidecar

CHECKOUT = Path(__file__).resolve().parent.parent
VERSION = steerable_agent_runtime.__version__
# MD5 of https://www.apache.org/licenses/LICENSE-2.0.txt, the canonical text byte for byte
APACHE_2_0_MD5 = "3b83ef96387f14655fc854ddc3c6bd57"
# PEP 440, appendix B: a public version in canonical form
CANONICAL_PEP_440 = re.compile(
    r"([1-9][0-9]*!)?(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*((a|b|rc)(0|[1-9][0-9]*))?"
    r"(\.post(0|[1-9][0-9]*))?(\.dev(0|[1-9][0-9]*))?"
)


def test_one_version_everywhere():
    from steerable_agent_runtime._version import __version__

    installed = importlib.metadata.version("steerable")
    assert VERSION == steerable_sidecar.__version__ == __version__ == installed


def test_the_version_is_pep_440_and_canonical():
    assert CANONICAL_PEP_440.fullmatch(VERSION), VERSION


def test_the_changelog_has_a_section_for_the_version():
    changelog = (CHECKOUT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", changelog, re.M)
    names = [name for name, _date in headings]
    assert names[0] == "Unreleased", names
    assert VERSION in names, f"CHANGELOG.md has no '## [{VERSION}] - YYYY-MM-DD' section"
    assert all(date for name, date in headings if name != "Unreleased"), headings
    # keepachangelog's reference links at the bottom, one per section
    for name in names:
        assert re.search(rf"^\[{re.escape(name)}\]: https://", changelog, re.M), name


def test_the_licence_is_the_apache_2_0_text():
    data = (CHECKOUT / "LICENSE").read_bytes()
    text = data.decode("ascii")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
    assert hashlib.md5(data, usedforsecurity=False).hexdigest() == APACHE_2_0_MD5


def test_the_js_package_ships_the_same_licence():
    """Issue 33: ``@steerable/host`` carries the licence its ``license`` field names, in its files."""
    package = json.loads((CHECKOUT / "js" / "package.json").read_text(encoding="utf-8"))
    assert package["license"] == "Apache-2.0" and "LICENSE" in package["files"]
    assert (CHECKOUT / "js" / "LICENSE").read_bytes() == (CHECKOUT / "LICENSE").read_bytes()


def test_pyproject_reads_the_version_from_the_package():
    pyproject = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "src/steerable_agent_runtime/_version.py"
    assert project["license"] == "Apache-2.0"
    assert "LICENSE" in project["license-files"]


def test_the_installed_metadata_names_the_licence_and_the_project_urls():
    metadata = importlib.metadata.metadata("steerable")
    assert metadata["License-Expression"] == "Apache-2.0"
    assert "LICENSE" in (metadata.get_all("License-File") or [])
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL") or [])
    assert set(urls) >= {"Homepage", "Documentation", "Changelog", "Issues"}
