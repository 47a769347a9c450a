"""ToolCall / ToolResult envelopes and completion semantics (ENV-*)."""

import json
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError

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


def _results() -> list[ToolResult]:
    """Results of every shape: plain ones, odd ``data`` values, extra fields, unvalidated ones."""
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
