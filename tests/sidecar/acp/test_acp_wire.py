"""``steerable acp`` on the raw wire: the early ``initialize``, bad frames, and one turn at a time.

These tests write bytes to the agent and read its lines themselves (no SDK on the client side), so
they see exactly what an editor with a buggy or hostile ACP client would: in this process over
pipes (``serve_streams``, what the command runs), and once as the real command.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION
from acp.schema import InitializeResponse
from acp_client import Served, write_script
from deep_arguments import deep_request, parse_error_too_deep

from steerable_agent_runtime.llm import ScriptedProvider
from steerable_sidecar.acp._agent import AcpOptions
from steerable_sidecar.acp._wire import ACP_PROTOCOL_VERSION, initialize_result

pytestmark = pytest.mark.slow


class RawClient:
    """Lines in, lines out: ``send`` a frame (bytes, text or JSON), ``next`` the agent's next message."""

    def __init__(self, reader: asyncio.StreamReader, writer: Any) -> None:
        self.reader = reader
        self.writer = writer
        self.seen: list[dict[str, Any]] = []

    async def send(self, frame: bytes | str | dict[str, Any]) -> None:
        text = frame if isinstance(frame, str | bytes) else json.dumps(frame)
        self.writer.write((text if isinstance(text, bytes) else text.encode()) + b"\n")
        await self.writer.drain()

    async def next(self, timeout_s: float = 30) -> dict[str, Any]:
        line = await asyncio.wait_for(self.reader.readline(), timeout_s)
        assert line, "the agent closed its stdout"
        message: dict[str, Any] = json.loads(line)
        self.seen.append(message)
        return message

    async def open_session(self, workspace: Path) -> str:
        """``initialize`` (id 0), then ``session/new`` on ``workspace`` (id 1); the session's id."""
        await self.send(_INIT)
        await self.answer_to(0)
        await self.send(_request(1, "session/new", {"cwd": str(workspace), "mcpServers": []}))
        session_id: str = (await self.answer_to(1))["result"]["sessionId"]
        announced = await self.next()  # the slash commands, once the session is answered
        assert announced["params"]["update"]["sessionUpdate"] == "available_commands_update"
        return session_id

    async def until(self, method: str) -> dict[str, Any]:
        """Read on to the agent's next message calling ``method``."""
        while True:
            message = await self.next()
            if message.get("method") == method:
                return message

    async def answer_to(self, request_id: Any, timeout_s: float = 30) -> dict[str, Any]:
        """The response to ``request_id``, skipping notifications and the agent's own requests."""
        while True:
            message = await self.next(timeout_s)
            if message.get("id") == request_id and "method" not in message:
                return message


@pytest.fixture
async def raw_agent(tmp_path: Path) -> AsyncIterator[Callable[[list[Any]], Any]]:
    """``steerable acp``'s :func:`serve_streams` in this process, with raw pipes for the client."""
    running: list[Served] = []

    async def start(turns: list[Any], **options: Any) -> RawClient:
        settings = AcpOptions(state_dir=tmp_path / "state", plugins=False, web_tools=False, **options)
        served = await Served.start(settings, ScriptedProvider(turns))
        running.append(served)
        return RawClient(served.reader, served.writer)

    yield start
    for served in running:
        await served.close()


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


async def test_frames_too_deep_to_decode_are_answered_with_the_id_at_their_top_level(
    raw_agent: Any, workspace: Path
) -> None:  # SAFE-6
    """A request too deep to decode gets -32700 with its top-level id (null when it has none
    there); a response too deep to decode fails the request it answers, which would otherwise
    wait for ever: the permission asked is refused, and the turn goes on."""
    bash = {"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": "touch ran.txt"}}]}
    client = await raw_agent([bash, "done"])
    session_id = await client.open_session(workspace)
    for frame, answered_id in (
        (deep_request(2, 5_000, method="session/new"), 2),
        (deep_request("late", 5_000, method="session/new", id_last=True), "late"),
        (deep_request(None, 5_000, method="session/new"), None),  # an id in the params only
    ):
        await client.send(frame)
        assert await client.next() == parse_error_too_deep(answered_id)
    await client.send(_prompt(3, session_id))
    asked = await client.until("session/request_permission")
    deep = "[" * 5_000 + "]" * 5_000
    await client.send(f'{{"jsonrpc": "2.0", "id": {json.dumps(asked["id"])}, "result": {deep}}}')
    assert await client.next() == parse_error_too_deep(None)  # a response is not answered as a request
    done = await client.answer_to(3)
    assert done["result"]["stopReason"] == "end_turn"
    updates = [m["params"]["update"] for m in client.seen if m.get("method") == "session/update"]
    outputs = [u["rawOutput"] for u in updates if u.get("status") == "failed"]
    assert [o["error"] for o in outputs] == [
        "The user did not allow bash (the consent prompt failed: RequestError). Do not retry the same "
        "call; continue another way or ask the user."
    ]
    assert not (workspace / "ran.txt").exists()


async def test_a_prompt_while_a_turn_runs_is_refused_and_cancel_ends_the_turn(
    raw_agent: Any, workspace: Path
) -> None:
    bash = {"tool_calls": [{"id": "s1", "name": "bash", "arguments": {"command": "echo hi"}}]}
    client = await raw_agent([bash, "done"])
    session_id = await client.open_session(workspace)
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    await client.send(_request(2, "session/prompt", prompt))
    await client.until("session/request_permission")  # the turn now waits for a permission nobody gives
    await client.send(_request(3, "session/prompt", prompt))
    busy = await client.answer_to(3)
    assert busy["error"]["code"] == -32600
    assert "already running" in busy["error"]["data"]["reason"]
    await client.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}})
    assert (await client.answer_to(2))["result"]["stopReason"] == "cancelled"


async def test_the_real_command_answers_initialize_before_the_sdk_is_loaded(
    tmp_path: Path, workspace: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    """Spawn to ``initialize`` answer well inside the SDK's own import time (benchmarks/startup.py)."""
    env = child_env(
        STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(write_script(tmp_path / "t.json", ["hi"]))
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",
        "-m",
        "steerable_sidecar",
        "acp",
        "--no-plugins",
        "--state-dir",
        str(tmp_path / "state"),
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    client = RawClient(process.stdout, process.stdin)
    try:
        await client.send(_INIT)
        answer = await client.answer_to(0)
        # the answer came before the SDK was loaded: a request that needs it is still answered after
        await client.send(_request(1, "session/new", {"cwd": str(workspace), "mcpServers": []}))
        assert "sessionId" in (await client.answer_to(1))["result"]
    finally:
        process.stdin.close()
        code = await asyncio.wait_for(process.wait(), 20)
    assert answer["result"] == initialize_result({})
    assert code == 0


async def test_a_cancel_request_for_the_prompt_cancels_the_turn_and_other_dollar_notes_are_dropped(
    raw_agent: Any, workspace: Path
) -> None:
    """``$/cancel_request`` (ACP's request cancellation, which the TypeScript SDK sends when a
    request is aborted) of a ``session/prompt`` is its session's ``session/cancel``; one naming
    no prompt in flight, and any other ``$/`` notification, get no answer and change nothing."""
    bash = {"tool_calls": [{"id": "s1", "name": "bash", "arguments": {"command": "echo hi"}}]}
    client = await raw_agent([bash, "done"])
    session_id = await client.open_session(workspace)
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    await client.send(_request(2, "session/prompt", prompt))
    await client.until("session/request_permission")  # the turn now waits for a permission nobody gives
    for ignored in (
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}},  # answered already
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "2"}},  # not 2
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": [2]}},
        {"jsonrpc": "2.0", "method": "$/progress", "params": {}},
    ):
        await client.send(ignored)
    await client.send(
        _request(3, "session/load", {"sessionId": "none", "cwd": str(workspace), "mcpServers": []})
    )
    assert (await client.answer_to(3))["error"]["code"] == -32002  # still serving, the turn still waits
    await client.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}})
    assert (await client.answer_to(2))["result"]["stopReason"] == "cancelled"
    assert not any("error" in m and m.get("id") is None for m in client.seen)  # nothing answered the notes


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--workspace", "/tmp"], "--workspace is not accepted"),
        (["--allow-outside-workspace"], "--allow-outside-workspace is not accepted"),
        (["--max-rounds", "0"], "--max-rounds must be at least 1"),
        (["--state-dir", "/proc/no/such"], "--state-dir /proc/no/such is not a usable directory"),
    ],
)
def test_bad_options_exit_2_before_serving(
    args: list[str], said: str, run_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    done = run_cli("acp", "--no-plugins", *args, stdin="")
    assert done.returncode == 2
    assert said in done.stderr
    assert done.stdout == ""


async def test_a_cancel_in_the_same_read_as_its_prompt_stops_the_turn_before_anything_runs(
    raw_agent: Any, workspace: Path
) -> None:
    """The prompt and its cancel arrive together: the cancel reaches the turn while its loop is
    still being assembled, so the approved command never runs; the next prompt is taken."""
    bash = {"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": "touch ran.txt"}}]}
    client = await raw_agent([bash, "done", "next"])
    session_id = await client.open_session(workspace)
    prompt = _request(
        2, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    )
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
    await client.send(json.dumps(prompt) + "\n" + json.dumps(cancel))  # one write, two lines
    assert (await client.answer_to(2))["result"]["stopReason"] == "cancelled"
    again = _request(
        3, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
    )
    await client.send(again)
    while True:  # the scripted model's first turn (the bash call) comes now: allow it
        message = await client.next()
        if message.get("method") == "session/request_permission":
            outcome = {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
            await client.send({"jsonrpc": "2.0", "id": message["id"], "result": outcome})
        elif message.get("id") == 3 and "method" not in message:
            break
    assert message["result"]["stopReason"] == "end_turn"
    assert not (workspace / "ran.txt").exists()


def _prompt(request_id: int, session_id: str, text: str = "go") -> dict[str, Any]:
    return _request(
        request_id, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )


def _cancel(session_id: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}


async def _answers(client: RawClient, ids: set[int], *, allow: bool = True) -> dict[int, dict[str, Any]]:
    """Read until each of ``ids`` is answered, allowing (or rejecting) every permission asked."""
    got: dict[int, dict[str, Any]] = {}
    while not ids <= got.keys():
        message = await client.next()
        if message.get("method") == "session/request_permission":
            option = "allow_once" if allow else "reject_once"
            outcome = {"outcome": {"outcome": "selected", "optionId": option}}
            await client.send({"jsonrpc": "2.0", "id": message["id"], "result": outcome})
        elif "method" not in message and message.get("id") in ids:
            got[message["id"]] = message
    return got


async def test_a_cancel_stops_a_prompt_still_waiting_behind_a_cancelled_turn(
    raw_agent: Any, workspace: Path
) -> None:
    """cancel, prompt, cancel in one write while a command runs: both turns end cancelled, and
    neither the first command nor the second prompt's runs to its end."""
    slow = {
        "tool_calls": [{"id": "s1", "name": "bash", "arguments": {"command": "sleep 3; echo A >> ran.txt"}}]
    }
    again = {"tool_calls": [{"id": "s2", "name": "bash", "arguments": {"command": "echo B >> ran.txt"}}]}
    client = await raw_agent([slow, "never", again, "never"])
    session_id = await client.open_session(workspace)
    await client.send(_prompt(2, session_id))
    while True:  # allow the first command and wait for it to run
        message = await client.next()
        if message.get("method") == "session/request_permission":
            outcome = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
            await client.send({"jsonrpc": "2.0", "id": message["id"], "result": outcome})
        elif message.get("params", {}).get("update", {}).get("status") == "in_progress":
            break
    frames = [_cancel(session_id), _prompt(3, session_id, "next"), _cancel(session_id)]
    await client.send("\n".join(json.dumps(f) for f in frames))
    answers = await _answers(client, {2, 3})
    assert [answers[i]["result"]["stopReason"] for i in (2, 3)] == ["cancelled", "cancelled"]
    assert not (workspace / "ran.txt").exists()


async def test_a_cancel_while_a_parked_session_boots_again_stops_its_prompt(
    raw_agent: Any, workspace: Path
) -> None:
    bash = {"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": "touch ran.txt"}}]}
    client = await raw_agent([bash, "never", "ok"], max_live_sessions=1)
    first = await client.open_session(workspace)
    await client.send(_request(5, "session/new", {"cwd": str(workspace), "mcpServers": []}))
    await client.answer_to(5)  # the first session is parked now
    await client.send(json.dumps(_prompt(6, first)) + "\n" + json.dumps(_cancel(first)))
    answers = await _answers(client, {6})
    await client.send(_prompt(7, first, "again"))
    later = await _answers(client, {7}, allow=False)
    assert answers[6]["result"]["stopReason"] == "cancelled"
    assert later[7]["result"]["stopReason"] == "end_turn"
    assert not (workspace / "ran.txt").exists()


async def test_a_request_reusing_the_id_of_one_in_flight_is_refused_and_the_first_answered_once(
    raw_agent: Any, workspace: Path
) -> None:  # SAFE-7
    bash = {"tool_calls": [{"id": "s1", "name": "bash", "arguments": {"command": "echo hi"}}]}
    client = await raw_agent([bash, "done"])
    session_id = await client.open_session(workspace)
    await client.send(_prompt(2, session_id))
    await client.until("session/request_permission")  # the turn now waits for a permission nobody gives
    await client.send(_request(2, "session/new", {"cwd": str(workspace), "mcpServers": []}))
    refused = await client.answer_to(2)
    await client.send(_cancel(session_id))
    first = await client.answer_to(2)
    await client.send(_request(2, "session/new", {"cwd": str(workspace), "mcpServers": []}))  # free again
    reused = await client.answer_to(2)
    await client.send(_request(3, "session/new", {"cwd": str(workspace), "mcpServers": []}))
    await client.answer_to(3)
    assert refused == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {
            "code": -32600,
            "message": "Invalid Request: id 2 is already in use by a request still in flight; wait for "
            "its answer or give this request another id",
        },
    }
    assert first["result"]["stopReason"] == "cancelled"
    assert "sessionId" in reused["result"]
    answers = [m for m in client.seen if m.get("id") == 2 and "method" not in m]
    assert answers == [refused, first, reused]  # the prompt was answered once, the refused one never


async def test_the_session_is_answered_before_its_slash_commands_are_announced(
    raw_agent: Any, workspace: Path
) -> None:
    """A client drops updates of a session it does not know yet: the answer goes out first."""
    client = await raw_agent(["hi"])
    await client.send(_INIT)
    initialized = await client.answer_to(0)
    assert initialized["result"]["agentCapabilities"]["sessionCapabilities"] == {"list": {}}
    await client.send(_request(1, "session/new", {"cwd": str(workspace), "mcpServers": []}))
    answer = await client.next()
    assert answer["id"] == 1 and answer["result"]["modes"]["currentModeId"] == "default"
    announced = await client.next()
    assert announced["method"] == "session/update"
    assert announced["params"]["sessionId"] == answer["result"]["sessionId"]
    assert announced["params"]["update"]["sessionUpdate"] == "available_commands_update"
