"""Protected paths around one sandboxed run: read-only binds where possible, an audit everywhere (FILE-15).

``bash`` and ``run_code`` both run model-written programs with the workspace writable; both wrap the
run in :func:`guard_protected_paths`, and turn what it reverted into the same sentence for the model
(:func:`protected_result`). The same seam keeps the deny-read entries inside the workspace under
their names: what the run moved is put back before the audit runs (``_deny_moves``, SAFE-3).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .._protected import PROTECTED_ENV, PROTECTED_FLAG, ProtectedRule
from ..config import default_state_dir
from ..errors import WorkspaceError
from ..types import ToolResult
from ..workspace._txn import HEARTBEAT_S, Intent, StateDir
from ._audit import MAX_ENTRIES, AuditOutcome, ProtectedAudit
from ._backend import SandboxBackend
from ._bwrap import BubblewrapBackend
from ._codes import SandboxErrorCode
from ._deny_moves import DenyMoves, DenyWatch, moves_result
from ._landlock import LandlockBackend
from ._protect import ScanCache

__all__ = ["GuardedRun", "guard_protected_paths", "protected_result", "snapshot_too_large"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class GuardedRun:
    """What the run may see, and (after it) what the audit put back.

    Attributes:
        read_only: Paths to bind read-only (``SandboxPolicy.read_only``): the protected entries the
            backend can carve out (bubblewrap); empty otherwise, or with the opt-out.
        outcome: Set when the guarded block ends normally: the audit's :class:`AuditOutcome`
            (``None`` with the opt-out).
        moves: Set when the guarded block ends normally: the deny-read entries inside the workspace
            the run had moved, put back (``None`` when none lies inside it).
    """

    read_only: tuple[Path, ...]
    outcome: AuditOutcome | None = None
    moves: DenyMoves | None = None


@contextlib.asynccontextmanager
async def guard_protected_paths(
    root: Path,
    backend: SandboxBackend,
    *,
    allow: bool,
    cache: ScanCache | None = None,
    tool: str = "bash",
    deny_read: Iterable[Path] = (),
    environ: Mapping[str, str] | None = None,
) -> AsyncIterator[GuardedRun]:
    """Snapshot the protected entries under ``root``; after the block, put back what changed.

    Run the sandboxed program inside the block (its processes must be gone when it ends). With
    ``allow`` (the opt-out) nothing is snapshotted or reverted. Blocking scans run in a thread. A
    cancelled or failed block still has its changes put back before the exception goes on. Under
    every setting, the deny-read entries inside ``root`` (and the folders on the way) the run moved
    are renamed back first (``_deny_moves.DenyWatch``, SAFE-3).

    Args:
        root: The writable workspace root (resolved).
        backend: The backend the run uses; bubblewrap gets the existing entries bound read-only.
        allow: ``STEERABLE_ALLOW_PROTECTED_WRITES`` / ``--allow-protected-writes``.
        cache: Directory listings kept between calls (one per tool).
        tool: The tool's name, for the crash record (``bash``, ``run_code``).
        deny_read: The run's deny-read set (``SandboxConfig.deny_read``).
        environ: The environment the state directory is resolved from (default ``os.environ``):
            the crash record is sealed with the journal key kept there (``workspace._seal``), the
            one the workspace's recovery checks it with.

    Raises:
        SnapshotTooLarge: More protected entries than :data:`MAX_ENTRIES` (nothing was run).
        DenyReadDisplaced: An earlier run moved a deny-read entry that could not be put back
            (nothing was run: ``DenyReadDisplaced.result``).
    """
    deny_read = tuple(deny_read)
    watch = await asyncio.to_thread(DenyWatch.begin, str(root), deny_read) if deny_read else None
    try:
        if allow:
            guarded = GuardedRun(())
            try:
                yield guarded
            except BaseException:
                _restore_now(watch)
                raise
            guarded.moves = await asyncio.to_thread(watch.restore) if watch is not None else None
            return
        keys = default_state_dir(environ)
        async with _audited(root, backend, cache, tool, watch, keys) as guarded:
            yield guarded
    finally:
        if watch is not None:
            watch.close()


@contextlib.asynccontextmanager
async def _audited(
    root: Path,
    backend: SandboxBackend,
    cache: ScanCache | None,
    tool: str,
    watch: DenyWatch | None,
    keys: Path,
) -> AsyncIterator[GuardedRun]:
    """The protected-path audit around the block; the deny-read entries are put back before it."""
    # bubblewrap, and Landlock with a mount namespace, bind the protected entries read-only
    carve = isinstance(backend, BubblewrapBackend) or (
        isinstance(backend, LandlockBackend) and await asyncio.to_thread(backend.isolates)
    )
    record = await asyncio.to_thread(_begin_record, root, tool, keys)
    try:
        audit = await asyncio.to_thread(ProtectedAudit.take, str(root), carve=carve, cache=cache)
        if record is not None:  # if this process dies during the run, the next start cleans up
            await asyncio.to_thread(record.note_protected, [item.rel for item in audit.found])
        guarded = GuardedRun(tuple(Path(p) for p in audit.carved))
        beating = asyncio.ensure_future(_heartbeat(record)) if record is not None else None
        try:
            yield guarded
        except BaseException:
            _restore_now(watch)
            with contextlib.suppress(OSError):
                audit.revert()
            raise
        finally:
            if beating is not None:
                beating.cancel()
        if watch is not None:  # the folders back first: the audit then finds its entries where they were
            guarded.moves = await asyncio.to_thread(watch.restore)
        guarded.outcome = await asyncio.to_thread(audit.revert)
    finally:
        if record is not None:
            record.finish()


def _restore_now(watch: DenyWatch | None) -> None:
    """Put back what a cancelled or failed run moved, on the spot (a cancellation may come again)."""
    if watch is None:
        return
    try:
        watch.restore()
    except Exception as exc:  # pragma: no cover - restore catches per path; the first error goes on
        logger.error("steerable: deny-read entries not put back after an interrupted run: %r", exc)


async def _heartbeat(record: Intent) -> None:
    """Mark the run's record alive every :data:`HEARTBEAT_S` (after a crash, later changes stay)."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        try:
            record.beat()
        except OSError:
            return


def _begin_record(root: Path, tool: str, keys: Path) -> Intent | None:
    """The run's record in the workspace journal (``None`` where the journal cannot be written)."""
    try:
        return Intent.begin(StateDir(root, keys), tool)
    except (OSError, WorkspaceError) as exc:
        logger.warning(
            "steerable: no crash record for this sandboxed run (%s): a kill -9 would skip its audit", exc
        )
        return None


def snapshot_too_large(what: str) -> ToolResult:
    """The refusal when the protected entries are too many to snapshot (``what``: "command", "program")."""
    return ToolResult.retry(
        (
            f"The {what} was not run: the protected paths in the workspace (.git's config and "
            f"hooks, .vscode, .idea and the like) hold more than {MAX_ENTRIES} entries, too many to "
            f"snapshot, so a change the {what} made there could not be reverted. Remove what is "
            f"not needed there, or have the user set {PROTECTED_ENV}=1 (or start steerable with "
            f"{PROTECTED_FLAG}) to let {what}s change protected paths."
        ),
        data={"code": SandboxErrorCode.PROTECTED_SNAPSHOT_TOO_LARGE, "limit": MAX_ENTRIES},
    )


def _sentence(outcome: AuditOutcome, what: str) -> str:
    said = []
    if outcome.reverted:
        listed = _by_rule(outcome.reverted, outcome)
        said.append(f"The {what} changed protected paths, which were put back as they were: {listed}.")
    if outcome.failed:
        listed = _by_rule(outcome.failed, outcome)
        said.append(
            f"The {what} changed protected paths that could not be put back (check them before git "
            f"or an editor runs there): {listed}."
        )
    said.append(
        f"Programs outside the sandbox run code from these paths, so {what}s may not change them; "
        f"to allow it, the user can set {PROTECTED_ENV}=1 or start steerable with {PROTECTED_FLAG}."
    )
    return " ".join(said)


def _by_rule(paths: list[str], outcome: AuditOutcome) -> str:
    """``a, b (rule P: reason); c (rule Q: reason)``."""
    rules: dict[ProtectedRule, list[str]] = {}
    for path in paths:
        rules.setdefault(outcome.rules[path], []).append(path)
    return "; ".join(f"{', '.join(kept)} (rule {r.pattern}: {r.reason})" for r, kept in rules.items())


def protected_result(
    result: ToolResult, outcome: AuditOutcome | None, what: str, *, moves: DenyMoves | None = None
) -> ToolResult:
    """``result`` as the model sees it once protected paths were put back (FILE-15).

    Unchanged when nothing was. Otherwise ``data.protectedReverted`` (and ``protectedNotReverted``)
    are added and the call fails with ``needsFollowup``: a success becomes ``data.code:
    "protected_reverted"``; a failure keeps its code and gets the sentence after its error. Then
    the deny-read entries the run moved, put back (``moves``: ``_deny_moves.moves_result``).

    Args:
        result: The run's own result.
        outcome: The audit's outcome (``None``: no audit ran).
        what: ``"command"`` (bash) or ``"program"`` (run_code), for the sentence.
        moves: What :class:`DenyWatch` put back (``GuardedRun.moves``).
    """
    return moves_result(_protected(result, outcome, what), moves, what)


def _protected(result: ToolResult, outcome: AuditOutcome | None, what: str) -> ToolResult:
    if outcome is None or not (outcome.reverted or outcome.failed):
        return result
    data = dict(result.data or {})
    data["protectedReverted"] = outcome.reverted
    if outcome.failed:
        data["protectedNotReverted"] = outcome.failed
    sentence = _sentence(outcome, what)
    if result.success:
        data["code"] = SandboxErrorCode.PROTECTED_REVERTED
        return ToolResult.retry(sentence, data=data)
    return ToolResult.retry(f"{result.error} {sentence}", data=data)
