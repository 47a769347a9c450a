"""How deeply a call's arguments nest, measured without recursion, and the answer when too deeply.

A model that loops on ``[`` or a host forwarding a runaway structure must not reach a validator
that recurses (``jsonschema`` walks a recursive schema with 4-10 Python frames a level, so about
100-250 levels end in ``RecursionError``), nor a serialiser. The router checks every call against
:data:`MAX_ARGUMENT_DEPTH` before validating it, and the provider's decoding of a model's argument
text does too, so the agent loop never holds such a structure (SAFE-6, docs/runtime.md, Dispatch).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from ._codes import ToolErrorCode
from .errors import ToolRetry

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "arguments_too_deep",
    "nesting_depth",
    "too_deep_retry",
]

MAX_ARGUMENT_DEPTH: Final = 64
"""The deepest accepted arguments, in levels of objects and arrays; the arguments object is 1."""

_CONTAINERS: Final = frozenset({dict, list, tuple})
"""The types that nest, compared exactly: what JSON decoding makes (checked by ``type()``, which
costs half an ``isinstance`` on the path every call takes)."""


def arguments_too_deep(arguments: Mapping[str, Any]) -> int | None:
    """How deeply ``arguments`` nest when that is more than :data:`MAX_ARGUMENT_DEPTH`, else ``None``.

    Iterative (a nesting of any depth cannot overflow the stack) and cheap on the common shapes:
    arguments holding no object or array cost one pass over their values (about 0.1 us for a
    few), and an array of scalars one C-level pass over its items. A structure that contains
    itself (only a Python caller can build one) is endlessly deep: it is refused too, and
    measured as at least one level past the limit.

    Args:
        arguments: The call's arguments object (level 1); nested dicts, lists and tuples count.

    Returns:
        The depth in levels (``{"a": [1]}`` is 2), or ``None`` when it is within the limit.
    """
    for value in arguments.values():
        if type(value) in _CONTAINERS:
            break
    else:
        return None  # the usual call: scalars only
    stack: list[Iterator[Any]] = [iter(arguments.values())]
    while stack:
        for child in stack[-1]:
            kind = type(child)
            if kind not in _CONTAINERS:
                continue
            if len(stack) >= MAX_ARGUMENT_DEPTH:  # the child is one level past the limit
                return max(nesting_depth(arguments), MAX_ARGUMENT_DEPTH + 1)
            items = child.values() if kind is dict else child
            if not _CONTAINERS.isdisjoint(map(type, items)):  # else nothing in it nests further
                stack.append(iter(items))
                break
        else:
            stack.pop()
    return None


def nesting_depth(value: Mapping[str, Any]) -> int:
    """The depth of ``value`` in levels of objects and arrays (``{}`` is 1), without recursion.

    Each container is entered once, so a structure that contains itself is measured to where it
    comes back to itself. For the error's text: it walks every value.
    """
    deepest = 1
    seen = {id(value)}
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        for child in node.values() if type(node) is dict else node:
            if type(child) in _CONTAINERS and id(child) not in seen:
                seen.add(id(child))
                pending.append((child, depth + 1))
    return deepest


def too_deep_retry(name: str, depth: int | None, *, for_schema: bool = False) -> ToolRetry:
    """The signal answering arguments of tool ``name`` nested ``depth`` levels deep.

    Args:
        name: The tool's name, as called.
        depth: The measured depth; ``None`` when the JSON text was too deep to decode at all.
        for_schema: The arguments were within the limit but the tool's validator ran out of
            stack on them (a schema that costs many frames a level): the text says so.

    Returns:
        A :class:`ToolRetry` (``needsFollowup``) with ``data.code == "arguments_too_deep"``,
        ``data.maxDepth`` and, when known, ``data.depth``.
    """
    how = f"nested {depth} levels deep" if depth is not None else "nested too deeply to decode"
    limit = f"at most {MAX_ARGUMENT_DEPTH} levels are accepted"
    if for_schema:
        limit = "more than this tool's schema can check"
    data: dict[str, Any] = {"code": ToolErrorCode.ARGUMENTS_TOO_DEEP, "maxDepth": MAX_ARGUMENT_DEPTH}
    if depth is not None:
        data["depth"] = depth
    return ToolRetry(
        f"Invalid arguments for {name}: {how}; {limit}. Send flatter arguments.",
        data=data,
    )
