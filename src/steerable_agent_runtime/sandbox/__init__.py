"""Layer-2 sandboxes for ``bash`` and ``run_code``: backends, their selection, and the runner.

A command runs under the first backend of the platform's ladder that works (Linux: bubblewrap,
then Landlock; macOS: Seatbelt); no backend refuses the call (``sandbox_unavailable``), never
runs it unconfined; under a host sandbox (``STEERABLE_SIDECAR_CONFINED=1``) the layer-2 wrap is
skipped, and in the container posture (``STEERABLE_SANDBOX=container``) the container is the
boundary: no wrap, and what a command leaves running outlives the call, on record (``_jobs``).
Tools build on it through :class:`SandboxSpawner` (select, policy, spawn). Spec:
``run_code`` (layer-2 backend, Child environment, Inheriting layer-1); the long form and an
example: ``docs/sandbox.md``.

Each public name is imported from its module on first use (PEP 562 ``__getattr__``): building the
``bash`` tool (``bash_tool``) loads the settings alone; the runner, the backends and the
protected-path guard load at its first call.
"""

import typing as _typing

from steerable_agent_runtime.lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from .._protected import PROTECTED_ENV
    from ._audit import AuditOutcome, SnapshotTooLarge
    from ._backend import CONTAINER, INHERITED, Enforcement, LaunchPlan, SandboxBackend, SandboxInfo
    from ._bash import BASH_DEFAULT_TIMEOUT_MS, BASH_MAX_TIMEOUT_MS, bash_tool
    from ._bwrap import BubblewrapBackend
    from ._cgroup import remove_run_cgroups
    from ._codes import SandboxErrorCode
    from ._config import (
        BACKEND_CHOICES,
        CONFINED_ENV,
        LIMIT_ENV,
        NETWORK_ENV,
        SANDBOX_ENV,
        BackendChoice,
        SandboxConfig,
    )
    from ._container import ContainerBackend
    from ._deny_moves import DenyReadDisplaced
    from ._guard import GuardedRun, guard_protected_paths, protected_result, snapshot_too_large
    from ._inherited import InheritedBackend
    from ._jobs import JOB_TOKEN_ENV, BackgroundJob, jobs_dir, list_jobs, stop_jobs
    from ._landlock import LandlockBackend, detect_landlock_abi
    from ._output import CapturedOutput, RunResult
    from ._policy import (
        CHILD_ENV_ALLOWLIST,
        SECRET_SETTINGS,
        ResourceLimits,
        SandboxPolicy,
        absolute_python_path,
        child_environment,
        container_environment,
    )
    from ._protect import ScanCache, known_entries_file
    from ._runner import SandboxedProcess, run_sandboxed, spawn_sandboxed
    from ._seatbelt import SeatbeltBackend, seatbelt_profile
    from ._select import LADDERS, default_backends, select_backend
    from ._spawn import SandboxSpawner

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".._protected": ("PROTECTED_ENV",),
    "._backend": (
        "CONTAINER",
        "INHERITED",
        "Enforcement",
        "LaunchPlan",
        "SandboxBackend",
        "SandboxInfo",
    ),
    "._audit": (
        "AuditOutcome",
        "SnapshotTooLarge",
    ),
    "._bash": (
        "BASH_DEFAULT_TIMEOUT_MS",
        "BASH_MAX_TIMEOUT_MS",
        "bash_tool",
    ),
    "._bwrap": ("BubblewrapBackend",),
    "._cgroup": ("remove_run_cgroups",),
    "._codes": ("SandboxErrorCode",),
    "._config": (
        "BACKEND_CHOICES",
        "CONFINED_ENV",
        "LIMIT_ENV",
        "NETWORK_ENV",
        "SANDBOX_ENV",
        "BackendChoice",
        "SandboxConfig",
    ),
    "._container": ("ContainerBackend",),
    "._deny_moves": ("DenyReadDisplaced",),
    "._guard": (
        "GuardedRun",
        "guard_protected_paths",
        "protected_result",
        "snapshot_too_large",
    ),
    "._inherited": ("InheritedBackend",),
    "._jobs": (
        "JOB_TOKEN_ENV",
        "BackgroundJob",
        "jobs_dir",
        "list_jobs",
        "stop_jobs",
    ),
    "._landlock": (
        "LandlockBackend",
        "detect_landlock_abi",
    ),
    "._output": (
        "CapturedOutput",
        "RunResult",
    ),
    "._policy": (
        "CHILD_ENV_ALLOWLIST",
        "SECRET_SETTINGS",
        "ResourceLimits",
        "SandboxPolicy",
        "absolute_python_path",
        "child_environment",
        "container_environment",
    ),
    "._protect": ("ScanCache", "known_entries_file"),
    "._runner": (
        "SandboxedProcess",
        "run_sandboxed",
        "spawn_sandboxed",
    ),
    "._seatbelt": (
        "SeatbeltBackend",
        "seatbelt_profile",
    ),
    "._select": (
        "LADDERS",
        "default_backends",
        "select_backend",
    ),
    "._spawn": ("SandboxSpawner",),
}
"""Each module (relative to this package) and the public names it provides (as the block above)."""


__all__ = [
    "BACKEND_CHOICES",
    "BASH_DEFAULT_TIMEOUT_MS",
    "BASH_MAX_TIMEOUT_MS",
    "CHILD_ENV_ALLOWLIST",
    "CONFINED_ENV",
    "CONTAINER",
    "INHERITED",
    "JOB_TOKEN_ENV",
    "LADDERS",
    "LIMIT_ENV",
    "NETWORK_ENV",
    "PROTECTED_ENV",
    "SANDBOX_ENV",
    "SECRET_SETTINGS",
    "AuditOutcome",
    "BackendChoice",
    "BackgroundJob",
    "BubblewrapBackend",
    "CapturedOutput",
    "ContainerBackend",
    "DenyReadDisplaced",
    "Enforcement",
    "GuardedRun",
    "InheritedBackend",
    "LandlockBackend",
    "LaunchPlan",
    "ResourceLimits",
    "RunResult",
    "SandboxBackend",
    "SandboxConfig",
    "SandboxErrorCode",
    "SandboxInfo",
    "SandboxPolicy",
    "SandboxSpawner",
    "SandboxedProcess",
    "ScanCache",
    "SeatbeltBackend",
    "SnapshotTooLarge",
    "absolute_python_path",
    "bash_tool",
    "child_environment",
    "container_environment",
    "default_backends",
    "detect_landlock_abi",
    "guard_protected_paths",
    "jobs_dir",
    "known_entries_file",
    "list_jobs",
    "protected_result",
    "remove_run_cgroups",
    "run_sandboxed",
    "seatbelt_profile",
    "select_backend",
    "snapshot_too_large",
    "spawn_sandboxed",
    "stop_jobs",
]


if not _typing.TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
