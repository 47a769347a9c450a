"""What the SAFE-6 process tests share: a plugin tool with a recursive schema, deep arguments, the answer."""

from __future__ import annotations

import json
from typing import Any

WALK_PLUGIN = """
from steerable_agent_runtime import Tool

NODE = {"type": "array", "items": {"$ref": "#/$defs/node"}}
SCHEMA = {
    "type": "object",
    "properties": {"value": {"$ref": "#/$defs/node"}},
    "required": ["value"],
    "$defs": {"node": NODE},
}


def register(router):
    async def walk(value):
        return {"walked": True}

    router.register(Tool.from_schema("walk", SCHEMA, walk, description="Walk a tree of lists", mode="read"))
"""
"""A plugin whose ``walk`` tool has a recursive schema: ``jsonschema`` walks it with about four
Python frames a level, so without the depth rule 300 levels end the process in ``RecursionError``."""


def arguments_text(levels: int) -> str:
    """JSON arguments nested ``levels`` deep: the object is level 1, ``value``'s lists the rest."""
    inner = levels - 1
    return '{"value":' + "[" * inner + "]" * inner + "}"


def too_deep(levels: int, name: str = "walk") -> dict[str, Any]:
    """The wire ``ToolResult`` a model gets for arguments of ``name`` nested ``levels`` deep."""
    return {
        "success": False,
        "needsFollowup": True,
        "error": f"Invalid arguments for {name}: nested {levels} levels deep; at most 64 levels are accepted. "
        "Send flatter arguments.",
        "data": {"code": "arguments_too_deep", "maxDepth": 64, "depth": levels},
    }


def parse_error_too_deep(request_id: Any = None) -> dict[str, Any]:
    """The answer to a frame nested deeper than the JSON decoder goes (about 1,000 levels).

    It carries the ``id`` at the request's top level, read without decoding the frame; ``null``
    when the frame has none there (an ``id`` nested deeper does not count) or is not an object.
    """
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": -32700, "message": "Parse error: too deeply nested"},
    }


PARSE_ERROR_TOO_DEEP: dict[str, Any] = parse_error_too_deep(None)
"""The answer to a frame too deep to decode that has no usable top-level ``id``."""


def deep_request(request_id: Any, levels: int, *, method: str = "system.ping", id_last: bool = False) -> str:
    """A request whose ``params`` nest ``levels`` deep, its ``id`` first, last, or (``None``) left out.

    ``params`` holds an ``id`` of its own (``"decoy"``), deeper than the top level: never the answer's.
    """
    params = '{"id": "decoy", "deep": ' + "[" * (levels - 2) + "]" * (levels - 2) + "}"
    head = f'"jsonrpc": "2.0", "method": "{method}", "params": {params}'
    if request_id is None:
        return f"{{{head}}}"
    shown = json.dumps(request_id)
    return f'{{{head}, "id": {shown}}}' if id_last else f'{{"id": {shown}, {head}}}'


GATED_BASH = "while [ ! -e gate ]; do sleep 0.02; done; echo first"
"""A ``bash`` command that runs until the test creates ``gate`` in the workspace: a request kept in
flight for as long as a test needs (SAFE-7)."""
