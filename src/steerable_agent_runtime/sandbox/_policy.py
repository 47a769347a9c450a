"""What a sandboxed command may do (policy and limits), and the allowlisted child environment.

Spec: ``run_code`` › Child environment (the allowlist is the spec's, shared by ``bash``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..config import check_int_fields, credential_name, int_field, url_password
from ..errors import ConfigError

__all__ = [
    "CHILD_ENV_ALLOWLIST",
    "DEFAULT_PATH",
    "SECRET_SETTINGS",
    "ResourceLimits",
    "SandboxPolicy",
    "absolute_python_path",
    "child_environment",
    "container_environment",
]

CHILD_ENV_ALLOWLIST: Final = frozenset(
    {"PATH", "HOME", "TMPDIR", "TEMP", "TMP", "LANG", "PYTHONPATH", "SYSTEMROOT", "SYSTEMDRIVE"}
)
"""The variables a child inherits (plus every ``LC_*``); spec: Child environment.

``SYSTEMROOT`` and ``SYSTEMDRIVE`` pass on Windows only."""

_WINDOWS_ONLY: Final = frozenset({"SYSTEMROOT", "SYSTEMDRIVE"})

DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
"""``PATH`` for a child whose parent has none."""

SECRET_SETTINGS: Final = frozenset({"STEERABLE_EXTRA_HEADERS", "STEERABLE_EXTRA_BODY", "STEERABLE_BASE_URL"})
"""steerable's own variables that may hold a credential under another name.

A gateway's headers, a request field a gateway authenticates by, a key in the base URL's path or
query (``https://gw.example/v1?key=...``)."""

GIB: Final = 1024**3


def child_environment(
    environ: Mapping[str, str] | None = None, *, platform: str | None = None
) -> dict[str, str]:
    """Return the environment a sandboxed child gets: the allowlist, nothing else.

    The allowlist (``PATH``, ``HOME``, ``TMPDIR`` / ``TEMP`` / ``TMP``, ``LANG``, ``LC_*``,
    ``PYTHONPATH``, on Windows ``SYSTEMROOT`` / ``SYSTEMDRIVE``) plus ``PYTHONDONTWRITEBYTECODE=1``;
    every key and token is left out. ``PYTHONPATH`` keeps its absolute entries only
    (:func:`absolute_python_path`; SAFE-1). Spec: ``run_code`` › Child environment; why only absence is
    safe: ``docs/run-code.md``. The runner then points ``TMPDIR`` / ``TEMP`` / ``TMP`` at the run's
    private temporary directory.

    Args:
        environ: The parent environment (default ``os.environ``).
        platform: ``sys.platform`` value deciding whether the Windows names pass (default: this
            machine's).

    Returns:
        A new dict; ``PATH`` is always set (to :data:`DEFAULT_PATH` when the parent has none).
    """
    source = os.environ if environ is None else environ
    windows = (platform or sys.platform) == "win32"
    env: dict[str, str] = {}
    for name, value in source.items():
        key = name.upper() if windows else name  # Windows names are case-insensitive
        if key == "PYTHONPATH":
            value = absolute_python_path(value)
            if not value:
                continue
        if key.startswith("LC_") or (key in CHILD_ENV_ALLOWLIST and (windows or key not in _WINDOWS_ONLY)):
            env[name] = value
    if not any(name.upper() == "PATH" if windows else name == "PATH" for name in env):
        env["PATH"] = DEFAULT_PATH
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def container_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the environment of a command in the container posture: everything but credentials.

    The image's variables (``JAVA_HOME``, ``PATH``, a task's own settings) pass as they are. Left
    out: every credential-named variable (:func:`~steerable_agent_runtime.config.credential_name`:
    ``STEERABLE_API_KEY``, ``OPENAI_API_KEYS``, ``GITHUB_TOKEN``, ``PGPASSWORD``...), every
    variable whose value is a URL with a password, and :data:`SECRET_SETTINGS`: the rule
    steerable's log redaction uses to find the secrets it holds.

    Args:
        environ: The parent environment (default ``os.environ``).

    Returns:
        A new dict; ``PATH`` is always set (to :data:`DEFAULT_PATH` when the parent has none).
    """
    source = os.environ if environ is None else environ
    env = {
        name: value
        for name, value in source.items()
        if not credential_name(name) and name.upper() not in SECRET_SETTINGS and url_password(value) is None
    }
    env.setdefault("PATH", DEFAULT_PATH)
    return env


def absolute_python_path(value: str) -> str:
    """``PYTHONPATH`` without its empty and relative entries (SAFE-1).

    Python resolves those against the interpreter's working directory, which for a sandboxed child
    is the workspace: an empty entry (``":/opt/lib"``) or ``"src"`` would put the model's files first
    on ``sys.path``, before the standard library, even under ``-P`` (a planted ``encodings/`` runs
    before any code of the child's).

    Args:
        value: A ``PYTHONPATH`` value (``os.pathsep``-separated).

    Returns:
        The absolute entries, in order, joined again; ``""`` when none is left.
    """
    return os.pathsep.join(entry for entry in value.split(os.pathsep) if os.path.isabs(entry))


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceLimits:
    """Resource limits of one sandboxed run; 0 turns a limit off (not ``max_output_bytes``).

    Each field is read from the variable its :func:`~steerable_agent_runtime.config.int_field`
    names (``STEERABLE_SANDBOX_CPU_SECONDS``...; see
    :class:`~steerable_agent_runtime.sandbox.SandboxConfig`).
    """

    cpu_seconds: int = int_field("STEERABLE_SANDBOX_CPU_SECONDS", 600, floor=0, ceiling=86_400)
    """CPU time per process (``RLIMIT_CPU``), seconds. Default 600, ceiling 86 400."""
    memory_bytes: int = int_field("STEERABLE_SANDBOX_MEMORY_BYTES", 8 * GIB, floor=0, ceiling=1024 * GIB)
    """Address space per process (``RLIMIT_AS``), bytes. Default 8 GiB, ceiling 1 TiB."""
    max_processes: int = int_field("STEERABLE_SANDBOX_MAX_PROCESSES", 1024, floor=0, ceiling=1_000_000)
    """Processes (threads) the command may add. Default 1024, ceiling 1 000 000. ``RLIMIT_NPROC``
    for a non-root user, a ``pids`` cgroup for root."""
    max_output_bytes: int = int_field(
        "STEERABLE_SANDBOX_MAX_OUTPUT_BYTES", 30_000, floor=1, ceiling=100_000_000
    )
    """Bytes kept per captured stream (head and tail, the middle clipped with a marker). Default
    30 000, from 1 to 100 000 000."""

    def __post_init__(self) -> None:
        check_int_fields(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxPolicy:
    """What one sandboxed command may do.

    Everything is readable; only ``writable_roots`` and the run's private temporary directory are
    writable; the network is off unless ``network`` is set. What each backend adds on top (a private
    ``/tmp``, its own PID namespace): ``docs/sandbox.md``, "Policy" and the backends table.

    Attributes:
        writable_roots: Directories the command may change, the workspace first. Each must exist.
            Empty for a command that may write only its private temporary directory (then
            ``cwd`` is required).
        readable_roots: Extra directories that must stay visible (read-only) where the backend hides
            their parent, e.g. under a private ``/tmp`` (steerable's Python and package always are).
        cwd: Working directory (default: the first writable root).
        network: Allow network access (default off).
        limits: Resource limits.
        read_only: Paths inside the writable roots to keep read-only where the backend can
            (bubblewrap binds them; Landlock and Seatbelt cannot). ``None`` (the default): the
            protected paths (FILE-15) the backend finds under each writable root; ``()``: none (the
            opt-out).
        deny_read: Paths the command may not read (SAFE-3; ``SandboxConfig.deny_read``, which
            :meth:`SandboxSpawner.policy` passes on). Missing ones, and ones that are, hold or lie
            in a writable root, are skipped (``_deny.applicable_denials``).
    """

    writable_roots: tuple[Path, ...]
    readable_roots: tuple[Path, ...] = ()
    cwd: Path | None = None
    network: bool = False
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    read_only: tuple[Path, ...] | None = None
    deny_read: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if not self.writable_roots and self.cwd is None:
            raise ConfigError("SandboxPolicy needs a writable root (the workspace) or a cwd")

    @property
    def workdir(self) -> Path:
        """The working directory the command starts in."""
        return self.cwd if self.cwd is not None else self.writable_roots[0]
