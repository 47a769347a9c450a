"""Memory per command, not per process: the run's memory cgroup bounds the whole tree and its tmpfs.

``RLIMIT_AS`` bounds each process; the memory cgroup bounds the command and everything it forks
together, tmpfs pages it writes (bubblewrap's ``/tmp`` and ``/dev/shm``) included. When the kernel's
OOM killer kills a process of the run, the runner kills the rest of the tree and reports
``memory_exceeded``; ``bash`` says which limit was hit and its variable. An OOM elsewhere (above
the run's cgroup) is not the run's. These tests need a writable memory controller (root here,
cgroup v1) and skip naming it otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sbx_helpers import real_backend
from test_cgroup import pooled_paths, settle_releases
from test_runner import alive, gone, sleeper

from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd
from steerable_agent_runtime.sandbox import (
    ResourceLimits,
    SandboxPolicy,
    _cgroup,
    run_sandboxed,
    spawn_sandboxed,
)
from steerable_agent_runtime.sandbox._cgroup import CLEAN_BYTES, cgroup_parents
from waiting import eventually, grace, wait_until

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
    assert time.monotonic() - started < 10  # at once: the hogs sleep over 100 s, the deadline is 30 s
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
    started = time.monotonic()
    result = await run_sandboxed(
        # the shell never ends by itself (a builtin loop: no fork, no memory): only a kill ends it
        [
            "/bin/sh",
            "-c",
            f"head -c {LIMIT + 16 * MIB} /dev/zero > {target}; echo status=$?; while :; do :; done",
        ],
        policy_for(workspace),
        backend=bwrap,
        timeout_s=30,
    )
    # tmpfs pages are charged to the run: the tree is out of memory and killed as a whole, by the
    # runner at once (not at the deadline). The kernel kills one process first: the shell may
    # still report the writer's SIGKILL before the runner's reaches it.
    assert result.memory_exceeded and not result.timed_out and result.exit_code == 128 + 9
    assert result.stdout.text in ("", "status=137\n")
    assert time.monotonic() - started < 10  # at once: the loop never ends, the deadline is 30 s
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
    await asyncio.to_thread(settle_releases)  # no earlier run's cgroups can join the pool meanwhile
    first = await spawn_sandboxed(
        ["/bin/sh", "-c", f"head -c {LIMIT + 16 * MIB} /dev/zero > /tmp/fill"],
        policy,
        backend=bwrap,
        timeout_s=30,
    )
    assert first._cgroup is not None
    paths = first._cgroup.paths
    async with first:
        result = await first.finish()
    assert result.memory_exceeded
    # the release runs off the loop, and waits for the last zombie to be reaped: when the shell
    # ends by itself, bubblewrap exits before its init does, and PID 1 reaps that init
    await eventually(
        lambda: paths in pooled_paths(),
        what="the cgroups of an OOM run pooled",
        timeout_s=_cgroup._REAP_S + 30,
    )
    for path in paths:  # nothing charged, nothing counted: the tmpfs pages left with the sandbox
        if (path / "memory.usage_in_bytes").exists():
            assert int((path / "memory.usage_in_bytes").read_text()) <= CLEAN_BYTES
            assert "oom_kill 0\n" not in (path / "memory.oom_control").read_text()  # it counts the kill
        if (path / "pids.current").exists():
            assert (path / "pids.current").read_text().strip() == "0"
    second = await spawn_sandboxed(["/bin/sh", "-c", f"{hog('0')} && echo fits"], policy, backend=bwrap)
    assert second._cgroup is not None
    assert second._cgroup.paths == paths  # the OOM-killed run's cgroups, reused
    async with second:
        result = await second.finish()
    # the OOM kills counted by the reused cgroup are not this run's
    assert result.exit_code == 0 and result.stdout.text == "fits\n" and not result.memory_exceeded


PARENT_LIMIT = 512 * MIB

SIDECAR = """
import asyncio, json, sys, threading, time
from pathlib import Path
from steerable_agent_runtime.sandbox import BubblewrapBackend, LandlockBackend, ResourceLimits, SandboxPolicy
from steerable_agent_runtime.sandbox import spawn_sandboxed
backend_name, workspace, limit = sys.stdin.readline().split()
backend = BubblewrapBackend() if backend_name == "bwrap" else LandlockBackend()
policy = SandboxPolicy(writable_roots=(Path(workspace),), limits=ResourceLimits(memory_bytes=int(limit)))
go = Path(workspace) / "go"
async def main():
    proc = await spawn_sandboxed(
        ["/bin/sh", "-c", f"until [ -e {go} ]; do sleep 0.02; done; echo still-here"],
        policy, backend=backend, timeout_s=30,
    )
    print("started", flush=True)  # in its cgroups, told of OOMs
    async with proc:
        return await proc.finish()
result = asyncio.run(main())
while any(t.name == "steerable-cgroup-release" for t in threading.enumerate()):
    time.sleep(0.02)  # the run's cgroups are given back, then removed at exit
print(json.dumps([result.exit_code, result.stdout.text, result.memory_exceeded]), flush=True)
"""


@pytest.fixture
def limited_cgroup() -> Iterator[Path]:
    """A memory cgroup of this test's, limited to 512 MiB (cgroup v1), below this process's own."""
    memory = next(parent for parent in cgroup_parents() if "memory" in parent.controllers)
    if memory.version != 1:
        pytest.skip("cgroup v2: no OOM eventfd (the kernel kills the run's group itself)")
    path = memory.path / f"memtest-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    (path / "memory.limit_in_bytes").write_text(str(PARENT_LIMIT))
    if (path / "memory.memsw.limit_in_bytes").exists():
        (path / "memory.memsw.limit_in_bytes").write_text(str(PARENT_LIMIT))
    yield path

    def removed() -> bool:
        try:
            path.rmdir()
        except OSError:
            return False
        return True

    # its processes are gone; their cgroups go offline a moment later
    wait_until(removed, what=f"{path} removed (left behind)")


@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
async def test_an_oom_above_the_run_is_not_the_runs(backend_name: str, workspace: Path, limited_cgroup: Path):
    """cgroup v1 wakes every cgroup below the one out of memory; only a kill counted in the run's own is the run's.

    A sidecar in a container with a memory limit: another process of the container goes over it
    and is killed while a sandboxed run goes on. The run is not killed, nor reported over its limit.
    """
    real_backend(backend_name)  # fails, naming the fix, when it cannot run here
    sidecar = subprocess.Popen(
        [sys.executable, "-I", "-c", SIDECAR], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert sidecar.stdin is not None and sidecar.stdout is not None
    try:
        (limited_cgroup / "cgroup.procs").write_text(str(sidecar.pid))  # before it makes run cgroups
        sidecar.stdin.write(f"{backend_name} {workspace} {LIMIT}\n")
        sidecar.stdin.close()
        assert await asyncio.to_thread(sidecar.stdout.readline) == "started\n"
        # a process next to the sidecar takes more than the container's limit and makes itself the
        # OOM killer's first choice (the sandbox's processes score 1000 too, the hog is bigger)
        code = (
            "import sys; sys.stdin.readline(); open('/proc/self/oom_score_adj', 'w').write('1000'); "
            f"b = bytearray({PARENT_LIMIT + 64 * MIB}); print('hog survived')"
        )
        other = subprocess.Popen([PY, "-I", "-S", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert other.stdin is not None and other.stdout is not None
        (limited_cgroup / "cgroup.procs").write_text(str(other.pid))
        other.stdin.write(b"go\n")
        other.stdin.close()
        assert await asyncio.to_thread(other.wait) == -9
        with other.stdout:
            assert other.stdout.read() == b""
        assert "oom_kill 1\n" in (limited_cgroup / "memory.oom_control").read_text()
        await asyncio.sleep(grace(0.3, why="a runner wrongly acting on the OOM notification kills the run"))
        (workspace / "go").touch()
        report = await asyncio.wait_for(asyncio.to_thread(sidecar.stdout.readline), 30)
    finally:
        try:
            sidecar.wait(timeout=15)  # it removes its pooled cgroups at exit
        finally:
            sidecar.kill()
            sidecar.wait()
            sidecar.stdout.close()
    assert json.loads(report) == [0, "still-here\n", False]
