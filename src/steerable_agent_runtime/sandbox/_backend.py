"""The backend protocol: a name, an enforcement level, and how an argv plus a policy become a launch.

A plan runs through the launcher (``_launch.py``), which applies the resource limits and whatever
the backend asks of it (Landlock, the socket filter, supervision) before the command starts;
a ``direct`` plan (bubblewrap) is started by the runner itself, which applies the same limits to
the sandbox from outside while bubblewrap waits for it (see ``_handshake.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Protocol, runtime_checkable

from ._policy import SandboxPolicy

__all__ = ["CONTAINER", "INHERITED", "Enforcement", "LaunchPlan", "SandboxBackend", "SandboxInfo"]

Enforcement = Literal["full", "partial", "none"]
"""``full``: the backend enforces the whole policy, including its own PID namespace or an
equivalent isolation of other processes. ``partial``: some of it (``docs/sandbox.md`` lists what).
``none``: nothing of it; the container around steerable is the boundary (``STEERABLE_SANDBOX=container``)."""


@dataclass(frozen=True, slots=True)
class SandboxInfo:
    """Which sandbox a command ran under: the ``data._sandbox`` of ``bash`` and ``run_code`` results.

    Attributes:
        backend: ``bwrap``, ``landlock``, ``seatbelt``, ``inherited`` (layer 1, confined mode), or
            ``container`` (the container posture).
        enforcement: ``full``, ``partial`` or ``none``.
        via: ``layer1`` for the inherited boundary; ``None`` otherwise.
    """

    backend: str
    enforcement: Enforcement
    via: str | None = None

    def as_data(self) -> dict[str, Any]:
        """The wire form: ``{"backend", "enforcement"}``, plus ``"via"`` when set.

        Spec: Inheriting layer-1.
        """
        data: dict[str, Any] = {"backend": self.backend, "enforcement": self.enforcement}
        if self.via is not None:
            data["via"] = self.via
        return data


INHERITED: Final = SandboxInfo("inherited", "partial", "layer1")
"""The ``_sandbox`` of a confined sidecar (``STEERABLE_SIDECAR_CONFINED=1``), exactly as the spec gives it."""

CONTAINER: Final = SandboxInfo("container", "none")
"""The ``_sandbox`` of the container posture (``STEERABLE_SANDBOX=container``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchPlan:
    """What a backend wants spawned for one command.

    Attributes:
        argv: What the launcher executes after its own setup: the command, or the backend's
            wrapper (``bwrap ... -- command``, ``sandbox-exec ... -- command``).
        launcher_options: Options for the launcher (``--landlock``, ``--rw PATH``, ...).
        env: Variables set on top of the allowlisted environment (``TMPDIR`` and friends).
        supervised: The launcher stays as the command's parent and, on ``SIGTERM`` or when the
            command exits, kills every process the command left behind.
        seccomp_fd_at: Index in ``argv`` of a placeholder for the seccomp filter's descriptor
            (bubblewrap's ``--seccomp FD``): whoever starts the plan writes the filter to a pipe
            and puts the read end's number there; ``None`` when there is no filter to pass.
        seccomp_deny: What that filter refuses, as the launcher's ``--seccomp-deny`` list
            (``net``, ``ipc``, ``setid``, ``chmod``; see ``seccomp_program``).
        direct: ``argv`` is bubblewrap, which the runner starts itself, without the launcher: it
            adds ``--info-fd``, ``--block-fd`` and ``--sync-fd``, and while bubblewrap waits it
            sets the limits and joins the cgroups of the sandbox's first process, which then
            forks the command. ``launcher_argv`` still runs any plan through the launcher.
        detached: ``argv`` runs as given: no launcher, no resource limits, no run cgroups, and
            what the command leaves running is not killed when it exits (a timeout or a
            cancellation still kills its process group). The container posture.
    """

    argv: tuple[str, ...]
    launcher_options: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    supervised: bool = False
    seccomp_fd_at: int | None = None
    seccomp_deny: str = "net,setid"
    direct: bool = False
    detached: bool = False


@runtime_checkable
class SandboxBackend(Protocol):
    """A layer-2 sandbox: bubblewrap, Landlock, Seatbelt (or the inherited layer 1)."""

    @property
    def info(self) -> SandboxInfo:
        """Name and enforcement level, as reported in ``data._sandbox``."""
        ...

    def unavailable_reason(self) -> str | None:
        """``None`` when this backend can run here, else why not (with the fix, when there is one).

        May run a functional probe the first time; the answer is cached per process.
        """
        ...

    def plan(self, argv: Sequence[str], policy: SandboxPolicy, *, private_tmp: Path) -> LaunchPlan:
        """Turn a command and a policy into a :class:`LaunchPlan`.

        Args:
            argv: The command and its arguments.
            policy: What the command may do.
            private_tmp: A fresh empty directory for this run's temporary files (writable; the
                runner removes it afterwards).
        """
        ...
