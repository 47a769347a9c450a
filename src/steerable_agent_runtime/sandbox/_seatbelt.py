"""The Seatbelt backend (macOS): ``sandbox-exec`` with a generated profile."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ._backend import LaunchPlan, SandboxInfo
from ._deny import applicable_denials
from ._policy import SandboxPolicy

__all__ = ["SANDBOX_EXEC", "SeatbeltBackend", "seatbelt_profile"]

SANDBOX_EXEC: Final = "/usr/bin/sandbox-exec"
"""Where macOS ships ``sandbox-exec``."""

_DEVICES: Final = ("/dev/null", "/dev/zero", "/dev/dtracehelper", "/dev/tty")

# Services ordinary command-line programs look up (user and group names, logging, TLS trust).
_MACH_SERVICES: Final = (
    "com.apple.bsd.dirhelper",
    "com.apple.system.logger",
    "com.apple.system.notification_center",
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.opendirectoryd.membership",
    "com.apple.trustd.agent",
)

_probes: dict[str, str | None] = {}
_probe_lock = threading.Lock()


def seatbelt_profile(*, writable_roots: int, network: bool, deny_read: int = 0) -> str:
    """The SBPL profile: deny by default, read all but the deny-read set, write only the writable roots.

    Paths are not spliced into the text: root ``i`` is the parameter ``WRITABLE_ROOT_i`` and denied
    path ``i`` ``DENY_READ_i``, given to ``sandbox-exec`` with ``-D``, so no path needs escaping and
    the text depends only on the arguments here. Terminals (``/dev/ttys*``) are not readable (SAFE-3).

    Args:
        writable_roots: How many ``WRITABLE_ROOT_i`` parameters the caller passes.
        network: Allow network access.
        deny_read: How many ``DENY_READ_i`` parameters the caller passes.

    Returns:
        The profile text.
    """
    roots = "\n".join(f'  (subpath (param "WRITABLE_ROOT_{i}"))' for i in range(writable_roots))
    devices = " ".join(f'(literal "{d}")' for d in _DEVICES)
    services = "\n".join(f'  (global-name "{s}")' for s in _MACH_SERVICES)
    lines = [
        "(version 1)",
        "(deny default)",
        "; processes: run and fork; see and signal only this sandbox's own",
        "(allow process-exec)",
        "(allow process-fork)",
        "(allow process-info* (target same-sandbox))",
        "(allow signal (target same-sandbox))",
        "; files: read anything, write only under the writable roots and a few devices",
        "(allow file-read*)",
        '(deny file-read-data (regex #"^/dev/ttys[0-9]+$"))',
        *(f'(deny file-read* (subpath (param "DENY_READ_{i}")))' for i in range(deny_read)),
        f"(allow file-write*\n{roots})",
        f"(allow file-write-data {devices})",
        f"(allow file-ioctl {devices})",
        "; what ordinary programs need from the system",
        "(allow sysctl-read)",
        "(allow user-preference-read)",
        "(allow ipc-posix-sem)",
        "(allow ipc-posix-shm)",
        f"(allow mach-lookup\n{services})",
    ]
    lines.append("; network: allowed by the policy" if network else "; network: denied (deny default)")
    if network:
        lines.append("(allow network*)")
    return "\n".join(lines) + "\n"


class SeatbeltBackend:
    """Run commands under ``sandbox-exec`` with :func:`seatbelt_profile`: ``full`` enforcement.

    Writes are confined to the writable roots and the run's private temporary directory (which
    ``TMPDIR`` points at), the network is denied unless the policy allows it, and other processes
    can be neither inspected nor signalled (``process-info*`` and ``signal`` are limited to the
    sandbox). macOS has no PID namespace and no private ``/tmp``.

    Args:
        sandbox_exec: The ``sandbox-exec`` executable.
    """

    def __init__(self, sandbox_exec: str = SANDBOX_EXEC) -> None:
        self.sandbox_exec = sandbox_exec

    @property
    def info(self) -> SandboxInfo:
        """``seatbelt``, ``full``."""
        return SandboxInfo("seatbelt", "full")

    def unavailable_reason(self) -> str | None:
        """``None`` once ``sandbox-exec`` has run ``true`` under a trivial profile; else why not."""
        if sys.platform != "darwin":
            return "Seatbelt (sandbox-exec) exists on macOS only"
        with _probe_lock:
            if self.sandbox_exec not in _probes:
                _probes[self.sandbox_exec] = _probe(self.sandbox_exec)
            return _probes[self.sandbox_exec]

    def plan(self, argv: Sequence[str], policy: SandboxPolicy, *, private_tmp: Path) -> LaunchPlan:
        """``sandbox-exec -p <profile> -DWRITABLE_ROOT_i=<path>... -DDENY_READ_i=<path>... -- argv``."""
        roots = [os.path.realpath(r) for r in (*policy.writable_roots, private_tmp)]
        denied = applicable_denials(policy.deny_read, roots)
        params = [f"-DWRITABLE_ROOT_{i}={root}" for i, root in enumerate(roots)]
        params += [f"-DDENY_READ_{i}={path}" for i, path in enumerate(denied)]
        profile = seatbelt_profile(writable_roots=len(roots), network=policy.network, deny_read=len(denied))
        tmp = roots[-1]
        return LaunchPlan(
            argv=(self.sandbox_exec, "-p", profile, *params, "--", *argv),
            env={"TMPDIR": tmp, "TEMP": tmp, "TMP": tmp},
        )


def _probe(sandbox_exec: str) -> str | None:
    if not os.path.exists(sandbox_exec):
        return f"{sandbox_exec} is missing"
    try:
        run = subprocess.run(
            [sandbox_exec, "-p", "(version 1)\n(allow default)\n", "--", "/usr/bin/true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{sandbox_exec} could not be run: {exc}"
    if run.returncode != 0:
        said = run.stderr.decode("utf-8", "replace").strip() or f"exit status {run.returncode}"
        return (
            f"sandbox-exec cannot apply a profile here ({said}); when the host already sandboxes "
            "this process, macOS refuses a nested sandbox: set STEERABLE_SIDECAR_CONFINED=1"
        )
    return None
