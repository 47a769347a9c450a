"""Real ``steerable session`` and ``steerable sidecar`` processes fed what a model or host should not send.

SAFE-6: arguments nested past the limit (64 levels) and frames nested past what the JSON decoder
reads (about 1,000 levels) each get an answer, with the id at the frame's top level when it has one
(read without decoding the frame), and the process goes on serving. SAFE-7: a request
reusing the id of one still in flight on the sidecar is refused; the first is answered once. The
same rules for ``steerable mcp`` are in test_mcp_protocol.py, for ``steerable acp`` in
test_acp_wire.py; the router's side in tests/test_argument_depth.py.
"""

from __future__ import annotations

import asyncio
import json
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

WAIT_S = 30


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"  # outside the workspace: a plugin there would be refused
    folder.mkdir()
    (folder / "walk_plugin.py").write_text(WALK_PLUGIN, encoding="utf-8")
    return folder


class Process:
    """A ``steerable`` process on pipes: raw lines in, JSON lines out."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def write(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()

    async def send(self, message: dict[str, Any]) -> None:
        await self.write(json.dumps({"jsonrpc": "2.0", **message}))

    async def frame(self, timeout_s: float = WAIT_S) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout_s)
        assert line, "the process closed its stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    async def rest(self) -> list[dict[str, Any]]:
        """Every frame still to come, to the end of the process's output."""
        assert self.proc.stdout is not None
        lines = await asyncio.wait_for(self.proc.stdout.read(), WAIT_S)
        return [json.loads(line) for line in lines.splitlines()]

    async def quiet_for(self, seconds: float) -> bool:
        """Whether nothing is written for ``seconds``."""
        try:
            await self.frame(seconds)
        except TimeoutError:
            return True
        return False


@asynccontextmanager
async def steerable(*args: str, env: dict[str, str], cwd: Path | None = None) -> AsyncIterator[Process]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",
        "-m",
        "steerable_sidecar",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        limit=1 << 20,
    )
    try:
        yield Process(proc)
    finally:
        if proc.returncode is None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), WAIT_S)
            except TimeoutError:
                proc.kill()
                await proc.wait()


# -- SAFE-6 -----------------------------------------------------------------------------------------


async def test_session_answers_arguments_nested_too_deeply_and_serves_on(
    workspace: Path, plugins: Path, child_env: Callable[..., dict[str, str]]
) -> None:  # SAFE-6
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugins))
    async with steerable("session", "--workspace", str(workspace), "--no-web-tools", env=env) as session:
        answers = []
        for levels in (300, 1_000, 100_000):
            await session.write(
                f'{{"id": "w{levels}", "name": "walk", "arguments": {arguments_text(levels)}}}'
            )
            answers.append(await session.frame())
        await session.write("[" * 100_000)  # not even a ToolCall: as deep as the line before
        answers.append(await session.frame())
        await session.write(f'{{"name": "walk", "arguments": {arguments_text(2_000)}, "id": "last"}}')
        answers.append(await session.frame())
        await session.write(
            f'{{"name": "walk", "arguments": {{"id": "decoy", "v": {arguments_text(2_000)}}}}}'
        )
        answers.append(await session.frame())
        await session.write(f'{{"id": 7, "name": "walk", "arguments": {arguments_text(2_000)}}}')
        answers.append(await session.frame())
        await session.write(json.dumps({"id": "ok", "name": "walk", "arguments": {"value": [[], [[]]]}}))
        answers.append(await session.frame())
        await session.write(
            json.dumps({"id": "read", "name": "read_file", "arguments": {"path": "notes.txt"}})
        )
        answers.append(await session.frame())
    undecodable = {
        "success": False,
        "needsFollowup": True,
        "error": "not a JSON line (nested too deeply to decode; tool arguments may nest at most 64 "
        "levels); send one ToolCall object per line, with flatter arguments",
        "data": {"code": "arguments_too_deep", "maxDepth": 64},
    }
    assert answers[0] == {"id": "w300", "result": too_deep(300)}
    # deeper than json.loads goes: the id at the line's top level, read without decoding it; a
    # line that is no object, an id only deeper down or one that is not a string give null
    assert answers[1:7] == [
        {"id": "w1000", "result": undecodable},
        {"id": "w100000", "result": undecodable},
        {"id": None, "result": undecodable},
        {"id": "last", "result": undecodable},
        {"id": None, "result": undecodable},
        {"id": None, "result": undecodable},
    ]
    assert answers[7] == {"id": "ok", "result": {"success": True, "data": {"walked": True}}}
    assert answers[8]["result"]["data"]["content"] == "alpha\nbeta\n"
    assert session.proc.returncode == 0


async def test_sidecar_tool_invoke_answers_deep_arguments_and_deep_frames(
    workspace: Path, plugins: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:  # SAFE-6
    env = child_env(STEERABLE_PLUGIN_DIR=str(plugins))
    args = ("sidecar", "--workspace", str(workspace), "--state-dir", str(tmp_path / "state"))
    async with steerable(*args, env=env) as sidecar:
        assert (await sidecar.frame())["method"] == "lifecycle.ready"
        invoke = '{{"jsonrpc": "2.0", "id": {}, "method": "tool.invoke", "params": {{"name": "walk", "arguments": {}}}}}'
        await sidecar.write(invoke.format(1, arguments_text(300)))
        shallow = await sidecar.frame()
        deep = []
        for request_id, levels in ((2, 1_000), (3, 100_000)):
            await sidecar.write(invoke.format(request_id, arguments_text(levels)))
            deep.append(await sidecar.frame())
        await sidecar.write("[" * 100_000)
        deep.append(await sidecar.frame())
        for frame in (
            deep_request("last", 5_000, id_last=True),  # after the deep params
            deep_request(None, 5_000),  # an id in the params only
            deep_request([5], 5_000),  # not a valid id
            deep_request(5, 5_000)[:-1],  # the frame does not end: its top level is not JSON
        ):
            await sidecar.write(frame)
            deep.append(await sidecar.frame())
        await sidecar.send(
            {"id": 4, "method": "tool.invoke", "params": {"name": "walk", "arguments": {"value": []}}}
        )
        after = await sidecar.frame()
    assert shallow == {"jsonrpc": "2.0", "id": 1, "result": too_deep(300)}
    # a frame deeper than the decoder goes: JSON-RPC's parse error, with the id at its top level,
    # read without decoding it; null when there is none there, or the top level is not JSON
    assert deep == [
        parse_error_too_deep(2),
        parse_error_too_deep(3),
        PARSE_ERROR_TOO_DEEP,
        parse_error_too_deep("last"),
        PARSE_ERROR_TOO_DEEP,
        PARSE_ERROR_TOO_DEEP,
        PARSE_ERROR_TOO_DEEP,
    ]
    assert after == {"jsonrpc": "2.0", "id": 4, "result": {"success": True, "data": {"walked": True}}}
    assert sidecar.proc.returncode == 0


# -- SAFE-7 -----------------------------------------------------------------------------------------


async def test_sidecar_refuses_a_second_request_with_the_id_of_one_in_flight(
    workspace: Path, tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:  # SAFE-7
    args = ("sidecar", "--workspace", str(workspace), "--state-dir", str(tmp_path / "state"), "--no-plugins")
    async with steerable(*args, env=child_env()) as sidecar:
        assert (await sidecar.frame())["method"] == "lifecycle.ready"
        bash = {"name": "bash", "arguments": {"command": GATED_BASH}, "consentGranted": True}
        await sidecar.send({"id": 7, "method": "tool.invoke", "params": bash})
        await sidecar.send({"id": 7, "method": "system.ping"})
        refused = await sidecar.frame()
        await sidecar.send({"id": "7", "method": "system.ping"})  # a string id is another id
        other = await sidecar.frame()
        still_running = await sidecar.quiet_for(0.5)
        (workspace / "gate").touch()
        first = await sidecar.frame()
        await sidecar.send({"id": 7, "method": "system.ping"})  # answered: the id is free again
        reused = await sidecar.frame()
        await sidecar.send({"id": 8, "method": "system.shutdown"})
        shut = await sidecar.frame()
        after = await sidecar.rest()
    assert refused == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32600,
            "message": "Invalid Request: id 7 is already in use by a request still in flight; wait for "
            "its answer or give this request another id",
        },
    }
    assert other["id"] == "7" and other["result"]["pong"] is True
    assert still_running
    assert first["id"] == 7 and first["result"]["success"] is True
    assert first["result"]["data"]["stdout"] == "first\n"
    assert reused["id"] == 7 and reused["result"]["pong"] is True
    assert shut["id"] == 8 and "result" in shut
    assert after == []  # nothing more: the first request was answered exactly once
