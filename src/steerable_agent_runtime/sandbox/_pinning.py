"""The launcher, pinned when this module is imported (at boot), and the argv that runs a plan through it.

The launcher (``_launch.py``) runs outside the sandbox, so nothing a sandboxed command can write
may change what it runs: see :func:`_pinned_launcher`.
"""

from __future__ import annotations

import atexit
import importlib.util
import marshal
import os
import shutil
import struct
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ..errors import SandboxUnavailableError
from ._backend import LaunchPlan
from ._policy import SandboxPolicy

__all__ = [
    "LAUNCHER",
    "PINNED_PYTHON",
    "TRAMPOLINE",
    "launcher_argv",
    "launcher_code",
    "refuse_a_writable_launcher",
    "trampoline_code",
]

LAUNCHER: Final = str(Path(__file__).with_name("_launch.py"))
"""The launcher script, run as ``python -I -S LAUNCHER [options] -- argv``."""

TRAMPOLINE: Final = str(Path(__file__).with_name("_trampoline.py"))
"""What an editor's terminal runs for ``bash``: ``python -I -S TRAMPOLINE RUN_DIR`` (``_handoff.py``)."""


def _pinned_launcher() -> tuple[str, str]:
    """The interpreter and the launcher bytecode, fixed when this module is imported (at boot).

    The launcher runs *outside* the sandbox (it applies the limits, then starts the backend), so
    nothing a sandboxed command can write may change what it runs: a ``.venv/bin/python`` or an
    editable install of steerable inside the workspace is writable from the sandbox. So the
    interpreter is the real file behind ``sys.executable`` (a venv's ``python`` is a symlink to
    the base interpreter, outside the workspace), resolved now, and the launcher's source is read
    now and compiled into a private (0700) directory; later edits of ``_launch.py`` or its
    ``__pycache__`` are never executed by this process.
    """
    python = os.path.realpath(sys.executable) if sys.executable else shutil.which("python3") or "python3"
    try:
        private = tempfile.mkdtemp(prefix="steerable-launch-")
        atexit.register(shutil.rmtree, private, True)
        return python, _pinned(LAUNCHER, private)
    except (OSError, SyntaxError, ValueError):
        return python, LAUNCHER


def _pinned(script: str, private: str) -> str:
    """``script`` compiled now into ``private`` (0700); the bytecode file's path."""
    code = compile(Path(script).read_bytes(), script, "exec", dont_inherit=True)
    target = os.path.join(private, Path(script).stem + ".pyc")
    with open(target, "wb") as fh:
        fh.write(importlib.util.MAGIC_NUMBER + struct.pack("<III", 0, 0, 0) + marshal.dumps(code))
    return target


PINNED_PYTHON, _PINNED_LAUNCHER = _pinned_launcher()
"""The interpreter that runs the launcher (``realpath(sys.executable)`` at import)."""

_PINNED_TRAMPOLINE = TRAMPOLINE
if _PINNED_LAUNCHER != LAUNCHER:  # pinned beside the launcher, for the same reason
    try:
        _PINNED_TRAMPOLINE = _pinned(TRAMPOLINE, os.path.dirname(_PINNED_LAUNCHER))
    except (OSError, SyntaxError, ValueError):
        pass


def refuse_a_writable_launcher(policy: SandboxPolicy) -> None:
    """What runs outside the sandbox must not be writable from inside it.

    That is the interpreter, the launcher's and the trampoline's bytecode and the private folder
    they were pinned into: a sandboxed command that could replace one would run unsandboxed the
    next time (a Python installed inside the workspace; ``TMPDIR`` inside it, where the pinned
    copies go; a failed pin, which leaves the package's own ``_launch.py``, maybe an editable
    install inside the workspace). Paths are compared resolved, symlinks followed.

    Raises:
        SandboxUnavailableError: One of them lies inside a writable root; the message names it.
    """
    pinned = (
        (
            PINNED_PYTHON,
            "the Python interpreter running steerable",
            "run steerable with a Python installed outside the workspace",
        ),
        (
            os.path.dirname(_PINNED_LAUNCHER),
            "the sandbox launcher's private copy",
            "set TMPDIR to a folder outside the workspace",
        ),
        (_PINNED_LAUNCHER, "the sandbox launcher", "install steerable outside the workspace"),
        (_PINNED_TRAMPOLINE, "the terminal relay", "install steerable outside the workspace"),
    )
    for root in policy.writable_roots:
        real = os.path.realpath(root).rstrip("/") + "/"
        for path, what, fix in pinned:
            resolved = os.path.realpath(path)
            if resolved + "/" == real or resolved.startswith(real):
                raise SandboxUnavailableError(
                    f"{what} ({resolved}) is inside the writable root {real.rstrip('/') or '/'}: a sandboxed "
                    f"command could replace it and run unsandboxed next time; {fix}",
                    tried={"launcher": f"{resolved} is writable from the sandbox"},
                )


def launcher_code() -> str:
    """The launcher's bytecode file, compiled from the source read when this module was imported.

    See :func:`_pinned_launcher` for why it is pinned (a sandboxed command can write the
    workspace, and an editable install or a venv may live there).
    """
    return _PINNED_LAUNCHER


def trampoline_code() -> str:
    """The trampoline's bytecode file (``_trampoline.py``), pinned as :func:`launcher_code` is."""
    return _PINNED_TRAMPOLINE


def launcher_argv(plan: LaunchPlan, policy: SandboxPolicy, *, cgroups: Sequence[Path] = ()) -> list[str]:
    """The full argv that starts ``plan`` through the launcher, with the limits and the plan's options.

    Args:
        plan: The backend's plan (a ``direct`` one too: the launcher then execs bubblewrap).
        policy: Supplies the resource limits.
        cgroups: ``cgroup.procs`` files the launcher joins first (one per hierarchy).
    """
    limits = policy.limits
    options = ["--cpu", str(limits.cpu_seconds), "--as", str(limits.memory_bytes)]
    options += ["--nproc", str(limits.max_processes)]
    for procs in cgroups:
        options += ["--cgroup", str(procs)]
    if plan.seccomp_fd_at is not None:
        options += ["--seccomp-fd-at", str(plan.seccomp_fd_at), "--seccomp-deny", plan.seccomp_deny]
    return [PINNED_PYTHON, "-I", "-S", launcher_code(), *options, *plan.launcher_options, "--", *plan.argv]
