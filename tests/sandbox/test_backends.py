"""What each real backend enforces on this machine: bubblewrap and Landlock, run for real.

Every test runs real commands under the backend (through the launcher) and checks the effect
from outside: a file that must not exist does not, a listener that must stay silent got nothing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sbx_helpers import real_backend

from steerable_agent_runtime.sandbox import (
    LandlockBackend,
    ResourceLimits,
    SandboxPolicy,
    run_sandboxed,
)
from steerable_agent_runtime.sandbox._launch import EXIT_SETUP, handled_fs, seccomp_program
from steerable_agent_runtime.sandbox._pinning import LAUNCHER

PY = sys.executable


async def sh(backend, policy, script: str, *, timeout_s: float = 20):
    return await run_sandboxed(["/bin/sh", "-c", script], policy, backend=backend, timeout_s=timeout_s)


async def test_writes_land_in_the_workspace_only(backend, policy, workspace: Path, outside: Path):
    readable = Path(os.__file__)  # the stdlib: outside the workspace, visible under every backend
    result = await sh(
        backend,
        policy,
        f"echo kept > made.txt && mkdir -p sub && echo x > sub/f"
        f" && head -c 8 {readable} && echo"  # reading outside the workspace is allowed
        f" && ! echo x > {outside}/pwned 2>/dev/null"
        f" && ! touch {Path.home()}/steerable-pwned 2>/dev/null"
        " && ! touch /usr/steerable-pwned 2>/dev/null"
        f" && ! ln -s /etc/passwd {outside}/link 2>/dev/null"
        " && echo x > $TMPDIR/scratch && echo ok",
    )
    head = readable.read_bytes()[:8].decode()
    assert result.stdout.text == f"{head}\nok\n", result.stderr.text
    assert (workspace / "made.txt").read_text() == "kept\n" and (workspace / "sub" / "f").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not (Path.home() / "steerable-pwned").exists() and not Path("/usr/steerable-pwned").exists()


async def test_a_symlink_out_of_the_workspace_does_not_lead_out(
    backend, policy, workspace: Path, outside: Path
):
    (workspace / "door").symlink_to(outside)
    result = await sh(backend, policy, "echo x > door/pwned; echo x >> door/secret.txt; echo done")
    assert result.stdout.text == "done\n" and result.stderr.text.count("door/") == 2
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "readable\n"


async def test_the_private_temp_dir_is_fresh_and_removed(backend, policy):
    left = f"left-{uuid.uuid4().hex}"  # its own name: other test runs on this machine use /tmp too
    script = f'test -e "$TMPDIR/{left}" || echo fresh; echo x > "$TMPDIR/{left}" && echo wrote'
    first = await sh(backend, policy, script)
    second = await sh(backend, policy, script)
    assert first.stdout.text == second.stdout.text == "fresh\nwrote\n"  # nothing carried over
    assert not list(Path("/tmp").glob(f"steerable-sbx-*/{left}"))


async def test_no_capabilities_and_no_network(backend, policy):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    port = server.getsockname()[1]
    try:
        result = await sh(
            backend,
            policy,
            "grep CapEff /proc/self/status; "
            f"{PY} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=2)' 2>&1 | tail -1",
        )
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected
    finally:
        server.close()
    lines = result.stdout.text.splitlines()
    assert lines[0].split() == ["CapEff:", "0000000000000000"]
    assert "Error" in lines[1]  # refused (bwrap: empty network namespace) or EPERM (Landlock + filter)


# -- bubblewrap -------------------------------------------------------------------------------------


async def test_bwrap_read_only_root_private_tmp_and_own_pid_namespace(policy, tmp_path: Path):
    bwrap = real_backend("bwrap")
    marker = Path("/tmp") / f"steerable-host-marker-{os.getpid()}"
    marker.write_text("host")
    try:
        result = await sh(
            bwrap,
            policy,
            f"test -e {marker} || echo host-tmp-hidden; echo x > /tmp/inside && echo tmp-writable; "
            f"test -e /proc/{os.getpid()} || echo parent-invisible; echo pid=$$; "
            "ls /proc | grep -c '^[0-9]'; "
            "! touch /etc/steerable-pwned 2>/dev/null && echo root-read-only; "
            "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '",
        )
    finally:
        marker.unlink()
    out = result.stdout.text.splitlines()
    assert out[:3] == ["host-tmp-hidden", "tmp-writable", "parent-invisible"], result.stderr.text
    assert int(out[3].removeprefix("pid=")) < 10  # numbered inside its own namespace
    assert int(out[4]) < 10  # only the sandbox's own processes are in its /proc
    assert out[5] == "root-read-only"
    assert out[6:] == ["lo"]  # a network namespace with loopback only
    assert not Path("/tmp/inside").exists()


def test_bwrap_options_follow_the_policy(workspace: Path, tmp_path: Path):
    bwrap = real_backend("bwrap")
    extra = tmp_path / "data"
    extra.mkdir()
    (workspace / "inside").mkdir()
    policy = SandboxPolicy(
        writable_roots=(workspace,),
        readable_roots=(extra, workspace / "inside"),
        limits=ResourceLimits(memory_bytes=3 << 20),
    )
    off = bwrap.options(policy)
    assert off[:5] == ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--unshare-all"]
    # /dev read-only but for its own /dev/shm; /tmp a tmpfs of the sandbox's own; both sized at
    # the memory limit (bubblewrap 0.8 --size), so tmpfs cannot take more than that each
    sized = ["--perms", "1777", "--size", str(3 << 20), "--tmpfs"]
    assert off[5:20] == [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--remount-ro",
        "/dev",
        *sized,
        "/dev/shm",
        "--proc",
        "/proc",
    ]
    assert off[20:26] == [*sized, "/tmp"]
    assert str(tmp_path) not in off[:26]  # the host directory is not used any more
    binds = [tuple(off[i : i + 3]) for i, arg in enumerate(off) if arg in ("--bind", "--ro-bind")][1:]
    # what lives under /tmp and must stay visible is bound read-only into the tmpfs (the
    # interpreter when it lives there, readable roots); writable roots come last
    assert ("--ro-bind", str(extra), str(extra)) in binds
    if sys.prefix.startswith("/tmp/"):
        assert ("--ro-bind", sys.prefix, sys.prefix) in binds
    assert binds[-1] == ("--bind", str(workspace), str(workspace))
    assert not any(str(workspace / "inside") in bind for bind in binds)  # already writable
    assert off[-4:-2] == ["--chdir", str(workspace)] and off[-2] == "--seccomp" and "--share-net" not in off
    on = bwrap.options(SandboxPolicy(writable_roots=(workspace,), network=True))
    assert "--share-net" in on and on[-2] == "--seccomp"  # the set-id filter holds with the network on too
    unlimited = bwrap.options(
        SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits(memory_bytes=0))
    )
    assert unlimited[12:15] == ["--perms", "1777", "--tmpfs"] and "--size" not in unlimited


def test_bwrap_plan_is_started_without_the_launcher(workspace: Path, tmp_path: Path):
    plan = real_backend("bwrap").plan(
        ["true"], SandboxPolicy(writable_roots=(workspace,)), private_tmp=tmp_path
    )
    assert plan.direct and not plan.supervised and plan.launcher_options == ()
    assert plan.seccomp_fd_at is not None and plan.argv[plan.seccomp_fd_at - 1] == "--seccomp"
    assert plan.argv[-2:] == ("--", "true") and plan.env == {"TMPDIR": "/tmp", "TEMP": "/tmp", "TMP": "/tmp"}


# -- Landlock ---------------------------------------------------------------------------------------


async def test_landlock_has_no_private_tmp_but_a_private_tmpdir(policy):
    landlock = real_backend("landlock")
    result = await sh(
        landlock,
        policy,
        "! echo x > /tmp/steerable-pwned 2>/dev/null && echo tmp-read-only; "
        'case "$TMPDIR" in /tmp/steerable-sbx-*) echo private-tmpdir;; esac; '
        f"cat /proc/{os.getpid()}/environ >/dev/null 2>&1 || echo parent-environ-refused",
    )
    assert result.stdout.text.splitlines() == ["tmp-read-only", "private-tmpdir", "parent-environ-refused"]
    assert not Path("/tmp/steerable-pwned").exists()


async def test_landlock_socket_filter_refuses_every_socket_but_socketpair(policy, tmp_path: Path):
    landlock = real_backend("landlock")
    script = (
        "import socket\n"
        "for family, kind in ((socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_UNIX, socket.SOCK_STREAM),"
        " (socket.AF_INET6, socket.SOCK_STREAM)):\n"
        "    try:\n"
        "        socket.socket(family, kind)\n"
        "        print('opened')\n"
        "    except PermissionError:\n"
        "        print('refused')\n"
        "a, b = socket.socketpair(); a.send(b'x'); print(b.recv(1))\n"
    )
    result = await run_sandboxed([PY, "-c", script], policy, backend=landlock, timeout_s=20)
    assert result.stdout.text.splitlines() == ["refused", "refused", "refused", "b'x'"], result.stderr.text
    allowed = SandboxPolicy(writable_roots=policy.writable_roots, network=True)
    opened = await run_sandboxed([PY, "-c", script], allowed, backend=landlock, timeout_s=20)
    assert opened.stdout.text.splitlines()[:3] == ["opened", "opened", "opened"]


def test_landlock_plan_lists_its_rules(workspace: Path, tmp_path: Path):
    plan = LandlockBackend().plan(["true"], SandboxPolicy(writable_roots=(workspace,)), private_tmp=tmp_path)
    options = list(plan.launcher_options)
    assert options[:4] == ["--drop-caps", "--landlock", "--ls", "/"]  # SAFE-3: names listable, not read
    grants = [options[i + 1] for i, option in enumerate(options) if option == "--ro"]
    assert (
        "/" not in grants and "/dev" not in grants and {"/usr", "/etc", "/proc", "/dev/null"} <= set(grants)
    )
    assert not any(g.startswith(("/dev/pts", "/dev/tty")) for g in grants)
    at = options.index("--rw")
    assert ["--rw", str(workspace), "--rw", str(tmp_path)] == options[at : at + 4]
    assert "--no-tcp" in options and options[-2:] == ["--pid-ns", "--supervise"]
    root = ",chmod" if os.geteuid() == 0 else ""
    assert options[options.index("--seccomp-deny") + 1] == "net,ipc,setid" + root
    online = LandlockBackend().plan(
        ["true"], SandboxPolicy(writable_roots=(workspace,), network=True), private_tmp=tmp_path
    )
    assert "--no-tcp" not in online.launcher_options
    assert online.launcher_options[online.launcher_options.index("--seccomp-deny") + 1] == "ipc,setid" + root
    assert plan.supervised and plan.argv == ("true",) and plan.env["TMPDIR"] == str(tmp_path)


def test_handled_rights_grow_with_the_abi():
    assert handled_fs(1) == (1 << 13) - 1
    assert handled_fs(3) == (1 << 15) - 1
    assert handled_fs(5) == handled_fs(7) == (1 << 16) - 1


def test_seccomp_program_shape():
    # arch check (2), nr load, x32 check, then one jump per denied call, three per mode check, four returns
    assert len(seccomp_program("x86_64", deny_setid=False)) // 8 == 3 + 1 + 2 + 4
    assert (
        len(seccomp_program("x86_64", deny_network=False, deny_ipc=True, deny_setid=False)) // 8
        == 3 + 1 + 15 + 4
    )
    assert len(seccomp_program("x86_64")) // 8 == 3 + 1 + 2 + 1 + 9 * 3 + 4
    assert len(seccomp_program("aarch64", deny_setid=False)) // 8 == 3 + 2 + 4
    assert len(seccomp_program("aarch64")) // 8 == 3 + 2 + 1 + 5 * 3 + 4


def test_the_launcher_fails_closed_when_the_sandbox_cannot_be_set_up(tmp_path: Path):
    marker = tmp_path / "ran"
    run = subprocess.run(
        [
            PY,
            "-I",
            "-S",
            LAUNCHER,
            "--landlock",
            "--ro",
            "/",
            "--rw",
            str(tmp_path / "missing"),
            "--",
            "touch",
            str(marker),
        ],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert run.returncode == EXIT_SETUP
    assert run.stderr.startswith("steerable-sandbox: setup failed, not running the command: cannot open")
    assert not marker.exists()
    bad = subprocess.run(
        [PY, "-I", "-S", LAUNCHER, "--bogus", "--", "true"], capture_output=True, text=True, check=False
    )
    assert bad.returncode == EXIT_SETUP and "bad launcher option '--bogus'" in bad.stderr


async def test_limits_bound_processes_and_memory(backend, workspace: Path):
    policy = SandboxPolicy(
        writable_roots=(workspace,), limits=ResourceLimits(max_processes=32, memory_bytes=256 * 2**20)
    )
    forks = (
        "import os, time\n"
        "made = refused = 0\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        refused += 1\n"
        "        continue\n"
        "    if pid == 0:\n"
        "        time.sleep(20)\n"
        "        os._exit(0)\n"
        "    made += 1\n"
        "print(made, refused)\n"
    )
    result = await run_sandboxed([PY, "-c", forks], policy, backend=backend, timeout_s=20)
    made, refused = map(int, result.stdout.text.split())
    assert made <= 32 and refused >= 68 and made + refused == 100
    memory = await run_sandboxed([PY, "-c", "bytearray(1 << 30)"], policy, backend=backend, timeout_s=20)
    assert memory.exit_code == 1 and memory.stderr.text.rstrip().endswith("MemoryError")


@pytest.mark.parametrize("network", [False, True])
def test_a_bubblewrap_plan_runs_through_the_launcher_too(workspace: Path, tmp_path: Path, network: bool):
    """``launcher_argv`` runs a direct plan as one command line: the filter is bubblewrap's to install."""
    from steerable_agent_runtime.sandbox import child_environment
    from steerable_agent_runtime.sandbox._pinning import launcher_argv

    policy = SandboxPolicy(writable_roots=(workspace,), network=network)
    script = (
        "import os, socket\n"
        "try:\n    socket.socket(); print('socket allowed')\n"
        "except OSError as exc:\n    print('socket', exc.errno == 1 and 'EPERM')\n"
        "open('made', 'w').close()\n"
        "try:\n    os.chmod('made', 0o4755); print('setuid allowed')\n"
        "except OSError:\n    print('setuid refused')\n"
    )
    plan = real_backend("bwrap").plan([PY, "-c", script], policy, private_tmp=tmp_path)
    run = subprocess.run(
        launcher_argv(plan, policy),
        capture_output=True,
        text=True,
        cwd=workspace,
        env={**child_environment(), **plan.env},
        timeout=30,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["socket allowed" if network else "socket EPERM", "setuid refused"]
