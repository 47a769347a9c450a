"""Scalars sent as strings (issue 13, item 7): ENV-9 through the real router.

A string that is exactly a JSON literal of the type the schema asks for is coerced before
validation; anything looser is refused as the wrong type; string positions are never touched.
"""

from typing import Annotated, Any

import pytest
from pydantic import Field

from steerable_agent_runtime import Tool, ToolCall, ToolRouter, tool
from steerable_agent_runtime._coerce import coerce_arguments

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "flag": {"type": "boolean"},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "either": {"type": ["integer", "string"]},
        "label": {"type": "string"},
        "free": {},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "inner": {"$ref": "#/$defs/Inner"},
        "rows": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Inner"}}, {"type": "null"}]},
    },
    "additionalProperties": False,
    "$defs": {
        "Inner": {
            "type": "object",
            "properties": {"depth": {"type": "integer"}, "on": {"type": "boolean"}},
            "additionalProperties": False,
        }
    },
}


def _router() -> tuple[ToolRouter, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    router = ToolRouter()

    async def handler(**kwargs: Any) -> dict[str, Any]:
        seen.append(kwargs)
        return {"got": kwargs}

    router.register(Tool.from_schema("shaped", SCHEMA, handler))

    @tool(router=router)
    async def typed(
        limit: Annotated[int, Field(ge=1, strict=True)] | None = None,
        ratio: float = 1.0,
        verbose: bool = False,
        tags: list[int] | None = None,
    ) -> dict[str, Any]:
        kwargs = {"limit": limit, "ratio": ratio, "verbose": verbose, "tags": tags}
        seen.append(kwargs)
        return {"got": kwargs}

    return router, seen


async def _dispatch(router: ToolRouter, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await router.dispatch(ToolCall(id="c1", name=name, arguments=arguments))
    return result.to_wire()


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"n": "1"}, {"n": 1}),
        ({"n": "-2"}, {"n": -2}),
        ({"n": "0"}, {"n": 0}),
        ({"x": "1.5"}, {"x": 1.5}),
        ({"x": "1"}, {"x": 1}),
        ({"x": "-1e3"}, {"x": -1000.0}),
        ({"flag": "true"}, {"flag": True}),
        ({"flag": "false"}, {"flag": False}),
        ({"maybe": "7"}, {"maybe": 7}),
        ({"ids": ["1", 2, "3"]}, {"ids": [1, 2, 3]}),
        ({"inner": {"depth": "4", "on": "true"}}, {"inner": {"depth": 4, "on": True}}),
        ({"rows": [{"depth": "5"}]}, {"rows": [{"depth": 5}]}),
    ],
)
async def test_exact_literals_are_coerced_before_a_schema_tool_runs(  # ENV-9
    arguments: dict[str, Any], expected: dict[str, Any]
) -> None:
    router, seen = _router()
    coerced = await _dispatch(router, "shaped", arguments)
    correct = await _dispatch(router, "shaped", expected)
    assert coerced == correct == {"success": True, "data": {"got": expected}}
    assert seen[0] == seen[1] == expected
    assert [type(v) for v in seen[0].values()] == [type(v) for v in expected.values()]


@pytest.mark.parametrize(
    "arguments",
    [
        {"n": " 1"},
        {"n": "1 "},
        {"n": "1\n"},
        {"n": "01"},
        {"n": "+1"},
        {"n": "1.5"},
        {"n": "1.0"},
        {"n": "1e3"},
        {"n": "1,000"},
        {"n": "١"},  # an Arabic-Indic digit
        {"n": ""},
        {"n": "true"},
        {"x": "NaN"},
        {"x": "Infinity"},
        {"x": "1e999"},
        {"x": ".5"},
        {"flag": "yes"},
        {"flag": "True"},
        {"flag": "1"},
        {"ids": ["1", "two"]},
        {"inner": {"depth": "deep"}},
    ],
)
async def test_anything_looser_is_refused_naming_the_field(arguments: dict[str, Any]) -> None:  # ENV-9
    router, seen = _router()
    wire = await _dispatch(router, "shaped", arguments)
    assert wire["success"] is False
    assert wire["needsFollowup"] is True
    assert wire["data"]["code"] == "invalid_arguments"
    assert len(wire["data"]["errors"]) == 1
    assert "Fix these fields and call shaped again." in wire["error"]
    assert seen == []


async def test_string_positions_are_never_touched() -> None:  # ENV-9
    router, seen = _router()
    arguments = {"either": "1", "label": "2", "free": "true"}
    wire = await _dispatch(router, "shaped", arguments)
    assert wire == {"success": True, "data": {"got": arguments}}
    assert seen == [arguments]
    untouched, problems = coerce_arguments(SCHEMA, arguments)
    assert untouched is arguments
    assert problems == []


async def test_a_function_tool_gets_the_real_types_and_nothing_looser() -> None:  # ENV-9
    router, seen = _router()
    wire = await _dispatch(router, "typed", {"limit": "2", "ratio": "0.5", "verbose": "true", "tags": ["1"]})
    assert wire == {
        "success": True,
        "data": {"got": {"limit": 2, "ratio": 0.5, "verbose": True, "tags": [1]}},
    }
    assert seen == [{"limit": 2, "ratio": 0.5, "verbose": True, "tags": [1]}]
    # pydantic's lax mode alone would take "yes" and " 2": the exact-literal rule holds for every tool
    for loose in ({"verbose": "yes"}, {"verbose": "on"}, {"ratio": " 2"}, {"limit": "2.0"}):
        refused = await _dispatch(router, "typed", loose)
        assert refused["success"] is False, loose
        assert refused["data"]["code"] == "invalid_arguments"
    assert len(seen) == 1


async def test_the_refusal_says_what_is_accepted() -> None:  # ENV-9
    router, _ = _router()
    wire = await _dispatch(router, "typed", {"limit": " 2"})
    assert wire["error"] == (
        "Invalid arguments for typed: limit: expected an integer, got the string ' 2' (a string is "
        'accepted only as an exact JSON literal such as "1"). Fix these fields and call typed again.'
    )
    assert wire["data"]["errors"] == [
        {
            "field": "limit",
            "message": "expected an integer, got the string ' 2' "
            '(a string is accepted only as an exact JSON literal such as "1")',
        }
    ]


async def test_coerced_values_still_meet_the_schema_constraints() -> None:  # ENV-9
    router, seen = _router()
    wire = await _dispatch(router, "typed", {"limit": "0"})
    assert wire["data"]["code"] == "invalid_arguments"
    assert wire["data"]["errors"] == [
        {"field": "limit", "message": "Input should be greater than or equal to 1"}
    ]
    assert seen == []


def test_huge_and_recursive_inputs_do_not_crash() -> None:
    ints = {"type": "object", "properties": {"n": {"type": "integer"}}}
    huge = "9" * 5000
    value, problems = coerce_arguments(ints, {"n": huge})
    assert value == {"n": huge} and problems and problems[0]["field"] == "n"
    assert coerce_arguments(ints, {"n": "9" * 4000})[0]["n"] == int("9" * 4000)
    recursive = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/Node"}, "v": {"type": "integer"}},
            }
        },
    }
    nested: dict[str, Any] = {"v": "1"}
    for _ in range(200):
        nested = {"next": nested, "v": "2"}
    out, problems = coerce_arguments(recursive, nested)
    assert out["v"] == 2 and problems == []
    assert coerce_arguments({"$ref": "#/$defs/Missing"}, {"n": "1"}) == ({"n": "1"}, [])


async def test_a_refused_string_is_listed_with_the_other_problems() -> None:  # ENV-9
    router, seen = _router()
    wire = await _dispatch(router, "shaped", {"n": "1.5", "label": 3, "extra": True})
    assert wire["data"]["errors"] == [
        {"field": "(arguments)", "message": "Additional properties are not allowed ('extra' was unexpected)"},
        {"field": "label", "message": "3 is not of type 'string'"},
        {
            "field": "n",
            "message": "expected an integer, got the string '1.5' "
            '(a string is accepted only as an exact JSON literal such as "1")',
        },
    ]
    assert seen == []


def test_two_object_alternatives_coerce_only_what_no_alternative_takes_as_a_string():  # ENV-9
    from steerable_agent_runtime.tools import Tool

    schema = {
        "type": "object",
        "properties": {
            "target": {
                "anyOf": [
                    {"type": "object", "properties": {"pid": {"type": "integer"}, "n": {"type": "integer"}}},
                    {"type": "object", "properties": {"pid": {"type": "string"}, "n": {"type": "integer"}}},
                ]
            }
        },
        "required": ["target"],
    }

    async def handler(**kwargs):
        return kwargs

    tool = Tool.from_schema("kill", schema, handler)
    # a valid call stays exactly as it was: the string branch takes "0123" and "123" as sent
    assert tool.validate({"target": {"pid": "0123"}}) == {"target": {"pid": "0123"}}
    assert tool.validate({"target": {"pid": "123"}}) == {"target": {"pid": "123"}}
    # a key both alternatives want as an integer is still coerced
    assert tool.validate({"target": {"pid": 7, "n": "2"}}) == {"target": {"pid": 7, "n": 2}}


def test_a_string_property_with_items_or_properties_is_still_walked():  # ENV-9
    """A property typed string but given ``items`` (or ``properties``) is walked as before when an
    array (or object) is sent there: only a plain ``{"type": "string"}`` is skipped."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "tags": {"type": "string", "items": {"type": "integer"}},
            "shape": {"type": "string", "properties": {"n": {"type": "integer"}}},
            "plain": {"type": "string"},
        },
    }
    value, problems = coerce_arguments(schema, {"tags": ["1", "x"], "shape": {"n": "2"}, "plain": ["3"]})
    assert value == {"tags": [1, "x"], "shape": {"n": 2}, "plain": ["3"]}
    assert problems == [
        {
            "field": "tags.1",
            "message": "expected an integer, got the string 'x' "
            '(a string is accepted only as an exact JSON literal such as "1")',
        }
    ]
