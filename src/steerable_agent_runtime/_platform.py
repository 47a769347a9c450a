"""Where steerable runs: Linux and macOS; on Windows it says so in one sentence (README, "Install").

The file tools lock with ``fcntl`` (POSIX record locks) and ``bash`` runs under a Linux or macOS
sandbox, so on Windows ``import steerable_agent_runtime`` raises :class:`ImportError` with
:data:`WINDOWS_UNSUPPORTED` before a module's ``import fcntl`` would fail obscurely, and the
``steerable`` command prints that sentence and exits 2 (``steerable_sidecar._windows``).
"""

from __future__ import annotations

import sys
from typing import Final

__all__ = ["WINDOWS_UNSUPPORTED", "refuse_unsupported_platform"]

WINDOWS_UNSUPPORTED: Final = (
    "steerable: Windows is not supported yet: the file tools need POSIX file locks and bash needs a "
    "Linux or macOS sandbox; use WSL"
)
"""What ``import steerable_agent_runtime`` and the ``steerable`` command say on Windows."""


def refuse_unsupported_platform() -> None:
    """Raise :class:`ImportError` (:data:`WINDOWS_UNSUPPORTED`) on Windows; nothing elsewhere."""
    if sys.platform == "win32":
        raise ImportError(WINDOWS_UNSUPPORTED, name="steerable_agent_runtime")
