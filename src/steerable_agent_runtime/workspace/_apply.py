"""``apply_patch`` at the file layer: plan every operation, then commit all of them or none.

The grammar and the text-level matching live in :mod:`._patch`. Here each operation is checked
against the disk, the read-before-write gate and the protected paths (FILE-15) before anything is
written, and the commit is crash-atomic (FILE-13: fsynced temp files, a commit record in the
intent file, then the renames; :func:`~._txn.recover` rolls a killed one forward). Where this
differs from Codex (no silent overwrite, all-or-nothing) and the commit sequence:
docs/file-tools.md, "apply_patch" and "Crash-atomic patches and the journal".
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PatchError, WorkspaceError
from ._codes import FileErrorCode
from ._diff import DiffSummary
from ._disk import (
    Snapshot,
    WriteGuard,
    check_unchanged,
    file_mode,
    remove_empty_dirs,
    remove_file,
    replace_temp,
    sync_directory,
    write_temp,
)
from ._levels import loosest_level
from ._patch import AddFile, DeleteFile, UpdateFile, apply_chunks_detailed, parse_patch
from ._rename import Identity
from ._text import count_lines, decode_file, encode_text, version_of
from ._txn import Intent, JournalEntry
from ._workspace import Workspace, uncancelled

__all__ = ["apply_patch"]


@dataclass(slots=True)
class _Plan:
    """The disk as it will be after the patch: real path -> new bytes (``None`` = deleted)."""

    original: dict[Path, bytes | None] = field(default_factory=dict)
    snapshots: dict[Path, Snapshot] = field(default_factory=dict)
    original_modes: dict[Path, int | None] = field(default_factory=dict)
    final: dict[Path, bytes | None] = field(default_factory=dict)
    modes: dict[Path, int | None] = field(default_factory=dict)
    # where a planned file's content came from: its original path (whose read view governs a later
    # delete in the same patch), or None when the patch itself wrote it (Add File)
    origin: dict[Path, Path | None] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    moved: dict[str, str] = field(default_factory=dict)
    diff: DiffSummary = field(default_factory=DiffSummary)
    hunks: list[dict[str, Any]] = field(default_factory=list)
    absent: frozenset[Path] = frozenset()  # not there when locked (Workspace.locked): took no lock


async def _current(ws: Workspace, plan: _Plan, real: Path, display: str) -> bytes | None:
    if real in plan.final:
        return plan.final[real]
    if real in plan.snapshots:
        return plan.original[real]
    snapshot = await ws.snapshot(real, display, plan.absent)
    raw = snapshot.data
    plan.snapshots[real] = snapshot
    plan.original[real] = raw
    if raw is not None:
        plan.original_modes[real] = await asyncio.to_thread(
            file_mode, real, root=ws.root.path, display=display
        )
    return raw


def _refuse_symlink(ws: Workspace, path: str, operation: str) -> None:
    target = ws.root.symlink_target(path)
    if target is not None:
        raise PatchError(
            FileErrorCode.IS_SYMLINK,
            f"{operation} {path}: {path} is a symlink to {target}; apply_patch does not delete or move "
            "symlinks (it would act on the target). Change the target file, or use bash for the link",
            data={"path": path},
        )


async def _plan_add(ws: Workspace, plan: _Plan, op: AddFile) -> None:
    real, display = ws.resolve_file(op.path)
    ws.check_protected(op.path, real, display, "create")
    if await _current(ws, plan, real, display) is not None:
        raise PatchError(
            FileErrorCode.FILE_EXISTS,
            f"*** Add File: {display} already exists; apply_patch never overwrites silently. "
            "Use *** Update File to change it (after reading it), or *** Delete File first",
            data={"path": display},
        )
    plan.final[real] = encode_text(op.content)
    plan.modes[real] = None
    plan.origin[real] = None
    plan.changed.append(display)
    plan.diff.count(added=count_lines(op.content))  # no diff: the patch holds every line of it


async def _plan_delete(ws: Workspace, plan: _Plan, op: DeleteFile) -> None:
    _refuse_symlink(ws, op.path, "*** Delete File:")
    real, display = ws.resolve_file(op.path)
    ws.check_protected(op.path, real, display, "delete")
    raw = await _current(ws, plan, real, display)
    if raw is None:
        raise PatchError(
            FileErrorCode.FILE_NOT_FOUND, f"*** Delete File: {display} does not exist", data={"path": display}
        )
    # A delete destroys the whole file, so the session must have seen all of it (write_file's rule),
    # also when an earlier operation of this patch updated or moved it here.
    source = plan.origin.get(real, real) if real in plan.final else real
    if source is not None:
        source_raw = plan.original.get(source)
        if source_raw is not None:
            ws.check_gate(ws.root.display(source), version_of(source_raw), None, full_overwrite=True)
    plan.final[real] = None
    plan.modes[real] = None
    plan.changed.append(display)
    plan.diff.count(removed=raw.count(b"\n") + (not raw.endswith(b"\n") and bool(raw)))


async def _plan_update(ws: Workspace, plan: _Plan, op: UpdateFile) -> None:
    if op.move_to is not None:
        _refuse_symlink(ws, op.path, "*** Update File:")
    real, display = ws.resolve_file(op.path)
    ws.check_protected(op.path, real, display, "edit" if op.move_to is None else "move")
    raw = await _current(ws, plan, real, display)
    if raw is None:
        raise PatchError(
            FileErrorCode.FILE_NOT_FOUND,
            f"*** Update File: {display} does not exist; use *** Add File to create it",
            data={"path": display},
        )
    version = version_of(raw)
    if real not in plan.final:
        ws.check_gate(display, version, None, full_overwrite=False)
    decoded = decode_file(raw, path=display, version=version)
    outcome = await asyncio.to_thread(apply_chunks_detailed, decoded.text, op.chunks, path=display)
    new_text = outcome.text
    plan.hunks.extend(
        {"path": display, "hunk": h.hunk, "line": h.line, "level": h.level, "reindented": h.reindented}
        for h in outcome.hunks
    )
    data = encode_text(new_text, newline=decoded.newline, bom=decoded.bom)
    target, target_display = real, display
    if op.move_to is not None:
        target, target_display = ws.resolve_file(op.move_to)
        ws.check_protected(op.move_to, target, target_display, "move a file onto")
        if target != real and await _current(ws, plan, target, target_display) is not None:
            raise PatchError(
                FileErrorCode.FILE_EXISTS,
                f"*** Move to: {target_display} already exists; apply_patch never overwrites silently. "
                "Delete it first (after reading it) or choose another destination",
                data={"path": target_display},
            )
    origin = plan.origin.get(real, real)
    mode = plan.modes.get(real) if real in plan.modes else plan.original_modes.get(real)
    if target != real:
        plan.final[real] = None
        plan.modes[real] = None
        plan.moved[display] = target_display
        plan.changed.append(display)
    plan.final[target] = data
    plan.modes[target] = mode  # a moved file keeps its permission bits
    plan.origin[target] = origin
    plan.changed.append(target_display)
    # the hunks' lines alone are compared: linear in the hunks (SAFE-8)
    await asyncio.to_thread(plan.diff.add, decoded.text, new_text, target_display, changes=outcome.changes)


def _seen_partially(ws: Workspace, origin: Path | None) -> bool:
    if origin is None:
        return False
    view = ws.state.get(ws.root.display(origin))
    return view is not None and view.partial


def _commit(ws: Workspace, plan: _Plan) -> None:
    """Write every new content, commit the journal, rename, fsync (blocking: runs in a thread)."""
    intent = ws.begin_intent("apply_patch")
    try:
        _commit_in(ws, plan, intent)
    finally:
        intent.finish()


def _note(ws: Workspace, intent: Intent, real: Path) -> Callable[[str], None]:
    return lambda name: intent.note_temp(ws.root.listing_name(real.parent / name))


def _stage(
    ws: Workspace,
    intent: Intent,
    contents: dict[Path, bytes | None],
    modes: dict[Path, int | None],
    created: list[Path],
    temps: dict[Path, str],
) -> None:
    """Phase 1: an fsynced temp file beside every target that gets content, recorded in ``temps``.

    ``temps`` (target -> temp name) is filled as they are written, so a failure part-way leaves the
    caller the list of what to remove.
    """
    root = ws.root.path
    for real, data in contents.items():
        if data is None:
            continue
        before = len(created)
        display = ws.root.display(real)
        with _naming(display):
            temps[real] = write_temp(
                real,
                data,
                root=root,
                display=display,
                mode=modes.get(real),
                created=created,
                on_temp=_note(ws, intent, real),
            )
        for directory in created[before:]:
            intent.note_dir(ws.root.listing_name(directory))


def _entries(
    ws: Workspace,
    contents: dict[Path, bytes | None],
    before: dict[Path, bytes | None],
    temps: dict[Path, str],
) -> list[JournalEntry]:
    entries = []
    for real, data in contents.items():
        old = before.get(real)
        temp = temps.get(real)
        entries.append(
            JournalEntry(
                target=ws.root.listing_name(real),
                temp=ws.root.listing_name(real.parent / temp) if temp is not None else None,
                before=version_of(old) if old is not None else None,
                after=version_of(data) if data is not None else None,
            )
        )
    return entries


def _rename_all(
    ws: Workspace,
    contents: dict[Path, bytes | None],
    temps: dict[Path, str],
    done: list[Path],
    new: Collection[Path] = (),
    seen: Mapping[Path, Identity | None] | None = None,
) -> None:
    """Phase 2: every rename (or unlink) in plan order, then one fsync per directory.

    A file in ``new`` (one the patch adds) must not exist: a file made there meanwhile is not
    replaced (``create_from_temp``), and the patch is undone. A file in ``seen`` is replaced or
    deleted only if it still has the identity its check vouched for, looked at right before its own
    rename (an editor may save it while the earlier files are renamed); otherwise the patch is undone.
    """
    root = ws.root.path
    seen = seen or {}
    for real, data in contents.items():
        display = ws.root.display(real)
        with _naming(display):
            if data is None:
                remove_file(real, root=root, display=display, seen=seen.get(real))
            else:
                replace_temp(
                    real,
                    temps.pop(real),
                    root=root,
                    display=display,
                    seen=seen.get(real),
                    sync=False,
                    create=real in new,
                )
        done.append(real)
    for directory in dict.fromkeys(real.parent for real in contents):
        sync_directory(directory, root=root)


@contextlib.contextmanager
def _naming(display: str) -> Iterator[None]:
    """Re-raise an ``OSError`` with the file's display path in place of a temp file's name."""
    try:
        yield
    except OSError as exc:
        raise OSError(exc.errno, f"{exc.strerror or exc} ({display})") from None


def _discard(ws: Workspace, temps: dict[Path, str]) -> None:
    root = ws.root.path
    for real, temp in temps.items():
        with contextlib.suppress(OSError, WorkspaceError):
            remove_file(real.parent / temp, root=root, display=ws.root.listing_name(real.parent / temp))
    temps.clear()


def _commit_in(ws: Workspace, plan: _Plan, intent: Intent) -> None:
    root = ws.root.path
    created: list[Path] = []
    temps: dict[Path, str] = {}
    done: list[Path] = []
    try:
        _stage(ws, intent, plan.final, plan.modes, created, temps)
        seen = {  # nothing changed under us (an editor, a command) since the plan
            real: check_unchanged(
                real, root=root, guard=WriteGuard(plan.snapshots[real], ws.root.display(real))
            )
            for real in plan.final
        }
        if len(plan.final) > 1:
            for directory in dict.fromkeys(real.parent for real in temps):
                sync_directory(directory, root=root)  # the temp files' names are durable too
            intent.commit(_entries(ws, plan.final, plan.original, temps))
        new = {
            real for real, data in plan.final.items() if data is not None and plan.original.get(real) is None
        }
        _rename_all(ws, plan.final, temps, done, new, seen)
    except (OSError, WorkspaceError):
        if done:  # put back what was already replaced, as a committed transaction of its own
            _roll_back(ws, plan, intent, done)
        _discard(ws, temps)
        remove_empty_dirs(created, root=root)
        raise


def _roll_back(ws: Workspace, plan: _Plan, intent: Intent, done: list[Path]) -> None:
    """Give the files already replaced their original bytes back (after a rename failed part-way).

    If that fails too, the intent is left in the journal: its last commit record (the patch, or this
    rollback once recorded) is finished by the next start, so the files end all-new or all-old.

    Raises:
        WorkspaceError: ``write_failed`` when the rollback itself failed.
    """
    originals = {real: plan.original.get(real) for real in reversed(done)}
    modes = {real: plan.original_modes.get(real) for real in originals}
    back: dict[Path, str] = {}
    try:
        _stage(ws, intent, originals, modes, [], back)
        intent.commit(_entries(ws, originals, dict(plan.final), back))
        _rename_all(ws, originals, back, [])
    except (OSError, WorkspaceError) as exc:
        intent.abandon()
        raise WorkspaceError(
            FileErrorCode.WRITE_FAILED,
            f"the patch failed part-way and could not be undone ({exc}); steerable finishes it the next "
            "time the workspace is opened. Re-read the files before changing them again",
        ) from None


async def apply_patch(ws: Workspace, patch: str) -> dict[str, Any]:
    """Apply a Codex-grammar patch to the workspace atomically.

    Args:
        ws: The workspace (its gate and read state apply).
        patch: ``*** Begin Patch`` ... ``*** End Patch`` text.

    Returns:
        ``{versions: {path: version}, filesChanged: [paths], deleted: [paths], moved: {from: to},
        matchLevel, hunks: [{path, hunk, line, level, reindented}], linesAdded, linesRemoved,
        diff}``; ``versions`` has every written file's new version; ``matchLevel`` is the loosest
        level any hunk needed (FILE-14). ``diff`` is the updated files' unified diff (an added file
        has none: the patch holds its lines; a deleted one neither), left out past 4,000
        characters with ``diffOmitted: true``, and not computed past the diff's work budget
        (``diffOmitted`` and ``diffNotComputed: true``, the counts then ignoring line order:
        ``_diff.DiffSummary``); the line counts include added and deleted files.

    Raises:
        PatchError: ``invalid_patch``, ``context_not_found``, ``ambiguous_match``,
            ``indentation_mismatch``, ``file_exists``, ``file_not_found``.
        WriteConflictError: ``not_read``, ``conflict``, ``partial_read`` (deletes).
        WorkspaceError: Path, load and decode codes, and ``write_failed``.
    """
    ops = parse_patch(patch)
    plan = _Plan()
    paths = []
    for op in ops:
        paths.append(ws.resolve_file(op.path)[0])
        if isinstance(op, UpdateFile) and op.move_to is not None:
            paths.append(ws.resolve_file(op.move_to)[0])
    async with ws.locked(paths) as absent:
        plan.absent = absent
        for op in ops:
            if isinstance(op, AddFile):
                await _plan_add(ws, plan, op)
            elif isinstance(op, DeleteFile):
                await _plan_delete(ws, plan, op)
            else:
                await _plan_update(ws, plan, op)
        try:
            await uncancelled(asyncio.to_thread(_commit, ws, plan))  # the locks outlast the renames
        except OSError as exc:
            raise WorkspaceError(
                FileErrorCode.WRITE_FAILED,
                f"could not apply the patch: {exc.strerror or exc}; nothing was changed",
            ) from None
        except WorkspaceError as exc:
            raise WorkspaceError(
                exc.code, f"could not apply the patch: {exc.error}; nothing was changed", data=exc.data
            ) from None
        versions: dict[str, str] = {}
        deleted: list[str] = []
        # an updated file was seen as fully as its origin was; a file the patch added, in full
        partial = {real: _seen_partially(ws, origin) for real, origin in plan.origin.items()}
        for real, data in plan.final.items():
            display = ws.root.display(real)
            if data is None:
                ws.state.forget(display)
                deleted.append(display)
            else:
                version = version_of(data)
                ws.state.record(display, version, partial=partial.get(real, False))
                versions[display] = version
    return {
        "versions": versions,
        "filesChanged": list(dict.fromkeys(plan.changed)),
        "deleted": deleted,
        "moved": plan.moved,
        "matchLevel": loosest_level(hunk["level"] for hunk in plan.hunks),
        "hunks": plan.hunks,
        **plan.diff.fields(),
    }
