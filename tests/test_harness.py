"""Harness strategies: full, minimal, progressive (HAR-1..HAR-3), and a progressive run end to end."""

from __future__ import annotations

import json
from typing import Any

import pytest

from steerable_agent_runtime.errors import DuplicateToolError, UserError
from steerable_agent_runtime.harness import (
    MINIMAL_TOOLS,
    AssembledHarness,
    HarnessStrategy,
    assemble_harness,
)
from steerable_agent_runtime.llm import ChatRequest, ChatResponse, ScriptedProvider, parse_tool_call
from steerable_agent_runtime.loop import AgentLoop, RunOutcome
from steerable_agent_runtime.tools import ToolRouter


@pytest.fixture
def router() -> ToolRouter:
    r = ToolRouter()

    @r.tool
    async def read_file(path: str) -> dict[str, Any]:
        """Read a file."""
        return {"path": path}

    @r.tool
    async def bash(command: str) -> dict[str, Any]:
        """Run a shell command."""
        return {"command": command}

    @r.tool
    async def web_fetch(url: str) -> dict[str, Any]:
        """Fetch a web page."""
        return {"url": url}

    @r.tool(exposure="deferred")
    async def mcp__slack__post_message(channel: str, text: str) -> dict[str, Any]:
        """Post a message to a Slack channel."""
        return {"posted": text, "channel": channel}

    @r.tool(exposure="deferred")
    async def mcp__github__create_issue(title: str) -> dict[str, Any]:
        """Create a new issue in a GitHub repository."""
        return {"title": title}

    @r.tool(exposure="hidden")
    async def internal_probe() -> dict[str, Any]:
        """Never offered."""
        return {}

    return r


def offered_names(harness: AssembledHarness) -> list[str]:
    return [d["function"]["name"] for d in harness.offered()]


def test_strategies_by_name_and_unknown_names_list_the_choices():
    assert [s.value for s in HarnessStrategy] == ["full", "minimal", "progressive"]
    assert AssembledHarness("progressive").strategy is HarnessStrategy.PROGRESSIVE
    with pytest.raises(UserError, match="full, minimal, progressive"):
        AssembledHarness("everything")


def test_progressive_offers_the_direct_tier_plus_tool_search_har_1(router):
    harness = assemble_harness("progressive", router)
    assert offered_names(harness) == ["read_file", "bash", "web_fetch", "tool_search"]
    descriptor = harness.offered()[-1]
    assert descriptor["type"] == "function"
    assert descriptor["function"]["parameters"]["required"] == ["query"]


def test_progressive_without_wire_tools_raises_naming_it_har_2(router):
    harness = AssembledHarness(HarnessStrategy.PROGRESSIVE)
    with pytest.raises(UserError, match="wire_tools"):
        harness.offered()
    assert "tool_search" not in router
    harness.wire_tools(router)
    assert "tool_search" in router and "tool_search" in offered_names(harness)


def test_wiring_is_idempotent_har_2(router):
    first = assemble_harness("progressive", router)
    first.wire_tools(router)
    second = assemble_harness("progressive", router)
    assert router.names().count("tool_search") == 1
    assert offered_names(first) == offered_names(second)


def test_progressive_refuses_a_router_that_lost_its_tool_search_har_2(router):
    harness = assemble_harness("progressive", router)
    router.unregister("tool_search")
    with pytest.raises(UserError, match="wire_tools"):
        harness.offered()


def test_progressive_will_not_replace_a_foreign_tool_search(router: ToolRouter):
    @router.tool(name="tool_search")
    async def impostor(query: str) -> str:
        """Not ours."""
        return query

    with pytest.raises(DuplicateToolError):
        assemble_harness("progressive", router)


def test_host_tools_refuse_progressive_and_point_at_full_or_minimal_har_3(router):
    with pytest.raises(UserError) as raised:
        AssembledHarness("progressive", host_tools=True)
    assert "full" in str(raised.value) and "minimal" in str(raised.value)
    with pytest.raises(UserError):
        assemble_harness("progressive", router, host_tools=True)
    assert "tool_search" not in router
    for strategy in ("full", "minimal"):
        harness = assemble_harness(strategy, router, host_tools=True)
        assert harness.offered()


def test_full_offers_direct_and_deferred_never_hidden(router):
    assert offered_names(assemble_harness("full", router)) == [
        "read_file",
        "bash",
        "web_fetch",
        "mcp__slack__post_message",
        "mcp__github__create_issue",
    ]


def test_full_does_not_offer_the_discovery_tool_even_when_wired(router):
    assemble_harness("progressive", router)
    assert "tool_search" not in offered_names(assemble_harness("full", router))


def test_minimal_offers_the_fixed_core_that_is_registered(router):
    assert offered_names(assemble_harness("minimal", router)) == ["read_file", "bash"]
    assert MINIMAL_TOOLS == {"read_file", "write_file", "edit_file", "bash", "ask_user", "read_spilled"}


def test_minimal_descriptors_are_compact(router: ToolRouter) -> None:
    """The summary paragraph only, and no schema noise: the smallest prompt a model works from."""

    @router.tool
    def write_file(path: str, content: str, expected_version: str | None = None) -> dict[str, str]:
        """Create or overwrite a file.

        Existing files must be read first; this paragraph is left out of the compact descriptor.
        """
        return {}

    (described,) = [
        t for t in assemble_harness("minimal", router).offered() if t["function"]["name"] == "write_file"
    ]
    assert described["function"]["description"] == "Create or overwrite a file."
    parameters = described["function"]["parameters"]
    assert "title" not in parameters and all("title" not in p for p in parameters["properties"].values())
    assert parameters["properties"]["expected_version"] == {
        "type": "string"
    }  # no null branch, no null default
    full = router.get("write_file")
    assert full is not None and "Existing files must be read first" in full.description


@pytest.mark.parametrize("strategy", ["full", "minimal"])
def test_full_and_minimal_need_a_router_too(strategy):
    with pytest.raises(UserError, match="wire_tools"):
        AssembledHarness(strategy).offered()


def test_the_offered_list_is_computed_at_call_time(router: ToolRouter):
    harness = assemble_harness("progressive", router)

    @router.tool
    async def grep(pattern: str) -> list[str]:
        """Search file contents."""
        return []

    assert "grep" in offered_names(harness)
    router.unregister("bash")
    assert "bash" not in offered_names(harness)
    router.set_exposure("mcp__slack__post_message", "direct")
    assert "mcp__slack__post_message" in offered_names(harness)


def _found(request: ChatRequest) -> ChatResponse:
    """The scripted model reads tool_search's result and calls the first tool it found."""
    result = json.loads(request.messages[-1]["content"])
    hit = result["data"]["tools"][0]
    arguments = {name: "general" if name == "channel" else "hello" for name in hit["parameters"]["required"]}
    return ChatResponse(
        tool_calls=(parse_tool_call("c2", hit["name"], arguments),), finish_reason="tool_calls"
    )


async def test_progressive_run_searches_then_calls_the_discovered_deferred_tool(router):
    harness = assemble_harness("progressive", router)
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {"id": "c1", "name": "tool_search", "arguments": {"query": "post a slack message"}}
                ]
            },
            _found,
            "Posted.",
        ]
    )
    loop = AgentLoop(provider, router, offered=harness.offered)
    summary = await loop.run([], "Tell the team on Slack that the build is green.")

    assert summary.outcome is RunOutcome.COMPLETED and summary.tool_calls == 2
    # the deferred tool was never offered, only discovered
    for request in provider.requests:
        offered = [t["function"]["name"] for t in request.tools]
        assert offered == ["read_file", "bash", "web_fetch", "tool_search"]
    assistant_calls = [c["function"]["name"] for m in loop.messages for c in m.get("tool_calls") or ()]
    assert assistant_calls == ["tool_search", "mcp__slack__post_message"]
    results = {m["tool_call_id"]: json.loads(m["content"]) for m in loop.messages if m["role"] == "tool"}
    assert results["c1"]["data"]["tools"][0]["name"] == "mcp__slack__post_message"
    assert results["c2"] == {"success": True, "data": {"posted": "hello", "channel": "general"}}
    assert loop.messages[-1] == {"role": "assistant", "content": "Posted."}
