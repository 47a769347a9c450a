"""Workspace file tools with content-hash read-before-write state (spec: File tools).

Each public name is imported from its module on first use (PEP 562 ``__getattr__``), and each
tool's engine (``edit_file``'s matcher, ``apply_patch``'s parser, the ``grep`` / ``glob`` walkers)
at its first call, so registering the tools loads only what ``read_file`` and ``write_file`` use.
"""

import typing as _typing

from steerable_agent_runtime.lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._codes import FileErrorCode
    from ._edit import EDIT_ERROR_CODES, Edit, EditMatch, EditOutcome, apply_edits, apply_edits_detailed
    from ._levels import MATCH_LEVELS, MatchLevel
    from ._patch import patch_paths
    from ._rg import RIPGREP_ENV, Ripgrep, SearchEngine, ripgrep_setting
    from ._state import FileView, ReadFileState, read_file_state_from_messages
    from ._text import version_of
    from ._tools import CROSS_PROCESS_LOCK_ENV, REQUIRE_READ_ENV, WorkspaceRouter, workspace_tools_for_cwd
    from ._workspace import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_OUTPUT_CHARS, HOST_READ_MAX_CHARS, Workspace

_EXPORTS: dict[str, tuple[str, ...]] = {
    "._codes": ("FileErrorCode",),
    "._edit": (
        "EDIT_ERROR_CODES",
        "Edit",
        "EditMatch",
        "EditOutcome",
        "apply_edits",
        "apply_edits_detailed",
    ),
    "._levels": (
        "MATCH_LEVELS",
        "MatchLevel",
    ),
    "._patch": ("patch_paths",),
    "._rg": (
        "RIPGREP_ENV",
        "Ripgrep",
        "SearchEngine",
        "ripgrep_setting",
    ),
    "._state": (
        "FileView",
        "ReadFileState",
        "read_file_state_from_messages",
    ),
    "._text": ("version_of",),
    "._tools": (
        "CROSS_PROCESS_LOCK_ENV",
        "REQUIRE_READ_ENV",
        "WorkspaceRouter",
        "workspace_tools_for_cwd",
    ),
    "._workspace": (
        "DEFAULT_MAX_FILE_BYTES",
        "DEFAULT_MAX_OUTPUT_CHARS",
        "HOST_READ_MAX_CHARS",
        "Workspace",
    ),
}
"""Each module (relative to this package) and the public names it provides (as the block above)."""


__all__ = [
    "CROSS_PROCESS_LOCK_ENV",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "EDIT_ERROR_CODES",
    "HOST_READ_MAX_CHARS",
    "MATCH_LEVELS",
    "REQUIRE_READ_ENV",
    "RIPGREP_ENV",
    "Edit",
    "EditMatch",
    "EditOutcome",
    "FileErrorCode",
    "FileView",
    "MatchLevel",
    "ReadFileState",
    "Ripgrep",
    "SearchEngine",
    "Workspace",
    "WorkspaceRouter",
    "apply_edits",
    "apply_edits_detailed",
    "patch_paths",
    "read_file_state_from_messages",
    "ripgrep_setting",
    "version_of",
    "workspace_tools_for_cwd",
]


if not _typing.TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
