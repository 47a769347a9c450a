"""bubblewrap without the launcher: the runner limits the sandbox's init from outside, then lets it go.

The runner spawns ``bwrap --info-fd --block-fd --sync-fd``, reads the pid of the sandbox's first
process, sets its resource limits (``prlimit``), checks it is in the run's cgroups, and only then
writes the byte that lets it fork the command. These tests check that the command inherits all of
it, that every failure fails closed (exit status 125, the command never runs), and that a runner
dying before the release leaves nothing running.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest
from sbx_helpers import real_backend
from test_runner import alive, gone, sleeper

from steerable_agent_runtime.sandbox import (
    ResourceLimits,
    SandboxPolicy,
    _handshake,
    run_sandboxed,
    spawn_sandboxed,
)
from steerable_agent_runtime.sandbox._cgroup import RunCgroup, cgroup_parents, sweep_stale
from steerable_agent_runtime.sandbox._launch import EXIT_SETUP
from waiting import eventually, grace, wait_until

PY = os.path.realpath(sys.executable)
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def bwrap():
    return real_backend("bwrap")


def limited(workspace: Path, **limits: int) -> SandboxPolicy:
    return SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits(max_output_bytes=4096, **limits))


async def test_the_command_inherits_the_limits_set_on_the_sandbox_init(bwrap, workspace: Path):
    policy = limited(workspace, cpu_seconds=77, memory_bytes=300 << 20)
    script = (
        "for pid in 1 self; do grep -E '^Max (cpu time|address space|core file size)' /proc/$pid/limits"
        " | tr -s ' '; done; echo pid=$$"
    )
    result = await run_sandboxed(["/bin/sh", "-c", script], policy, backend=bwrap, timeout_s=20)
    expected = [
        "Max cpu time 77 78 seconds ",
        "Max core file size 0 0 bytes ",
        f"Max address space {300 << 20} {300 << 20} bytes ",
    ]
    # /proc/1 is the sandbox's init, which bubblewrap blocked until the runner had limited it;
    # the command (pid 2, its child) carries the same limits
    assert result.stdout.text.splitlines() == [*expected, *expected, "pid=2"], result.stderr.text
    assert result.exit_code == 0


async def test_the_command_runs_in_the_runs_cgroups_seen_from_the_host(
    bwrap, workspace: Path, monkeypatch: pytest.MonkeyPatch
):
    if not cgroup_parents():
        pytest.skip("no writable pids or memory cgroup here (non-root, or a read-only cgroupfs)")
    checked: list[tuple[Path, ...]] = []  # what the handshake found the sandbox's init missing from
    missing = RunCgroup.missing

    def noted(self: RunCgroup, pid: int) -> tuple[Path, ...]:
        checked.append(missing(self, pid))
        return checked[-1]

    monkeypatch.setattr(RunCgroup, "missing", noted)
    seconds, token = sleeper()
    proc = await spawn_sandboxed(["sleep", seconds], limited(workspace), backend=bwrap, timeout_s=20)
    async with proc:
        # bubblewrap's own command line holds the token too: the command is the one called sleep
        def commands() -> list[int]:
            return [p for p in alive(token) if _comm(p) == "sleep"]

        await eventually(commands, what="the sandboxed sleep running")
        [pid] = commands()
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        run_cgroups = [line for line in lines if "/steerable-" in line]
        assert len(run_cgroups) == len(cgroup_parents()), lines  # one per hierarchy
        # bubblewrap itself was forked inside them (no RCU grace period to wait for), so the
        # sandbox only needed checking, not moving (what the check costs: benchmarks/sandbox_startup.py)
        assert checked == [()], checked
        # no thread of this process stayed in a run cgroup after the spawn
        own = Path("/proc/self/cgroup").read_text()
        for task in os.listdir("/proc/self/task"):
            try:
                assert Path(f"/proc/self/task/{task}/cgroup").read_text() == own, task
            except FileNotFoundError:  # the thread ended meanwhile
                continue
        proc.kill()
        await proc.finish()
    assert await gone(token)


async def test_the_command_gets_no_descriptor_of_the_handshake(bwrap, workspace: Path):
    result = await run_sandboxed(
        ["/bin/sh", "-c", "ls /proc/self/fd"], limited(workspace), backend=bwrap, timeout_s=20
    )
    # 0-2, and the directory ls reads: not the info, block, sync or seccomp descriptors
    assert result.stdout.text.split() == ["0", "1", "2", "3"], result.stderr.text


def _fails(message: str):
    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, message)

    return fail


@pytest.mark.parametrize(
    ("target", "attribute", "reason"),
    [
        (_handshake, "_limit_process", "Operation refused by this test"),
        (RunCgroup, "apply_limits", "cannot set the limits of the run's cgroups"),
        (RunCgroup, "join", "cannot join the run's cgroups"),
    ],
)
async def test_a_failed_setup_step_never_runs_the_command(
    bwrap, workspace: Path, monkeypatch: pytest.MonkeyPatch, target: object, attribute: str, reason: str
):
    if target is RunCgroup and not cgroup_parents():
        pytest.skip("no writable cgroup here: there is no cgroup step to fail")
    monkeypatch.setattr(target, attribute, _fails("Operation refused by this test"))
    if attribute == "join":  # as on cgroup v2, where bubblewrap is not forked inside the cgroups
        monkeypatch.setattr(RunCgroup, "missing", lambda self, pid: self.procs_files)
    marker = workspace / "ran"
    seconds, token = sleeper()
    result = await run_sandboxed(
        ["/bin/sh", "-c", f"touch {marker}; sleep {seconds}"], limited(workspace), backend=bwrap, timeout_s=20
    )
    assert result.exit_code == EXIT_SETUP == 125 and not result.timed_out
    assert result.stderr.text.startswith("steerable-sandbox: setup failed, not running the command: ")
    assert reason in result.stderr.text and result.stderr.text.endswith("Operation refused by this test\n")
    assert not marker.exists()
    assert await gone(token)


async def test_bubblewraps_own_failure_is_reported_as_its_own(bwrap, workspace: Path, tmp_path: Path):
    missing = tmp_path / "missing-root"
    policy = SandboxPolicy(writable_roots=(workspace, missing), limits=ResourceLimits(max_output_bytes=4096))
    result = await run_sandboxed(["/bin/sh", "-c", "echo ran"], policy, backend=bwrap, timeout_s=20)
    assert result.exit_code == 1 and result.stdout.text == ""
    assert result.stderr.text == f"bwrap: Can't find source path {missing}: No such file or directory\n"


RUNNER_DIES = """
import asyncio, os, sys
from pathlib import Path
from steerable_agent_runtime.sandbox import BubblewrapBackend, SandboxPolicy, run_sandboxed
from steerable_agent_runtime.sandbox import _handshake

def die(pid, limits):  # the runner's process dies while the sandbox waits to be released
    print("dying", flush=True)
    os._exit(3)

_handshake._limit_process = die
workspace = Path(sys.argv[1])
asyncio.run(run_sandboxed(["/bin/sh", "-c", sys.argv[2]], SandboxPolicy(writable_roots=(workspace,)),
                          backend=BubblewrapBackend(), timeout_s=30))
"""


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "gone"


def test_a_runner_that_dies_before_the_release_never_runs_the_command(bwrap, workspace: Path):
    seconds, token = sleeper()
    marker = workspace / "ran"
    env = {**os.environ, "PYTHONPATH": SRC}
    for _ in range(5):
        run = subprocess.run(
            [sys.executable, "-c", RUNNER_DIES, str(workspace), f"touch {marker}; exec sleep {seconds}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
            check=False,
        )
        assert run.returncode == 3 and run.stdout == "dying\n", run.stderr
    time.sleep(grace(0.5, why="a sandbox released after all would run its command, which touches the marker"))
    # The block pipe never reads EOF (bubblewrap's init holds its write end as --sync-fd), so the
    # sandboxes still wait, the command never ran; nothing but those waiting inits is left
    assert not marker.exists()
    left = alive(token)
    assert {_comm(pid) for pid in left} <= {"bwrap"}, [(pid, _comm(pid)) for pid in left]
    # bubblewrap arms --die-with-parent in its init only after the block: the next sidecar's
    # sweep of dead sidecars' run cgroups kills them (without cgroups they wait until killed)
    if cgroup_parents():
        sweep_stale()
    else:
        for pid in left:
            os.kill(pid, 9)
    wait_until(lambda: not alive(token), what="the waiting sandboxes gone")


NON_ROOT = """
import asyncio, json, sys
from pathlib import Path
from steerable_agent_runtime.sandbox import BubblewrapBackend, ResourceLimits, SandboxPolicy, run_sandboxed
from steerable_agent_runtime.sandbox._cgroup import cgroup_parents

FORKS = '''
import os, time
made = 0
for _ in range(64):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        made += 1
    except OSError:
        break
print(made)
'''

async def main():
    workspace = Path(sys.argv[1])
    mib = 1 << 20
    policy = SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits(max_processes=16, memory_bytes=64 * mib))
    bwrap = BubblewrapBackend()
    out = {"cgroups": len(cgroup_parents()), "reason": bwrap.unavailable_reason()}
    forks = await run_sandboxed([sys.executable, "-I", "-S", "-c", FORKS], policy, backend=bwrap, timeout_s=30)
    out["forks"] = forks.stdout.text.strip()
    out["nproc"] = (await run_sandboxed(["/bin/sh", "-c", "grep '^Max processes' /proc/self/limits"], policy,
                                       backend=bwrap, timeout_s=30)).stdout.text.split()[2]
    for target in ("/tmp/fill", "/dev/shm/fill"):
        fill = await run_sandboxed(["/bin/sh", "-c", f"head -c {80 * mib} /dev/zero > {target}; echo $?"], policy,
                                   backend=bwrap, timeout_s=30)
        out[target] = [fill.stdout.text, fill.stderr.text, fill.memory_exceeded]
    print(json.dumps(out))

asyncio.run(main())
"""


def _system_python_like_ours() -> str | None:
    """A python readable by another user with this interpreter's version (for its C extensions)."""
    for candidate in (
        f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}",
        "/usr/bin/python3",
    ):
        if os.access(candidate, os.X_OK):
            version = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True
            ).stdout.strip()
            if version == str(sys.version_info[:2]):
                return candidate
    return None


def test_a_non_root_sidecar_is_bounded_by_rlimits_and_sized_tmpfs(tmp_path: Path):
    """RLIMIT_NPROC set from outside bounds a fork bomb, and /tmp and /dev/shm are capped, without cgroups."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root to switch to an unprivileged user (setpriv)")
    python = _system_python_like_ours()
    if python is None:
        pytest.skip(f"no system Python {sys.version_info[:2]} that another user can run")
    site = sysconfig.get_paths()["purelib"]
    workspace = Path(tempfile.mkdtemp(prefix="steerable-nonroot-", dir="/tmp"))
    try:
        os.chown(workspace, 65534, 65534)
        run = subprocess.run(
            ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--inh-caps=-all"]
            + [python, "-c", NON_ROOT, str(workspace)],
            capture_output=True,
            text=True,
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": "/tmp",
                "PYTHONPATH": f"{SRC}:{site}",
            },
            cwd="/tmp",
            timeout=120,
            check=False,
        )
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["reason"] is None and out["cgroups"] == 0  # no cgroup for an unprivileged sidecar here
    # Linux 5.14+: RLIMIT_NPROC counts per user namespace, so bubblewrap's init gets 16 + 1 and
    # the command (one task) may add 15 more before fork fails
    assert out["nproc"] == "17"
    assert int(out["forks"]) == 15
    for target in ("/tmp/fill", "/dev/shm/fill"):
        stdout, stderr, exceeded = out[target]
        assert stdout == "1\n" and exceeded is False
        assert stderr == "head: error writing 'standard output': No space left on device\n"
