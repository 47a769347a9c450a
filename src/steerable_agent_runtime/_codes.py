"""The ``data.code`` of every failed result the dispatch path itself gives, in one registry.

The router, the consent gate, the agent loop and the sidecar's host-tool forwarding answer with
these codes; the file tools, the web tools, ``bash`` and ``run_code`` have registries of their
own. docs/runtime.md ("Error codes") documents each one, and tests/test_error_codes.py checks the
two against each other.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ToolErrorCode"]


class ToolErrorCode(StrEnum):
    """A dispatch failure's ``data.code`` (a ``str``: compare it with ``result.data["code"]``).

    A ``StrEnum`` member is its value for ``==``, ``json.dumps`` and ``ToolResult.to_wire()``,
    so results carry the same text as a literal would.
    """

    # The router (docs/runtime.md, "What the router does with a call").
    INVALID_ENVELOPE = "invalid_envelope"
    UNKNOWN_TOOL = "unknown_tool"
    TOOL_UNAVAILABLE = "tool_unavailable"
    INVALID_ARGUMENTS = "invalid_arguments"
    ARGUMENTS_TOO_DEEP = "arguments_too_deep"
    TOOL_EXCEPTION = "tool_exception"
    TIMEOUT = "timeout"
    UNSERIALIZABLE_RESULT = "unserializable_result"
    # The consent gate.
    CONSENT_REQUIRED = "consent_required"
    CONSENT_DENIED = "consent_denied"
    # The agent loop.
    INVALID_TOOL_CALL = "invalid_tool_call"
    INCOMPLETE_ANSWER = "incomplete_answer"
    UNPARSED_TOOL_CALL = "unparsed_tool_call"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"
    # Built-in tools' own argument checks.
    UNKNOWN_LOCATOR = "unknown_locator"
    INVALID_QUESTIONS = "invalid_questions"
    # A run_code program's nested call.
    INVALID_CALL = "invalid_call"
    NESTED_RUN_CODE = "nested_run_code"
    # A tool the host runs (the sidecar's toolsViaHost chats).
    HOST_ERROR = "host_error"
    HOST_UNREACHABLE = "host_unreachable"
