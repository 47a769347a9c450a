"""A sandboxed command started by someone else (an editor's terminal), watched and stopped from here.

``steerable acp --editor-terminal`` shows ``bash`` in the editor's terminal (ACP
``terminal/create``). The editor starts the process, so nothing can reach it but its command line:
no descriptor (bubblewrap's info, block and sync pipes, its seccomp pipe), no cgroup it was forked
into. The launcher (``_launch.py``) needs neither: it makes the seccomp pipe itself, joins the
run's cgroups by their ``cgroup.procs`` files and sets the limits, so its words are the whole
sandbox. Even those are not handed over: a client may join the words into a shell line unquoted,
and a protected path inside the workspace (a folder the model named) is among them. The editor
gets ``python -I -S <pinned _trampoline.pyc> <private run directory>`` (checked to be plain words)
and the rest waits in ``RUN_DIR/plan.json`` (0700, outside every writable root): the launcher's
argv, the allowlisted environment (not the editor's), the folder. :func:`run_in_terminal` then
watches the trampoline through a pidfd, applies the deadline, reads the command's output and exit
status from the files the trampoline writes, and stops it (``SIGTERM`` to the trampoline, which
the launcher turns into killing the tree; ``SIGKILL`` and the cgroups after a second). When
anything of that cannot be done the command is not handed over (``None``): the caller runs it in
its own runner, never unsandboxed. Linux only.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ._backend import SandboxBackend, SandboxInfo
from ._launch import EXIT_SETUP
from ._output import RunResult, captured
from ._pinning import PINNED_PYTHON, launcher_argv, refuse_a_writable_launcher, trampoline_code
from ._policy import SandboxPolicy
from ._process import acquire_limited, release_later, setup_executor

if TYPE_CHECKING:
    from ..context import TerminalHost
    from ._cgroup import RunCgroup

__all__ = ["START_TIMEOUT_S", "run_in_terminal"]

logger = logging.getLogger(__name__)

START_TIMEOUT_S: Final = 10.0
"""How long the terminal may take to start the trampoline before the command is withdrawn."""

_KILL_GRACE_S: Final = 1.0
_LATE_PID_S: Final = 2.0
"""How long a plan taken but never attached may take to show its ``pid`` (written right after the fork)."""
_PLAIN_WORD: Final = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


class _Lost(Exception):
    """The terminal took the plan but never said it started the launcher: it may have run."""


class _HandOff:
    """One command waiting in its run directory for the terminal to start it (see the module)."""

    def __init__(self, run: Path, private_tmp: Path, cgroup: RunCgroup | None, sandbox: SandboxInfo) -> None:
        self.run = run
        self.private_tmp = private_tmp
        self.cgroup = cgroup
        self.sandbox = sandbox
        self.words = [PINNED_PYTHON, "-I", "-S", trampoline_code(), str(run)]
        self.trampoline: int | None = None  # pidfds: the trampoline's, the launcher's
        self.launcher: int | None = None
        self.started = time.monotonic()
        self.timed_out = False
        self.memory_exceeded = False
        self.withdrawn = False
        self._backstop: asyncio.TimerHandle | None = None

    @classmethod
    def prepare(
        cls,
        argv: Sequence[str],
        policy: SandboxPolicy,
        *,
        backend: SandboxBackend,
        env: Mapping[str, str],
    ) -> _HandOff:
        """Plan the run and write it down (blocking: a worker thread). Raises ``SandboxUnavailableError``."""
        private_tmp = Path(tempfile.mkdtemp(prefix="steerable-sbx-"))
        run = Path(tempfile.mkdtemp(prefix="steerable-term-"))
        cgroup: RunCgroup | None = None
        try:
            plan = backend.plan(argv, policy, private_tmp=private_tmp)
            refuse_a_writable_launcher(policy)
            limits = policy.limits
            cgroup = acquire_limited(max_processes=limits.max_processes, memory_bytes=limits.memory_bytes)
            words = launcher_argv(plan, policy, cgroups=cgroup.procs_files if cgroup is not None else ())
            written = {
                "argv": words,
                "env": {**env, **plan.env},
                "cwd": str(policy.workdir),
                "cap": limits.max_output_bytes,
            }
            (run / "plan.json").write_text(json.dumps(written), encoding="utf-8")
        except BaseException:
            if cgroup is not None:
                release_later(cgroup)
            _remove(private_tmp, run)
            raise
        return cls(run, private_tmp, cgroup, backend.info)

    def plain(self) -> bool:
        """Whether every word survives a shell line built without quotes (the only way it is sent)."""
        return all(_PLAIN_WORD.fullmatch(word) for word in self.words)

    def out_of_reach(self, policy: SandboxPolicy) -> bool:
        """Whether the run directory lies outside every writable root.

        A command running meanwhile (the same batch, the same user) could rewrite a plan it can
        reach (``0700`` keeps other users out, not this one) before the trampoline reads it: a
        workspace that holds the temporary directory (``/tmp`` itself) must not get its plans there.
        """
        run = os.path.realpath(self.run)
        for root in policy.writable_roots:
            real = os.path.realpath(root).rstrip("/") + "/"
            if (run + "/").startswith(real):
                return False
        return True

    def withdraw(self) -> bool:
        """Take the plan back unless the trampoline took it; ``True`` when taken back, now or before."""
        if self.withdrawn:
            return True
        try:
            os.rename(self.run / "plan.json", self.run / "withdrawn.json")
        except FileNotFoundError:
            return False
        self.withdrawn = True  # never to run
        return True

    async def attach(self, timeout_s: float) -> bool:
        """Wait for the trampoline's ``pid``; ``False`` when it never took the plan (now withdrawn).

        Raises:
            _Lost: It took the plan but wrote no ``pid`` within ``timeout_s`` more.
        """
        deadline = time.monotonic() + timeout_s
        claimed = False
        while not (self.run / "pid").exists():
            if time.monotonic() > deadline:
                if claimed:
                    raise _Lost
                if self.withdraw():
                    return False
                claimed, deadline = True, time.monotonic() + timeout_s
            await asyncio.sleep(0.01)
        self._take_pids()
        return True

    def _take_pids(self) -> None:
        """Open pidfds of the trampoline and the launcher from ``pid`` (``OSError``: not written)."""
        words = (self.run / "pid").read_text(encoding="utf-8").split()
        self.trampoline, self.launcher = (_pidfd(int(word)) for word in words[:2])

    async def late_attach(self, timeout_s: float) -> None:
        """After the plan was taken but never attached: wait up to ``timeout_s`` for ``pid``, to stop it.

        The trampoline writes ``pid`` right after it forks the launcher, so a command a cancel
        caught between the claim and :meth:`attach` reading ``pid`` is found here and killed by
        :meth:`kill`, instead of running to its end in the launcher's own session.
        """
        deadline = time.monotonic() + timeout_s
        try:
            while not (self.run / "pid").exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        finally:  # a second cancel ends the wait, not the search: what is written is read
            with contextlib.suppress(OSError, ValueError):
                self._take_pids()

    async def finish(self, timeout_s: float | None) -> RunResult:
        """Wait for the trampoline's end (or the deadline: stopped), then read what it wrote."""
        loop = asyncio.get_running_loop()
        if self.trampoline is not None:  # else it ended already
            ended: asyncio.Future[None] = loop.create_future()

            def exited() -> None:
                if not ended.done():
                    ended.set_result(None)

            loop.add_reader(self.trampoline, exited)
            oom = self.cgroup.oom_fd if self.cgroup is not None else None
            if oom is not None:
                loop.add_reader(oom, self._out_of_memory)
            try:
                left = None if timeout_s is None else max(0.0, timeout_s - (time.monotonic() - self.started))
                try:
                    await asyncio.wait_for(asyncio.shield(ended), left)
                except TimeoutError:
                    self.timed_out = True
                    self.stop()
                    with contextlib.suppress(TimeoutError):  # still there: killed on the way out
                        await asyncio.wait_for(asyncio.shield(ended), _KILL_GRACE_S + 2)
            except BaseException:
                self.stop()
                raise
            finally:
                loop.remove_reader(self.trampoline)
                if oom is not None:
                    loop.remove_reader(oom)
        if self.cgroup is not None and not self.memory_exceeded:
            self.memory_exceeded = self.cgroup.memory_exceeded()
        return await loop.run_in_executor(setup_executor(), self.result)

    def _out_of_memory(self) -> None:
        if self.cgroup is None:
            return
        if self.cgroup.oom_fd is not None:
            with contextlib.suppress(OSError):
                os.eventfd_read(self.cgroup.oom_fd)
        if self.cgroup.memory_exceeded():
            self.memory_exceeded = True
            self.stop()

    def result(self, problem: str | None = None) -> RunResult:
        """What the trampoline wrote; ``problem`` (or none written: killed) is exit 125/137 with a line."""

        def part(name: str) -> bytes:
            with contextlib.suppress(OSError):
                return (self.run / name).read_bytes()
            return b""

        status = None if problem is not None else _status(self.run / "status.json")
        if status is not None:
            exit_code: int | None = status[0]
            totals, note = status[1:], b""
        else:  # refused, or killed before it could say
            exit_code = EXIT_SETUP if problem is not None else 128 + signal.SIGKILL
            totals = (0, 0)
            said = problem or "the terminal's process was killed before the command ended"
            note = f"steerable-sandbox: {said}\n".encode()
        stderr_head = part("stderr.head") + note
        return RunResult(
            exit_code=None if self.timed_out else exit_code,
            timed_out=self.timed_out,
            stdout=captured(part("stdout.head"), part("stdout.tail"), totals[0]),
            stderr=captured(stderr_head, part("stderr.tail"), totals[1] + len(note)),
            duration_ms=(time.monotonic() - self.started) * 1000,
            sandbox=self.sandbox,
            memory_exceeded=self.memory_exceeded,
        )

    def stop(self) -> None:
        """``SIGTERM`` to the trampoline now (the launcher kills the tree); ``SIGKILL`` a second later."""
        if self.trampoline is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.trampoline, signal.SIGTERM)
        if self._backstop is None:
            self._backstop = asyncio.get_running_loop().call_later(_KILL_GRACE_S, self.kill)

    def kill(self) -> None:
        """``SIGKILL`` to both processes and everything in the run's cgroups, now."""
        for fd in (self.trampoline, self.launcher):
            if fd is not None:
                with contextlib.suppress(OSError):  # the process gone: a pidfd never names another
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
        if self.cgroup is not None:
            self.cgroup.kill_all()

    async def close(self) -> None:
        """Withdraw the plan if still waiting, kill what still runs, give everything back."""
        self.withdraw()
        self.kill()
        if self._backstop is not None:
            self._backstop.cancel()
        for fd in (self.trampoline, self.launcher):
            if fd is not None:
                os.close(fd)
        self.trampoline = self.launcher = None
        if self.cgroup is not None:
            release_later(self.cgroup)
            self.cgroup = None
        job = functools.partial(_remove, self.run, self.private_tmp)
        await asyncio.get_running_loop().run_in_executor(setup_executor(), job)


def _status(path: Path) -> tuple[int, int, int] | None:
    """``status.json``'s exit status and stdout and stderr totals; ``None`` when it is not there (whole)."""
    try:
        status = json.loads(path.read_text(encoding="utf-8"))
        return int(status["exit"]), int(status["stdout"]), int(status["stderr"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _pidfd(pid: int) -> int | None:
    """A pidfd of ``pid``, or ``None`` when it is gone already (its status file says how it ended)."""
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _remove(*paths: Path) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


async def run_in_terminal(
    host: TerminalHost,
    argv: Sequence[str],
    policy: SandboxPolicy,
    *,
    backend: SandboxBackend,
    env: Mapping[str, str],
    timeout_s: float | None,
) -> RunResult | None:
    """Run ``argv`` sandboxed in ``host``'s terminal; ``None`` when it cannot be (the caller runs it).

    Args:
        host: The terminal (``CallContext.terminal``).
        argv: The command, as ``SandboxSpawner.spawn`` takes it.
        policy: Its policy (the spawner's).
        backend: From ``SandboxSpawner.select``.
        env: The child's environment (``SandboxSpawner.environment()``).
        timeout_s: The wall-clock deadline from now; on expiry the command is stopped.

    Returns:
        How the run ended, as the runner reports it; ``None`` when it was not handed over (not
        Linux, a word that is not plain, a run directory a command could write, a container
        posture plan, no terminal, or the
        trampoline never started: withdrawn, so it never will). Why is logged.

    Raises:
        SandboxUnavailableError: The interpreter lies inside a writable root (as the runner).
    """
    if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        logger.info("bash: the editor's terminal is used on Linux only; running the command here")
        return None
    loop = asyncio.get_running_loop()
    job = functools.partial(_HandOff.prepare, argv, policy, backend=backend, env=env)
    handoff = await loop.run_in_executor(setup_executor(), job)
    terminal: str | None = None
    ran = False
    try:
        if not handoff.plain():
            logger.warning(
                "bash: a word of the sandbox's start is not plain (%s); running it here", handoff.words
            )
            return None
        if not handoff.out_of_reach(policy):
            logger.warning(
                "bash: the temporary directory (%s) is writable from the sandbox; running the command here",
                handoff.run.parent,
            )
            return None
        try:
            terminal = await host.open(handoff.words[0], handoff.words[1:], cwd=str(policy.workdir))
        except Exception as exc:  # the editor refused: the command runs here, sandboxed as always
            logger.warning(
                "bash: the editor's terminal could not be made (%s); running the command here", exc
            )
            return None
        try:
            if not await handoff.attach(START_TIMEOUT_S):
                logger.warning(
                    "bash: the editor's terminal did not start the command in %.0f s", START_TIMEOUT_S
                )
                return None
        except _Lost:
            ran = True
            return handoff.result("the editor's terminal took the command but never reported starting it")
        ran = True
        return await handoff.finish(timeout_s)
    finally:
        try:
            if not handoff.withdraw() and handoff.trampoline is None:
                # taken, and never attached (a cancel while attach() polled): find it to stop it
                await handoff.late_attach(_LATE_PID_S)
        finally:
            handoff.kill()  # before the terminal goes: nothing of the command outlives the call
            if terminal is not None:
                with contextlib.suppress(Exception):
                    await host.close(terminal, ran=ran)
            await handoff.close()
