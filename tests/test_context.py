"""The call context (context.py): injected into tools that ask for it, passed down the executor chain."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any, Optional

import pytest

from loop_script import call, echo_router, tool_results, turn
from steerable_agent_runtime import (
    ApprovalGate,
    CallContext,
    Tool,
    ToolCall,
    ToolExposure,
    ToolRouter,
    WorkspaceRouter,
    tool,
    workspace_tools_for_cwd,
)
from steerable_agent_runtime.errors import UserError
from steerable_agent_runtime.harness import AssembledHarness
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_agent_runtime.loop import AgentLoop
from steerable_agent_runtime.tool_search import is_tool_search, register_tool_search
from steerable_agent_runtime.trace import TraceSpan


def _seen_router() -> tuple[ToolRouter, list[CallContext]]:
    router = ToolRouter()
    seen: list[CallContext] = []

    @router.tool(mode="read")
    async def whoami(label: str, context: CallContext) -> str:
        """Say which call this is.

        Args:
            label: Any text.
        """
        seen.append(context)
        return f"{label}:{context.call.id}"

    return router, seen


async def test_a_context_parameter_is_injected_and_not_in_the_schema() -> None:
    router, seen = _seen_router()
    spec = router.get("whoami")
    assert spec is not None and spec.context_param == "context"
    assert spec.parameters["properties"].keys() == {"label"} and spec.parameters["required"] == ["label"]
    result = await router.dispatch(ToolCall(id="c1", name="whoami", arguments={"label": "x"}))
    assert result.data == {"value": "x:c1"}
    assert seen[0].call.id == "c1" and seen[0].executor is None  # no agent loop ran it


async def test_the_model_cannot_send_the_context_argument() -> None:
    router, seen = _seen_router()
    result = await router.dispatch(
        ToolCall(id="c1", name="whoami", arguments={"label": "x", "context": {"call": "forged"}})
    )
    assert result.success is False and result.data is not None
    assert result.data["code"] == "invalid_arguments" and seen == []


async def test_a_precomputed_schema_and_a_sync_tool_get_the_context_too() -> None:
    def stamp(context: CallContext, n: int = 1) -> str:
        """Sync: runs in a thread."""
        return context.call.id * n

    plain = Tool.from_function(stamp)
    prebuilt = Tool.from_function(stamp, parameters=plain.parameters, name="stamp2")
    assert "context" not in plain.parameters["properties"] and prebuilt.context_param == "context"
    router = ToolRouter()
    router.register(plain)
    router.register(prebuilt)
    one = await router.dispatch(ToolCall(id="ab", name="stamp", arguments={"n": 2}))
    two = await router.dispatch(ToolCall(id="cd", name="stamp2", arguments={}))
    assert one.data == {"value": "abab"} and two.data == {"value": "cd"}


async def test_a_schema_tool_names_its_context_keyword() -> None:
    got: list[tuple[str, dict[str, Any]]] = []

    async def handler(**arguments: Any) -> str:
        context = arguments.pop("_ctx")
        got.append((context.call.id, arguments))
        return "ok"

    router = ToolRouter()
    router.register(
        Tool.from_schema(
            "remote",
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            handler,
            context_param="_ctx",
        )
    )
    await router.dispatch(ToolCall(id="r1", name="remote", arguments={"a": 1}))
    assert got == [("r1", {"a": 1})]


async def test_the_loop_hands_each_call_its_executor_and_records_the_gate_decision() -> None:
    router, seen = _seen_router()
    router.register(echo_router().get("echo"))  # type: ignore[arg-type]
    decisions: list[str] = []

    async def approve(call: ToolCall, mode: Any) -> bool:
        decisions.append(call.id)
        return False

    gate = ApprovalGate.for_router(router, approve=approve)
    spans: list[TraceSpan] = []
    provider = ScriptedProvider(
        [turn(call("whoami", {"label": "a"}, id="w"), call("echo", {"text": "x"}, id="e")), "ok"]
    )
    loop = AgentLoop(provider, router, executor=gate, trace=spans.append)
    await loop.run([], "go")
    assert seen[0].executor is gate  # nested calls of this tool would take the same path
    assert decisions == ["e"]
    assert {s.call_id: s.attrs.get("approved") for s in spans} == {"w": None, "e": False}
    assert tool_results(loop.messages)["e"]["data"]["code"] == "consent_denied"


async def test_output_chunks_go_to_the_sink_and_a_failing_sink_never_fails_the_tool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chunks: list[str] = []
    router = ToolRouter()

    @tool(router=router, mode="read")
    async def build(target: str, context: CallContext) -> str:
        """Build."""
        await context.send_output(f"building {target}")
        await context.send_output("done")
        return "built"

    request = ToolCall(id="b", name="build", arguments={"target": "x"})
    await router.dispatch(request, CallContext(request, output=chunks.append))
    assert chunks == ["building x", "done"]
    assert (await router.dispatch(request)).success  # no sink: nothing to send, nothing fails

    async def broken(text: str) -> None:
        raise ConnectionError("client gone")

    with caplog.at_level(logging.ERROR):
        result = await router.dispatch(request, CallContext(request, output=broken))
    assert result.success and "the output sink of build failed" in caplog.text


async def test_an_output_chunk_reaches_the_sink_as_strict_utf8_like_a_result() -> None:
    chunks: list[str] = []
    router = ToolRouter()

    @tool(router=router, mode="read")
    async def show(context: CallContext) -> str:
        """Show a file name that was not UTF-8."""
        await context.send_output("caf\udce9.txt")  # os.listdir's surrogateescape spelling
        return "caf\udce9.txt"

    request = ToolCall(id="s", name="show", arguments={})
    result = await router.dispatch(request, CallContext(request, output=chunks.append))
    assert chunks == ["caf\ufffd.txt"]
    assert result.to_wire()["data"] == {"value": "caf\ufffd.txt"}
    chunks[0].encode("utf-8")  # a lone surrogate would raise here


async def test_context_attrs_reach_the_routers_trace_span() -> None:
    spans: list[TraceSpan] = []
    router = echo_router()
    router.trace = spans.append
    request = ToolCall(id="t", name="echo", arguments={"text": "a"})
    await router.dispatch(request, CallContext(request, attrs={"context": {"turn": 3}}))
    await router.dispatch(request)
    assert spans[0].attrs == {"mode": "local", "context": {"turn": 3}} and spans[1].attrs == {"mode": "local"}


def test_the_workspace_router_carries_its_workspace(tmp_path: Any) -> None:
    router = workspace_tools_for_cwd(tmp_path, bash=False)
    assert isinstance(router, WorkspaceRouter) and router.workspace.root.path == tmp_path.resolve()
    mine = ToolRouter()
    assert workspace_tools_for_cwd(tmp_path, router=mine, bash=False) is mine
    assert "read_file" in mine and not hasattr(mine, "workspace")  # nothing patched onto a given router


def _deferred(name: str) -> Tool:
    async def run() -> str:
        return name

    return Tool.from_schema(name, {"type": "object"}, run, description=f"{name} things", exposure="deferred")


async def test_tool_search_state_lives_with_its_tool_not_in_a_global() -> None:
    router = ToolRouter()
    router.register(_deferred("alpha_tool"))
    first = register_tool_search(router)
    assert is_tool_search(router, first) and not is_tool_search(ToolRouter(), first)
    moved = router.set_exposure("tool_search", ToolExposure.HIDDEN)
    assert is_tool_search(router, moved) and register_tool_search(router) is moved  # still idempotent
    router.unregister("tool_search")
    assert not is_tool_search(router, moved)  # its index stopped following the router
    router.register(_deferred("beta_tool"))
    second = register_tool_search(router)
    assert second is not moved and is_tool_search(router, second)
    found = await router.dispatch(ToolCall(id="s", name="tool_search", arguments={"query": "beta things"}))
    assert [t["name"] for t in found.data["tools"]] == ["beta_tool", "alpha_tool"]  # type: ignore[index]


def test_two_harnesses_tell_their_own_routers_tool_search_apart() -> None:
    one, two = ToolRouter(), ToolRouter()
    AssembledHarness("progressive").wire_tools(one)
    two.register(one.get("tool_search"))  # type: ignore[arg-type]  # a copy of another router's tool
    assert is_tool_search(one, one.get("tool_search"))
    assert not is_tool_search(two, two.get("tool_search"))


async def test_a_host_tool_forwards_the_whole_call_even_with_an_argument_named_like_its_keyword() -> None:
    from steerable_sidecar.sidecar._host_tools import register_host_tools

    sent: list[ToolCall] = []

    async def invoke(request: ToolCall) -> Any:
        sent.append(request)
        from steerable_agent_runtime import ToolResult

        return ToolResult(success=True, data={"echo": request.arguments})

    router = ToolRouter()
    schema = {"type": "object", "properties": {"_context": {"type": "string"}, "n": {"type": "integer"}}}
    register_host_tools(router, [{"name": "remote_tool", "parameters": schema}], invoke)
    result = await router.dispatch(
        ToolCall(id="h1", name="remote_tool", arguments={"_context": "mine", "n": 2})
    )
    assert sent == [ToolCall(id="h1", name="remote_tool", arguments={"_context": "mine", "n": 2})]
    assert result.data == {"echo": {"_context": "mine", "n": 2}}


async def test_a_sync_tool_past_its_timeout_is_told_to_stop() -> None:
    import threading
    import time

    stopped = threading.Event()
    router = ToolRouter()

    @router.tool(mode="read", timeout_ms=100)
    def crunch(context: CallContext) -> str:
        """Sync work in a thread, which nothing can interrupt."""
        deadline = time.monotonic() + 10
        while not context.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        stopped.set()
        return "late"

    result = await router.dispatch(ToolCall(id="c", name="crunch", arguments={}))
    assert result.data is not None and result.data["code"] == "timeout"
    assert await asyncio.to_thread(stopped.wait, 5)  # the thread saw the flag, long before 10 s


async def test_a_cancelled_call_marks_its_context() -> None:
    router, _ = _seen_router()
    started = asyncio.Event()

    @router.tool(mode="read")
    async def wait_forever(context: CallContext) -> None:
        """Waits."""
        started.set()
        await asyncio.Event().wait()

    request = ToolCall(id="w", name="wait_forever", arguments={})
    context = CallContext(request)
    task = asyncio.create_task(router.dispatch(request, context))
    await started.wait()
    assert not context.cancelled
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert context.cancelled


def _noting_router() -> ToolRouter:
    """Tools that write their own trace attrs: forged span fields, values JSON cannot encode."""
    router = ToolRouter()

    @router.tool(mode="read")
    async def get_forged(context: CallContext) -> str:
        """Claims fields only the runtime sets."""
        context.attrs.update({"approved": True, "mode": "x", "tier": "x", "outcome": "x", "spilled": True})
        context.attrs.update({"durationMs": -1, "note": "kept"})
        return "forged"

    @router.tool(mode="local")
    async def run_forged(context: CallContext) -> str:
        """A consent tool overwriting the gate's decision."""
        context.attrs["approved"] = "maybe"
        try:
            context.record_approval(True)
        except UserError as exc:  # refused: the tool is running
            return str(exc)
        return "recorded"

    @router.tool(mode="read")
    async def get_unjsonable(context: CallContext) -> str:
        """Notes a set, a set nested in a dict, a cycle and a non-string key."""
        cycle: list[Any] = []
        cycle.append(cycle)
        context.attrs.update({"bad": {1, 2}, "nested": {"a": [object]}, "cycle": cycle, "fine": [1, "x"]})
        context.attrs[7] = "seven"  # type: ignore[index]  # a key that is not a string
        return "noted"

    return router


async def test_a_tool_cannot_forge_its_span_and_non_json_attrs_never_break_the_record(tmp_path: Any) -> None:
    from steerable_agent_runtime.record import DurableRecord

    router = _noting_router()
    asked: list[str] = []

    async def approve(call: ToolCall, mode: Any) -> bool:
        asked.append(call.name)
        return True

    record = DurableRecord.for_session(tmp_path, "s")
    spans: list[TraceSpan] = []
    provider = ScriptedProvider(
        [
            turn(call("get_forged", id="f"), call("run_forged", id="r")),
            turn(call("get_unjsonable", id="u")),
            "ok",
        ]
    )
    loop = AgentLoop(
        provider,
        router,
        executor=ApprovalGate.for_router(router, approve=approve),
        record=record,
        trace=spans.append,
    )
    summary = await loop.run([], "go")
    assert summary.outcome.value == "completed" and asked == ["run_forged"]
    by_id = {s.call_id: s.attrs for s in spans}
    assert "approved" not in by_id["f"] and "spilled" not in by_id["f"] and by_id["f"]["note"] == "kept"
    assert (by_id["f"]["mode"], by_id["f"]["tier"], by_id["f"]["outcome"]) == ("read", "direct", "ok")
    assert by_id["f"]["durationMs"] >= 0
    assert by_id["r"]["approved"] is True  # the gate's word, not "maybe"
    results = tool_results(await record.load())  # every result reached the record
    assert "executor chain's to record" in results["r"]["data"]["value"]
    assert results["u"]["data"] == {"value": "noted"}
    assert by_id["u"]["bad"] == "{1, 2}" and by_id["u"]["nested"] == repr({"a": [object]})
    assert by_id["u"]["cycle"] == "[[...]]" and by_id["u"]["fine"] == [1, "x"] and by_id["u"]["7"] == "seven"
    written = [line for line in (tmp_path / "s.jsonl").read_text().splitlines() if '"type":"trace"' in line]
    assert len(written) == 3 and '"bad":"{1, 2}"' in written[2]


async def test_the_routers_span_keeps_its_mode_and_makes_attrs_json_ready() -> None:
    spans: list[TraceSpan] = []
    router = _noting_router()
    router.trace = spans.append
    forged = ToolCall(id="f", name="get_forged", arguments={})
    await router.dispatch(forged, CallContext(forged, attrs={"context": {"turn": 1}}))
    noting = ToolCall(id="u", name="get_unjsonable", arguments={})
    await router.dispatch(noting, CallContext(noting))
    assert spans[0].attrs["mode"] == "read" and "approved" not in spans[0].attrs
    assert spans[0].attrs["context"] == {"turn": 1} and spans[1].attrs["bad"] == "{1, 2}"
    await router.dispatch(noting)  # no context given: the one made for the tool is the span's
    assert spans[2].attrs["bad"] == "{1, 2}" and spans[2].attrs["mode"] == "read"


async def test_an_optional_or_annotated_context_parameter_gets_the_context() -> None:
    router = ToolRouter()

    @router.tool(mode="read")
    async def get_optional(label: str, context: Optional[CallContext] = None) -> str:  # noqa: UP045
        """Optional spelled the old way."""
        assert context is not None
        return f"{label}:{context.call.id}"

    @router.tool(mode="read")
    async def get_union(context: CallContext | None = None) -> str:
        """Optional spelled with a union."""
        assert context is not None
        return context.call.id

    @router.tool(mode="read")
    def get_annotated(context: Annotated[CallContext, "the call"], n: int = 1) -> str:
        """Annotated, in a worker thread."""
        return context.call.id * n

    async def unstringed(context: Any) -> str:  # its annotation set as an object, not a string
        return str(context.call.id)

    unstringed.__annotations__ = {"context": Annotated[CallContext | None, "x"], "return": str}
    router.add(unstringed, name="get_unstringed", mode="read")
    for name in ("get_optional", "get_union", "get_annotated", "get_unstringed"):
        spec = router.get(name)
        assert spec is not None and spec.context_param == "context"
        assert "context" not in spec.parameters["properties"], name
    one = await router.dispatch(ToolCall(id="o", name="get_optional", arguments={"label": "x"}))
    two = await router.dispatch(ToolCall(id="u", name="get_union", arguments={}))
    three = await router.dispatch(ToolCall(id="a", name="get_annotated", arguments={"n": 2}))
    four = await router.dispatch(ToolCall(id="s", name="get_unstringed", arguments={}))
    assert [r.data for r in (one, two, three, four)] == [
        {"value": "x:o"},
        {"value": "u"},
        {"value": "aa"},
        {"value": "s"},
    ]


def test_a_context_declaration_dispatch_cannot_fill_is_refused_at_registration() -> None:
    async def two(a: str, first: CallContext, second: CallContext) -> str:
        return a

    async def listed(items: list[CallContext]) -> str:
        return ""

    async def either(context: CallContext | int) -> str:
        return ""

    def positional(context: CallContext, /) -> str:
        return ""

    with pytest.raises(
        UserError, match=r"tool 'two': parameters 'first', 'second' both ask for the call context"
    ):
        Tool.from_function(two)
    with pytest.raises(UserError, match=r"tool 'listed': parameter 'items' names CallContext inside"):
        Tool.from_function(listed)
    with pytest.raises(UserError, match=r"tool 'either': parameter 'context' names CallContext inside"):
        Tool.from_function(either)
    with pytest.raises(
        UserError, match=r"tool 'positional': the CallContext parameter 'context' must be a plain"
    ):
        Tool.from_function(positional)
    prebuilt = {"type": "object", "properties": {}}  # a precomputed schema does not skip the check
    with pytest.raises(UserError, match=r"tool 'two': parameters"):
        Tool.from_function(two, parameters=prebuilt)


def test_a_schema_tools_context_keyword_cannot_be_one_of_its_properties() -> None:
    async def handler(**arguments: Any) -> str:
        return "ok"

    schema = {"type": "object", "properties": {"x": {"type": "string"}, "ctx": {"type": "string"}}}
    with pytest.raises(UserError, match=r"tool 'sch': context_param 'ctx' is a property of its schema"):
        Tool.from_schema("sch", schema, handler, context_param="ctx")
    assert Tool.from_schema("sch", schema, handler, context_param="_ctx").context_param == "_ctx"
