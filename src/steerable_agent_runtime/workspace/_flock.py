"""Write locks every steerable process shares: an ``flock`` per file (FILE-12).

:class:`PathLocks` locks each file a write changes by its own inode, re-checked once held (a rename
over it makes the lock stand for nothing); a path that does not exist takes no lock (a creation
never replaces a file: ``_disk.create_from_temp``). Locks are taken in ascending
``(st_dev, st_ino)`` order. :func:`lock_holder` names the process holding one (``/proc/locks``).
How one process waits for them: ``_locking.py``. The long form: docs/file-tools.md, "The
cross-process lock".
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ..errors import WorkspaceError
from ._codes import FileErrorCode

__all__ = ["LOCK_TIMEOUT_S", "LockHeld", "PathLocks", "busy_error", "lock_holder", "locked_error"]

_LOCK_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_RECHECKS: Final = 100
_FIRST_WAIT_S: Final = 0.001
_MAX_WAIT_S: Final = 0.05
LOCK_TIMEOUT_S: Final = 30.0
"""How long a write waits for the lock of a file another call or process is writing, in seconds."""


class LockHeld:
    """Cross-process locks held by one operation; :meth:`release` drops them all.

    Attributes:
        fds: Handles on the locked inodes, in lock order (ascending ``(st_dev, st_ino)``).
        taken: How many of them are locked so far.
        checks: Per handle, the paths it stands for (hard links share one inode).
        absent: The paths that did not exist when locked: nothing locks them (a file's creation
            cannot replace a file: ``_disk.create_from_temp``); the caller re-checks its load.
    """

    def __init__(self) -> None:
        self.fds: list[int] = []
        self.taken = 0
        self.checks: list[list[Path]] = []
        self.absent: frozenset[Path] = frozenset()

    def release(self) -> None:
        """Close the handles, which releases their locks (idempotent)."""
        fds, self.fds, self.taken, self.checks, self.absent = self.fds, [], 0, [], frozenset()
        for fd in fds:
            os.close(fd)

    def detach(self) -> int:
        """Forget the next lock's handle without closing it (a thread still waits on it, and closes it)."""
        fd = self.fds.pop(self.taken)
        del self.checks[self.taken]
        return fd


def _open_own(path: Path) -> int | None:
    """A handle on ``path``'s own inode when it is a regular file or a directory, else ``None``.

    What does not exist (or is a link, or anything else) has nothing to lock: it can only be created,
    and a creation never replaces a file (``_disk.create_from_temp``).
    """
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return None
    try:
        fd = os.open(path, _LOCK_FLAGS)
    except OSError as exc:  # gone, replaced by a link, or unreadable
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENXIO):
            return None
        if exc.errno == errno.EACCES:  # a file this process cannot read: lock its folder instead
            return _open_nearest_directory(path.parent)
        raise
    if stat.S_IFMT(os.fstat(fd).st_mode) in (stat.S_IFREG, stat.S_IFDIR):
        return fd
    os.close(fd)
    return None


def _still_locks(path: Path, fd: int | None) -> bool:
    """Does ``fd`` still stand for ``path`` (not renamed over), or is an absent ``path`` still absent?"""
    try:
        now = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return fd is None
    if fd is None:  # made while the others were taken: lock it instead
        return not (stat.S_ISREG(now.st_mode) or stat.S_ISDIR(now.st_mode))
    held = os.fstat(fd)
    if stat.S_ISDIR(held.st_mode) and not stat.S_ISDIR(now.st_mode):
        return True  # the folder standing for a file this process cannot read
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _open_nearest_directory(path: Path) -> int:
    """A handle on ``path``, or on its nearest ancestor that exists (a write may create the rest)."""
    while True:
        try:
            return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            if path.parent == path:
                raise
            path = path.parent


class PathLocks:
    """Per-file write locks shared by every steerable process (FILE-12).

    Each path is locked by an exclusive ``flock`` on its own inode when it exists (a file being
    replaced is re-checked once locked: a rename over it makes the lock stand for nothing, and it
    is taken again on the new file). A path that does not exist takes no lock: it can only be
    created, and a creation never replaces a file (``_disk.create_from_temp``); it is re-checked
    absent once the others are held (``LockHeld.absent``). Locks are taken in ascending
    ``(st_dev, st_ino)`` order, so multi-file patches cannot deadlock.

    Args:
        timeout_s: How long :meth:`acquire` waits for another holder, in seconds.
    """

    def __init__(self, *, timeout_s: float = LOCK_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s

    def try_acquire(self, paths: Sequence[Path], held: LockHeld) -> bool:
        """Lock as many of ``paths`` as are free, in ascending inode order; ``True`` once all are.

        Call again with the same holder after waiting for ``held.fds[held.taken]``: the locks taken are
        kept (every process takes them in the same order, so that cannot deadlock). Once all are
        taken, each is re-checked (:func:`_still_locks`); when one no longer stands for its path
        (the file was replaced, or made, meanwhile), all are dropped and taken again.

        Raises:
            WorkspaceError: ``write_failed`` when the filesystem has no locks.
        """
        try:
            for _ in range(_RECHECKS):
                if not held.fds and not held.absent:
                    self._open(paths, held)
                for fd in held.fds[held.taken :]:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        return False
                    held.taken += 1
                if all(
                    _still_locks(p, fd) for fd, c in zip(held.fds, held.checks, strict=True) for p in c
                ) and all(_still_locks(p, None) for p in held.absent):
                    return True
                held.release()  # replaced or made meanwhile: lock what stands for each path now
            raise OSError(errno.EAGAIN, "the files kept being replaced while their locks were taken")
        except OSError as exc:
            held.release()
            if exc.errno in (errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS, errno.EBADF):
                raise _no_locks(exc) from None
            raise

    @staticmethod
    def _open(paths: Sequence[Path], held: LockHeld) -> None:
        opened: dict[tuple[int, int], tuple[int, list[Path]]] = {}
        absent: set[Path] = set()
        try:
            for path in paths:
                fd = _open_own(path)
                if fd is None:
                    absent.add(path)
                    continue
                info = os.fstat(fd)
                key = (info.st_dev, info.st_ino)
                if key in opened:
                    os.close(fd)
                    opened[key][1].append(path)
                else:
                    opened[key] = (fd, [path])
        except BaseException:
            for fd, _ in opened.values():
                os.close(fd)
            raise
        held.fds = [opened[key][0] for key in sorted(opened)]
        held.checks = [opened[key][1] for key in sorted(opened)]
        held.absent = frozenset(absent)

    def acquire(self, paths: Sequence[Path], *, timeout_s: float | None = None) -> LockHeld:
        """Lock every path, waiting (polling, 1 to 50 ms apart) up to ``timeout_s``; blocking.

        For recovery and tools; the workspace waits without polling (``Workspace.locked``).

        Raises:
            WorkspaceError: ``file_locked`` after the timeout, ``write_failed`` without locks.
        """
        limit = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        wait = _FIRST_WAIT_S
        held = LockHeld()
        while not self.try_acquire(paths, held):
            if time.monotonic() >= deadline:
                info = os.fstat(held.fds[held.taken])
                holder = lock_holder((info.st_dev, info.st_ino))
                held.release()
                raise locked_error([str(p) for p in paths], limit, holder)
            time.sleep(wait)
            wait = min(wait * 2, _MAX_WAIT_S)
        return held


def lock_holder(inode: tuple[int, int]) -> tuple[int, str] | None:
    """Who holds the ``flock`` on ``inode`` (``(st_dev, st_ino)``): ``(pid, command line)``, or ``None``.

    Read from ``/proc/locks`` (Linux); the pid is the one that took the lock, as seen from here.
    """
    device, number = inode
    where = f"{os.major(device):02x}:{os.minor(device):02x}:{number}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            for line in table:
                fields = line.split()
                if len(fields) >= 6 and fields[1:4] == ["FLOCK", "ADVISORY", "WRITE"] and fields[5] == where:
                    pid = int(fields[4])
                    return pid, _command_line(pid)
    except (OSError, ValueError):
        return None
    return None


def _command_line(pid: int) -> str:
    """The program's name and its first few arguments, each cut short (``steerable mcp -w /x``)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = [w.decode(errors="replace") for w in handle.read(4096).split(b"\0") if w]
    except OSError:
        return ""
    if not words:
        return ""
    shown = [os.path.basename(words[0]), *(" ".join(w.split())[:40] for w in words[1:4])]
    return " ".join(shown) + (" ..." if len(words) > 4 else "")


def locked_error(
    paths: Sequence[str], timeout_s: float, holder: tuple[int, str] | None = None
) -> WorkspaceError:
    """The refusal when another process kept a file locked past the timeout, naming it when known."""
    keys = list(dict.fromkeys(paths))
    shown = ", ".join(sorted(keys)[:5])
    if holder is None:
        who = "another program"
    else:
        who = f"another process (pid {holder[0]}{f', {holder[1]}' if holder[1] else ''})"
    return WorkspaceError(
        FileErrorCode.FILE_LOCKED,
        f"{who} has held the write lock of {shown} for over {timeout_s:g} s; nothing was written. Try "
        "again in a moment",
        data={"paths": sorted(keys)[:20], **({"holderPid": holder[0]} if holder else {})},
    )


def busy_error(paths: Sequence[str], timeout_s: float) -> WorkspaceError:
    """The refusal when this process's own earlier calls kept a file busy past the timeout."""
    keys = list(dict.fromkeys(paths))
    return WorkspaceError(
        FileErrorCode.FILE_LOCKED,
        f"busy: this steerable process has been writing {', '.join(sorted(keys)[:5])} for over "
        f"{timeout_s:g} s (earlier calls still in flight); nothing was written. Try again in a moment",
        data={"paths": sorted(keys)[:20], "busy": True},
    )


def _no_locks(exc: OSError) -> WorkspaceError:
    return WorkspaceError(
        FileErrorCode.WRITE_FAILED,
        f"this filesystem does not support the file locks steerable uses to keep two processes from "
        f"overwriting each other ({exc.strerror or exc}); set STEERABLE_CROSS_PROCESS_LOCK=0 to write "
        "without them (only when a single steerable process uses this workspace)",
    )
