"""Memory per command, not per process: the run's memory cgroup bounds the whole tree and its tmpfs.

``RLIMIT_AS`` bounds each process; the memory cgroup bounds the command and everything it forks
together, tmpfs pages it writes (bubblewrap's ``/tmp`` and ``/dev/shm``) included. When the kernel's
OOM killer acts in it, the runner kills the rest of the tree and reports ``memory_exceeded``;
``bash`` says which limit was hit and its variable. These tests need a writable memory controller
(root here, cgroup v1) and skip naming it otherwise.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest
from sbx_helpers import real_backend
from test_runner import alive, gone, sleeper

from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd
from steerable_agent_runtime.sandbox import ResourceLimits, SandboxPolicy, _cgroup, run_sandboxed
from steerable_agent_runtime.sandbox._cgroup import CLEAN_BYTES, cgroup_parents

PY = os.path.realpath(sys.executable)
MIB = 1 << 20
LIMIT = 128 * MIB


@pytest.fixture(autouse=True)
def _memory_cgroup() -> None:
    if not any("memory" in parent.controllers for parent in cgroup_parents()):
        pytest.skip("no writable memory cgroup here: memory is bounded per process (RLIMIT_AS) only")


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request: pytest.FixtureRequest):
    return real_backend(request.param)


def policy_for(workspace: Path) -> SandboxPolicy:
    return SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits(memory_bytes=LIMIT))


def hog(seconds: str) -> str:
    """One process taking 60 % of the limit (under its own RLIMIT_AS), then sleeping."""
    return f"{PY} -I -S -c 'import time; b = bytearray({int(LIMIT * 0.6)}); time.sleep({seconds})'"


async def test_four_processes_over_the_limit_together_are_killed_as_a_whole(backend, workspace: Path):
    seconds, token = sleeper()
    started = time.monotonic()
    result = await run_sandboxed(
        ["/bin/sh", "-c", f"for i in 1 2 3 4; do {hog(seconds)} & done; wait; echo survived"],
        policy_for(workspace),
        backend=backend,
        timeout_s=30,
    )
    # each one fits its RLIMIT_AS; together they pass the run's limit: the OOM killer takes one,
    # the runner the rest, at once (not after the sleep, not at the deadline)
    assert result.memory_exceeded and not result.timed_out
    assert result.exit_code == 128 + 9 and "survived" not in result.stdout.text
    assert time.monotonic() - started < 10
    assert await gone(token), f"left running: {alive(token)}"


async def test_the_runs_limit_does_not_touch_the_sidecar(backend, workspace: Path):
    ballast = bytearray(2 * LIMIT)  # this process holds twice the run's limit and keeps it
    result = await run_sandboxed(
        ["/bin/sh", "-c", f"{hog('0')} && echo one-hog-fits"],
        policy_for(workspace),
        backend=backend,
        timeout_s=30,
    )
    assert result.exit_code == 0 and result.stdout.text == "one-hog-fits\n" and not result.memory_exceeded
    assert len(ballast) == 2 * LIMIT


@pytest.mark.parametrize("target", ["/dev/shm/fill", "/tmp/fill"])
async def test_filling_bubblewraps_tmpfs_past_the_limit_fails_inside(workspace: Path, target: str):
    bwrap = real_backend("bwrap")
    result = await run_sandboxed(
        ["/bin/sh", "-c", f"head -c {LIMIT + 16 * MIB} /dev/zero > {target}; echo status=$?"],
        policy_for(workspace),
        backend=bwrap,
        timeout_s=30,
    )
    # tmpfs pages are charged to the run: the tree is out of memory and killed as a whole (the
    # shell may still report the OOM killer's SIGKILL of the writer before the runner's reaches it)
    assert result.memory_exceeded and result.exit_code == 128 + 9
    assert result.stdout.text in ("", "status=137\n")
    after = await run_sandboxed(
        ["/bin/sh", "-c", f"ls {target} 2>&1; echo fine"], policy_for(workspace), backend=bwrap, timeout_s=30
    )
    assert after.stdout.text.endswith("No such file or directory\nfine\n")  # the tmpfs went with it
    assert after.exit_code == 0 and not after.memory_exceeded


async def test_bash_says_which_limit_was_hit_and_its_variable(workspace: Path):
    router = workspace_tools_for_cwd(workspace, environ={"STEERABLE_SANDBOX_MEMORY_BYTES": str(LIMIT)})
    command = f"for i in 1 2 3 4; do {hog('20')} & done; wait"
    result = await router.dispatch(ToolCall(id="m", name="bash", arguments={"command": command}))
    assert result.success is False and result.needs_followup is True
    assert result.error == (
        "The command was killed: it and the processes it started went over the memory limit of "
        f"{LIMIT} bytes together (files written to /tmp and /dev/shm count too; "
        "STEERABLE_SANDBOX_MEMORY_BYTES), so all of them were stopped."
    )
    assert result.data is not None and result.data["code"] == "memory_limit"
    assert result.data["exitCode"] == 128 + 9 and result.data["timedOut"] is False


async def test_a_pooled_cgroup_starts_the_next_run_clean(workspace: Path):
    bwrap = real_backend("bwrap")
    policy = policy_for(workspace)
    first = await run_sandboxed(
        ["/bin/sh", "-c", f"head -c {LIMIT + 16 * MIB} /dev/zero > /tmp/fill"],
        policy,
        backend=bwrap,
        timeout_s=30,
    )
    assert first.memory_exceeded
    # the release runs off the loop: wait until the run's cgroups are back in the pool
    deadline = time.monotonic() + 5
    while not any(_cgroup._pool.values()) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    pooled = [cgroup for cgroups in _cgroup._pool.values() for cgroup in cgroups]
    assert pooled, "the cgroups of an OOM run were not pooled"
    for cgroup in pooled:  # nothing charged, nothing counted: the tmpfs pages left with the sandbox
        for run_dir in cgroup._dirs:
            if run_dir.memory:
                assert run_dir.memory_usage() <= CLEAN_BYTES
            if "pids" in run_dir.controllers:
                assert (run_dir.path / "pids.current").read_text().strip() == "0"
    second = await run_sandboxed(
        ["/bin/sh", "-c", f"{hog('0')} && echo fits"], policy, backend=bwrap, timeout_s=30
    )
    # the OOM kills counted by the reused cgroup are not this run's
    assert second.exit_code == 0 and second.stdout.text == "fits\n" and not second.memory_exceeded
