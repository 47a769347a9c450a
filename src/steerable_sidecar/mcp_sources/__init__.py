"""MCP servers as tool sources: connected, and their tools registered on a router.

The servers come from ``STEERABLE_MCP_CONFIG`` or an editor"s session (docs/mcp.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steerable_agent_runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from ._sources import (
        McpServerConfig,
        McpServerError,
        McpToolSources,
        load_mcp_catalogue,
        load_mcp_config,
        mcp_tool_name,
    )

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_sources": (
        "McpServerConfig",
        "McpServerError",
        "McpToolSources",
        "load_mcp_catalogue",
        "load_mcp_config",
        "mcp_tool_name",
    ),
}
"""Each module and the public names it provides (the block above, for type checkers)."""

__all__ = [
    "McpServerConfig",
    "McpServerError",
    "McpToolSources",
    "load_mcp_catalogue",
    "load_mcp_config",
    "mcp_tool_name",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
