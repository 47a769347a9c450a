"""The source tree keeps the shape docs/development.md describes (Layout, Code rules)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
MODULES = sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)
MAX_MODULE_LINES = 800


def _name(path: Path) -> str:
    return str(path.relative_to(SRC))


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def test_the_tree_is_read() -> None:
    assert len(MODULES) > 100
    assert {p.parent.name for p in MODULES} >= {"steerable_agent_runtime", "steerable_sidecar", "web_tools"}


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_passes_800_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_name(path)} has {lines} lines: split it by what it holds"


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_private_names_do_not_cross_modules(path: Path) -> None:
    """A shared piece is public inside its (private) module: ``from ._disk import DIR_FLAGS``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    crossing = [
        f"line {node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name.startswith("_")
        and not alias.name.startswith("__")
        and not (node.module is None and node.level)  # `from . import _module` names a module
    ]
    assert crossing == []


@pytest.mark.parametrize("path", [p for p in MODULES if "steerable_sidecar" in p.parts], ids=_name)
def test_the_sidecar_imports_only_the_runtimes_public_modules(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    imported += [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    private = [m for m in imported if m.startswith("steerable_agent_runtime") and _private(m)]
    assert private == []


def test_the_runtime_never_imports_the_sidecar() -> None:
    offenders = [
        _name(p)
        for p in MODULES
        if "steerable_agent_runtime" in p.parts
        and re.search(r"^\s*(from|import) steerable_sidecar", p.read_text(), re.M)
    ]
    assert offenders == []


def test_the_development_guide_names_every_package() -> None:
    layout = (ROOT / "docs" / "development.md").read_text(encoding="utf-8").split("## Layout", 1)[1]
    layout = layout.split("\n## ", 1)[0]
    packages = sorted(p.parent for p in MODULES if p.name == "__init__.py")
    missing = [
        str(package.relative_to(SRC))
        for package in packages
        if not re.search(rf"(^|[\s/]){package.name}/\s", layout, re.M)
    ]
    assert missing == []
