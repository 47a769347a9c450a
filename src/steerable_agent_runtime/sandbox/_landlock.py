"""The Landlock backend (Linux, when bubblewrap cannot run): a ruleset applied before exec."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ._backend import LaunchPlan, SandboxInfo
from ._deny import applicable_denials, denials_inside, hidden_devices, read_grants
from ._launch import SECCOMP_ARCH, landlock_abi
from ._policy import SandboxPolicy
from ._protect import carve_outs, guarded_inside

__all__ = ["LandlockBackend", "detect_landlock_abi"]

DEVICES: Final = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
"""Device files a command may write to (``2>/dev/null`` must work)."""

_isolation: dict[str, bool] = {}
_isolation_lock = threading.Lock()


@functools.cache
def detect_landlock_abi() -> int:
    """The kernel's Landlock ABI version (``landlock_create_ruleset`` with the version flag), 0 without.

    Cached per process. ABI 1 restricts the filesystem; 2 adds cross-directory renames; 3
    truncation; 4 TCP bind and connect; 5 device ioctls; 6 scopes abstract Unix sockets and
    signals to the sandbox.
    """
    return landlock_abi()


class LandlockBackend:
    """Restrict commands with a Landlock ruleset: ``partial`` enforcement.

    Through the supervising launcher: every capability dropped, then a ruleset granting read and
    execute everywhere but the deny-read set and most of ``/dev`` and writes only under the writable
    roots, the private temporary directory and a few devices (network off: no TCP bind or connect,
    ABI 4+; from ABI 6 no signals out and no abstract Unix sockets), and the seccomp filter with
    ``ipc`` and ``setid`` (for a root sidecar ``chmod``; network off, ``net``). Where a namespace
    can be made (:meth:`isolates`), a PID namespace with its own ``/proc`` and a mount namespace
    with the protected paths bound read-only; never a private ``/tmp``. What it enforces and what
    it cannot: ``docs/sandbox.md``, "Landlock" and the backends table.

    Args:
        isolation: Give commands a PID and mount namespace of their own (:meth:`isolates`);
            ``None`` (the default): where the probe finds one can be made. ``False`` leaves the
            protected paths to the audit alone and other processes visible (the fallback where
            no namespace can be made; tests of it).
    """

    def __init__(self, *, isolation: bool | None = None) -> None:
        self._isolation = isolation

    @property
    def info(self) -> SandboxInfo:
        """``landlock``, ``partial``."""
        return SandboxInfo("landlock", "partial")

    def isolates(self) -> bool:
        """Can a command get its own PID and mount namespace here (root, or user namespaces)?

        Then it sees no other process, and the protected paths are bound read-only in its mount
        namespace as bubblewrap binds them (SAFE-2, SAFE-3). Probed once per process: the launcher
        runs ``true`` with a read-only bind.
        """
        if self._isolation is not None:
            return self._isolation
        with _isolation_lock:
            if "probe" not in _isolation:
                _isolation["probe"] = _probe_isolation()
            return _isolation["probe"]

    def unavailable_reason(self) -> str | None:
        """``None`` when the kernel has Landlock; else why not."""
        if not sys.platform.startswith("linux"):
            return "Landlock is a Linux security module"
        abi = detect_landlock_abi()
        if abi < 1:
            return "the kernel has no Landlock (needs Linux 5.13 or later with landlock in the lsm= list)"
        return None

    def plan(self, argv: Sequence[str], policy: SandboxPolicy, *, private_tmp: Path) -> LaunchPlan:
        """The command itself, with the launcher told which rules to apply and to supervise it.

        Every directory may be listed (``--ls /``); read is granted on ``/`` split around the
        deny-read set and every ``/dev`` entry but the few a command needs (``_deny.read_grants``,
        SAFE-3), so a denied file's name shows and its bytes do not.
        """
        writable = [os.path.realpath(root) for root in (*policy.writable_roots, private_tmp)]
        denied = applicable_denials(policy.deny_read, writable) + hidden_devices()
        options = ["--drop-caps", "--landlock", "--ls", "/"]
        for grant in read_grants(denied):
            options += ["--ro", grant]
        for root in writable:
            options += ["--rw", root]
        if self.isolates():  # steerable's runtime and the protected paths, read-only as under bubblewrap
            roots = writable[:-1]  # not the private temporary directory
            carved = (
                [path for root in roots for path in carve_outs(root)]
                if policy.read_only is None
                else [str(path) for path in policy.read_only]
            )
            for path in guarded_inside(roots, carved):
                options += ["--ro-bind", path]
            for path in denials_inside(policy.deny_read, roots):  # the workspace is ~, or holds one
                options += ["--hide", path]
        for device in DEVICES:
            options += ["--dev", device]
        if not policy.network:
            options.append("--no-tcp")
        if os.uname().machine in SECCOMP_ARCH:  # no IPC namespace here: System V IPC and keyrings off
            denied = ["ipc", "setid"] if policy.network else ["net", "ipc", "setid"]
            if os.geteuid() == 0:  # root owns /etc too: Landlock cannot keep its modes safe, so no chmod
                denied.append("chmod")
            options += ["--seccomp-deny", ",".join(denied)]
        options += ["--pid-ns", "--supervise"] if self._isolation is not False else ["--supervise"]
        tmp = os.path.realpath(private_tmp)
        return LaunchPlan(
            argv=tuple(argv),
            launcher_options=tuple(options),
            env={"TMPDIR": tmp, "TEMP": tmp, "TMP": tmp},
            supervised=True,
        )


def _probe_isolation() -> bool:
    """Run ``true`` through the launcher in a PID and mount namespace with one read-only bind."""
    from ._pinning import PINNED_PYTHON, launcher_code

    true = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
    with tempfile.TemporaryDirectory(prefix="steerable-probe-") as folder:
        argv = [PINNED_PYTHON, "-I", "-S", launcher_code(), "--pid-ns", "--ro-bind", folder, "--supervise"]
        try:
            run = subprocess.run(
                [*argv, "--", true], stdin=subprocess.DEVNULL, capture_output=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
    return run.returncode == 0
