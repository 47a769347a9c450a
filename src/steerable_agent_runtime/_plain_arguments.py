"""Arguments a built-in tool's schema plainly admits, passed on without building pydantic's validator.

The file tools and ``bash`` are registered with their JSON Schemas computed ahead of time
(``_tool_schemas``); pydantic's validator for each is built from the signature at its first call.
That build costs the first call some 25 ms (pydantic's schema machinery, and its plugin lookup,
which reads the entry points of every installed distribution): most of what a one-shot ``steerable
call read_file`` costs over the interpreter's start (``benchmarks/startup.py``).

Most calls need none of it. When every argument is a JSON string, integer (not a boolean),
boolean or null that its property's schema plainly admits (``type``, an ``anyOf`` of such
branches, ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``minLength``,
``maxLength``; ``title``, ``description`` and ``default`` say nothing), no argument is unknown and
none required is missing, pydantic returns the arguments as they are: they are passed on as they
are (a copy). Any other call (a list, an object, a number, an argument out of bounds, a property
whose schema says more) goes to pydantic, which accepts or refuses it with its own errors.

Only for tools whose schema states everything their signature checks: the runtime's own, whose
schemas are generated from their signatures (``tests/test_plain_arguments.py`` holds both
validators to the same answers). A check the schema does not show (an ``AfterValidator``) would
be skipped, so :func:`builtin_tool` is not offered for other tools.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, Unpack

from ._coerce import exact_scalars
from ._signature import validator_at_first_call
from .tools import Tool

if TYPE_CHECKING:
    from .tools import ToolOptions

__all__ = ["builtin_tool", "plain_first"]

Validate = Callable[[dict[str, Any]], dict[str, Any]]
_Check = Callable[[Any], bool]

_SAYS_NOTHING: Final = frozenset({"title", "description", "default"})
"""Keywords that annotate a schema without constraining a value."""
_TOP: Final = frozenset({"type", "properties", "required", "additionalProperties", "title", "$defs"})
"""What an arguments schema may hold for the plain path: ``$defs`` only serve ``$ref``, never plain."""
_BOUNDS: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "minimum": operator.ge,
    "maximum": operator.le,
    "exclusiveMinimum": operator.gt,
    "exclusiveMaximum": operator.lt,
}
"""An integer bound's keyword, and the comparison ``value OP bound`` that must hold (pydantic's ``ge``...)."""


def builtin_tool(
    fn: Callable[..., Any], *, parameters: Mapping[str, Any], **options: Unpack[ToolOptions]
) -> Tool:
    """``Tool.from_function(fn, parameters=parameters, ...)``, plain arguments passed without pydantic.

    For the runtime's built-in tools only (their ``parameters`` are generated from ``fn``'s
    signature): see the module docstring.
    """
    tool = Tool.from_function(fn, parameters=parameters, **options)
    checked = plain_first(tool.parameters, validator_at_first_call(fn, tool.name))
    return replace(tool, validate=exact_scalars(tool.name, tool.parameters, checked))


def plain_first(schema: Mapping[str, Any], validate: Validate) -> Validate:
    """Wrap ``validate`` (pydantic's): arguments ``schema`` plainly admits skip it, as they are.

    Args:
        schema: The tool's ``parameters`` (an ``object`` schema with ``additionalProperties: false``).
        validate: The validator every other call goes to.

    Returns:
        ``validate`` itself when the schema is not one this module reads, else the wrapper.
    """
    properties = schema.get("properties")
    if (
        not set(schema) <= _TOP
        or schema.get("type") != "object"
        or schema.get("additionalProperties") is not False
        or not isinstance(properties, Mapping)
    ):
        return validate
    checks = {name: _check(sub) for name, sub in properties.items()}
    plain = {name: check for name, check in checks.items() if check is not None}
    required = frozenset(schema.get("required", ()))

    def validated(arguments: dict[str, Any]) -> dict[str, Any]:
        if not required <= arguments.keys():
            return validate(arguments)
        for key, value in arguments.items():
            check = plain.get(key)
            if check is None or not check(value):
                return validate(arguments)
        return dict(arguments)

    return validated


def _check(schema: Any) -> _Check | None:
    """A test of one value against ``schema``; ``None`` when the schema says more than this reads."""
    if not isinstance(schema, Mapping):
        return None
    keys = set(schema) - _SAYS_NOTHING
    if "anyOf" in schema:
        branches = schema["anyOf"]
        if keys != {"anyOf"} or not isinstance(branches, list) or not branches:
            return None
        checks = [_check(branch) for branch in branches]
        if any(check is None for check in checks):
            return None
        admitted = [check for check in checks if check is not None]
        return lambda value: any(check(value) for check in admitted)
    kind = schema.get("type")
    if kind == "string" and keys <= {"type", "minLength", "maxLength"}:
        shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
        return lambda value: (
            type(value) is str and len(value) >= shortest and (longest is None or len(value) <= longest)
        )
    if kind == "integer" and keys <= {"type", *_BOUNDS}:
        bounds = [(_BOUNDS[key], schema[key]) for key in _BOUNDS if key in schema]
        return lambda value: type(value) is int and all(holds(value, bound) for holds, bound in bounds)
    if kind == "boolean" and keys == {"type"}:
        return lambda value: type(value) is bool
    if kind == "null" and keys == {"type"}:
        return lambda value: value is None
    return None
