"""Plain arguments pass the built-in tools without pydantic's validator, and get pydantic's answer.

``_plain_arguments.plain_first`` passes on the arguments a tool's schema plainly admits, without
building pydantic's validator (start-up: ``steerable call read_file``). These tests hold it to
pydantic's own answer for every built-in tool over a grid of values, check that what it does not
read goes to pydantic, and that the file tools and ``bash`` use it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd
from steerable_agent_runtime._plain_arguments import plain_first
from steerable_agent_runtime._signature import function_schema

VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    999,
    1000,
    1001,
    2000,
    2001,
    120_000,
    600_000,
    600_001,
    10**30,
    1.0,
    0.5,
    "",
    "x",
    "1",
    "true",
    "a" * 2049,
    [],
    ["x"],
    {},
    {"oldText": "a", "newText": "b"},
]


class _ToPydantic(Exception):
    """Raised by the stand-in validator: the plain path handed the call on."""


def _handed_on(arguments: dict[str, Any]) -> dict[str, Any]:
    raise _ToPydantic


def _grid(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Argument sets: the required ones plainly given, then each property at each value, and odd keys."""
    base: dict[str, Any] = {name: "x" for name in schema.get("required", ())}
    grid: list[dict[str, Any]] = [base, {}, {**base, "unknown": 1}]
    for name in schema["properties"]:
        grid += [{**base, name: value} for value in VALUES]
    return grid


def _typed(values: dict[str, Any]) -> list[tuple[str, type, Any]]:
    return sorted((key, type(value), value) for key, value in values.items())


@pytest.mark.parametrize(
    "name", ["read_file", "write_file", "edit_file", "apply_patch", "list_dir", "glob", "grep", "bash"]
)
def test_plain_arguments_get_pydantics_answer(tmp_path: Path, name: str):
    tool = workspace_tools_for_cwd(tmp_path, environ={}).get(name)
    assert tool is not None
    pydantic_validate = function_schema(tool.handler, name=name).adapter.validator.validate_python
    plain = plain_first(tool.parameters, _handed_on)
    taken = 0
    for arguments in _grid(tool.parameters):
        try:
            passed = plain(dict(arguments))
        except _ToPydantic:
            continue
        taken += 1
        assert _typed(passed) == _typed(pydantic_validate(dict(arguments))), arguments
        assert passed is not arguments
    assert taken > 5  # the plain path is taken, not only handed on


def test_what_the_plain_path_does_not_read_goes_to_pydantic():
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": "^a"},
            "count": {"type": "integer", "multipleOf": 2},
            "ratio": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "plain": {"type": "string", "maxLength": 3},
        },
        "required": ["plain"],
        "additionalProperties": False,
    }
    plain = plain_first(schema, _handed_on)
    assert plain({"plain": "abc"}) == {"plain": "abc"}
    for arguments in (
        {"plain": "abc", "name": "a"},
        {"plain": "abc", "count": 2},
        {"plain": "abc", "ratio": 1.0},
        {"plain": "abc", "tags": []},
        {"plain": "abcd"},
        {"plain": 1},
        {},
        {"plain": "abc", "other": 1},
    ):
        with pytest.raises(_ToPydantic):
            plain(arguments)
    # a schema it does not read at the top goes to the validator whole
    assert plain_first({**schema, "additionalProperties": True}, _handed_on) is _handed_on
    assert plain_first({**schema, "minProperties": 1}, _handed_on) is _handed_on


async def test_the_file_tools_and_bash_pass_plain_arguments_without_pydantic(tmp_path: Path):
    """Dispatch through the registered tools: a plain call is answered, a wrong one gets pydantic's
    errors, as before (the validator is built then)."""
    (tmp_path / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    router = workspace_tools_for_cwd(tmp_path, environ={})
    read = await router.dispatch(
        ToolCall(id="1", name="read_file", arguments={"path": "notes.txt", "limit": 1})
    )
    assert read.success and read.data is not None and read.data["content"] == "one\n"
    wrong = await router.dispatch(
        ToolCall(id="2", name="read_file", arguments={"path": "notes.txt", "limit": 0})
    )
    assert wrong.data == {
        "code": "invalid_arguments",
        "errors": [{"field": "limit", "message": "Input should be greater than or equal to 1"}],
    }
