"""bubblewrap without the launcher: limits and cgroups applied to the sandbox from outside.

The runner starts ``bwrap --info-fd --block-fd --sync-fd ...`` itself. bubblewrap reports the pid
of the sandbox's first process on the info pipe; that process builds the sandbox and waits on the
block pipe. Meanwhile, off the event loop, :func:`prepare_sandbox` sets its limits with
``prlimit`` and checks it is in the run's cgroups; only then is the byte written that lets it fork
the command, which inherits both. The block pipe never reads end-of-file (its write end is also
``--sync-fd``, held by the sandbox's init), so a runner that dies first leaves the command unrun.
A failed step kills the tree: exit status 125 and ``steerable-sandbox: setup failed, ...`` on
stderr, as the launcher reports it. The sequence and its timings: ``docs/sandbox.md``, "Starting
a command".
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import select
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ._backend import LaunchPlan
from ._cgroup import RunCgroup
from ._launch import SetupError, deny_list, rlimits, seccomp_pipe, setup_failure, user_tasks
from ._policy import ResourceLimits, SandboxPolicy
from ._process import Process, Spawned, pidfd_works, start_process

__all__ = ["Prepared", "SandboxInit", "prepare_sandbox", "spawn_direct"]

_SETUP_TIMEOUT_S: Final = 10.0  # bubblewrap reports its sandbox's pid within this, or the run fails


class SandboxInit:
    """The sandbox's first process (bubblewrap's PID 1 in its namespace), held by a pidfd if possible."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.pidfd: int | None = None
        if pidfd_works():
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
class Prepared:
    """A sandbox made ready to run: its init process, when each step ended (monotonic s), or why not."""

    init: SandboxInit | None
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
    return user_tasks(os.getuid()) + max_processes


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


def prepare_sandbox(
    info_fd: int, bwrap_pid: int, limits: ResourceLimits, cgroup: RunCgroup | None
) -> Prepared:
    """Blocking (run in a worker thread): make a waiting bubblewrap sandbox ready to run the command.

    Reads the sandbox's pid, checks it is bubblewrap's child, sets its limits, and checks it is in
    every cgroup of the run (it is when bubblewrap was forked inside them; otherwise it is moved
    in now). Owns ``info_fd`` (closes it). On failure the sandbox's init (when known) is already
    killed and ``error`` says why: the command never runs. When the sandbox is already gone
    (bubblewrap failed on its own, its message is on stderr) nothing is set and ``init`` is
    ``None``.
    """
    marks: dict[str, float] = {}
    init: SandboxInit | None = None
    try:
        pid = _read_sandbox_pid(info_fd, _SETUP_TIMEOUT_S)
        marks["sandbox_pid"] = time.monotonic()
        if pid is None:
            return Prepared(None, marks)
        init = SandboxInit(pid)
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
        return Prepared(init, marks)
    except ProcessLookupError:  # the sandbox died on its own before it could run anything
        if init is not None:
            init.close()
        return Prepared(None, marks)
    except (SetupError, OSError, ValueError) as exc:
        if init is not None:  # killed now; bubblewrap reaps it and exits (no zombie left to PID 1)
            init.kill()
        return Prepared(init, marks, error=setup_failure(exc))
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


async def spawn_direct(
    plan: LaunchPlan, policy: SandboxPolicy, *, stdin: bool, env: Mapping[str, str], limit: int
) -> tuple[Process, Spawned, tuple[int, int]]:
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
            filter_r = seccomp_pipe(deny_list(plan.seccomp_deny))
            theirs.append(filter_r)
            argv[plan.seccomp_fd_at] = str(filter_r)
        # --sync-fd: bubblewrap's init holds the block pipe's write end too (closing it only in
        # the command), so the block never reads EOF unless this process writes the byte
        argv[1:1] = ["--info-fd", str(info_w), "--block-fd", str(block_r), "--sync-fd", str(block_w)]
        proc, spawned = await start_process(
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
