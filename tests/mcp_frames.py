"""The MCP handshake a test sends to ``steerable mcp``: one definition for every test that starts one."""

from __future__ import annotations

from typing import Any, Final

MCP_HELLO: Final[dict[str, Any]] = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"},
}
"""``initialize``'s params: the protocol version the tests speak, no capabilities."""

MCP_INITIALIZE: Final[dict[str, Any]] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": MCP_HELLO,
}
"""The whole ``initialize`` request, id 1."""
