"""The executor chain (executor.py): the approval gate, and dispatch containing a tool's exit."""

from __future__ import annotations

from typing import Any

import pytest

from loop_script import call, echo_router, tool_results, turn
from steerable_agent_runtime import ToolRouter
from steerable_agent_runtime.executor import ApprovalGate, mode_lookup
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_agent_runtime.loop import AgentLoop
from steerable_agent_runtime.trace import TraceSpan


@pytest.fixture
def router() -> ToolRouter:
    return echo_router()


async def test_approval_gate_asks_for_local_mode_and_denial_is_a_followup(
    router: ToolRouter,
) -> None:  # MODE-5
    asked: list[tuple[str, str]] = []

    async def deny(call: Any, mode: Any) -> bool:
        asked.append((call.name, mode.value))
        return False

    @router.tool(mode="read")
    async def peek() -> str:
        """Read-only."""
        return "seen"

    gate = ApprovalGate(router.dispatch, approve=deny, mode_of=mode_lookup(router))
    spans: list[TraceSpan] = []
    provider = ScriptedProvider([turn(call("echo", {"text": "a"}, id="1"), call("peek", id="2")), "ok"])
    loop = AgentLoop(provider, router, executor=gate, trace=spans.append)
    await loop.run([], "go")
    results = tool_results(loop.messages)
    assert asked == [("echo", "local")]  # peek is read mode: no consent asked
    assert results["1"] == {
        "success": False,
        "needsFollowup": True,
        "error": "The user did not allow echo. Do not retry the same call; "
        "continue another way or ask the user.",
        "data": {"code": "consent_denied", "mode": "local"},
    }
    assert results["2"]["success"] is True and router.calls == []  # type: ignore[attr-defined]
    assert {s.call_id: s.attrs.get("approved") for s in spans} == {"1": False, "2": None}


async def test_approval_handler_failure_fails_closed(router: ToolRouter) -> None:
    async def broken(call: Any, mode: Any) -> bool:
        raise ConnectionError("host gone")

    gate = ApprovalGate(router.dispatch, approve=broken, mode_of=mode_lookup(router))
    result = await gate(
        __import__("steerable_agent_runtime").ToolCall(id="1", name="echo", arguments={"text": "a"})
    )
    assert result.data == {"code": "consent_denied", "mode": "local"}
    assert "the consent prompt failed: ConnectionError" in (result.error or "")
    assert router.calls == []  # type: ignore[attr-defined]


async def test_a_tool_calling_sys_exit_is_a_failed_result(router: ToolRouter) -> None:
    @router.tool
    async def quitter() -> None:
        """Exits."""
        raise SystemExit(3)

    result = await router.dispatch({"id": "q", "name": "quitter", "arguments": {}})
    assert result.success is False and result.data == {
        "code": "tool_exception",
        "exceptionType": "SystemExit",
    }
