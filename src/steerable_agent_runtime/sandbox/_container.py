"""The container posture: steerable runs inside a container that is itself the boundary.

``STEERABLE_SANDBOX=container`` (an eval task container: Harbor, Terminal-Bench). No layer-2 wrap is
added, so a command may write wherever the container's user may and use the container's network;
the plan is ``detached``, so what a command leaves running outlives the call. ``docs/sandbox.md``,
"The container posture".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ._backend import CONTAINER, LaunchPlan, SandboxInfo
from ._policy import SandboxPolicy

__all__ = ["ContainerBackend"]


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
        """
        return LaunchPlan(argv=tuple(argv), detached=True)
