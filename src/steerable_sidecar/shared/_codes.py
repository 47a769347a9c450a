"""The ``data.code`` registries of the sidecar's own tool families: ``run_code`` and MCP sources.

Both are exported by ``steerable_sidecar``. docs/run-code.md ("Result") and docs/mcp-sources.md
("Error codes") document each code, and
tests/test_error_codes.py checks each registry against its table. A nested call's own refusals
(``invalid_call``, ``nested_run_code``...) are the dispatch path's ``ToolErrorCode``.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["McpErrorCode", "RunCodeErrorCode"]


class RunCodeErrorCode(StrEnum):
    """A failed ``run_code`` program's ``data.code`` (a ``str``, equal to the text it names)."""

    SYNTAX_ERROR = "syntax_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CALL_LIMIT = "call_limit"
    OUTPUT_LIMIT = "output_limit"
    VALUE_LIMIT = "value_limit"
    SOURCE_TOO_LARGE = "source_too_large"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    MEMORY_LIMIT = "memory_limit"
    CHILD_EXITED = "child_exited"
    PROTOCOL_ERROR = "protocol_error"
    PROTECTED_REVERTED = "protected_reverted"
    PROTECTED_SNAPSHOT_TOO_LARGE = "protected_snapshot_too_large"
    DENY_READ_RESTORED = "deny_read_restored"
    DENY_READ_DISPLACED = "deny_read_displaced"


class McpErrorCode(StrEnum):
    """A failed call of a fronted MCP server's tool: its ``data.code``."""

    MCP_TOOL_ERROR = "mcp_tool_error"
    MCP_ERROR = "mcp_error"
    MCP_INVALID_RESULT = "mcp_invalid_result"
    MCP_SERVER_UNAVAILABLE = "mcp_server_unavailable"
    TIMEOUT = "timeout"
