"""The ``data.code`` of every failed ``bash`` result (and the guard's, which ``run_code`` shares).

docs/sandbox.md ("Error codes", under "The bash tool") documents each one, and
tests/test_error_codes.py checks the two against each other.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["SandboxErrorCode"]


class SandboxErrorCode(StrEnum):
    """A sandboxed command's ``data.code`` (a ``str``: compare it with ``result.data["code"]``)."""

    EXIT_STATUS = "exit_status"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    PROTECTED_REVERTED = "protected_reverted"
    PROTECTED_SNAPSHOT_TOO_LARGE = "protected_snapshot_too_large"
    DENY_READ_RESTORED = "deny_read_restored"
    DENY_READ_DISPLACED = "deny_read_displaced"
