"""The write journal and crash recovery (FILE-13); the locks recovery takes are ``_flock``'s (FILE-12).

The journal is one intent file per write in flight under ``<root>/.steerable/txn/``, locked by
its writer, each line sealed (``_seal``: recovery acts only on records this user's steerable wrote
for this workspace); :func:`recover` rolls a dead writer's committed patch forward and drops an
uncommitted one, at the next start and, for a committed patch, as soon as any running process's
next file operation finds it (:func:`committed_orphans`). The long form: docs/file-tools.md,
"The cross-process lock", "Crash-atomic patches and the journal", "The journal's seal" and "The
``.steerable`` folder".

Blocking functions: the workspace calls them through ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
import stat
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from ..config import default_state_dir
from ..errors import WorkspaceError
from ._codes import FileErrorCode
from ._disk import TEMP_NAME, open_directory
from ._flock import PathLocks
from ._seal import JournalKey, Seal, journal_key, opened

__all__ = [
    "COMMITS",
    "STATE_DIR",
    "Intent",
    "JournalEntry",
    "Pending",
    "StateDir",
    "committed_orphans",
    "intents_held",
    "is_internal_name",
    "recover",
]

logger = logging.getLogger(__name__)

COMMITS: Final = "commits"
"""``.steerable/txn/commits/``: one empty file per committed patch still in flight (:meth:`Intent.commit`)."""
STATE_DIR: Final = ".steerable"
"""The workspace's state folder, beside the files it protects."""


_FILE_FLAGS: Final = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_RECOVERY_LOCK_S: Final = 5.0
_INTENT: Final = re.compile(r"[0-9a-f]{16}\.json")
_UNPUBLISHED: Final = re.compile(r"\.[0-9a-f]{16}\.new")
_LISTED: Final = 10
_UNTRUSTED: Final = ".untrusted"  # the suffix a record whose seal does not check is moved aside to


def is_internal_name(name: str) -> bool:
    """Is ``name`` (one path component) steerable's own: the state folder or a write's temp file?"""
    return name == STATE_DIR or TEMP_NAME.fullmatch(name) is not None


class StateDir:
    """``<root>/.steerable``: opened through ``O_NOFOLLOW`` handles, created on first use.

    Args:
        root: The workspace's real path.
        keys: The state directory holding the journal key (``_seal.journal_key``; default
            ``config.default_state_dir()``), read when a record is first written or recovered.
    """

    def __init__(self, root: Path, keys: Path | None = None) -> None:
        self.root = root
        self.path = root / STATE_DIR
        self.keys = keys if keys is not None else default_state_dir()

    @property
    def key(self) -> JournalKey | None:
        """This user's journal key (``None``: none is usable; records are then never acted on)."""
        return journal_key(self.keys)

    def opened(self, name: str, raw: bytes) -> list[bytes] | None:
        """The payloads of the record ``name`` when its seal checks, else ``None`` (``_seal.opened``)."""
        key = self.key
        return None if key is None else opened(raw, key, self.root, name.removesuffix(".json"))

    @contextlib.contextmanager
    def directory(self, *sub: str, create: bool) -> Iterator[int]:
        """Yield a handle on ``.steerable[/sub...]``; create it (and the ``.gitignore``) when asked.

        Raises:
            FileNotFoundError: It does not exist and ``create`` is false.
            WorkspaceError: ``path_changed`` when a component is a symlink or not a directory.
        """
        created: list[Path] = []
        target = self.path.joinpath(*sub)
        with contextlib.ExitStack() as stack:
            try:
                fd = stack.enter_context(
                    open_directory(self.root, target, STATE_DIR, create=create, created=created)
                )
                if self.path in created:
                    with open_directory(self.root, self.path, STATE_DIR) as state_fd:
                        _write_gitignore(state_fd)
            except WorkspaceError as exc:  # only the walk's own refusals: the caller's pass through
                if exc.code not in (FileErrorCode.PATH_CHANGED, FileErrorCode.NOT_A_DIRECTORY):
                    raise
                raise WorkspaceError(
                    FileErrorCode.PATH_CHANGED,
                    f"{STATE_DIR}/{'/'.join(sub)} in the workspace is not a directory (a symlink or a "
                    "file); remove it so steerable can keep its write journal there",
                ) from None
            yield fd


def _write_gitignore(dir_fd: int) -> None:
    with contextlib.suppress(FileExistsError):
        fd = os.open(".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
        try:
            os.write(fd, b"# steerable's write journal (see docs/file-tools.md)\n*\n")
        finally:
            os.close(fd)


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One file a committed patch changes.

    Attributes:
        target: Its display path (workspace-relative POSIX).
        temp: The display path of the temp file holding its new content, or ``None`` for a delete.
        before: Its version before the patch, or ``None`` when it did not exist.
        after: Its version after the patch, or ``None`` when the patch deletes it.
    """

    target: str
    temp: str | None
    before: str | None
    after: str | None

    def to_json(self) -> dict[str, str | None]:
        """The entry as a journal line's item."""
        return {"target": self.target, "temp": self.temp, "before": self.before, "after": self.after}


HEARTBEAT_S: Final = 1.0
"""How often a guarded sandboxed run marks its record alive (:meth:`Intent.beat`), in seconds."""
HEARTBEAT_GRACE_NS: Final = 3_000_000_000
"""After a crash, changes this long after the record's last heartbeat are still the run's (its
command dies with steerable within milliseconds); later ones are the user's and stay."""


def _alive(record: str) -> str:
    """The heartbeat file of the record ``record`` (``<token>.json.alive``)."""
    return f"{record}.alive"


class Intent:
    """One write in flight, announced in ``.steerable/txn/`` and locked by its writer until it ends.

    Create it with :meth:`begin`; append with :meth:`note_temp` / :meth:`note_dir` before creating a
    temp file or a directory; :meth:`commit` makes a multi-file patch durable before its first rename;
    :meth:`finish` removes it.
    """

    def __init__(self, state: StateDir, name: str, fd: int, seal: Seal) -> None:
        self._state = state
        self._name = name
        self._fd = fd
        self._seal = seal
        self._marked = False  # a commit marker in txn/commits/ (see commit)

    @classmethod
    def begin(cls, state: StateDir, op: str) -> Intent:
        """Create, lock and publish a new intent file (atomically: recovery never sees it unlocked).

        Raises:
            OSError: When the state folder cannot be written.
            WorkspaceError: ``path_changed`` for a planted symlink, ``write_failed`` without locks.
        """
        token = secrets.token_hex(8)
        seal = Seal(state.key, state.root, token)
        with state.directory("txn", create=True) as dir_fd:
            hidden = f".{token}.new"
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(hidden, flags, 0o666, dir_fd=dir_fd)
            try:
                _lock_whole(fd)
                header = {"v": 2, "op": op, "pid": os.getpid(), "started": time.time()}
                _write_all(fd, seal.line(json.dumps(header).encode()))
                os.rename(hidden, f"{token}.json", src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(hidden, dir_fd=dir_fd)
                raise
        return cls(state, f"{token}.json", fd, seal)

    def _append(self, record: dict[str, Any]) -> None:
        _write_all(self._fd, self._seal.line(json.dumps(record).encode()))

    def note_temp(self, display: str) -> None:
        """Record a temp file (by display path) before it is created."""
        self._append({"temp": display})

    def note_dir(self, display: str) -> None:
        """Record a directory the write created (removed again if the write never completes)."""
        self._append({"dir": display})

    def beat(self) -> None:
        """Mark the record's run alive now: the ``mtime`` of ``<record>.alive`` (:data:`HEARTBEAT_S`).

        A file of its own: touching the record would move its ``ctime``, which recovery reads as the
        moment the run began.
        """
        if self._fd < 0:
            return
        with self._state.directory("txn", create=False) as dir_fd:
            flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(_alive(self._name), flags, 0o600, dir_fd=dir_fd)
            try:
                os.utime(fd)
            finally:
                os.close(fd)

    def note_protected(self, existing: Sequence[str]) -> None:
        """Record the protected entries that exist before a sandboxed command (FILE-15).

        If this process dies during the command (its in-memory audit then never runs), the next start
        removes protected entries that are not listed here and changed after this record was written.
        """
        self._append({"protected": list(existing)})

    def commit(self, entries: Sequence[JournalEntry]) -> None:
        """Append the commit record and fsync it: from here a crash rolls the patch forward.

        Then mark it in ``txn/commits/``, where every other operation looks before it reads a file
        (:func:`committed_orphans`): a process already running finishes a patch whose process died
        between its renames before it reads or writes anything (issue 28).
        """
        self._append({"commit": [entry.to_json() for entry in entries]})
        os.fsync(self._fd)
        for attempt in range(3):  # the folder goes when its last marker does (_unmark): made again
            try:
                with self._state.directory("txn", COMMITS, create=True) as dir_fd:
                    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
                    os.close(os.open(self._name, flags, 0o600, dir_fd=dir_fd))
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
        self._marked = True

    def abandon(self) -> None:
        """Release the intent but leave it in the journal, for the next start's recovery to settle."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def finish(self) -> None:
        """Remove the intent file and release its lock (idempotent)."""
        if self._fd < 0:
            return
        try:
            if self._marked:  # before the intent: a marker alone is dropped, an intent alone is settled
                _unmark(self._state, self._name)
            with self._state.directory("txn", create=False) as dir_fd:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(_alive(self._name), dir_fd=dir_fd)
                os.unlink(self._name, dir_fd=dir_fd)
        except OSError as exc:  # the lock still goes with the descriptor; recovery removes the file
            logger.warning("steerable: could not remove the write intent %s: %s", self._name, exc)
        finally:
            os.close(self._fd)
            self._fd = -1


def _unmark(state: StateDir, name: str) -> None:
    """Remove a commit marker, and the ``commits`` folder once empty (so the journal stays clean)."""
    with contextlib.suppress(FileNotFoundError):
        with state.directory("txn", COMMITS, create=False) as dir_fd:
            os.unlink(name, dir_fd=dir_fd)
    with state.directory("txn", create=False) as txn_fd, contextlib.suppress(OSError):
        os.rmdir(COMMITS, dir_fd=txn_fd)  # refused while another patch's marker is in it


@dataclass(frozen=True, slots=True)
class Pending:
    """The committed patches an operation must not go past (:func:`committed_orphans`).

    Attributes:
        dead: Markers whose writer is gone (its intent unlocked, or already removed): recovery
            settles them.
        live: ``(marker, intent inode)`` of patches a live process is still applying (or settling)
            that name one of the operation's paths: wait for their intent's lock to go.
    """

    dead: tuple[str, ...] = ()
    live: tuple[tuple[str, tuple[int, int]], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.dead or self.live)


def committed_orphans(state: StateDir, paths: Collection[str], skip: Collection[str] = ()) -> Pending:
    """The committed patches an operation holding the locks of ``paths`` must wait for, or settle.

    One whose process died (or gave it up) is ``dead``, whatever it names; one a live process holds
    is ``live`` when it names one of ``paths`` (display names): its writer held that path's lock
    until it ended, so holding it now means the writer is gone or still adding that file (a file
    that did not exist takes no lock). Markers in ``skip`` (recovery could not settle them), and
    markers that are not regular files or whose intent is not one (forged: recovery prunes them),
    count for nothing; a FIFO is never opened. Cheap when there is none (one listing of an empty
    folder): every file operation asks, once it holds its locks (``Workspace.locked``).
    """
    txn = state.path / "txn"
    try:
        marked = [n for n in os.listdir(txn / COMMITS) if _INTENT.fullmatch(n) and n not in skip]
    except OSError:  # none yet (or not a folder: recovery's walk refuses it)
        return _NOTHING
    dead: list[str] = []
    live: list[tuple[str, tuple[int, int]]] = []
    for name in marked:
        if not _regular(txn / COMMITS / name):
            continue
        try:
            fd = _open_intent(txn / name)
        except FileNotFoundError:
            dead.append(name)  # settled, its marker not removed yet: recovery drops it
            continue
        except OSError:
            dead.append(name)  # unreadable: recovery tries it once (Workspace.locked)
            continue
        if fd is None:
            continue
        try:
            info = os.fstat(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:  # held: its writer (or a process settling it) is alive
                raw = os.pread(fd, min(info.st_size, 64 * 1024 * 1024), 0)
                payloads = state.opened(name, raw) or []  # unsealed: no patch of ours, nothing to wait for
                if any(entry.target in paths for entry in _parse(payloads).commit or ()):
                    live.append((name, (info.st_dev, info.st_ino)))
            else:
                dead.append(name)
        finally:
            os.close(fd)
    return Pending(tuple(dead), tuple(live)) if dead or live else _NOTHING


_NOTHING: Final = Pending()


def _regular(path: Path) -> bool:
    """Is ``path`` itself a regular file (not a link, a folder, a FIFO), and there?"""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _open_intent(intent: Path) -> int | None:
    """A read handle on ``intent`` when it is a regular file, ``None`` when it is anything else.

    Checked before it is opened (a FIFO is never opened), and opened without following a link or
    waiting (a FIFO swapped in meanwhile is refused by its ``fstat``).

    Raises:
        OSError: ``FileNotFoundError`` when it is gone; any other when it cannot be opened.
    """
    mode = os.lstat(intent).st_mode
    if not stat.S_ISREG(mode):
        return None
    fd = os.open(intent, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def intents_held(state: StateDir, live: Collection[tuple[str, tuple[int, int]]]) -> bool:
    """Is every intent of ``live`` (:attr:`Pending.live`) still in the journal, and locked?

    The cheap re-check while a write waits for live patches: three system calls per intent.
    """
    txn = state.path / "txn"
    for name, inode in live:
        try:
            fd = _open_intent(txn / name)
        except OSError:
            return False
        if fd is None:
            return False
        try:
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) != inode:
                return False
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            continue  # still held
        finally:
            os.close(fd)
        return False
    return True


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data``: a short write is retried, a full disk raises ``ENOSPC``.

    So a commit record is never half on disk while its fsync reports success.
    """
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _lock_whole(fd: int) -> None:
    """Lock an intent file for its writer's lifetime (raises ``BlockingIOError`` when already held)."""
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


@dataclass(frozen=True, slots=True)
class _Orphan:
    """An intent file whose writer is gone, as read back."""

    temps: list[str]
    dirs: list[str]
    commit: list[JournalEntry] | None
    op: str
    protected: list[str] | None = None  # a sandboxed run's: the protected entries before it


def _parse(payloads: Sequence[bytes]) -> _Orphan:
    """A record's lines read back (their seal checked: ``StateDir.opened``)."""
    temps: list[str] = []
    dirs: list[str] = []
    commit: list[JournalEntry] | None = None
    protected: list[str] | None = None
    op = "write"
    for line in payloads:
        try:
            record = json.loads(line.decode("utf-8", "surrogateescape"))
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("op"), str):
            op = record["op"]
        if isinstance(record.get("temp"), str):
            temps.append(record["temp"])
        if isinstance(record.get("dir"), str):
            dirs.append(record["dir"])
        items = record.get("commit")
        if isinstance(items, list):  # one entry per target (a real patch has no repeats; a forged one may)
            entries = (_entry(item) for item in items)
            commit = list({entry.target: entry for entry in entries if entry is not None}.values())
        existing = record.get("protected")
        if isinstance(existing, list):
            protected = [item for item in existing if isinstance(item, str)]
    return _Orphan(temps, dirs, commit, op, protected)


def _entry(item: Any) -> JournalEntry | None:
    if not isinstance(item, dict) or not isinstance(item.get("target"), str):
        return None
    values = [item.get(key) for key in ("temp", "before", "after")]
    if not all(value is None or isinstance(value, str) for value in values):
        return None
    return JournalEntry(item["target"], *values)


class RecoveryIO(Protocol):
    """What :func:`recover` needs from the workspace: path checks and the disk primitives."""

    def resolve_internal(self, display: str) -> Path | None:
        """The real path of a journal path, or ``None`` when recovery must not touch it."""

    def replaceable(self, real: Path, display: str) -> bool:
        """May recovery write this target (it is not a protected path, or those are allowed)?"""

    def version(self, real: Path, display: str) -> str | None:
        """The file's version now (any size), ``None`` when it does not exist."""

    def rename(self, temp: Path, target: Path, display: str, *, create: bool) -> None:
        """Rename a temp file onto its target (same directory), then fsync the directory.

        ``create``: the target must not exist (a file the patch added; nothing locks its name).
        """

    def remove(self, real: Path, display: str) -> bool:
        """Unlink a file (never a symlink's target); ``False`` when there was none."""

    def remove_empty_dir(self, real: Path) -> None:
        """Remove a directory if it is empty."""

    def remove_appeared(self, existing: Sequence[str], since_ns: int, until_ns: int) -> list[str]:
        """Remove protected entries not in ``existing`` changed in ``since_ns..until_ns``; say which."""


def recover(state: StateDir, io: RecoveryIO, locks: PathLocks | None) -> list[str]:
    """Finish or drop every write whose process died; return one line per intent handled.

    Intent files still locked belong to live processes and are left alone. One whose seal does not
    check (``_seal``: forged, copied from elsewhere, unsealed) is never acted on: it is moved aside
    to ``<token>.json.untrusted`` and logged once; without a usable key every record is left as it
    is. For each orphan, the per-path locks of its targets are taken first (another live process
    may be writing them).

    Returns:
        Human-readable lines (also logged at WARNING), e.g. ``"rolled forward apply_patch: a.txt, b.txt"``.
    """
    try:
        with state.directory("txn", create=False) as dir_fd:
            listed = os.listdir(dir_fd)
            for name in listed:  # a publisher killed between creating and publishing its intent
                if _UNPUBLISHED.fullmatch(name):
                    _sweep_unpublished(dir_fd, name)
            said: list[str] = []
            for name in sorted(name for name in listed if _INTENT.fullmatch(name)):
                line = _recover_one(state, dir_fd, name, io, locks)
                if line:
                    said.append(line)
                    logger.warning("steerable: %s", line)
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                for name in _marks(state):  # its patch settled (or never there, or forged): it goes
                    if not (_regular_at(dir_fd, name) and _regular_at(dir_fd, f"{COMMITS}/{name}")):
                        _prune(state, name)
            return said
    except FileNotFoundError:
        return []


def _marks(state: StateDir) -> list[str]:
    with state.directory("txn", COMMITS, create=False) as dir_fd:
        return [name for name in os.listdir(dir_fd) if _INTENT.fullmatch(name)]


def _regular_at(dir_fd: int, name: str) -> bool:
    """Is ``name`` (under ``dir_fd``) a regular file itself, not a link, a folder or a FIFO?"""
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _prune(state: StateDir, name: str) -> None:
    """Remove a marker whose patch is settled, or a forged one (a folder only when empty)."""
    try:
        _unmark(state, name)
    except IsADirectoryError:
        with contextlib.suppress(OSError), state.directory("txn", COMMITS, create=False) as dir_fd:
            os.rmdir(name, dir_fd=dir_fd)
        with contextlib.suppress(OSError), state.directory("txn", create=False) as txn_fd:
            os.rmdir(COMMITS, dir_fd=txn_fd)
    except (OSError, WorkspaceError) as exc:  # a forged one recovery cannot remove: ignored anyway
        logger.debug("steerable: could not remove the commit marker %s: %s", name, exc)


def _sweep_unpublished(dir_fd: int, name: str) -> None:
    """Remove an unpublished intent whose writer is gone (it names no temp file yet).

    A live writer publishes within microseconds of creating it, so only one over a minute old goes.
    """
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return
    try:
        if time.time() - os.fstat(fd).st_mtime < 60:
            return
        _lock_whole(fd)
    except OSError:
        return  # being published right now
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=dir_fd)


def _recover_one(
    state: StateDir, dir_fd: int, name: str, io: RecoveryIO, locks: PathLocks | None
) -> str | None:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        try:
            _lock_whole(fd)
        except OSError:
            return None  # its writer is alive
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        raw = os.pread(fd, min(info.st_size, 64 * 1024 * 1024), 0)
        if state.key is None:
            return None  # nothing can be checked (logged once by journal_key): left for a later start
        payloads = state.opened(name, raw)
        if payloads is None:
            _set_aside(state, dir_fd, name, info)
            return None
        orphan = _parse(payloads)
        if orphan.protected is not None:  # the kernel's ctime of the record: no writer can set it back
            # the run's last heartbeat (Intent.beat; the record's time when it died before the first)
            try:
                alive = os.stat(_alive(name), dir_fd=dir_fd, follow_symlinks=False).st_mtime_ns
            except OSError:
                alive = 0
            until = min(max(alive, info.st_ctime_ns), time.time_ns()) + HEARTBEAT_GRACE_NS
            line = _after_sandboxed_run(orphan, io, info.st_ctime_ns, until)
            for done in (_alive(name), name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(done, dir_fd=dir_fd)
            return line
        resolved = [io.resolve_internal(entry.target) for entry in orphan.commit or ()]
        targets = [target for target in resolved if target is not None]
        try:
            held = (
                locks.acquire(targets, timeout_s=_RECOVERY_LOCK_S) if locks is not None and targets else None
            )
        except WorkspaceError:
            return None  # a live writer holds them: the next start settles this one
        try:
            line = _settle(orphan, io)
        finally:
            if held is not None:
                held.release()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
        return line
    finally:
        os.close(fd)


_IGNORED: set[tuple[int, int]] = set()  # records left in place (not movable), logged once each


def _set_aside(state: StateDir, dir_fd: int, name: str, info: os.stat_result) -> None:
    """A record whose seal does not check: moved to ``<name>.untrusted``, logged once, never acted on."""
    aside = f"{name}{_UNTRUSTED}"
    if _lexists(dir_fd, aside):
        aside = f"{name}.{secrets.token_hex(4)}{_UNTRUSTED}"
    try:
        os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        aside = ""
        if (info.st_dev, info.st_ino) in _IGNORED:
            return
        _IGNORED.add((info.st_dev, info.st_ino))
    txn = f"{STATE_DIR}/txn"
    logger.warning(
        "steerable: ignored the journal record %s/%s: its seal does not check (steerable did not "
        "write it for this workspace under this user's key: a repository can ship one, or it was "
        "copied from elsewhere or written by an older steerable), so nothing was deleted or "
        "restored from it%s",
        txn,
        name,
        f"; moved to {txn}/{aside}" if aside else "",
    )


def _lexists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def _after_sandboxed_run(orphan: _Orphan, io: RecoveryIO, since_ns: int, until_ns: int) -> str | None:
    """The audit a killed process could not run: remove protected entries its command planted.

    Only what changed while the run was alive (from the record to its last heartbeat, plus a grace):
    what the user made after the crash stays.
    """
    try:
        removed = io.remove_appeared(orphan.protected or [], since_ns, until_ns)
    except OSError as exc:
        logger.warning(
            "steerable: could not check the protected paths of an interrupted %s: %s", orphan.op, exc
        )
        return None
    if not removed:
        return None
    return (
        f"removed protected paths an interrupted {orphan.op} call changed (its process died before "
        f"putting them back): {_listed(removed)}"
    )


def _settle(orphan: _Orphan, io: RecoveryIO) -> str | None:
    applied: list[str] = []
    done: list[str] = []
    left: list[str] = []
    protected: list[str] = []
    if orphan.commit is not None:
        for entry in orphan.commit:
            outcome = _roll_forward(entry, io)
            {"applied": applied, "done": done, "left": left, "protected": protected}[outcome].append(
                entry.target
            )
    removed = 0
    for temp in orphan.temps:
        real = io.resolve_internal(temp)
        if real is not None and TEMP_NAME.fullmatch(real.name):
            with contextlib.suppress(OSError, WorkspaceError):
                removed += io.remove(real, temp)
    if orphan.commit is None:
        for directory in sorted(orphan.dirs, key=lambda d: d.count("/"), reverse=True):
            real = io.resolve_internal(directory)
            if real is not None:
                io.remove_empty_dir(real)
    if orphan.commit is None:
        if not removed:
            return None
        return (
            f"removed {removed} temp file(s) of an interrupted {orphan.op} (its process died before "
            "changing any file: nothing was applied)"
        )
    parts = [f"rolled forward an interrupted {orphan.op} (its process died)"]
    for label, paths in (
        ("completed", applied),
        ("already done", done),
        ("left alone (changed since)", left),
        ("not written (protected paths)", protected),
    ):
        if paths:
            parts.append(f"{label} {_listed(paths)}")
    return "; ".join(parts)


def _listed(paths: list[str]) -> str:
    """At most 10 paths, then how many more (a patch can touch thousands)."""
    shown = ", ".join(paths[:_LISTED])
    return shown if len(paths) <= _LISTED else f"{shown} and {len(paths) - _LISTED} more"


def _roll_forward(entry: JournalEntry, io: RecoveryIO) -> str:
    target = io.resolve_internal(entry.target)
    if target is None:
        return "left"
    if not io.replaceable(target, entry.target):  # a forged journal cannot plant a git hook
        return "protected"
    try:
        current = io.version(target, entry.target)
        if current == entry.after:
            return "done"
        if current != entry.before:
            return "left"
        if entry.after is None:
            io.remove(target, entry.target)
            return "applied"
        temp = io.resolve_internal(entry.temp) if entry.temp is not None else None
        if temp is None or not TEMP_NAME.fullmatch(temp.name) or temp.parent != target.parent:
            return "left"
        if io.version(temp, entry.temp or "") != entry.after:  # a temp of another version: not ours
            return "left"
        io.rename(temp, target, entry.target, create=entry.before is None)
        return "applied"
    except (OSError, WorkspaceError) as exc:
        logger.warning("steerable: could not roll %s forward: %s", entry.target, exc)
        return "left"
