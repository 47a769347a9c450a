"""A real ``steerable sidecar`` subprocess driven by the host client (SidecarClient).

The model is the scripted provider (``STEERABLE_PROVIDER=scripted``) here; the tests against the
local OpenAI-compatible server are in ``test_chat_openai_e2e.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import RemoteError, ToolResult, version_of
from steerable_sidecar.sidecar._client import SidecarClient, SidecarStartError


def read_call(path: str, id: str) -> dict[str, Any]:
    return {"id": id, "name": "read_file", "arguments": json.dumps({"path": path})}


@pytest.fixture
def start(tmp_path: Path, workspace: Path, child_env: Callable[..., dict[str, str]]) -> Callable[..., Any]:
    """Start a sidecar whose scripted model plays ``turns``."""
    clients: list[SidecarClient] = []

    async def _start(turns: list[Any] | None = None, **env: str) -> SidecarClient:
        script = tmp_path / f"turns-{len(clients)}.json"
        script.write_text(json.dumps(turns or []))
        client = await SidecarClient.start(
            workspace=workspace,
            state_dir=tmp_path / "state",
            args=["--no-plugins"],  # a fixed inventory; plugins at boot are tested in test_boot.py
            env=child_env(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script), **env),
        )
        clients.append(client)
        return client

    return _start


async def test_handshake_ready_ping_and_full_inventory(start: Any, workspace: Path) -> None:
    async with await start() as sidecar:
        assert sidecar.ready["protocolVersion"] == 1 and sidecar.ready["workspace"] == str(workspace)
        assert sidecar.ready["pid"] == sidecar.process.pid
        assert await sidecar.ping() == {"pong": True, "pid": sidecar.process.pid}
        tools = {t["name"]: t for t in await sidecar.list_tools()}
        assert set(tools) == {
            "read_file",
            "write_file",
            "edit_file",
            "apply_patch",
            "list_dir",
            "glob",
            "grep",
            "bash",
            "web_fetch",
        }
        assert tools["read_file"]["mode"] == "read" and tools["read_file"]["exposure"] == "direct"
        assert tools["bash"]["mode"] == "local" and tools["bash"]["exposure"] == "direct"
        assert tools["edit_file"]["parameters"]["type"] == "object"
        # WEB-3, WEB-5: web_fetch needs no configuration; web_search has no provider here (no key),
        # so it is not advertised
        assert tools["web_fetch"]["mode"] == "read" and tools["web_fetch"]["exposure"] == "direct"
        assert "web_search" not in tools
        assert await sidecar.shutdown() == 0


async def test_read_then_edit_with_cas_over_tool_invoke(
    start: Any, workspace: Path
) -> None:  # FILE-2, FILE-4, FILE-8
    async with await start() as sidecar:
        blind = await sidecar.invoke("write_file", {"path": "notes.txt", "content": "x"})
        assert (
            blind.success is False
            and blind.needs_followup
            and blind.data
            and blind.data["code"] == "not_read"
        )
        read = await sidecar.invoke("read_file", {"path": "notes.txt"})
        assert read.success and read.data and read.data["version"] == version_of(b"alpha\nbeta\n")
        (workspace / "notes.txt").write_text("alpha\nBETA\n")  # changed outside the session
        stale = await sidecar.invoke(
            "edit_file", {"path": "notes.txt", "old_string": "alpha", "new_string": "A"}
        )
        assert stale.success is False and stale.data and stale.data["code"] == "conflict"
        await sidecar.invoke("read_file", {"path": "notes.txt"})
        edit = await sidecar.invoke(
            "edit_file", {"path": "notes.txt", "old_string": "alpha", "new_string": "A"}
        )
        assert edit.success, edit
        assert (workspace / "notes.txt").read_text() == "A\nBETA\n"
        again = await sidecar.invoke(
            "edit_file", {"path": "notes.txt", "old_string": "A\nB", "new_string": "a\nB"}
        )
        assert again.success  # the own write refreshed the state: iterative editing works


async def test_tool_invoke_errors_are_results_and_bad_params_are_rpc_errors(start: Any) -> None:
    async with await start() as sidecar:
        unknown = await sidecar.invoke("read_fil", {"path": "x"})
        assert unknown.success is False and unknown.needs_followup
        assert (
            unknown.error == "Unknown tool 'read_fil'. Did you mean: read_file, edit_file, write_file? "
            "Call one of the offered tools."
        )
        with pytest.raises(RemoteError) as info:
            await sidecar.peer.request("tool.invoke", {"arguments": {}})
        assert info.value.code == -32602
        with pytest.raises(RemoteError) as missing:
            await sidecar.peer.request("tool.nope")
        assert missing.value.code == -32601


async def test_ask_user_answered_over_the_reverse_channel(start: Any) -> None:  # ASK-1, ASK-5, ASK-6
    ask = {
        "id": "q1",
        "name": "ask_user",
        "arguments": json.dumps(
            {
                "questions": [
                    {
                        "name": "lang",
                        "message": "Which language?",
                        "type": "list",
                        "choices": ["Python", "Go"],
                    }
                ]
            }
        ),
    }
    async with await start([{"tool_calls": [ask]}, "Using Go."]) as sidecar:
        seen: list[dict[str, Any]] = []

        async def answer(payload: dict[str, Any]) -> dict[str, Any]:
            seen.append(payload)
            return {"lang": "Go"}

        sidecar.on_ask_user = answer
        handle = sidecar.start_chat("pick a language", ask_user=True, session_id="ask1")
        summary = await handle.result()
        assert summary["outcome"] == "completed" and summary["text"] == "Using Go."
        # the host only ever sees the canonical payload
        assert seen == [
            {
                "chatId": handle.chat_id,
                "intro": "",
                "questions": [
                    {"id": "lang", "text": "Which language?", "type": "select", "options": ["Python", "Go"]}
                ],
            }
        ]
        results = [e["result"] for e in handle.events_seen if e["type"] == "tool_result"]
        assert results == [{"success": True, "data": {"answers": {"lang": "Go"}}}]


async def test_ask_user_is_offered_only_when_the_chat_opts_in(start: Any, tmp_path: Path) -> None:  # ASK-1
    ask = {"id": "q1", "name": "ask_user", "arguments": '{"questions": [{"id": "a", "text": "?"}]}'}
    async with await start([{"tool_calls": [ask]}, "ok"]) as sidecar:
        handle = sidecar.start_chat("go")
        await handle.result()
        result = next(e["result"] for e in handle.events_seen if e["type"] == "tool_result")
        assert result["success"] is False and result["data"]["code"] == "unknown_tool"


async def test_ask_user_cancelled_records_empty_answers(start: Any) -> None:  # ASK-6
    ask = {
        "id": "q1",
        "name": "ask_user",
        "arguments": '{"intro": "Hi", "questions": [{"id": "a", "text": "Name?"}]}',
    }
    async with await start([{"tool_calls": [ask]}, "went on"]) as sidecar:

        async def cancel(payload: dict[str, Any]) -> None:
            return None

        sidecar.on_ask_user = cancel
        handle = sidecar.start_chat("go", ask_user=True)
        summary = await handle.result()
        assert summary["outcome"] == "completed" and summary["text"] == "went on"
        result = next(e["result"] for e in handle.events_seen if e["type"] == "tool_result")
        assert result["success"] is True
        assert result["data"] == {"answers": {}, "cancelled": True, "reason": "cancelled"}


async def test_ask_user_with_the_host_gone_never_hangs(start: Any, tmp_path: Path) -> None:  # ASK-6
    ask = {"id": "q1", "name": "ask_user", "arguments": '{"questions": [{"id": "a", "text": "Name?"}]}'}
    async with await start([{"tool_calls": [ask]}, "never reached"]) as sidecar:
        asked = asyncio.Event()

        async def vanish(payload: dict[str, Any]) -> None:
            asked.set()
            await asyncio.sleep(3600)

        sidecar.on_ask_user = vanish
        sidecar.start_chat("go", ask_user=True, session_id="gone")
        await asyncio.wait_for(asked.wait(), 20)
        # the host closes the sidecar's stdin mid-question: the question fails as unreachable, so
        # the record holds the empty answers the spec asks for (not "cancelled by the user"); then
        # the chat stops (nobody is there to act for) before another model round, and the
        # sidecar exits; nothing hangs
        code = await asyncio.wait_for(sidecar.aclose(timeout_s=20), 30)
        assert code == 0
    record = tmp_path / "state" / "sessions" / "gone.jsonl"
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    tools = [e["message"] for e in lines if e["type"] == "message" and e["message"]["role"] == "tool"]
    assert [t["tool_call_id"] for t in tools] == ["q1"]
    answered = json.loads(tools[0]["content"])
    assert answered == {
        "success": True,
        "message": "The user could not be reached and gave no answer; continue without the answers.",
        "data": {"answers": {}, "cancelled": True, "reason": "error"},
    }
    assert [e["message"]["role"] for e in lines if e["type"] == "message"][-1] == "tool"  # no round 2
    assert lines[-1]["run"]["outcome"] == "cancelled"


async def test_ask_user_with_an_unreachable_host_handler_records_empty_answers(start: Any) -> None:  # ASK-6
    ask = {"id": "q1", "name": "ask_user", "arguments": '{"questions": [{"id": "a", "text": "Name?"}]}'}
    async with await start([{"tool_calls": [ask]}, "went on without it"]) as sidecar:

        async def broken(payload: dict[str, Any]) -> None:
            raise ConnectionError("the question card service is down")

        sidecar.on_ask_user = broken
        handle = sidecar.start_chat("go", ask_user=True)
        summary = await handle.result()
        assert summary["outcome"] == "completed" and summary["text"] == "went on without it"
        result = next(e["result"] for e in handle.events_seen if e["type"] == "tool_result")
        assert result["success"] is True
        assert result["data"] == {"answers": {}, "cancelled": True, "reason": "error"}


async def test_tools_via_host_host_runs_read_file_and_ask_user_stays_local(
    start: Any, workspace: Path
) -> None:  # ASK-7
    turns = [
        {"tool_calls": [read_call("host.txt", "r1")]},
        {
            "tool_calls": [
                {"id": "q1", "name": "ask_user", "arguments": '{"questions": [{"id": "ok", "text": "OK?"}]}'}
            ]
        },
        "finished",
    ]
    async with await start(turns) as sidecar:
        host_tools = [t for t in await sidecar.list_tools() if t["name"] == "read_file"]
        invoked: list[dict[str, Any]] = []
        asked: list[dict[str, Any]] = []

        async def run_tool(params: dict[str, Any]) -> ToolResult:
            invoked.append(params)
            return ToolResult(
                success=True, data={"path": "host.txt", "content": "from the host", "version": "h1"}
            )

        async def answer(payload: dict[str, Any]) -> dict[str, Any]:
            asked.append(payload)
            return {"ok": "yes"}

        sidecar.on_tool_invoke = run_tool
        sidecar.on_ask_user = answer
        handle = sidecar.start_chat(
            "read host.txt",
            tools_via_host=True,
            tools=[*host_tools, {"name": "ask_user", "parameters": {"type": "object"}}],
            ask_user=True,
        )
        summary = await handle.result()
        assert summary["outcome"] == "completed"
        # the host executed read_file (a file that does not exist in the sidecar's workspace) ...
        assert invoked == [
            {
                "id": "r1",
                "name": "read_file",
                "arguments": {"path": "host.txt"},
                "context": {"chatId": handle.chat_id},
            }
        ]
        assert not (workspace / "host.txt").exists()
        # ... and ask_user was answered by the sidecar's own router, never forwarded as tool.invoke
        assert len(asked) == 1 and all(p["name"] != "ask_user" for p in invoked)
        results = [e["result"] for e in handle.events_seen if e["type"] == "tool_result"]
        assert results[0]["data"]["content"] == "from the host"
        assert results[1]["data"] == {"answers": {"ok": "yes"}}


async def test_tools_via_host_arguments_are_validated_before_forwarding(start: Any) -> None:
    turns = [{"tool_calls": [{"id": "bad", "name": "read_file", "arguments": '{"path": 7}'}]}, "ok"]
    async with await start(turns) as sidecar:
        host_tools = [t for t in await sidecar.list_tools() if t["name"] == "read_file"]
        invoked: list[dict[str, Any]] = []

        async def run_tool(params: dict[str, Any]) -> ToolResult:
            invoked.append(params)
            return ToolResult(success=True)

        sidecar.on_tool_invoke = run_tool
        handle = sidecar.start_chat("go", tools_via_host=True, tools=host_tools)
        await handle.result()
        result = next(e["result"] for e in handle.events_seen if e["type"] == "tool_result")
        assert invoked == [] and result["success"] is False and result["needsFollowup"] is True
        assert "path" in result["error"]


async def test_resume_reseeds_the_host_read_state(start: Any, tmp_path: Path) -> None:  # FILE-7
    turns = [{"tool_calls": [read_call("notes.txt", "r1")]}, "read", "second turn"]
    async with await start(turns) as sidecar:
        host_tools = [t for t in await sidecar.list_tools() if t["name"] in {"read_file", "edit_file"}]

        async def run_tool(params: dict[str, Any]) -> ToolResult:
            return ToolResult(
                success=True, data={"path": "notes.txt", "content": "alpha", "version": "v-host-1"}
            )

        sidecar.on_tool_invoke = run_tool
        first = await sidecar.chat("read notes", session_id="resume1", tools_via_host=True, tools=host_tools)
        assert first["outcome"] == "completed" and sidecar.seeds == []
        await sidecar.shutdown()
    # a new process resumes the session: it rebuilds the read state from the record and pushes it
    async with await start(["resumed"]) as sidecar:
        sidecar.on_tool_invoke = run_tool
        second = await sidecar.chat("continue", session_id="resume1", tools_via_host=True, tools=host_tools)
        assert second["outcome"] == "completed" and second["text"] == "resumed"
        assert sidecar.seeds == [{"sessionId": "resume1", "readState": {"notes.txt": "v-host-1"}}]


async def test_resume_of_a_local_chat_keeps_history_and_read_state(
    start: Any, workspace: Path
) -> None:  # FILE-7
    edit = {
        "id": "e1",
        "name": "edit_file",
        "arguments": '{"path": "notes.txt", "old_string": "beta", "new_string": "B"}',
    }
    async with await start([{"tool_calls": [read_call("notes.txt", "r1")]}, "read"]) as sidecar:
        await sidecar.chat("read", session_id="local1")
    async with await start([{"tool_calls": [edit]}, "edited"]) as sidecar:
        handle = sidecar.start_chat("edit without re-reading", session_id="local1")
        summary = await handle.result()
        result = next(e["result"] for e in handle.events_seen if e["type"] == "tool_result")
        assert result["success"] is True, result  # the gate passed: state re-seeded from the record
        assert summary["outcome"] == "completed" and (workspace / "notes.txt").read_text() == "alpha\nB\n"


async def test_chat_cancel_stops_a_running_chat(start: Any) -> None:
    ask = {"id": "q1", "name": "ask_user", "arguments": '{"questions": [{"id": "a", "text": "?"}]}'}
    async with await start([{"tool_calls": [ask]}, "never"]) as sidecar:
        asked = asyncio.Event()

        async def wait_forever(payload: dict[str, Any]) -> None:
            asked.set()
            await asyncio.sleep(3600)

        sidecar.on_ask_user = wait_forever
        handle = sidecar.start_chat("go", ask_user=True)
        await asyncio.wait_for(asked.wait(), 20)
        assert await handle.cancel() is True
        summary = await asyncio.wait_for(handle.result(), 20)
        assert summary["outcome"] == "cancelled"
        assert await sidecar.peer.request("agent.chat.cancel", {"chatId": "nope"}) == {"cancelled": False}


async def test_chat_without_a_configured_provider_names_the_variable(
    tmp_path: Path, workspace: Path, child_env: Any
) -> None:
    env = child_env(STEERABLE_PROVIDER="openai")
    env.pop("STEERABLE_API_KEY", None)
    async with await SidecarClient.start(workspace=workspace, state_dir=tmp_path / "s", env=env) as sidecar:
        with pytest.raises(RemoteError) as info:
            await sidecar.chat("hi")
        assert "STEERABLE_MODEL" in info.value.message or "STEERABLE_API_KEY" in info.value.message
        assert info.value.data["type"] == "ConfigError"
        assert (await sidecar.invoke("list_dir", {})).success  # tools still served


async def test_boot_failure_is_reported_with_stderr(tmp_path: Path, child_env: Any) -> None:
    with pytest.raises(SidecarStartError, match="not a directory|does not exist|invalid_workspace"):
        await SidecarClient.start(workspace=tmp_path / "missing", env=child_env())


async def test_stdin_eof_exits_cleanly(start: Any) -> None:
    sidecar = await start()
    assert await sidecar.aclose() == 0
    assert sidecar.process.returncode == 0


def test_sidecar_stdout_carries_only_frames(run_cli: Any, workspace: Path, tmp_path: Path) -> None:
    frames = "\n".join(
        [
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "system.ping"}),
            "not json",
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tool.invoke",
                    "params": {"name": "glob", "arguments": {"pattern": "*.txt"}},
                }
            ),
        ]
    )
    proc = run_cli(
        "sidecar", "--workspace", str(workspace), "--state-dir", str(tmp_path / "s"), stdin=frames + "\n"
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[0]["method"] == "lifecycle.ready" and "id" not in lines[0]
    by_id = {line.get("id"): line for line in lines[1:]}
    assert by_id[1]["result"]["pong"] is True
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[2]["result"]["data"]["files"] == ["notes.txt"]
