"""The attack table for ``bash`` (RUN-9, RUN-7): a sidecar holding secrets, commands trying to escape.

A stand-in sidecar (``attack_host.py``) is started with canary secrets in its exec environment,
like a real one holding API keys, and runs every attack below through the real ``bash`` tool
under each real Linux backend. Every attack must fail inside the child: no canary in any
output, no file outside the writable roots, nothing reaching the listeners this test opens, the
process and memory bombs bounded, while the stand-in keeps serving and this process keeps
spawning processes throughout.

| attack | expected |
| --- | --- |
| read ``/proc/self/environ``, ``$PPID``'s, the sidecar's, every ``/proc/*/environ``, ``env`` | no canary (RUN-7) |
| write outside the workspace, to ``$HOME``, to the host's ``/tmp``, through a symlink | nothing lands |
| TCP connect (bash ``/dev/tcp`` and Python), UDP send, connect to a Unix socket in the workspace | no connection, no datagram |
| signal or ptrace the sidecar | refused; the sidecar lives |
| fork bomb | bounded by the process limit (``fork: Resource temporarily unavailable``) |
| memory bomb | bounded by the memory limit (``MemoryError``) |
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from sbx_helpers import LINUX_BACKENDS, real_backend

HERE = Path(__file__).resolve().parent
SRC = str(HERE.parents[1] / "src")
CANARIES = {
    "STEERABLE_API_KEY": "canary-XYZ",
    "OPENAI_API_KEY": "canary-openai",
    "FOO_TOKEN": "canary-foo-token",
    "GITHUB_TOKEN": "canary-gh",
}


def attacks(outside: Path, token: str, tcp_port: int, udp_port: int, unix_path: Path) -> dict[str, str]:
    py = sys.executable
    return {
        # secrets: the allowlisted environment holds none, and no other process's is readable
        "self_environ": "cat /proc/self/environ | tr '\\0' '\\n'",
        "parent_environ": "cat /proc/$PPID/environ | tr '\\0' '\\n'",
        "host_environ": "cat /proc/{host_pid}/environ",
        "every_environ": "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; true",
        "env": "env; set",
        "python_environ": f"{py} -c 'import os; print(os.environ); print(open(\"/proc/%d/environ\" % os.getppid()).read())'",
        # the filesystem outside the writable roots
        "write_outside": f"echo pwned > {outside}/pwned-{token}",
        "write_home": f"echo pwned > ~/steerable-pwned-{token}",
        "write_host_tmp": f"echo pwned > /tmp/steerable-pwned-{token}",
        "symlink_out": f"ln -s {outside} door-{token} && echo pwned > door-{token}/via-link-{token}",
        # the network
        "tcp_bash": f"exec 3<>/dev/tcp/127.0.0.1/{tcp_port} && echo connected",
        "tcp_python": f'{py} -c \'import socket; socket.create_connection(("127.0.0.1", {tcp_port}), timeout=2); print("connected")\'',
        "udp_python": f'{py} -c \'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"leak", ("127.0.0.1", {udp_port})); print("sent")\'',
        "unix_socket": f'{py} -c \'import socket; s = socket.socket(socket.AF_UNIX); s.connect("{unix_path}"); print("connected")\'',
        # the sidecar process itself
        "signal_host": "kill -TERM {host_pid} && echo signalled",
        "ptrace_host": f'{py} -c \'import ctypes; r = ctypes.CDLL(None).ptrace(16, {{host_pid}}, 0, 0); print("attached" if r == 0 else "refused")\'',
        # resources
        "fork_bomb": ":(){ :|:& };:; sleep 1; echo bomb-over",
        "memory_bomb": f"{py} -c 'x = bytearray(4 << 30); print(\"allocated\")'",
    }


@pytest.mark.parametrize("backend_name", LINUX_BACKENDS)
def test_attacks_fail_inside_the_child_while_the_sidecar_serves_run_9_run_7(
    backend_name, workspace, outside, tmp_path
):
    real_backend(backend_name)  # fails naming the fix when the backend cannot run here
    token = uuid.uuid4().hex[:12]
    tcp = socket.create_server(("127.0.0.1", 0))
    tcp.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    unix_path = workspace / "agent.sock"  # visible and connectable by path, like a docker.sock would be
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(unix_path))
    unix.listen()
    unix.setblocking(False)
    table = attacks(outside, token, tcp.getsockname()[1], udp.getsockname()[1], unix_path)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "PYTHONPATH": SRC,
        "STEERABLE_SANDBOX": backend_name,
        "STEERABLE_SANDBOX_MAX_PROCESSES": "64",
        "STEERABLE_SANDBOX_MEMORY_BYTES": str(1 << 30),
        **CANARIES,
    }
    host = subprocess.Popen(
        [sys.executable, str(HERE / "attack_host.py"), str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    talked: list[tuple[bytes, bytes]] = []
    talker = threading.Thread(
        target=lambda: talked.append(host.communicate(json.dumps(table).encode(), timeout=90))
    )
    talker.start()
    spawned = 0
    try:
        while talker.is_alive():  # this process keeps working while the attacks run
            assert subprocess.run(["true"], check=False, timeout=10).returncode == 0
            spawned += 1
        talker.join()
        out, err = talked[0]
        for sock in (tcp, unix):
            with pytest.raises(BlockingIOError):
                sock.accept()  # nobody connected
        with pytest.raises(BlockingIOError):
            udp.recv(16)  # nothing arrived
    finally:
        if host.poll() is None:
            host.kill()
        for sock in (tcp, udp, unix):
            sock.close()
    assert host.returncode == 0, err.decode()
    assert spawned > 0
    text = out.decode()
    results = json.loads(text)

    # RUN-7: no canary anywhere, whatever the command read
    assert "canary" not in text
    assert "STEERABLE_API_KEY" not in results["env"]["data"]["stdout"]
    for name in ("self_environ", "parent_environ", "host_environ", "every_environ", "env", "python_environ"):
        assert results[name]["data"]["_sandbox"]["backend"] == backend_name, name
    for name in ("self_environ", "env"):  # it did read an environment: the allowlisted one
        assert "PYTHONDONTWRITEBYTECODE=1" in results[name]["data"]["stdout"], name
    assert results["host_environ"]["success"] is False  # bwrap: not in its PID namespace; Landlock: refused

    # RUN-9: nothing written outside the writable roots
    for name in ("write_outside", "write_home", "symlink_out"):
        assert results[name]["success"] is False and results[name]["needsFollowup"] is True, name
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not (Path.home() / f"steerable-pwned-{token}").exists()
    assert not Path(f"/tmp/steerable-pwned-{token}").exists()  # bwrap: written to its private /tmp
    assert results["write_host_tmp"]["success"] is (backend_name == "bwrap"), results["write_host_tmp"]

    # RUN-9: no network: nothing connected, nothing received
    for name in ("tcp_bash", "tcp_python", "udp_python", "unix_socket"):
        assert results[name]["success"] is False, (name, results[name])
        assert (
            "connected" not in results[name]["data"]["stdout"]
            and "sent" not in results[name]["data"]["stdout"]
        )

    # the sidecar cannot be signalled or traced, and it kept serving
    assert results["signal_host"]["success"] is False, results["signal_host"]
    assert results["ptrace_host"]["data"]["stdout"] == "refused\n", results["ptrace_host"]
    assert results["alive"]["success"] is True, results["alive"]
    assert results["alive"]["data"]["stdout"] == "alive\n"

    # bombs are bounded inside the child
    bomb = results["fork_bomb"]["data"]
    assert "Resource temporarily unavailable" in bomb["stderr"], bomb
    memory = results["memory_bomb"]
    assert memory["success"] is False and "MemoryError" in memory["data"]["stderr"], memory
    assert "allocated" not in memory["data"]["stdout"]
