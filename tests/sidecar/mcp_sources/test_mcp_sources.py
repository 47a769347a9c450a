"""MCP servers as tool sources, against a real MCP server process (``tests/fixtures/mcp_tool_server.py``).

The server is built with the official ``mcp`` SDK and started over stdio by ``McpToolSources``,
exactly as a configured server would be. One server is shared by the tests that leave it healthy;
the tests that kill, time out or refuse a server start their own. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from steerable_agent_runtime.errors import McpServerError, UserError
from steerable_agent_runtime.modes import ToolMode
from steerable_agent_runtime.tool_search import register_tool_search
from steerable_agent_runtime.tools import ToolExposure, ToolRouter
from steerable_sidecar.mcp_sources._sources import McpServerConfig, McpToolSources
from waiting import eventually

SERVER_SCRIPT = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_tool_server.py")
TEE_STDIN = str(Path(__file__).resolve().parent / "tee_stdin.py")  # the requests a server got, in a file
BOUND_S = 20  # no test waits longer than this for anything

FIXTURE_TOOLS = {
    "get_weather",
    "forecast",
    "delete_note",
    "purge_cache",
    "post_message",
    "note_write",
    "read_once",
    "list_notes",
    "run_snippet",
    "echo",
    "validate_order",
    "upstream_error",
    "slow",
    "crash",
    "environment",
    "sized",
}

shared_loop = pytest.mark.asyncio(loop_scope="module")


def fixture_server(name: str = "fx", *extra_args: str, env: dict[str, str] | None = None) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=(SERVER_SCRIPT, *extra_args), env=env)


async def call(router: ToolRouter, name: str, **arguments: Any) -> dict[str, Any]:
    async with asyncio.timeout(BOUND_S):
        result = await router.dispatch({"id": "call_1", "name": name, "arguments": arguments})
    return result.to_wire()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared() -> AsyncIterator[tuple[ToolRouter, McpToolSources]]:
    """One healthy server for the module; a secret sits in our environment while it starts."""
    router = ToolRouter()
    register_tool_search(router)
    sources = McpToolSources(router, [fixture_server(env={"FIXTURE_TOKEN": "t0ken"})], call_timeout_ms=1_000)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STEERABLE_API_KEY", "sk-must-not-leak")
        async with asyncio.timeout(BOUND_S):
            await sources.__aenter__()
    yield router, sources
    async with asyncio.timeout(BOUND_S):
        await sources.aclose()


# -- registration: names, tiers, modes, schemas -----------------------------------------------------


@shared_loop
async def test_tools_register_deferred_as_mcp_server_tool_tier_1(shared):
    router, sources = shared
    names = {f"mcp__fx__{tool}" for tool in FIXTURE_TOOLS}
    assert names <= set(router.names())
    for name in names:
        assert router.get(name).exposure is ToolExposure.DEFERRED
    offered = {d["function"]["name"] for d in router.describe_model()}
    assert offered == {"tool_search"}  # TIER-1: deferred tools are not offered
    [server] = sources.servers()
    assert server == {"name": "fx", "command": sys.executable, "tools": server["tools"], "state": "connected"}
    assert set(server["tools"]) == names


@shared_loop
async def test_modes_come_from_annotations_then_the_original_name_mode_4(shared):
    router, _ = shared
    modes = {name.removeprefix("mcp__fx__"): router.get(name).mode for name in router.names() if "__" in name}
    assert modes == {
        "get_weather": ToolMode.READ,  # readOnlyHint (and the name agrees)
        "forecast": ToolMode.READ,  # readOnlyHint; no name rule
        "echo": ToolMode.READ,
        "delete_note": ToolMode.DESTRUCTIVE,  # destructiveHint (and the name agrees)
        "purge_cache": ToolMode.DESTRUCTIVE,  # destructiveHint; no name rule
        "read_once": ToolMode.DESTRUCTIVE,  # the server's hint beats the read_ prefix
        "note_write": ToolMode.SAFE_WRITE,  # destructiveHint: false
        "post_message": ToolMode.EXTERNAL,  # openWorldHint alone
        "list_notes": ToolMode.READ,  # only a title: the spec's rules on the server's own name
        "run_snippet": ToolMode.LOCAL,  # no hints, no rule: the conservative default
        "validate_order": ToolMode.LOCAL,
        "upstream_error": ToolMode.LOCAL,
        "slow": ToolMode.LOCAL,
        "crash": ToolMode.LOCAL,
        "environment": ToolMode.LOCAL,
        "sized": ToolMode.READ,
    }


@shared_loop
async def test_schemas_and_descriptions_are_the_servers(shared):
    router, _ = shared
    forecast = router.get("mcp__fx__forecast")
    assert forecast.description == "Multi-day weather forecast for a city, as structured data"
    assert forecast.parameters["type"] == "object"
    assert forecast.parameters["required"] == ["city"]
    assert set(forecast.parameters["properties"]) == {"city", "days"}
    # the schema is enforced before the server is called
    body = await call(router, "mcp__fx__forecast", city="Oslo", days="three")
    assert body["success"] is False and body["needsFollowup"] is True
    assert [e["field"] for e in body["data"]["errors"]] == ["days"]


# -- calls --------------------------------------------------------------------------------------


@shared_loop
async def test_structured_content_becomes_data(shared):
    router, _ = shared
    assert await call(router, "mcp__fx__forecast", city="Oslo", days=2) == {
        "success": True,
        "data": {"city": "Oslo", "days": 2, "highs": [20, 21]},
    }
    # MCPServer wraps a plain return value as {"result": ...}
    assert await call(router, "mcp__fx__echo", text="héllo") == {"success": True, "data": {"result": "héllo"}}
    assert await call(router, "mcp__fx__list_notes") == {"success": True, "data": {"result": ["n1", "n2"]}}


@shared_loop
async def test_text_content_becomes_data_text(shared):
    router, _ = shared
    assert await call(router, "mcp__fx__get_weather", city="Lima") == {
        "success": True,
        "data": {"text": "Sunny in Lima, 21 C"},
    }


@shared_loop
async def test_is_error_is_a_failure_the_model_can_fix_env_7(shared):
    router, _ = shared
    body = await call(router, "mcp__fx__validate_order", quantity=0)
    assert body == {
        "success": False,
        "needsFollowup": True,
        "error": "Error executing tool validate_order: quantity must be positive, got 0",
        "data": {"code": "mcp_tool_error", "server": "fx", "tool": "validate_order"},
    }
    assert (await call(router, "mcp__fx__validate_order", quantity=2))["success"] is True


@shared_loop
@pytest.mark.parametrize(
    ("code", "message"),
    [
        (-32001, "upstream quota exhausted"),
        (-32000, "upstream refused the key"),
        (-32001, "Request timed out"),
    ],
)
async def test_a_servers_own_error_with_the_sdks_codes_is_its_own_not_a_timeout_or_a_close(
    shared, code, message
):
    # -32000/-32001 are also the SDK's CONNECTION_CLOSED/REQUEST_TIMEOUT: a fronted server's answer is not those
    router, sources = shared
    body = await call(router, "mcp__fx__upstream_error", code=code, message=message)
    assert body == {
        "success": False,
        "needsFollowup": True,
        "error": f"MCP server 'fx' refused the call to 'upstream_error': {message} (JSON-RPC error {code})",
        "data": {"code": "mcp_error", "server": "fx", "tool": "upstream_error", "jsonrpcCode": code},
    }
    assert sources.servers()[0]["state"] == "connected"
    assert (await call(router, "mcp__fx__echo", text="still here"))["success"] is True


@shared_loop
async def test_the_server_gets_its_env_and_none_of_ours(shared):
    router, _ = shared
    body = await call(router, "mcp__fx__environment", names=["FIXTURE_TOKEN", "STEERABLE_API_KEY", "PATH"])
    data = body["data"]
    assert data["FIXTURE_TOKEN"] == "t0ken"
    assert data["STEERABLE_API_KEY"] is None
    assert data["PATH"]


@shared_loop
async def test_concurrent_calls_from_many_tasks_share_one_connection(shared):
    router, _ = shared
    texts = [f"message {i}" for i in range(25)]
    async with asyncio.timeout(BOUND_S):
        bodies = await asyncio.gather(*(call(router, "mcp__fx__echo", text=t) for t in texts))
    assert [b["data"]["result"] for b in bodies] == texts


@shared_loop
async def test_a_call_past_call_timeout_ms_fails_and_the_server_stays_usable(shared):
    router, sources = shared
    started = time.perf_counter()
    body = await call(router, "mcp__fx__slow", seconds=30)
    elapsed = time.perf_counter() - started
    assert body == {
        "success": False,
        "needsFollowup": True,
        "error": "MCP tool 'slow' of server 'fx' timed out after 1000 ms",
        "data": {"code": "timeout", "server": "fx", "tool": "slow", "timeoutMs": 1000},
    }
    assert elapsed < 10  # at the 1 s call timeout: the call alone would take 30 s
    assert (await call(router, "mcp__fx__echo", text="still here"))["success"] is True
    assert sources.servers()[0]["state"] == "connected"


@shared_loop
async def test_tool_search_finds_mcp_tools_and_they_dispatch_ts_1_tier_2(shared):
    router, _ = shared
    body = await call(router, "tool_search", query="weather forecast for a city")
    found = [t["name"] for t in body["data"]["tools"]]
    assert found[:2] == ["mcp__fx__forecast", "mcp__fx__get_weather"]
    schema = body["data"]["tools"][0]["parameters"]
    assert schema == router.get("mcp__fx__forecast").parameters  # full schema: callable next round
    assert (await call(router, found[0], city="Rome"))["success"] is True  # TIER-2: dispatched by name

    body = await call(router, "tool_search", query="chat channel")
    assert [t["name"] for t in body["data"]["tools"]][0] == "mcp__fx__post_message"


# -- a server that dies -------------------------------------------------------------------------


async def test_a_server_that_dies_gives_failed_results_and_nothing_hangs():
    router = ToolRouter()
    async with asyncio.timeout(BOUND_S), McpToolSources(router, [fixture_server("doomed")]) as sources:
        assert (await call(router, "mcp__doomed__echo", text="hi"))["success"] is True
        started = time.perf_counter()
        crashed = await call(router, "mcp__doomed__crash")
        later = await call(router, "mcp__doomed__echo", text="anyone?")
        # at its exit: a hang would run to the 120 s call timeout (call() gives up at 20 s)
        assert time.perf_counter() - started < 10
        for body, tool in ((crashed, "crash"), (later, "echo")):
            assert body["success"] is False
            assert body["needsFollowup"] is True  # one dead optional server does not end the run
            assert body["data"] == {"code": "mcp_server_unavailable", "server": "doomed", "tool": tool}
            assert "MCP server 'doomed' is not running" in body["error"]
            assert "fixture server: crashing on purpose" in body["error"]  # its last stderr line
        [server] = sources.servers()
        assert server["state"] == "dead"
        assert "crashing on purpose" in server["error"]
    assert router.names() == []
    assert sources.servers()[0]["state"] == "dead"


def called(requests: Path, tool: str) -> bool:
    """Whether a ``tools/call`` of ``tool`` is among the requests :data:`TEE_STDIN` logged."""
    lines = requests.read_text(encoding="utf-8").splitlines() if requests.exists() else []
    sent = [json.loads(line) for line in lines]
    return any(m.get("method") == "tools/call" and m["params"]["name"] == tool for m in sent)


async def test_open_in_one_task_call_from_others_close_in_another_under_a_call_in_flight(tmp_path: Path):
    # the SDK client's task groups live in one owner task; callers and closers may be any task
    router = ToolRouter()
    requests = tmp_path / "requests.jsonl"
    hop = McpServerConfig(
        name="hop", command=sys.executable, args=(TEE_STDIN, str(requests), sys.executable, SERVER_SCRIPT)
    )
    sources = McpToolSources(router, [hop])
    assert sources.servers() == [{"name": "hop", "command": sys.executable, "tools": [], "state": "starting"}]
    async with asyncio.timeout(BOUND_S):
        await asyncio.create_task(sources.__aenter__())
        assert (await asyncio.create_task(call(router, "mcp__hop__echo", text="a")))["data"] == {
            "result": "a"
        }
        assert (await call(router, "mcp__hop__echo", text="b"))["data"] == {"result": "b"}
        echo = router.set_exposure("mcp__hop__echo", "direct")  # a re-tiered tool is still ours
        in_flight = asyncio.create_task(call(router, "mcp__hop__slow", seconds=30))
        await eventually(lambda: called(requests, "slow"), what="the slow call's request at the server")
        await asyncio.create_task(sources.aclose())
        body = await in_flight
    assert body["data"] == {"code": "mcp_server_unavailable", "server": "hop", "tool": "slow"}
    assert "MCP server 'hop' was closed" in body["error"]
    assert router.names() == []
    assert sources.servers()[0]["state"] == "closed"
    late = (await echo.handler(text="late")).to_wire()  # a handler kept past close fails, never hangs
    assert late["data"]["code"] == "mcp_server_unavailable"
    await sources.aclose()  # idempotent


# -- servers that fail to start: fail loud, name the server, leave nothing behind ------------------


async def test_a_server_that_exits_at_start_fails_the_boot_naming_it_and_rolls_back_the_others():
    router = ToolRouter()
    router.add(lambda: "ok", name="local_tool")
    configs = [fixture_server("good"), fixture_server("broken", "--fail-at-start")]
    sources = McpToolSources(router, configs)
    with pytest.raises(McpServerError) as caught:
        async with asyncio.timeout(BOUND_S), sources:
            pytest.fail("entered despite a broken server")
    assert caught.value.server == "broken"
    message = str(caught.value)
    assert "MCP server 'broken'" in message
    assert "missing FIXTURE_TOKEN, refusing to start" in message  # the server's own explanation
    assert router.names() == ["local_tool"]
    assert {s["name"]: s["state"] for s in sources.servers()} == {"good": "closed", "broken": "dead"}


async def test_a_missing_command_fails_the_boot_naming_the_server():
    router = ToolRouter()
    with pytest.raises(McpServerError) as caught:
        async with (
            asyncio.timeout(BOUND_S),
            McpToolSources(router, [McpServerConfig("ghost", "/no/such/mcp-server")]),
        ):
            pass
    assert caught.value.server == "ghost"
    assert "'/no/such/mcp-server'" in str(caught.value)
    assert "FileNotFoundError" in str(caught.value)


async def test_a_server_that_never_answers_fails_the_boot_after_connect_timeout_ms():
    router = ToolRouter()
    sources = McpToolSources(router, [fixture_server("mute", "--never-answer")], connect_timeout_ms=300)
    with pytest.raises(McpServerError) as caught:
        async with asyncio.timeout(BOUND_S), sources:
            pass
    assert caught.value.server == "mute"
    assert "did not start and list its tools within 300 ms" in str(caught.value)
    assert router.names() == []
    assert sources.servers()[0]["state"] == "dead"


async def test_cancelling_the_boot_stops_the_servers_and_registers_nothing():
    router = ToolRouter()
    configs = [fixture_server("mute", "--never-answer"), fixture_server("fine")]
    sources = McpToolSources(router, configs, connect_timeout_ms=60_000)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await sources.__aenter__()
    assert router.names() == []
    assert {s["state"] for s in sources.servers()} <= {"closed", "dead"}


async def test_a_tool_name_already_taken_fails_the_boot_and_keeps_the_existing_tool():
    router = ToolRouter()
    existing = router.add(lambda text: text, name="mcp__fx__echo")
    with pytest.raises(McpServerError) as caught:
        async with asyncio.timeout(BOUND_S), McpToolSources(router, [fixture_server()]):
            pass
    assert "tool 'echo' would be registered as 'mcp__fx__echo'" in str(caught.value)
    assert router.names() == ["mcp__fx__echo"]
    assert router.get("mcp__fx__echo") is existing


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"call_timeout_ms": 0}, "call_timeout_ms"),
        ({"connect_timeout_ms": -5}, "connect_timeout_ms"),
        ({"exposure": "shelf"}, "exposure"),
    ],
)
def test_invalid_options_are_developer_errors(kwargs, problem):
    with pytest.raises(UserError, match=problem):
        McpToolSources(ToolRouter(), [fixture_server()], **kwargs)


def test_server_names_must_be_unique():
    with pytest.raises(UserError, match="twin"):
        McpToolSources(ToolRouter(), [fixture_server("twin"), fixture_server("twin")])


async def test_sources_enter_once():
    sources = McpToolSources(ToolRouter(), [])
    async with sources:
        assert sources.servers() == []
        with pytest.raises(UserError):
            await sources.__aenter__()
