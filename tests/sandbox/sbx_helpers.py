"""Helpers shared by the sandbox tests (a module of its own: ``conftest`` names are ambiguous)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from steerable_agent_runtime.sandbox import BubblewrapBackend, LandlockBackend, SandboxBackend
from steerable_agent_runtime.sandbox._protect import coarse_now
from waiting import wait_until

LINUX_BACKENDS = ("bwrap", "landlock")


def real_backend(name: str) -> SandboxBackend:
    """The real backend called ``name``; the test fails, naming the fix, when it cannot run here."""
    backend: SandboxBackend = BubblewrapBackend() if name == "bwrap" else LandlockBackend()
    reason = backend.unavailable_reason()
    if reason is not None:
        pytest.fail(f"the {name} backend cannot run here ({reason}); .ci/run installs bubblewrap")
    return backend


def older_than_now(*roots: Path) -> None:
    """Wait until the clock tick a run starts in is past the ``ctime`` of everything under ``roots``.

    A sandboxed run tells what its command changed by ``ctime`` (from the run's start on), so the
    user's files made just before the run must be a clock tick older than it. No process can set a
    ``ctime`` back (``os.utime`` moves it to now): the test waits for the clock instead.
    """
    paths = [
        *map(str, roots),
        *(
            os.path.join(folder, name)
            for root in roots
            for folder, dirs, files in os.walk(root)
            for name in dirs + files
        ),
    ]
    newest = max(os.lstat(path).st_ctime_ns for path in paths)
    wait_until(lambda: coarse_now() > newest, what="the clock a tick past the files' ctime")
