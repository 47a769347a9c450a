"""Helpers shared by the sandbox tests (a module of its own: ``conftest`` names are ambiguous)."""

from __future__ import annotations

import pytest

from steerable_agent_runtime.sandbox import BubblewrapBackend, LandlockBackend, SandboxBackend

LINUX_BACKENDS = ("bwrap", "landlock")


def real_backend(name: str) -> SandboxBackend:
    """The real backend called ``name``; the test fails, naming the fix, when it cannot run here."""
    backend: SandboxBackend = BubblewrapBackend() if name == "bwrap" else LandlockBackend()
    reason = backend.unavailable_reason()
    if reason is not None:
        pytest.fail(f"the {name} backend cannot run here ({reason}); .ci/run installs bubblewrap")
    return backend
