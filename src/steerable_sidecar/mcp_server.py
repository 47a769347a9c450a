"""Serve a :class:`ToolRouter` over MCP (stdio) with the official ``mcp`` SDK.

Importing this module imports the ``mcp`` SDK (about 0.7 s); only the ``steerable mcp`` entry point
does. Mapping:

* ``tools/list`` lists the offered (direct-tier) tools with their JSON Schemas. ``ToolMode`` becomes
  MCP tool annotations: read -> ``readOnlyHint``; destructive -> ``destructiveHint``; external ->
  ``openWorldHint``; safe_write -> not read-only, not destructive. ``web_search`` / ``web_fetch``
  are reads of the open web: read-only and ``openWorldHint``.
* ``tools/call`` dispatches by name (any tier: dispatch never gates on exposure). The whole
  :class:`ToolResult` travels as ``structuredContent`` and as JSON text; ``success: false`` is an
  MCP tool error (``isError: true``), so the model sees it and can self-correct.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import mcp_types as mcp_t
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from steerable_agent_runtime import ToolCall, ToolMode, ToolResult, ToolRouter, new_call_id
from steerable_agent_runtime.modes import OPEN_WORLD_READS
from steerable_agent_runtime.tools import Tool

from .boot import offered_tools

__all__ = ["build_mcp_server", "mode_annotations", "serve_mcp_stdio", "to_call_tool_result"]


def mode_annotations(mode: ToolMode, *, title: str | None = None) -> mcp_t.ToolAnnotations:
    """Map a :class:`ToolMode` onto MCP tool annotations.

    Args:
        mode: The tool's mode.
        title: Optional display title.

    Returns:
        ``ToolAnnotations`` with ``readOnlyHint``/``destructiveHint``/``openWorldHint`` set as far as
        the mode says (``local`` leaves them at the MCP defaults: possibly destructive, open world).
    """
    if mode is ToolMode.READ:
        return mcp_t.ToolAnnotations(title=title, read_only_hint=True, open_world_hint=False)
    if mode is ToolMode.SAFE_WRITE:
        return mcp_t.ToolAnnotations(
            title=title, read_only_hint=False, destructive_hint=False, open_world_hint=False
        )
    if mode is ToolMode.DESTRUCTIVE:
        return mcp_t.ToolAnnotations(title=title, read_only_hint=False, destructive_hint=True)
    if mode is ToolMode.EXTERNAL:
        return mcp_t.ToolAnnotations(title=title, read_only_hint=False, open_world_hint=True)
    return mcp_t.ToolAnnotations(title=title, read_only_hint=False)


def _mcp_tool(tool: Tool) -> mcp_t.Tool:
    annotations = mode_annotations(tool.mode)
    if tool.name in OPEN_WORLD_READS:  # reads, but of the open web: openWorldHint is the truth
        annotations.open_world_hint = True
    return mcp_t.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.parameters,
        annotations=annotations,
    )


def to_call_tool_result(result: ToolResult) -> mcp_t.CallToolResult:
    """Wrap a :class:`ToolResult` as an MCP ``CallToolResult``.

    Returns:
        ``structuredContent`` = the wire ``ToolResult``; one text block with the same JSON;
        ``isError`` = ``not result.success``.
    """
    wire = result.to_wire()
    return mcp_t.CallToolResult(
        content=[mcp_t.TextContent(text=json.dumps(wire, ensure_ascii=False))],
        structured_content=wire,
        is_error=not result.success,
    )


def build_mcp_server(
    router: ToolRouter,
    *,
    name: str = "steerable",
    version: str = "",
    offered: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
) -> Server[Any]:
    """Build an MCP low-level server whose tools are ``router``'s.

    Args:
        router: The tools to serve (its read state persists for the connection's life).
        name: The server name announced at initialisation.
        version: The server version announced at initialisation.
        offered: Returns the descriptors to list (a harness's ``offered``); default: the direct
            tier. Every registered tool stays callable by name (spec: dispatch never gates on
            exposure).

    Returns:
        An ``mcp.server.lowlevel.Server``; run it with :func:`serve_mcp_stdio` or any MCP transport.
    """

    async def list_tools(
        ctx: ServerRequestContext[Any], params: mcp_t.PaginatedRequestParams | None
    ) -> mcp_t.ListToolsResult:
        return mcp_t.ListToolsResult(tools=[_mcp_tool(t) for t in offered_tools(router, offered)])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: mcp_t.CallToolRequestParams
    ) -> mcp_t.CallToolResult:
        call = ToolCall(id=new_call_id(), name=params.name, arguments=dict(params.arguments or {}))
        return to_call_tool_result(await router.dispatch(call))

    return Server(name, version=version, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_mcp_stdio(
    router: ToolRouter,
    *,
    name: str = "steerable",
    version: str | None = None,
    offered: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
) -> None:
    """Serve ``router`` over MCP on this process's stdin/stdout until the client disconnects.

    Args:
        router: The tools.
        name: The server name.
        version: The server version (default: steerable's own).
        offered: See :func:`build_mcp_server`.
    """
    from steerable_agent_runtime import __version__

    server = build_mcp_server(router, name=name, version=version or __version__, offered=offered)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
