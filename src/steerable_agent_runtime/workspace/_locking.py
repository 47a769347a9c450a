"""How one process waits for the write locks of its files (FILE-12): per file, blocking, bounded.

``Workspace.locked`` takes, for each file a call writes, this process's lock (an ``asyncio.Lock``
per path, granted in arrival order) and then every steerable process's (``_flock.PathLocks``, an
``flock`` on the file's own inode). A lock another process holds is waited for by a daemon thread
blocked in ``flock`` (no polling: the kernel wakes it when the holder lets go), one per inode:
a later wait on that inode follows it, so a holder that never lets go costs one thread and one
handle however many waits time out. At most :data:`IN_FLIGHT` operations hold handles at once,
so the descriptors stay bounded whatever the number of calls in flight. A wait past the deadline
says "busy" when this process's own calls held the files, and names the other process otherwise.
The long form: docs/file-tools.md, "The cross-process lock".
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
                inode = (info.st_dev, info.st_ino)
                if not await _wait(held, inode, deadline - loop.time()):
                    holder = await asyncio.to_thread(lock_holder, inode)
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


_waiters: dict[tuple[int, int], _Waiter] = {}
"""The thread blocked in ``flock`` on each inode, in this process (at most one: later waits follow it)."""
_waiters_gate = threading.Lock()


async def _wait(held: LockHeld, inode: tuple[int, int], remaining: float) -> bool:
    """Wait in a daemon thread for ``held``'s next lock (on ``inode``); ``False`` after ``remaining`` s.

    ``True`` once it is taken (``held.taken`` moves on), or once the thread another wait of this
    process started on ``inode`` is done: at most one thread (and one handle) waits per inode, so a
    holder that never lets go (a stopped process) costs one, however many waits time out; the caller
    tries again. A wait given up (the deadline, or a cancel) leaves its handle to the thread, which
    closes it once it gets the lock: the lock is never kept.
    """
    if remaining <= 0:
        return False
    loop = asyncio.get_running_loop()
    with _waiters_gate:
        waiter = _waiters.get(inode)
        ahead = waiter is not None
        if waiter is None:
            waiter = _waiters[inode] = _Waiter(held.fds[held.taken], inode, loop)
    if ahead:
        return await waiter.follow(loop, remaining)
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
    """One blocking ``flock`` in its own thread, handed back to the loop (or abandoned).

    Other waits on the same inode follow it (:meth:`follow`) rather than start threads of their own.
    """

    def __init__(self, fd: int, inode: tuple[int, int], loop: asyncio.AbstractEventLoop) -> None:
        self.fd = fd
        self.inode = inode
        self.loop = loop
        self.done: asyncio.Future[OSError | None] = loop.create_future()
        self._gate = threading.Lock()
        self._abandoned = False
        self._finished = False
        self._followers: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def run(self) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            error: OSError | None = None
        except OSError as exc:
            error = exc
        with self._gate:
            self._finished = True
            abandoned = self._abandoned
            followers, self._followers = self._followers, []
        if abandoned:
            os.close(self.fd)  # given up: its lock goes at once
        with _waiters_gate:
            if _waiters.get(self.inode) is self:
                del _waiters[self.inode]
        for loop, future in followers:  # after the lock went: they try again
            with contextlib.suppress(RuntimeError):  # that loop closed meanwhile
                loop.call_soon_threadsafe(_resolve, future)
        if not abandoned:
            with contextlib.suppress(RuntimeError):
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

    async def follow(self, loop: asyncio.AbstractEventLoop, remaining: float) -> bool:
        """Wait up to ``remaining`` s for this thread to be done; ``False`` when it was not."""
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future)
        with self._gate:
            if self._finished:
                return True
            self._followers.append(entry)
        try:
            await asyncio.wait_for(future, remaining)
        except TimeoutError:
            return False
        finally:
            with self._gate, contextlib.suppress(ValueError):
                self._followers.remove(entry)
        return True


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
