"""The sandbox's seccomp filter, run for real: set-id modes, System V IPC and keyrings (RUN-9).

Found by the attack review: a root sidecar's command could leave a set-uid-root copy of bash in
the workspace (the host's users run it later), and under Landlock (no IPC namespace) System V
shared memory and keys a command made outlived the run and were read by the next one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sbx_helpers import real_backend

from steerable_agent_runtime.sandbox import ResourceLimits, SandboxPolicy, run_sandboxed

PY = sys.executable

SETID = r"""
import ctypes, errno, os, stat
def attempt(label, fn):
    try:
        fn()
        print(label, "allowed")
    except OSError as exc:
        print(label, errno.errorcode[exc.errno])
open("plain", "w").close()
attempt("chmod 755", lambda: os.chmod("plain", 0o755))
attempt("chmod 4755", lambda: os.chmod("plain", 0o4755))
attempt("chmod 2755", lambda: os.chmod("plain", 0o2755))
fd = os.open("plain", os.O_RDONLY)
attempt("fchmod 4755", lambda: os.fchmod(fd, 0o4755))
attempt("create 4755", lambda: os.close(os.open("made", os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt("mknod 4644", lambda: os.mknod("node", 0o4644 | stat.S_IFREG))
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
rc = libc.syscall(425, 8, params)  # io_uring_setup: an OPENAT request would carry a mode unseen
print("io_uring_setup", "allowed" if rc >= 0 else errno.errorcode[ctypes.get_errno()])
print("modes", oct(os.stat("plain").st_mode & 0o7777), os.path.exists("made"))
"""

IPC = r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def call(label, *args):
    rc = libc.syscall(*args)
    print(label, "allowed" if rc >= 0 else errno.errorcode[ctypes.get_errno()])
import platform
nr = {"x86_64": (29, 64, 68, 248), "aarch64": (194, 190, 186, 217)}[platform.machine()]
call("shmget", nr[0], 0, 1 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
call("semget", nr[1], 0, 1, 0o1600)
call("msgget", nr[2], 0, 0o1600)
call("add_key", nr[3], b"user", b"steerable-probe", b"secret", 6, -4)  # KEY_SPEC_USER_KEYRING
"""


def _ipcs_ids() -> set[str]:
    out = subprocess.run(["ipcs"], capture_output=True, text=True, check=False).stdout
    return {line.split()[1] for line in out.splitlines() if line[:2] == "0x"}


@pytest.mark.parametrize("name", ["bwrap", "landlock"])
@pytest.mark.parametrize("network", [False, True])
async def test_no_set_id_program_can_be_left_in_the_workspace_run_9(
    name: str, network: bool, workspace: Path
) -> None:
    policy = SandboxPolicy(writable_roots=(workspace,), network=network, limits=ResourceLimits())
    run = await run_sandboxed([PY, "-c", SETID], policy, backend=real_backend(name), timeout_s=30)
    no_chmod = name == "landlock" and os.geteuid() == 0  # root under Landlock: no chmod at all
    assert run.stdout.text.splitlines() == [
        "chmod 755 EPERM" if no_chmod else "chmod 755 allowed",
        "chmod 4755 EPERM",
        "chmod 2755 EPERM",
        "fchmod 4755 EPERM",
        "create 4755 EPERM",
        "mknod 4644 EPERM",
        "io_uring_setup EPERM",
        "modes 0o644 False" if no_chmod else "modes 0o755 False",
    ], run.stderr.text
    assert not any(p.stat().st_mode & 0o6000 for p in workspace.iterdir())


async def test_a_root_landlock_command_cannot_chmod_the_hosts_files_run_9(
    workspace: Path, outside: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("a non-root command can chmod only its own files; the rule is for a root sidecar")
    victim = outside / "secret.txt"
    victim.chmod(0o600)
    policy = SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits())
    script = f"chmod 0777 {victim} 2>&1; echo status=$?"
    run = await run_sandboxed(
        ["/bin/sh", "-c", script], policy, backend=real_backend("landlock"), timeout_s=30
    )
    assert run.stdout.text.strip().endswith("status=1"), run.stdout.text
    assert "Operation not permitted" in run.stdout.text
    assert victim.stat().st_mode & 0o777 == 0o600


async def test_landlock_commands_cannot_leave_system_v_ipc_or_keys_behind_run_9(workspace: Path) -> None:
    before = _ipcs_ids()
    policy = SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits())
    run = await run_sandboxed([PY, "-c", IPC], policy, backend=real_backend("landlock"), timeout_s=30)
    assert run.stdout.text.splitlines() == [
        "shmget EPERM",
        "semget EPERM",
        "msgget EPERM",
        "add_key EPERM",
    ], run.stderr.text
    assert _ipcs_ids() <= before


async def test_bwrap_commands_keep_their_ipc_inside_the_sandbox(workspace: Path) -> None:
    """bubblewrap has an IPC namespace: System V IPC works in the run and is gone after it."""
    before = _ipcs_ids()
    policy = SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits())
    run = await run_sandboxed([PY, "-c", IPC], policy, backend=real_backend("bwrap"), timeout_s=30)
    lines = run.stdout.text.splitlines()
    assert lines[:3] == ["shmget allowed", "semget allowed", "msgget allowed"], run.stderr.text
    assert _ipcs_ids() <= before
