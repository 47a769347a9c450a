"""The executor chain (executor.py): the approval gate, and dispatch containing a tool's exit."""

from __future__ import annotations

from typing import Any

import pytest

from loop_script import EchoRouter, call, echo_router, tool_results, turn
from steerable_agent_runtime import CallContext, ToolCall, ToolResult
from steerable_agent_runtime.executor import ApprovalGate, mode_lookup
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_agent_runtime.loop import AgentLoop
from steerable_agent_runtime.trace import TraceSpan


@pytest.fixture
def router() -> EchoRouter:
    return echo_router()


async def test_approval_gate_asks_for_local_mode_and_denial_is_a_followup(
    router: EchoRouter,
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
    assert results["2"]["success"] is True and router.calls == []
    assert {s.call_id: s.attrs.get("approved") for s in spans} == {"1": False, "2": None}


async def test_approval_handler_failure_fails_closed(router: EchoRouter) -> None:
    async def broken(call: Any, mode: Any) -> bool:
        raise ConnectionError("host gone")

    gate = ApprovalGate(router.dispatch, approve=broken, mode_of=mode_lookup(router))
    result = await gate(
        __import__("steerable_agent_runtime").ToolCall(id="1", name="echo", arguments={"text": "a"})
    )
    assert result.data == {"code": "consent_denied", "mode": "local"}
    assert "the consent prompt failed: ConnectionError" in (result.error or "")
    assert router.calls == []


async def test_a_tool_calling_sys_exit_is_a_failed_result(router: EchoRouter) -> None:
    @router.tool
    async def quitter() -> None:
        """Exits."""
        raise SystemExit(3)

    result = await router.dispatch({"id": "q", "name": "quitter", "arguments": {}})
    assert result.success is False and result.data == {
        "code": "tool_exception",
        "exceptionType": "SystemExit",
    }


async def test_arguments_are_validated_before_anyone_is_asked(router: EchoRouter) -> None:  # MODE-5
    asked: list[str] = []

    async def approve(call: Any, mode: Any) -> bool:
        asked.append(call.name)
        return True

    gate = ApprovalGate.for_router(router, approve=approve)
    provider = ScriptedProvider(
        [
            turn(call("echo", {"txt": "a"}, id="bad"), call("nope", id="unknown")),
            turn(call("echo", {"text": "b"}, id="ok")),
            "done",
        ]
    )
    loop = AgentLoop(provider, router, executor=gate)
    await loop.run([], "go")
    results = tool_results(loop.messages)
    assert results["bad"]["needsFollowup"] is True and results["bad"]["data"]["code"] == "invalid_arguments"
    assert results["unknown"]["data"]["code"] == "unknown_tool"
    assert results["ok"] == {"success": True, "data": {"echo": "b"}}
    assert asked == ["echo"]  # only the valid call reached the prompt


async def test_without_a_prompt_a_consent_call_is_refused_after_its_arguments_are_checked(
    router: EchoRouter,
) -> None:  # MODE-2
    gate = ApprovalGate.for_router(router, approve=None, unasked=": ask first")
    from steerable_agent_runtime import ToolCall

    invalid = await gate(ToolCall(id="1", name="echo", arguments={}))
    refused = await gate(ToolCall(id="2", name="echo", arguments={"text": "a"}))
    assert invalid.data is not None and invalid.data["code"] == "invalid_arguments"
    assert refused.to_wire() == {
        "success": False,
        "needsFollowup": True,
        "error": "echo is a local-mode tool: ask first",
        "data": {"code": "consent_required", "mode": "local"},
    }
    assert router.calls == []


@pytest.mark.parametrize("answer", ["no", "false", "yes", {"approved": False}, 1, None, [], "True"])
async def test_only_an_answer_that_is_exactly_true_is_consent(router: EchoRouter, answer: Any) -> None:
    async def approve(call: Any, mode: Any) -> Any:
        return answer

    gate = ApprovalGate.for_router(router, approve=approve)
    request = ToolCall(id="1", name="echo", arguments={"text": "a"})
    context = CallContext(request)
    result = await gate(request, context)
    assert result.data is not None and result.data["code"] == "consent_denied"
    assert router.calls == [] and context.approved is False  # fail closed: nothing ran


async def test_an_old_one_argument_executor_still_runs_calls(router: EchoRouter) -> None:
    seen: list[str] = []

    async def old(call: ToolCall) -> ToolResult:  # the shape before executors took a context
        seen.append(call.id)
        return await router.dispatch(call)

    async def approve(call: Any, mode: Any) -> bool:
        return True

    gate = ApprovalGate(old, approve=approve, mode_of=mode_lookup(router))
    for executor in (old, gate):  # taken directly, and wrapped in the gate
        provider = ScriptedProvider([turn(call("echo", {"text": "a"}, id="1")), "ok"])
        loop = AgentLoop(provider, router, executor=executor)
        summary = await loop.run([], "go")
        assert summary.outcome.value == "completed"
        assert tool_results(loop.messages)["1"] == {"success": True, "data": {"echo": "a"}}
    assert seen == ["1", "1"] and router.calls == [("echo", "a"), ("echo", "a")]


async def test_a_consent_policy_decides_which_modes_ask_and_which_are_refused(router: EchoRouter) -> None:
    """MODE-5: the gate applies the session's policy; MODE-2's table is its ``default`` policy."""
    from steerable_agent_runtime import CONSENT_POLICIES, DEFAULT_CONSENT_POLICY, ConsentPolicy

    asked: list[tuple[str, str]] = []

    async def allow(call: Any, mode: Any) -> bool:
        asked.append((call.name, mode.value))
        return True

    @router.tool(mode="safe_write")
    async def jot(text: str) -> str:
        """Writes a note."""
        return text

    policy: list[ConsentPolicy] = [CONSENT_POLICIES["ask"]]
    gate = ApprovalGate.for_router(router, approve=allow, policy=lambda: policy[0])
    jotted = ToolCall(id="j", name="jot", arguments={"text": "a"})
    assert (await gate(jotted)).success and asked == [("jot", "safe_write")]
    policy[0] = DEFAULT_CONSENT_POLICY  # switched mid-session: the next call sees it
    assert (await gate(jotted)).success and asked == [("jot", "safe_write")]
    policy[0] = CONSENT_POLICIES["read-only"]
    context = CallContext(jotted)
    refused = await gate(jotted, context)
    assert refused.to_wire() == {
        "success": False,
        "needsFollowup": True,
        "error": "The session is in read-only mode, which does not allow jot (a safe_write-mode tool). "
        "Continue with the tools it allows, or ask the user to switch the mode.",
        "data": {"code": "consent_denied", "mode": "safe_write", "policy": "read-only"},
    }
    assert context.approved is False and len(asked) == 1
    unknown = await gate(ToolCall(id="u", name="nope", arguments={}))
    assert unknown.data is not None and unknown.data["code"] == "unknown_tool"  # the router answers it


def test_consent_policies_read_from_a_name_or_the_modes_that_ask() -> None:
    from steerable_agent_runtime import CONSENT_POLICIES, UserError, consent_policy
    from steerable_agent_runtime.modes import ToolMode

    assert consent_policy(" Read-Only ") is CONSENT_POLICIES["read-only"]
    assert consent_policy("local") is CONSENT_POLICIES["default"]
    with pytest.raises(UserError, match=r"^STEERABLE_CONSENT='read' is not a consent policy"):
        consent_policy("read")  # reads never ask: a list that asks for nothing is refused, not auto
    custom = consent_policy("external, local,destructive")
    assert custom.name == "destructive,local,external"
    assert custom.ask == {ToolMode.DESTRUCTIVE, ToolMode.LOCAL, ToolMode.EXTERNAL} and not custom.refuse
    assert [custom.verdict(mode) for mode in ToolMode] == ["run", "run", "ask", "ask", "ask"]
    # an open-web read calls out: judged as external by a policy
    read_only, ask = CONSENT_POLICIES["read-only"], CONSENT_POLICIES["ask"]
    assert read_only.verdict(ToolMode.READ, "web_search") == "refuse"
    assert (
        ask.verdict(ToolMode.READ, "web_fetch") == "ask" and ask.verdict(ToolMode.READ, "read_file") == "run"
    )
    assert CONSENT_POLICIES["default"].verdict(ToolMode.READ, "web_search") == "run"
    with pytest.raises(UserError, match=r"^--consent='' is not a consent policy"):
        consent_policy("", variable="--consent")


async def test_a_mode_switched_to_refusal_while_the_user_is_asked_refuses_the_call(
    router: EchoRouter,
) -> None:
    """MODE-5: the editor picks read-only while a prompt is open; an "allow once" then runs nothing."""
    from steerable_agent_runtime import CONSENT_POLICIES, ConsentPolicy

    policy: list[ConsentPolicy] = [CONSENT_POLICIES["ask"]]

    async def allow_after_a_switch(call: Any, mode: Any) -> bool:
        policy[0] = CONSENT_POLICIES["read-only"]
        return True

    gate = ApprovalGate.for_router(router, approve=allow_after_a_switch, policy=lambda: policy[0])
    call = ToolCall(id="e", name="echo", arguments={"text": "a"})
    context = CallContext(call)
    result = await gate(call, context)
    assert result.data == {"code": "consent_denied", "mode": "local", "policy": "read-only"}
    assert result.error is not None and "(a local-mode tool)" in result.error
    assert router.calls == [] and context.approved is False
