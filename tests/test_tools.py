"""ToolRouter, @tool and exposure tiers (TIER-*, MODE-3, MODE-5, ENV-*)."""

import asyncio
import logging
from typing import Annotated, Any

import pytest
from pydantic import Field

from steerable_agent_runtime import (
    DuplicateToolError,
    Tool,
    ToolCall,
    ToolExposure,
    ToolFailed,
    ToolResult,
    ToolRetry,
    ToolRouter,
    TraceSpan,
    UserError,
    is_terminal_result,
    tool,
)


def call(tool_name, /, **arguments):
    return ToolCall(id="c1", name=tool_name, arguments=arguments)


def make_router():
    router = ToolRouter()

    @tool(router=router, description="Greet by name")
    async def greet(name: str) -> str:
        return f"hello {name}"

    @tool(router=router, exposure="deferred")
    def get_forecast(city: str, days: int = 3) -> dict[str, Any]:
        """Forecast for a city.

        Args:
            city: City name.
            days: How many days ahead.
        """
        return {"city": city, "days": days}

    @tool(router=router, exposure=ToolExposure.HIDDEN)
    async def get_secret_internal() -> str:
        return "s"

    return router


async def test_spec_plugin_example_registers_and_dispatches():
    router = make_router()
    result = await router.dispatch(call("greet", name="Ada"))
    assert result.to_wire() == {"success": True, "data": {"value": "hello Ada"}}


async def test_sync_function_runs_off_the_event_loop():
    router = ToolRouter()
    loop_thread = []

    @tool(router=router)
    def get_thread() -> bool:
        import threading

        loop_thread.append(threading.current_thread() is threading.main_thread())
        return True

    await router.dispatch(call("get_thread"))
    assert loop_thread == [False]


def test_schema_from_signature_and_docstring():
    router = make_router()
    entry = {t["name"]: t for t in router.describe()}["get_forecast"]
    assert entry["description"] == "Forecast for a city."
    params = entry["parameters"]
    assert params["required"] == ["city"]
    assert params["additionalProperties"] is False
    assert params["properties"]["city"]["description"] == "City name."
    assert params["properties"]["days"] == {
        "default": 3,
        "description": "How many days ahead.",
        "title": "Days",
        "type": "integer",
    }


def test_annotated_field_constraints_reach_the_schema():
    @tool
    def get_page(n: Annotated[int, Field(ge=1, description="Page number")]) -> int:
        return n

    spec: Tool = get_page.__steerable_tool__  # type: ignore[attr-defined]  # set by @tool, documented
    assert spec.parameters["properties"]["n"]["minimum"] == 1
    assert spec.parameters["properties"]["n"]["description"] == "Page number"
    assert get_page(2) == 2  # the decorated function stays callable


def test_bare_decorator_and_name_override():
    @tool
    def list_things() -> list[str]:
        return []

    @tool(name="custom_name")
    def whatever() -> None:
        pass

    router = ToolRouter()
    router.add(list_things)
    router.add(whatever)
    router.add(whatever, name="get_alias", exposure="deferred")
    assert router.names() == ["list_things", "custom_name", "get_alias"]
    alias = router.get("get_alias")
    assert alias is not None
    assert alias.mode.value == "read"
    assert alias.exposure is ToolExposure.DEFERRED


def test_describe_model_offers_only_the_direct_tier_tier_1_tier_3():
    router = make_router()
    assert router.describe_model() == [
        {
            "type": "function",
            "function": {
                "name": "greet",
                "description": "Greet by name",
                # the validation schema without its title keywords: a model needs none of them
                "parameters": {
                    "additionalProperties": False,
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                    "type": "object",
                },
            },
        }
    ]
    greet = router.get("greet")
    assert (
        greet is not None and greet.parameters["properties"]["name"]["title"] == "Name"
    )  # validation keeps it


def test_model_parameters_keep_a_property_named_title():
    from steerable_agent_runtime._model_schema import model_parameters

    schema: dict[str, Any] = {
        "type": "object",
        "title": "make_issue",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "labels": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
            },
            "priority": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 3},
        },
    }
    assert model_parameters(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},  # the property stays, its title keyword goes
            "labels": {"type": "array", "items": {"type": "string"}},
            "priority": {
                "anyOf": [{"type": "integer"}, {"type": "null"}],
                "default": 3,
            },  # null is no default
        },
    }
    assert schema["properties"]["title"] == {"title": "Title", "type": "string"}  # the input is left alone


async def test_dispatch_never_gates_on_exposure_tier_2():
    router = make_router()
    deferred = await router.dispatch(call("get_forecast", city="Oslo"))
    hidden = await router.dispatch(call("get_secret_internal"))
    assert deferred.data == {"city": "Oslo", "days": 3}
    assert hidden.data == {"value": "s"}


async def test_unknown_tool_suggests_close_names_but_never_hidden_ones_tier_1():
    router = make_router()
    result = await router.dispatch(call("get_secret_internl"))
    assert result.success is False and result.needs_followup is True
    assert "get_secret_internal" not in (result.error or "")
    assert result.data == {"code": "unknown_tool", "suggestions": []}
    typo = await router.dispatch(call("gret"))
    assert typo.error == "Unknown tool 'gret'. Did you mean: greet? Call one of the offered tools."


async def test_a_tool_marked_unavailable_says_why_instead_of_unknown():
    router = make_router()
    router.mark_unavailable("web_search", "this run is offline.")
    result = await router.dispatch(call("web_search", query="x"))
    assert result.success is False and result.needs_followup is True
    assert result.error == (
        "The tool 'web_search' is not available here: this run is offline. Carry on with the offered tools."
    )
    assert result.data == {"code": "tool_unavailable", "reason": "this run is offline."}
    assert "web_search" not in router and not any(t.name == "web_search" for t in router)


async def test_invalid_arguments_name_each_bad_field():
    router = make_router()
    result = await router.dispatch(call("get_forecast", days="soon", colour="red"))
    assert result.success is False and result.needs_followup is True
    assert result.data["code"] == "invalid_arguments"
    assert result.data["errors"] == [
        {"field": "city", "message": "Field required"},
        {  # ENV-9: a string is taken for an integer only as an exact literal, and the message says so
            "field": "days",
            "message": "expected an integer, got the string 'soon' "
            '(a string is accepted only as an exact JSON literal such as "1")',
        },
        {"field": "colour", "message": "unexpected field"},
    ]
    assert result.error.startswith("Invalid arguments for get_forecast: city: Field required; days: ")
    assert result.error.endswith("Fix these fields and call get_forecast again.")


async def test_return_values_are_normalised_once():
    router = ToolRouter()
    passthrough = ToolResult(success=True, message="done", terminal=True)

    @tool(router=router)
    def get_result() -> ToolResult:
        return passthrough

    @tool(router=router)
    def get_mapping() -> dict[str, int]:
        return {"a": 1}

    @tool(router=router)
    def get_list() -> list[int]:
        return [1, 2]

    @tool(router=router)
    def get_none() -> None:
        return None

    assert await router.dispatch(call("get_result")) is passthrough
    assert (await router.dispatch(call("get_mapping"))).to_wire() == {"success": True, "data": {"a": 1}}
    assert (await router.dispatch(call("get_list"))).to_wire() == {"success": True, "data": {"value": [1, 2]}}
    assert (await router.dispatch(call("get_none"))).to_wire() == {"success": True}


async def test_retry_and_failed_signals_env_7():
    router = ToolRouter()

    @tool(router=router)
    def set_date(value: str) -> None:
        raise ToolRetry("Invalid date format", message="Please retry with ISO-8601.")

    @tool(router=router)
    def get_calendar() -> None:
        raise ToolFailed("Calendar service unavailable")

    retry = await router.dispatch(call("set_date", value="tomorrow"))
    assert retry.to_wire() == {
        "success": False,
        "needsFollowup": True,
        "error": "Invalid date format",
        "message": "Please retry with ISO-8601.",
    }
    assert not is_terminal_result(retry)
    failed = await router.dispatch(call("get_calendar"))
    assert failed.to_wire() == {"success": False, "terminal": True, "error": "Calendar service unavailable"}
    assert is_terminal_result(failed)


async def test_unexpected_exception_becomes_a_failed_result(caplog):
    router = ToolRouter()

    @tool(router=router)
    def get_boom() -> None:
        raise KeyError("missing")

    with caplog.at_level(logging.ERROR, logger="steerable_agent_runtime"):
        result = await router.dispatch(call("get_boom"))
    assert result.to_wire() == {
        "success": False,
        "error": "KeyError: 'missing'",
        "data": {"code": "tool_exception", "exceptionType": "KeyError"},
    }
    assert is_terminal_result(result)
    assert "get_boom raised" in caplog.text and "Traceback" in caplog.text


async def test_handler_timeout_is_a_followup_failure():
    router = ToolRouter()

    @tool(router=router, timeout_ms=20)
    async def get_slow() -> None:
        await asyncio.sleep(10)

    result = await router.dispatch(call("get_slow"))
    assert result.to_wire() == {
        "success": False,
        "needsFollowup": True,
        "error": "get_slow timed out after 20 ms",
        "data": {"code": "timeout", "timeoutMs": 20},
    }


def test_registering_a_name_twice_raises():
    router = make_router()
    with pytest.raises(DuplicateToolError) as info:

        @tool(router=router)
        def greet(x: int) -> None:
            pass

    assert info.value.name == "greet"
    assert isinstance(info.value, UserError)


def test_bad_registrations_raise_user_errors():
    with pytest.raises(UserError, match="unknown mode 'sideways'"):
        tool(mode="sideways")(lambda: None)
    with pytest.raises(UserError, match="unknown exposure 'secret'"):
        tool(exposure="secret")(lambda: None)
    with pytest.raises(UserError, match="no \\*args"):

        @tool
        def spread(*items: int) -> None:
            pass


async def test_malformed_envelopes_are_followup_failures():
    router = make_router()
    extra = await router.dispatch({"id": "1", "name": "greet", "arguments": {"name": "x"}, "meta": {}})
    assert (
        extra.error
        == "Malformed tool call: meta: unexpected field. A tool call is {id, name, arguments} only."
    )
    missing = await router.dispatch({"name": "greet", "arguments": {}})
    assert missing.data["errors"] == [{"field": "id", "message": "Field required"}]
    bad_json = await router.dispatch({"id": "1", "name": "greet", "arguments": "{not json"})
    assert bad_json.needs_followup is True
    assert bad_json.error.startswith("arguments is not valid JSON (Expecting property name")


async def test_arguments_sent_as_a_json_string_are_repaired_at_the_boundary():
    router = make_router()
    result = await router.dispatch({"id": "1", "name": "greet", "arguments": '{"name": "Bo"}'})
    assert result.data == {"value": "hello Bo"}


async def test_schema_given_tools_validate_with_jsonschema():
    router = ToolRouter()

    async def handler(**kwargs):
        return kwargs

    router.register(
        Tool.from_schema(
            "create_issue",
            {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
            handler,
            description="Create an issue",
        )
    )
    ok = await router.dispatch(call("create_issue", title="Bug"))
    assert ok.data == {"title": "Bug"}
    bad = await router.dispatch(call("create_issue", title=3))
    assert bad.needs_followup is True
    assert bad.data == {
        "code": "invalid_arguments",  # the same code as signature-derived tools
        "errors": [{"field": "title", "message": "3 is not of type 'string'"}],
    }
    created = router.get("create_issue")
    assert created is not None and created.mode.value == "safe_write"
    with pytest.raises(UserError, match="invalid JSON Schema"):
        Tool.from_schema("x", {"type": "object", "properties": 5}, handler)


async def test_trace_span_per_call_env_3():
    spans: list[TraceSpan] = []
    router = ToolRouter(trace=spans.append)

    @tool(router=router)
    def get_x() -> int:
        return 1

    await router.dispatch(ToolCall(id="abc", name="get_x", arguments={}))
    await router.dispatch(ToolCall(id="def", name="nope", arguments={}))
    assert [(s.name, s.call_id, s.success, s.attrs) for s in spans] == [
        ("get_x", "abc", True, {"mode": "read"}),
        ("nope", "def", False, {}),
    ]
    assert spans[0].duration_ms >= 0


def test_router_has_no_consent_logic_mode_5():
    # MODE-5: approval is an executor wrapper's job; the router exposes no approval hooks.
    assert not [name for name in dir(ToolRouter) if "approv" in name or "consent" in name]


async def test_suspending_tools_keep_every_outcome():
    router = ToolRouter()

    @tool(router=router)
    async def get_later(kind: str) -> str:
        await asyncio.sleep(0)
        if kind == "retry":
            raise ToolRetry("try again")
        if kind == "boom":
            raise ValueError("bad")
        return kind

    assert (await router.dispatch(call("get_later", kind="ok"))).data == {"value": "ok"}
    assert (await router.dispatch(call("get_later", kind="retry"))).needs_followup is True
    assert (await router.dispatch(call("get_later", kind="boom"))).error == "ValueError: bad"
    assert router._deadlines._pending == {}


async def test_concurrent_timeouts_each_fire_at_their_own_deadline():
    router = ToolRouter()
    finished = []

    @tool(router=router, timeout_ms=30)
    async def get_short() -> None:
        await asyncio.sleep(5)

    @tool(router=router, timeout_ms=5000)
    async def get_long() -> str:
        await asyncio.sleep(0.1)
        finished.append("long")
        return "done"

    async with asyncio.timeout(5):
        short, long = await asyncio.gather(
            router.dispatch(call("get_short")), router.dispatch(call("get_long"))
        )
    assert short.data == {"code": "timeout", "timeoutMs": 30}
    assert long.data == {"value": "done"} and finished == ["long"]


async def test_outside_cancellation_is_not_swallowed_as_a_timeout():
    router = ToolRouter()
    started = asyncio.Event()

    @tool(router=router)
    async def get_forever() -> None:
        started.set()
        await asyncio.sleep(60)

    task = asyncio.create_task(router.dispatch(call("get_forever")))
    async with asyncio.timeout(5):
        await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert router._deadlines._pending == {}


async def test_a_tool_that_finishes_without_suspending_arms_no_deadline():
    router = ToolRouter()

    @tool(router=router, timeout_ms=1)
    async def get_fast() -> int:
        return 1

    result = await router.dispatch(call("get_fast"))
    assert result.data == {"value": 1} and router._deadlines._timer is None


async def test_success_results_built_on_the_fast_path_behave_like_validated_ones():
    router = make_router()
    result = await router.dispatch(call("greet", name="x"))
    result.message = "shown"  # a mutable fields set, as on any pydantic model
    assert result.to_wire() == {"success": True, "message": "shown", "data": {"value": "hello x"}}
    assert result == ToolResult(success=True, data={"value": "hello x"}, message="shown")
    assert ToolResult.model_validate_json(result.model_dump_json()) == result
