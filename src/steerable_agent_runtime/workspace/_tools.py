"""``workspace_tools_for_cwd``: the file tools registered on a router, with their contract names.

Argument and result field names are the contract (``spec/tool_contract.json``): camelCase on the
wire (``expectedVersion``, ``oldText``), so the Python parameters carry the wire names.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, overload

from typing_extensions import TypedDict, Unpack

from .._plain_arguments import builtin_tool
from .._protected import PROTECTED_ENV
from .._tool_schemas import TOOL_PARAMETERS
from ..config import default_state_dir, env_flag
from ..errors import EditError, UserError, WorkspaceError
from ..lazy import Field  # pydantic's, imported when a validator is built (at the tool's first call)
from ..modes import ToolMode
from ..sandbox._deny import deny_read_from_env
from ..tools import Tool, ToolRouter
from ._codes import FileErrorCode
from ._rg import SearchEngine, ripgrep_setting
from ._state import ReadFileState
from ._workspace import DEFAULT_MAX_OUTPUT_CHARS, Workspace

if TYPE_CHECKING:  # each tool's engine loads at its first call (start-up: registering is cheap)
    from ._edit import Edit

__all__ = [
    "CROSS_PROCESS_LOCK_ENV",
    "REQUIRE_READ_ENV",
    "WorkspaceRouter",
    "WorkspaceToolOptions",
    "workspace_tools_for_cwd",
]

_DEFAULT_CLIP = "Output over 100,000 characters"  # in read_file's description: the default clip

REQUIRE_READ_ENV = "STEERABLE_REQUIRE_READ_BEFORE_WRITE"
"""Set to ``0`` to turn off the hard read-before-write gate (spec: File tools)."""

CROSS_PROCESS_LOCK_ENV = "STEERABLE_CROSS_PROCESS_LOCK"
"""Set to ``0`` only on a filesystem without file locks used by a single steerable process (FILE-12)."""


class EditSpec(TypedDict):
    """One ``edit_file`` replacement as the model sends it."""

    oldText: str
    newText: str
    replaceAll: NotRequired[bool]


def _edits(
    edits: list[EditSpec] | None, old_string: str | None, new_string: str | None, replace_all: bool
) -> list[Edit]:
    from ._edit import Edit

    single = old_string is not None or new_string is not None
    if edits is not None and single:
        raise EditError(
            FileErrorCode.INVALID_EDIT,
            "give either edits: [{oldText, newText}] or old_string/new_string, not both",
        )
    if single:
        if old_string is None or new_string is None:
            raise EditError(FileErrorCode.INVALID_EDIT, "old_string and new_string must be given together")
        return [Edit(old_string, new_string, replace_all)]
    return [Edit(e["oldText"], e["newText"], e.get("replaceAll", replace_all)) for e in edits or []]


class WorkspaceRouter(ToolRouter):
    """A :class:`ToolRouter` made for one workspace: what :func:`workspace_tools_for_cwd` returns.

    Args:
        workspace: The :class:`Workspace` the file tools on this router act in.
        options: :class:`ToolRouter`'s own (``default_timeout_ms``, ``trace``).

    Attributes:
        workspace: That workspace; ``workspace.state`` is the session's read state (spec: File
            tools), which a resume seeds from the durable record.
    """

    def __init__(self, workspace: Workspace, **options: Any) -> None:
        super().__init__(**options)
        self.workspace = workspace


class WorkspaceToolOptions(TypedDict, total=False):
    """The options of :func:`workspace_tools_for_cwd` besides ``cwd`` and ``router`` (see there)."""

    state: ReadFileState | None
    require_read_before_write: bool | None
    allow_outside: bool
    allow_protected_writes: bool | None
    environ: Mapping[str, str] | None
    bash: bool
    web_tools: Callable[[ToolRouter], object] | Literal[False] | None
    read_max_chars: int | None


@overload
def workspace_tools_for_cwd(
    cwd: str | os.PathLike[str] | None = None, *, router: None = None, **options: Unpack[WorkspaceToolOptions]
) -> WorkspaceRouter: ...


@overload
def workspace_tools_for_cwd(
    cwd: str | os.PathLike[str] | None = None, *, router: ToolRouter, **options: Unpack[WorkspaceToolOptions]
) -> ToolRouter: ...


def workspace_tools_for_cwd(
    cwd: str | os.PathLike[str] | None = None,
    *,
    router: ToolRouter | None = None,
    state: ReadFileState | None = None,
    require_read_before_write: bool | None = None,
    allow_outside: bool = False,
    allow_protected_writes: bool | None = None,
    environ: Mapping[str, str] | None = None,
    bash: bool = True,
    web_tools: Callable[[ToolRouter], object] | Literal[False] | None = None,
    read_max_chars: int | None = None,
) -> ToolRouter:
    """Register the workspace file tools for one session on a router.

    The seven file tools and ``bash`` (local: it needs consent; layer-2 sandbox), all direct
    tier: docs/file-tools.md (table at the top) and docs/sandbox.md.

    Args:
        cwd: The workspace root (default: the current directory).
        router: Register on this router (default: a new :class:`WorkspaceRouter`); pass ``state``
            too when you need the read state, since only a ``WorkspaceRouter`` carries it.
        state: The session's read state; pass one seeded from
            :func:`read_file_state_from_messages` on resume.
        require_read_before_write: The hard gate; ``None`` reads
            ``STEERABLE_REQUIRE_READ_BEFORE_WRITE`` (default on).
        allow_outside: Accept paths outside ``cwd`` (only for runs the host already jails).
        allow_protected_writes: Let the file tools write protected paths (``.git``, shell start-up
            files, editor, agent and MCP configuration; FILE-15); ``None`` reads
            ``STEERABLE_ALLOW_PROTECTED_WRITES`` (default off). CLI: ``--allow-protected-writes``.
        environ: Environment to resolve variables from (default ``os.environ``); ``bash`` passes
            its allowlist on to commands; its deny-read set (``HOME``, ``STEERABLE_SANDBOX_DENY_READ``)
            is kept out of the file tools too (SAFE-3).
        bash: Register ``bash`` (:func:`~steerable_agent_runtime.sandbox.bash_tool`).
        web_tools: An installer called with the router once the file tools are on it
            (``steerable_sidecar.web_tools.install_web_tools``, docs/web-tools.md), or ``False`` /
            ``None`` to omit ``web_search`` and ``web_fetch`` (spec: Web tools, WEB-2).
        read_max_chars: A host's bound on ``read_file``'s content, 1 to 100,000, counted as the
            content stands in the result's compact JSON (escapes in full, an emoji as 2:
            :func:`~._clip.json_size`); the tool's description says it. ``None``: the spec's clip,
            :data:`~steerable_agent_runtime.workspace.DEFAULT_MAX_OUTPUT_CHARS` characters of
            content. ``steerable mcp`` passes
            :data:`~steerable_agent_runtime.workspace.HOST_READ_MAX_CHARS`, so a whole result fits
            what an MCP host shows its model.

    Returns:
        The router: a new :class:`WorkspaceRouter` (its :class:`Workspace` is ``router.workspace``),
        or ``router`` when given.

    Raises:
        ConfigError: When ``STEERABLE_REQUIRE_READ_BEFORE_WRITE``, ``STEERABLE_ALLOW_PROTECTED_WRITES``
            or ``STEERABLE_CROSS_PROCESS_LOCK`` is not a boolean, ``STEERABLE_RIPGREP`` names no
            executable, ``STEERABLE_SANDBOX_DENY_READ`` holds a relative path, or (with
            ``bash``) a ``STEERABLE_SANDBOX*`` / ``STEERABLE_SIDECAR_CONFINED`` value is invalid.
        WorkspaceError: ``invalid_workspace`` when ``cwd`` is not a directory.
        DuplicateToolError: When ``router`` already has one of these names.
        UserError: ``read_max_chars`` is not an ``int`` from 1 to 100,000.
    """
    if read_max_chars is not None and (
        type(read_max_chars) is not int or not 1 <= read_max_chars <= DEFAULT_MAX_OUTPUT_CHARS
    ):
        raise UserError(
            f"read_max_chars must be a number of characters from 1 to {DEFAULT_MAX_OUTPUT_CHARS:,}, "
            f"not {read_max_chars!r}"
        )
    if require_read_before_write is None:
        require_read_before_write = env_flag(REQUIRE_READ_ENV, True, environ=environ)
    if allow_protected_writes is None:
        allow_protected_writes = env_flag(PROTECTED_ENV, False, environ=environ)
    ws = Workspace(
        Path(cwd) if cwd is not None else Path.cwd(),
        state=state,
        require_read_before_write=require_read_before_write,
        allow_outside=allow_outside,
        allow_protected_writes=allow_protected_writes,
        cross_process_lock=env_flag(CROSS_PROCESS_LOCK_ENV, True, environ=environ),
        search=SearchEngine(ripgrep_setting(environ), environ=environ),
        deny_read=deny_read_from_env(environ),  # the set bash and run_code cannot read (SAFE-3)
        state_dir=default_state_dir(environ),  # its journal key: what bash's records are sealed with
        max_output_chars=DEFAULT_MAX_OUTPUT_CHARS if read_max_chars is None else read_max_chars,
        max_output_json=read_max_chars is not None,  # a host's bound: what its JSON takes
    )
    specs = _tool_specs(ws)
    if bash:
        from ..sandbox import bash_tool  # the sandbox machinery loads only for routers that offer bash

        # config errors raise before any registration; protected paths are read-only to commands too
        specs.append(bash_tool(ws.root.path, environ=environ, allow_protected_writes=allow_protected_writes))
    router = router if router is not None else WorkspaceRouter(ws)
    for spec in specs:
        router.register(spec)
    if web_tools:
        web_tools(router)
    return router


def _tool_specs(ws: Workspace) -> list[Tool]:
    async def read_file(
        path: str,
        offset: Annotated[int, Field(ge=1, strict=True)] | None = None,
        limit: Annotated[int, Field(ge=1, strict=True)] | None = None,
    ) -> dict[str, Any]:
        """Read a UTF-8 text file.

        Returns its content and `version` (SHA-256 of the full file); pass that version as
        expectedVersion when you write. Output over 100,000 characters is clipped (head and tail
        kept) and marked partial.

        Args:
            path: File path relative to the workspace root.
            offset: First line to return, 1-based.
            limit: Number of lines to return.
        """
        return await ws.read_file(path, offset, limit)

    async def write_file(path: str, content: str, expectedVersion: str | None = None) -> dict[str, Any]:
        """Create a file, or overwrite an existing one you have read in full.

        Existing files must be read first; the write is rejected if the file changed since.

        Args:
            path: File path relative to the workspace root.
            content: The complete new content.
            expectedVersion: The version read_file returned; the write fails if the file changed.
        """
        return await ws.write_file(path, content, expectedVersion)

    async def edit_file(
        path: str,
        edits: list[EditSpec] | None = None,
        expectedVersion: str | None = None,
        old_string: str | None = None,
        new_string: str | None = None,
        replace_all: bool = False,
    ) -> dict[str, Any]:
        """Replace exact text in a file; every edit applies or none does.

        Each oldText must match once (add context to make it unique) unless replaceAll is set.

        Args:
            path: File path relative to the workspace root.
            edits: Replacements [{oldText, newText, replaceAll?}], each located in the current file.
            expectedVersion: The version read_file returned; the edit fails if the file changed.
            old_string: Single-edit form: the text to replace (instead of edits).
            new_string: Single-edit form: the replacement.
            replace_all: Single-edit form: replace every occurrence.
        """
        return await ws.edit_file(path, _edits(edits, old_string, new_string, replace_all), expectedVersion)

    async def patch(patch: str) -> dict[str, Any]:
        """Apply a multi-file patch atomically (all files change or none do).

        Format: '*** Begin Patch', then '*** Add File: p' (lines starting with +),
        '*** Delete File: p', or '*** Update File: p' (optional '*** Move to: q', then '@@' hunks of
        ' ' context, '-' removed and '+' added lines), then '*** End Patch'. Files you update or
        delete must have been read first.

        Args:
            patch: The patch text.
        """
        from ._apply import apply_patch

        return await apply_patch(ws, patch)

    async def list_directory(
        path: str = ".",
        offset: Annotated[int, Field(ge=0, strict=True)] = 0,
        limit: Annotated[int, Field(ge=1, le=1000, strict=True)] = 1000,  # _listing.MAX_PAGE
    ) -> dict[str, Any]:
        """List a directory's entries (name, type, size).

        Directories first, then the rest, each sorted by name; at most limit entries per call.
        The result has total (all entries) and, when more follow, truncated: true and nextOffset.

        Args:
            path: Directory relative to the workspace root.
            offset: Entries to skip: pass the previous page's nextOffset to get the next page.
            limit: Most entries to return (1 to 1000).
        """
        from ._listing import list_dir

        await ws.settle_interrupted()
        return await asyncio.to_thread(list_dir, ws.root, path, offset, limit)

    async def glob(
        pattern: str, path: str = ".", includeHidden: bool = True, includeIgnored: bool = False
    ) -> dict[str, Any]:
        """Find files by glob, sorted by path (at most 1000), e.g. 'src/**/*.py' or '*.{ts,tsx}'.

        '*' and '?' stay within one folder, '**' spans folders. Skipped: what .gitignore (in a git
        repository), .ignore or .git/info/exclude excludes, and .git itself; symlinks are not followed.

        Args:
            pattern: Glob matched against the whole path below path ('*.py': path's own files only).
            path: Directory to search from.
            includeHidden: List names starting with '.' (default true).
            includeIgnored: Also list files the ignore files exclude.
        """
        from ._search import glob_files

        await ws.settle_interrupted()
        return await glob_files(
            ws.root,
            ws.search,
            pattern,
            path,
            include_hidden=includeHidden,
            include_ignored=includeIgnored,
            time_budget_s=ws.grep_time_budget_s,
        )

    async def grep(
        pattern: str,
        path: str = ".",
        glob: str | None = None,
        ignoreCase: bool = False,
        maxResults: Annotated[int, Field(ge=1, le=2000)] = 200,
        includeHidden: bool = True,
        includeIgnored: bool = False,
    ) -> dict[str, Any]:
        """Search file contents with a regular expression; returns path, line number and text, sorted.

        The pattern is Rust regex syntax (as ripgrep's): no look-around and no backreferences.
        Skipped: binary files, what .gitignore (in a git repository), .ignore or .git/info/exclude
        excludes, and .git itself; symlinks are not followed.

        Args:
            pattern: Regular expression, e.g. 'fn main' or 'TODO|FIXME'.
            path: File or directory to search.
            glob: Only files whose name matches ('*.py', '*.{ts,tsx}') or, with a '/', whose path
                below path matches ('src/**/*.py'); a leading '!' excludes instead ('!*.min.js').
            ignoreCase: Case-insensitive search.
            maxResults: Most matches to return.
            includeHidden: Search names starting with '.' (default true).
            includeIgnored: Also search files the ignore files exclude.
        """
        from ._search import grep_files

        await ws.settle_interrupted()
        return await grep_files(
            ws.root,
            ws.search,
            pattern,
            path,
            glob,
            ignoreCase,
            maxResults,
            include_hidden=includeHidden,
            include_ignored=includeIgnored,
            time_budget_s=ws.grep_time_budget_s,
        )

    safe = ToolMode.SAFE_WRITE

    def made(fn: Callable[..., Awaitable[dict[str, Any]]], name: str, mode: ToolMode | None = None) -> Tool:
        # the schema computed ahead of time (_tool_schemas); plain arguments need no pydantic
        return builtin_tool(_guarded(fn), parameters=TOOL_PARAMETERS[name], name=name, mode=mode)

    read = made(read_file, "read_file")
    if ws.max_output_chars != DEFAULT_MAX_OUTPUT_CHARS:  # the description says the clip in effect
        clip = f"Output over {ws.max_output_chars:,} characters"
        read = replace(read, description=read.description.replace(_DEFAULT_CLIP, clip))
    return [
        read,
        made(write_file, "write_file", safe),
        made(edit_file, "edit_file", safe),
        made(patch, "apply_patch", safe),
        made(list_directory, "list_dir"),
        made(glob, "glob", ToolMode.READ),
        made(grep, "grep", ToolMode.READ),
    ]


def _guarded(fn: Callable[..., Awaitable[dict[str, Any]]]) -> Callable[..., Awaitable[dict[str, Any]]]:
    """Turn operating-system failures the model can react to into ``os_error`` refusals.

    A name too long for the filesystem, a permission problem, a full disk: the call fails with
    ``needsFollowup`` and the OS's own words, rather than as a tool crash that ends the run.
    """

    @functools.wraps(fn)
    async def guarded(**kwargs: Any) -> dict[str, Any]:
        try:
            return await fn(**kwargs)
        except OSError as exc:
            where = f" ({kwargs['path']})" if isinstance(kwargs.get("path"), str) else ""
            raise WorkspaceError(
                FileErrorCode.OS_ERROR,
                f"the operating system refused{where}: {exc.strerror or exc}",
                data={"errno": exc.errno},
            ) from None
        except RecursionError:
            raise WorkspaceError(FileErrorCode.OS_ERROR, "the path is nested too deeply") from None

    return guarded
