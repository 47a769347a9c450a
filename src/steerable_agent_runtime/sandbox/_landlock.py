"""The Landlock backend (Linux, when bubblewrap cannot run): a ruleset applied before exec."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ._backend import LaunchPlan, SandboxInfo
from ._launch import SECCOMP_ARCH, landlock_abi
from ._policy import SandboxPolicy

__all__ = ["LandlockBackend", "detect_landlock_abi"]

DEVICES: Final = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
"""Device files a command may write to (``2>/dev/null`` must work)."""


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

    The launcher drops every capability, then applies a ruleset that lets the command read and
    execute anything, write only under the writable roots, the run's private temporary
    directory and a few devices, and (network off) neither bind nor connect TCP sockets (ABI 4+);
    from ABI 6 it cannot signal processes outside the sandbox nor reach abstract Unix sockets.
    The launcher's seccomp filter refuses System V IPC, POSIX message queues and the keyrings
    (shared with the host: there is no IPC namespace, so what a command left there would outlive
    the run) and file modes with the set-user-ID/set-group-ID bits (for a root sidecar, every
    ``chmod``: Landlock does not cover file modes, and root owns the system's files, so a root
    command could otherwise ``chmod`` anything on the host); with the network off it also
    refuses ``socket(2)`` (UDP, raw and Unix sockets, which Landlock does not cover). Then it
    forks the command and stays as a child subreaper that kills every leftover process when the
    command exits or the run is stopped.

    What it cannot do: there is no PID namespace (other processes are visible, though their
    environment is not readable: Landlock refuses it to an unprivileged command, and a root
    command has lost the capabilities that root's access would need) and no private ``/tmp``
    (``TMPDIR`` points at the private directory instead; ``/tmp`` itself is read-only).
    """

    @property
    def info(self) -> SandboxInfo:
        """``landlock``, ``partial``."""
        return SandboxInfo("landlock", "partial")

    def unavailable_reason(self) -> str | None:
        """``None`` when the kernel has Landlock; else why not."""
        if not sys.platform.startswith("linux"):
            return "Landlock is a Linux security module"
        abi = detect_landlock_abi()
        if abi < 1:
            return "the kernel has no Landlock (needs Linux 5.13 or later with landlock in the lsm= list)"
        return None

    def plan(self, argv: Sequence[str], policy: SandboxPolicy, *, private_tmp: Path) -> LaunchPlan:
        """The command itself, with the launcher told which rules to apply and to supervise it."""
        options = ["--drop-caps", "--landlock", "--ro", "/"]
        for root in (*policy.writable_roots, private_tmp):
            options += ["--rw", os.path.realpath(root)]
        for device in DEVICES:
            options += ["--dev", device]
        if not policy.network:
            options.append("--no-tcp")
        if os.uname().machine in SECCOMP_ARCH:  # no IPC namespace here: System V IPC and keyrings off
            denied = ["ipc", "setid"] if policy.network else ["net", "ipc", "setid"]
            if os.geteuid() == 0:  # root owns /etc too: Landlock cannot keep its modes safe, so no chmod
                denied.append("chmod")
            options += ["--seccomp-deny", ",".join(denied)]
        options.append("--supervise")
        tmp = os.path.realpath(private_tmp)
        return LaunchPlan(
            argv=tuple(argv),
            launcher_options=tuple(options),
            env={"TMPDIR": tmp, "TEMP": tmp, "TMP": tmp},
            supervised=True,
        )
