"""A "Read-only file system" from ``bash`` is explained by what refused it, and names only a fix that helps.

The real ``bash`` tool, under real bubblewrap and real Landlock (with its mount namespace), in a
workspace holding a ``.git`` (a protected entry, bound read-only) and a real read-only tmpfs
mounted at ``ro/``: the protected-path opt-out is named for ``.git`` only, never for the mount or
for a path outside the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sbx_helpers import LINUX_BACKENDS, real_backend

from mounts import tmpfs
from steerable_agent_runtime.sandbox import bash_tool
from steerable_agent_runtime.sandbox._read_only import read_only_hint, refused_paths

OPT_OUT = (
    "to allow changes, the user can set STEERABLE_ALLOW_PROTECTED_WRITES=1 or start steerable with "
    "--allow-protected-writes."
)


@pytest.fixture
def workspace_with_mount(workspace: Path) -> Iterator[Path]:
    """``workspace`` with ``.git/hooks`` and a 64 KiB tmpfs mounted read-only at ``ro/``."""
    (workspace / ".git" / "hooks").mkdir(parents=True)
    with tmpfs(workspace / "ro", "ro,size=64k"):
        yield workspace


async def _bash(root: Path, backend: str, command: str) -> Any:
    real_backend(backend)
    environ = {"STEERABLE_SANDBOX": backend, "PATH": os.environ["PATH"], "HOME": str(root.parent)}
    return await bash_tool(root, environ=environ).handler(command=command)


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_read_only_mount_is_not_blamed_on_protected_paths(workspace_with_mount: Path, backend: str):
    result = await _bash(workspace_with_mount, backend, "touch ro/x")
    assert result.data["stderr"].strip().endswith("Read-only file system"), result.data
    assert result.error == (
        "The command exited with status 1. ro/x is on a file system mounted read-only on the host: no "
        "steerable setting changes that (it is not a protected path); write elsewhere in the workspace, "
        "or have the user remount that file system read-write."
    )
    assert result.needs_followup is True

    two = await _bash(workspace_with_mount, backend, "mkdir ro/d; python3 -c \"open('ro/y', 'w')\"")
    assert two.error.endswith(
        " ro/d, ro/y are on a file system mounted read-only on the host: no steerable setting changes "
        "that (they are not protected paths); write elsewhere in the workspace, or have the user remount "
        "that file system read-write."
    ), two.error
    assert "ALLOW_PROTECTED" not in two.error


@pytest.mark.parametrize("backend", LINUX_BACKENDS)
async def test_a_protected_path_still_names_the_opt_out(workspace_with_mount: Path, backend: str):
    result = await _bash(workspace_with_mount, backend, "echo evil > .git/hooks/pre-push")
    assert result.error == (
        "The command exited with status 1. Protected paths are read-only to commands (.git): git, "
        "editors and agent hosts run code from them outside the sandbox; " + OPT_OUT
    )
    assert not (workspace_with_mount / ".git" / "hooks" / "pre-push").exists()


async def test_a_path_outside_the_workspace_is_said_to_be_outside_it(workspace_with_mount: Path):
    # bubblewrap binds / read-only (Landlock refuses such a write with "Permission denied" instead)
    result = await _bash(workspace_with_mount, "bwrap", "echo hi > /usr/x; touch ro/x")
    assert result.error == (
        "The command exited with status 1. /usr/x is outside the workspace: commands may write only in "
        f"the workspace ({workspace_with_mount}) and $TMPDIR, and everything else is read-only to them. "
        "ro/x is on a file system mounted read-only on the host: no steerable setting changes that (it "
        "is not a protected path); write elsewhere in the workspace, or have the user remount that file "
        "system read-write."
    )


async def test_a_path_that_cannot_be_placed_gets_the_rule_not_a_guess(workspace_with_mount: Path):
    # after a cd, "q" is relative to ro/, not to the workspace: nothing here says which mount refused it
    result = await _bash(workspace_with_mount, "bwrap", "cd ro && touch q")
    assert result.error == (
        "The command exited with status 1. Commands may write only in the workspace and $TMPDIR, and "
        "not on a file system mounted read-only; protected paths in the workspace are read-only to "
        "them too (.git, .steerable), which the user can allow with STEERABLE_ALLOW_PROTECTED_WRITES=1 "
        "or --allow-protected-writes."
    )


def test_the_paths_programs_name_are_read_from_their_stderr() -> None:
    stderr = "\n".join(
        [
            "touch: cannot touch 'a b': Read-only file system",
            "mkdir: cannot create directory ‘c’: Read-only file system",
            "/usr/bin/bash: line 1: /usr/x: Read-only file system",
            "error: could not lock config file .git/config: Read-only file system",
            "OSError: [Errno 30] Read-only file system: 'ro/y'",
            "sed: can't read ro/zz: No such file or directory",
            "touch: cannot touch 'a b': Read-only file system",
        ]
    )
    assert refused_paths(stderr) == ["a b", "c", "/usr/x", ".git/config", "ro/y"]


def test_steerables_own_runtime_and_the_deny_read_folders_are_named_as_such(tmp_path: Path) -> None:
    stderr = (
        "cp: cannot create regular file '.venv/lib/x.py': Read-only file system\n"
        "touch: cannot touch 'home/.config/new': Read-only file system\n"
    )
    hint = read_only_hint(
        stderr,
        tmp_path,
        [tmp_path / ".venv"],
        deny_read=[tmp_path / "home" / ".config" / "gh"],
        runtime=[str(tmp_path / ".venv")],
    )
    assert hint == (
        " .venv/lib/x.py is in the Python environment running steerable (.venv), which commands may "
        "never change, whatever the settings. home/.config/new is in or beside the deny-read set "
        f"({tmp_path}/home/.config/gh): the sandbox keeps the folders holding its entries read-only to "
        "commands."
    )
    assert read_only_hint("make: *** [all] Error 2\n", tmp_path, [tmp_path / ".git"]) == ""
