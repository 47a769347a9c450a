"""Where steerable keeps its state: the durable session records and spilled data.

``--state-dir``, else ``STEERABLE_STATE_DIR``, else ``$XDG_STATE_HOME/steerable``, else
``~/.local/state/steerable`` (``docs/configuration.md``). Every entry point that keeps sessions
(``steerable sidecar``, ``steerable run``) and ``steerable doctor`` resolve it here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from steerable_agent_runtime.config import STATE_DIR_ENV, default_state_dir, env_text
from steerable_agent_runtime.errors import ConfigError

__all__ = ["STATE_DIR_ENV", "checked_state_dir", "default_state_dir", "environ_with_state_dir"]


def checked_state_dir(
    path: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    create: bool = True,
) -> Path:
    """Return a usable state directory: ``path`` (``--state-dir``), else :func:`default_state_dir`.

    A missing directory is created (mode ``0o700``: session records hold the conversation); an
    existing one must take a new file (probed by creating and removing one).

    Args:
        path: The ``--state-dir`` value; ``None`` or ``""`` uses the default.
        environ: The environment the default is read from (default ``os.environ``).
        create: Create a missing directory (``steerable doctor`` passes ``False``: it checks that
            the nearest existing parent could hold it, and changes nothing on disk).

    Raises:
        ConfigError: When the path is a file, cannot be created or is not writable; the message
            names where the path came from, e.g. ``--state-dir /tmp/x is not a usable directory:
            it is a file`` or ``STEERABLE_STATE_DIR=/tmp/x is not a usable directory: ...``.
    """
    env = os.environ if environ is None else environ
    if path:
        directory = Path(path).expanduser()
        source = f"--state-dir {directory}"
    else:
        directory = default_state_dir(env)
        source = (
            f"{STATE_DIR_ENV}={directory}"
            if env_text(STATE_DIR_ENV, env)
            else f"the state directory {directory}"
        )
    try:
        problem = _state_dir_problem(directory, create=create)
    except OSError as exc:  # a parent we may not enter, a name too long, a symlink loop
        problem = f"it cannot be checked ({exc.strerror or exc})"
    if problem is not None:
        raise ConfigError(f"{source} is not a usable directory: {problem}")
    return directory


def _nearest_existing(directory: Path) -> Path | None:
    """The closest parent of ``directory`` that exists (a dangling symlink counts: it blocks)."""
    return next((p for p in directory.parents if p.exists() or p.is_symlink()), None)


def _state_dir_problem(directory: Path, *, create: bool) -> str | None:
    """Why ``directory`` cannot hold the state (after creating it if missing), or ``None``.

    Raises:
        OSError: When a parent cannot be entered or the path is unusable (``os.stat`` fails).
    """
    if not directory.is_dir():
        problem = _missing_problem(directory, create=create)
        if problem is not None or not create:
            return problem
    sessions = directory / "sessions"
    if (sessions.exists() or sessions.is_symlink()) and not sessions.is_dir():
        return f"{sessions} is not a directory"
    if not create:  # no probe file: os.access also sees a read-only mount
        return None if os.access(directory, os.W_OK | os.X_OK) else "it is not writable"
    return _probe_problem(directory)


def _missing_problem(directory: Path, *, create: bool) -> str | None:
    """Why a path that is not a directory cannot become the state directory (created when ``create``)."""
    if directory.exists():
        return "it is a file" if directory.is_file() else "it is not a directory"
    if directory.is_symlink():
        return "it is a symbolic link to nothing (or a loop)"
    if not create:
        parent = _nearest_existing(directory)
        if parent is None or not parent.is_dir():
            return f"it cannot be created: {parent} is not a directory"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"it cannot be created: {parent} is not writable"
        return None
    try:
        directory.mkdir(mode=0o700, parents=True)
    except FileExistsError:  # created meanwhile: judged below
        pass
    except OSError as exc:
        blocker = _nearest_existing(directory)
        if blocker is not None and not blocker.is_dir():
            kind = "a file" if blocker.is_file() else "not a directory"
            return f"it cannot be created: {blocker} is {kind}"
        return f"it cannot be created ({exc.strerror or exc})"
    return None if directory.is_dir() else "it is not a directory"


def _probe_problem(directory: Path) -> str | None:
    """Whether a new file can be made in ``directory`` (one is created and removed)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".steerable-probe-", dir=directory)
    except OSError as exc:
        return f"it is not writable ({exc.strerror or exc})"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def environ_with_state_dir(state_dir: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default ``os.environ``) with ``STEERABLE_STATE_DIR`` set to ``state_dir``.

    What a command hands the tools it boots once ``--state-dir`` is resolved, so that what reads
    the variable, the sandbox's deny-read set above all (SAFE-3), sees the directory in use.
    """
    return {**(os.environ if environ is None else environ), STATE_DIR_ENV: str(state_dir)}
