"""The Landlock path without a cgroup (a non-root sidecar): the supervisor outlives the command.

The launcher forks the command and confines only the child (Landlock, the socket filter, the
dropped capabilities), so the supervisor stays outside the command's Landlock domain. From ABI 6
(signal scoping) the command cannot kill it, and as the child subreaper it kills whatever the
command left behind, ``setsid`` daemons included, when the command exits. These tests run the
launcher directly, exactly as the runner does but without a cgroup, as a non-root sidecar would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from sbx_helpers import real_backend

from steerable_agent_runtime.sandbox import SandboxPolicy, child_environment, detect_landlock_abi
from steerable_agent_runtime.sandbox._launch import EXIT_SETUP
from steerable_agent_runtime.sandbox._pinning import PINNED_PYTHON, launcher_argv, launcher_code
from waiting import wait_until


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _running(*argv: str) -> list[int]:
    """The live processes (this PID namespace's numbers) whose command line is exactly ``argv``."""
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted and _alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _landlock_launch(script: str, workspace: Path, private_tmp: Path) -> subprocess.CompletedProcess[str]:
    backend = real_backend("landlock")
    policy = SandboxPolicy(writable_roots=(workspace,))
    plan = backend.plan(["/bin/sh", "-c", script], policy, private_tmp=private_tmp)
    env = {**child_environment(), **plan.env}
    return subprocess.run(
        launcher_argv(plan, policy),  # no cgroup: the process lifetime rests on the supervisor alone
        capture_output=True,
        text=True,
        cwd=workspace,
        env=env,
        timeout=30,
        check=False,
        start_new_session=True,
    )


@pytest.fixture
def private_tmp(tmp_path: Path) -> Path:
    path = tmp_path / "private-tmp"
    path.mkdir()
    return path


def test_a_landlock_command_cannot_kill_its_supervisor_nor_leave_a_daemon(workspace: Path, private_tmp: Path):
    """RUN-5: the tree dies with the call, even when the command tries to outlive it."""
    if detect_landlock_abi() < 6:
        pytest.skip("signal scoping needs Landlock ABI 6 (Linux 6.12); this kernel has an older ABI")
    # the command runs in a PID namespace of its own (SAFE-3): the daemon's $! is not its pid here,
    # so it is found by its command line, which no other process has
    seconds = f"300.{time.monotonic_ns()}"
    script = (
        f"setsid sleep {seconds} </dev/null >/dev/null 2>&1 & "
        "kill -9 $PPID 2>/dev/null && echo killed || echo refused; "
        "kill -STOP $PPID 2>/dev/null && echo stopped || echo refused; "
        "exit 3"
    )
    run = _landlock_launch(script, workspace, private_tmp)
    assert run.stdout == "refused\nrefused\n", run.stderr
    assert run.returncode == 3
    try:
        wait_until(
            lambda: not _running("sleep", seconds), what="the setsid daemon gone (it outlived the call)"
        )
    finally:
        for daemon in _running("sleep", seconds):
            os.kill(daemon, signal.SIGKILL)


def test_the_supervisor_is_outside_the_sandbox_and_the_command_inside(workspace: Path, private_tmp: Path):
    """The confinement happens after the fork: the command is confined, its supervisor is not."""
    script = (
        "grep -c . /proc/$PPID/environ >/dev/null 2>&1 && echo parent-environ-readable || echo refused; "
        "touch /var/tmp/steerable-supervisor-probe 2>/dev/null && echo wrote || echo refused"
    )
    run = _landlock_launch(script, workspace, private_tmp)
    assert run.stdout == "refused\nrefused\n", run.stderr
    assert not Path("/var/tmp/steerable-supervisor-probe").exists()


def test_a_confinement_failure_in_the_child_never_runs_the_command(tmp_path: Path):
    marker = tmp_path / "ran"
    argv = [PINNED_PYTHON, "-I", "-S", launcher_code(), "--landlock", "--ro", "/", "--rw"]
    argv += [str(tmp_path / "missing"), "--supervise", "--", "touch", str(marker)]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    assert run.returncode == EXIT_SETUP
    assert run.stderr.startswith("steerable-sandbox: setup failed, not running the command: cannot open")
    assert not marker.exists()
