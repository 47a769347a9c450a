"""Confined mode: the host already sandboxes the sidecar (layer 1), so no layer-2 wrap is added."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ._backend import INHERITED, LaunchPlan, SandboxInfo
from ._policy import SandboxPolicy

__all__ = ["InheritedBackend"]


class InheritedBackend:
    """``STEERABLE_SIDECAR_CONFINED=1``: run the command inside the host's layer-1 boundary.

    A confined sidecar cannot apply a second sandbox to its child (macOS refuses a nested
    ``sandbox_apply`` once the outer profile allows outbound network), so the command inherits the
    layer-1 boundary and results say so: ``{"backend": "inherited", "enforcement": "partial",
    "via": "layer1"}``. The allowlisted environment, the resource limits, the private
    ``TMPDIR`` and, on Linux, the dropped capabilities and the supervising launcher still apply.
    Spec: Inheriting layer-1.
    """

    @property
    def info(self) -> SandboxInfo:
        """``inherited``, ``partial``, via ``layer1``."""
        return INHERITED

    def unavailable_reason(self) -> str | None:
        """Always ``None``: layer 1 is the host's promise."""
        return None

    def plan(self, argv: Sequence[str], policy: SandboxPolicy, *, private_tmp: Path) -> LaunchPlan:
        """The command itself; on Linux the launcher drops capabilities and supervises it."""
        linux = sys.platform.startswith("linux")
        tmp = os.path.realpath(private_tmp)
        return LaunchPlan(
            argv=tuple(argv),
            launcher_options=("--drop-caps", "--supervise") if linux else (),
            env={"TMPDIR": tmp, "TEMP": tmp, "TMP": tmp},
            supervised=linux,
        )
