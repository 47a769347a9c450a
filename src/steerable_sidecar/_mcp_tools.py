"""MCP tools as steerable tools: their names, modes and schemas, their results, and the catalogue.

Naming, modes and result mapping are described in ``docs/mcp-sources.md``; the public names are
re-exported by :mod:`steerable_sidecar.mcp_sources`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from steerable_agent_runtime.errors import ConfigError, UserError
from steerable_agent_runtime.modes import mode_from_annotations
from steerable_agent_runtime.tools import Tool, ToolExposure, ToolHandler
from steerable_agent_runtime.types import ToolResult

from ._codes import McpErrorCode
from ._mcp_config import SERVER_NAME

if TYPE_CHECKING:
    from mcp_types import CallToolResult

__all__ = [
    "MAX_TOOL_NAME_CHARS",
    "MCP_TOOL_PREFIX",
    "build_tool",
    "call_tool_result",
    "failure",
    "load_mcp_catalogue",
    "mcp_tool_name",
]

MCP_TOOL_PREFIX: Final = "mcp__"
"""Every MCP tool's registered name starts with this, then ``<server>__<tool>``."""
MAX_TOOL_NAME_CHARS: Final = 64
"""OpenAI-compatible APIs refuse longer function names; longer MCP names are shortened."""

_NOT_NAME_CHAR: Final = re.compile(r"[^A-Za-z0-9_-]")


def mcp_tool_name(server: str, tool: str) -> str:
    """Return the registered name of ``server``'s tool ``tool``: ``mcp__<server>__<tool>``.

    Characters outside ``[A-Za-z0-9_-]`` in the tool name become ``_`` (model APIs accept only
    those), and a name over 64 characters is cut to 55 plus ``_`` and 8 hex digits of the tool
    name's SHA-256 (OpenAI rejects longer function names); the server is still called with the
    original name.
    """
    name = f"{MCP_TOOL_PREFIX}{server}__{_NOT_NAME_CHAR.sub('_', tool)}"
    if len(name) <= MAX_TOOL_NAME_CHARS:
        return name
    digest = hashlib.sha256(tool.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME_CHARS - 9]}_{digest}"


def build_tool(
    server: str,
    definition: Mapping[str, Any],
    handler: ToolHandler,
    *,
    exposure: ToolExposure | str,
    timeout_ms: int | None,
) -> Tool:
    """A :class:`Tool` from an MCP tool definition in its wire form (camelCase keys).

    Raises:
        UserError: When the definition has no name or an unusable input schema.
    """
    original = definition.get("name")
    if not isinstance(original, str) or not original:
        raise UserError(f"a tool of MCP server {server!r} has no name")
    schema = definition.get("inputSchema")
    if not isinstance(schema, dict):
        raise UserError(f"MCP tool {original!r}: inputSchema is not an object")
    annotations = definition.get("annotations")
    hints = annotations if isinstance(annotations, dict) else None
    description = definition.get("description") or definition.get("title") or (hints or {}).get("title") or ""
    kept = dict(hints or {})
    if isinstance(definition.get("title"), str):
        kept["title"] = definition["title"]  # the tool-level title wins (MCP 2025-06-18, tools)
    return Tool.from_schema(
        mcp_tool_name(server, original),
        schema,
        handler,
        description=str(description),
        mode=mode_from_annotations(original, hints),
        exposure=exposure,
        timeout_ms=timeout_ms,
        annotations=kept or None,
    )


def call_tool_result(result: CallToolResult, *, server: str, tool: str) -> ToolResult:
    """Map an MCP ``CallToolResult`` onto a :class:`ToolResult`.

    ``isError`` is a ``needsFollowup`` failure (``data.code == "mcp_tool_error"``);
    ``structuredContent`` becomes ``data`` (a non-object as ``{"value": ...}``), else text blocks
    become ``data.text`` and other blocks ``data.content`` without their payload
    (docs/mcp-sources.md, Result mapping).

    Args:
        result: The SDK's result.
        server: The server name (for the error's ``data``).
        tool: The tool's original name (for the error's ``data``).
    """
    texts = [block.text for block in result.content if block.type == "text"]
    if result.is_error:
        data: dict[str, Any] = {"code": McpErrorCode.MCP_TOOL_ERROR, "server": server, "tool": tool}
        if result.structured_content is not None:
            data["structured"] = result.structured_content
        text = "\n".join(texts).strip()
        return ToolResult.retry(
            text or f"MCP tool {tool!r} of server {server!r} reported an error without a message", data=data
        )
    structured = result.structured_content
    if structured is not None:
        return ToolResult.success_with(structured if isinstance(structured, dict) else {"value": structured})
    payload: dict[str, Any] = {}
    if texts:
        payload["text"] = "\n".join(texts)
    others = [
        _summarise_block(block.model_dump(by_alias=True, exclude_none=True)) for block in result.content
    ]
    others = [block for block in others if block["type"] != "text"]
    if others:
        payload["content"] = others
    return ToolResult.success_with(payload or None)


def _summarise_block(block: dict[str, Any]) -> dict[str, Any]:
    """A content block without base64 payloads (image/audio ``data``, a resource's ``blob``)."""
    if block.get("type") in ("image", "audio") and isinstance(block.get("data"), str):
        encoded = block.pop("data")
        block["bytes"] = _decoded_size(encoded)
    resource = block.get("resource")
    if isinstance(resource, dict) and isinstance(resource.get("blob"), str):
        resource = dict(resource)
        resource["bytes"] = _decoded_size(resource.pop("blob"))
        block["resource"] = resource
    return block


def _decoded_size(encoded: str) -> int:
    stripped = encoded.strip()
    return len(stripped) * 3 // 4 - stripped[-2:].count("=")


def failure(code: str, error: str, *, server: str, tool: str, **extra: Any) -> ToolResult:
    """A failed call the model can act on: ``needsFollowup``, ``data = {code, server, tool, **extra}``."""
    return ToolResult.retry(error, data={"code": code, "server": server, "tool": tool, **extra})


# -- the catalogue ------------------------------------------------------------------------------


def load_mcp_catalogue(
    path: str | os.PathLike[str], *, exposure: ToolExposure | str = ToolExposure.DEFERRED
) -> list[Tool]:
    """Load MCP tool definitions from an inventory file as schema-only tools (nothing is started).

    For search and mode tests over real definitions (docs/mcp-sources.md, A catalogue without
    servers): one ``*.json`` inventory (``{"servers": [{"server", "tools": [...]}]}``) or the flat
    ``catalogue.jsonl`` (one ``{"server", "tool"}`` per line). Tools are built as for a connected
    server; every handler fails with ``data.code == "mcp_server_unavailable"``.

    Args:
        path: The inventory file.
        exposure: The tier of the returned tools (``deferred`` by default).

    Returns:
        The tools, not registered anywhere, in file order.

    Raises:
        ConfigError: The file cannot be read or parsed, or a definition is unusable; the message
            names the file and the tool.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"MCP catalogue {source}: cannot read it ({exc})") from exc
    try:
        pairs = list(_catalogue_entries(source, text))
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"MCP catalogue {source}: not an MCP inventory ({type(exc).__name__}: {exc})"
        ) from exc
    tools: list[Tool] = []
    for server, definition in pairs:
        where = f"server {server!r} tool {definition.get('name')!r}"
        if not isinstance(server, str) or not SERVER_NAME.fullmatch(server):
            raise ConfigError(f"MCP catalogue {source}: {where}: invalid server name")
        try:
            tools.append(
                build_tool(
                    server,
                    definition,
                    _catalogue_handler(server, str(definition.get("name"))),
                    exposure=exposure,
                    timeout_ms=None,
                )
            )
        except UserError as exc:
            raise ConfigError(f"MCP catalogue {source}: {where}: {exc}") from exc
    return tools


def _catalogue_entries(source: Path, text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if source.suffix == ".jsonl":
        for line in text.splitlines():
            if line.strip():
                row = json.loads(line)
                yield row["server"], row["tool"]
        return
    for server in json.loads(text)["servers"]:
        for definition in server["tools"]:
            yield server["server"], definition


def _catalogue_handler(server: str, tool: str) -> ToolHandler:
    async def handler(**_arguments: Any) -> ToolResult:
        return failure(
            McpErrorCode.MCP_SERVER_UNAVAILABLE,
            f"MCP tool {tool!r} of server {server!r} is catalogue only: not connected. Use another tool.",
            server=server,
            tool=tool,
        )

    return handler
