"""Background jobs of the container posture: what a ``bash`` command left running, kept on record.

In the container posture (``STEERABLE_SANDBOX=container``) a process a command starts and leaves
running (``server &``, ``nohup``, ``setsid``) outlives the call and the run. Each command runs
through the output relay (``_relay.py``) with ``STEERABLE`` set to a token of its own (as Claude
Code's commands get ``CLAUDECODE=1``), which every process it starts inherits; once the command
ended, the processes that carry the token or are still in its process group are its leftovers
(Linux: read from ``/proc``). The topmost of them are written to ``<state dir>/jobs/<pid>.json``
(pid, start time, command line, the command that started it, where its output goes), which
``steerable jobs`` lists and ``steerable jobs stop`` ends.

Commands can write that directory, so a record is trusted for nothing it says (:func:`_load`,
:func:`_started_here`): only a regular file ``<pid>.json`` of the right fields is read, its log must
be ``<token>.log`` in the directory (nothing outside it is ever deleted), and a process is signalled
only while it is one the token's command started. ``docs/sandbox.md``, "The container posture".
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import re
import secrets
import signal
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Final

from ..config import default_state_dir
from ..types import ToolResult
from ._pinning import PINNED_PYTHON

__all__ = [
    "JOB_TOKEN_ENV",
    "BackgroundJob",
    "JobWatch",
    "jobs_dir",
    "jobs_result",
    "list_jobs",
    "stop_jobs",
]

logger = logging.getLogger(__name__)

JOB_TOKEN_ENV: Final = "STEERABLE"
"""Set for each container-posture command to a token of its own; what it starts inherits it.

Not a setting (no ``STEERABLE_`` prefix, nothing reads it from steerable's own environment)."""

_RELAY: Final = Path(__file__).with_name("_relay.py")
_SHOWN: Final = 10  # leftovers named in the model's sentence
_COMMAND_CHARS: Final = 200  # of a command line kept on record
_PROC: Final = Path("/proc")
_TOKEN_HEX: Final = 16  # hex digits of a command's token, which names its log
_LOG_NAME: Final = re.compile(rf"(?P<token>[0-9a-f]{{{_TOKEN_HEX}}})\.log")
_RECORD_NAME: Final = re.compile(r"[1-9][0-9]*\.json")
_RECORD_MAX_BYTES: Final = 64 * 1024
_PID_MAX: Final = 1 << 22  # the kernel's PID_MAX_LIMIT
_TEXT_FIELDS: Final = ("command", "started_by", "workspace", "log")
_FIELDS: Final = frozenset({"pid", "started_at", "start_ticks", *_TEXT_FIELDS})


@dataclass(frozen=True, slots=True, kw_only=True)
class BackgroundJob:
    """A process a command left running, as recorded.

    Attributes:
        pid: Its process id.
        command: Its command line (arguments joined by spaces, at most 200 characters).
        started_at: When it started (seconds since the epoch).
        start_ticks: Its start time in clock ticks since boot, which tells it from a later process
            given the same pid.
        started_by: The ``bash`` command that left it running (at most 200 characters).
        workspace: Where that command ran.
        log: The file its output goes to once the call returned (created at its first byte):
            ``<jobs dir>/<token>.log``, named by the command's token.
        group: The command's process group (its relay's pid), which a process that cleared its
            environment (``env -i``) is still told by; 0 when unknown.
    """

    pid: int
    command: str
    started_at: float
    start_ticks: int
    started_by: str
    workspace: str
    log: str
    group: int = 0

    def as_data(self) -> dict[str, Any]:
        """What the ``bash`` result lists (``data.backgroundJobs``): ``pid``, ``command``, ``log``."""
        return {"pid": self.pid, "command": self.command, "log": self.log}

    def running(self) -> bool:
        """Whether it still runs, as the job recorded.

        Its pid names a live process with the recorded start time, one that the command named by
        its log started (:func:`_started_here`).
        """
        proc = _stat(self.pid)
        return (
            proc is not None
            and proc.start_ticks == self.start_ticks
            and proc.state != "Z"
            and _started_here(self, proc)
        )


def jobs_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``<state dir>/jobs``: the records and the output logs (``config.default_state_dir``)."""
    return default_state_dir(environ) / "jobs"


@dataclass(frozen=True, slots=True)
class JobWatch:
    """One container-posture command: its token, its relay, and what it left running.

    Attributes:
        directory: Where records and the log go (:func:`jobs_dir`).
        token: The command's ``STEERABLE`` (:data:`JOB_TOKEN_ENV`).
        since: Clock ticks since boot when it started, less a second (older processes are not its).
    """

    directory: Path
    token: str
    since: int

    @classmethod
    def begin(cls, environ: Mapping[str, str] | None = None) -> JobWatch:
        """A new token, and the jobs directory made (blocking: call it from a worker thread)."""
        directory = jobs_dir(environ)
        with contextlib.suppress(OSError):  # the log then stays unwritten, the command still runs
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return cls(directory, secrets.token_hex(_TOKEN_HEX // 2), max(_uptime_ticks() - _hertz(), 0))

    @property
    def log(self) -> Path:
        """The file what the command's leftovers print goes to."""
        return self.directory / f"{self.token}.log"

    def argv(self, argv: Sequence[str]) -> list[str]:
        """``argv`` through the output relay (``_relay.py``), marked with this watch's token."""
        if not hasattr(os, "fork"):
            return list(argv)
        mark = f"{JOB_TOKEN_ENV}={self.token}"
        return [PINNED_PYTHON, "-I", "-S", str(_RELAY), str(self.log), mark, "--", *argv]

    def leftovers(self, group: int, *, command: str, workspace: Path) -> list[BackgroundJob]:
        """The topmost processes the command left running, recorded (blocking; Linux, else ``[]``).

        Args:
            group: The command's process group (the relay's pid).
            command: The ``bash`` command, kept as ``started_by``.
            workspace: Where it ran.
        """
        if not _PROC.is_dir():
            return []
        marker = f"{JOB_TOKEN_ENV}={self.token}".encode()
        table = _process_table()
        found = {
            pid: proc
            for pid, proc in table.items()
            if proc.state != "Z"
            and proc.start_ticks >= self.since
            and (proc.group == group or _carries(pid, marker))
        }
        boot = _boot_time()
        jobs = [
            BackgroundJob(
                pid=pid,
                command=_command_line(pid),
                started_at=boot + proc.start_ticks / _hertz(),
                start_ticks=proc.start_ticks,
                started_by=command[:_COMMAND_CHARS],
                workspace=str(workspace),
                log=str(self.log),
                group=group,
            )
            for pid, proc in sorted(found.items())
            if proc.parent not in found  # what it started in turn goes with it
        ]
        _record(jobs, self.directory)
        return jobs


def jobs_result(result: ToolResult, jobs: Sequence[BackgroundJob]) -> ToolResult:
    """``result`` with the processes the command left running: ``data.backgroundJobs`` and a sentence.

    The sentence goes to ``message`` on success, after ``error`` on a failure. Unchanged when
    ``jobs`` is empty.
    """
    if not jobs:
        return result
    data = {**(result.data or {}), "backgroundJobs": [job.as_data() for job in jobs]}
    named = ", ".join(f"pid {job.pid} ({job.command})" for job in jobs[:_SHOWN])
    if len(jobs) > _SHOWN:
        named += f" and {len(jobs) - _SHOWN} more"
    one = len(jobs) == 1
    first = jobs[0]
    sentence = (
        f"{len(jobs)} {'process' if one else 'processes'} the command started {'is' if one else 'are'} "
        f"still running: {named}. {'It keeps' if one else 'They keep'} running after this call and after "
        f"the run, {'its' if one else 'their'} output going to {first.log}. Stop "
        f"{'it' if one else 'one'} with `kill {first.pid if one else 'PID'}` when it is no longer needed "
        "(`steerable jobs` lists what commands left running; `steerable jobs stop PID` stops one and "
        "what it started)."
    )
    if result.success:
        message = f"{result.message} {sentence}" if result.message else sentence
        return result.model_copy(update={"message": message, "data": data})
    return ToolResult.retry(f"{result.error} {sentence}", message=result.message, data=data)


def list_jobs(directory: Path) -> list[BackgroundJob]:
    """The recorded jobs still running, oldest first; records of ended ones are removed.

    Records are the files ``<pid>.json`` (other files are left alone). One that is not a record
    :func:`_load` accepts, or whose process is not running or not one its command started
    (:meth:`BackgroundJob.running`), is removed as ended. ``command`` is read again: a process
    recorded while it was still starting (a shim that execs the real program) shows what it runs now.
    """
    jobs = []
    for path in _records(directory):
        job = _load(path, directory)
        if job is not None and job.running():
            jobs.append(replace(job, command=_command_line(job.pid) or job.command))
        else:
            with contextlib.suppress(OSError):
                path.unlink()
    return sorted(jobs, key=lambda job: (job.started_at, job.pid))


def stop_jobs(
    jobs: Iterable[BackgroundJob], directory: Path, *, grace_s: float = 3.0
) -> list[tuple[BackgroundJob, str]]:
    """Stop each job and every process below it: ``SIGTERM``, then ``SIGKILL`` after ``grace_s``.

    Their records go, and their output logs once no recorded job writes there (only a log in
    ``directory``, ``<token>.log`` and ``<token>.log.1``: nothing outside it is deleted). A job that
    is not running, or whose process is not one its command started (:meth:`BackgroundJob.running`),
    is not signalled: it counts as ``"gone"``.

    Args:
        jobs: From :func:`list_jobs`.
        directory: Their records' directory.
        grace_s: How long the processes get to exit on ``SIGTERM``.

    Returns:
        Each job with how it ended: ``"stopped"`` (on ``SIGTERM``), ``"killed"`` (``SIGKILL``), or
        ``"gone"`` (it had ended already).
    """
    jobs = list(jobs)
    trees = _trees([job for job in jobs if job.running()])
    for signalled in trees.values():
        for pid, _ in signalled:
            _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(_alive(*entry) for each in trees.values() for entry in each) and time.monotonic() < deadline:
        time.sleep(0.02)
    outcome: list[tuple[BackgroundJob, str]] = []
    for job in jobs:
        tree = trees.get(job.pid)
        left = [pid for pid, ticks in tree or () if _alive(pid, ticks)]
        for pid in left:
            _signal(pid, signal.SIGKILL)
        outcome.append((job, "gone" if tree is None else "killed" if left else "stopped"))
        with contextlib.suppress(OSError):
            (directory / f"{job.pid}.json").unlink()
    kept = {name for job in list_jobs(directory) if (name := _log_name(job.log, directory))}
    ended = {name for job in jobs if (name := _log_name(job.log, directory))}
    for name in ended - kept:  # no job left writes there
        for each in (name, name + ".1"):
            with contextlib.suppress(OSError):
                (directory / each).unlink()
    return outcome


def _trees(jobs: Sequence[BackgroundJob]) -> dict[int, list[tuple[int, int]]]:
    """Each job's pid with the processes below it, as ``(pid, start ticks)``, the job first."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, proc in table.items():
        children.setdefault(proc.parent, []).append(pid)
    trees: dict[int, list[tuple[int, int]]] = {}
    for job in jobs:
        tree, queue = [], [job.pid]
        while queue:
            pid = queue.pop(0)
            if pid in table:
                tree.append((pid, table[pid].start_ticks))
                queue += children.get(pid, [])
        trees[job.pid] = tree
    return trees


@dataclass(frozen=True, slots=True)
class _Proc:
    state: str
    parent: int
    group: int
    session: int
    start_ticks: int


def _stat(pid: int) -> _Proc | None:
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2 :].split()  # after the command name, which may hold anything
    return _Proc(fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]))


def _process_table() -> dict[int, _Proc]:
    table = {}
    for entry in os.listdir(_PROC) if _PROC.is_dir() else ():
        if entry.isdigit() and (proc := _stat(int(entry))) is not None:
            table[int(entry)] = proc
    return table


def _carries(pid: int, marker: bytes) -> bool:
    try:
        return marker in (_PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:  # another user's process, or gone
        return False


def _started_here(job: BackgroundJob, proc: _Proc) -> bool:
    """Whether ``proc``, the live process at ``job.pid``, is one the job's command started.

    The token is the name of the job's log (``<token>.log``). The process carries
    ``STEERABLE=<token>`` in its environment; or, having cleared its environment (``env -i``),
    which :meth:`JobWatch.leftovers` records by its process group, it is still in the command's
    process group and session (``job.group``, the relay's pid, the leader of both; not the
    process's own pid), and their leader has exited, as the relay has once its command ended.
    An environment that cannot be read (another user's process, a non-dumpable one) counts as no
    job's.
    """
    name = _LOG_NAME.fullmatch(os.path.basename(job.log))
    if name is None:
        return False
    try:
        environ = (_PROC / str(job.pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return False
    if not _alive(job.pid, job.start_ticks):  # the pid went to another process meanwhile
        return False
    if f"{JOB_TOKEN_ENV}={name['token']}".encode() in environ:
        return True
    return (
        0 < job.group != job.pid
        and proc.group == proc.session == job.group
        and not _alive(job.group, None)  # the relay, which led both, has exited
    )


def _command_line(pid: int) -> str:
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")[:_COMMAND_CHARS]


def _alive(pid: int, ticks: int | None) -> bool:
    """Whether ``pid`` names a live process (started at ``ticks``, unless ``None``)."""
    proc = _stat(pid)
    return proc is not None and ticks in (None, proc.start_ticks) and proc.state != "Z"


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


@functools.cache
def _hertz() -> int:
    return os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _uptime_ticks() -> int:
    try:
        return int(float((_PROC / "uptime").read_text().split()[0]) * _hertz())
    except (OSError, ValueError, IndexError):
        return 0


def _boot_time() -> float:
    try:
        for line in (_PROC / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        pass
    return time.time() - _uptime_ticks() / _hertz()


def _record(jobs: Sequence[BackgroundJob], directory: Path) -> None:
    """One ``<pid>.json`` per job, written whole (a temporary file renamed into place)."""
    for job in jobs:
        path = directory / f"{job.pid}.json"
        temporary = directory / f".{job.pid}.{os.getpid()}.tmp"
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(asdict(job), fh)
            os.replace(temporary, path)
        except OSError as exc:
            logger.warning("steerable: background job %d not recorded in %s: %s", job.pid, directory, exc)
            with contextlib.suppress(OSError):
                temporary.unlink()


def _records(directory: Path) -> list[Path]:
    """The records in ``directory``: its files named ``<pid>.json``."""
    try:
        names = os.listdir(directory)
    except OSError:  # none yet
        return []
    return [directory / name for name in sorted(names) if _RECORD_NAME.fullmatch(name)]


def _load(path: Path, directory: Path) -> BackgroundJob | None:
    """The job a record holds, or ``None`` for anything :func:`_record` did not write.

    The record is a regular file, not a symbolic link (opened with ``O_NOFOLLOW``), of at most
    64 KiB: a JSON object of :class:`BackgroundJob`'s fields (``group`` may be missing), its
    integers integers (not ``true``), its pid the record's name, its texts strings, and its log
    ``<token>.log`` in ``directory`` (:func:`_log_name`).
    """
    raw = _read_regular(path)
    if raw is None:
        return None
    try:
        fields = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    job = _job(fields) if isinstance(fields, dict) else None
    if job is None or path.name != f"{job.pid}.json" or _log_name(job.log, directory) is None:
        return None
    return job


def _read_regular(path: Path) -> bytes | None:
    flags = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)  # not a link; a FIFO does not block
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            raw = fh.read(_RECORD_MAX_BYTES + 1)
        except OSError:
            return None
    return raw if len(raw) <= _RECORD_MAX_BYTES else None


def _job(fields: dict[str, Any]) -> BackgroundJob | None:
    """``fields`` as a job when they are its fields, each of its type, else ``None``."""
    if not _FIELDS <= fields.keys() <= _FIELDS | {"group"}:
        return None
    pid, ticks, group = fields["pid"], fields["start_ticks"], fields.get("group", 0)
    started = fields["started_at"]
    whole = all(type(value) is int for value in (pid, ticks, group))
    if not whole or not (0 < pid < _PID_MAX and 0 <= group < _PID_MAX and ticks >= 0):
        return None
    if type(started) not in (int, float) or not math.isfinite(started):
        return None
    if not all(type(fields[name]) is str for name in _TEXT_FIELDS):
        return None
    text = {name: fields[name] for name in _TEXT_FIELDS}
    return BackgroundJob(pid=pid, started_at=float(started), start_ticks=ticks, group=group, **text)


def _log_name(log: str, directory: Path) -> str | None:
    """The name of ``log`` when it is a command's log in ``directory`` (``<token>.log``), else ``None``.

    Its folder is ``directory`` spelled alike (made absolute) or reached another way (the same
    directory on disk). Only ``directory / name`` is ever deleted, whatever the record says.
    """
    parent, name = os.path.split(log)
    if not parent or _LOG_NAME.fullmatch(name) is None:
        return None
    if os.path.abspath(parent) == os.path.abspath(directory):
        return name
    try:
        return name if os.path.samefile(parent, directory) else None
    except OSError:
        return None
