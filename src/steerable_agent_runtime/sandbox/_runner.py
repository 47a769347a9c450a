"""The async runner shared by ``bash`` and ``run_code``: spawn under a backend, capture, time out, kill.

:func:`spawn_sandboxed` starts a command and returns a :class:`SandboxedProcess`: stderr (and
stdout, unless the caller asks for a pipe) is captured with a byte cap, ``stdin`` can be a pipe,
and a wall-clock deadline or a cancellation tears down the whole process tree. :func:`run_sandboxed`
is the one-shot form: run, wait, return a :class:`RunResult`.

Teardown, per backend: bubblewrap's PID namespace dies with its init (``--die-with-parent``),
so killing the process group kills everything; Landlock and inherited runs are supervised by the
launcher, which on ``SIGTERM`` kills every descendant (it is their subreaper, so even processes
that left the process group come back to it); a root run's ``pids`` cgroup is emptied too. In
every case the runner ends with ``SIGKILL`` to the process group as a backstop.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import logging
import marshal
import os
import shutil
import signal
import struct
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Literal

from ._backend import LaunchPlan, SandboxBackend, SandboxInfo
from ._cgroup import PidsCgroup
from ._policy import SandboxPolicy, child_environment

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

from ..errors import SandboxUnavailableError

logger = logging.getLogger("steerable_agent_runtime.sandbox")

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
_KILL_GRACE_S: Final = 1.0  # a supervising launcher gets this long to kill its tree before SIGKILL
_DRAIN_GRACE_S: Final = 2.0  # after exit, how long the output pipes may stay open


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
        exit_code: The command's exit status (``128 + n`` when signal ``n`` killed it); ``None``
            when the run was stopped (timed out) before the command exited on its own.
        timed_out: The wall-clock deadline passed and the process tree was killed.
        stdout: Captured stdout (empty in ``stdout="pipe"`` mode: the caller read it).
        stderr: Captured stderr.
        duration_ms: Wall-clock time from spawn to exit, milliseconds.
        sandbox: The backend it ran under (``sandbox.as_data()`` is ``data._sandbox``).
    """

    exit_code: int | None
    timed_out: bool
    stdout: CapturedOutput
    stderr: CapturedOutput
    duration_ms: float
    sandbox: SandboxInfo


def launcher_argv(plan: LaunchPlan, policy: SandboxPolicy, *, cgroup: Path | None = None) -> list[str]:
    """The full argv that starts ``plan``: the launcher with the limits and the plan's options.

    Args:
        plan: The backend's plan.
        policy: Supplies the resource limits.
        cgroup: A ``cgroup.procs`` file the launcher joins first.
    """
    limits = policy.limits
    options = ["--cpu", str(limits.cpu_seconds), "--as", str(limits.memory_bytes)]
    options += ["--nproc", str(limits.max_processes)]
    if cgroup is not None:
        options += ["--cgroup", str(cgroup)]
    return [PINNED_PYTHON, "-I", "-S", launcher_code(), *options, *plan.launcher_options, "--", *plan.argv]


class SandboxedProcess:
    """A running sandboxed command; use it as an async context manager (leaving it kills the tree).

    Attributes:
        pid: The launcher's pid (also the process group id).
        stdin: A writer to the command's stdin (``stdin=True``), else ``None``.
        stdout: A reader of the command's stdout (``stdout="pipe"``), else ``None``.
        sandbox: The backend it runs under.
        timed_out: Set when the deadline passed and the tree was killed.
    """

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        *,
        sandbox: SandboxInfo,
        supervised: bool,
        private_tmp: Path,
        cgroup: PidsCgroup | None,
        capture_stdout: bool,
        max_output_bytes: int,
        timeout_s: float | None,
    ) -> None:
        self._proc = proc
        self.pid = proc.pid
        self.stdin = proc.stdin
        self.stdout = None if capture_stdout else proc.stdout
        self.sandbox = sandbox
        self.timed_out = False
        self._supervised = supervised
        self._private_tmp: Path | None = private_tmp
        self._cgroup = cgroup
        self._started = time.monotonic()
        self._ended: float | None = None
        self._out = _Clip(max_output_bytes)
        self._err = _Clip(max_output_bytes)
        self._readers: list[asyncio.Task[None]] = []
        if capture_stdout and proc.stdout is not None:
            self._readers.append(asyncio.ensure_future(_drain(proc.stdout, self._out)))
        if proc.stderr is not None:
            self._readers.append(asyncio.ensure_future(_drain(proc.stderr, self._err)))
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(timeout_s, self._expire) if timeout_s is not None else None
        self._backstop: asyncio.TimerHandle | None = None

    @property
    def returncode(self) -> int | None:
        """The launcher's return code once it exited (negative: killed by that signal)."""
        return self._proc.returncode

    def _expire(self) -> None:
        self.timed_out = True
        self.kill()

    def kill(self) -> None:
        """Stop the command and everything it started; returns at once (signals are sent now).

        A supervising launcher gets ``SIGTERM`` (it kills its tree with ``SIGKILL``); otherwise the
        process group gets ``SIGKILL``. A second ``SIGKILL`` to the group follows after a second in
        case the launcher is stuck, and a root run's cgroup is emptied.
        """
        if self._proc.returncode is None:
            if self._supervised:
                _signal(self._proc.pid, signal.SIGTERM)
                if self._backstop is None:
                    loop = asyncio.get_running_loop()
                    self._backstop = loop.call_later(_KILL_GRACE_S, self._kill_group)
            else:
                self._kill_group()
        if self._cgroup is not None:
            self._cgroup.kill_all()

    def _kill_group(self) -> None:
        if self._proc.returncode is None:  # once reaped, the pid (and group id) may be reused
            _killpg(self._proc.pid)

    async def wait(self) -> int:
        """Wait for the launcher to exit; return its return code."""
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
        if self.timed_out:
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
        """Kill the tree if it still runs, reap it, remove the private directory and the cgroup."""
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
            self._cleanup()

    def _cleanup(self) -> None:
        if self._cgroup is not None:
            self._cgroup.release()
            self._cgroup = None
        if self._private_tmp is not None:
            shutil.rmtree(self._private_tmp, ignore_errors=True)
            self._private_tmp = None

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
    stderr is always captured (clipped at ``policy.limits.max_output_bytes``).

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
        OSError: When the launcher cannot be started at all (no Python executable).
    """
    _refuse_a_writable_launcher(policy)
    private_tmp = Path(tempfile.mkdtemp(prefix="steerable-sbx-"))
    cgroup: PidsCgroup | None = None
    try:
        plan = backend.plan(argv, policy, private_tmp=private_tmp)
        child_env = dict(child_environment() if env is None else env)
        child_env.update(plan.env)
        if sys.platform == "win32":  # no launcher (no resource limits) where no backend exists
            command = list(plan.argv)
        else:
            if sys.platform.startswith("linux"):
                cgroup = PidsCgroup.acquire(policy.limits.max_processes)
            procs = cgroup.procs_file if cgroup is not None else None
            command = launcher_argv(plan, policy, cgroup=procs)
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(policy.workdir),
            env=child_env,
            start_new_session=True,
            limit=PIPE_LIMIT_BYTES if stdout == "pipe" else _READ_CHUNK,
        )
    except BaseException:
        if cgroup is not None:
            cgroup.release()
        shutil.rmtree(private_tmp, ignore_errors=True)
        raise
    return SandboxedProcess(
        proc,
        sandbox=backend.info,
        supervised=plan.supervised,
        private_tmp=private_tmp,
        cgroup=cgroup,
        capture_stdout=stdout == "capture",
        max_output_bytes=policy.limits.max_output_bytes,
        timeout_s=timeout_s,
    )


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
        Exit code, captured output, timing and the backend.
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


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
