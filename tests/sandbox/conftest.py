"""Fixtures for the sandbox tests: a clean environment, a workspace, and each real Linux backend.

The backends are the real ones: bubblewrap (``.ci/run`` installs it) and Landlock (this kernel has
it). When one cannot run, the tests that need it fail naming the fix rather than skip: a green
run must mean the sandbox was exercised.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sbx_helpers import LINUX_BACKENDS, real_backend

from steerable_agent_runtime.sandbox import ResourceLimits, SandboxBackend, SandboxPolicy


@pytest.fixture(autouse=True)
def _no_sandbox_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("STEERABLE_SANDBOX") or name == "STEERABLE_SIDECAR_CONFINED":
            monkeypatch.delenv(name)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace, outside every writable root."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("readable\n", encoding="utf-8")
    return path


@pytest.fixture(params=LINUX_BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[SandboxBackend]:
    yield real_backend(request.param)


@pytest.fixture
def policy(workspace: Path) -> SandboxPolicy:
    return SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits(max_output_bytes=4096))


# -- the container posture (test_container.py, test_job_records.py) ---------------------------------


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A state directory of the test's own (not created)."""
    return tmp_path / "state"


@pytest.fixture
def env(state: Path) -> dict[str, str]:
    """This process's environment in the container posture, with the test's own state directory
    (steerable's variables, the job marker ``STEERABLE`` included, left out)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE")}
    return {**clean, "STEERABLE_SANDBOX": "container", "STEERABLE_STATE_DIR": str(state)}


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a test started in the background; whatever is still running at the end is killed."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
