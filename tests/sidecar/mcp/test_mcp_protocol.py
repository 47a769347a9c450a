"""Issue 15: the MCP wire of ``steerable mcp``, frame by frame, against a real process.

The official client (tests/sidecar/mcp/test_mcp_e2e.py) hides the frames; here they are written and
read raw, so the tests see exactly what a host sees: the handshake answered while the tools still
boot, log notifications at the level the host set (with secrets redacted), progress heartbeats,
cancellation, -32602 for a name that is no tool, and the refusal to serve ``/`` or the home
directory without ``--workspace``. A few in-process tests cover what a process cannot be made to
do on cue (the tool list changing after start).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from deep_arguments import (
    GATED_BASH,
    PARSE_ERROR_TOO_DEEP,
    WALK_PLUGIN,
    arguments_text,
    deep_request,
    parse_error_too_deep,
    too_deep,
)

from mcp_frames import MCP_HELLO
from processes import running
from steerable_agent_runtime import ToolRouter, tool
from steerable_cli import run_steerable
from steerable_sidecar.mcp._server import LATEST_PROTOCOL_VERSION, McpServer, mode_annotations, tool_title
from waiting import eventually, grace

WAIT_S = 20
INIT = MCP_HELLO


class Wire:
    """One ``steerable mcp`` process: write frames to its stdin, read frames from its stdout."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.notifications: list[dict[str, Any]] = []
        self.lines: list[bytes] = []  # every frame as it came, for checks stricter than json.loads

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        await self.proc.stdin.drain()

    async def frame(self, timeout: float = WAIT_S) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        assert line, "the server closed its stdout"
        self.lines.append(line)
        message: dict[str, Any] = json.loads(line)
        return message

    async def answer(self, request_id: int, timeout: float = WAIT_S) -> dict[str, Any]:
        """The response to ``request_id``; notifications read meanwhile go to ``notifications``."""
        async with asyncio.timeout(timeout):
            while True:
                message = await self.frame()
                if "method" in message:
                    self.notifications.append(message)
                elif message.get("id") == request_id:
                    return message
                else:
                    raise AssertionError(f"an answer to another request: {message}")

    async def call(
        self, request_id: int, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        await self.send({"id": request_id, "method": method, **({"params": params} if params else {})})
        return await self.answer(request_id)

    async def handshake(self) -> dict[str, Any]:
        init = await self.call(1, "initialize", INIT)
        await self.send({"method": "notifications/initialized"})
        return init

    def of(self, method: str) -> list[dict[str, Any]]:
        return [n["params"] for n in self.notifications if n["method"] == method]


@asynccontextmanager
async def mcp(args: list[str], env: dict[str, str], cwd: Path | None = None) -> AsyncIterator[Wire]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",
        "-m",
        "steerable_sidecar",
        "mcp",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    wire = Wire(proc)
    try:
        yield wire
    finally:
        if proc.returncode is None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), WAIT_S)
            except TimeoutError:
                proc.kill()
                await proc.wait()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("hello\n", encoding="utf-8")
    return root


def plugin_dir(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "probe.py").write_text(source, encoding="utf-8")
    return folder


# -- lifecycle --------------------------------------------------------------------------------------


async def test_initialize_is_answered_while_the_tools_are_still_booting(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # The plugin's register() blocks until the test creates a file: the boot cannot finish before
    # that, yet the handshake is answered, and tools/list waits and then lists the plugin's tool.
    gate = tmp_path / "gate"
    plugins = plugin_dir(
        tmp_path,
        f"""
import pathlib, time
from steerable_agent_runtime import tool

def register(router):
    deadline = time.monotonic() + 60
    while not pathlib.Path({str(gate)!r}).exists() and time.monotonic() < deadline:
        time.sleep(0.02)

    @tool(router=router, description="Say hi")
    async def say_hi() -> str:
        return "hi"
""",
    )
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugins))
    async with mcp(["--workspace", str(ws)], env) as wire:
        init = await wire.handshake()
        assert init["result"]["serverInfo"]["name"] == "steerable"
        assert (await wire.call(2, "ping"))["result"] == {}
        await wire.send({"id": 3, "method": "tools/list"})
        with pytest.raises(TimeoutError):  # still booting: no answer yet
            await wire.answer(3, timeout=grace(0.5, why="a tools/list answered before the boot ends"))
        gate.touch()
        listed = await wire.answer(3)
        names = [t["name"] for t in listed["result"]["tools"]]
        assert "say_hi" in names and "read_file" in names


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", LATEST_PROTOCOL_VERSION),  # one we do not speak: our newest, the client decides
    ],
)
async def test_version_negotiation_and_capabilities(
    ws: Path, child_env: Callable[..., dict[str, str]], asked: str, answered: str
) -> None:
    async with mcp(["--workspace", str(ws), "--no-plugins"], child_env()) as wire:
        init = await wire.call(1, "initialize", {**INIT, "protocolVersion": asked})
    result = init["result"]
    assert result["protocolVersion"] == answered
    assert result["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
    assert str(ws.resolve()) in result["instructions"]


async def test_bad_initialize_and_unknown_methods_are_protocol_errors(
    ws: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    async with mcp(["--workspace", str(ws), "--no-plugins"], child_env()) as wire:
        bad = await wire.call(1, "initialize", {"capabilities": {}})
        assert bad["error"]["code"] == -32602 and "protocolVersion" in bad["error"]["message"]
        await wire.handshake()
        assert (await wire.call(2, "resources/list"))["error"]["code"] == -32601
        assert (await wire.call(3, "tools/list", {"cursor": "abc"}))["error"]["code"] == -32602
        no_name = await wire.call(4, "tools/call", {"arguments": {}})
        assert no_name["error"]["code"] == -32602
        bad_args = await wire.call(5, "tools/call", {"name": "read_file", "arguments": [1]})
        assert bad_args["error"]["code"] == -32602 and "must be an object" in bad_args["error"]["message"]
        # and the server goes on serving
        done = await wire.call(6, "tools/call", {"name": "read_file", "arguments": {"path": "notes.txt"}})
        assert done["result"]["structuredContent"]["data"]["content"] == "hello\n"


async def test_a_failed_boot_is_answered_then_the_command_exits_2(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    plugins = plugin_dir(tmp_path, "def register(router):\n    raise RuntimeError('probe cannot start')\n")
    async with mcp(["--workspace", str(ws)], child_env(STEERABLE_PLUGIN_DIR=str(plugins))) as wire:
        await wire.handshake()
        listed = await wire.call(2, "tools/list")
        assert "probe" in listed["error"]["message"] and "probe cannot start" in listed["error"]["message"]
        assert listed["error"]["data"]["type"] == "PluginLoadError"
        assert await asyncio.wait_for(wire.proc.wait(), WAIT_S) == 2
        assert wire.proc.stderr is not None
        stderr = (await wire.proc.stderr.read()).decode()
        assert "steerable: " in stderr and "probe cannot start" in stderr


# -- the workspace ------------------------------------------------------------------------------


_MCP_FIX = (
    "Name a project folder instead: --workspace DIR "
    '(in the host\'s configuration: "args": ["mcp", "--workspace", "/path/to/project"])'
)
_WHOLE = "steerable will not give a model a whole disk or a home folder"


@pytest.mark.parametrize("where", ["root", "home", "above home"])
async def test_refuses_root_and_home_without_workspace(
    tmp_path: Path, child_env: Callable[..., dict[str, str]], where: str
) -> None:
    home = tmp_path / "users" / "me"
    home.mkdir(parents=True)
    cwd = {"root": Path("/"), "home": home, "above home": home.parent}[where]
    async with mcp(["--no-plugins"], child_env(HOME=str(home)), cwd=cwd) as wire:
        assert await asyncio.wait_for(wire.proc.wait(), WAIT_S) == 2
        assert wire.proc.stdout is not None and wire.proc.stderr is not None
        assert await wire.proc.stdout.read() == b""  # nothing on the protocol stream
        stderr = (await wire.proc.stderr.read()).decode()
    what = {"root": "is the file system's root", "home": "is a home folder"}.get(
        where, f"is above the home folder {home}"
    )
    assert (
        stderr == f"steerable mcp: the workspace {cwd} (the current directory) {what}; {_WHOLE}. {_MCP_FIX}\n"
    )


async def test_workspace_naming_home_is_refused_too(
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    """Issue 32: one rule for every command, however the folder is named (docs/mcp.md, The workspace)."""
    home = tmp_path / "me"
    home.mkdir()
    env = child_env(HOME=str(home))
    async with mcp(["--workspace", str(home), "--no-plugins"], env, cwd=home) as wire:
        assert await asyncio.wait_for(wire.proc.wait(), WAIT_S) == 2
        assert wire.proc.stderr is not None
        stderr = (await wire.proc.stderr.read()).decode()
    assert (
        stderr
        == f"steerable mcp: the workspace {home} (--workspace) is a home folder; {_WHOLE}. {_MCP_FIX}\n"
    )
    # from a project folder below home, no flag is needed
    project = home / "project"
    project.mkdir()
    (project / "todo.txt").write_text("x\n", encoding="utf-8")
    async with mcp(["--no-plugins"], env, cwd=project) as wire:
        assert (await wire.handshake())["result"]["serverInfo"]["name"] == "steerable"
        read = await wire.call(2, "tools/call", {"name": "read_file", "arguments": {"path": "todo.txt"}})
    assert read["result"]["isError"] is False


# -- logging ------------------------------------------------------------------------------------

LOGGING_PLUGIN = """
import logging
from steerable_agent_runtime import tool

def register(router):
    @tool(router=router, mode="read", description="Log a line")
    async def log_line(level: str, text: str) -> str:
        logging.getLogger("probe.plugin").log(getattr(logging, level), text)
        return "logged"
"""


async def test_logging_set_level_forwards_records_at_or_above_it_without_secrets(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    key = "sk-test-0123456789abcdef"
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugin_dir(tmp_path, LOGGING_PLUGIN)), STEERABLE_API_KEY=key)
    async with mcp(["--workspace", str(ws)], env) as wire:
        await wire.handshake()
        assert (await wire.call(2, "tools/list"))["result"]["tools"]  # booted
        wire.notifications.clear()

        def log(request_id: int, level: str, text: str) -> Any:
            return wire.call(
                request_id, "tools/call", {"name": "log_line", "arguments": {"level": level, "text": text}}
            )

        await log(3, "WARNING", f"the key is {key}")  # default level: warning and above
        await log(4, "INFO", "not yet")
        assert (await wire.call(5, "logging/setLevel", {"level": "info"}))["result"] == {}
        await log(6, "INFO", "now info")
        await log(7, "DEBUG", "never at info")
        assert (await wire.call(8, "logging/setLevel", {"level": "error"}))["result"] == {}
        await log(9, "WARNING", "below error")
        await log(10, "CRITICAL", "on fire")
        bad = await wire.call(11, "logging/setLevel", {"level": "verbose"})
        await wire.call(12, "ping")
    assert bad["error"]["code"] == -32602 and "debug, info, notice" in bad["error"]["message"]
    sent = [
        (m["level"], m["logger"], m["data"])
        for m in wire.of("notifications/message")
        if m["logger"] == "probe.plugin"
    ]
    assert sent == [
        ("warning", "probe.plugin", "the key is [redacted]"),
        ("info", "probe.plugin", "now info"),
        ("critical", "probe.plugin", "on fire"),
    ]
    assert all(key not in json.dumps(n) for n in wire.notifications)


# -- progress and cancellation --------------------------------------------------------------------


async def test_progress_heartbeats_for_a_long_bash(
    ws: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    async with mcp(["--workspace", str(ws), "--no-plugins"], child_env()) as wire:
        await wire.handshake()
        params = {
            "name": "bash",
            "arguments": {"command": "sleep 2.2; echo done"},
            "_meta": {"progressToken": "tok-1"},
        }
        answer = await wire.call(2, "tools/call", params)
        progress = wire.of("notifications/progress")
        quiet = await wire.call(3, "tools/call", {"name": "bash", "arguments": {"command": "sleep 1.2"}})
    assert answer["result"]["structuredContent"]["data"]["stdout"] == "done\n", answer
    assert [p["progressToken"] for p in progress] == ["tok-1"] * len(progress)
    assert len(progress) >= 3  # the start, then one a second
    assert progress[0]["progress"] == 0 and progress[0]["message"] == "bash started"
    values = [p["progress"] for p in progress]
    assert values == sorted(set(values))  # strictly increasing
    beats = [p["message"] for p in progress[1:] if p["message"] != "done\n"]  # its output may come too
    assert len(beats) >= 2 and all(m.startswith("bash running for ") for m in beats), progress
    assert quiet["result"]["isError"] is False
    assert len(wire.of("notifications/progress")) == len(progress)  # no token, no progress


STREAMING_PLUGIN = """
from steerable_agent_runtime import CallContext, tool

def register(router):
    @tool(router=router, mode="read")
    async def stream_lines(count: int, context: CallContext) -> str:
        \"\"\"Send lines as output while running.\"\"\"
        for n in range(count):
            await context.send_output(f"line {n} key=sk-streamed-secret")
        return "streamed"
"""


async def test_output_chunks_travel_in_progress_messages(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    env = child_env(
        STEERABLE_PLUGIN_DIR=str(plugin_dir(tmp_path, STREAMING_PLUGIN)),
        STEERABLE_API_KEY="sk-streamed-secret",
    )
    async with mcp(["--workspace", str(ws)], env) as wire:
        await wire.handshake()
        params = {"name": "stream_lines", "arguments": {"count": 3}, "_meta": {"progressToken": "t"}}
        answer = await wire.call(2, "tools/call", params)
        progress = wire.of("notifications/progress")
        quiet = await wire.call(3, "tools/call", {"name": "stream_lines", "arguments": {"count": 2}})
    assert answer["result"]["structuredContent"]["data"]["value"] == "streamed", answer
    messages = [p["message"] for p in progress]
    assert messages[0] == "stream_lines started"
    assert [m.split(" key=")[0] for m in messages[1:4]] == ["line 0", "line 1", "line 2"]
    assert all("sk-streamed-secret" not in m for m in messages)  # redacted like every other message
    values = [p["progress"] for p in progress]
    assert values[0] == 0 and values == sorted(set(values))  # strictly increasing, heartbeat included
    assert quiet["result"]["isError"] is False
    assert len(wire.of("notifications/progress")) == len(progress)  # no token: the chunks go nowhere


LATE_PLUGIN = """
import asyncio
from steerable_agent_runtime import CallContext, tool

KEPT = []

def register(router):
    @tool(router=router, mode="read")
    async def keep_context(context: CallContext) -> str:
        \"\"\"Keep the call's context and send through it after returning.\"\"\"
        async def later():
            await asyncio.sleep(0.3)
            await context.send_output("AFTER-THE-ANSWER")
        KEPT.append((context, asyncio.get_running_loop().create_task(later())))
        await context.send_output("DURING-THE-CALL")
        return "kept"

    @tool(router=router, mode="read")
    async def borrow_context(context: CallContext) -> str:
        \"\"\"Send through the first call's context, after its late send.\"\"\"
        kept, late = KEPT[0]
        await late
        await kept.send_output("FROM-ANOTHER-CALL")
        await context.send_output("MINE")
        return "borrowed"
"""


async def test_nothing_is_sent_under_a_calls_token_after_its_answer(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugin_dir(tmp_path, LATE_PLUGIN)))
    async with mcp(["--workspace", str(ws)], env) as wire:
        await wire.handshake()
        first = await wire.call(2, "tools/call", {"name": "keep_context", "_meta": {"progressToken": "p1"}})
        answered = len(wire.notifications)
        second = await wire.call(
            3, "tools/call", {"name": "borrow_context", "_meta": {"progressToken": "p2"}}
        )
        assert (await wire.call(4, "ping"))["result"] == {}
    assert first["result"]["isError"] is False and second["result"]["isError"] is False, (first, second)
    before = [n["params"] for n in wire.notifications[:answered] if n["method"] == "notifications/progress"]
    after = [n["params"] for n in wire.notifications[answered:] if n["method"] == "notifications/progress"]
    assert "DURING-THE-CALL" in [p["message"] for p in before if p["progressToken"] == "p1"]
    assert [p for p in after if p["progressToken"] == "p1"] == []  # neither its own late send nor another's
    chunks = [p["message"] for p in after if " running for " not in p["message"]]  # heartbeats aside
    assert chunks == ["borrow_context started", "MINE"]  # the borrowed send went nowhere


def _strict_json(line: bytes) -> Any:
    """``line`` parsed as a strict parser (serde_json) would: no lone surrogate, escaped or not."""
    value = json.loads(line.decode("utf-8"))
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # a lone \\udXXX escape raises here
    return value


async def test_run_codes_streamed_output_is_strict_json_like_its_logs(
    ws: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    code = 'print("x\\ud800y")\nprint("ok")\nreturn 1'
    params = {
        "name": "run_code",
        "arguments": {"code": code, "description": "print"},
        "_meta": {"progressToken": 5},
    }
    async with mcp(["--workspace", str(ws), "--no-plugins"], child_env(STEERABLE_RUN_CODE="1")) as wire:
        await wire.handshake()
        answer = await wire.call(2, "tools/call", params)
    assert answer["result"]["structuredContent"]["data"]["logs"] == "x\ufffdy\nok\n", answer
    frames = [_strict_json(line) for line in wire.lines]  # every frame, not only the progress ones
    chunks = [f["params"]["message"] for f in frames if f.get("method") == "notifications/progress"]
    assert "x\ufffdy\n" in chunks and "ok\n" in chunks, chunks


async def test_cancelled_call_gets_no_answer_and_its_child_is_killed(
    ws: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    marker = "31.4159"  # a sleep nobody else runs
    async with mcp(["--workspace", str(ws), "--no-plugins"], child_env()) as wire:
        await wire.handshake()
        params = {"name": "bash", "arguments": {"command": f"sleep {marker}"}, "_meta": {"progressToken": 9}}
        await wire.send({"id": 7, "method": "tools/call", "params": params})
        async with asyncio.timeout(WAIT_S):
            while not wire.of("notifications/progress"):
                wire.notifications.append(await wire.frame())
        await eventually(lambda: running(marker), what=f"the call's sleep {marker} running")
        await wire.send({"method": "notifications/cancelled", "params": {"requestId": 7, "reason": "user"}})
        await eventually(lambda: not running(marker), what=f"the cancelled call's sleep {marker} killed")
        pong = await wire.call(8, "ping")  # an answer to 7 would have failed here
        assert pong["result"] == {}
        await asyncio.sleep(grace(1.5, why="the call's heartbeat, every second, would go on once cancelled"))
        count = len(wire.of("notifications/progress"))
        assert (await wire.call(9, "ping"))["result"] == {}
        assert len(wire.of("notifications/progress")) == count


# -- in process: tools that change after start, annotations ------------------------------------


class _Lines:
    """A :class:`LineWriter` that keeps what the server wrote, frame by frame."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def write(self, data: bytes, /) -> None:
        for line in data.splitlines():
            self.frames.put_nowait(json.loads(line))

    async def drain(self) -> None:
        return None


async def test_a_tool_added_after_start_sends_list_changed() -> None:
    router = ToolRouter()

    @tool(router=router, mode="read", description="One")
    async def one() -> str:
        return "1"

    reader = asyncio.StreamReader()
    out = _Lines()
    server = McpServer()
    serving = asyncio.create_task(server.serve(reader, out))
    server.attach(router)
    reader.feed_data(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode() + b"\n"
    )
    assert (await asyncio.wait_for(out.frames.get(), WAIT_S))["id"] == 1

    @tool(router=router, mode="read", description="Two")
    async def two() -> str:
        return "2"

    @tool(router=router, mode="read", description="Three")
    async def three() -> str:
        return "3"

    changed = await asyncio.wait_for(out.frames.get(), WAIT_S)
    assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    reader.feed_data(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
    listed = await asyncio.wait_for(out.frames.get(), WAIT_S)  # one notification for the burst
    assert [t["name"] for t in listed["result"]["tools"]] == ["one", "two", "three"]
    reader.feed_eof()
    await asyncio.wait_for(serving, WAIT_S)


async def test_log_forwarding_leaves_the_stderr_log_level_alone(caplog: pytest.LogCaptureFixture) -> None:
    root = logging.getLogger()
    before = root.level
    reader = asyncio.StreamReader()
    out = _Lines()
    server = McpServer()
    serving = asyncio.create_task(server.serve(reader, out))
    server.attach(ToolRouter())
    reader.feed_data(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode() + b"\n"
    )
    assert (await asyncio.wait_for(out.frames.get(), WAIT_S))["id"] == 1
    reader.feed_data(b'{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}\n')
    assert (await asyncio.wait_for(out.frames.get(), WAIT_S))["result"] == {}
    logging.getLogger("probe.inproc").debug("fine detail")
    note = await asyncio.wait_for(out.frames.get(), WAIT_S)
    assert note["params"] == {"level": "debug", "logger": "probe.inproc", "data": "fine detail"}
    reader.feed_eof()
    await asyncio.wait_for(serving, WAIT_S)
    assert root.level == before  # restored when the connection ends


def test_titles_and_annotations() -> None:
    assert tool_title("read_file") == "Read file" and tool_title("mcp__git__git_log") == "Mcp git git log"
    from steerable_agent_runtime import ToolMode

    assert mode_annotations(ToolMode.EXTERNAL) == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
    }


def test_the_mcp_command_answers_the_handshake_without_the_heavy_imports() -> None:
    """What runs before ``initialize`` is answered: the CLI and the MCP modules, nothing heavy."""
    probe = (
        "import sys, json, steerable_sidecar.cli._main, steerable_sidecar.mcp._command;"
        "steerable_sidecar.cli._main.build_parser().parse_args(['mcp', '--workspace', '.']);"
        "print(json.dumps(sorted(m for m in ('pydantic', 'mcp', 'httpx', 'jsonschema', "
        "'steerable_agent_runtime.tools', 'steerable_agent_runtime.workspace') if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_credential_values_are_the_values_of_credential_named_variables() -> None:
    from steerable_sidecar.shared._secrets import credential_values

    env = {
        "STEERABLE_API_KEY": "sk-0123456789",
        "TAVILY_API_KEY": "tvly-0123456789",
        "GITHUB_TOKEN": "ghp_0123456789abcdef",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIabcdef",
        "DB_PASSWORD": "correct horse battery",
        "OLLAMA_API_KEY": "ollama",  # a placeholder: too short to be a secret
        "XAUTHORITY": "/run/user/1000/xauth",  # paths, not credentials
        "SSH_AUTH_SOCK": "/tmp/ssh-abc/agent.1",
        "KEY_DIR": "/home/me/keys",
        "PATH": "/usr/bin:/bin",
        "PWD": "/home/me/project",  # the working directory, never a secret (issue 32 item 5)
        "OLDPWD": "/home/me",
        "MYSQL_PWD": "mysql-secret-1",
    }
    assert credential_values(env) == [
        "correct horse battery",
        "ghp_0123456789abcdef",
        "wJalrXUtnFEMIabcdef",
        "tvly-0123456789",
        "mysql-secret-1",
        "sk-0123456789",
    ]


def test_doctor_shows_the_workspace_even_when_pwd_names_it(
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    """``PWD`` is the shell's working directory, not a credential: it is never ``[redacted]``."""
    ws = tmp_path / "a-long-project-folder"
    ws.mkdir()
    out = run_steerable(
        "doctor", "--json", "--no-plugins", "--workspace", str(ws), env=child_env(PWD=str(ws)), cwd=ws
    )
    report = json.loads(out.stdout)
    shown = {(c["section"], c["item"]): c["value"] for c in report["checks"]}
    assert shown[("Workspace", "root")] == str(ws) and "[redacted]" not in out.stdout


# -- found by an attack pass ------------------------------------------------------------------


@pytest.mark.parametrize("workspace", ["", "  ", ".", "./"])
async def test_an_empty_or_relative_workspace_is_checked_like_the_current_directory(
    child_env: Callable[..., dict[str, str]], workspace: str
) -> None:
    async with mcp(["--workspace", workspace, "--no-plugins"], child_env(), cwd=Path("/")) as wire:
        assert await asyncio.wait_for(wire.proc.wait(), WAIT_S) == 2
        assert wire.proc.stderr is not None
        stderr = (await wire.proc.stderr.read()).decode()
    if not workspace.strip():
        assert stderr == f"steerable mcp: --workspace is empty. {_MCP_FIX}\n"
    else:
        origin = f"--workspace {workspace}"
        assert (
            stderr
            == f"steerable mcp: the workspace / ({origin}) is the file system's root; {_WHOLE}. {_MCP_FIX}\n"
        )


async def test_the_home_check_does_not_trust_an_empty_or_wrong_home(
    child_env: Callable[..., dict[str, str]],
) -> None:
    import pwd

    home = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
    if not home.is_dir() or home == Path("/"):
        pytest.skip(f"this user's passwd home {home} is not a directory to start in")
    for fake in ("", "/nonexistent", f"{home}/.."):
        async with mcp(["--no-plugins"], child_env(HOME=fake), cwd=home) as wire:
            assert await asyncio.wait_for(wire.proc.wait(), WAIT_S) == 2, fake


async def test_a_failed_boot_and_the_stderr_log_never_show_a_secret(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    key = "sk-boot-secret-0123456789"
    plugin = (
        "import logging, os\n"
        "def register(router):\n"
        "    logging.getLogger('probe.leak').warning('the key is %s', os.environ['STEERABLE_API_KEY'])\n"
        "    raise RuntimeError('cannot start with ' + os.environ['STEERABLE_API_KEY'])\n"
    )
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugin_dir(tmp_path, plugin)), STEERABLE_API_KEY=key)
    async with mcp(["--workspace", str(ws)], env) as wire:
        await wire.handshake()
        listed = await wire.call(2, "tools/list")
        assert await asyncio.wait_for(wire.proc.wait(), WAIT_S) == 2
        assert wire.proc.stderr is not None
        stderr = (await wire.proc.stderr.read()).decode()
    assert "cannot start with [redacted]" in listed["error"]["message"]
    assert key not in json.dumps(listed) and key not in json.dumps(wire.notifications)
    assert "the key is [redacted]" in stderr and "cannot start with [redacted]" in stderr
    assert key not in stderr


async def test_no_log_line_comes_before_the_initialize_answer(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    plugin = (
        "import logging\ndef register(router):\n    logging.getLogger('probe.early').warning('booting')\n"
    )
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugin_dir(tmp_path, plugin)))
    async with mcp(["--workspace", str(ws)], env) as wire:
        assert wire.proc.stderr is not None
        async with asyncio.timeout(WAIT_S):  # the boot logged its line (on stderr) before the host speaks
            while b"booting" not in (line := await wire.proc.stderr.readline()):
                assert line, "stderr ended without the plugin's log line"
        await wire.send({"id": 1, "method": "initialize", "params": INIT})
        first = await wire.frame()
        second = await wire.frame()
    assert first["id"] == 1 and "result" in first
    assert second["method"] == "notifications/message" and second["params"]["data"] == "booting"


async def test_mcp_rules_for_ids_and_notifications(
    ws: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    async with mcp(["--workspace", str(ws), "--no-plugins"], child_env()) as wire:
        await wire.handshake()
        await wire.send({"id": None, "method": "ping"})
        null_id = await wire.frame()
        # a tools/call without an id is a notification: it must not run the tool
        await wire.send(
            {
                "method": "tools/call",
                "params": {"name": "write_file", "arguments": {"path": "n.txt", "content": "x"}},
            }
        )
        assert (await wire.call(2, "ping"))["result"] == {}
        long_name = await wire.call(3, "tools/call", {"name": "x" * 100_000, "arguments": {}})
    assert null_id["error"]["code"] == -32600
    assert not (ws / "n.txt").exists()
    assert long_name["error"]["code"] == -32602 and len(long_name["error"]["message"]) < 300
    assert "(100000 characters)" in long_name["error"]["message"]


async def test_a_tool_that_swallows_the_cancellation_still_gets_no_answer(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    started = tmp_path / "stubborn-started"
    plugin = f"""
import asyncio, pathlib
from steerable_agent_runtime import tool

def register(router):
    @tool(router=router, mode="read", description="Wait, and refuse to be cancelled")
    async def stubborn() -> str:
        pathlib.Path({str(started)!r}).touch()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "swallowed the cancel"
        return "slept"
"""
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugin_dir(tmp_path, plugin)))
    async with mcp(["--workspace", str(ws)], env) as wire:
        await wire.handshake()
        assert (await wire.call(2, "tools/list"))["result"]["tools"]
        await wire.send({"id": 3, "method": "tools/call", "params": {"name": "stubborn", "arguments": {}}})
        await eventually(started.exists, what="the stubborn tool running")
        await wire.send({"method": "notifications/cancelled", "params": {"requestId": 3}})
        assert (await wire.call(4, "ping"))["result"] == {}  # an answer to 3 first would fail here
        await asyncio.sleep(
            grace(0.5, why="the tool returns as soon as it swallows the cancel: an answer to 3")
        )
        assert (await wire.call(5, "ping"))["result"] == {}


async def test_a_host_that_leaves_during_a_hung_boot_ends_the_process(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    plugin = "import time\ndef register(router):\n    time.sleep(60)\n"
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugin_dir(tmp_path, plugin)))
    async with mcp(["--workspace", str(ws)], env) as wire:
        await wire.handshake()
        assert wire.proc.stdin is not None
        wire.proc.stdin.close()
        # well before the plugin's 60 s: the boot thread is a daemon, given 2 s after the host left
        assert await asyncio.wait_for(wire.proc.wait(), 15) == 0


async def test_a_bad_log_level_is_answered_like_any_bad_setting(
    ws: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    async with mcp(["--workspace", str(ws), "--no-plugins"], child_env(STEERABLE_LOG_LEVEL="bogus")) as wire:
        await wire.handshake()
        listed = await wire.call(2, "tools/list")
        assert await asyncio.wait_for(wire.proc.wait(), WAIT_S) == 2
    assert listed["error"]["code"] == -32040
    assert listed["error"]["message"].startswith("STEERABLE_LOG_LEVEL='bogus' is not a log level")


def test_credentials_in_a_command_line_and_in_urls() -> None:
    from steerable_sidecar.shared._secrets import credential_arguments, credential_values

    args = ["serve", "--token", "ghp_ARG0123456789", "--api-key=key-0123456789", "--port", "8080"]
    args += ["--db", "postgres://u:dbPASSsecret123@h/db", "--verbose"]
    args += ["--header", "Authorization: Bearer sk-hdrSECRET12345", "-e", "GITHUB_TOKEN=ghp_envstyle12345"]
    args += ["X-Api-Key: xk-0123456789", "mode=fast"]
    assert credential_arguments(args) == [
        "ghp_ARG0123456789",
        "key-0123456789",
        "dbPASSsecret123",
        "sk-hdrSECRET12345",
        "ghp_envstyle12345",
        "xk-0123456789",
    ]
    assert credential_values({"DATABASE_URL": "postgres://u:dbPASSsecret123@h/db"}) == ["dbPASSsecret123"]
    standard = {"PGPASSWORD": "pg-0123456789", "MYSQL_PWD": "my-0123456789", "GH_PAT": "ghp_pat0123456"}
    assert sorted(credential_values({**standard, "COMPAT": "not-a-secret-at-all"})) == sorted(
        standard.values()
    )


async def test_an_mcp_sources_stderr_tail_is_redacted() -> None:
    from steerable_sidecar.mcp_sources._connection import StderrTail as _StderrTail
    from steerable_sidecar.shared._secrets import Redactor

    tail = _StderrTail("up", Redactor.of(["envsecretvalue123"]))
    tail.writer.write("fatal: auth with envsecretvalue123 rejected\n")
    tail.writer.flush()
    tail.close_writer()
    assert await tail.tail(wait_s=2) == "fatal: auth with [redacted] rejected"
    await tail.close()


async def test_a_fronted_mcp_tool_keeps_its_servers_hints_and_title(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    server = Path(__file__).resolve().parents[2] / "fixtures" / "mcp_tool_server.py"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps([{"name": "wx", "command": sys.executable, "args": [str(server)]}]))
    env = child_env(STEERABLE_MCP_CONFIG=str(config))
    async with mcp(["--workspace", str(ws), "--no-plugins"], env) as wire:
        await wire.handshake()
        listed = await wire.call(2, "tools/list")
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    weather = tools["mcp__wx__get_weather"]["annotations"]  # the server says read-only, open world
    assert weather == {
        "title": "Mcp wx get weather",
        "readOnlyHint": True,
        "destructiveHint": False,  # implied by read-only
        "idempotentHint": False,  # not stated: MCP's default
        "openWorldHint": True,  # from a read's mode alone this would say false
    }
    purge = tools["mcp__wx__purge_cache"]["annotations"]  # says only: not read-only, destructive
    assert purge["openWorldHint"] is True and purge["destructiveHint"] is True  # the rest: defaults
    assert tools["mcp__wx__list_notes"]["title"] == "List notes"
    assert tools["mcp__wx__list_notes"]["annotations"]["title"] == "List notes"
    assert all(
        {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} <= set(t["annotations"])
        for t in tools.values()
    )


async def test_a_tools_exception_and_its_traceback_never_show_a_secret(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    key = "sk-steerSECRET1234567"
    plugin = """
import logging, os
from steerable_agent_runtime import tool

def register(router):
    @tool(router=router, mode="read", description="Fail, quoting the key")
    async def boom() -> str:
        try:
            raise ValueError("inner " + os.environ["STEERABLE_API_KEY"])
        except ValueError:
            logging.getLogger("probe.tb").exception("while booming")
        raise RuntimeError("upstream said no to key " + os.environ["STEERABLE_API_KEY"])
"""
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugin_dir(tmp_path, plugin)), STEERABLE_API_KEY=key)
    async with mcp(["--workspace", str(ws)], env) as wire:
        await wire.handshake()
        failed = await wire.call(2, "tools/call", {"name": "boom", "arguments": {}})
        assert wire.proc.stdin is not None
        wire.proc.stdin.close()
        await asyncio.wait_for(wire.proc.wait(), WAIT_S)
        assert wire.proc.stderr is not None
        stderr = (await wire.proc.stderr.read()).decode()
    body = failed["result"]["structuredContent"]
    assert body["success"] is False and "upstream said no to key [redacted]" in body["error"]
    assert key not in json.dumps(failed) and key not in json.dumps(wire.notifications)
    assert "ValueError: inner [redacted]" in stderr  # the traceback of the logged exception
    assert key not in stderr


async def test_a_host_that_leaves_with_a_tools_list_pending_ends_the_process(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    plugin = "import time\ndef register(router):\n    time.sleep(60)\n"
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugin_dir(tmp_path, plugin)))
    async with mcp(["--workspace", str(ws)], env) as wire:
        await wire.handshake()
        await wire.send({"id": 2, "method": "tools/list"})  # waits for the hung boot
        assert wire.proc.stdin is not None
        wire.proc.stdin.close()  # after the request: the server reads it, then the end of input
        # the end of input ends the pending request at once (its answer says why), so the process
        # leaves after the 2 s boot grace, not after the 5 s drain on top of it
        left = await wire.answer(2)
        assert await asyncio.wait_for(wire.proc.wait(), 15) == 0
    assert left["error"]["message"].startswith("the client closed the connection before the tools were ready")


def test_refused_workspace_knows_every_persons_home(tmp_path: Path) -> None:
    from steerable_sidecar.shared._workspace_rule import refused_folder

    homes = [Path("/root"), Path("/home/ana"), Path("/home/bo")]
    state = tmp_path / "state"
    assert refused_folder(Path("/home/bo"), command="mcp", state_dir=state, homes=homes) == (
        f"is a home folder; {_WHOLE}. {_MCP_FIX}"
    )  # another person's home
    assert refused_folder(Path("/home"), command="mcp", state_dir=state, homes=homes) == (
        f"is above the home folder /home/ana; {_WHOLE}. {_MCP_FIX}"
    )
    assert refused_folder(Path("/home/bo/project"), command="mcp", state_dir=state, homes=homes) is None


async def test_an_absolute_workspace_serves_from_a_deleted_current_directory(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        f"cd {gone} && rmdir {gone} && exec {sys.executable} -m steerable_sidecar mcp -w {ws} --no-plugins"
    )
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        script,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(),
    )
    wire = Wire(proc)
    try:
        assert (await wire.handshake())["result"]["serverInfo"]["name"] == "steerable"
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), WAIT_S)


# -- SAFE-6, SAFE-7 ---------------------------------------------------------------------------------


async def test_deep_arguments_and_frames_too_deep_to_decode_are_answered_and_serving_goes_on(
    ws: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:  # SAFE-6
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugin_dir(tmp_path, WALK_PLUGIN)))
    async with mcp(["--workspace", str(ws)], env) as wire:
        await wire.handshake()
        assert wire.proc.stdin is not None
        call = '{{"jsonrpc": "2.0", "id": {}, "method": "tools/call", "params": {{"name": "walk", "arguments": {}}}}}'
        wire.proc.stdin.write(call.format(2, arguments_text(300)).encode() + b"\n")
        await wire.proc.stdin.drain()
        deep = await wire.answer(2)
        wire.proc.stdin.write(call.format(3, arguments_text(1_000)).encode() + b"\n")
        wire.proc.stdin.write(b"[" * 100_000 + b"\n")
        wire.proc.stdin.write(deep_request("late", 5_000, method="tools/call", id_last=True).encode() + b"\n")
        wire.proc.stdin.write(deep_request(None, 5_000, method="tools/call").encode() + b"\n")
        await wire.proc.stdin.drain()
        undecodable = [await wire.frame() for _ in range(4)]
        after = await wire.call(4, "tools/call", {"name": "walk", "arguments": {"value": [[]]}})
    assert deep["result"] == {
        "content": [{"type": "text", "text": json.dumps(too_deep(300))}],
        "structuredContent": too_deep(300),
        "isError": True,
    }
    # too deep to decode: the id at the frame's top level, read without decoding it, else null
    assert undecodable == [
        parse_error_too_deep(3),
        PARSE_ERROR_TOO_DEEP,
        parse_error_too_deep("late"),
        PARSE_ERROR_TOO_DEEP,
    ]
    assert after["result"]["structuredContent"] == {"success": True, "data": {"walked": True}}


async def test_a_request_reusing_the_id_of_one_in_flight_is_refused(
    ws: Path, child_env: Callable[..., dict[str, str]]
) -> None:  # SAFE-7
    async with mcp(["--workspace", str(ws), "--no-plugins"], child_env()) as wire:
        await wire.handshake()
        await wire.send(
            {
                "id": 2,
                "method": "tools/call",
                "params": {"name": "bash", "arguments": {"command": GATED_BASH}},
            }
        )
        await wire.send({"id": 2, "method": "ping"})
        refused = await wire.frame()
        assert (await wire.call(3, "ping"))["result"] == {}  # an answer to 2 first would fail here
        (ws / "gate").touch()
        first = await wire.answer(2)
        assert (await wire.call(4, "ping"))["result"] == {}  # and no second answer to 2 came before it
    assert refused == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {
            "code": -32600,
            "message": "Invalid Request: id 2 is already in use by a request still in flight; wait for "
            "its answer or give this request another id",
        },
    }
    assert first["result"]["structuredContent"]["data"]["stdout"] == "first\n"
