"""REC-4: every surface ends cleanly on SIGTERM, SIGHUP and SIGINT; SAFE-9: a frame too large for memory.

Each test starts ``python -m steerable_sidecar ...`` as a real process, gets a real ``bash`` call
running in its sandbox (``sleep 60``, after a marker file), sends a real signal with ``os.kill``
and checks what the surface promises (docs/sidecar-protocol.md, docs/mcp.md, docs/acp.md,
docs/headless.md: "Shutdown and signals"): the call in flight is answered (``sidecar``, ``mcp``,
``acp``: a ``-32603`` error, ``data.code == "interrupted"``; ``session``: an interrupted result
line) or recorded as interrupted (``run``, the chats of ``sidecar`` and ``acp``), the durable
record has its end entry, no run cgroup of the process is left, stderr holds no traceback, and the
exit status is ``128 + n``. The SAFE-9 tests put the sidecar and the MCP server under an address
space limit (``prlimit``) and send one frame larger than it, then a normal one.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_frames import MCP_INITIALIZE
from steerable_agent_runtime import DurableRecord
from steerable_agent_runtime.sandbox._cgroup import cgroup_parents
from steerable_sidecar.rpc._frames import FrameError, Unread, decode_frame
from steerable_sidecar.rpc._shallow_json import CUT, top_level_scalars
from steerable_sidecar.shared._signals import SHUTDOWN_GRACE_S
from waiting import wait_until

SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]
COMMAND = "touch started && sleep 60"
BASH = {"name": "bash", "arguments": {"command": COMMAND}}
WAIT_S = 30.0


class Child:
    """``python -m steerable_sidecar ARGS`` with its stdout lines and stderr collected by threads."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "steerable_sidecar", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.stderr = bytearray()
        self._threads = [
            threading.Thread(target=self._pump, daemon=True),
            threading.Thread(target=self._drain_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        """Kill the process if it still runs; close its pipes once the readers are done."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for thread in self._threads:
            thread.join(timeout=WAIT_S)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:  # stdin: a broken pipe on the last flush
                    pass

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def message(self, wanted: Callable[[dict[str, Any]], bool], timeout_s: float = WAIT_S) -> dict[str, Any]:
        """The next stdout message ``wanted`` accepts (every one read is kept in :attr:`seen`)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no such message within {timeout_s} s; seen {self.seen}") from None
            assert line, f"stdout ended; seen {self.seen}; stderr {self.stderr.decode(errors='replace')}"
            message: dict[str, Any] = json.loads(line)
            self.seen.append(message)
            if wanted(message):
                return message

    def end_with(self, signum: int) -> int:
        """Send ``signum`` (stdin stays open: no end of input helps) and wait for the exit."""
        os.kill(self.proc.pid, signum)
        try:
            status = self.proc.wait(timeout=WAIT_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        while True:  # the rest of stdout
            line = self.lines.get(timeout=WAIT_S)
            if not line:
                break
            self.seen.append(json.loads(line))
        return status

    def answer(self, request_id: Any) -> dict[str, Any]:
        return next(m for m in self.seen if m.get("id") == request_id and "method" not in m)


def run_cgroups(pid: int) -> list[Path]:
    """The run cgroups process ``pid`` made (named ``steerable-<pid>-<n>``), in every parent here."""
    return [path for parent in cgroup_parents() for path in parent.path.glob(f"steerable-{pid}-*")]


def started(workspace: Path, count: int = 1) -> None:
    """Wait until ``count`` bash calls run their ``sleep`` (each touched its marker first)."""
    markers = [workspace / "started"] if count == 1 else [workspace / f"started{n}" for n in range(count)]
    wait_until(
        lambda: all(marker.exists() for marker in markers), what="the bash call started", timeout_s=WAIT_S
    )


def clean_end(child: Child, signum: int, *, running_cgroups: list[Path]) -> None:
    """Exit 128 + n, no traceback, and no run cgroup left (REC-4)."""
    status = child.end_with(signum)
    stderr = child.stderr.decode(errors="replace")
    assert status == 128 + signum, stderr
    assert "Traceback" not in stderr, stderr
    if not cgroup_parents():
        pytest.skip("no writable cgroup controller here (not root, or cgroups not mounted): the call was")
    assert running_cgroups, "the bash call ran in no cgroup of its own"
    assert run_cgroups(child.proc.pid) == []
    assert not any(path.exists() for path in running_cgroups)


def interrupted_error(answer: dict[str, Any], signum: int) -> None:
    """The JSON-RPC answer to a call a signal stopped: ``-32603``, ``data.code == "interrupted"``."""
    error = answer["error"]
    name = signal.Signals(signum).name
    assert error["code"] == -32603
    assert error["message"].startswith(f"interrupted: steerable is shutting down ({name})")
    assert error["data"] == {"type": "Interrupted", "code": "interrupted", "signal": name}


def record_ends_interrupted(state: Path, session_id: str, call_id: str, signum: int) -> None:
    """The record answers the call as interrupted, and its last entry is the run's end."""
    record = DurableRecord.for_session(state / "sessions", session_id)
    entries = record.entries()
    assert entries[-1]["type"] == "run", entries[-1]
    name = signal.Signals(signum).name
    assert entries[-1]["run"]["outcome"] == "cancelled"
    assert entries[-1]["run"]["error"] == f"steerable is shutting down ({name})"
    results = {m["tool_call_id"]: json.loads(m["content"]) for m in record.messages() if m["role"] == "tool"}
    assert results[call_id]["data"]["code"] == "interrupted", results
    assert results[call_id]["needsFollowup"] is True
    assert f"shutting down ({name})" in results[call_id]["error"]


@pytest.fixture
def spawn() -> Iterator[Callable[[list[str], Path, dict[str, str]], Child]]:
    """Start a :class:`Child`; every one started is closed after the test."""
    children: list[Child] = []

    def start(args: list[str], cwd: Path, environ: dict[str, str]) -> Child:
        children.append(Child(args, cwd, environ))
        return children[-1]

    yield start
    for child in children:
        child.close()


Spawn = Callable[[list[str], Path, dict[str, str]], Child]


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


@pytest.fixture
def env(
    tmp_path: Path, state: Path, child_env: Callable[..., dict[str, str]]
) -> Callable[..., dict[str, str]]:
    """The child's environment: its own state directory, and a scripted model making ``calls``."""

    def make(*calls: dict[str, Any]) -> dict[str, str]:
        extra = {"STEERABLE_STATE_DIR": str(state)}
        if calls:
            script = tmp_path / "turns.json"
            script.write_text(json.dumps([{"tool_calls": list(calls)}, "done"]), encoding="utf-8")
            extra |= {"STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)}
        return child_env(**extra)

    return make


def _bash(call_id: str, marker: str) -> dict[str, Any]:
    return {"id": call_id, "name": "bash", "arguments": {"command": f"touch {marker} && sleep 60"}}


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_the_sidecar_answers_its_calls_and_records_its_chat_on_a_signal_rec_4(
    signum: int, workspace: Path, state: Path, env: Callable[..., dict[str, str]], spawn: Spawn
) -> None:
    # REC-4: a tool.invoke and a chat, each with a bash call running; both answered as interrupted
    child = spawn(["sidecar", "--no-plugins"], workspace, env(_bash("c1", "started1")))
    child.message(lambda m: m.get("method") == "lifecycle.ready")
    child.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tool.invoke",
            "params": {
                "name": "bash",
                "arguments": {"command": "touch started0 && sleep 60"},
                "consentGranted": True,
            },
        }
    )
    chat = {"message": "go", "sessionId": "s1", "autoApprove": True}
    child.send({"jsonrpc": "2.0", "id": 8, "method": "agent.chat.stream", "params": chat})
    started(workspace, 2)
    cgroups = run_cgroups(child.proc.pid)
    clean_end(child, signum, running_cgroups=cgroups)
    interrupted_error(child.answer(7), signum)
    interrupted_error(child.answer(8), signum)
    record_ends_interrupted(state, "s1", "c1", signum)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_the_mcp_server_answers_the_call_in_flight_on_a_signal_rec_4(
    signum: int, workspace: Path, env: Callable[..., dict[str, str]], spawn: Spawn
) -> None:
    # REC-4: tools/call answered -32603 interrupted (SIGINT: no KeyboardInterrupt traceback)
    child = spawn(["mcp", "--no-plugins", "--workspace", str(workspace)], workspace, env())
    child.send(MCP_INITIALIZE)
    child.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    child.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": BASH})
    started(workspace)
    cgroups = run_cgroups(child.proc.pid)
    clean_end(child, signum, running_cgroups=cgroups)
    interrupted_error(child.answer(7), signum)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_the_acp_agent_answers_the_prompt_and_records_its_turn_on_a_signal_rec_4(
    signum: int, workspace: Path, state: Path, env: Callable[..., dict[str, str]], spawn: Spawn
) -> None:
    # REC-4: session/prompt answered -32603 interrupted, after its turn recorded the call and its end
    child = spawn(["acp", "--no-plugins"], workspace, env({"id": "c1", **BASH}))
    child.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    child.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(workspace), "mcpServers": []},
        }
    )
    session_id = child.message(lambda m: m.get("id") == 2)["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    child.send({"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": prompt})
    asked = child.message(lambda m: m.get("method") == "session/request_permission")
    allow = next(o for o in asked["params"]["options"] if o["kind"] == "allow_once")
    outcome = {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}
    child.send({"jsonrpc": "2.0", "id": asked["id"], "result": outcome})
    started(workspace)
    cgroups = run_cgroups(child.proc.pid)
    clean_end(child, signum, running_cgroups=cgroups)
    interrupted_error(child.answer(7), signum)
    record_ends_interrupted(state, session_id, "c1", signum)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_the_line_session_answers_the_call_in_flight_on_a_signal_rec_4(
    signum: int, workspace: Path, env: Callable[..., dict[str, str]], spawn: Spawn
) -> None:
    # REC-4: the call's result line says interrupted; stdin stays open (Ctrl-C needs no Enter)
    child = spawn(["session", "--no-plugins"], workspace, env())
    child.send({"id": "c1", **BASH})
    started(workspace)
    cgroups = run_cgroups(child.proc.pid)
    clean_end(child, signum, running_cgroups=cgroups)
    (line,) = child.seen
    assert line["id"] == "c1"
    result = line["result"]
    assert (result["success"], result["needsFollowup"]) == (False, True)
    assert result["data"] == {"code": "interrupted", "signal": signal.Signals(signum).name}


def test_ctrl_c_ends_an_idle_line_session_at_once_rec_4(
    workspace: Path, env: Callable[..., dict[str, str]], spawn: Spawn
) -> None:
    # REC-4: waiting for its next line (a thread blocked on stdin), the session ends on Ctrl-C
    # without that line, 130, no traceback
    child = spawn(["session", "--no-plugins"], workspace, env())
    child.send({"id": "c1", "name": "list_dir", "arguments": {}})
    assert child.message(lambda m: m.get("id") == "c1")["result"]["success"] is True
    started_at = time.monotonic()
    status = child.end_with(signal.SIGINT)
    assert status == 130
    assert time.monotonic() - started_at < SHUTDOWN_GRACE_S / 2  # at once, not after the 5 s grace
    assert "Traceback" not in child.stderr.decode(errors="replace")


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_headless_run_records_the_call_and_its_end_on_a_signal_rec_4(
    signum: int, workspace: Path, state: Path, env: Callable[..., dict[str, str]], spawn: Spawn
) -> None:
    # REC-4: the call is recorded as interrupted, the record ends with the run, exit 128 + n
    args = ["run", "--no-plugins", "--instruction", "go", "--session-id", "r1", "--quiet"]
    child = spawn(args, workspace, env({"id": "c1", **BASH}))
    started(workspace)
    cgroups = run_cgroups(child.proc.pid)
    clean_end(child, signum, running_cgroups=cgroups)
    (summary,) = child.seen
    assert (summary["outcome"], summary["exitCode"]) == ("cancelled", 128 + signum)
    record_ends_interrupted(state, "r1", "c1", signum)


@pytest.mark.parametrize("command", ["sidecar", "session", "call"])
def test_a_normal_exit_removes_the_run_cgroups_rec_4(
    command: str, workspace: Path, env: Callable[..., dict[str, str]]
) -> None:
    # REC-4: a bash call ran in cgroups of its own; the process ends at end of input (or after its
    # one call) and leaves none behind
    quick = {"name": "bash", "arguments": {"command": "echo hi"}}
    if command == "call":
        args, stdin = ["call", "bash", json.dumps(quick["arguments"])], ""
    elif command == "sidecar":
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tool.invoke",
            "params": {**quick, "consentGranted": True},
        }
        args, stdin = ["sidecar"], json.dumps(request) + "\n"
    else:
        args, stdin = ["session"], json.dumps({"id": "c1", **quick}) + "\n"
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "steerable_sidecar", *args, "--no-plugins"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=workspace,
        env=env(),
    )
    out, err = proc.communicate(stdin.encode(), timeout=WAIT_S)
    assert proc.returncode == 0, err
    assert b"hi\\n" in out
    if not cgroup_parents():
        pytest.skip("no writable cgroup controller here (not root, or cgroups not mounted)")
    assert run_cgroups(proc.pid) == []


def _threads(pid: int) -> int:
    """How many threads process ``pid`` has now."""
    return int(Path(f"/proc/{pid}/status").read_text().split("Threads:")[1].split()[0])


def _limited(pid: int, headroom: int) -> None:
    """Cap ``pid``'s address space at what it uses now plus ``headroom`` bytes (``prlimit --as``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    size = int(status.split("VmSize:")[1].split()[0]) * 1024
    resource.prlimit(pid, resource.RLIMIT_AS, (size + headroom, size + headroom))


HEADROOM = 48 * 2**20
"""What the limited process may still map: less than the frame."""
FRAME_BYTES = 60_000_000
"""The huge frame's size: under the 64 MiB frame limit, over the headroom."""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prlimit on another process is Linux's")
@pytest.mark.parametrize("surface", ["sidecar", "mcp"])
def test_a_frame_too_large_for_memory_is_answered_and_serving_goes_on_safe_9(
    surface: str, workspace: Path, env: Callable[..., dict[str, str]], spawn: Spawn
) -> None:
    # SAFE-9: out of memory reading one frame is an answer (-32600 under the frame's id), not an exit
    if surface == "mcp":
        child = spawn(["mcp", "--no-plugins", "--workspace", str(workspace)], workspace, env())
        child.send(MCP_INITIALIZE)
        child.message(lambda m: m.get("id") == 1)
        call, ping = "tools/call", "ping"
    else:
        child = spawn(["sidecar", "--no-plugins"], workspace, env())
        child.message(lambda m: m.get("method") == "lifecycle.ready")
        call, ping = "tool.invoke", "system.ping"
    # the start-up work is over (the MCP server's last start-up thread says what is served on stderr,
    # then ends) and one thread is left: the limit is measured from here
    wait_until(
        lambda: (surface == "sidecar" or b": serving " in child.stderr) and _threads(child.proc.pid) == 1,
        what="the start-up threads ended",
    )
    _limited(child.proc.pid, HEADROOM)
    assert child.proc.stdin is not None
    head = b'{"jsonrpc":"2.0","id":"big-1","method":"' + call.encode() + b'","params":{"name":"write_file",'
    child.proc.stdin.write(head + b'"arguments":{"path":"a.txt","content":"' + b"x" * FRAME_BYTES + b'"}}}\n')
    child.send({"jsonrpc": "2.0", "id": 2, "method": ping})
    refused = child.message(lambda m: m.get("id") == "big-1")
    assert refused["error"]["code"] == -32600
    assert "too large to read in memory" in refused["error"]["message"]
    assert "result" in child.message(lambda m: m.get("id") == 2)
    assert child.proc.poll() is None  # still serving
    assert not (workspace / "a.txt").exists()
    assert child.proc.stdin is not None
    child.proc.stdin.close()
    assert child.proc.wait(timeout=WAIT_S) == 0
    assert "Traceback" not in child.stderr.decode(errors="replace")


@pytest.mark.parametrize(
    ("head", "members"),
    [
        ('{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"xx', {"id": 7, "method": "x", "params": CUT}),
        ('{"jsonrpc":"2.0","id":12', {"id": CUT}),  # a number cut short is never taken (120? 1234?)
        ('{"jsonrpc":"2.0","id":12 ', {"id": CUT}),
        ('{"id":"a","result":"xxx', {"id": "a", "result": CUT}),
        ('{"params":{"id":3,"method":"m"', {"params": CUT}),  # an id inside params never counts
        ('{"id":7,"id":8,', {"id": 8}),
        ('[{"id":7}', None),
    ],
)
def test_a_prefix_scan_keeps_only_the_members_read_whole_safe_9(
    head: str, members: dict[str, Any] | None
) -> None:
    # SAFE-9: the head of a frame too large for memory gives the ids it holds whole, and no other
    assert top_level_scalars(head, ("id", "method", "result", "params"), prefix=True) == members


def test_a_frame_too_large_for_memory_is_answered_under_the_id_its_head_holds_safe_9() -> None:
    # SAFE-9: a request is answered -32600 under its id; a response fails the request it answers
    request = decode_frame(
        Unread(b'{"jsonrpc":"2.0","id":"r1","method":"tool.invoke","params":{"x":"', 10**9), 64
    )
    assert isinstance(request, FrameError) and request.answers is None
    assert request.response["id"] == "r1"
    assert request.response["error"]["code"] == -32600
    assert "too large to read in memory (at least 1000000000 bytes)" in request.response["error"]["message"]
    response = decode_frame(Unread(b'{"jsonrpc":"2.0","id":4,"result":{"content":"', 10**9), 64)
    assert isinstance(response, FrameError) and response.response["id"] is None
    assert response.answers == 4
    assert response.lost[0] == -32600
    unknown = decode_frame(Unread(b'{"jsonrpc":"2.0","method":"tool.invoke","params":{"id":9,', 10**9), 64)
    assert isinstance(unknown, FrameError) and unknown.response["id"] is None and unknown.answers is None
