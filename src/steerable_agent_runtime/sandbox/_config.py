"""``SandboxConfig``: the sandbox settings, validated, resolved from ``STEERABLE_*`` variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal, get_args

from ..config import env_flag, env_text, int_fields, read_int_fields
from ..errors import ConfigError
from ._deny import deny_read_from_env
from ._policy import ResourceLimits

__all__ = [
    "BACKEND_CHOICES",
    "CONFINED_ENV",
    "LIMIT_ENV",
    "NETWORK_ENV",
    "SANDBOX_ENV",
    "BackendChoice",
    "SandboxConfig",
]

BackendChoice = Literal["auto", "bwrap", "landlock", "seatbelt", "container", "none"]
"""``auto`` walks the platform's ladder; a name forces that backend; ``container`` adds none (the
container around steerable is the boundary); ``none`` allows none."""

BACKEND_CHOICES: Final[tuple[str, ...]] = get_args(BackendChoice)

SANDBOX_ENV: Final = "STEERABLE_SANDBOX"
"""The layer-2 backend: ``auto`` (default), ``bwrap``, ``landlock``, ``seatbelt``, ``container``, ``none``."""
CONFINED_ENV: Final = "STEERABLE_SIDECAR_CONFINED"
"""Set to ``1`` by a host that already runs the sidecar under an OS sandbox (layer 1)."""
NETWORK_ENV: Final = "STEERABLE_SANDBOX_NETWORK"
"""Set to ``1`` to let sandboxed commands use the network (default off)."""
LIMIT_ENV: Final[Mapping[str, str]] = MappingProxyType(
    {name: spec.variable for name, spec in int_fields(ResourceLimits).items()}
)
"""The variable of each :class:`ResourceLimits` field (declared on the field)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxConfig:
    """How sandboxed commands (``bash``, ``run_code``) are run; an immutable value.

    Attributes:
        backend: ``STEERABLE_SANDBOX``: ``auto`` picks the first backend of the platform's ladder
            that works (Linux: bwrap, then Landlock; macOS: Seatbelt); a backend name forces it
            (refusing with ``sandbox_unavailable`` when it cannot run, never falling back);
            ``none`` allows no backend, so every run is refused unless ``confined``;
            ``container`` is the container posture (:attr:`container`).
        confined: ``STEERABLE_SIDECAR_CONFINED``: the host already sandboxes this process; skip
            the layer-2 wrap and inherit its boundary (reported as ``backend: inherited``).
        network: ``STEERABLE_SANDBOX_NETWORK``: let commands use the network (default off).
        limits: Resource limits (``STEERABLE_SANDBOX_CPU_SECONDS``, ``..._MEMORY_BYTES``,
            ``..._MAX_PROCESSES``, ``..._MAX_OUTPUT_BYTES``).
        deny_read: What commands may not read (SAFE-3): the default set of credential folders and
            host configurations, the state directory, and ``STEERABLE_SANDBOX_DENY_READ``
            (``_deny.deny_read_from_env``; the default is that of ``os.environ``).
    """

    backend: BackendChoice = "auto"
    confined: bool = False
    network: bool = False
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    deny_read: tuple[Path, ...] = field(default_factory=deny_read_from_env)

    def __post_init__(self) -> None:
        if self.backend not in BACKEND_CHOICES:
            raise ConfigError(
                f"unknown sandbox backend {self.backend!r}; use one of {', '.join(BACKEND_CHOICES)}"
            )

    @property
    def container(self) -> bool:
        """``STEERABLE_SANDBOX=container``: steerable runs inside a container that is the boundary.

        ``bash`` and ``run_code`` then run without a layer-2 wrap (writes anywhere the user may, the
        container's network), with the environment minus credentials
        (:func:`~steerable_agent_runtime.sandbox.container_environment`), and what a command leaves
        running outlives the call (``docs/sandbox.md``, "The container posture"). It takes
        precedence over ``confined``.
        """
        return self.backend == "container"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SandboxConfig:
        """Resolve the configuration from environment variables.

        Args:
            environ: The environment (default ``os.environ``).

        Returns:
            The validated configuration.

        Raises:
            ConfigError: For an invalid value; the message names the variable and what it accepts.
        """
        env = os.environ if environ is None else environ
        backend = (env_text(SANDBOX_ENV, env) or "auto").lower()
        if backend not in BACKEND_CHOICES:
            raise ConfigError(
                f"{SANDBOX_ENV}={backend!r} is not a sandbox backend; use one of {', '.join(BACKEND_CHOICES)}"
            )
        limits = read_int_fields(ResourceLimits, env)
        return cls(
            backend=backend,  # type: ignore[arg-type]  # checked against BACKEND_CHOICES above
            confined=env_flag(CONFINED_ENV, False, environ=env),
            network=env_flag(NETWORK_ENV, False, environ=env),
            limits=ResourceLimits(**limits),
            deny_read=deny_read_from_env(env),
        )
