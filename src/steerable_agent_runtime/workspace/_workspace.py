"""``Workspace``: the file tools' behaviour, independent of how they are served.

Spec: File tools: read-before-write state. Every write goes through one gate
(:meth:`Workspace.check_gate`) and one atomic writer; every success refreshes the session's
:class:`ReadFileState`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from .._git_config import configured_code_paths
from .._protected import (
    GIT_DIR_RULE,
    INTERPRETER_ENV_RULE,
    PROTECTED_ENV,
    PROTECTED_FLAG,
    RUNTIME_RULE,
    ProtectedRule,
    git_directory,
    interpreter_environment,
    protected_rule,
    runtime_roots,
)
from ..errors import WorkspaceError, WriteConflictError
from ..sandbox._deny import deny_read_from_env
from ._clip import clip_text, json_size
from ._codes import FileErrorCode
from ._disk import (
    Snapshot,
    WriteGuard,
    file_version,
    read_snapshot,
    remove_empty_dirs,
    remove_file,
    replace_temp,
    write_temp,
)
from ._flock import LOCK_TIMEOUT_S, PathLocks, busy_error, lock_holder, locked_error
from ._locking import ProcessLocks, uncancelled
from ._paths import WorkspaceRoot
from ._rg import GREP_TIME_BUDGET_S, SearchEngine
from ._state import ReadFileState
from ._text import DecodedText, count_lines, decode_file, encode_text, version_of
from ._txn import Intent, Pending, StateDir, committed_orphans, intents_held, recover

if TYPE_CHECKING:  # the edit engine loads at the first edit_file (start-up cost)
    from ._edit import Edit

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "HOST_READ_MAX_CHARS",
    "Workspace",
    "uncancelled",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_OUTPUT_CHARS: Final = 100_000
"""``read_file`` display clip, in characters (the spec's ``_MAX_OUTPUT``)."""

HOST_READ_MAX_CHARS: Final = 40_000
"""``read_file``'s clip under ``steerable mcp``: a whole result fits what hosts show.

Claude Code (2.1) hands its model an MCP result whole up to 50,000 characters of compact JSON
(JavaScript string length); past that only a 2 KB preview, and past about 25,000 tokens nothing
but the field names. The bound counts the content as it stands in that JSON
(:func:`~._clip.json_size`: escapes in full, an emoji as 2), so 40,000 leave room for the other
fields and the clip's marker line whatever the file holds.
"""

DEFAULT_MAX_FILE_BYTES: Final = 64 * 1024 * 1024
"""Largest file the tools load, in bytes (64 MiB); larger files are refused, never truncated."""

_PARALLEL_HASH_BYTES: Final = 1024 * 1024
_FIRST_RECHECK_S: Final = 0.001
_MAX_RECHECK_S: Final = 0.05


_VERSION = re.compile("[0-9a-f]{64}")
"""A version as read_file returns it: SHA-256, lowercase hex (tool_contract.json)."""


def _short(version: str) -> str:
    return version[:12]


@dataclass(frozen=True, slots=True)
class _View:
    decoded: DecodedText
    start: int
    end: int
    total: int
    shown: str
    clipped: bool


class Workspace:
    """File tools confined to one directory, with session read-before-write state.

    Opening a workspace finishes or drops the writes of steerable processes that died mid-write
    (:func:`~._txn.recover`; what it did is in :attr:`recovered`).

    Args:
        root: The workspace directory.
        state: The session's read state (a fresh one by default; pass a seeded one on resume).
        require_read_before_write: The hard gate (spec default on): overwriting or editing an
            existing file the session never read is refused.
        allow_outside: Accept paths outside ``root`` (jailed runs only).
        allow_protected_writes: Let the tools write protected paths (``.git``, shell start-up files,
            editor and agent configuration: :mod:`steerable_agent_runtime._protected`), FILE-15.
        cross_process_lock: Hold a lock every steerable process honours from the version check to
            the rename (FILE-12); turn off only where the filesystem has no locks.
        lock_timeout_s: How long a write waits for another process's lock, in seconds.
        max_output_chars: ``read_file`` display clip, in characters (:mod:`._clip`).
        max_output_json: Count the clip in characters of the content as a JSON string
            (:func:`~._clip.json_size`; ``steerable mcp``'s bound, for hosts that measure JSON).
        max_file_bytes: Largest file loaded, in bytes.
        grep_time_budget_s: Wall-clock time one ``grep`` or ``glob`` call may take, in seconds.
        search: The ``grep`` / ``glob`` engine (default: ripgrep where usable, found on first use;
            see :class:`~._rg.SearchEngine`).
        deny_read: What the tools neither read, list nor write, as sandboxed commands cannot read it
            (SAFE-3); default: the deny-read set of ``os.environ`` (``deny_read_from_env``).
        state_dir: steerable's state directory, which holds the key that seals the write journal
            (``_seal``; recovery acts only on records sealed with it); default
            ``config.default_state_dir()`` of ``os.environ``.

    Raises:
        WorkspaceError: ``invalid_workspace`` when ``root`` is not a directory.
        ConfigError: ``STEERABLE_SANDBOX_DENY_READ`` holds a relative path (``deny_read`` not given).
    """

    def __init__(
        self,
        root: str | Path,
        *,
        state: ReadFileState | None = None,
        require_read_before_write: bool = True,
        allow_outside: bool = False,
        allow_protected_writes: bool = False,
        cross_process_lock: bool = True,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        max_output_json: bool = False,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        grep_time_budget_s: float = GREP_TIME_BUDGET_S,
        search: SearchEngine | None = None,
        deny_read: Iterable[Path] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if deny_read is None:
            deny_read = deny_read_from_env()
        self.root = WorkspaceRoot(root, allow_outside=allow_outside, deny_read=deny_read)
        self.state = state if state is not None else ReadFileState()
        self.require_read_before_write = require_read_before_write
        self.allow_protected_writes = allow_protected_writes
        self.max_output_chars = max_output_chars
        self.max_output_json = max_output_json
        self.max_file_bytes = max_file_bytes
        self.grep_time_budget_s = grep_time_budget_s
        self.search = search if search is not None else SearchEngine()
        self.lock_timeout_s = lock_timeout_s
        self.journal = StateDir(self.root.path, Path(state_dir) if state_dir is not None else None)
        self.cross_process = PathLocks(timeout_s=lock_timeout_s) if cross_process_lock else None
        self._own = ProcessLocks()
        self._unsettled: set[str] = set()  # commit markers recovery left in place: tried once, ignored
        # steerable's own interpreter and package, where they lie inside the workspace (a .venv)
        self._runtime = [
            Path(r)
            for r in {os.path.realpath(root) for root in runtime_roots()}
            if Path(r).is_relative_to(self.root.path)
        ]
        try:
            self.recovered: list[str] = recover(self.journal, _Recovery(self), self.cross_process)
        except (OSError, WorkspaceError) as exc:  # never fail the boot: the next start tries again
            logger.warning("steerable: could not check %s for interrupted writes: %s", self.journal.path, exc)
            self.recovered = []

    # -- shared plumbing -------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def locked(self, paths: Iterable[Path]) -> AsyncIterator[frozenset[Path]]:
        """Hold the write locks of ``paths``: this process's, then every steerable process's (FILE-12).

        Per file (:class:`~._flock.PathLocks`): calls writing different files never wait on each
        other. Waits block (no polling) in arrival order within this process; at most
        :data:`~._locking.IN_FLIGHT` operations hold handles at once, however many calls are in
        flight. Locks are taken in one fixed order (sorted paths, then ascending inodes), so two
        multi-file patches cannot deadlock. A killed holder's locks go with its process.

        Yields:
            The paths that did not exist, so took no lock: pass them to :meth:`snapshot`, which
            refuses one made meanwhile (its creation can only be a ``create_from_temp``).

        Raises:
            WorkspaceError: ``file_locked`` past ``lock_timeout_s``: "busy" when this process's own
                calls held the files, else naming the other process.
        """
        unique = sorted(set(paths))
        names = [self.root.listing_name(path) for path in unique]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lock_timeout_s
        async with contextlib.AsyncExitStack() as stack:
            await self._own.hold(stack, unique, names, deadline, self.lock_timeout_s)
            if self.cross_process is None:
                yield frozenset()
                return
            locks = self.cross_process
            while True:
                held = await self._own.cross_process(locks, unique, names, deadline, self.lock_timeout_s)
                pending = committed_orphans(self.journal, names, self._unsettled)
                if not pending:
                    break
                # a committed patch not yet whole: finish it first when its process died between its
                # renames, else wait for the process applying it, or this call would read (and keep)
                # its half-applied files (issue 28); the locks are taken anew after
                held.release()
                if pending.dead:
                    await self._settle(pending.dead)
                else:
                    await self._await_live(pending, names, deadline)
            stack.callback(held.release)
            yield held.absent

    async def _await_live(self, pending: Pending, names: Sequence[str], deadline: float) -> None:
        """Wait for live processes to end patches that name one of ``names`` (re-checked cheaply).

        Raises:
            WorkspaceError: ``file_locked`` past the deadline, naming the process that holds the
                patch's intent (a lock wait's refusal), or "busy" when it is this process.
        """
        loop = asyncio.get_running_loop()
        wait = _FIRST_RECHECK_S
        while intents_held(self.journal, pending.live):
            if loop.time() >= deadline:
                holder = await asyncio.to_thread(lock_holder, pending.live[0][1])
                if holder is not None and holder[0] == os.getpid():
                    raise busy_error(names, self.lock_timeout_s)
                raise locked_error(names, self.lock_timeout_s, holder)
            await asyncio.sleep(min(wait, deadline - loop.time()))
            wait = min(wait * 2, _MAX_RECHECK_S)

    async def _settle(self, dead: Sequence[str]) -> None:
        """Run recovery for the ``dead`` markers once; one it leaves is ignored from then on."""
        for name in await asyncio.to_thread(self._settle_orphans, dead):
            if name not in self._unsettled:
                self._unsettled.add(name)
                logger.warning(
                    "steerable: could not settle the interrupted patch %s in %s (its process is gone); "
                    "this process goes on without it, and the next start tries again",
                    name,
                    self.journal.path / "txn",
                )

    async def settle_interrupted(self) -> None:
        """Before a read: finish a patch whose process died between its renames (issue 28).

        One listing of an empty folder when there is none; read tools call it so no running process
        shows (or builds on) a half-applied patch until its next start.
        """
        if self.cross_process is not None:
            pending = committed_orphans(self.journal, (), self._unsettled)
            if pending.dead:
                await self._settle(pending.dead)

    def _settle_orphans(self, dead: Sequence[str]) -> list[str]:
        """Run recovery now (blocking); return the markers of ``dead`` it left in place."""
        try:
            self.recovered.extend(recover(self.journal, _Recovery(self), self.cross_process))
        except (OSError, WorkspaceError) as exc:
            logger.warning(
                "steerable: could not settle an interrupted patch in %s: %s", self.journal.path, exc
            )
        left = committed_orphans(self.journal, (), self._unsettled).dead
        return [name for name in dead if name in left]

    async def load(self, real: Path, display: str) -> bytes | None:
        """Read a file off the event loop; ``None`` when it does not exist."""
        return (await self.snapshot(real, display)).data

    async def snapshot(self, real: Path, display: str, absent: frozenset[Path] = frozenset()) -> Snapshot:
        """Read a file off the event loop, with the identity a later write re-checks.

        Args:
            real: The file (resolved).
            display: Its path as the model knows it.
            absent: What :meth:`locked` found absent (so holds no lock of): a file there now was
                made by another program since.

        Raises:
            WriteConflictError: ``conflict`` for a file made in ``absent`` meanwhile.
        """
        snapshot = await asyncio.to_thread(
            read_snapshot, real, root=self.root.path, display=display, max_bytes=self.max_file_bytes
        )
        if snapshot.data is not None and real in absent:
            raise WriteConflictError(
                FileErrorCode.CONFLICT,
                f"{display} was created by another program while this write was being prepared (an "
                "editor or a command); nothing was written. Read it, then write with its version",
                data={"path": display},
            )
        return snapshot

    async def write(self, real: Path, data: bytes, display: str, *, guard: WriteGuard | None = None) -> None:
        """Atomically replace ``real`` with ``data`` off the event loop, announced in the journal.

        Raises:
            WriteConflictError: ``conflict`` when ``guard`` finds the file changed by another program.
            WorkspaceError: ``write_failed`` with the OS's words.
        """
        try:  # a cancel (a deadline) waits for the thread: its locks must outlast its rename
            await uncancelled(asyncio.to_thread(self._write_blocking, real, data, display, guard))
        except OSError as exc:
            raise WorkspaceError(
                FileErrorCode.WRITE_FAILED,
                f"could not write {display}: {exc.strerror or exc}",
                data={"path": display},
            ) from None

    def _write_blocking(self, real: Path, data: bytes, display: str, guard: WriteGuard | None) -> None:
        intent = self.begin_intent("write")
        root = self.root.path
        created: list[Path] = []
        try:
            temp = write_temp(
                real,
                data,
                root=root,
                display=display,
                created=created,
                on_temp=lambda name: intent.note_temp(self.root.listing_name(real.parent / name)),
            )
            for directory in created:  # removed again by recovery if this process dies before the rename
                intent.note_dir(self.root.listing_name(directory))
            replace_temp(real, temp, root=root, display=display, guard=guard)
        except BaseException:
            remove_empty_dirs(created, root=root)
            raise
        finally:
            intent.finish()

    def begin_intent(self, op: str) -> Intent:
        """Announce a write in ``.steerable/txn`` (blocking; see :class:`~._txn.Intent`).

        Raises:
            OSError: When the state folder cannot be created, with a message naming it.
        """
        try:
            return Intent.begin(self.journal, op)
        except OSError as exc:
            raise OSError(
                exc.errno, f"cannot write steerable's journal in {self.journal.path} ({exc.strerror or exc})"
            ) from None

    def check_protected(self, path: str, real: Path, display: str, action: str) -> None:
        """Refuse to ``action`` a protected path (FILE-15), named by the model or reached through a symlink.

        Args:
            path: The path as the model gave it (its lexical form is checked too: ``.vscode`` may be a
                symlink to an ordinary folder, and the editor still reads ``.vscode/tasks.json``).
            real: The resolved path.
            display: Its display path.
            action: The verb for the message: ``write``, ``edit``, ``create``, ``delete``, ``move``...

        Raises:
            WorkspaceError: ``protected_path`` naming the rule and the opt-out.
        """
        if self.allow_protected_writes:
            return
        lexical = os.path.normpath(path)
        if os.path.isabs(lexical) and Path(lexical).is_relative_to(self.root.path):
            lexical = Path(lexical).relative_to(self.root.path).as_posix()
        configured = configured_code_paths(self.root.path)
        for candidate in (display, lexical):
            rule = self._rule_for(candidate, real, configured)
            if rule is not None:
                via = "" if candidate == display else f" (it resolves to {display})"
                raise WorkspaceError(
                    FileErrorCode.PROTECTED_PATH,
                    f"{candidate} is a protected path{via}: {rule.pattern} ({rule.reason}). The file tools "
                    f"do not {action} it, because a change there runs code outside the sandbox. If the user "
                    f"wants this change, ask them to make it themselves or to restart steerable with "
                    f"{PROTECTED_FLAG} (or {PROTECTED_ENV}=1)",
                    data={"path": candidate, "rule": rule.pattern},
                )

    def _rule_for(
        self, candidate: str, real: Path, configured: list[tuple[str, ProtectedRule]]
    ) -> ProtectedRule | None:
        """The protected rule ``candidate`` (a display path resolving to ``real``) falls under, if any.

        By name (``protected_rule``), as steerable's own runtime, as what git configuration runs or
        includes (``configured``: ``_git_config.configured_code_paths``), or as part of an
        interpreter environment or of a git directory under an ordinary name (SAFE-2).
        """
        rule = protected_rule(candidate)
        if rule is None and any(real.is_relative_to(runtime) for runtime in self._runtime):
            rule = RUNTIME_RULE
        if rule is None:
            rule = next((r for d, r in configured if candidate == d or candidate.startswith(d + "/")), None)
        if rule is None and not candidate.startswith("../") and not os.path.isabs(candidate):
            if interpreter_environment(self.root.path, candidate) is not None:
                rule = INTERPRETER_ENV_RULE
            elif git_directory(self.root.path, candidate) is not None:
                rule = GIT_DIR_RULE
        return rule

    def is_protected(self, real: Path, display: str) -> bool:
        """Would the file tools refuse to write ``display`` (FILE-15)? ``False`` with the opt-out."""
        if self.allow_protected_writes:
            return False
        return self._rule_for(display, real, configured_code_paths(self.root.path)) is not None

    def check_gate(
        self, display: str, current: str | None, expected: str | None, *, full_overwrite: bool
    ) -> None:
        """Apply the read-before-write rules to one write.

        Args:
            display: The file's display path (the state key).
            current: The version on disk now, or ``None`` when the file does not exist.
            expected: The caller's ``expectedVersion``, if any.
            full_overwrite: ``True`` for ``write_file`` and deletes (a partial view is not enough),
                ``False`` for targeted edits.

        Raises:
            WriteConflictError: ``conflict`` (changed since read or since ``expectedVersion``),
                ``not_read`` (the hard gate), ``partial_read`` (a blind overwrite after a partial view).
        """
        # Refusals never carry the current version: handing it out would let a model pass the gate
        # by echoing it back as expectedVersion without ever reading the file.
        if current is None:
            return  # brand-new or vanished since the read: a plain create (spec: File tools)
        view = self.state.get(display)
        if expected is not None:
            if not _VERSION.fullmatch(expected):
                raise WriteConflictError(
                    FileErrorCode.CONFLICT,
                    f"expectedVersion {expected[:80]!r} is not a version: pass the whole 64-character "
                    "version read_file returned, or leave expectedVersion out",
                    data={"path": display, "expectedVersion": expected[:80]},
                )
            if expected != current:
                raise WriteConflictError(
                    FileErrorCode.CONFLICT,
                    f"{display} changed since version {_short(expected)}; "
                    "read it again, then write with the new version",
                    data={"path": display, "expectedVersion": expected},
                )
        elif view is None:
            if self.require_read_before_write:
                raise WriteConflictError(
                    FileErrorCode.NOT_READ,
                    f"{display} already exists and has not been read in this session; "
                    "read it first, then write with the read version (expectedVersion)",
                    data={"path": display},
                )
            return
        elif view.version != current:
            raise WriteConflictError(
                FileErrorCode.CONFLICT,
                f"{display} was modified outside this session since you read it (read version "
                f"{_short(view.version)}, now {_short(current)}); "
                "read it again, then write with the new version",
                data={"path": display, "expectedVersion": view.version},
            )
        if full_overwrite and view is not None and view.partial and view.version == current:
            raise WriteConflictError(
                FileErrorCode.PARTIAL_READ,
                f"you have only seen part of {display} (the read was clipped or ranged), so a full overwrite "
                "would destroy lines you never saw; use edit_file or apply_patch for targeted changes, "
                "or read the whole file first (a file over the display limit can only be changed that way)",
                data={"path": display},
            )

    def resolve_file(self, path: str) -> tuple[Path, str]:
        """Resolve a path that must name a file; return the real path and its display form.

        Raises:
            WorkspaceError: ``invalid_path`` for a path ending in ``/`` (it names a directory), and
                every :meth:`WorkspaceRoot.resolve` refusal.
        """
        if isinstance(path, str) and path.rstrip().endswith("/"):
            raise WorkspaceError(
                FileErrorCode.INVALID_PATH, f"{path!r} ends with '/', so it names a directory, not a file"
            )
        real = self.root.resolve(path)
        return real, self.root.display(real)

    # -- read_file -----------------------------------------------------------------------------
    async def read_file(
        self, path: str, offset: int | None = None, limit: int | None = None, *, raw: bytes | None = None
    ) -> dict[str, Any]:
        """Read a text file; records the version in the session state.

        Args:
            path: Workspace-relative (or absolute under the root) path.
            offset: First line to show, 1-based (default 1).
            limit: Number of lines to show (default: to the end).
            raw: The file's bytes as another party holds them, read instead of the disk (an
                editor's unsaved buffer: docs/acp.md, "Editor buffers"); ``version`` is then their
                hash, so a write is checked against the disk and refused until the two agree.

        Returns:
            ``{path, content, version, partial, startLine, endLine, totalLines, lineEnding, bom}``;
            ``version`` is the SHA-256 of the full file even for a ranged read, and ``partial`` is
            true when ``content`` is not the whole file (clipped at ``max_output_chars`` or ranged).

        Raises:
            WorkspaceError: ``file_not_found``, ``invalid_range`` and the load/decode codes.
        """
        real, display = self.resolve_file(path)
        if raw is None:
            await self.settle_interrupted()
            raw = await self.load(real, display)
        if raw is None:
            raise WorkspaceError(
                FileErrorCode.FILE_NOT_FOUND,
                f"{display} does not exist; find the right path with list_dir or glob",
                data={"path": display},
            )
        if len(raw) < _PARALLEL_HASH_BYTES:
            view = await asyncio.to_thread(self._view, raw, display, offset, limit, None)
            version = view.decoded.version
        else:  # hashlib releases the GIL on large buffers: hash in parallel with decoding
            version, view = await asyncio.gather(
                asyncio.to_thread(version_of, raw),
                asyncio.to_thread(self._view, raw, display, offset, limit, "-"),
            )
        partial = view.start > 1 or view.end < view.total or view.clipped
        previous = self.state.get(display)
        if partial and previous is not None and not previous.partial and previous.version == version:
            partial_state = False  # the session already saw this exact content in full
        else:
            partial_state = partial
        self.state.record(display, version, partial=partial_state)
        # the content last: a host that keeps only the start of a long result (Claude Code keeps a
        # 2 KB preview past 50,000 characters) still shows the path, the version a write needs and
        # whether this was all of the file
        return {
            "path": display,
            "version": version,
            "partial": partial,
            "startLine": view.start if view.total else 0,
            "endLine": view.end,
            "totalLines": view.total,
            "lineEnding": "crlf" if view.decoded.newline == "\r\n" else "lf",
            "bom": view.decoded.bom,
            "content": view.shown,
        }

    def _view(
        self, raw: bytes, display: str, offset: int | None, limit: int | None, version: str | None
    ) -> _View:
        """Decode and cut the displayed part (blocking: runs in a worker thread)."""
        decoded = decode_file(raw, path=display, version=version)
        text = decoded.text
        total = count_lines(text)
        start = 1 if offset is None else offset
        if start > max(total, 1):
            raise WorkspaceError(
                FileErrorCode.INVALID_RANGE,
                f"offset {start} is past the end of {display} ({total} lines)",
                data={"path": display, "totalLines": total},
            )
        if offset is None and limit is None:
            shown, end = text, total
        else:
            end = total if limit is None else min(total, start - 1 + limit)
            parts = text.split("\n", end)  # splits only as far as needed
            shown = "\n".join(parts[start - 1 : end]) + ("\n" if len(parts) > end else "")
        size, unit = (json_size, "characters of JSON") if self.max_output_json else (len, "characters")
        clip = clip_text(shown, self.max_output_chars, first_line=start, last_line=end, size=size, unit=unit)
        return _View(decoded, start, end, total, shown if clip is None else clip, clip is not None)

    # -- write_file ----------------------------------------------------------------------------
    async def write_file(
        self, path: str, content: str, expected_version: str | None = None
    ) -> dict[str, Any]:
        """Create or overwrite a whole file, through the read-before-write gate.

        An existing file keeps its BOM and CRLF line endings and its permission bits.

        Args:
            path: Workspace path.
            content: The full new text.
            expected_version: Reject the write unless the file is at this version.

        Returns:
            A new file: ``{path, version, created: true, bytes, lines}``, a summary (the model
            wrote the content; echoing it back would cost its size again every later round). A
            replaced file: ``{path, version, created: false, bytes, lines, linesAdded, linesRemoved,
            diff}``, ``diff`` the unified diff while it is at most 4,000 characters, else
            ``diffOmitted: true`` and, as ``diff``, a line saying it was left out and that
            ``read_file`` shows the text (:class:`DiffSummary`). A diff whose changes are spread
            too widely to compare within the work budget is not computed: ``diffOmitted: true``,
            ``diffNotComputed: true``, counts that ignore line order, and a line saying so.

        Raises:
            WriteConflictError: ``conflict``, ``not_read``, ``partial_read``.
            WorkspaceError: ``protected_path``, ``file_locked``, ``is_directory``, ``write_failed`` and
                the load codes.
        """
        real, display = self.resolve_file(path)
        self.check_protected(path, real, display, "write")
        async with self.locked([real]) as absent:
            snapshot = await self.snapshot(real, display, absent)
            raw = snapshot.data
            current = await asyncio.to_thread(version_of, raw) if raw is not None else None
            self.check_gate(display, current, expected_version, full_overwrite=True)
            newline, bom, before = "\n", False, ""
            if raw is not None:
                try:
                    old = await asyncio.to_thread(decode_file, raw, path=display, version=current)
                    newline, bom, before = old.newline, old.bom, old.text
                except WorkspaceError:
                    pass  # overwriting a binary/non-UTF-8 file the gate let through: plain UTF-8
            if raw is not None and newline == "\n" and "\r" not in before:
                content = content.replace("\r\n", "\n")  # an LF file stays LF
            data = encode_text(content, newline=newline, bom=bom)
            await self.write(real, data, display, guard=WriteGuard(snapshot, display))
            version = version_of(data)
            self.state.record(display, version)
        after = content.replace("\r\n", "\n")
        # the version first (a host's preview of a long result keeps it), any diff last
        result: dict[str, Any] = {"path": display, "version": version, "created": raw is None}
        result.update(bytes=len(data), lines=count_lines(after))
        if raw is not None:
            from ._diff import DiffSummary  # difflib loads with the first write, not at start-up

            summary = DiffSummary()
            await asyncio.to_thread(summary.add, before, after, display)
            result.update(summary.fields())
        return result

    # -- edit_file -----------------------------------------------------------------------------
    async def edit_file(
        self, path: str, edits: list[Edit], expected_version: str | None = None
    ) -> dict[str, Any]:
        """Apply targeted replacements to an existing file, all or none.

        Args:
            path: Workspace path.
            edits: Replacements located against the current text (see :func:`apply_edits_detailed`).
            expected_version: Reject the edit unless the file is at this version.

        Returns:
            ``{path, version, editsApplied, matchLevel, matches: [{edit, level, lines, reindented}],
            linesAdded, linesRemoved, diff}``: ``matchLevel`` is the loosest level any edit needed
            (``exact`` or a tolerance, FILE-14); ``diff`` as ``write_file``'s (left out past 4,000
            characters, with ``diffOmitted: true``; not computed past the work budget, with
            ``diffNotComputed: true`` too).

        Raises:
            EditError: The edit codes (``old_text_not_found``, ``ambiguous_match``...).
            WriteConflictError: ``conflict``, ``not_read``.
            WorkspaceError: ``protected_path``, ``file_locked``, ``file_not_found``, ``write_failed`` and
                the load/decode codes.
        """
        from ._edit import Edit, apply_edits_detailed
        from ._levels import loosest_level

        real, display = self.resolve_file(path)
        self.check_protected(path, real, display, "edit")
        async with self.locked([real]) as absent:
            snapshot = await self.snapshot(real, display, absent)
            raw = snapshot.data
            if raw is None:
                raise WorkspaceError(
                    FileErrorCode.FILE_NOT_FOUND,
                    f"{display} does not exist; create it with write_file",
                    data={"path": display},
                )
            current = await asyncio.to_thread(version_of, raw)
            self.check_gate(display, current, expected_version, full_overwrite=False)
            decoded = await asyncio.to_thread(decode_file, raw, path=display, version=current)
            if decoded.newline == "\r\n":
                edits = [
                    Edit(e.old_text.replace("\r\n", "\n"), e.new_text.replace("\r\n", "\n"), e.replace_all)
                    for e in edits
                ]
            seen = self.state.get(display)
            partial = seen is not None and seen.partial
            outcome = await asyncio.to_thread(apply_edits_detailed, decoded.text, edits, partial_view=partial)
            text = outcome.text
            data = encode_text(text, newline=decoded.newline, bom=decoded.bom)
            await self.write(real, data, display, guard=WriteGuard(snapshot, display))
            version = version_of(data)
            # an edit shows the model only what it changed: a partial view stays partial
            self.state.record(display, version, partial=partial)
        from ._diff import DiffSummary

        summary = DiffSummary()
        await asyncio.to_thread(summary.add, decoded.text, text, display)
        return {
            "path": display,
            "version": version,
            "editsApplied": len(edits),
            "matchLevel": loosest_level(match.level for match in outcome.matches),
            "matches": [
                {"edit": m.edit, "level": m.level, "lines": list(m.lines), "reindented": m.reindented}
                for m in outcome.matches
            ],
            **summary.fields(),
        }


class _Recovery:
    """The workspace's path checks and disk primitives, as crash recovery needs them (``RecoveryIO``)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def resolve_internal(self, display: str) -> Path | None:
        try:
            real = self.ws.root.resolve(display)
        except WorkspaceError:
            return None
        return real if self.ws.root.listing_name(real) == display else None

    def replaceable(self, real: Path, display: str) -> bool:
        return not self.ws.is_protected(real, display)

    def version(self, real: Path, display: str) -> str | None:
        # a patch's files are loaded whole, so none is over the tools' limit (plus what a patch adds)
        limit = 2 * self.ws.max_file_bytes
        return file_version(real, root=self.ws.root.path, display=display, max_bytes=limit)

    def rename(self, temp: Path, target: Path, display: str, *, create: bool) -> None:
        replace_temp(target, temp.name, root=self.ws.root.path, display=display, create=create)

    def remove(self, real: Path, display: str) -> bool:
        return remove_file(real, root=self.ws.root.path, display=display, sync=True)

    def remove_empty_dir(self, real: Path) -> None:
        remove_empty_dirs([real], root=self.ws.root.path)

    def remove_appeared(self, existing: Sequence[str], since_ns: int, until_ns: int) -> list[str]:
        if self.ws.allow_protected_writes:
            return []
        from ..sandbox._audit import remove_appeared_since  # the audit's own walk (no import cycle)

        return remove_appeared_since(str(self.ws.root.path), set(existing), since_ns, until_ns)
