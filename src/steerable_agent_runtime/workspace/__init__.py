"""Workspace file tools with content-hash read-before-write state (spec: File tools)."""

from ._edit import EDIT_ERROR_CODES, Edit, EditMatch, EditOutcome, apply_edits, apply_edits_detailed
from ._levels import MATCH_LEVELS, MatchLevel
from ._rg import RIPGREP_ENV, Ripgrep, SearchEngine, ripgrep_setting
from ._state import FileView, ReadFileState, read_file_state_from_messages
from ._text import version_of
from ._tools import CROSS_PROCESS_LOCK_ENV, REQUIRE_READ_ENV, workspace_tools_for_cwd
from ._workspace import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_OUTPUT_CHARS, Workspace

__all__ = [
    "CROSS_PROCESS_LOCK_ENV",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "EDIT_ERROR_CODES",
    "MATCH_LEVELS",
    "REQUIRE_READ_ENV",
    "RIPGREP_ENV",
    "Edit",
    "EditMatch",
    "EditOutcome",
    "FileView",
    "MatchLevel",
    "ReadFileState",
    "Ripgrep",
    "SearchEngine",
    "Workspace",
    "apply_edits",
    "apply_edits_detailed",
    "read_file_state_from_messages",
    "ripgrep_setting",
    "version_of",
    "workspace_tools_for_cwd",
]
