"""The async runner shared by ``bash`` and ``run_code``: spawn under a backend, capture, time out, kill.

:func:`spawn_sandboxed` starts a command and returns a :class:`SandboxedProcess`: stderr (and
stdout, unless the caller asks for a pipe) is captured with a byte cap, ``stdin`` can be a pipe,
and a wall-clock deadline or a cancellation tears down the whole process tree. :func:`run_sandboxed`
is the one-shot form: run, wait, return a :class:`RunResult`.

Two ways in:

* **bubblewrap** (a ``direct`` plan) is started by the runner itself, without the Python launcher
  (a second interpreter start, about 8 ms): ``bwrap --info-fd --block-fd --sync-fd ...``.
  bubblewrap writes the pid of the sandbox's first process (its PID 1, which later forks the
  command) to the info pipe, then that process builds the sandbox and waits on the block pipe
  before it forks. Meanwhile, off the event loop, the runner sets that process's resource limits
  with ``prlimit`` and checks it is in the run's cgroups (bubblewrap was forked inside them; on
  cgroup v2 it is moved in); only then does it write the byte that lets the command start, so
  the command inherits both. The block pipe's write end is also bubblewrap's ``--sync-fd``, held
  open by the sandbox's init itself and closed before the command runs: if the runner dies before
  releasing it, the sandbox never sees EOF and keeps waiting, never running the command
  unlimited (the next sidecar's cgroup sweep kills it). A failed step kills the tree; the run ends
  with exit status 125 and ``steerable-sandbox: setup failed, not running the command: ...`` on
  stderr, as the launcher reports it.
* **the other backends** run through the launcher (``_launch.py``), which applies the limits,
  joins the cgroups and confines the command itself.

On Linux the exit of the spawned process is watched through a pidfd on the event loop (no child
watcher thread per spawn, which costs about 2.3 ms on Python 3.11); elsewhere asyncio's own
subprocess support is used.

Teardown, per backend: bubblewrap's PID namespace dies with its init, which the runner kills
directly (once released, ``--die-with-parent`` also ties it to bubblewrap); Landlock and inherited runs are
supervised by the launcher, which on ``SIGTERM`` kills every descendant (it is their subreaper,
so even processes that left the process group come back to it); a run's cgroups are emptied
too. In every case the runner ends with ``SIGKILL`` to the process group as a backstop.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import errno
import functools
import importlib.util
import json
import logging
import marshal
import os
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, Protocol

from ..errors import SandboxUnavailableError
from ._backend import LaunchPlan, SandboxBackend, SandboxInfo
from ._cgroup import RunCgroup
from ._launch import (
    EXIT_SETUP,
    SETUP_FAILED,
    SetupError,
    _deny_list,
    _user_tasks,
    rlimits,
    seccomp_pipe,
    setup_failure,
)
from ._policy import ResourceLimits, SandboxPolicy, child_environment

__all__ = [
    "LAUNCHER",
    "CapturedOutput",
    "RunResult",
    "SandboxedProcess",
    "launcher_argv",
    "launcher_code",
    "run_sandboxed",
    "spawn_sandboxed",
]

logger = logging.getLogger(__name__)

LAUNCHER: Final = str(Path(__file__).with_name("_launch.py"))
"""The launcher script, run as ``python -I -S LAUNCHER [options] -- argv``."""


def _pinned_launcher() -> tuple[str, str]:
    """The interpreter and the launcher bytecode, fixed when this module is imported (at boot).

    The launcher runs *outside* the sandbox (it applies the limits, then starts the backend), so
    nothing a sandboxed command can write may change what it runs: a ``.venv/bin/python`` or an
    editable install of steerable inside the workspace is writable from the sandbox. So the
    interpreter is the real file behind ``sys.executable`` (a venv's ``python`` is a symlink to
    the base interpreter, outside the workspace), resolved now, and the launcher's source is read
    now and compiled into a private (0700) directory; later edits of ``_launch.py`` or its
    ``__pycache__`` are never executed by this process.
    """
    python = os.path.realpath(sys.executable) if sys.executable else shutil.which("python3") or "python3"
    try:
        source = Path(LAUNCHER).read_bytes()
        private = tempfile.mkdtemp(prefix="steerable-launch-")
        atexit.register(shutil.rmtree, private, True)
        target = os.path.join(private, "_launch.pyc")
        code = compile(source, LAUNCHER, "exec", dont_inherit=True)
        with open(target, "wb") as fh:
            fh.write(importlib.util.MAGIC_NUMBER + struct.pack("<III", 0, 0, 0) + marshal.dumps(code))
        return python, target
    except (OSError, SyntaxError, ValueError):
        return python, LAUNCHER


PINNED_PYTHON, _PINNED_LAUNCHER = _pinned_launcher()
"""The interpreter that runs the launcher (``realpath(sys.executable)`` at import)."""


def _refuse_a_writable_launcher(policy: SandboxPolicy) -> None:
    """The launcher runs outside the sandbox: its interpreter must not be writable from inside.

    Raises:
        SandboxUnavailableError: The interpreter lies inside a writable root (a Python installed
            inside the workspace): a command could replace it and run unsandboxed next time.
    """
    for root in policy.writable_roots:
        real = os.path.realpath(root)
        if PINNED_PYTHON == real or PINNED_PYTHON.startswith(real.rstrip("/") + "/"):
            raise SandboxUnavailableError(
                f"the Python interpreter running steerable ({PINNED_PYTHON}) is inside the writable "
                f"root {real}: a sandboxed command could replace it and run unsandboxed next time; "
                "run steerable with a Python installed outside the workspace",
                tried={"launcher": f"{PINNED_PYTHON} is writable from the sandbox"},
            )


def launcher_code() -> str:
    """The launcher's bytecode file, compiled from the source read when this module was imported.

    See :func:`_pinned_launcher` for why it is pinned (a sandboxed command can write the
    workspace, and an editable install or a venv may live there).
    """
    return _PINNED_LAUNCHER


PIPE_LIMIT_BYTES: Final = 16 * 1024 * 1024
"""Longest line ``SandboxedProcess.stdout.readline()`` accepts in ``stdout="pipe"`` mode (16 MiB)."""

_READ_CHUNK: Final = 64 * 1024
_KILL_GRACE_S: Final = 1.0  # a supervising launcher (or bwrap, after its sandbox died) gets this long
_DRAIN_GRACE_S: Final = 2.0  # after exit, how long the output pipes may stay open
_SETUP_TIMEOUT_S: Final = 10.0  # bubblewrap reports its sandbox's pid within this, or the run fails
_OOM_CHECK_S: Final = 0.005  # after an OOM notification, the run's oom_kill count is read this often...
_OOM_CHECKS: Final = 200  # ...this many times (1 s: the kill follows the notification, later under load)


@dataclass(frozen=True, slots=True)
class CapturedOutput:
    """One captured stream, clipped to a byte cap.

    Attributes:
        text: The output decoded as UTF-8 (invalid bytes replaced). When clipped, the head and the
            tail are kept and the middle is replaced by a marker line naming how much was left out.
        total_bytes: How many bytes the stream produced in all.
        kept_bytes: How many of them ``text`` holds.
    """

    text: str
    total_bytes: int
    kept_bytes: int

    @property
    def clipped(self) -> bool:
        """Whether bytes were left out."""
        return self.total_bytes > self.kept_bytes


class _Clip:
    """Keep the first and last ``cap // 2`` bytes of a stream, count the rest."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap - cap // 2
        self.tail_cap = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_cap:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:  # trim now and then, not on every chunk
                del self.tail[: len(self.tail) - self.tail_cap]

    def result(self) -> CapturedOutput:
        tail = bytes(self.tail[-self.tail_cap :]) if self.tail_cap else b""
        kept = len(self.head) + len(tail)
        text = self.head.decode("utf-8", "replace")
        if self.total > kept:
            text += f"\n[... {self.total - kept} bytes clipped; {self.total} bytes in total ...]\n"
        return CapturedOutput(text + tail.decode("utf-8", "replace"), self.total, kept)


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a sandboxed run ended.

    Attributes:
        exit_code: The command's exit status (``128 + n`` when signal ``n`` killed it; 125 when
            the sandbox could not be set up and the command never ran); ``None`` when the run
            was stopped (timed out) before the command exited on its own.
        timed_out: The wall-clock deadline passed and the process tree was killed.
        stdout: Captured stdout (empty in ``stdout="pipe"`` mode: the caller read it).
        stderr: Captured stderr.
        duration_ms: Wall-clock time from spawn to exit, milliseconds.
        sandbox: The backend it ran under (``sandbox.as_data()`` is ``data._sandbox``).
        memory_exceeded: The kernel's OOM killer killed a process of the run (counted in the
            run's own memory cgroup: the tree went over ``memory_bytes`` together); the rest of
            the tree was then killed, unless it had already ended by itself (on cgroup v1 the
            kernel kills one process, the runner the others: a shell may still report the
            ``SIGKILL`` and exit first, with its own status). Always ``False`` without a memory
            cgroup (the per-process ``RLIMIT_AS`` shows as ``MemoryError`` / ``ENOMEM`` in the
            command instead).
    """

    exit_code: int | None
    timed_out: bool
    stdout: CapturedOutput
    stderr: CapturedOutput
    duration_ms: float
    sandbox: SandboxInfo
    memory_exceeded: bool = False


def launcher_argv(plan: LaunchPlan, policy: SandboxPolicy, *, cgroups: Sequence[Path] = ()) -> list[str]:
    """The full argv that starts ``plan`` through the launcher, with the limits and the plan's options.

    Args:
        plan: The backend's plan (a ``direct`` one too: the launcher then execs bubblewrap).
        policy: Supplies the resource limits.
        cgroups: ``cgroup.procs`` files the launcher joins first (one per hierarchy).
    """
    limits = policy.limits
    options = ["--cpu", str(limits.cpu_seconds), "--as", str(limits.memory_bytes)]
    options += ["--nproc", str(limits.max_processes)]
    for procs in cgroups:
        options += ["--cgroup", str(procs)]
    if plan.seccomp_fd_at is not None:
        options += ["--seccomp-fd-at", str(plan.seccomp_fd_at), "--seccomp-deny", plan.seccomp_deny]
    return [PINNED_PYTHON, "-I", "-S", launcher_code(), *options, *plan.launcher_options, "--", *plan.argv]


# -- starting a process, and watching it exit --------------------------------------------------------


class _Process(Protocol):
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
def _pidfd_works() -> bool:
    """Whether ``pidfd_open`` works here (Linux 5.3 and later, not refused by a seccomp policy)."""
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


class _PidfdProcess:
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
    async def adopt(cls, popen: subprocess.Popen[bytes], *, limit: int) -> _PidfdProcess:
        """Watch ``popen`` and connect its pipes to the loop (stdout's reader takes lines up to ``limit``)."""
        loop = asyncio.get_running_loop()
        proc = cls(popen, loop)
        try:
            proc.stdout = await proc._reader(popen.stdout, limit)
            proc.stderr = await proc._reader(popen.stderr, _READ_CHUNK)
            if popen.stdin is not None:
                sink = asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop)
                transport, protocol = await loop.connect_write_pipe(lambda: sink, popen.stdin)
                proc._transports.append(transport)
                proc.stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        except BaseException:
            _killpg(popen.pid)
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


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    """Four worker threads for the blocking part of a start (``mkdir``, cgroupfs waits, the handshake)."""
    global _setup_executor
    with _executor_lock:
        if _setup_executor is None:
            _setup_executor = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="steerable-sandbox")
        return _setup_executor


@dataclass(slots=True)
class _Spawned:
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
) -> tuple[subprocess.Popen[bytes], _Spawned]:
    """Fork from the calling thread while it sits in the run's cgroups, then put their limits in force.

    The thread enters the cgroups (limits lifted; a few cgroupfs writes, no grace period), forks
    (the child starts inside), leaves, and then puts the limits in force: the event loop's thread does
    this, as asyncio's own subprocess support forks from it too (bubblewrap's
    ``--die-with-parent`` follows the *thread* that forked it). ``make_argv`` gets the
    ``cgroup.procs`` files the child does not start in (cgroup v2), for the launcher to join.
    """
    if cgroup is None:
        return _popen(make_argv(()), stdin=stdin, cwd=cwd, env=env, pass_fds=pass_fds), _Spawned(None)
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
            _killpg(popen.pid)
    except BaseException:
        _release_later(cgroup)
        raise
    return popen, _Spawned(cgroup, error)


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


def _release_later(cgroup: RunCgroup) -> None:
    """Give the run's cgroups back from a thread of its own (it may wait for tmpfs pages to go)."""
    threading.Thread(target=cgroup.release, name="steerable-cgroup-release", daemon=True).start()


async def _start(
    make_argv: Callable[[tuple[Path, ...]], list[str]],
    limits: ResourceLimits | None,
    *,
    stdin: bool,
    cwd: str,
    env: Mapping[str, str],
    limit: int,
    pass_fds: Sequence[int] = (),
) -> tuple[_Process, _Spawned]:
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
            RunCgroup.acquire if _pidfd_works() else _acquire_limited,
            max_processes=limits.max_processes,
            memory_bytes=limits.memory_bytes,
        )
        taken = loop.run_in_executor(_executor(), acquire)
        try:
            cgroup = await asyncio.shield(taken)
        except asyncio.CancelledError:  # taken all the same: give it back once it is there
            taken.add_done_callback(_give_back)
            raise
    if not _pidfd_works():
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
                _release_later(cgroup)
            raise
        return process, _Spawned(cgroup)
    popen, spawned = _fork_inside(make_argv, cgroup, stdin=stdin, cwd=cwd, env=env, pass_fds=pass_fds)
    try:
        proc = await _PidfdProcess.adopt(popen, limit=limit)
    except BaseException:
        threading.Thread(target=_abandon, args=(popen, spawned), daemon=True).start()
        raise
    return proc, spawned


def _give_back(taken: asyncio.Future[RunCgroup | None]) -> None:
    if not taken.cancelled() and taken.exception() is None and (cgroup := taken.result()) is not None:
        _release_later(cgroup)


def _abandon(popen: subprocess.Popen[bytes], spawned: _Spawned) -> None:
    """Reap a killed child nobody watches, and give its cgroups back (blocking)."""
    popen.wait()
    if spawned.cgroup is not None:
        spawned.cgroup.release()


def _acquire_limited(*, max_processes: int, memory_bytes: int) -> RunCgroup | None:
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


# -- bubblewrap without the launcher: limits and cgroups applied to the sandbox from outside -------


class _SandboxInit:
    """The sandbox's first process (bubblewrap's PID 1 in its namespace), held by a pidfd if possible."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.pidfd: int | None = None
        if _pidfd_works():
            self.pidfd = os.pidfd_open(pid)

    def kill(self) -> None:
        """``SIGKILL`` it: the kernel then kills every process of its PID namespace."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


@dataclass(slots=True)
class _Prepared:
    """A sandbox made ready to run: its init process, when each step ended (monotonic s), or why not."""

    init: _SandboxInit | None
    marks: dict[str, float]
    error: str | None = None


def _read_sandbox_pid(info_fd: int, timeout_s: float) -> int | None:
    """The ``child-pid`` bubblewrap writes to ``--info-fd``; ``None`` when it exited without one.

    Raises:
        SetupError: It said nothing within ``timeout_s``, or something that is not its JSON.
    """
    deadline = time.monotonic() + timeout_s
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SetupError(f"bubblewrap did not report its sandbox within {timeout_s:g} s")
        ready, _, _ = select.select([info_fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(info_fd, 4096)
        if not chunk:
            break
        data += chunk
    if not data:
        return None  # bubblewrap failed before it made the sandbox; its own message is on stderr
    try:
        pid = json.loads(data)["child-pid"]
    except (ValueError, KeyError, TypeError):
        raise SetupError(f"unexpected answer on bubblewrap's info pipe: {data[:200]!r}") from None
    if type(pid) is not int or pid <= 1:
        raise SetupError(f"unexpected sandbox pid from bubblewrap: {pid!r}")
    return pid


def _own_user_namespace(pid: int) -> bool:
    """Whether ``pid`` lives in a user namespace other than ours (bubblewrap made one)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/user") != os.readlink("/proc/self/ns/user")
    except OSError:
        return False


def _nproc_limit(pid: int, max_processes: int) -> int:
    """The ``RLIMIT_NPROC`` that lets the sandbox of ``pid`` add ``max_processes`` tasks (non-root).

    Since Linux 5.14 the count ``RLIMIT_NPROC`` is checked against is kept per user namespace, so
    in bubblewrap's own namespace it counts the sandbox's tasks only, starting at its init: the
    limit is ``max_processes + 1``. Otherwise (an older kernel, or no user namespace) it is the
    user's tasks everywhere: their current count plus ``max_processes``, as the launcher sets it.
    """
    release = os.uname().release.split(".")
    try:
        version = (int(release[0]), int("".join(c for c in release[1] if c.isdigit()) or 0))
    except (IndexError, ValueError):
        version = (0, 0)
    if version >= (5, 14) and _own_user_namespace(pid):
        return max_processes + 1
    return _user_tasks(os.getuid()) + max_processes


def _limit_process(pid: int, limits: ResourceLimits) -> None:
    """Set the run's resource limits on ``pid`` with ``prlimit`` (what the launcher sets on itself).

    Raises:
        OSError: The kernel refused one (``ProcessLookupError``: the process is gone).
    """
    for which, value in rlimits(cpu=limits.cpu_seconds, address_space=limits.memory_bytes):
        resource.prlimit(pid, which, value)
    if limits.max_processes and os.getuid() != 0:  # root is exempt: the pids cgroup bounds it
        nproc = _nproc_limit(pid, limits.max_processes)
        resource.prlimit(pid, resource.RLIMIT_NPROC, (nproc, nproc))


def _ppid(pid: int) -> int:
    """The parent of ``pid`` (``ProcessLookupError`` when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ProcessLookupError(pid) from None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _prepare_sandbox(
    info_fd: int, bwrap_pid: int, limits: ResourceLimits, cgroup: RunCgroup | None
) -> _Prepared:
    """Blocking (run in a worker thread): make a waiting bubblewrap sandbox ready to run the command.

    Reads the sandbox's pid, checks it is bubblewrap's child, sets its limits, and checks it is in
    every cgroup of the run (it is when bubblewrap was forked inside them; otherwise it is moved
    in now). Owns ``info_fd`` (closes it). On failure the sandbox's init (when known) is already
    killed and ``error`` says why: the command never runs. When the sandbox is already gone
    (bubblewrap failed on its own, its message is on stderr) nothing is set and ``init`` is
    ``None``.
    """
    marks: dict[str, float] = {}
    init: _SandboxInit | None = None
    try:
        pid = _read_sandbox_pid(info_fd, _SETUP_TIMEOUT_S)
        marks["sandbox_pid"] = time.monotonic()
        if pid is None:
            return _Prepared(None, marks)
        init = _SandboxInit(pid)
        if _ppid(pid) != bwrap_pid:
            raise SetupError(f"process {pid} is not the sandbox bubblewrap {bwrap_pid} started")
        if cgroup is not None and cgroup.memory_limited:
            _first_for_the_oom_killer(pid)
        _limit_process(pid, limits)
        marks["limits"] = time.monotonic()
        if cgroup is not None:
            try:
                cgroup.join(pid, cgroup.missing(pid))
            except ProcessLookupError:
                raise  # gone meanwhile (ESRCH): bubblewrap failed on its own, handled below
            except OSError as exc:
                if exc.errno == errno.ESRCH or not _alive(pid):
                    raise ProcessLookupError(pid) from None
                raise SetupError(f"cannot join the run's cgroups {cgroup.paths}: {exc.strerror}") from None
            marks["cgroups"] = time.monotonic()
        return _Prepared(init, marks)
    except ProcessLookupError:  # the sandbox died on its own before it could run anything
        if init is not None:
            init.close()
        return _Prepared(None, marks)
    except (SetupError, OSError, ValueError) as exc:
        if init is not None:  # killed now; bubblewrap reaps it and exits (no zombie left to PID 1)
            init.kill()
        return _Prepared(init, marks, error=setup_failure(exc))
    finally:
        os.close(info_fd)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still exists (a zombie counts as gone: it will never run the command)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _first_for_the_oom_killer(pid: int) -> None:
    """Make the sandbox (``pid``, its init, and all it forks later) the OOM killer's first choice.

    bubblewrap's outer process sits in the run's memory cgroup too (it was forked there) but
    only waits for the sandbox; if the OOM killer took it first, it could not reap the
    sandbox's init, which would linger as a zombie of PID 1 and keep the cgroup out of the pool.
    Raising a score needs no privilege (lowering bubblewrap's would need ``CAP_SYS_RESOURCE``);
    a command may lower its own back, which only costs the pool a cgroup. Best effort.
    """
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/oom_score_adj").write_text("1000", encoding="ascii")


class SandboxedProcess:
    """A running sandboxed command; use it as an async context manager (leaving it kills the tree).

    Attributes:
        pid: The pid of the spawned process (bubblewrap or the launcher), also its process group id.
        stdin: A writer to the command's stdin (``stdin=True``), else ``None``.
        stdout: A reader of the command's stdout (``stdout="pipe"``), else ``None``.
        sandbox: The backend it runs under.
        timed_out: Set when the deadline passed and the tree was killed.
        memory_exceeded: Set when the OOM killer killed a process of the run (counted in the
            run's own memory cgroup; the tree is then killed at once).
        startup_ms: Milliseconds from the spawn call to each start-up step that ran, for
            benchmarks: ``spawned`` (the process exists in the run's cgroups, pipes connected),
            and for bubblewrap ``sandbox_pid`` (bubblewrap reported it), ``limits`` (set on it),
            ``cgroups`` (checked, or joined) and ``released`` (the command may start).
    """

    def __init__(
        self,
        proc: _Process,
        *,
        sandbox: SandboxInfo,
        supervised: bool,
        private_tmp: Path,
        cgroup: RunCgroup | None,
        capture_stdout: bool,
        max_output_bytes: int,
        timeout_s: float | None,
        started: float | None = None,
        setup_error: str | None = None,
    ) -> None:
        self._proc = proc
        self.pid = proc.pid
        self.stdin = proc.stdin
        self.stdout = None if capture_stdout else proc.stdout
        self.sandbox = sandbox
        self.timed_out = False
        self.memory_exceeded = False
        self._supervised = supervised
        self._private_tmp: Path | None = private_tmp
        self._cgroup: RunCgroup | None = None
        self._oom_fd: int | None = None
        self._init: _SandboxInit | None = None
        self._setup_error = setup_error
        self._stopping = False
        self._started = time.monotonic() if started is None else started
        self.startup_ms: dict[str, float] = {"spawned": (time.monotonic() - self._started) * 1000}
        self._ended: float | None = None
        self._out = _Clip(max_output_bytes)
        self._err = _Clip(max_output_bytes)
        self._readers: list[asyncio.Task[None]] = []
        if capture_stdout and proc.stdout is not None:
            self._readers.append(asyncio.ensure_future(_drain(proc.stdout, self._out)))
        if proc.stderr is not None:
            self._readers.append(asyncio.ensure_future(_drain(proc.stderr, self._err)))
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._deadline = loop.call_later(timeout_s, self._expire) if timeout_s is not None else None
        self._backstop: asyncio.TimerHandle | None = None
        self._oom_check: asyncio.TimerHandle | None = None
        self._oom_checks_left = 0
        self._cgroup = cgroup
        if cgroup is not None and cgroup.oom_fd is not None:
            self._oom_fd = cgroup.oom_fd
            loop.add_reader(self._oom_fd, self._out_of_memory)
        if setup_error is not None:
            self.kill()

    @property
    def returncode(self) -> int | None:
        """The spawned process's return code once it exited (negative: killed by that signal)."""
        return self._proc.returncode

    def _expire(self) -> None:
        self.timed_out = True
        self.kill()

    def _out_of_memory(self) -> None:
        """The run's memory cgroup, or one above it, is out of memory: watch the run's OOM-kill count.

        The notification comes before the OOM killer picks its victim, and also for an OOM of
        an ancestor cgroup (whose victim may be any process under it) or one that ends without
        a kill: only a kill counted in the run's own cgroup ends the run, so the count is read
        now and then every :data:`_OOM_CHECK_S` for :data:`_OOM_CHECKS` times.
        """
        if self._oom_fd is not None:
            with contextlib.suppress(OSError):
                os.eventfd_read(self._oom_fd)
        self._oom_checks_left = _OOM_CHECKS
        if self._oom_check is None:
            self._check_oom()

    def _check_oom(self) -> None:
        self._oom_check = None
        if self.memory_exceeded or self._cgroup is None:
            return
        if self._cgroup.memory_exceeded():
            self.memory_exceeded = True
            self.kill()  # the OOM killer took one process of the run; the run ends as a whole
            if self._init is None:
                self._cgroup.kill_all()  # a supervising launcher may be the one it took: do not wait
        elif self._oom_checks_left > 0:
            self._oom_checks_left -= 1
            self._oom_check = self._loop.call_later(_OOM_CHECK_S, self._check_oom)

    def kill(self) -> None:
        """Stop the command and everything it started; returns at once (signals are sent now).

        bubblewrap's sandbox init gets ``SIGKILL`` (the kernel kills its PID namespace, and
        bubblewrap exits after it); a supervising launcher gets ``SIGTERM`` (it kills its tree
        with ``SIGKILL``); otherwise the process group and the run's cgroups get ``SIGKILL``. The
        group and the cgroups get ``SIGKILL`` a second later in case one of them is stuck.
        """
        self._stopping = True
        if self._proc.returncode is None:
            if self._init is not None or self._supervised:
                if self._init is not None:
                    self._init.kill()
                else:
                    _signal(self._proc.pid, signal.SIGTERM)
                if self._backstop is None:
                    self._backstop = self._loop.call_later(_KILL_GRACE_S, self._kill_group)
                return
            _killpg(self._proc.pid)
        if self._cgroup is not None:
            self._cgroup.kill_all()

    def _kill_group(self) -> None:
        if self._proc.returncode is None:  # once reaped, the pid (and group id) may be reused
            _killpg(self._proc.pid)
        if self._cgroup is not None:
            self._cgroup.kill_all()

    async def wait(self) -> int:
        """Wait for the spawned process to exit; return its return code."""
        return await self._proc.wait()

    async def finish(self) -> RunResult:
        """Wait for the command to end (or its deadline), then collect the output.

        Cancelling this kills the tree (and re-raises).
        """
        try:
            code = await self._proc.wait()
        except asyncio.CancelledError:
            self.kill()
            raise
        self._ended = time.monotonic()
        if self._deadline is not None:
            self._deadline.cancel()
        await self._collect()
        if self._cgroup is not None and not self.memory_exceeded:
            self.memory_exceeded = self._cgroup.memory_exceeded()
        if self._setup_error is not None:
            self._err.feed(f"{SETUP_FAILED}{self._setup_error}\n".encode())
            exit_code: int | None = EXIT_SETUP
        elif self.timed_out:
            exit_code = None
        else:
            exit_code = 128 - code if code < 0 else code
        return RunResult(
            exit_code=exit_code,
            timed_out=self.timed_out,
            stdout=self._out.result(),
            stderr=self._err.result(),
            duration_ms=(self._ended - self._started) * 1000,
            sandbox=self.sandbox,
            memory_exceeded=self.memory_exceeded,
        )

    async def _collect(self) -> None:
        if not self._readers:
            return
        done, pending = await asyncio.wait(self._readers, timeout=_DRAIN_GRACE_S)
        for task in pending:  # a process outside our reach still holds a pipe: stop reading
            task.cancel()
        for task in (*done, *pending):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._readers = []

    async def close(self) -> None:
        """Kill the tree if it still runs, reap it, remove the private directory, give back the cgroups."""
        if self._deadline is not None:
            self._deadline.cancel()
        self.kill()
        try:
            await asyncio.wait_for(asyncio.shield(self._proc.wait()), _KILL_GRACE_S + 2)
        except (TimeoutError, asyncio.CancelledError):
            self._kill_group()
        finally:
            if self._backstop is not None:
                self._backstop.cancel()
            for task in self._readers:
                task.cancel()
            if self.stdin is not None:
                self.stdin.close()
            if isinstance(self._proc, _PidfdProcess):
                self._proc.close_pipes()
            await self._cleanup()

    async def _cleanup(self) -> None:
        if self._oom_check is not None:
            self._oom_check.cancel()
            self._oom_check = None
        if self._oom_fd is not None:
            self._loop.remove_reader(self._oom_fd)
            self._oom_fd = None  # the cgroup closes it on release
        if self._init is not None:
            self._init.close()
            self._init = None
        if self._cgroup is not None:  # off the loop and not awaited: it may wait for tmpfs pages to go
            _release_later(self._cgroup)
            self._cgroup = None
        if self._private_tmp is not None:
            private, self._private_tmp = self._private_tmp, None
            try:
                private.rmdir()  # bubblewrap never writes it: empty, gone at once
            except OSError:
                await asyncio.shield(self._loop.run_in_executor(_executor(), _remove_tree, private))

    async def _start_sandbox(self, info_fd: int, block_fd: int, limits: ResourceLimits) -> None:
        """Prepare a waiting bubblewrap sandbox off the loop, then let it fork the command.

        Owns both descriptors. When preparing fails the block is never released: the tree is
        killed and :meth:`finish` reports exit status 125 with the reason.
        """
        try:
            if self._setup_error is not None:  # the spawn already failed to limit the run
                os.close(info_fd)
                return
            job = functools.partial(_prepare_sandbox, info_fd, self.pid, limits, self._cgroup)
            future = self._loop.run_in_executor(_executor(), job)
            try:
                ready = await asyncio.shield(future)
            except asyncio.CancelledError:
                self.kill()  # bubblewrap dies, the info pipe ends, the job returns
                self._adopt(await future)
                raise
            self._adopt(ready)
            for step, at in ready.marks.items():
                self.startup_ms[step] = (at - self._started) * 1000
            if ready.error is not None:
                self._setup_error = ready.error
                self.kill()
            elif ready.init is not None and not self._stopping:
                with contextlib.suppress(BrokenPipeError):  # bubblewrap failed on its own meanwhile
                    os.write(block_fd, b"\0")  # one byte: the sandbox's init forks the command now
                self.startup_ms["released"] = (time.monotonic() - self._started) * 1000
        finally:
            os.close(block_fd)

    def _adopt(self, ready: _Prepared) -> None:
        self._init = ready.init
        if self._stopping:  # killed while it was being prepared: kill what was prepared too
            self.kill()

    async def __aenter__(self) -> SandboxedProcess:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


async def spawn_sandboxed(
    argv: Sequence[str],
    policy: SandboxPolicy,
    *,
    backend: SandboxBackend,
    env: Mapping[str, str] | None = None,
    stdin: bool = False,
    stdout: Literal["capture", "pipe"] = "capture",
    timeout_s: float | None = None,
) -> SandboxedProcess:
    r"""Start ``argv`` under ``backend`` with ``policy``; the caller talks to it, then closes it.

    The command runs in its own session and process group, in ``policy.workdir``, with ``env``
    (default: :func:`child_environment` of this process) plus the run's private ``TMPDIR``.
    stderr is always captured (clipped at ``policy.limits.max_output_bytes``). When this returns,
    the sandbox is set up and the command has been let go (or the setup failed, and
    :meth:`SandboxedProcess.finish` reports exit status 125).

    For a JSON-lines child (``run_code``): ``stdin=True, stdout="pipe"``, then write frames to
    ``proc.stdin`` and ``await proc.stdout.readline()``; ``await proc.finish()`` ends with the
    exit status and the captured stderr::

        async with await spawn_sandboxed(argv, policy, backend=b, stdin=True, stdout="pipe",
                                         timeout_s=30) as proc:
            proc.stdin.write(b'{"call": 1}\n')
            reply = await proc.stdout.readline()   # b"" once the deadline killed it
            result = await proc.finish()

    Args:
        argv: The command and its arguments.
        policy: Writable roots, network, limits.
        backend: From :func:`select_backend`.
        env: The child's whole environment before ``TMPDIR`` is set (default: the allowlist).
        stdin: Give the command a stdin pipe (``proc.stdin``); otherwise it reads ``/dev/null``.
        stdout: ``"capture"`` (clipped, in the result) or ``"pipe"`` (``proc.stdout``, unclipped,
            lines up to :data:`PIPE_LIMIT_BYTES`).
        timeout_s: Wall-clock deadline from now; when it passes the tree is killed and
            ``timed_out`` set.

    Returns:
        The running process.

    Raises:
        SandboxUnavailableError: The interpreter running steerable lies inside a writable root.
        OSError: When the sandbox cannot be started at all (no ``bwrap``, no Python executable).
    """
    _refuse_a_writable_launcher(policy)
    started = time.monotonic()
    private_tmp = Path(tempfile.mkdtemp(prefix="steerable-sbx-"))
    try:
        plan = backend.plan(argv, policy, private_tmp=private_tmp)
        child_env = dict(child_environment() if env is None else env)
        child_env.update(plan.env)
        limit = PIPE_LIMIT_BYTES if stdout == "pipe" else _READ_CHUNK
        linux = sys.platform.startswith("linux")

        def make_argv(missing: tuple[Path, ...]) -> list[str]:
            if sys.platform == "win32":  # no launcher (no resource limits) where no backend exists
                return list(plan.argv)
            return launcher_argv(plan, policy, cgroups=missing)

        handshake: tuple[int, int] | None = None
        if plan.direct and linux:
            proc, spawned, handshake = await _spawn_direct(
                plan, policy, stdin=stdin, env=child_env, limit=limit
            )
        else:
            proc, spawned = await _start(
                make_argv,
                policy.limits if linux else None,
                stdin=stdin,
                cwd=str(policy.workdir),
                env=child_env,
                limit=limit,
            )
    except BaseException:
        shutil.rmtree(private_tmp, ignore_errors=True)
        raise
    process = SandboxedProcess(
        proc,
        sandbox=backend.info,
        supervised=plan.supervised and handshake is None,  # a direct plan has no launcher to supervise
        private_tmp=private_tmp,
        cgroup=spawned.cgroup,
        capture_stdout=stdout == "capture",
        max_output_bytes=policy.limits.max_output_bytes,
        timeout_s=timeout_s,
        started=started,
        setup_error=spawned.error,
    )
    if handshake is not None:
        try:
            await process._start_sandbox(*handshake, policy.limits)
        except BaseException:
            await process.close()
            raise
    return process


async def _spawn_direct(
    plan: LaunchPlan, policy: SandboxPolicy, *, stdin: bool, env: Mapping[str, str], limit: int
) -> tuple[_Process, _Spawned, tuple[int, int]]:
    """Start a ``direct`` (bubblewrap) plan without the launcher; see the module docstring.

    Returns:
        The process, its cgroups, and the read end of bubblewrap's info pipe and the write end of
        its block pipe, for :meth:`SandboxedProcess._start_sandbox` (which owns them from then on).
    """
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    theirs = [info_w, block_r]
    argv = list(plan.argv)
    try:
        if plan.seccomp_fd_at is not None:
            filter_r = seccomp_pipe(_deny_list(plan.seccomp_deny))
            theirs.append(filter_r)
            argv[plan.seccomp_fd_at] = str(filter_r)
        # --sync-fd: bubblewrap's init holds the block pipe's write end too (closing it only in
        # the command), so the block never reads EOF unless this process writes the byte
        argv[1:1] = ["--info-fd", str(info_w), "--block-fd", str(block_r), "--sync-fd", str(block_w)]
        proc, spawned = await _start(
            lambda missing: argv,
            policy.limits,
            stdin=stdin,
            cwd=str(policy.workdir),
            env=env,
            limit=limit,
            pass_fds=(*theirs, block_w),
        )
    except BaseException:
        for fd in (info_r, block_w):
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    return proc, spawned, (info_r, block_w)


async def run_sandboxed(
    argv: Sequence[str],
    policy: SandboxPolicy,
    *,
    backend: SandboxBackend,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    input: bytes | None = None,
) -> RunResult:
    """Run ``argv`` to the end under ``backend`` and return how it went.

    Cancelling the call kills the whole process tree before the cancellation propagates.

    Args:
        argv: The command and its arguments.
        policy: Writable roots, network, limits.
        backend: From :func:`select_backend`.
        env: The child's environment (default: the allowlist of this process's).
        timeout_s: Wall-clock limit; on expiry the tree is killed and ``timed_out`` is set.
        input: Bytes written to the command's stdin (then closed); ``None`` gives it ``/dev/null``.

    Returns:
        Exit code (125: the sandbox could not be set up, nothing ran), captured output, timing,
        the backend, and whether the memory limit was hit.
    """
    proc = await spawn_sandboxed(
        argv, policy, backend=backend, env=env, stdin=input is not None, timeout_s=timeout_s
    )
    async with proc:
        if input is not None and proc.stdin is not None:
            with contextlib.suppress(ConnectionError):
                proc.stdin.write(input)
                await proc.stdin.drain()
            proc.stdin.close()
        return await proc.finish()


async def _drain(stream: asyncio.StreamReader, clip: _Clip) -> None:
    while chunk := await stream.read(_READ_CHUNK):
        clip.feed(chunk)


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
