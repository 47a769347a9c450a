"""The sidecar's methods in-process (a Sidecar and a host JsonRpcPeer over real OS pipes).

Covers what needs a custom router (a consent-mode tool), trace context, and refusals; the
subprocess end-to-end flows are in test_sidecar_e2e.py.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import ConfigError, RemoteError, ToolRouter
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_agent_runtime.trace import TraceSpan
from steerable_sidecar.rpc._peer import JsonRpcPeer, open_fd_streams
from steerable_sidecar.sidecar._server import Sidecar, SidecarConfig
from waiting import eventually


class Pair:
    def __init__(
        self,
        sidecar: Sidecar,
        host: JsonRpcPeer,
        runner: asyncio.Task[None],
        provider: ScriptedProvider,
        calls: list[str],
    ):
        self.sidecar, self.host, self.runner, self.provider = sidecar, host, runner, provider
        self.calls = calls  # the commands the sidecar's shell_run tool ran
        self.slow_reads = 0  # the read_slowly calls started
        self.ready: list[Any] = []
        self.events: list[dict[str, Any]] = []


@pytest.fixture
async def pair(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    turns = getattr(request, "param", [])
    a_read, a_write = os.pipe()  # host -> sidecar
    b_read, b_write = os.pipe()  # sidecar -> host
    s_reader, s_writer = await open_fd_streams(a_read, b_write)
    h_reader, h_writer = await open_fd_streams(b_read, a_write)
    router = ToolRouter()
    calls: list[str] = []

    @router.tool
    async def shell_run(command: str) -> dict[str, Any]:
        """Run a command (local mode: needs consent)."""
        calls.append(command)
        return {"ran": command}

    @router.tool
    async def read_note() -> str:
        """Read-only."""
        return "note"

    @router.tool
    async def read_slowly(ms: int) -> str:
        """Read-only, slow."""
        result.slow_reads += 1  # the Pair made below
        await asyncio.sleep(ms / 1000)
        return "late note"

    provider = ScriptedProvider(turns)
    config = SidecarConfig(
        workspace=tmp_path, state_dir=tmp_path / "state", provider_factory=lambda: provider
    )
    sidecar = Sidecar(JsonRpcPeer(s_reader, s_writer, name="sidecar"), config, router=router)
    host = JsonRpcPeer(h_reader, h_writer, name="host")
    result = Pair(sidecar, host, asyncio.create_task(sidecar.run()), provider, calls)

    async def on_ready(params: Any) -> None:
        result.ready.append(params)

    async def on_event(params: Any) -> None:
        result.events.append(params["event"])

    host.add_notification("lifecycle.ready", on_ready)
    host.add_notification("agent.chat.event", on_event)
    serving = asyncio.create_task(host.serve())
    yield result
    h_writer.close()  # type: ignore[attr-defined]
    await asyncio.wait_for(result.runner, 10)
    await host.aclose()
    await asyncio.gather(serving, return_exceptions=True)
    s_writer.close()  # type: ignore[attr-defined]


def _approve_all_and_record(pair: Pair) -> list[Any]:
    """The host answers every ``approval.request`` yes; returns the list of prompts it got."""
    prompts: list[Any] = []

    async def approval(params: Any) -> dict[str, Any]:
        prompts.append(params)
        return {"approved": True}

    pair.host.add_method("approval.request", approval)
    return prompts


async def test_local_mode_tool_over_tool_invoke_needs_consent_granted(pair: Pair) -> None:  # MODE-2, MODE-5
    refused = await pair.host.request("tool.invoke", {"name": "shell_run", "arguments": {"command": "ls"}})
    assert refused == {
        "success": False,
        "needsFollowup": True,
        "error": "shell_run is a local-mode tool: ask the user, then send the call again with consentGranted: true",
        "data": {"code": "consent_required", "mode": "local"},
    }
    assert pair.calls == []
    granted = await pair.host.request(
        "tool.invoke", {"name": "shell_run", "arguments": {"command": "ls"}, "consentGranted": True}
    )
    assert granted == {"success": True, "data": {"ran": "ls"}}
    read = await pair.host.request("tool.invoke", {"name": "read_note", "arguments": {}})
    assert read == {"success": True, "data": {"value": "note"}}  # read mode: no consent needed


async def test_tool_invoke_context_goes_to_the_trace_span_not_the_call(pair: Pair) -> None:  # ENV-3
    spans: list[TraceSpan] = []
    original = pair.sidecar.router.trace

    def capture(span: TraceSpan) -> None:
        assert original is not None
        original(span)
        spans.append(span)

    pair.sidecar.router.trace = capture
    await pair.host.request(
        "tool.invoke",
        {"id": "c9", "name": "read_note", "arguments": {}, "context": {"turn": 3, "ui": "panel"}},
    )
    assert spans[0].call_id == "c9" and spans[0].attrs["context"] == {"turn": 3, "ui": "panel"}


async def test_unknown_param_fields_are_invalid_params(pair: Pair) -> None:
    with pytest.raises(RemoteError) as info:
        await pair.host.request("tool.invoke", {"name": "read_note", "arguments": {}, "extra": 1})
    assert info.value.code == -32602


@pytest.mark.parametrize(
    "pair",
    [
        [
            {"tool_calls": [{"id": "s1", "name": "shell_run", "arguments": '{"command": "rm -rf build"}'}]},
            "done",
        ]
    ],
    indirect=True,
)
async def test_chat_asks_the_host_before_a_local_mode_call(pair: Pair) -> None:  # MODE-2, MODE-5
    prompts = _approve_all_and_record(pair)
    summary = await pair.host.request("agent.chat.stream", {"chatId": "c1", "message": "clean"})
    assert summary["outcome"] == "completed"
    assert prompts == [
        {
            "chatId": "c1",
            "call": {"id": "s1", "name": "shell_run", "arguments": {"command": "rm -rf build"}},
            "mode": "local",
        }
    ]
    assert pair.calls == ["rm -rf build"]


@pytest.mark.parametrize(
    "pair",
    [[{"tool_calls": [{"id": "s1", "name": "shell_run", "arguments": '{"cmd": "rm -rf build"}'}]}, "done"]],
    indirect=True,
)
async def test_chat_validates_a_local_mode_call_before_asking_the_host(pair: Pair) -> None:  # MODE-5
    prompts = _approve_all_and_record(pair)
    summary = await pair.host.request("agent.chat.stream", {"chatId": "c1", "message": "clean"})
    result = next(e["result"] for e in pair.events if e["type"] == "tool_result")
    assert result["needsFollowup"] is True and result["data"]["code"] == "invalid_arguments"
    assert prompts == []  # the model gets its validation error; nobody is asked about it
    assert summary["outcome"] == "completed" and pair.calls == []


async def test_tool_invoke_answers_invalid_arguments_before_consent(pair: Pair) -> None:  # MODE-2
    result = await pair.host.request("tool.invoke", {"name": "shell_run", "arguments": {"cmd": "ls"}})
    assert result["data"]["code"] == "invalid_arguments"


@pytest.mark.parametrize(
    "pair",
    [[{"tool_calls": [{"id": "s1", "name": "shell_run", "arguments": '{"command": "x"}'}]}, "done"]],
    indirect=True,
)
async def test_chat_without_an_approval_handler_on_the_host_denies(pair: Pair) -> None:
    summary = await pair.host.request("agent.chat.stream", {"message": "go"})
    result = next(e["result"] for e in pair.events if e["type"] == "tool_result")
    assert result["data"] == {"code": "consent_denied", "mode": "local"}
    assert "the consent prompt failed: RemoteError" in result["error"]
    assert summary["outcome"] == "completed" and pair.calls == []


@pytest.mark.parametrize(
    "pair",
    [[{"tool_calls": [{"id": "s1", "name": "shell_run", "arguments": '{"command": "x"}'}]}, "done"]],
    indirect=True,
)
async def test_auto_approve_runs_without_a_prompt(pair: Pair) -> None:
    summary = await pair.host.request("agent.chat.stream", {"message": "go", "autoApprove": True})
    assert summary["outcome"] == "completed" and pair.calls == ["x"]


async def test_chat_param_errors(pair: Pair) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "needs 'message'"),
        ({"message": "x", "toolsViaHost": True}, "toolsViaHost needs 'tools'"),
        ({"message": "x", "sessionId": "../escape"}, "invalid sessionId"),
        (
            {"message": "x", "toolsViaHost": True, "tools": [{"description": "nameless"}]},
            "needs a string 'name'",
        ),
    ]
    for params, fragment in cases:
        with pytest.raises(RemoteError) as info:
            await pair.host.request("agent.chat.stream", params)
        assert fragment in info.value.message, (params, info.value.message)
        assert info.value.code == -32602  # bad params get the standard JSON-RPC code
    with pytest.raises(RemoteError) as bad:
        await pair.host.request("agent.chat.stream", {"message": "x", "maxRounds": 0})
    assert bad.value.code == -32602


@pytest.mark.parametrize(
    "pair",
    [[{"tool_calls": [{"id": "s1", "name": "shell_run", "arguments": '{"command": "x"}'}]}, "one", "two"]],
    indirect=True,
)
async def test_a_session_runs_one_chat_at_a_time_and_chat_ids_are_unique(pair: Pair, tmp_path: Path) -> None:
    # a resumable session exists, so the first chat awaits its record load before running
    first = await pair.host.request(
        "agent.chat.stream", {"message": "a", "sessionId": "s", "autoApprove": True}
    )
    assert first["outcome"] == "completed"
    gate = asyncio.Event()

    async def approval(params: Any) -> dict[str, Any]:
        await gate.wait()
        return {"approved": True}

    pair.host.add_method("approval.request", approval)
    pair.provider._turns.append(
        {"tool_calls": [{"id": "s2", "name": "shell_run", "arguments": '{"command": "y"}'}]}
    )
    pair.provider._turns.append("three")
    both = [
        asyncio.create_task(
            pair.host.request("agent.chat.stream", {"chatId": "dup", "message": "b", "sessionId": "s"})
        ),
        asyncio.create_task(
            pair.host.request("agent.chat.stream", {"chatId": "dup", "message": "c", "sessionId": "S"})
        ),
    ]
    done, _ = await asyncio.wait(both, timeout=5, return_when=asyncio.FIRST_EXCEPTION)
    refused = [t for t in done if t.exception() is not None]
    assert len(refused) == 1 and "already running" in str(refused[0].exception())
    gate.set()
    results = await asyncio.gather(*both, return_exceptions=True)
    assert sum(isinstance(r, dict) for r in results) == 1
    roles = [
        m["role"]
        for m in __import__("steerable_agent_runtime")
        .DurableRecord(tmp_path / "state" / "sessions" / "s.jsonl")
        .messages()
    ]
    assert roles.count("user") == 2  # the refused chat wrote nothing


async def test_cancel_before_the_loop_starts(pair: Pair) -> None:
    chat = asyncio.create_task(pair.host.request("agent.chat.stream", {"chatId": "early", "message": "x"}))
    for _ in range(200):
        if "early" in pair.sidecar._chats:
            break
        await asyncio.sleep(0)
    assert await pair.host.request("agent.chat.cancel", {"chatId": "early"}) == {"cancelled": True}
    summary = await asyncio.wait_for(chat, 5)
    assert summary["outcome"] == "cancelled" and pair.provider.requests == []


async def test_host_answers_are_strict_tool_results(pair: Pair) -> None:
    from steerable_agent_runtime import ToolCall

    async def sloppy(params: Any) -> dict[str, Any]:
        return {"success": "yes"}

    pair.host.add_method("tool.invoke", sloppy)
    result = await pair.sidecar._host_invoke("c")(ToolCall(id="1", name="t", arguments={}))
    assert result.success is False and result.data == {"code": "host_error"}


async def test_a_host_tool_forwards_the_call_the_executor_dispatched_not_the_contexts() -> None:
    from steerable_agent_runtime import CallContext, ToolCall, ToolResult
    from steerable_sidecar.sidecar._host_tools import register_host_tools

    sent: list[ToolCall] = []

    async def invoke(call: ToolCall) -> ToolResult:
        sent.append(call)
        return ToolResult(success=True, data={"got": call.arguments})

    router = ToolRouter()
    schema = {"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer"}}}
    register_host_tools(router, [{"name": "write_note", "parameters": schema}], invoke)

    async def sanitising(call: ToolCall, context: CallContext | None = None, /) -> ToolResult:
        """A wrapper executor: rewrites the arguments and passes the context on, as executors do."""
        return await router.dispatch(
            call.model_copy(update={"arguments": {"text": "clean", "n": "3"}}), context
        )

    original = ToolCall(id="w1", name="write_note", arguments={"text": "rm -rf ~", "n": 1})
    result = await sanitising(original, CallContext(original))
    # the rewritten call as validated ("3" is an exact literal: coerced), under the context's id
    assert sent == [ToolCall(id="w1", name="write_note", arguments={"text": "clean", "n": 3})]
    assert result.data == {"got": {"text": "clean", "n": 3}}
    invalid = ToolCall(id="w2", name="write_note", arguments={"n": "x"})
    refused = await router.dispatch(invalid, CallContext(original))  # the context's call was valid
    assert refused.data is not None and refused.data["code"] == "invalid_arguments" and len(sent) == 1


async def test_ready_notification_and_shutdown(pair: Pair) -> None:
    await eventually(lambda: pair.ready, what="lifecycle.ready")
    assert pair.ready[0]["protocolVersion"] == 1 and pair.ready[0]["pid"] == os.getpid()
    assert await pair.host.request("system.shutdown") == {"ok": True}
    await asyncio.wait_for(pair.runner, 5)


@pytest.mark.parametrize(
    "pair",
    [[{"tool_calls": [{"id": "t", "name": "tool_search", "arguments": '{"query": "note"}'}]}, "found"]],
    indirect=True,
)
async def test_chat_harness_choice_and_host_tools_refuse_progressive(pair: Pair) -> None:  # HAR-1, HAR-3
    with pytest.raises(RemoteError) as info:
        await pair.host.request(
            "agent.chat.stream",
            {
                "message": "x",
                "toolsViaHost": True,
                "tools": [{"name": "read_file"}],
                "harness": "progressive",
            },
        )
    assert "full" in info.value.message and "minimal" in info.value.message
    assert info.value.code == -32602
    summary = await pair.host.request("agent.chat.stream", {"message": "find", "harness": "progressive"})
    assert summary["outcome"] == "completed"
    offered = [t["function"]["name"] for t in pair.provider.requests[0].tools]
    assert "tool_search" in offered
    result = next(e["result"] for e in pair.events if e["type"] == "tool_result")
    assert result["success"] is True


async def test_shutdown_lets_calls_in_flight_answer(pair: Pair) -> None:
    slow = asyncio.create_task(
        pair.host.request("tool.invoke", {"name": "read_slowly", "arguments": {"ms": 300}})
    )
    await eventually(lambda: pair.slow_reads, what="the slow call in flight")
    assert await pair.host.request("system.shutdown") == {"ok": True}
    assert await asyncio.wait_for(slow, 5) == {"success": True, "data": {"value": "late note"}}
    await asyncio.wait_for(pair.runner, 5)


async def test_methods_without_params_refuse_params(pair: Pair) -> None:
    for method in ("system.ping", "tool.list"):
        with pytest.raises(RemoteError) as info:
            await pair.host.request(method, {"x": 1})
        assert info.value.code == -32602 and "takes no params" in info.value.message
    assert (await pair.host.request("tool.list", {}))["protocolVersion"] == 1


async def test_schema_errors_name_the_field_in_the_message(pair: Pair) -> None:
    with pytest.raises(RemoteError) as info:
        await pair.host.request("agent.chat.stream", {"message": "x", "maxRounds": 0})
    assert info.value.code == -32602 and "maxRounds" in info.value.message


class ClosingProvider(ScriptedProvider):
    """A provider owning a resource, as OpenAICompatibleProvider owns its HTTP client."""

    closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_the_sidecar_closes_a_provider_that_owns_a_client_when_it_stops(tmp_path: Path) -> None:
    a_read, a_write = os.pipe()
    b_read, b_write = os.pipe()
    s_reader, s_writer = await open_fd_streams(a_read, b_write)
    h_reader, h_writer = await open_fd_streams(b_read, a_write)
    provider = ClosingProvider(["hello"])
    config = SidecarConfig(
        workspace=tmp_path, state_dir=tmp_path / "state", provider_factory=lambda: provider
    )
    sidecar = Sidecar(JsonRpcPeer(s_reader, s_writer, name="sidecar"), config, router=ToolRouter())
    host = JsonRpcPeer(h_reader, h_writer, name="host")
    runner = asyncio.create_task(sidecar.run())
    serving = asyncio.create_task(host.serve())
    summary = await host.request("agent.chat.stream", {"chatId": "c1", "message": "hi"})
    assert summary["outcome"] == "completed"
    assert provider.closed == 0
    h_writer.close()  # type: ignore[attr-defined]  # end of input: the sidecar stops
    await asyncio.wait_for(runner, 10)
    assert provider.closed == 1
    await host.aclose()
    await asyncio.gather(serving, return_exceptions=True)
    s_writer.close()  # type: ignore[attr-defined]


SHELL_THEN_READ = [
    {
        "tool_calls": [
            {"id": "s1", "name": "shell_run", "arguments": '{"command": "x"}'},
            {"id": "r1", "name": "read_note", "arguments": "{}"},
        ]
    },
    "done",
]


@pytest.mark.parametrize("pair", [SHELL_THEN_READ], indirect=True)
async def test_a_read_only_chat_refuses_a_local_call_without_asking_the_host(pair: Pair) -> None:  # MODE-5
    prompts = _approve_all_and_record(pair)
    summary = await pair.host.request("agent.chat.stream", {"message": "go", "consent": "read-only"})
    results = {e["id"]: e["result"] for e in pair.events if e["type"] == "tool_result"}
    assert results["s1"]["data"] == {"code": "consent_denied", "mode": "local", "policy": "read-only"}
    assert results["s1"]["needsFollowup"] is True
    assert results["r1"]["success"] is True
    assert prompts == [] and pair.calls == [] and summary["outcome"] == "completed"


@pytest.mark.parametrize("pair", [SHELL_THEN_READ], indirect=True)
async def test_an_auto_chat_runs_a_local_call_without_asking_the_host(pair: Pair) -> None:  # MODE-5
    prompts = _approve_all_and_record(pair)
    await pair.host.request("agent.chat.stream", {"message": "go", "consent": "auto"})
    assert prompts == [] and pair.calls == ["x"]


async def test_a_chat_consent_that_names_no_policy_is_invalid_params(pair: Pair) -> None:
    with pytest.raises(RemoteError) as bad:
        await pair.host.request("agent.chat.stream", {"message": "go", "consent": "sometimes"})
    assert bad.value.code == -32602
    assert bad.value.message == (
        "Invalid params: consent='sometimes' is not a consent policy: use one of read-only, ask, default, "
        "auto, or the modes that ask, comma-separated, from destructive, external, local, safe_write"
    )


async def test_a_bad_steerable_consent_stops_the_sidecar_naming_the_variable(tmp_path: Path) -> None:
    a_read, a_write = os.pipe()
    reader, writer = await open_fd_streams(a_read, a_write)
    config = SidecarConfig(
        workspace=tmp_path, state_dir=tmp_path / "state", environ={"STEERABLE_CONSENT": "local,often"}
    )
    with pytest.raises(ConfigError, match="STEERABLE_CONSENT='local,often' is not a consent policy"):
        Sidecar(JsonRpcPeer(reader, writer, name="sidecar"), config, router=ToolRouter())
    writer.close()  # type: ignore[attr-defined]
