"""The bubblewrap backend (Linux): namespaces, a read-only root, sized tmpfs mounts, a functional probe."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from .._protected import runtime_roots
from ._backend import LaunchPlan, SandboxInfo
from ._deny import applicable_denials, denials_inside, masking_mounts
from ._launch import SECCOMP_ARCH
from ._policy import SandboxPolicy
from ._protect import carve_outs, guarded_inside

__all__ = ["BubblewrapBackend"]

_PROBE_TIMEOUT_S: Final = 10.0
_PROBE_TMPFS_BYTES: Final = 1024 * 1024
_SECCOMP_PLACEHOLDER: Final = "@seccomp-fd@"

_probes: dict[str, str | None] = {}
_probe_lock = threading.Lock()


class BubblewrapBackend:
    """Run commands under ``bwrap``: ``full`` enforcement.

    New user, PID, IPC, UTS, cgroup and (network off) network namespaces; ``/`` read-only with
    bubblewrap's own read-only ``/dev`` and a ``/proc``; a private ``/tmp`` and ``/dev/shm`` (tmpfs,
    at most ``memory_bytes`` each); the writable roots bound read-write; no capabilities; the seccomp
    filter (``_launch.seccomp_program``). The plan is ``direct``: the runner starts ``bwrap`` itself and
    releases the sandbox once its limits and cgroups are set (``_handshake.py``). Chosen only after a
    functional probe ran ``true`` under the same options (cached per process and ``bwrap`` path).
    The command line and what each part holds off: ``docs/sandbox.md``, "bubblewrap".

    Args:
        bwrap: The ``bwrap`` executable (default: found on ``PATH``).
    """

    def __init__(self, bwrap: str | None = None) -> None:
        self._bwrap = bwrap

    @property
    def info(self) -> SandboxInfo:
        """``bwrap``, ``full``."""
        return SandboxInfo("bwrap", "full")

    @property
    def executable(self) -> str | None:
        """The ``bwrap`` binary this backend runs, or ``None`` when none is installed."""
        return self._bwrap if self._bwrap is not None else shutil.which("bwrap")

    def unavailable_reason(self) -> str | None:
        """``None`` once the probe has run a command under bwrap; else why it cannot."""
        if not sys.platform.startswith("linux"):
            return "bubblewrap runs on Linux only"
        path = self.executable
        if path is None:
            return (
                "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install ...)"
            )
        with _probe_lock:
            if path not in _probes:
                _probes[path] = _probe(path)
            return _probes[path]

    def options(self, policy: SandboxPolicy) -> list[str]:
        """The ``bwrap`` options for ``policy`` (everything before ``--``).

        ``/tmp`` and ``/dev/shm`` are tmpfs mounts of the sandbox's own, each at most
        ``policy.limits.memory_bytes`` (unsized when it is 0, or when this bubblewrap predates
        ``--size``). The deny-read set is covered (``policy.deny_read``, SAFE-3). Readable roots under
        ``/tmp`` (the policy's, the Python interpreter's prefixes and steerable's package) are bound
        read-only into it, then the writable roots read-write,
        then what must stay read-only inside them: the runtime roots and ``policy.read_only`` (by
        default the protected paths found under each writable root: ``_protect.carve_outs``).
        """
        features = _features(self.executable or "bwrap")
        args = _namespace_options(
            network=policy.network, tmpfs_bytes=policy.limits.memory_bytes, features=features
        )
        writable = [os.path.realpath(root) for root in policy.writable_roots]
        # the deny-read set (SAFE-3), before the roots are bound: each folder on the way to an entry
        # an empty read-only tmpfs with the rest bound back (the private /tmp hides /tmp already)
        denied = [d for d in applicable_denials(policy.deny_read, writable) if not _within(d, "/tmp")]
        args += masking_mounts(denied)
        for readable in _hidden_by_tmp((*policy.readable_roots, *_runtime_roots())):
            if not any(_within(readable, w) for w in writable):
                args += ["--ro-bind", readable, readable]
        for real in writable:
            args += ["--bind", real, real]
        # Carved read-only out of the writable roots: what runs outside the sandbox later and must
        # not be planted from inside it (the interpreter's prefixes and steerable's own package, in
        # a workspace .venv or an editable install; the protected paths: git's config and hooks,
        # editor and agent configuration, which the host's next git command or editor start runs).
        if policy.read_only is None:
            protected = [path for root in writable for path in carve_outs(root)]
        else:
            protected = [str(path) for path in policy.read_only]
        for guarded in guarded_inside(writable, protected):
            args += ["--ro-bind", guarded, guarded]
        for hidden in denials_inside(policy.deny_read, writable):  # the workspace is ~, or holds one
            args += (
                ["--tmpfs", hidden, "--remount-ro", hidden]
                if os.path.isdir(hidden)
                else ["--ro-bind", os.devnull, hidden]
            )
        args += ["--chdir", os.path.realpath(policy.workdir)]
        if os.uname().machine in SECCOMP_ARCH:  # set-id modes always; sockets with the network off
            args += ["--seccomp", _SECCOMP_PLACEHOLDER]
        return args

    def plan(self, argv: Sequence[str], policy: SandboxPolicy, *, private_tmp: Path) -> LaunchPlan:
        """``bwrap <options> -- argv``, ``direct``; the starter fills in the socket filter's descriptor.

        ``private_tmp`` is not used: the sandbox's ``/tmp`` is a tmpfs of its own.
        """
        path = self.executable or "bwrap"
        wrapped = (path, *self.options(policy), "--", *argv)
        at = wrapped.index(_SECCOMP_PLACEHOLDER) if _SECCOMP_PLACEHOLDER in wrapped else None
        tmp = {"TMPDIR": "/tmp", "TEMP": "/tmp", "TMP": "/tmp"}
        deny = "setid" if policy.network else "net,setid"
        return LaunchPlan(argv=wrapped, env=tmp, seccomp_fd_at=at, seccomp_deny=deny, direct=True)


def _runtime_roots() -> tuple[str, ...]:
    """What a child Python needs to start: the interpreter's prefixes and steerable's package root."""
    return runtime_roots()


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _hidden_by_tmp(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The existing paths under ``/tmp`` (which the private ``/tmp`` hides), outermost first, deduplicated."""
    real = sorted({os.path.realpath(p) for p in paths}, key=len)
    kept: list[str] = []
    for path in real:
        if _within(path, "/tmp") and path != "/tmp" and os.path.exists(path):
            if not any(_within(path, k) for k in kept):
                kept.append(path)
    return kept


def _tmpfs(dest: str, size: int, features: frozenset[str]) -> list[str]:
    """A tmpfs on ``dest``, world-writable with the sticky bit, of at most ``size`` bytes (0: unsized)."""
    args = ["--perms", "1777"] if "--perms" in features else []
    if size and "--size" in features:
        args += ["--size", str(size)]
    return [*args, "--tmpfs", dest]


def _namespace_options(*, network: bool, tmpfs_bytes: int, features: frozenset[str]) -> list[str]:
    """Namespaces and the base mounts: ``/`` read-only, ``/dev`` (read-only but ``shm``), ``/proc``, ``/tmp``.

    ``/dev`` is bubblewrap's own tmpfs: writable, it would be a third place to fill memory, so it
    is remounted read-only (its device nodes are bind mounts of their own and stay usable).
    """
    args = ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--unshare-all"]
    if network:
        args.append("--share-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--remount-ro", "/dev"]
    args += _tmpfs("/dev/shm", tmpfs_bytes, features)
    return [*args, "--proc", "/proc", *_tmpfs("/tmp", tmpfs_bytes, features)]


@functools.cache
def _features(path: str) -> frozenset[str]:
    """The optional options this ``bwrap`` knows (``--size``: 0.8, ``--perms``: 0.5), from its ``--help``.

    Cached per path; a ``bwrap`` that cannot be asked is assumed to know both (the probe then
    tells whether it runs at all).
    """
    try:
        run = subprocess.run(
            [path, "--help"], stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT_S
        )
        text = run.stdout.decode("utf-8", "replace") + run.stderr.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        text = "--size --perms"
    return frozenset(option for option in ("--size", "--perms") if option in text.split())


def _probe(path: str) -> str | None:
    true = shutil.which("true") or "/bin/true"
    options = _namespace_options(network=False, tmpfs_bytes=_PROBE_TMPFS_BYTES, features=_features(path))
    argv = [path, *options, "--", true]
    try:
        run = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap ({path}) could not be run: {exc}"
    if run.returncode != 0:
        said = run.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = said[-1] if said else f"exit status {run.returncode}"
        return (
            f"bwrap ({path}) is installed but cannot create its sandbox here: {detail} "
            "(it needs unprivileged user namespaces, which some containers and distributions turn off)"
        )
    return None
