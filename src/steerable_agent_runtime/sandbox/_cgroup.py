"""A per-run ``pids`` cgroup: how a root sidecar bounds the processes of a command.

The kernel does not apply ``RLIMIT_NPROC`` to root (``fork`` skips the check for the initial
user), so a fork bomb run by a root sidecar would fill the PID table. When this process runs as
root and a ``pids`` controller is writable (cgroup v1's ``pids`` hierarchy, or cgroup v2 with
``pids`` in the parent's ``cgroup.subtree_control``), each run gets a child cgroup with
``pids.max`` set; the launcher moves itself into it before anything else starts, so the command
and all it forks are counted. The cgroup also lets the runner kill every process of the run,
even ones that left the process group, and is removed afterwards.

Without such a cgroup (root in a container with a read-only ``/sys/fs/cgroup``), the process limit
is not enforced for root; ``docs/sandbox.md`` says so.

Moving a process into a *new* cgroup costs about 10 ms (the kernel waits for an RCU grace
period), a reused one next to nothing, so emptied cgroups go back to a per-process pool and are
removed at exit (or, after a crash, by the next sidecar's sweep).
"""

from __future__ import annotations

import atexit
import functools
import itertools
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

__all__ = ["PidsCgroup", "pids_cgroup_parent"]

logger = logging.getLogger("steerable_agent_runtime.sandbox")

_counter = itertools.count()
_PREFIX = "steerable-"
_pool: list[Path] = []
_pool_lock = threading.Lock()


def _own_cgroups() -> tuple[str | None, str | None]:
    """``(v1 pids path, v2 path)`` of this process, from ``/proc/self/cgroup``."""
    v1 = v2 = None
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="ascii").splitlines()
    except OSError:
        return None, None
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2 = path
        elif "pids" in controllers.split(","):
            v1 = path
    return v1, v2


def _mounts() -> tuple[str | None, str | None]:
    """``(v1 pids mount point, v2 mount point)`` from ``/proc/self/mountinfo``."""
    v1 = v2 = None
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None, None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        point, fstype, options = fields[4], tail[0], tail[2].split(",")
        if fstype == "cgroup" and "pids" in options and v1 is None:
            v1 = point
        elif fstype == "cgroup2" and v2 is None:
            v2 = point
    return v1, v2


@functools.cache
def pids_cgroup_parent() -> Path | None:
    """The directory new per-run ``pids`` cgroups are created in, or ``None``.

    Only for root on Linux (anyone else is bounded by ``RLIMIT_NPROC``). Checked once per process;
    stale run cgroups left by a killed sidecar are removed on the way.
    """
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return None
    (own_v1, own_v2), (mount_v1, mount_v2) = _own_cgroups(), _mounts()
    candidates: list[Path] = []
    if own_v1 is not None and mount_v1 is not None:
        candidates.append(Path(mount_v1) / own_v1.lstrip("/"))
    if own_v2 is not None and mount_v2 is not None:
        base = Path(mount_v2) / own_v2.lstrip("/")
        try:
            if "pids" in (base / "cgroup.subtree_control").read_text(encoding="ascii").split():
                candidates.append(base)
        except OSError:
            pass
    for base in candidates:
        if os.access(base, os.W_OK):
            _sweep(base)
            return base
    return None


def _sweep(base: Path) -> None:
    """Remove empty run cgroups of processes that no longer exist."""
    try:
        entries = list(base.glob(f"{_PREFIX}*"))
    except OSError:
        return
    for entry in entries:
        owner = entry.name[len(_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            try:
                entry.rmdir()
            except OSError:
                pass


class PidsCgroup:
    """One run's ``pids`` cgroup.

    Args:
        path: The cgroup directory (already created, ``pids.max`` set).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def acquire(cls, max_processes: int) -> PidsCgroup | None:
        """An empty cgroup allowing ``max_processes`` tasks (pooled or new); ``None`` when none can be had."""
        parent = pids_cgroup_parent()
        if parent is None or max_processes <= 0:
            return None
        with _pool_lock:
            path = _pool.pop() if _pool else None
        if path is None:
            path = parent / f"{_PREFIX}{os.getpid()}-{next(_counter)}"
            try:
                path.mkdir()
            except OSError as exc:
                logger.warning("cannot create the pids cgroup %s: %s", path, exc)
                return None
        try:
            (path / "pids.max").write_text(str(max_processes), encoding="ascii")
        except OSError as exc:
            logger.warning("cannot set pids.max in %s: %s", path, exc)
            _rmdir(path)
            return None
        return cls(path)

    @property
    def procs_file(self) -> Path:
        """The file the launcher writes its pid to."""
        return self.path / "cgroup.procs"

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup (until it is empty, at most about a second)."""
        for _ in range(200):
            try:
                pids = [int(p) for p in self.procs_file.read_text(encoding="ascii").split()]
            except (OSError, ValueError):
                return
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.005)

    def release(self) -> None:
        """Kill what is left; pool the emptied cgroup (or remove it, when it does not empty)."""
        self.kill_all()
        try:
            empty = not self.procs_file.read_text(encoding="ascii").split()
            # pids.current also counts zombies that still await their reaper (PID 1 after the
            # launcher was killed): a cgroup pooled with them would start the next run short of
            # its process budget. Only a cgroup that counts nothing goes back to the pool.
            counted = (self.path / "pids.current").read_text(encoding="ascii").strip()
        except OSError:
            return
        if empty and counted == "0":
            with _pool_lock:
                if not _pool:
                    atexit.register(_drain_pool)
                _pool.append(self.path)
        else:  # zombies awaiting their reaper: remove it once they are gone, off the event loop
            threading.Thread(target=_rmdir, args=(self.path,), kwargs={"patience": 1000}, daemon=True).start()


def _drain_pool() -> None:
    with _pool_lock:
        paths, _pool[:] = list(_pool), []
    for path in paths:
        _rmdir(path, patience=1)


def _rmdir(path: Path, *, patience: int = 100) -> None:
    for _ in range(patience):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.005)  # the last tasks are still exiting
    logger.warning("could not remove the pids cgroup %s", path)
