"""The container posture: steerable runs inside a container that is itself the boundary.

``STEERABLE_SANDBOX=container`` (an eval task container: Harbor, Terminal-Bench). No layer-2 wrap is
added, so a command may write wherever the container's user may and use the container's network;
the plan is ``detached``, so what a command leaves running outlives the call. ``docs/sandbox.md``,
"The container posture".
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from ._backend import CONTAINER, LaunchPlan, SandboxInfo
from ._policy import SandboxPolicy, container_environment

__all__ = ["ContainerBackend", "keep_environment_private"]


class ContainerBackend:
    """``STEERABLE_SANDBOX=container``: run the command as it is; results say ``backend: container``."""

    @property
    def info(self) -> SandboxInfo:
        """``container``, enforcement ``none``."""
        return CONTAINER

    def unavailable_reason(self) -> str | None:
        """Always ``None``: the container is the boundary."""
        return None

    def plan(self, argv: Sequence[str], policy: SandboxPolicy, *, private_tmp: Path) -> LaunchPlan:
        """The command itself, detached (no launcher, limits or cgroups; leftovers are not killed).

        ``TMPDIR`` is not replaced: the container's own stays, for processes that outlive the call.
        The spawner has already kept this process's environment private
        (:func:`keep_environment_private`).
        """
        keep_environment_private()  # once per process (cached): for a backend used without a spawner
        return LaunchPlan(argv=tuple(argv), detached=True)


@functools.cache
def keep_environment_private() -> None:
    """Keep the credentials in this process's own environment out of its commands' reach (Linux).

    A command runs as steerable's own user in this posture, so it could read steerable's
    ``/proc/PID/environ``, where the model's key is. Two guards:

    * the values of credentials (the names and values :func:`container_environment` drops) are
      overwritten with ``*`` in the process's original environment block, the memory that file
      shows (``os.environ``, a copy taken at start-up, keeps them);
    * the process is made non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): its ``/proc`` files then
      belong to root and need ``CAP_SYS_PTRACE`` (``/proc/PID/mem`` too).

    Done once per process (the block never changes; later calls return at once); elsewhere than
    Linux, or when the kernel refuses, it does what it can.
    """
    if sys.platform != "linux":
        return
    import ctypes  # here, not at start-up

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    with contextlib.suppress(OSError, ValueError, IndexError):
        _blank_credentials(ctypes)


def _blank_credentials(ctypes: ModuleType) -> None:
    """Overwrite the credentials' values in ``[env_start, env_end)`` (``/proc/self/stat``)."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    start, end = int(fields[_ENV_START]), int(fields[_ENV_END])
    if not 0 < start < end:
        return
    block = ctypes.string_at(start, end - start)
    offset = 0
    for entry in block.split(b"\0"):
        name, equals, value = entry.partition(b"=")
        if equals and value:
            text = name.decode("utf-8", "replace")
            kept = container_environment({text: value.decode("utf-8", "replace"), "PATH": "/"})
            if text not in kept:  # a credential: the file shows stars instead
                ctypes.memset(start + offset + len(name) + 1, ord("*"), len(value))
        offset += len(entry) + 1


_PR_SET_DUMPABLE = 4
_ENV_START, _ENV_END = 47, 48  # fields 50 and 51 of /proc/PID/stat, counted after the comm
