"""Spilling oversized results (spill.py): spilled data read back, unserializable results, colliding ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loop_script import EchoRouter, call, echo_router, tool_results, turn
from steerable_agent_runtime import ToolResult
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_agent_runtime.loop import AgentLoop, RunOutcome
from steerable_agent_runtime.spill import SpillHooks
from steerable_agent_runtime.trace import TraceSpan


@pytest.fixture
def router() -> EchoRouter:
    return echo_router()


@pytest.mark.parametrize("depth", [400, 3000])  # past pydantic's limit; past json's recursion too
async def test_a_result_too_deep_for_json_is_an_answer_not_a_crash(
    router: EchoRouter, tmp_path: Path, depth: int
) -> None:
    @router.tool
    async def deep() -> ToolResult:
        """Return data nested far too deeply (a ToolResult passes through the router as it is)."""
        value: list[Any] = []
        for _ in range(depth):
            value = [value]
        return ToolResult(success=True, data={"value": value})

    provider = ScriptedProvider([turn(call("deep", {}, id="d")), "carried on"])
    summary = await AgentLoop(provider, router, spill=SpillHooks(tmp_path / "spill")).run([], "go")
    assert summary.outcome is RunOutcome.COMPLETED and summary.text == "carried on"
    answer = tool_results(list(provider.requests[1].messages))["d"]
    assert answer["success"] is False and answer["needsFollowup"] is True
    assert answer["data"] == {"code": "unserializable_result"}
    assert answer["error"].startswith("The tool's result cannot be sent as JSON (")
    assert answer["error"].endswith("ask for less deeply nested data")


async def test_oversized_data_is_spilled_and_readable_back(
    router: EchoRouter, tmp_path: Path
) -> None:  # WEB-15
    @router.tool
    async def read_big(path: str) -> dict[str, Any]:
        """Return a big body."""
        return {"path": path, "version": "v1", "content": "x" * 5000 + "END"}

    spill = SpillHooks(tmp_path / "spill", threshold_bytes=1000)
    spill.register(router)
    provider = ScriptedProvider([turn(call("read_big", {"path": "big.txt"}, id="b")), "ok"])
    spans: list[TraceSpan] = []
    loop = AgentLoop(provider, router, spill=spill, trace=spans.append)
    await loop.run([], "go")
    result = tool_results(loop.messages)["b"]
    spilled = result["data"]["spilled"]
    assert result["data"]["path"] == "big.txt" and result["data"]["version"] == "v1"
    assert "content" not in result["data"] and spilled["bytes"] > 5000 and len(spilled["preview"]) == 2000
    assert "read_spilled" in result["message"]
    assert spans[0].attrs["spilled"] is True
    back = await router.dispatch(
        {"id": "r", "name": "read_spilled", "arguments": {"locator": spilled["locator"], "offset": 4000}}
    )
    assert back.success and back.data is not None
    assert json.loads(json.dumps({"path": "big.txt", "version": "v1", "content": "x" * 5000 + "END"}))
    assert back.data["text"].endswith('END"}') and back.data["nextOffset"] is None
    missing = await router.dispatch(
        {"id": "r2", "name": "read_spilled", "arguments": {"locator": "spill://../etc"}}
    )
    assert missing.needs_followup and missing.data == {"code": "unknown_locator"}
    # the read state still rebuilds from a spilled read (path/version kept inline)
    from steerable_agent_runtime import read_file_state_from_messages

    assert read_file_state_from_messages(loop.messages) == {"big.txt": "v1"}


async def test_spills_of_colliding_ids_never_overwrite_each_other(tmp_path: Path) -> None:
    from steerable_agent_runtime import ToolCall, ToolResult

    first = SpillHooks(tmp_path, threshold_bytes=10)
    second = SpillHooks(tmp_path, threshold_bytes=10)  # another chat over the same directory
    a = await first.apply(
        ToolCall(id="call.1", name="t", arguments={}), ToolResult(success=True, data={"v": "A" * 50})
    )
    b = await second.apply(
        ToolCall(id="call_1", name="t", arguments={}), ToolResult(success=True, data={"v": "B" * 50})
    )
    assert a.data and b.data
    loc_a, loc_b = a.data["spilled"]["locator"], b.data["spilled"]["locator"]
    assert loc_a != loc_b
    assert "A" * 50 in first.read(loc_a)["text"] and "B" * 50 in second.read(loc_b)["text"]
