"""Starting a sandboxed run's process in its cgroups, and watching it exit (a pidfd on Linux).

On Linux the exit of the spawned process is watched through a pidfd on the event loop (no child
watcher thread per spawn, which costs about 2.3 ms on Python 3.11); elsewhere asyncio's own
subprocess support is used.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ._cgroup import RunCgroup
from ._output import READ_CHUNK
from ._policy import ResourceLimits

__all__ = [
    "PidfdProcess",
    "Process",
    "Spawned",
    "acquire_limited",
    "killpg",
    "pidfd_works",
    "release_later",
    "send_signal",
    "setup_executor",
    "start_process",
]

logger = logging.getLogger(__name__)


class Process(Protocol):
    """What the runner needs of a started process (``asyncio.subprocess.Process`` is one)."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def stdin(self) -> asyncio.StreamWriter | None: ...
    @property
    def stdout(self) -> asyncio.StreamReader | None: ...
    @property
    def stderr(self) -> asyncio.StreamReader | None: ...
    async def wait(self) -> int: ...


@functools.cache
def pidfd_works() -> bool:
    """Whether ``pidfd_open`` works here (Linux 5.3 and later, not refused by a seccomp policy)."""
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


class PidfdProcess:
    """A child started with :class:`subprocess.Popen`, its exit watched through a pidfd on the loop.

    The pidfd turns readable when the child exits; the callback reaps it (``waitpid`` with
    ``WNOHANG``, which cannot block then). No thread per child, unlike asyncio's
    ``ThreadedChildWatcher`` on Python 3.11.
    """

    def __init__(self, popen: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop) -> None:
        self._popen = popen
        self._loop = loop
        self.pid = popen.pid
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._transports: list[asyncio.BaseTransport] = []
        self._exit: asyncio.Future[int] = loop.create_future()
        self._pidfd: int | None = os.pidfd_open(popen.pid)
        loop.add_reader(self._pidfd, self._exited)

    @classmethod
    async def adopt(cls, popen: subprocess.Popen[bytes], *, limit: int) -> PidfdProcess:
        """Watch ``popen`` and connect its pipes to the loop (stdout's reader takes lines up to ``limit``)."""
        loop = asyncio.get_running_loop()
        proc = cls(popen, loop)
        try:
            proc.stdout = await proc._reader(popen.stdout, limit)
            proc.stderr = await proc._reader(popen.stderr, READ_CHUNK)
            if popen.stdin is not None:
                sink = asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop)
                transport, protocol = await loop.connect_write_pipe(lambda: sink, popen.stdin)
                proc._transports.append(transport)
                proc.stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        except BaseException:
            killpg(popen.pid)
            proc.close_pipes()
            for pipe in (popen.stdin, popen.stdout, popen.stderr):
                if pipe is not None:
                    pipe.close()
            raise
        return proc

    async def _reader(self, pipe: object, limit: int) -> asyncio.StreamReader:
        reader = asyncio.StreamReader(limit=limit, loop=self._loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=self._loop)
        transport, _ = await self._loop.connect_read_pipe(lambda: protocol, pipe)
        self._transports.append(transport)
        return reader

    def _exited(self) -> None:
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        code = self._popen.poll()  # the pidfd is readable: the child is a zombie, waitpid returns at once
        if code is None:
            code = self._popen.wait()
        if not self._exit.done():
            self._exit.set_result(code)

    @property
    def returncode(self) -> int | None:
        """The exit status once reaped (negative: killed by that signal), else ``None``."""
        return self._popen.returncode

    async def wait(self) -> int:
        """Wait for the exit; return the status (cancelling the wait does not stop the watch)."""
        return await asyncio.shield(self._exit)

    def close_pipes(self) -> None:
        """Close the pipe transports (they close by themselves at EOF; a leftover holder may delay it)."""
        for transport in self._transports:
            transport.close()


_executor_lock = threading.Lock()
_setup_executor: concurrent.futures.ThreadPoolExecutor | None = None


def setup_executor() -> concurrent.futures.ThreadPoolExecutor:
    """Four worker threads for the blocking part of a start (``mkdir``, cgroupfs waits, the handshake)."""
    global _setup_executor
    with _executor_lock:
        if _setup_executor is None:
            _setup_executor = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="steerable-sandbox")
        return _setup_executor


@dataclass(slots=True)
class Spawned:
    """The run's cgroups after a spawn, and why they could not be limited (the child is then killed)."""

    cgroup: RunCgroup | None
    error: str | None = None


def _fork_inside(
    make_argv: Callable[[tuple[Path, ...]], list[str]],
    cgroup: RunCgroup | None,
    *,
    stdin: bool,
    cwd: str,
    env: Mapping[str, str],
    pass_fds: Sequence[int],
) -> tuple[subprocess.Popen[bytes], Spawned]:
    """Fork from the calling thread while it sits in the run's cgroups, then put their limits in force.

    The thread enters the cgroups (limits lifted; a few cgroupfs writes, no grace period), forks
    (the child starts inside), leaves, and then puts the limits in force: the event loop's thread does
    this, as asyncio's own subprocess support forks from it too (bubblewrap's
    ``--die-with-parent`` follows the *thread* that forked it). ``make_argv`` gets the
    ``cgroup.procs`` files the child does not start in (cgroup v2), for the launcher to join.
    """
    if cgroup is None:
        return _popen(make_argv(()), stdin=stdin, cwd=cwd, env=env, pass_fds=pass_fds), Spawned(None)
    error = None
    try:
        with cgroup.inside() as missing:
            popen = _popen(make_argv(missing), stdin=stdin, cwd=cwd, env=env, pass_fds=pass_fds)
        # Limits only once this thread is out: the main thread owns the sidecar's memory (cgroup v1
        # charges the thread-group leader's cgroup), so with the limits in force while it sat inside
        # the sidecar could be charged to the run and picked by the run's OOM killer. The child
        # cannot run a command yet: bubblewrap waits for the release, the launcher is still starting.
        try:
            cgroup.apply_limits()
        except OSError as exc:
            error = f"cannot set the limits of the run's cgroups {cgroup.paths}: {exc.strerror}"
            killpg(popen.pid)
    except BaseException:
        release_later(cgroup)
        raise
    return popen, Spawned(cgroup, error)


def _popen(
    argv: Sequence[str], *, stdin: bool, cwd: str, env: Mapping[str, str], pass_fds: Sequence[int]
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        pass_fds=tuple(pass_fds),
        bufsize=0,
    )


def release_later(cgroup: RunCgroup) -> None:
    """Give the run's cgroups back from a thread of its own (it may wait for tmpfs pages to go)."""
    threading.Thread(target=cgroup.release, name="steerable-cgroup-release", daemon=True).start()


async def start_process(
    make_argv: Callable[[tuple[Path, ...]], list[str]],
    limits: ResourceLimits | None,
    *,
    stdin: bool,
    cwd: str,
    env: Mapping[str, str],
    limit: int,
    pass_fds: Sequence[int] = (),
) -> tuple[Process, Spawned]:
    """Spawn in a new session, in the run's cgroups when ``limits`` is given (Linux).

    The cgroups are taken off the loop. With ``pidfd_open`` the child is forked inside them (see
    :func:`_fork_inside`) and its exit watched through a pidfd; without it asyncio's subprocess
    support is used, and the cgroups (limits already in force) are all left to ``make_argv`` or
    a later join.

    Raises:
        OSError: The program cannot be started.
    """
    loop = asyncio.get_running_loop()
    cgroup = None
    if limits is not None:
        acquire = functools.partial(
            RunCgroup.acquire if pidfd_works() else acquire_limited,
            max_processes=limits.max_processes,
            memory_bytes=limits.memory_bytes,
        )
        taken = loop.run_in_executor(setup_executor(), acquire)
        try:
            cgroup = await asyncio.shield(taken)
        except asyncio.CancelledError:  # taken all the same: give it back once it is there
            taken.add_done_callback(_give_back)
            raise
    if not pidfd_works():
        missing = cgroup.procs_files if cgroup is not None else ()
        try:
            process = await asyncio.create_subprocess_exec(
                *make_argv(missing),
                stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
                limit=limit,
                pass_fds=tuple(pass_fds),
            )
        except BaseException:
            if cgroup is not None:
                release_later(cgroup)
            raise
        return process, Spawned(cgroup)
    popen, spawned = _fork_inside(make_argv, cgroup, stdin=stdin, cwd=cwd, env=env, pass_fds=pass_fds)
    try:
        proc = await PidfdProcess.adopt(popen, limit=limit)
    except BaseException:
        threading.Thread(target=_abandon, args=(popen, spawned), daemon=True).start()
        raise
    return proc, spawned


def _give_back(taken: asyncio.Future[RunCgroup | None]) -> None:
    if not taken.cancelled() and taken.exception() is None and (cgroup := taken.result()) is not None:
        release_later(cgroup)


def _abandon(popen: subprocess.Popen[bytes], spawned: Spawned) -> None:
    """Reap a killed child nobody watches, and give its cgroups back (blocking)."""
    popen.wait()
    if spawned.cgroup is not None:
        spawned.cgroup.release()


def acquire_limited(*, max_processes: int, memory_bytes: int) -> RunCgroup | None:
    """A run's cgroups with the limits in force at once (for a process joining them from outside)."""
    cgroup = RunCgroup.acquire(max_processes=max_processes, memory_bytes=memory_bytes)
    if cgroup is not None:
        try:
            cgroup.apply_limits()
        except OSError as exc:
            logger.warning("cannot set the limits of the cgroups %s: %s", cgroup.paths, exc)
            cgroup.release()
            return None
    return cgroup


def send_signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
