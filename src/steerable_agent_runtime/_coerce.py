"""Scalars sent as strings: ``"limit": "1"`` becomes ``1`` before a tool's arguments are validated.

Weak models and MCP clients (the MCP Inspector's ``--tool-arg limit=1``) send numbers and booleans
as strings (ENV-9). Where a tool's JSON Schema admits no string at a position but admits an
integer, a number or a boolean, a string that is exactly a JSON literal of that type is replaced by
its value, and any other string there is refused as the wrong type; positions that admit a string
are never touched. The accepted and refused strings are tabled in docs/runtime.md, Dispatch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, TypeVar

from ._codes import ToolErrorCode
from ._problems import invalid_text, validation_problems
from .errors import ToolRetry

__all__ = ["coerce_arguments", "exact_scalars"]

Validate = Callable[[dict[str, Any]], dict[str, Any]]

_INTEGER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)", re.ASCII)
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)
_MAX_DEPTH: Final = 64
_MAX_DIGITS: Final = 4000  # below int()'s default str-conversion limit (4300 digits)
_SCALAR_TYPES: Final = frozenset({"integer", "number", "boolean"})

_Container = TypeVar("_Container", dict[str, Any], list[Any])


def coerce_arguments(
    schema: Mapping[str, Any], arguments: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """Return ``arguments`` with exact-literal strings turned into the type the schema asks for.

    Args:
        schema: The tool's ``parameters`` (an object JSON Schema).
        arguments: The call's arguments, as the model sent them (never modified).

    Returns:
        The arguments (the same object when nothing was coerced) and the problems found: one
        ``{field, message}`` per string at a non-string position that is not an exact literal.
    """
    return _Coercion(schema)(arguments)


_WALKED: Final = (str, dict, list)
"""The types of a value a walk may change (``_children`` enters these only)."""


class _Coercion:
    """:func:`coerce_arguments` for one schema, with its top level read once.

    When the arguments object has one shape (``properties``, the usual case), the properties a
    string sent there can never change (plain ``{"type": "string"}``) are left out of every call's
    walk: a call of ``read_file(path=...)`` walks nothing (dispatch's hot path,
    ``benchmarks/dispatch_overhead.py``).
    """

    __slots__ = ("_planned", "_schema", "_top")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._schema = schema
        self._top: dict[str, Any] | None = None
        self._planned = False  # at the first call: registering a tool stays cheap (start-up)

    def __call__(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, str]]]:
        problems: list[dict[str, str]] = []
        if not self._planned:
            self._top, self._planned = _walked_properties(self._schema), True
        top = self._top
        if top is None:
            return _walk(self._schema, self._schema, arguments, (), problems, 0), problems
        slots = None
        for key, value in arguments.items():
            if isinstance(value, _WALKED) and key in top:  # a number, a bool or None is never changed
                if slots is None:
                    slots = []
                slots.append((key, top[key]))
        if slots is None:
            return arguments, problems
        return _children(self._schema, arguments, slots, (), problems, 0), problems


def _walked_properties(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The top level's properties a walk may change, or ``None`` when it has no single shape."""
    leaves = list(_leaves(schema, schema))
    properties = leaves[0].get("properties") if len(leaves) == 1 and isinstance(leaves[0], Mapping) else None
    if not isinstance(properties, Mapping):
        return None
    return {key: sub for key, sub in properties.items() if not _plain_string(sub)}


def _plain_string(schema: Any) -> bool:
    """A string position the walk never enters: nothing sent there is ever changed.

    ``{"type": "string"}`` with no alternatives (``anyOf``, ``oneOf``, ``$ref``) and nothing the
    walk would follow into an object or an array sent there anyway (``properties``, ``items``).
    """
    return (
        isinstance(schema, Mapping)
        and schema.get("type") == "string"
        and not any(key in schema for key in ("anyOf", "oneOf", "$ref", "properties", "items"))
    )


def exact_scalars(name: str, schema: Mapping[str, Any], validate: Validate) -> Validate:
    """Wrap a tool's validator: coerce exact literals first, refuse looser strings at typed positions.

    ``Tool.from_function`` and ``Tool.from_schema`` use it; a :class:`Tool` built with its own
    ``validate`` gets the arguments as sent (``tool_search`` clamps ``max_results`` its own way).
    A refused string is listed with the validator's other problems, replacing its entry for that
    field, in the validator's order, as one ``invalid_arguments`` :class:`ToolRetry`.

    Args:
        name: The tool's name, for the error text.
        schema: The tool's ``parameters``.
        validate: The validator (raises ``ValidationError`` or :class:`ToolRetry`).

    Returns:
        The wrapped validator.
    """
    coercion = _Coercion(schema)

    def checked(arguments: dict[str, Any]) -> dict[str, Any]:
        coerced, problems = coercion(arguments)
        if not problems:
            return validate(coerced)
        from pydantic import ValidationError  # here: registering a tool imports no pydantic

        others: list[dict[str, str]] = []
        try:
            validate(coerced)
        except ValidationError as exc:
            others = validation_problems(exc)
        except ToolRetry as retry:
            others = _retry_problems(retry)
        listed = _merged(problems, others)
        raise ToolRetry(
            invalid_text(name, listed), data={"code": ToolErrorCode.INVALID_ARGUMENTS, "errors": listed}
        )

    return checked


def _merged(problems: list[dict[str, str]], others: list[dict[str, str]]) -> list[dict[str, str]]:
    ours = {p["field"]: p for p in problems}
    listed: list[dict[str, str]] = []
    placed: set[str] = set()
    for problem in others:
        field_name = problem["field"]
        if field_name not in ours:
            listed.append(problem)
        elif field_name not in placed:
            listed.append(ours[field_name])
            placed.add(field_name)
    listed.extend(p for f, p in ours.items() if f not in placed)
    return listed


def _retry_problems(retry: ToolRetry) -> list[dict[str, str]]:
    data = retry.data
    if not isinstance(data, Mapping) or data.get("code") != ToolErrorCode.INVALID_ARGUMENTS:
        return []
    errors = data.get("errors")
    if not isinstance(errors, list):
        return []
    return [e for e in errors if isinstance(e, dict) and isinstance(e.get("field"), str)]


def _leaves(root: Mapping[str, Any], schema: Any, depth: int = 0) -> Iterator[Any]:
    """The schema's alternatives: itself, or its ``anyOf`` / ``oneOf`` branches, refs followed."""
    if depth > _MAX_DEPTH or not isinstance(schema, Mapping):
        yield schema
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        # siblings of a $ref only narrow what it admits (2020-12 applies both), so following the
        # ref alone can never make a string-admitting position look string-free
        target = _resolve(root, ref)
        if target is None:  # a remote or unknown ref: it may admit anything
            yield None
            return
        yield from _leaves(root, target, depth + 1)
        return
    branches = schema.get("anyOf", schema.get("oneOf")) if "type" not in schema else None
    if isinstance(branches, list) and branches:
        for branch in branches:
            yield from _leaves(root, branch, depth + 1)
        return
    yield schema


def _resolve(root: Mapping[str, Any], ref: str) -> Mapping[str, Any] | None:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def _types(leaf: Any) -> frozenset[str] | None:
    """The JSON types a leaf admits; ``None`` when it does not say (so it may admit a string)."""
    if leaf is True or leaf == {}:
        return None
    if not isinstance(leaf, Mapping):
        return frozenset() if leaf is False else None
    kind = leaf.get("type")
    if isinstance(kind, str):
        return frozenset({kind})
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return frozenset(kind)
    return None


def _walk(
    root: Mapping[str, Any],
    schema: Any,
    value: Any,
    path: tuple[str, ...],
    problems: list[dict[str, str]],
    depth: int,
) -> Any:
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, str):
        return _scalar(root, schema, value, path, problems)
    if isinstance(value, dict):
        properties = _properties(list(_leaves(root, schema)), value)
        if properties is None:
            return value
        slots = [(key, properties[key]) for key in value if key in properties]
        return _children(root, value, slots, path, problems, depth)
    if isinstance(value, list):
        for leaf in _leaves(root, schema):
            items = leaf.get("items") if isinstance(leaf, Mapping) else None
            if isinstance(items, Mapping):
                return _children(root, value, [(i, items) for i in range(len(value))], path, problems, depth)
        return value
    return value


def _properties(leaves: list[Any], value: dict[str, Any]) -> Mapping[str, Any] | None:
    """What each key of an object ``value`` must be, across every alternative that can hold it.

    One object alternative: its ``properties``. Several (``anyOf`` of two object shapes): a key
    gets every alternative's schema for it as an ``anyOf``, so it is coerced only when no
    alternative admits the string as sent; a key that some object alternative leaves open is
    not touched. ``None`` when nothing constrains the keys.
    """
    shapes: list[Mapping[str, Any]] = []
    for leaf in leaves:
        properties = leaf.get("properties") if isinstance(leaf, Mapping) else None
        if isinstance(properties, Mapping):
            shapes.append(properties)
            continue
        kinds = _types(leaf)
        if kinds is None or "object" in kinds:
            return None  # an object alternative without properties: any key may hold anything
    if not shapes:
        return None
    if len(shapes) == 1:
        return shapes[0]
    merged: dict[str, Any] = {}
    for key in value:
        if all(key in shape for shape in shapes):
            merged[key] = {"anyOf": [shape[key] for shape in shapes]}
    return merged


def _children(
    root: Mapping[str, Any],
    value: _Container,
    slots: Iterable[tuple[Any, Any]],
    path: tuple[str, ...],
    problems: list[dict[str, str]],
    depth: int,
) -> _Container:
    """``value`` with each ``(key or index, schema)`` child walked; copied at the first change.

    The caller's object or array is never changed: a coerced child goes into a shallow copy.
    """
    out = value
    for slot, schema in slots:
        item = value[slot]
        if not isinstance(item, (str, dict, list)):
            continue
        new = _walk(root, schema, item, (*path, str(slot)), problems, depth + 1)
        if new is not item:
            if out is value:
                out = value.copy()
            out[slot] = new
    return out


def _scalar(
    root: Mapping[str, Any], schema: Any, value: str, path: tuple[str, ...], problems: list[dict[str, str]]
) -> Any:
    admitted: set[str] = set()
    for leaf in _leaves(root, schema):
        kinds = _types(leaf)
        if kinds is None or "string" in kinds:
            return value  # a string may be valid here: never touched
        admitted |= kinds
    wanted = admitted & _SCALAR_TYPES
    if not wanted:
        return value  # an object or array position: the validator says what is wrong
    if len(value) <= _MAX_DIGITS:
        if "integer" in wanted and _INTEGER.fullmatch(value):
            return int(value)
        if "number" in wanted and _NUMBER.fullmatch(value):
            number = int(value) if _INTEGER.fullmatch(value) else float(value)
            if isinstance(number, int) or math.isfinite(number):
                return number
        if "boolean" in wanted and value in ("true", "false"):
            return value == "true"
    names = " or ".join(
        {"integer": "an integer", "number": "a number", "boolean": "a boolean"}[k]
        for k in ("integer", "number", "boolean")
        if k in wanted
    )
    literal = " or ".join(
        {"integer": '"1"', "number": '"1.5"', "boolean": '"true"/"false"'}[k]
        for k in ("integer", "number", "boolean")
        if k in wanted and not (k == "integer" and "number" in wanted)
    )
    problems.append(
        {
            "field": ".".join(path) or "(arguments)",
            "message": f"expected {names}, got the string {value!r} "
            f"(a string is accepted only as an exact JSON literal such as {literal})",
        }
    )
    return value
