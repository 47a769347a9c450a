"""The async runner shared by ``bash`` and ``run_code``: spawn under a backend, capture, time out, kill.

:func:`spawn_sandboxed` starts a command and returns a :class:`SandboxedProcess` (stderr, and
stdout unless piped, captured with a byte cap; ``stdin`` optionally a pipe; a deadline or a
cancellation tears the whole tree down); :func:`run_sandboxed` is the one-shot form returning a
:class:`RunResult`. A ``direct`` plan (bubblewrap) is started here and released once
``_handshake.py`` set its limits and cgroups; the others go through the launcher (``_launch.py``,
pinned by ``_pinning.py``); ``_process.py`` starts the process in the run's cgroups and watches
it exit. The teardown per backend: ``docs/sandbox.md``, "Starting a command".
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Final, Literal

from ._backend import SandboxBackend, SandboxInfo
from ._cgroup import RunCgroup
from ._handshake import Prepared, SandboxInit, prepare_sandbox, spawn_direct
from ._launch import EXIT_SETUP, SETUP_FAILED
from ._output import PIPE_LIMIT_BYTES, READ_CHUNK, Clip, OutputObserver, RunResult
from ._pinning import launcher_argv, refuse_a_writable_launcher
from ._policy import ResourceLimits, SandboxPolicy, child_environment
from ._process import PidfdProcess, Process, killpg, release_later, send_signal, setup_executor, start_process

__all__ = ["SandboxedProcess", "run_sandboxed", "spawn_sandboxed"]

logger = logging.getLogger(__name__)

_KILL_GRACE_S: Final = 1.0  # a supervising launcher (or bwrap, after its sandbox died) gets this long
_DRAIN_GRACE_S: Final = 2.0  # after exit, how long the output pipes may stay open

_OOM_CHECK_S: Final = 0.005  # after an OOM notification, the run's oom_kill count is read this often...
_OOM_CHECKS: Final = 200  # ...this many times (1 s: the kill follows the notification, later under load)


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
        proc: Process,
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
        on_output: OutputObserver | None = None,
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
        self._init: SandboxInit | None = None
        self._setup_error = setup_error
        self._stopping = False
        self._started = time.monotonic() if started is None else started
        self.startup_ms: dict[str, float] = {"spawned": (time.monotonic() - self._started) * 1000}
        self._ended: float | None = None
        self._out = Clip(max_output_bytes)
        self._err = Clip(max_output_bytes)
        self._readers: list[asyncio.Task[None]] = []
        if capture_stdout and proc.stdout is not None:
            self._readers.append(asyncio.ensure_future(_drain(proc.stdout, self._out, "stdout", on_output)))
        if proc.stderr is not None:
            self._readers.append(asyncio.ensure_future(_drain(proc.stderr, self._err, "stderr", on_output)))
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
                    send_signal(self._proc.pid, signal.SIGTERM)
                if self._backstop is None:
                    self._backstop = self._loop.call_later(_KILL_GRACE_S, self._kill_group)
                return
            killpg(self._proc.pid)
        if self._cgroup is not None:
            self._cgroup.kill_all()

    def _kill_group(self) -> None:
        if self._proc.returncode is None:  # once reaped, the pid (and group id) may be reused
            killpg(self._proc.pid)
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
            if isinstance(self._proc, PidfdProcess):
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
            release_later(self._cgroup)
            self._cgroup = None
        if self._private_tmp is not None:
            private, self._private_tmp = self._private_tmp, None
            try:
                private.rmdir()  # bubblewrap never writes it: empty, gone at once
            except OSError:
                await asyncio.shield(self._loop.run_in_executor(setup_executor(), _remove_tree, private))

    async def _start_sandbox(self, info_fd: int, block_fd: int, limits: ResourceLimits) -> None:
        """Prepare a waiting bubblewrap sandbox off the loop, then let it fork the command.

        Owns both descriptors. When preparing fails the block is never released: the tree is
        killed and :meth:`finish` reports exit status 125 with the reason.
        """
        try:
            if self._setup_error is not None:  # the spawn already failed to limit the run
                os.close(info_fd)
                return
            job = functools.partial(prepare_sandbox, info_fd, self.pid, limits, self._cgroup)
            future = self._loop.run_in_executor(setup_executor(), job)
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

    def _adopt(self, ready: Prepared) -> None:
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
    on_output: OutputObserver | None = None,
) -> SandboxedProcess:
    """Start ``argv`` under ``backend`` with ``policy``; the caller talks to it, then closes it.

    The command runs in its own session and process group, in ``policy.workdir``, with ``env``
    (default: :func:`child_environment` of this process) plus the run's private ``TMPDIR``.
    stderr is always captured (clipped at ``policy.limits.max_output_bytes``). When this returns,
    the sandbox is set up and the command has been let go (or the setup failed, and
    :meth:`SandboxedProcess.finish` reports exit status 125). A JSON-lines child (``run_code``)
    takes ``stdin=True, stdout="pipe"``: the example in ``docs/sandbox.md``, "Building on it".

    Args:
        argv: The command and its arguments.
        policy: Writable roots, network, limits.
        backend: From :func:`select_backend`.
        env: The child's whole environment before ``TMPDIR`` is set (default: the allowlist).
        stdin: Give the command a stdin pipe (``proc.stdin``); otherwise it reads ``/dev/null``.
        stdout: ``"capture"`` (clipped, in the result) or ``"pipe"`` (``proc.stdout``, unclipped,
            lines up to :data:`PIPE_LIMIT_BYTES`).
        timeout_s: Wall-clock deadline from now, in seconds; when it passes the tree is killed and
            ``timed_out`` set.
        on_output: Sees each read of the captured streams as it comes (``bash``'s live output);
            it must return at once. An observer that raises is dropped (logged), the capture
            goes on.

    Returns:
        The running process.

    Raises:
        SandboxUnavailableError: The interpreter running steerable lies inside a writable root.
        OSError: When the sandbox cannot be started at all (no ``bwrap``, no Python executable).
    """
    started = time.monotonic()
    private_tmp = Path(tempfile.mkdtemp(prefix="steerable-sbx-"))
    try:
        plan = backend.plan(argv, policy, private_tmp=private_tmp)
        if not plan.detached:  # a detached command may write anywhere anyway: no launcher to guard
            refuse_a_writable_launcher(policy)
        child_env = dict(child_environment() if env is None else env)
        child_env.update(plan.env)
        limit = PIPE_LIMIT_BYTES if stdout == "pipe" else READ_CHUNK
        linux = sys.platform.startswith("linux")

        def make_argv(missing: tuple[Path, ...]) -> list[str]:
            if sys.platform == "win32" or plan.detached:  # no launcher: no resource limits
                return list(plan.argv)
            return launcher_argv(plan, policy, cgroups=missing)

        handshake: tuple[int, int] | None = None
        if plan.direct and linux:
            proc, spawned, handshake = await spawn_direct(
                plan, policy, stdin=stdin, env=child_env, limit=limit
            )
        else:
            proc, spawned = await start_process(
                make_argv,
                policy.limits if linux and not plan.detached else None,  # run cgroups kill leftovers
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
        on_output=on_output,
    )
    if handshake is not None:
        try:
            await process._start_sandbox(*handshake, policy.limits)
        except BaseException:
            await process.close()
            raise
    return process


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


async def _drain(
    stream: asyncio.StreamReader, clip: Clip, name: str, observe: OutputObserver | None = None
) -> None:
    while chunk := await stream.read(READ_CHUNK):
        clip.feed(chunk)
        if observe is not None:
            try:
                observe(name, chunk)
            except Exception:  # never stop reading: a full pipe would stall the command
                logger.exception("the %s observer failed; the output is still captured", name)
                observe = None


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
