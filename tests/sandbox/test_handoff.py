"""``bash`` in a terminal someone else starts (``CallContext.terminal``: an editor's, ``_handoff.py``).

The terminal here is the careless kind: it joins the words it gets into one ``sh -c`` line,
unquoted, and runs it in its own environment, which holds a secret. Under both real backends the
sandbox holds all the same (writes outside the workspace, the network, the editor's environment,
protected paths: FILE-15, deny-read: SAFE-3), the result is the runner's, a deadline or a killed
terminal stops everything, and a terminal that never starts the command makes ``bash`` run it
itself, once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_runner import sleeper

from processes import running
from steerable_agent_runtime import ToolCall, ToolRouter
from steerable_agent_runtime.context import CallContext
from steerable_agent_runtime.sandbox import SandboxBackend, bash_tool
from waiting import eventually

SECRET = "terminal-env-secret-0815"


class Terminal:
    """A ``TerminalHost`` that runs the words as ``sh -c "<words joined>"`` (or never runs them)."""

    def __init__(self, *, start: bool = True, kill_when: Callable[[], object] | None = None) -> None:
        self.start = start
        self.kill_when = kill_when
        self.lines: list[str] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self.closed: list[str] = []
        self.killer: asyncio.Task[None] | None = None

    async def open(self, command: str, args: Any, *, cwd: str) -> str:
        line = " ".join([command, *args])
        self.lines.append(line)
        if self.start:
            env = {**os.environ, "EDITOR_SECRET": SECRET}
            process = subprocess.Popen(["/bin/sh", "-c", line], cwd=cwd, env=env, start_new_session=True)
            self.processes.append(process)
            if self.kill_when is not None:  # the editor kills its terminal's process group meanwhile
                self.killer = asyncio.ensure_future(self._kill(process, self.kill_when))
        return f"t{len(self.lines)}"

    @staticmethod
    async def _kill(process: subprocess.Popen[bytes], when: Callable[[], object]) -> None:
        await eventually(when, what="the moment the terminal is killed")
        os.killpg(process.pid, signal.SIGKILL)

    async def close(self, terminal_id: str, *, ran: bool) -> None:
        self.closed.append(terminal_id)
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            await asyncio.to_thread(process.wait)


async def _bash(workspace: Path, backend: SandboxBackend, terminal: Terminal, command: str, **arguments: Any):
    router = ToolRouter()
    router.register(bash_tool(workspace, backend=backend))
    call = ToolCall(id="h1", name="bash", arguments={"command": command, **arguments})
    result = await router.dispatch(call, CallContext(call, terminal=terminal))
    assert result.data is not None
    return result


async def test_the_sandbox_holds_and_the_result_is_the_runners(workspace: Path, outside: Path, backend):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        terminal = Terminal()
        command = (
            f"echo out; echo err >&2; echo x > {outside}/new.txt || echo no-write; "
            f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null || echo no-net; "
            "env | grep -c -e EDITOR_SECRET -e " + SECRET + "; echo inside > inside.txt"
        )
        result = await _bash(workspace, backend, terminal, command)
    data = result.data
    assert result.success and data is not None
    assert data["stdout"] == "out\nno-write\nno-net\n0\n" and "err\n" in data["stderr"]
    assert (data["stdoutBytes"], data["exitCode"], data["timedOut"]) == (
        len("out\nno-write\nno-net\n0\n"),
        0,
        False,
    )
    assert not (outside / "new.txt").exists() and (workspace / "inside.txt").read_text() == "inside\n"
    (line,) = terminal.lines
    assert "echo" not in line and SECRET not in line  # only the trampoline's plain words
    assert terminal.closed == ["t1"]


async def test_protected_paths_stay_read_only(workspace: Path, backend):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    config = (workspace / ".git" / "config").read_bytes()
    result = await _bash(
        workspace, backend, Terminal(), "echo '[core] fsmonitor = evil' >> .git/config; echo done"
    )
    assert (workspace / ".git" / "config").read_bytes() == config  # FILE-15: refused or put back
    assert result.data is not None and "done" in result.data["stdout"]


async def test_a_deadline_stops_the_command_and_what_it_started(workspace: Path, backend):
    marker, sleep = sleeper()  # its own: another test run on this machine has sleeps of its own
    result = await _bash(workspace, backend, Terminal(), f"{sleep} & {sleep}; echo never", timeout_ms=1200)
    assert result.data is not None and result.data["timedOut"] is True and result.data["code"] == "timeout"
    assert not running(marker)


async def test_a_terminal_that_never_starts_it_lets_bash_run_it_once(workspace: Path, backend, monkeypatch):
    monkeypatch.setattr("steerable_agent_runtime.sandbox._handoff.START_TIMEOUT_S", 0.3)
    terminal = Terminal(start=False)
    result = await _bash(workspace, backend, terminal, "echo ran >> count.txt; echo ok")
    assert result.success and result.data is not None and result.data["stdout"] == "ok\n"
    assert (workspace / "count.txt").read_text() == "ran\n"  # here, once
    late = subprocess.run(["/bin/sh", "-c", terminal.lines[0]], capture_output=True, check=False)
    assert late.returncode == 125 and b"withdrawn" in late.stderr  # the plan is gone (and so is its folder)
    assert (workspace / "count.txt").read_text() == "ran\n"


async def test_a_terminal_killed_under_the_command_takes_it_down(workspace: Path, backend):
    marker, sleep = sleeper()
    terminal = Terminal(kill_when=lambda: running(marker))  # once the command's sleeps run
    result = await _bash(workspace, backend, terminal, f"echo up; {sleep} & {sleep}")
    assert result.data is not None and result.data["exitCode"] == 137, result.data
    assert "the terminal's process was killed before the command ended" in result.data["stderr"]
    # the launcher's parent died: the sandbox goes with it
    await eventually(lambda: not running(marker), what="the sandboxed sleeps gone")


@pytest.fixture(autouse=True)
def _no_leftover_run_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every run folder is removed. Made in a temporary directory of the test's own: another test
    run on this machine makes and removes its own in ``/tmp`` meanwhile."""
    own = tmp_path / "tmpdir"
    own.mkdir()
    monkeypatch.setenv("TMPDIR", str(own))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    yield
    assert not list(own.glob("steerable-term-*"))


async def test_plans_are_not_handed_over_from_a_temporary_directory_the_sandbox_can_write(
    workspace: Path, backend: SandboxBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace holding the temporary directory: a command running meanwhile could rewrite the
    plan before the terminal starts it, so the terminal gets nothing and bash runs it itself."""
    inside = workspace / "tmp"
    inside.mkdir()
    monkeypatch.setenv("TMPDIR", str(inside))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    terminal = Terminal()
    result = await _bash(workspace, backend, terminal, "echo here")
    assert result.success and result.data is not None and result.data["stdout"] == "here\n"
    assert terminal.lines == []


def test_the_relay_runs_no_plan_from_a_folder_others_could_have_made(tmp_path: Path) -> None:
    """A run folder that is not private (0700, this user's, not a symlink) may hold anyone's plan."""
    import json
    import sys

    from steerable_agent_runtime.sandbox._pinning import trampoline_code

    marker = tmp_path / "ran"
    plan = {"argv": ["/bin/touch", str(marker)], "env": {}, "cwd": str(tmp_path), "cap": 1024}
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    (shared / "plan.json").write_text(json.dumps(plan))
    linked = tmp_path / "linked"
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "plan.json").write_text(json.dumps(plan))
    linked.symlink_to(private)
    for folder in (shared, linked):
        done = subprocess.run(
            [sys.executable, "-I", "-S", trampoline_code(), str(folder)], capture_output=True, timeout=30
        )
        assert done.returncode == 125 and b"withdrawn" in done.stderr
    assert not marker.exists()
