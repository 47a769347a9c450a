"""The container posture: steerable runs inside a container that is itself the boundary.

``STEERABLE_SANDBOX=container`` (an eval task container: Harbor, Terminal-Bench). No layer-2 wrap is
added, so a command may write wherever the container's user may and use the container's network;
the plan is ``detached``, so what a command leaves running outlives the call. ``docs/sandbox.md``,
"The container posture".
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path

from ._backend import CONTAINER, LaunchPlan, SandboxInfo
from ._policy import SandboxPolicy

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
        First this process is made non-dumpable (:func:`keep_environment_private`).
        """
        keep_environment_private()
        return LaunchPlan(argv=tuple(argv), detached=True)


def keep_environment_private() -> None:
    """Make this process non-dumpable (Linux ``prctl(PR_SET_DUMPABLE, 0)``; elsewhere nothing).

    A command runs as steerable's own user in this posture, so it could read steerable's
    ``/proc/PID/environ``, where the model's key is. A non-dumpable process's ``/proc`` files belong
    to root and are readable only with ``CAP_SYS_PTRACE``, which a container user, root included,
    lacks under Docker's default capabilities. Idempotent; a failure is ignored (the key's other
    guard, the children's scrubbed environment, holds regardless).
    """
    if sys.platform != "linux":
        return
    import ctypes  # here, not at start-up

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


_PR_SET_DUMPABLE = 4
