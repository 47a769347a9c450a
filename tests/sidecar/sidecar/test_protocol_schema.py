"""``spec/sidecar.schema.json`` against a live ``steerable sidecar``: every frame a host sees fits it.

The schema is generated from ``steerable_sidecar.sidecar.protocol`` (``scripts/generate_spec.py``;
``tests/test_contract.py`` checks the file is fresh) and the TypeScript package's types are
generated from it (``js/``), so these tests are what keeps the three in step with the wire.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from steerable_agent_runtime import RemoteError, ToolMode, ToolResult, errors
from steerable_agent_runtime.loop import RunOutcome
from steerable_agent_runtime.plugins import PluginState
from steerable_agent_runtime.tools import ToolExposure
from steerable_sidecar.rpc import _peer as rpc
from steerable_sidecar.sidecar import protocol
from steerable_sidecar.sidecar._client import SidecarClient

SPEC = Path(__file__).resolve().parents[3] / "spec"
SCHEMA = json.loads((SPEC / "sidecar.schema.json").read_text(encoding="utf-8"))
REGISTRY: Registry[Any] = Registry().with_resources(
    (name, DRAFT202012.create_resource(json.loads((SPEC / name).read_text(encoding="utf-8"))))
    for name in ("sidecar.schema.json", "ToolCall.schema.json", "ToolResult.schema.json")
)


def check(node: dict[str, Any], value: Any) -> None:
    """Validate ``value`` against a node of the schema's method tables (a ``$ref``, ``{}``...)."""
    ref = node.get("$ref", "")
    node = {"$ref": f"sidecar.schema.json{ref}"} if ref.startswith("#") else node
    errors = [e.message for e in Draft202012Validator(node, registry=REGISTRY).iter_errors(value)]
    assert errors == [], f"{node}: {errors} in {value!r}"


def test_the_literals_are_the_code_s_enums() -> None:
    assert get_args(protocol.ToolModeName) == tuple(m.value for m in ToolMode)
    assert get_args(protocol.ExposureName) == tuple(e.value for e in ToolExposure)
    assert get_args(protocol.OutcomeName) == tuple(o.value for o in RunOutcome)
    assert get_args(protocol.PluginStateName) == tuple(s.value for s in PluginState)
    assert {name: e["code"] for name, e in SCHEMA["errors"].items()} == {
        cls.__name__: code for cls, code in rpc.ERROR_CODES.items()
    }
    assert SCHEMA["errors"]["PluginStateError"]["parent"] == "UserError"
    assert SCHEMA["errors"]["SteerableError"]["parent"] is None


def test_the_schema_rejects_what_the_wire_never_carries() -> None:
    # the schema is not vacuous: wrong shapes fail it
    event = SCHEMA["notifications"]["agent.chat.event"]["params"]
    check(event, {"chatId": "c", "event": {"type": "round", "round": 1}})
    with pytest.raises(AssertionError, match="is not valid under any of the given schemas"):
        check(event, {"chatId": "c", "event": {"type": "round"}})  # no round number
    with pytest.raises(AssertionError, match="is not valid under any of the given schemas"):
        check(event, {"chatId": "c", "event": {"type": "nope"}})
    result = SCHEMA["methods"]["tool.invoke"]["result"]
    with pytest.raises(AssertionError, match="'success' is a required property"):
        check(result, {"error": "x"})
    with pytest.raises(AssertionError, match="Additional properties are not allowed"):
        check(SCHEMA["methods"]["tool.invoke"]["params"], {"name": "x", "consent": True})


@pytest.fixture
def start(tmp_path: Path, workspace: Path, child_env: Callable[..., dict[str, str]]) -> Callable[..., Any]:
    started = iter(range(100))

    async def _start(turns: list[Any], **env: str) -> SidecarClient:
        script = tmp_path / f"turns-{next(started)}.json"
        script.write_text(json.dumps(turns))
        return await SidecarClient.start(
            workspace=workspace,
            state_dir=tmp_path / "state",
            args=["--no-plugins"],
            env=child_env(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script), **env),
        )

    return _start


async def test_every_method_s_answer_fits_the_schema(start: Any) -> None:
    methods, notes = SCHEMA["methods"], SCHEMA["notifications"]
    async with await start(["done"]) as sidecar:
        check(notes["lifecycle.ready"]["params"], sidecar.ready)
        for method in ("system.ping", "tool.list", "plugin.list"):
            check(methods[method]["result"], await sidecar.request(method))
        invoked = await sidecar.request(
            "tool.invoke", {"name": "read_file", "arguments": {"path": "notes.txt"}}
        )
        check(methods["tool.invoke"]["result"], invoked)
        check(
            methods["agent.chat.cancel"]["result"],
            await sidecar.request("agent.chat.cancel", {"chatId": "x"}),
        )
        for method, io in methods.items():  # every method in the table is served (bad params, not -32601)
            if io["params"] != {"type": "null"}:
                with pytest.raises(RemoteError) as caught:
                    await sidecar.request(method, {"notAParam": 1})
                assert caught.value.code == rpc.INVALID_PARAMS, method
        check(methods["system.shutdown"]["result"], await sidecar.request("system.shutdown"))


async def test_a_chat_s_events_and_reverse_calls_fit_the_schema(start: Any, workspace: Path) -> None:
    turns = [
        {
            "tool_calls": [
                {"id": "q", "name": "ask_user", "arguments": {"questions": [{"id": "a", "text": "A?"}]}}
            ]
        },
        {"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": "echo hi"}}]},
        {"tool_calls": [{"id": "bad", "name": "read_file", "arguments": "{not json"}]},
        {"tool_calls": [{"id": "r", "name": "read_file", "arguments": {"path": "notes.txt"}}]},
        "all done",
    ]
    reverse, seen = SCHEMA["reverse"], []
    async with await start(turns) as sidecar:

        async def ask(payload: dict[str, Any]) -> dict[str, Any]:
            check(reverse["ask_user.request"]["params"], payload)
            seen.append("ask_user.request")
            return {"a": "yes"}

        async def approve(call: dict[str, Any], mode: str) -> bool:
            check({"$ref": "ToolCall.schema.json"}, call)
            seen.append(f"approval.request {mode}")
            return False

        sidecar.on_ask_user, sidecar.on_approval = ask, approve
        handle = sidecar.start_chat("go", ask_user=True)
        events = [event async for event in handle.events()]
        summary = await handle.result()
    for event in events:
        check(
            SCHEMA["notifications"]["agent.chat.event"]["params"], {"chatId": handle.chat_id, "event": event}
        )
    check(SCHEMA["methods"]["agent.chat.stream"]["result"], summary)
    assert {e["type"] for e in events} == {"round", "text", "assistant", "tool_call", "tool_result", "done"}
    invalid = [e["call"] for e in events if e["type"] == "tool_call" and "invalid" in e["call"]]
    assert [c["arguments"] for c in invalid] == ["{not json"]  # the raw text, as the schema allows
    assert seen == ["ask_user.request", "approval.request local"] and summary["outcome"] == "completed"


async def test_host_reverse_calls_fit_the_schema(start: Any) -> None:
    reverse, seen = SCHEMA["reverse"], []

    async def run_tool(params: dict[str, Any]) -> ToolResult:
        check(reverse["tool.invoke"]["params"], params)
        seen.append("tool.invoke")
        return ToolResult(success=True, data={"path": "n.txt", "content": "x", "version": "v1"})

    async def seed(params: dict[str, Any]) -> None:
        check(reverse["read_state.seed"]["params"], params)
        seen.append("read_state.seed")

    async def search(params: dict[str, Any]) -> dict[str, Any]:
        check(reverse["web_search.request"]["params"], params)
        seen.append("web_search.request")
        answer = {"results": [{"title": "T", "url": "https://example.com/", "snippet": "s"}]}
        check(reverse["web_search.request"]["result"], answer)
        return answer

    first = [{"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "n.txt"}}]}, "read"]
    async with await start(first) as sidecar:
        tools = [t for t in await sidecar.list_tools() if t["name"] == "read_file"]
        sidecar.on_tool_invoke = run_tool
        await sidecar.chat("read", session_id="s1", tools_via_host=True, tools=tools)
    # a new process resumes the session (read_state.seed); a web_search runs on the host
    again = [
        "resumed",
        {"tool_calls": [{"id": "w", "name": "web_search", "arguments": {"query": "steerable"}}]},
        "found",
    ]
    async with await start(again, STEERABLE_WEB_SEARCH_PROVIDER="host") as sidecar:
        sidecar.on_read_state_seed, sidecar.on_web_search = seed, search
        await sidecar.chat("again", session_id="s1", tools_via_host=True, tools=tools)
        handle = sidecar.start_chat("search", session_id="s2")
        events = [event async for event in handle.events()]
        await handle.result()
    results = [e["result"] for e in events if e["type"] == "tool_result"]
    assert [r["success"] for r in results] == [True]
    assert seen == ["tool.invoke", "read_state.seed", "web_search.request"]


def test_every_error_s_data_fits_its_class_s_schema() -> None:
    # every attribute set, so each key error_data_for can write is written
    samples = [
        errors.SteerableError("x"),
        errors.ToolSignal("x", message="m", next_action="n", data={"k": 1}),
        errors.ToolRetry("x", message="m"),
        errors.ToolFailed("x", next_action="n"),
        errors.SandboxUnavailableError("x", tried={"bwrap": "missing"}),
        errors.WebError("ssrf_blocked", "x"),
        errors.WorkspaceError("conflict", "x"),
        errors.PathEscapeError("path_escape", "x"),
        errors.WriteConflictError("conflict", "x"),
        errors.EditError("no_match", "x"),
        errors.PatchError("bad_patch", "x"),
        errors.UserError("x"),
        errors.DuplicateToolError("t"),
        errors.PluginLoadError("x", plugin="p", tool="t", other_plugin="o"),
        errors.PluginStateError("x", plugin="p", state="disabled"),
        errors.ConfigError("x"),
        errors.ProviderError("x", status=429, retryable=True),
        errors.SidecarStartError("x"),
        errors.McpServerError("s", "x"),
        errors.RemoteError(-32601, "x", {"a": 1}),
        errors.PeerClosedError("x"),
    ]
    assert {type(e) for e in samples} == set(rpc.ERROR_CODES)
    for error in samples:
        schema = SCHEMA["errors"][type(error).__name__]["data"]
        data = rpc.error_data_for(error)
        problems = [e.message for e in Draft202012Validator(schema).iter_errors(data)]
        assert problems == [], f"{type(error).__name__}: {problems} in {data}"
    keys = rpc.error_data_for(samples[13]).keys()
    assert set(keys) == {"type", "plugin", "tool", "otherPlugin"}  # the sample sets every attribute


def test_the_handlers_and_the_client_are_typed_with_the_wire_shapes() -> None:
    """Issue 33, item 4: one set of typed dicts types the schema, the sidecar's handlers and SidecarClient.

    ``spec/sidecar.schema.json`` is generated from :mod:`steerable_sidecar.sidecar.protocol`; here the
    handlers answering each method and the client methods returning each answer name the same
    types (strict mypy then checks what they build against them).
    """
    import inspect

    from steerable_sidecar.sidecar._client import ChatHandle, SidecarClient
    from steerable_sidecar.sidecar._server import Sidecar

    handlers = {
        "system.ping": Sidecar.ping,
        "system.shutdown": Sidecar.shutdown,
        "tool.list": Sidecar.tool_list,
        "agent.chat.stream": Sidecar.chat_stream,
        "agent.chat.cancel": Sidecar.chat_cancel,
        "plugin.list": Sidecar.plugin_list,
    }
    for method, handler in handlers.items():
        result = protocol.METHODS[method][1]
        assert isinstance(result, type)
        assert inspect.signature(handler).return_annotation == result.__name__, method
    plugin_result = protocol.METHODS["plugin.enable"][1]
    assert isinstance(plugin_result, type)
    returned = inspect.signature(Sidecar._plugin_call).return_annotation
    assert returned == f"Callable[[Any], Awaitable[{plugin_result.__name__}]]"
    client: dict[Callable[..., Any], str] = {
        SidecarClient.ping: "PingResult",
        SidecarClient.list_tools: "list[ToolDescriptor]",
        SidecarClient.chat: "ChatSummary",
        ChatHandle.result: "ChatSummary",
        ChatHandle.events: "AsyncIterator[ChatEvent]",
    }
    # chat() takes start_chat's keywords by name, so a type checker catches a misspelt one
    chat, start = inspect.signature(SidecarClient.chat), inspect.signature(SidecarClient.start_chat)
    assert chat.parameters == start.parameters
    for method_of_client, annotation in client.items():
        assert inspect.signature(method_of_client).return_annotation == annotation
        named = annotation.removeprefix("list[").removeprefix("AsyncIterator[").rstrip("]")
        assert named in protocol.__all__
