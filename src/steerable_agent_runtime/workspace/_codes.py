"""The ``data.code`` of every file-tool refusal, in one registry.

docs/file-tools.md ("All error codes") documents each one, and spec/tool_contract.json lists
them by group; tests/test_error_codes.py and tests/test_contract.py check both against this enum.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FileErrorCode"]


class FileErrorCode(StrEnum):
    """A workspace file tool's ``data.code`` (a ``str``: compare it with ``result.data["code"]``).

    The raising sites pass a member; :class:`~steerable_agent_runtime.errors.WorkspaceError`
    stores its plain string value, so results and JSON carry the same text as before.
    """

    # Paths.
    INVALID_WORKSPACE = "invalid_workspace"
    INVALID_PATH = "invalid_path"
    PATH_OUTSIDE_WORKSPACE = "path_outside_workspace"
    PATH_CHANGED = "path_changed"
    DENIED_PATH = "denied_path"
    # Files.
    FILE_NOT_FOUND = "file_not_found"
    IS_DIRECTORY = "is_directory"
    NOT_A_DIRECTORY = "not_a_directory"
    NOT_A_FILE = "not_a_file"
    BINARY_FILE = "binary_file"
    NOT_UTF8 = "not_utf8"
    FILE_TOO_LARGE = "file_too_large"
    PERMISSION_DENIED = "permission_denied"
    WRITE_FAILED = "write_failed"
    INVALID_RANGE = "invalid_range"
    INVALID_PATTERN = "invalid_pattern"
    INVALID_REGEX = "invalid_regex"
    INVALID_TEXT = "invalid_text"
    OS_ERROR = "os_error"
    PROTECTED_PATH = "protected_path"
    FILE_LOCKED = "file_locked"
    # The read-before-write gate.
    NOT_READ = "not_read"
    CONFLICT = "conflict"
    PARTIAL_READ = "partial_read"
    # edit_file.
    NO_EDITS = "no_edits"
    EMPTY_OLD_TEXT = "empty_old_text"
    OLD_TEXT_NOT_FOUND = "old_text_not_found"
    AMBIGUOUS_MATCH = "ambiguous_match"
    OVERLAPPING_EDITS = "overlapping_edits"
    NO_CHANGE = "no_change"
    INVALID_EDIT = "invalid_edit"
    INDENTATION_MISMATCH = "indentation_mismatch"
    # apply_patch.
    INVALID_PATCH = "invalid_patch"
    CONTEXT_NOT_FOUND = "context_not_found"
    FILE_EXISTS = "file_exists"
    IS_SYMLINK = "is_symlink"
