"""``steerable mcp``: the workspace tools served to an MCP host over stdio (docs/mcp.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from steerable_agent_runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from ._server import (
        LATEST_PROTOCOL_VERSION,
        PROTOCOL_VERSIONS,
        McpServer,
        build_mcp_server,
        serve_mcp_stdio,
    )

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_server": (
        "LATEST_PROTOCOL_VERSION",
        "PROTOCOL_VERSIONS",
        "McpServer",
        "build_mcp_server",
        "serve_mcp_stdio",
    ),
}
"""Each module and the public names it provides (the block above, for type checkers)."""

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "PROTOCOL_VERSIONS",
    "McpServer",
    "build_mcp_server",
    "serve_mcp_stdio",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
