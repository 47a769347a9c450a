"""What the SAFE-6 process tests share: a plugin tool with a recursive schema, deep arguments, the answer."""

from __future__ import annotations

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


PARSE_ERROR_TOO_DEEP: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32700, "message": "Parse error: too deeply nested"},
}
"""The answer to a frame nested deeper than the JSON decoder goes (about 1,000 levels): its id
cannot be read, so it is ``null``."""

GATED_BASH = "while [ ! -e gate ]; do sleep 0.02; done; echo first"
"""A ``bash`` command that runs until the test creates ``gate`` in the workspace: a request kept in
flight for as long as a test needs (SAFE-7)."""
