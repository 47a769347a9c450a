"""ToolCall / ToolResult envelopes and completion semantics (ENV-*)."""

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from steerable_agent_runtime import ToolCall, ToolResult, is_terminal_result, new_call_id


def test_tool_call_requires_id_name_arguments_env_1():
    for missing in ("id", "name", "arguments"):
        payload = {"id": "c1", "name": "t", "arguments": {}}
        del payload[missing]
        with pytest.raises(ValidationError) as info:
            ToolCall.model_validate(payload)
        assert info.value.errors()[0]["loc"] == (missing,)


def test_tool_call_rejects_extra_fields_env_1_env_3():
    with pytest.raises(ValidationError) as info:
        ToolCall.model_validate({"id": "c1", "name": "t", "arguments": {}, "trace": {"x": 1}})
    assert info.value.errors()[0]["type"] == "extra_forbidden"


def test_new_call_id_is_cuid2_and_unique_env_2():
    ids = {new_call_id() for _ in range(2000)}
    assert len(ids) == 2000
    for value in list(ids)[:50]:
        assert len(value) == 24 and value.isalnum() and value.islower() and value[0].isalpha()


def test_tool_result_wire_is_camel_case_and_excludes_none_env_4_env_5():
    result = ToolResult(success=False, needs_followup=True, next_action="retry", error="bad")
    assert result.to_wire() == {
        "success": False,
        "needsFollowup": True,
        "nextAction": "retry",
        "error": "bad",
    }
    assert json.loads(result.model_dump_json(exclude_none=True)) == result.to_wire()


def test_tool_result_accepts_camel_case_and_keeps_extra_fields_env_5():
    result = ToolResult.model_validate({"success": True, "needsFollowup": False, "futureField": {"a": 1}})
    assert result.needs_followup is False
    assert result.to_wire() == {"success": True, "needsFollowup": False, "futureField": {"a": 1}}


def test_tool_result_success_is_required_env_4():
    with pytest.raises(ValidationError):
        ToolResult.model_validate({"message": "hi"})


@pytest.mark.parametrize(
    ("payload", "terminal"),
    [
        ({"success": True}, False),
        ({"success": True, "terminal": True}, True),
        ({"success": False}, True),
        ({"success": False, "needsFollowup": True}, False),
        ({"success": False, "needsFollowup": False}, True),
        ({"success": False, "needsFollowup": True, "terminal": True}, True),
        ({"success": True, "needsFollowup": True}, False),
        # identity semantics, like the spec's TypeScript ===: truthy non-booleans do not count
        ({"success": 0}, False),
        ({"success": False, "needsFollowup": 1}, True),
        ({"success": True, "terminal": 1}, False),
        ({}, False),
        (None, False),
        ({"success": False, "needs_followup": True}, False),  # model_dump() without aliases
    ],
)
def test_is_terminal_result_matches_the_spec_env_6(payload, terminal):
    assert is_terminal_result(payload) is terminal


def test_is_terminal_result_on_models_env_6_env_7():
    assert is_terminal_result(ToolResult(success=False)) is True
    assert is_terminal_result(ToolResult.retry("fix it")) is False
    assert is_terminal_result(ToolResult.ok({"a": 1})) is False
    assert is_terminal_result(ToolResult(success=False).model_dump()) is True
    assert is_terminal_result(ToolResult.retry("x").model_dump()) is False


def test_spec_example_pair_round_trips():
    call = ToolCall.model_validate_json(
        '{"id":"c_42","name":"create_event","arguments":{"title":"Lunch","start":"2026-05-15T12:00:00Z"}}'
    )
    assert call.arguments["title"] == "Lunch"
    recoverable = ToolResult.model_validate_json(
        '{"success":false,"needsFollowup":true,"error":"Invalid date format",'
        '"message":"Please retry with ISO-8601."}'
    )
    assert not is_terminal_result(recoverable)
    terminal = ToolResult.model_validate_json(
        '{"success":false,"terminal":true,"error":"Calendar service unavailable"}'
    )
    assert is_terminal_result(terminal)


def test_to_wire_replaces_lone_surrogates_so_transports_never_fail():
    # A non-UTF-8 file name reaches Python as 'caf\udce9.txt' (surrogateescape).
    result = ToolResult.ok({"entries": [{"name": "caf\udce9.txt"}], "fine": "café", "list": ["\ud800"]})
    wire = result.to_wire()
    assert wire["data"] == {"entries": [{"name": "caf\ufffd.txt"}], "fine": "café", "list": ["\ufffd"]}
    json.dumps(wire, ensure_ascii=False).encode("utf-8")  # would raise on a surrogate


def test_a_result_no_json_writer_takes_is_sent_as_a_failure_the_model_can_act_on():
    value: list[object] = []
    for _ in range(400):
        value = [value]
    wire = ToolResult(success=True, data={"value": value}).to_wire()
    assert wire["success"] is False and wire["needsFollowup"] is True
    assert wire["data"] == {"code": "unserializable_result"}
    assert wire["error"].startswith("The tool's result cannot be sent as JSON (ValueError: ")
    json.dumps(wire)


def _odd_values() -> list[object]:
    """Values of every kind a tool may return or put in ``data``: JSON, Python types pydantic writes,
    unwritable ones, nesting on both sides of pydantic's depth limit, a loop."""
    import dataclasses
    import datetime
    import decimal
    import enum
    import pathlib
    import uuid

    class Colour(enum.Enum):
        RED = "red"

    class Inner(BaseModel):
        value: int | None = None
        snake_name: str | None = Field(default=None, alias="snakeName")

    @dataclasses.dataclass
    class Point:
        x: int | None = None

    nested: dict[str, Any] = {}
    innermost = nested
    for _ in range(254):  # pydantic's depth limit is at 255: both sides of it
        innermost["a"] = {}
        innermost = innermost["a"]
    looped: dict[str, object] = {}
    looped["self"] = looped
    values: list[object] = [
        None, 1, 10**30, 1.5, float("inf"), float("nan"), "text", b"bytes", b"\xff", [1, None], (1, 2), {3},
        frozenset({4}), {"k": None}, {1: "int key", None: "none key"}, datetime.datetime(2026, 1, 2),
        datetime.timedelta(seconds=3), decimal.Decimal("1.5"), uuid.UUID(int=1), Colour.RED,
        pathlib.PurePosixPath("/x"), Inner(value=None, snakeName="s"), Point(), object(), nested,
        {"deeper": nested}, looped,
    ]  # fmt: skip
    return values


class NotANumber(BaseModel):
    """A model that writes NaN as NaN (``ser_json_inf_nan="constants"``): ``to_wire`` keeps its choice."""

    model_config = ConfigDict(ser_json_inf_nan="constants")
    x: float = float("nan")


def _results() -> list[ToolResult]:
    """Results of every shape: plain ones, odd ``data`` values, extra fields, unvalidated ones."""
    values = _odd_values()
    results = [ToolResult.model_construct(success=True, data={"v": value}) for value in values]
    results += [ToolResult.success_with({"v": value}) for value in values[:5]]
    results += [
        ToolResult(success=True),
        ToolResult.success_with(None),
        ToolResult.retry("bad", message="m", data={}),
        ToolResult(success=True, next_action="next", terminal=True, data={"a": [{"b": None}]}),
        ToolResult.model_validate(
            {"success": False, "error": "e", "unknownField": {"x": None}, "other": None}
        ),
        ToolResult.model_construct(success=1),  # an unvalidated field of another type
        ToolResult.model_construct(success=True, data={1: "a"}),
        ToolResult.model_construct(success=True, message=type("Text", (str,), {})("subclass")),
        ToolResult.model_construct(success=True, data={"c": NotANumber()}),  # its own NaN setting
    ]
    return results


def test_to_wire_writes_what_model_dump_writes():
    """``to_wire`` writes plain results itself (the serializer is built at its first use): the same
    dict, the same failures, the same warnings as ``model_dump(by_alias=True, exclude_none=True,
    mode="json")``; a result no JSON writer takes is the ``unserializable_result`` failure."""
    import warnings

    def outcome(write: Any) -> tuple[dict[str, Any], list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                written: dict[str, Any] = write()
            except (ValueError, TypeError, RecursionError) as exc:
                written = {"code": "unserializable_result", "why": f"{type(exc).__name__}: {exc}"}
        return written, [str(w.message) for w in caught]

    for result in _results():
        wire, warned = outcome(result.to_wire)
        if wire.get("data") == {"code": "unserializable_result"}:  # the same failure, told to the model
            wire = {"code": "unserializable_result", "why": wire["error"].split("(", 1)[1].rsplit(")", 1)[0]}
        dumped = outcome(
            lambda result=result: result.model_dump(by_alias=True, exclude_none=True, mode="json")
        )
        assert (repr(wire), warned) == (repr(dumped[0]), dumped[1])


def _plain_edges() -> list[object]:
    """Plain JSON on both sides of what ``json_ready`` copies itself (its node budget and depth)."""
    from collections import OrderedDict

    from steerable_agent_runtime._plain_json import MAX_PLAIN_DEPTH, MAX_PLAIN_NODES

    def nested(levels: int) -> list[object]:
        value: list[object] = [1]
        for _ in range(levels - 1):
            value = [value]
        return value

    return [
        [0] * (MAX_PLAIN_NODES - 2), [0] * (MAX_PLAIN_NODES - 1), [0] * (MAX_PLAIN_NODES + 100),
        nested(MAX_PLAIN_DEPTH - 1), nested(MAX_PLAIN_DEPTH), nested(MAX_PLAIN_DEPTH + 1),
        {"lone": "\udcff", "\ud800key": 1}, OrderedDict(a=1), ({"a": (1,)},), [float("-inf"), True, None],
        {"k": {"deep": [{"x": 1.5}]}}, "", 0, False,
    ]  # fmt: skip


def _written(make: Any) -> str:
    """``repr`` of what ``make()`` gives, or of the exception it raises."""
    try:
        return repr(make())
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def test_plain_copy_is_to_jsonable_python_for_plain_values():
    """Plain values are copied without pydantic (``steerable call``'s start-up) into exactly what
    ``to_jsonable_python(value, fallback=str)`` makes of them; the rest are left to it."""
    from pydantic_core import to_jsonable_python

    from steerable_agent_runtime._plain_json import NotPlain, plain_copy

    copied = 0
    for value in [*_odd_values(), *_plain_edges()]:
        try:
            made = plain_copy(value)
        except NotPlain:
            continue
        copied += 1
        assert repr(made) == repr(to_jsonable_python(value, fallback=str))
        assert made is not value or not isinstance(value, dict | list)  # a copy: the tool's own is kept apart
    assert copied == 20


async def test_dispatch_wire_is_dispatch_then_to_wire_env_1_env_4_env_5():
    """``ToolRouter.dispatch_wire`` writes a plain success without a ``ToolResult``: the dict is the
    one ``dispatch`` gives, for every return value (odd ones, failing ones, lone surrogates, NaN)
    and for every envelope (a ``ToolCall``, its wire dict, arguments as a JSON string, a malformed
    one, an unknown tool, invalid arguments, a tool's signal)."""
    from steerable_agent_runtime import ToolRetry, ToolRouter, tool

    values = [*_odd_values(), *_plain_edges()]
    router = ToolRouter()

    @tool(router=router)
    def give(index: int) -> object:
        """Return the value."""
        return values[index]

    @tool(router=router)
    def give_data(index: int) -> dict[str, object]:
        """Return the value as data."""
        return {"v": values[index]}

    @tool(router=router)
    def refuse() -> None:
        """Ask for another call."""
        raise ToolRetry("not now", next_action="wait", data={"code": "busy"})

    calls: list[Any] = []
    for index in range(len(values)):
        for name in ("give", "give_data"):
            calls.append({"id": f"c{index}", "name": name, "arguments": {"index": index}})
    calls += [
        ToolCall(id="t1", name="give", arguments={"index": 1}),
        {"id": "s1", "name": "give_data", "arguments": '{"index": 6}'},
        {"id": "x1", "name": "give", "arguments": {"index": 1}, "extra": True},
        {"id": 5, "name": "give", "arguments": {}},
        {"id": "u1", "name": "giv", "arguments": {}},
        {"id": "i1", "name": "give", "arguments": {"index": "one"}},
        {"id": "r1", "name": "refuse", "arguments": {}},
        ["not", "a", "call"],
    ]
    for call in calls:
        wire = await router.dispatch_wire(call)
        assert repr(wire) == repr((await router.dispatch(call)).to_wire()), call
        json.dumps(wire)  # every transport can write it
    assert await router.dispatch_wire({"id": "c6", "name": "give", "arguments": {"index": 6}}) == {
        "success": True,
        "data": {"value": "text"},
    }


async def test_plain_calls_keep_what_dispatch_did_before():
    """What ``dispatch`` did before plain calls skipped the wire types: a returned list nests as deep
    as ``to_jsonable_python`` allows it at the top (254 levels), the caller's envelope is never
    changed by the tool (its ``context.call.arguments`` is a copy), and a ``ToolResult`` subclass
    that is also a ``Mapping`` is passed through as a result, not taken as data."""
    from collections.abc import Mapping

    from steerable_agent_runtime import CallContext, ToolRouter, tool

    class MappingResult(ToolResult):
        pass

    Mapping.register(MappingResult)
    router = ToolRouter()

    @tool(router=router)
    def deep() -> object:
        """Return 254 nested lists."""
        value: list[object] = [1]
        for _ in range(253):
            value = [value]
        return value

    @tool(router=router)
    def noting(context: CallContext, x: int = 0) -> int:
        """Write into the call's arguments."""
        context.call.arguments["seen"] = True
        return x

    @tool(router=router)
    def mapped() -> ToolResult:
        """Return a result that is also a Mapping."""
        return MappingResult(success=False, error="e")

    for envelope in (
        {"id": "d", "name": "deep", "arguments": {}},
        ToolCall(id="d", name="deep", arguments={}),
    ):
        assert (await router.dispatch_wire(envelope))["success"] is True
    sent = {"id": "n", "name": "noting", "arguments": {"x": 1}}
    assert await router.dispatch_wire(sent) == {"success": True, "data": {"value": 1}}
    assert sent == {"id": "n", "name": "noting", "arguments": {"x": 1}}
    assert await router.dispatch_wire({"id": "m", "name": "mapped", "arguments": {}}) == {
        "success": False,
        "error": "e",
    }
