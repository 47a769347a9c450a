"""Per-run cgroups: the process count and the memory of a whole command, however many processes it forks.

``RLIMIT_NPROC`` does not bind root and ``RLIMIT_AS`` bounds one process's address space, not a
command's memory (nor the tmpfs pages it writes), so each run gets cgroups of its own where the
controllers are writable: ``pids`` (root only) at ``max_processes`` and ``memory`` (anyone who
can write the parent) at ``memory_bytes`` for the whole tree, tmpfs and swap included. cgroup v1
has one directory per hierarchy; cgroup v2 one directory for the controllers in the parent's
``cgroup.subtree_control``. New cgroups are children of this process's own; emptied ones are
pooled while clean (no process counted, no memory charged), the rest removed; every one this
process made is removed when it exits (:func:`remove_run_cgroups`: at exit, and before a
signal's exit), and what a killed sidecar left is swept by the next one.

The limit files, the OOM reporting, the cost of joining and the pool's rules: ``docs/sandbox.md``,
"Starting a command" (limits in detail); what holds without a writable controller: its "Known gaps".
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

__all__ = [
    "CgroupParent",
    "RunCgroup",
    "cgroup_parents",
    "find_cgroup_parents",
    "pids_cgroup_parent",
    "remove_run_cgroups",
    "sweep_stale",
]

logger = logging.getLogger(__name__)

CONTROLLERS: Final = ("pids", "memory")
"""The controllers a run's cgroups use."""
CLEAN_BYTES: Final = 2 * 1024 * 1024
"""A pooled memory cgroup must be charged with at most this much (2 MiB; an empty one holds about 0.5 MB)."""

_PREFIX: Final = "steerable-"
_SETTLE_S: Final = 0.2  # tmpfs pages are uncharged once the sandbox's mount namespace is torn down
_REAP_S: Final = 5.0  # how long a released cgroup waits for its last zombies to be reaped (by PID 1)
_counter = itertools.count()
_PoolKey = tuple[tuple[Path, frozenset[str]], ...]  # (parent, controllers used) per directory
_pool: dict[_PoolKey, list[RunCgroup]] = {}
_pool_lock = threading.Lock()
_made: set[RunCgroup] = set()  # every run cgroup this process made and has not removed (pooled or not)
_made_at_exit: list[bool] = []  # [True] once remove_run_cgroups is registered with atexit
_REMOVE_S: Final = 1.0  # remove_run_cgroups' patience, then what is still busy is left to the sweep


@dataclass(frozen=True, slots=True)
class CgroupParent:
    """A directory where run cgroups are created, and the controllers they get there.

    Attributes:
        path: This process's own cgroup in one hierarchy (writable).
        version: 1 (one hierarchy per controller) or 2 (the unified hierarchy).
        controllers: The controllers of :data:`CONTROLLERS` a run cgroup here carries.
    """

    path: Path
    version: Literal[1, 2]
    controllers: frozenset[str]


def _own_cgroups(proc_cgroup: str) -> tuple[dict[str, str], str | None]:
    """``({v1 controller: path}, v2 path)`` from the text of ``/proc/self/cgroup``."""
    v1: dict[str, str] = {}
    v2 = None
    for line in proc_cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2 = path
        for name in controllers.split(","):
            if name in CONTROLLERS:
                v1[name] = path
    return v1, v2


def _mount_points(mountinfo: str) -> tuple[dict[str, str], str | None]:
    """``({v1 controller: mount point}, v2 mount point)`` from the text of ``/proc/self/mountinfo``."""
    v1: dict[str, str] = {}
    v2 = None
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        point, fstype, options = fields[4], tail[0], tail[2].split(",")
        if fstype == "cgroup":
            for name in CONTROLLERS:
                if name in options:
                    v1.setdefault(name, point)
        elif fstype == "cgroup2" and v2 is None:
            v2 = point
    return v1, v2


def find_cgroup_parents(proc_cgroup: str, mountinfo: str, *, root: bool) -> tuple[CgroupParent, ...]:
    """Where this process may create run cgroups, and with which controllers.

    ``pids`` is used for root only (``RLIMIT_NPROC`` bounds anyone else); ``memory`` for anyone
    who can write the parent. A cgroup v1 controller needs its hierarchy mounted and this
    process's cgroup there writable; a cgroup v2 controller needs to be listed in this process's
    ``cgroup.subtree_control`` (so its children get it). Both v2 controllers share one directory.

    Args:
        proc_cgroup: The text of ``/proc/self/cgroup``.
        mountinfo: The text of ``/proc/self/mountinfo``.
        root: Whether this process runs as root (effective uid 0).

    Returns:
        One :class:`CgroupParent` per directory, v1 hierarchies first; empty when none is usable.
    """
    wanted = {"memory", "pids"} if root else {"memory"}
    (own_v1, own_v2), (mount_v1, mount_v2) = _own_cgroups(proc_cgroup), _mount_points(mountinfo)
    found: dict[Path, CgroupParent] = {}
    taken: set[str] = set()
    for name in CONTROLLERS:
        if name in wanted and name in own_v1 and name in mount_v1:
            path = Path(mount_v1[name]) / own_v1[name].lstrip("/")
            if os.access(path, os.W_OK):  # co-mounted controllers share one directory
                known = found[path].controllers if path in found else frozenset()
                found[path] = CgroupParent(path, 1, known | {name})
                taken.add(name)
    if own_v2 is not None and mount_v2 is not None and wanted - taken:
        base = Path(mount_v2) / own_v2.lstrip("/")
        try:
            enabled = set((base / "cgroup.subtree_control").read_text(encoding="ascii").split())
        except OSError:
            enabled = set()
        usable = (wanted - taken) & enabled
        if usable and os.access(base, os.W_OK):
            found[base] = CgroupParent(base, 2, frozenset(usable))
    return tuple(found.values())


@functools.cache
def cgroup_parents() -> tuple[CgroupParent, ...]:
    """This process's :func:`find_cgroup_parents`, read once (Linux; empty elsewhere).

    Stale run cgroups left by a killed sidecar are removed on the way.
    """
    if not sys.platform.startswith("linux"):
        return ()
    try:
        proc_cgroup = Path("/proc/self/cgroup").read_text(encoding="ascii")
        mountinfo = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    parents = find_cgroup_parents(proc_cgroup, mountinfo, root=os.geteuid() == 0)
    for parent in parents:
        _sweep(parent.path)
    return parents


def pids_cgroup_parent() -> Path | None:
    """The directory per-run ``pids`` cgroups are created in (root only), or ``None``."""
    for parent in cgroup_parents():
        if "pids" in parent.controllers:
            return parent.path
    return None


def _sweep(base: Path) -> None:
    """Empty and remove the run cgroups of sidecars that no longer exist.

    What is left in them was started by a sidecar that died mid-run: a command it could not tear
    down, or a bubblewrap sandbox still waiting to be released (it never runs the command, but
    nobody else will ever kill it).
    """
    try:
        entries = list(base.glob(f"{_PREFIX}*"))
    except OSError:
        return
    for entry in entries:
        owner = entry.name[len(_PREFIX) :].split("-", 1)[0]
        if not owner.isdigit() or Path(f"/proc/{owner}").exists():
            continue
        for _ in range(100):
            try:
                if not _kill_listed(entry / "cgroup.procs"):
                    break
            except (OSError, ValueError):
                break
            time.sleep(0.005)
        with contextlib.suppress(OSError):
            entry.rmdir()


def _kill_listed(procs_file: Path) -> list[int]:
    """``SIGKILL`` every process ``procs_file`` lists but this one; return the pids read.

    Raises:
        OSError: The file cannot be read.
        ValueError: It holds something that is not a pid.
    """
    pids = [int(p) for p in procs_file.read_text(encoding="ascii").split()]
    me = os.getpid()
    for pid in pids:
        if pid != me:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    return pids


def sweep_stale() -> None:
    """Run the sweep of :func:`cgroup_parents` again (it runs once per process by itself)."""
    for parent in cgroup_parents():
        _sweep(parent.path)


def _read_int(path: Path, key: str | None = None) -> int:
    """An integer file, or the value of ``key`` in a flat-keyed one (``memory.events``)."""
    text = path.read_text(encoding="ascii")
    if key is None:
        return int(text.split()[0])
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


MIN_RUN_MEMORY: Final = 64 * 2**20
"""A run's memory limit is never clamped below this (bytes): an interpreter must start."""


def memory_headroom(cgroup: Path, *, version: Literal[1, 2], meminfo: str) -> int | None:
    """Bytes this process's cgroups (and the machine) can still give before their own limit.

    The smallest, over ``cgroup`` and each ancestor in its hierarchy that has a memory limit, of
    the limit minus what is in use that cannot simply be dropped (usage less inactive file pages),
    and ``MemAvailable`` from ``meminfo``. ``None`` when nothing could be read. A run's limit is
    clamped below it, so the OOM killer acts in the run's cgroup, not among the sidecar's
    (``docs/sandbox.md``, "Starting a command", memory per command).
    """
    room: list[int] = []
    for line in meminfo.splitlines():
        name, _, value = line.partition(":")
        if name == "MemAvailable" and value.split():
            room.append(int(value.split()[0]) * 1024)
    limit_file, usage_file = ("memory.limit_in_bytes", "memory.usage_in_bytes")
    if version == 2:
        limit_file, usage_file = ("memory.max", "memory.current")
    inactive = "total_inactive_file" if version == 1 else "inactive_file"
    for directory in (cgroup, *cgroup.parents):
        try:
            raw_limit = (directory / limit_file).read_text(encoding="ascii").split()[0]
        except (OSError, IndexError):
            break  # above the hierarchy's root
        try:
            usage = _read_int(directory / usage_file)
            cache = _read_int(directory / "memory.stat", inactive)
        except (OSError, ValueError):
            continue
        if raw_limit != "max" and int(raw_limit) < 2**62:  # v1 says "no limit" with a huge number
            room.append(int(raw_limit) - max(usage - cache, 0))
    return min(room) if room else None


def clamped_memory(memory_bytes: int, headroom: int | None) -> int:
    """``memory_bytes``, or three quarters of ``headroom`` when that is less (never below 64 MiB)."""
    if headroom is None:
        return memory_bytes
    return min(memory_bytes, max(headroom * 3 // 4, MIN_RUN_MEMORY))


def _write(path: Path, value: str | int) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(str(value))


@dataclass(slots=True)
class _RunDir:
    path: Path
    version: Literal[1, 2]
    controllers: frozenset[str]

    @property
    def memory(self) -> bool:
        return "memory" in self.controllers

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def oom_kills(self) -> int:
        """How many processes the OOM killer has killed in this cgroup so far."""
        if self.version == 1:
            return _read_int(self.path / "memory.oom_control", "oom_kill")
        return _read_int(self.path / "memory.events", "oom_kill")

    def memory_usage(self) -> int:
        name = "memory.usage_in_bytes" if self.version == 1 else "memory.current"
        return _read_int(self.path / name)

    def set_limits(self, *, max_processes: int | None, memory_bytes: int | None) -> None:
        """Write the limits; ``None`` lifts one (raises ``OSError``)."""
        if "pids" in self.controllers:
            _write(self.path / "pids.max", "max" if max_processes is None else max_processes)
        if not self.memory:
            return
        if self.version == 1:
            memory = -1 if memory_bytes is None else memory_bytes
            memsw = self.path / "memory.memsw.limit_in_bytes"
            if memsw.exists():  # memory+swap may not be below memory: lift it, set memory, then it
                _write(memsw, -1)
                _write(self.path / "memory.limit_in_bytes", memory)
                _write(memsw, memory)
            else:
                _write(self.path / "memory.limit_in_bytes", memory)
            return
        _write(self.path / "memory.max", "max" if memory_bytes is None else memory_bytes)
        for name, value in (("memory.swap.max", 0), ("memory.oom.group", 1)):
            if (self.path / name).exists():
                _write(self.path / name, value)

    def procs(self) -> list[int]:
        return [int(p) for p in self.procs_file.read_text(encoding="ascii").split()]

    def clean(self, reap_deadline: float) -> bool:
        """No process counted (zombies included) and, for memory, almost nothing charged.

        Call it once no process is left in the cgroup. A process that has exited is counted by
        ``pids.current`` until its parent reaps it, which for an orphan (bubblewrap's init, a
        process the launcher left behind) is PID 1: this waits for that until ``reap_deadline``
        (``time.monotonic()``). A memory cgroup still charged gets one forced reclaim (v1
        ``memory.force_empty``, v2 ``memory.reclaim``) after tmpfs pages had :data:`_SETTLE_S`
        to go. Blocks.
        """
        try:
            if "pids" in self.controllers:
                while _read_int(self.path / "pids.current") != 0:
                    if time.monotonic() > reap_deadline:
                        return False
                    time.sleep(0.02)
            if not self.memory:
                return True
            deadline = time.monotonic() + _SETTLE_S
            while self.memory_usage() > CLEAN_BYTES and time.monotonic() < deadline:
                time.sleep(0.005)
            if self.memory_usage() <= CLEAN_BYTES:
                return True
            if self.version == 1:
                _write(self.path / "memory.force_empty", 0)
            elif (self.path / "memory.reclaim").exists():
                _write(self.path / "memory.reclaim", self.memory_usage())
            return self.memory_usage() <= CLEAN_BYTES
        except (OSError, ValueError):
            return False


def _fitting_memory(parents: list[CgroupParent], wanted: set[str], memory_bytes: int) -> int:
    """``memory_bytes``, clamped to what fits below each memory parent's limits and the machine's memory."""
    for home in parents:
        if "memory" in home.controllers & wanted:
            try:
                meminfo = Path("/proc/meminfo").read_text(encoding="ascii")
            except OSError:
                meminfo = ""
            limit = clamped_memory(
                memory_bytes, memory_headroom(home.path, version=home.version, meminfo=meminfo)
            )
            if limit < memory_bytes:
                logger.info(
                    "the run's memory limit is %d bytes, not %d: only that much fits below the "
                    "sidecar's own cgroup limits and the machine's available memory",
                    limit,
                    memory_bytes,
                )
                memory_bytes = limit
    return memory_bytes


class RunCgroup:
    """One run's cgroups: a directory per hierarchy, holding ``pids``, ``memory`` or both.

    Get one with :meth:`acquire`; every method but :meth:`kill_all` and
    :meth:`memory_exceeded` blocks (cgroupfs writes, sleeps), so call them off the event loop.

    Two ways in for the run's first process: :meth:`inside` moves the *calling thread* into the
    cgroup v1 directories (``0`` to ``tasks``) so that the process it forks starts there, then moves
    it back, with the limits lifted meanwhile and applied by :meth:`apply_limits` once it is out;
    :meth:`join` moves a process in from outside (``cgroup.procs``), the only way on cgroup v2. Why
    and what each costs: ``docs/sandbox.md``, "Getting into the cgroups".

    Args:
        key: The parent directories and the controllers used in each (the pool key).
        dirs: The cgroup directories, already created.
    """

    def __init__(self, key: _PoolKey, dirs: tuple[_RunDir, ...]) -> None:
        self._key = key
        self._dirs = dirs
        self._limits: tuple[int, int] = (0, 0)
        self._oom_baseline = 0
        self._oom_fd: int | None = None
        self._tainted = False  # a thread of ours could not leave: never kill, pool or reuse it
        self._in_use = False

    @property
    def paths(self) -> tuple[Path, ...]:
        """The run's cgroup directories."""
        return tuple(d.path for d in self._dirs)

    @property
    def memory_limited(self) -> bool:
        """Whether the run has a memory cgroup (then :meth:`memory_exceeded` can tell an OOM kill)."""
        return any(d.memory for d in self._dirs)

    @property
    def procs_files(self) -> tuple[Path, ...]:
        """The ``cgroup.procs`` files a process joins (one per hierarchy)."""
        return tuple(d.procs_file for d in self._dirs)

    @property
    def oom_fd(self) -> int | None:
        """An eventfd that turns readable on an OOM of the run's memory cgroup (cgroup v1), else ``None``.

        Only a hint to look at :meth:`memory_exceeded`: cgroup v1 signals an OOM *before* the
        killer picks its victim, signals it to every cgroup below the one out of memory (a
        limit on the sidecar's own cgroup wakes every run), and signals it when the killer then
        kills nothing (memory was freed meanwhile).
        """
        return self._oom_fd

    @classmethod
    def acquire(cls, *, max_processes: int, memory_bytes: int) -> RunCgroup | None:
        """Clean cgroups for a run of ``max_processes`` tasks and ``memory_bytes`` (pooled or new).

        A limit of 0 leaves its controller out. The limits are not in force yet: enter with
        :meth:`inside` or :meth:`join`, then call :meth:`apply_limits`. Blocks (cgroupfs writes,
        ``mkdir``).

        Returns:
            The run's cgroups, or ``None`` when no controller is usable here (or creating one
            failed: logged, and the run goes on bounded by the per-process limits only).
        """
        wanted = {"pids"} if max_processes > 0 else set()
        if memory_bytes > 0:
            wanted.add("memory")
        parents = [p for p in cgroup_parents() if p.controllers & wanted]
        if not parents:
            return None
        memory_bytes = _fitting_memory(parents, wanted, memory_bytes)
        key = tuple((p.path, p.controllers & wanted) for p in parents)
        with _pool_lock:
            pooled = _pool.get(key)
            cgroup = pooled.pop() if pooled else None
        if cgroup is None:
            cgroup = cls._create(key, parents, wanted)
            if cgroup is None:
                return None
        try:
            cgroup._prepare(max_processes=max_processes, memory_bytes=memory_bytes)
        except OSError as exc:
            logger.warning("cannot prepare the cgroups %s: %s", cgroup.paths, exc)
            cgroup._close_oom_fd()
            cgroup._remove()
            return None
        return cgroup

    @classmethod
    def _create(cls, key: _PoolKey, parents: list[CgroupParent], wanted: set[str]) -> RunCgroup | None:
        """New run directories, one under each parent (``None``, logged, when one cannot be made)."""
        name = f"{_PREFIX}{os.getpid()}-{next(_counter)}"
        dirs: list[_RunDir] = []
        for parent in parents:
            path = parent.path / name
            try:
                path.mkdir()
            except OSError as exc:
                logger.warning("cannot create the cgroup %s: %s", path, exc)
                for made in dirs:
                    _rmdir(made.path)
                return None
            dirs.append(_RunDir(path, parent.version, parent.controllers & wanted))
        cgroup = cls(key, tuple(dirs))
        with _pool_lock:
            if not _made_at_exit:  # the process's first: remove them all when it exits
                atexit.register(remove_run_cgroups)
                _made_at_exit.append(True)
            _made.add(cgroup)
        return cgroup

    def _prepare(self, *, max_processes: int, memory_bytes: int) -> None:
        self._in_use = True
        self._limits = (max_processes, memory_bytes)
        oom = 0
        for run_dir in self._dirs:
            run_dir.set_limits(max_processes=None, memory_bytes=None)  # a previous run's may be lower
            if run_dir.memory:
                oom += run_dir.oom_kills()
                if run_dir.version == 1 and self._oom_fd is None:
                    self._oom_fd = _oom_eventfd(run_dir.path)
        self._oom_baseline = oom

    def apply_limits(self) -> None:
        """Put the run's limits in force (after its first process is in, and no thread of ours is).

        Raises:
            OSError: A limit could not be written.
        """
        max_processes, memory_bytes = self._limits
        for run_dir in self._dirs:
            run_dir.set_limits(max_processes=max_processes, memory_bytes=memory_bytes)

    @contextlib.contextmanager
    def inside(self) -> Iterator[tuple[Path, ...]]:
        """Hold the calling thread in the run's cgroup v1 directories; yield the procs files it is not in.

        A process forked meanwhile starts in them (a fork inherits the forking thread's
        cgroups); for the directories yielded (cgroup v2, or a write that failed) it must be
        moved with :meth:`join` or the launcher's ``--cgroup``. The thread moves back to this
        process's own cgroups on the way out. Call it with the limits lifted (before
        :meth:`apply_limits`), from a thread of its own.
        """
        entered: list[_RunDir] = []
        missing: list[Path] = []
        try:
            for run_dir in self._dirs:
                if run_dir.version == 1:
                    try:
                        _write(run_dir.path / "tasks", 0)
                        entered.append(run_dir)
                        continue
                    except OSError as exc:
                        logger.debug("cannot move a thread into %s: %s", run_dir.path, exc)
                missing.append(run_dir.procs_file)
            yield tuple(missing)
        finally:
            for run_dir in entered:
                try:
                    _write(run_dir.path.parent / "tasks", 0)
                except OSError as exc:  # pragma: no cover - the thread just came from there
                    self._tainted = True
                    logger.error("a sidecar thread could not leave the cgroup %s: %s", run_dir.path, exc)

    def missing(self, pid: int) -> tuple[Path, ...]:
        """The ``cgroup.procs`` files of the run's cgroups ``pid`` is not in."""
        return tuple(d.procs_file for d in self._dirs if pid not in d.procs())

    def join(self, pid: int, procs_files: Sequence[Path] | None = None) -> None:
        """Move ``pid`` (with its threads) into the run's cgroups (or only ``procs_files``).

        Raises:
            OSError: A ``cgroup.procs`` write failed.
        """
        for procs in self.procs_files if procs_files is None else procs_files:
            _write(procs, pid)

    def memory_exceeded(self) -> bool:
        """Whether the OOM killer killed a process of this run since :meth:`acquire`.

        Read from the run's own ``oom_kill`` count (v1 ``memory.oom_control``, v2
        ``memory.events``), above the count the cgroup had when it was handed out: kills in
        another run's cgroup or elsewhere under the sidecar's cgroup are not counted. Reads one
        cgroupfs file (no disk I/O; fine on the event loop).
        """
        if not self.memory_limited:
            return False
        try:
            now = sum(d.oom_kills() for d in self._dirs if d.memory)
        except (OSError, ValueError):
            return False
        return now > self._oom_baseline

    def kill_all(self) -> None:
        """Send ``SIGKILL`` once to every process in the run's cgroups (does not wait).

        Never this process: a thread of it is in the run's cgroups while it spawns.
        """
        for run_dir in self._dirs:
            with contextlib.suppress(OSError, ValueError):
                _kill_listed(run_dir.procs_file)

    def _empty(self, patience_s: float = 1.0) -> bool:
        deadline = time.monotonic() + patience_s
        while True:
            try:
                if not any(run_dir.procs() for run_dir in self._dirs):
                    return True
            except (OSError, ValueError):
                return False
            if time.monotonic() > deadline:
                return False
            self.kill_all()
            time.sleep(0.005)

    def release(self) -> None:
        """Kill what is left; pool the cgroups when clean, else remove them. Blocks (up to seconds).

        Waits up to :data:`_REAP_S` for the run's last zombies to be reaped (see :meth:`_RunDir.clean`).

        A second call does nothing (the cgroups may be another run's by then).
        """
        with _pool_lock:
            if not self._in_use:
                return
            self._in_use = False
        self._close_oom_fd()
        if self._tainted:
            return
        reap_deadline = time.monotonic() + _REAP_S
        if self._empty() and all(run_dir.clean(reap_deadline) for run_dir in self._dirs):
            with _pool_lock:
                if self in _made:  # not removed meanwhile (the process is exiting)
                    _pool.setdefault(self._key, []).append(self)
            return
        self._remove(patience=1000)  # zombies awaiting their reaper, or charged memory: remove it

    def _remove(self, *, patience: int = 100) -> None:
        """Remove the run's directories (blocking) and forget them."""
        with _pool_lock:
            _made.discard(self)
        for run_dir in self._dirs:
            _rmdir(run_dir.path, patience=patience)

    def _close_oom_fd(self) -> None:
        if self._oom_fd is not None:
            os.close(self._oom_fd)  # closing the eventfd also unregisters it from the cgroup
            self._oom_fd = None


def _oom_eventfd(path: Path) -> int:
    """Register an eventfd for OOM notifications of a cgroup v1 memory cgroup (``cgroup.event_control``)."""
    event = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
    try:
        control = os.open(path / "memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
        try:
            _write(path / "cgroup.event_control", f"{event} {control}")
        finally:
            os.close(control)
    except OSError:
        os.close(event)
        raise
    return event


def remove_run_cgroups(patience_s: float = _REMOVE_S) -> None:
    """Remove every run cgroup this process made: pooled, being released, or with a run still in it.

    What still runs in them is killed first (``SIGKILL``), then each directory is removed, killing
    and retrying for up to ``patience_s`` seconds in all; one that is still busy then is logged and
    left to the next steerable process's sweep. Runs at exit (``atexit``) and before a signal's
    exit, which skips ``atexit`` (``steerable_sidecar``'s ``run_until_signalled``). Blocks.
    """
    with _pool_lock:
        cgroups = [cgroup for cgroup in _made if not cgroup._tainted]  # a thread of ours is inside one
        _made.clear()
        _pool.clear()
    for cgroup in cgroups:  # (their OOM eventfds close with the process)
        cgroup.kill_all()
    deadline = time.monotonic() + patience_s
    for cgroup in cgroups:
        for run_dir in cgroup._dirs:
            while True:
                try:
                    run_dir.path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if time.monotonic() > deadline:
                        logger.warning("could not remove the cgroup %s: %s", run_dir.path, exc)
                        break
                    with contextlib.suppress(OSError, ValueError):
                        _kill_listed(run_dir.procs_file)
                    time.sleep(0.005)


def _rmdir(path: Path, *, patience: int = 100) -> None:
    for _ in range(patience):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.005)  # the last tasks are still exiting
    logger.warning("could not remove the cgroup %s", path)
