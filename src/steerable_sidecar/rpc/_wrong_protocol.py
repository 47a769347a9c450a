"""The hint a server adds when a client speaks another of steerable's protocols to it.

``steerable sidecar`` (the sidecar protocol), ``steerable mcp`` (MCP) and ``steerable acp`` (ACP)
all speak JSON-RPC 2.0 over stdio, so a host configured with the wrong subcommand gets a well-formed
error for its first request, and a bare ``Method not found: initialize`` does not say that the
command line is what is wrong. Each server answers with its usual code (``-32601``, or ``-32602``
for MCP's ``initialize`` with ACP's integer version) and this hint after the standard phrase
(docs/sidecar-protocol.md, "Errors"; docs/mcp.md).
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["MCP_NOT_ACP", "SIDECAR_NOT_ACP", "SIDECAR_NOT_MCP", "acp_initialize", "mcp_hint", "sidecar_hint"]

SIDECAR_NOT_MCP: Final = (
    "this is steerable's sidecar protocol, not MCP: configure the host to run `steerable mcp`"
)
SIDECAR_NOT_ACP: Final = (
    "this is steerable's sidecar protocol, not ACP: configure the editor to run `steerable acp`"
)
MCP_NOT_ACP: Final = (
    "an integer protocolVersion is ACP's, and this is steerable's MCP server: configure the editor to run "
    "`steerable acp`"
)
_SIDECAR_PREFIXES: Final = ("system.", "tool.", "agent.", "plugin.")


def _acp_version(params: Any) -> bool:
    """Does ``params`` carry ACP's ``protocolVersion``, an integer (MCP's is a date string)?"""
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    return isinstance(version, int) and not isinstance(version, bool)


def sidecar_hint(method: str, params: Any) -> str | None:
    """What ``steerable sidecar`` adds to ``Method not found`` for an MCP or ACP ``initialize``."""
    if method != "initialize":
        return None
    return SIDECAR_NOT_ACP if _acp_version(params) else SIDECAR_NOT_MCP


def mcp_hint(method: str, params: Any) -> str | None:
    """What ``steerable mcp`` adds to ``Method not found`` for a sidecar method (``tool.list``)."""
    if method.startswith(_SIDECAR_PREFIXES):
        return "a method of steerable's sidecar protocol, and this is its MCP server: run `steerable sidecar`"
    return None


def acp_initialize(params: Any) -> bool:
    """Is ``params`` an ACP ``initialize``'s (an integer ``protocolVersion``)?"""
    return _acp_version(params)
