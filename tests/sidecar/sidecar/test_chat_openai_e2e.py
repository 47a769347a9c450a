"""Streamed chats: a real sidecar subprocess, the real OpenAI-compatible provider, a local server
speaking the real SSE wire format (tests/fake_openai.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAI
from steerable_agent_runtime import ToolResult
from steerable_sidecar.sidecar._client import SidecarClient
from steerable_sidecar.sidecar.protocol import HostInvokeParams

KEY = "sk-test-never-logged-0123456789"


def env_for(fake: FakeOpenAI, child_env: Callable[..., dict[str, str]]) -> dict[str, str]:
    return child_env(
        STEERABLE_PROVIDER="openai",
        STEERABLE_MODEL="fake-model",
        STEERABLE_BASE_URL=fake.base_url,
        STEERABLE_API_KEY=KEY,
        STEERABLE_LOG_LEVEL="DEBUG",
    )


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


async def test_streamed_chat_self_heals_after_a_needs_followup_failure(
    fake_openai: FakeOpenAI, tmp_path: Path, child_env: Any
) -> None:  # ENV-7, FILE-8
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('helo')\n")
    fake_openai.script(
        [
            # 1: a blind overwrite of an unread file: the gate refuses, with needsFollowup
            {
                "tool_calls": [
                    {"id": "w1", "name": "write_file", "arguments": '{"path": "app.py", "content": "x"}'}
                ]
            },
            # 2: the model heals: reads first
            {
                "text": "I will read it first.",
                "tool_calls": [{"id": "r1", "name": "read_file", "arguments": '{"path": "app.py"}'}],
            },
            # 3: then edits
            {
                "tool_calls": [
                    {
                        "id": "e1",
                        "name": "edit_file",
                        "arguments": '{"path": "app.py", "old_string": "helo", "new_string": "hello"}',
                    }
                ]
            },
            {"text": "Fixed the typo.", "usage": {"prompt_tokens": 50, "completion_tokens": 5}},
        ]
    )
    async with await SidecarClient.start(
        workspace=ws, state_dir=tmp_path / "state", env=env_for(fake_openai, child_env)
    ) as sidecar:
        handle = sidecar.start_chat("fix the typo in app.py", session_id="heal")
        events = [event async for event in handle.events()]
        summary = await handle.result()
        stderr = sidecar.stderr_tail
    assert summary["outcome"] == "completed" and summary["rounds"] == 4 and summary["toolCalls"] == 3
    assert summary["text"] == "Fixed the typo."
    assert (ws / "app.py").read_text() == "print('hello')\n"
    text = "".join(e["text"] for e in events if e["type"] == "text")
    assert text == "I will read it first.Fixed the typo."  # streamed in pieces
    assert len([e for e in events if e["type"] == "text"]) > 2
    # the model saw the gate's refusal as a needsFollowup failure naming the fix
    second = fake_openai.requests[1].body
    refusal = tool_messages(second)[0]
    assert (
        refusal["success"] is False
        and refusal["needsFollowup"] is True
        and refusal["data"]["code"] == "not_read"
    )
    assert "read it first" in refusal["error"]
    assert second["stream"] is True and [t["function"]["name"] for t in second["tools"]][:3] == [
        "read_file",
        "write_file",
        "edit_file",
    ]
    assert fake_openai.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in stderr  # debug logging on, key never logged
    record = (tmp_path / "state" / "sessions" / "heal.jsonl").read_text()
    assert record.count('"role":"tool"') == 3


async def test_streamed_chat_ends_on_a_terminal_result_after_recording_the_whole_batch(
    fake_openai: FakeOpenAI, tmp_path: Path, child_env: Any
) -> None:  # ENV-6, ENV-8
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.script(
        [
            {
                "tool_calls": [
                    {"id": "a", "name": "list_dir", "arguments": '{"path": "."}'},
                    {"id": "b", "name": "submit", "arguments": '{"answer": "42"}'},
                    {"id": "c", "name": "glob", "arguments": '{"pattern": "*"}'},
                ]
            },
            {"text": "never requested"},
        ]
    )
    async with await SidecarClient.start(
        workspace=ws, state_dir=tmp_path / "state", env=env_for(fake_openai, child_env)
    ) as sidecar:
        inventory = [t for t in await sidecar.list_tools() if t["name"] in {"list_dir", "glob"}]
        submit = {
            "name": "submit",
            "description": "Submit the final answer.",
            "parameters": {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
            },
            "mode": "external",
        }

        async def host_tool(params: HostInvokeParams) -> ToolResult:
            if params["name"] == "submit":
                return ToolResult(success=False, terminal=True, error="grader rejected the answer")
            return ToolResult(success=True, data={"entries": []})

        sidecar.on_tool_invoke = host_tool
        summary = await sidecar.chat(
            "answer", session_id="term", tools_via_host=True, tools=[*inventory, submit]
        )
    assert summary["outcome"] == "terminal" and summary["rounds"] == 1 and summary["toolCalls"] == 3
    assert summary["terminalResult"] == {
        "success": False,
        "terminal": True,
        "error": "grader rejected the answer",
    }
    assert len(fake_openai.requests) == 1  # the run ended: no second model call
    lines = [
        json.loads(line) for line in (tmp_path / "state" / "sessions" / "term.jsonl").read_text().splitlines()
    ]
    answered = [
        e["message"]["tool_call_id"]
        for e in lines
        if e["type"] == "message" and e["message"]["role"] == "tool"
    ]
    assert answered == ["a", "b", "c"]  # every call of the batch recorded before the run ended
    assert lines[-1]["type"] == "run" and lines[-1]["run"]["outcome"] == "terminal"


async def test_provider_http_error_ends_the_chat_with_error_and_no_key(
    fake_openai: FakeOpenAI, tmp_path: Path, child_env: Any
) -> None:
    fake_openai.script([{"status": 401, "body": {"error": {"message": f"bad key {KEY}"}}}])
    async with await SidecarClient.start(
        workspace=tmp_path,
        state_dir=tmp_path.parent / f"{tmp_path.name}-state",
        env=env_for(fake_openai, child_env),
    ) as sidecar:
        summary = await sidecar.chat("hi")
        stderr = sidecar.stderr_tail
    assert summary["outcome"] == "error" and "401" in summary["error"]
    assert KEY not in summary["error"] and KEY not in stderr
