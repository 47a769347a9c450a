"""SAFE-6: arguments nested past the documented limit get a ``needsFollowup`` result, never a crash.

The router checks every call (so ``steerable call``, ``session``, ``mcp``, ``sidecar`` and the gate
all answer alike); the provider's decoding of a model's argument text checks too, so the agent
loop never holds such a structure. The real processes are in tests/sidecar/test_wire_safety.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import (
    AgentLoop,
    ApprovalGate,
    DurableRecord,
    RunOutcome,
    ScriptedProvider,
    Tool,
    ToolCall,
    ToolMode,
    ToolRouter,
)
from steerable_agent_runtime.tools import MAX_ARGUMENT_DEPTH, arguments_too_deep

LIST_TREE = {"type": "array", "items": {"$ref": "#/$defs/node"}}
WALK_SCHEMA = {
    "type": "object",
    "properties": {"value": {"$ref": "#/$defs/node"}},
    "required": ["value"],
    "$defs": {"node": LIST_TREE},
}
"""A recursive schema: ``jsonschema`` walks it with about four Python frames a level."""


def lists(levels: int) -> Any:
    """``levels`` nested lists (``lists(2) == [[]]``), built without recursion."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def arguments(levels: int) -> dict[str, Any]:
    """Arguments nested ``levels`` deep: the object is level 1, its ``value`` the other levels."""
    return {"value": lists(levels - 1)}


def arguments_text(levels: int) -> str:
    """:func:`arguments` as JSON text (the way a model sends them)."""
    inner = levels - 1
    return '{"value": ' + "[" * inner + "]" * inner + "}"


def too_deep(name: str, levels: int | None) -> dict[str, Any]:
    """The result a model gets for arguments of ``name`` nested ``levels`` deep (``None``: undecodable)."""
    how = f"nested {levels} levels deep" if levels is not None else "nested too deeply to decode"
    data: dict[str, Any] = {"code": "arguments_too_deep", "maxDepth": 64}
    if levels is not None:
        data["depth"] = levels
    return {
        "success": False,
        "needsFollowup": True,
        "error": f"Invalid arguments for {name}: {how}; at most 64 levels are accepted. Send flatter arguments.",
        "data": data,
    }


async def _walk(value: Any) -> dict[str, Any]:
    return {"walked": True}


def walk_router(mode: ToolMode | None = None) -> ToolRouter:
    """``walk`` (the recursive schema, a schema-given tool) and ``take`` (a function taking anything)."""
    router = ToolRouter()
    router.register(Tool.from_schema("walk", WALK_SCHEMA, _walk, mode=mode))

    @router.tool
    async def take(value: Any) -> str:
        """Take any value."""
        return "taken"

    return router


@pytest.mark.parametrize("levels", [300, 1_000, 100_000])
@pytest.mark.parametrize("name", ["walk", "take"])
async def test_arguments_past_the_limit_are_answered_with_needs_followup(
    name: str, levels: int
) -> None:  # SAFE-6
    result = await walk_router().dispatch(ToolCall(id="c1", name=name, arguments=arguments(levels)))
    assert result.to_wire() == too_deep(name, levels)


async def test_64_levels_are_taken_and_65_are_not() -> None:  # SAFE-6
    router = walk_router()
    assert MAX_ARGUMENT_DEPTH == 64
    for name in ("walk", "take"):
        taken = await router.dispatch(ToolCall(id="a", name=name, arguments=arguments(64)))
        assert taken.success is True, taken
        refused = await router.dispatch(ToolCall(id="b", name=name, arguments=arguments(65)))
        assert refused.to_wire() == too_deep(name, 65)
    # an object nests as an array does, and a wide shallow value is fine
    objects: dict[str, Any] = {}
    for _ in range(64):
        objects = {"a": objects}
    assert (await router.dispatch(ToolCall(id="c", name="take", arguments={"value": objects}))).to_wire() == (
        too_deep("take", 66)
    )
    wide = {"value": [[1, 2, {"k": [3]}]] * 10_000}
    assert (await router.dispatch(ToolCall(id="d", name="take", arguments=wide))).success is True


@pytest.mark.parametrize(("levels", "said"), [(300, 300), (1_000, None), (100_000, None)])
async def test_arguments_sent_as_text_are_measured_or_refused_as_undecodable(
    levels: int, said: int | None
) -> None:  # SAFE-6
    """A wire dict whose ``arguments`` is JSON text (a model slip the router decodes)."""
    raw = {"id": "c1", "name": "walk", "arguments": arguments_text(levels)}
    assert (await walk_router().dispatch(raw)).to_wire() == too_deep("walk", said)


async def test_a_schema_that_costs_many_frames_a_level_is_answered_not_raised() -> None:  # SAFE-6
    """Within the limit, but each level wrapped in 40 ``allOf``: the validator runs out of stack."""
    node: dict[str, Any] = {"type": "array", "items": {"$ref": "#/$defs/node"}}
    for _ in range(40):
        node = {"allOf": [node]}
    schema = {"type": "object", "properties": {"value": {"$ref": "#/$defs/node"}}, "$defs": {"node": node}}
    router = ToolRouter()
    router.register(Tool.from_schema("costly", schema, _walk))
    result = await router.dispatch(ToolCall(id="c1", name="costly", arguments=arguments(64)))
    assert result.to_wire() == {
        "success": False,
        "needsFollowup": True,
        "error": "Invalid arguments for costly: nested 64 levels deep; more than this tool's schema can "
        "check. Send flatter arguments.",
        "data": {"code": "arguments_too_deep", "maxDepth": 64, "depth": 64},
    }
    assert (await router.dispatch(ToolCall(id="c2", name="costly", arguments=arguments(4)))).success is True


async def test_the_consent_gate_refuses_before_anybody_is_asked() -> None:  # SAFE-6
    asked: list[str] = []

    async def approve(call: ToolCall, mode: ToolMode) -> bool:
        asked.append(call.name)
        return True

    router = walk_router(mode=ToolMode.LOCAL)
    gate = ApprovalGate.for_router(router, approve=approve)
    result = await gate(ToolCall(id="c1", name="walk", arguments=arguments(300)))
    assert result.to_wire() == too_deep("walk", 300)
    assert asked == []


def test_the_measure_needs_no_recursion_and_ends_on_a_value_that_holds_itself() -> None:  # SAFE-6
    assert arguments_too_deep(arguments(64)) is None
    assert arguments_too_deep({"path": "a", "limit": 3}) is None
    assert arguments_too_deep(arguments(1_000_000)) == 1_000_000
    assert sys.getrecursionlimit() < 1_000_000  # so the line above cannot have recursed
    looped: list[Any] = []
    looped.append(looped)
    assert arguments_too_deep({"value": looped}) == 65  # endless: past the limit, however it is counted
    chain: dict[str, Any] = {}
    node = chain
    for _ in range(100):
        node["next"] = {}
        node = node["next"]
    node["back"] = chain
    assert arguments_too_deep(chain) == 101


# -- the agent loop ---------------------------------------------------------------------------------


def _tool_message(messages: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    (found,) = [m for m in messages if m.get("role") == "tool" and m.get("tool_call_id") == call_id]
    loaded: dict[str, Any] = json.loads(found["content"])
    return loaded


@pytest.mark.parametrize(("levels", "said"), [(300, 300), (1_000, None), (100_000, None)])
async def test_the_loop_answers_a_model_call_too_deep_and_runs_on(
    tmp_path: Path, levels: int, said: int | None
) -> None:  # SAFE-6
    """The model's argument text, as a provider hands it over: the model is told, the run goes on."""
    text = arguments_text(levels)
    provider = ScriptedProvider(
        [{"tool_calls": [{"id": "d1", "name": "walk", "arguments": text}]}, "Flatter."]
    )
    record = DurableRecord(tmp_path / "record.jsonl")
    loop = AgentLoop(provider, walk_router(), record=record)
    summary = await loop.run([], "go")
    assert (summary.outcome, summary.rounds, summary.text) == (RunOutcome.COMPLETED, 2, "Flatter.")
    sent_back = list(provider.requests[1].messages)
    assert _tool_message(sent_back, "d1") == too_deep("walk", said)
    # the model's own text goes back as it sent it; the record holds the same
    assert sent_back[1]["tool_calls"][0]["function"]["arguments"] == text
    assert _tool_message(record.messages(), "d1") == too_deep("walk", said)


async def test_the_loop_answers_an_in_process_turn_too_deep_to_write_as_json() -> None:  # SAFE-6
    """A scripted mapping turn deeper than ``json.dumps`` goes: refused, and the run goes on."""
    deep = arguments(1_000)
    provider = ScriptedProvider([{"tool_calls": [{"id": "d1", "name": "take", "arguments": deep}]}, "ok"])
    summary = await AgentLoop(provider, walk_router()).run([], "go")
    assert summary.outcome is RunOutcome.COMPLETED and summary.rounds == 2
    assert _tool_message(list(provider.requests[1].messages), "d1") == too_deep("take", 1_000)
