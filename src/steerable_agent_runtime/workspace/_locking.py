"""How one process waits for the write locks of its files (FILE-12): per file, blocking, bounded.

``Workspace.locked`` takes, for each file a call writes, this process's lock (an ``asyncio.Lock``
per path, granted in arrival order) and then every steerable process's (``_flock.PathLocks``, an
``flock`` on the file's own inode). A lock another process holds is waited for by a daemon thread
blocked in ``flock`` (no polling: the kernel wakes it when the holder lets go); at most
:data:`IN_FLIGHT` operations hold handles at once, so the descriptors stay bounded whatever the
number of calls in flight. A wait past the deadline says "busy" when this process's own calls held
the files, and names the other process otherwise. The long form: docs/file-tools.md, "The
cross-process lock".
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import threading
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Final, TypeVar

from ._flock import LockHeld, PathLocks, busy_error, lock_holder, locked_error

__all__ = ["IN_FLIGHT", "ProcessLocks", "uncancelled"]

IN_FLIGHT: Final = 64
"""Write operations of one workspace holding lock handles at once (the others queue, in order)."""

_T = TypeVar("_T")


async def uncancelled(work: Awaitable[_T]) -> _T:
    """Await ``work`` (a worker thread) to its end even when cancelled, then re-raise the cancel.

    A thread cannot be stopped: returning early would let it take a lock after its holder was released.
    """
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await task
        raise


class _PathLock:
    """One path's lock in this process, with how many calls hold or wait for it (dropped at 0)."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class ProcessLocks:
    """This process's side of the write locks of one workspace.

    A wait runs to a deadline (loop time) that ``Workspace.locked`` sets from its
    ``lock_timeout_s`` (``timeout_s`` here, for the refusal's words).
    """

    def __init__(self) -> None:
        self._paths: dict[Path, _PathLock] = {}
        self._slots = asyncio.Semaphore(IN_FLIGHT)

    async def hold(
        self,
        stack: contextlib.AsyncExitStack,
        paths: Sequence[Path],
        names: Sequence[str],
        deadline: float,
        timeout_s: float,
    ) -> None:
        """Take this process's lock of each of ``paths`` (sorted) and a slot, released by ``stack``.

        Raises:
            WorkspaceError: ``file_locked`` ("busy") when the deadline (loop time) passes first.
        """
        for path in paths:
            entry = self._paths.get(path)
            if entry is None:
                entry = self._paths[path] = _PathLock()
            entry.users += 1
            stack.callback(self._leave, path, entry)
            await _within(entry.lock.acquire(), deadline, names, timeout_s)
            stack.callback(entry.lock.release)
        await _within(self._slots.acquire(), deadline, names, timeout_s)
        stack.callback(self._slots.release)

    def _leave(self, path: Path, entry: _PathLock) -> None:
        entry.users -= 1
        if entry.users == 0 and self._paths.get(path) is entry:
            del self._paths[path]

    @staticmethod
    async def cross_process(
        locks: PathLocks, paths: Sequence[Path], names: Sequence[str], deadline: float, timeout_s: float
    ) -> LockHeld:
        """Take every steerable process's lock of ``paths``, waiting without polling until ``deadline``.

        Raises:
            WorkspaceError: ``file_locked`` naming the holder (or "busy": this process) after the
                deadline; ``write_failed`` where the filesystem has no locks.
        """
        held = LockHeld()
        loop = asyncio.get_running_loop()
        try:
            while not locks.try_acquire(paths, held):
                info = os.fstat(held.fds[held.taken])  # before a wait given up hands it to its thread
                if not await _wait(held, deadline - loop.time()):
                    holder = await asyncio.to_thread(lock_holder, (info.st_dev, info.st_ino))
                    if holder is not None and holder[0] == os.getpid():
                        raise busy_error(names, timeout_s)
                    raise locked_error(names, timeout_s, holder)
        except BaseException:
            held.release()
            raise
        return held


async def _within(
    waiting: Awaitable[object], deadline: float, names: Sequence[str], timeout_s: float
) -> None:
    """Await ``waiting`` (this process's lock, a slot) until ``deadline``, else refuse with "busy"."""
    remaining = deadline - asyncio.get_running_loop().time()
    try:
        await asyncio.wait_for(waiting, max(remaining, 0))
    except TimeoutError:
        raise busy_error(names, timeout_s) from None


async def _wait(held: LockHeld, remaining: float) -> bool:
    """Block in a daemon thread until ``held``'s next lock is taken; ``False`` after ``remaining`` s.

    A wait given up (the deadline, or a cancel) leaves its handle to the thread, which closes it
    once it gets the lock: the lock is never kept.
    """
    if remaining <= 0:
        return False
    waiter = _Waiter(held.fds[held.taken], asyncio.get_running_loop())
    threading.Thread(target=waiter.run, name="steerable-lock-wait", daemon=True).start()
    try:
        await asyncio.wait_for(asyncio.shield(waiter.done), remaining)
    except (TimeoutError, asyncio.CancelledError) as exc:
        if waiter.abandon():  # else it got the lock just now: the caller's release lets it go
            held.detach()
        if isinstance(exc, asyncio.CancelledError):
            raise
        return False
    error = waiter.done.result()
    if error is not None:
        raise error
    held.taken += 1
    return True


class _Waiter:
    """One blocking ``flock`` in its own thread, handed back to the loop (or abandoned)."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self.fd = fd
        self.loop = loop
        self.done: asyncio.Future[OSError | None] = loop.create_future()
        self._gate = threading.Lock()
        self._abandoned = False
        self._finished = False

    def run(self) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            error: OSError | None = None
        except OSError as exc:
            error = exc
        with self._gate:
            if self._abandoned:
                os.close(self.fd)  # given up: its lock goes at once
                return
            self._finished = True
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            self.loop.call_soon_threadsafe(self._settle, error)

    def _settle(self, error: OSError | None) -> None:
        if not self.done.done():
            self.done.set_result(error)

    def abandon(self) -> bool:
        """Give up; ``True`` when the thread now owns the handle (it had not got the lock yet)."""
        with self._gate:
            if self._finished:
                return False
            self._abandoned = True
            return True
