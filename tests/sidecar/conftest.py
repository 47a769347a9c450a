"""Shared fixtures for the sidecar tests: a copy of this project's own checkout as a workspace."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import steerable_sidecar
from steerable_cli import run_steerable

REPO_ROOT = Path(__file__).resolve().parents[2]

# The directory the test process imports steerable from; child processes get it on PYTHONPATH so a
# subprocess runs the very code under test, whatever the install.
PACKAGE_PATH = str(Path(steerable_sidecar.__file__).resolve().parents[1])


def _child_env(**extra: str) -> dict[str, str]:
    """The environment for a child: ours minus every STEERABLE_* knob, plus ``extra``.

    ``STEERABLE_CONFIG=off``: a configuration file of the person running the tests is never read
    (a test of the file passes its own ``STEERABLE_CONFIG`` or ``XDG_CONFIG_HOME``).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
    env["STEERABLE_CONFIG"] = "off"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PATH, env.get("PYTHONPATH")) if p)
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


def _run_cli(
    *args: str, stdin: str | None = None, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m steerable_sidecar ARGS`` as a real process in :func:`_child_env` ``(**env)``."""
    return run_steerable(*args, env=_child_env(**env), cwd=cwd, stdin=stdin)


@pytest.fixture
def workspace(workspace: Path) -> Path:
    """The shared ``workspace`` (tests/conftest.py) with ``notes.txt`` (``alpha``, ``beta``) in it."""
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    return workspace


@pytest.fixture
def child_env() -> Callable[..., dict[str, str]]:
    """Build a child process environment: ours minus every STEERABLE_* knob, plus keyword overrides."""
    return _child_env


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m steerable_sidecar *args`` (``stdin=`` text, ``cwd=``, keyword env overrides)."""
    return _run_cli


@pytest.fixture(scope="session")
def tracked_files() -> list[str]:
    """The paths ``git ls-files`` lists for this checkout."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed; the sidecar end-to-end tests copy the git checkout")
    proc = subprocess.run(
        [git, "-C", str(REPO_ROOT), "ls-files", "-z"], capture_output=True, check=False, timeout=30
    )
    if proc.returncode != 0:
        pytest.skip(f"{REPO_ROOT} is not a git checkout: {proc.stderr.decode(errors='replace').strip()}")
    return [p for p in proc.stdout.decode("utf-8").split("\0") if p]


@pytest.fixture
def repo_copy(tmp_path: Path, tracked_files: list[str]) -> Path:
    """A private copy of the checkout's tracked files (source, docs, pyproject): a real workspace."""
    ws = tmp_path / "repo"
    ws.mkdir()
    for rel in tracked_files:
        src = REPO_ROOT / rel
        if src.is_symlink() or not src.is_file():  # a symlink, or deleted in the working tree
            continue
        dst = ws / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    for needed in ("pyproject.toml", "README.md", "src/steerable_sidecar/cli/_main.py"):
        assert (ws / needed).is_file(), f"the checkout copy lacks {needed}"
    return ws


@pytest.fixture
def latin1_named_file(repo_copy: Path) -> Path:
    """A file in the workspace copy whose name is not UTF-8 (``caf\\xe9.txt``, legal on Linux)."""
    odd = repo_copy / "docs" / os.fsdecode(b"caf\xe9.txt")
    odd.parent.mkdir(exist_ok=True)
    try:
        odd.write_bytes(b"latin-1 name\n")
    except (OSError, UnicodeEncodeError):
        pytest.skip("this filesystem refuses non-UTF-8 file names")
    return odd
