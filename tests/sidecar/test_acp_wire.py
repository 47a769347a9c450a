"""``steerable acp`` on the raw wire: the early ``initialize``, bad frames, and one turn at a time.

These tests write bytes to the agent's stdin and read its stdout lines themselves (no SDK on the
client side), so they see exactly what an editor with a buggy or hostile ACP client would.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION
from acp.schema import InitializeResponse
from acp_client import write_script

from steerable_sidecar._acp_wire import ACP_PROTOCOL_VERSION, initialize_result

pytestmark = pytest.mark.slow


class RawClient:
    """Lines in, lines out: ``send`` a frame (text or JSON), ``next`` the next message from the agent."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.seen: list[dict[str, Any]] = []

    async def send(self, frame: bytes | str | dict[str, Any]) -> None:
        assert self.process.stdin is not None
        data = (
            frame
            if isinstance(frame, bytes)
            else (frame if isinstance(frame, str) else json.dumps(frame)).encode()
        )
        self.process.stdin.write(data + b"\n")
        await self.process.stdin.drain()

    async def next(self, timeout_s: float = 30) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout_s)
        assert line, "the agent closed its stdout"
        message: dict[str, Any] = json.loads(line)
        self.seen.append(message)
        return message

    async def answer_to(self, request_id: Any, timeout_s: float = 30) -> dict[str, Any]:
        """The response to ``request_id``, skipping notifications and the agent's own requests."""
        while True:
            message = await self.next(timeout_s)
            if message.get("id") == request_id and "method" not in message:
                return message


@pytest.fixture
async def raw_agent(
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> AsyncIterator[Callable[[list[Any]], Any]]:
    processes: list[asyncio.subprocess.Process] = []

    async def start(turns: list[Any]) -> RawClient:
        script = write_script(tmp_path / f"turns{len(processes)}.json", turns)
        env = child_env(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script))
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "steerable_sidecar",
            "acp",
            "--no-plugins",
            "--no-web-tools",
            "--state-dir",
            str(tmp_path / "state"),
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=2**24,
        )
        processes.append(process)
        return RawClient(process)

    yield start
    for process in processes:
        if process.returncode is None:
            process.kill()
            await process.wait()


def _request(request_id: int, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


_INIT = _request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})


def test_the_protocol_version_is_the_sdks() -> None:
    assert ACP_PROTOCOL_VERSION == PROTOCOL_VERSION
    # the early answer is a valid InitializeResponse, field for field
    parsed = InitializeResponse.model_validate(initialize_result({"protocolVersion": 1}))
    assert parsed.model_dump(by_alias=True, exclude_none=True)["agentCapabilities"]["loadSession"] is True


async def test_the_early_initialize_answer_is_the_one_the_sdk_gives(raw_agent: Any) -> None:
    early = await raw_agent(["hi"])
    await early.send(_INIT)
    fast = await early.answer_to(0)
    late = await raw_agent(["hi"])
    # a first message that is not initialize: it waits for the SDK, and so does initialize
    await late.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "none"}})
    await late.send(_INIT)
    slow = await late.answer_to(0)
    assert fast == slow
    assert fast["result"]["protocolVersion"] == 1


async def test_bad_frames_get_json_rpc_errors_and_the_agent_stays_up(raw_agent: Any, workspace: Path) -> None:
    client = await raw_agent(["hi"])
    await client.send("this is not json")
    assert (await client.next())["error"]["code"] == -32700
    await client.send(_INIT)
    assert "result" in await client.answer_to(0)
    cases: list[tuple[bytes | str | dict[str, Any], Any, int]] = [
        ("[1, 2]", None, -32600),
        ("42", None, -32600),
        ('{"jsonrpc": "2.0", "id": 5}', 5, -32600),
        ('{"jsonrpc": "2.0", "id": 6, "method": 7}', 6, -32600),
        (b"\xff\xfe not utf-8", None, -32700),
        ('{"a": NaN}', None, -32700),
        ("[" * 100_000, None, -32700),
        (_request(7, "foo/bar", {}), 7, -32601),
        (_request(8, "session/new", {"cwd": 5, "mcpServers": []}), 8, -32602),
        (_request(9, "session/new", [1, 2]), 9, -32602),
        (_request(10, "session/prompt", {"sessionId": "nope", "prompt": []}), 10, -32002),
    ]
    for frame, answered_id, code in cases:
        await client.send(frame)
        answer = await client.next()
        assert (answer.get("id"), answer["error"]["code"]) == (answered_id, code), frame
    await client.send(_request(11, "session/new", {"cwd": str(workspace), "mcpServers": []}))
    assert "sessionId" in (await client.answer_to(11))["result"]


async def test_a_prompt_while_a_turn_runs_is_refused_and_cancel_ends_the_turn(
    raw_agent: Any, workspace: Path
) -> None:
    bash = {"tool_calls": [{"id": "s1", "name": "bash", "arguments": {"command": "echo hi"}}]}
    client = await raw_agent([bash, "done"])
    await client.send(_INIT)
    await client.answer_to(0)
    await client.send(_request(1, "session/new", {"cwd": str(workspace), "mcpServers": []}))
    session_id = (await client.answer_to(1))["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    await client.send(_request(2, "session/prompt", prompt))
    while True:  # the turn now waits for a permission nobody gives
        message = await client.next()
        if message.get("method") == "session/request_permission":
            break
    await client.send(_request(3, "session/prompt", prompt))
    busy = await client.answer_to(3)
    assert busy["error"]["code"] == -32600
    assert "already running" in busy["error"]["data"]["reason"]
    await client.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}})
    assert (await client.answer_to(2))["result"]["stopReason"] == "cancelled"
