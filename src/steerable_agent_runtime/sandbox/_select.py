"""The selection ladder: which backend runs a command on this machine, or a refusal."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Final

from ..errors import SandboxUnavailableError
from ._backend import SandboxBackend
from ._bwrap import BubblewrapBackend
from ._config import CONFINED_ENV, SANDBOX_ENV, SandboxConfig
from ._container import ContainerBackend
from ._inherited import InheritedBackend
from ._landlock import LandlockBackend
from ._seatbelt import SeatbeltBackend

__all__ = ["LADDERS", "default_backends", "select_backend"]

LADDERS: Final[Mapping[str, tuple[str, ...]]] = {"linux": ("bwrap", "landlock"), "darwin": ("seatbelt",)}
"""The backends ``auto`` tries, in order, per platform. Elsewhere there is none."""

_FIX: Final = (
    "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or use a Linux kernel with "
    f"Landlock; on macOS, sandbox-exec must be able to run. If the host already runs this sidecar "
    f"inside an OS sandbox, set {CONFINED_ENV}=1 to inherit that boundary."
)


def default_backends() -> dict[str, SandboxBackend]:
    """One instance of every shipped backend, by name (probes are cached per process anyway)."""
    return {"bwrap": BubblewrapBackend(), "landlock": LandlockBackend(), "seatbelt": SeatbeltBackend()}


def select_backend(
    config: SandboxConfig | None = None,
    *,
    platform: str | None = None,
    backends: Mapping[str, SandboxBackend] | None = None,
) -> SandboxBackend:
    """Pick the backend that runs sandboxed commands here.

    ``container`` (``STEERABLE_SANDBOX=container``): the :class:`ContainerBackend`. Confined
    (``STEERABLE_SIDECAR_CONFINED=1``): the :class:`InheritedBackend`, whatever else is
    configured. Otherwise ``config.backend``: ``auto`` takes the first backend of the platform's
    :data:`LADDERS` whose :meth:`~SandboxBackend.unavailable_reason` is ``None``; a name takes that
    one or refuses; ``none`` refuses (``docs/sandbox.md``, "Selection"). The first call may run a
    probe (tens of milliseconds, once per process): call it from a worker thread in async code.

    Args:
        config: The configuration (default: resolved from the environment).
        platform: A ``sys.platform`` value (default: this machine's); tests use it to walk another
            platform's ladder.
        backends: The candidates by name (default :func:`default_backends`); tests inject fakes
            to exercise the ladder.

    Returns:
        The backend to use.

    Raises:
        SandboxUnavailableError: When no backend can run: ``error`` is ``"sandbox_unavailable"``,
            the message says what was tried and how to fix it. Nothing is ever run unconfined.
        ConfigError: When ``config`` is ``None`` and the environment holds an invalid value.
    """
    config = SandboxConfig.from_env() if config is None else config
    if config.container:
        return ContainerBackend()
    if config.confined:
        return InheritedBackend()
    system = platform or sys.platform
    key = "linux" if system.startswith("linux") else system
    if config.backend == "none":
        raise SandboxUnavailableError(
            f"{SANDBOX_ENV}=none allows no sandbox backend, so the command was not run. Unset "
            f"{SANDBOX_ENV} to let steerable choose one, or set {CONFINED_ENV}=1 when the host "
            "already sandboxes this sidecar.",
            tried={"none": f"{SANDBOX_ENV}=none"},
        )
    candidates = default_backends() if backends is None else backends
    names = LADDERS.get(key, ()) if config.backend == "auto" else (config.backend,)
    tried: dict[str, str] = {}
    for name in names:
        backend = candidates.get(name)
        reason = f"no backend called {name!r} is known" if backend is None else backend.unavailable_reason()
        if reason is None and backend is not None:
            return backend
        tried[name] = reason or "unavailable"
    listed = "; ".join(f"{name}: {why}" for name, why in tried.items())
    if config.backend != "auto":
        message = (
            f"{SANDBOX_ENV}={config.backend} forces that backend, which cannot run here ({listed}), so "
            f"the command was not run. Unset {SANDBOX_ENV} to let steerable choose a backend that "
            f"works here, or make that one work. {_FIX}"
        )
    elif not names:
        tried[key] = "no layer-2 sandbox backend exists for this platform"
        message = (
            f"No layer-2 sandbox backend exists for {system}, so the command was not run. Run the "
            f"sidecar inside a host sandbox and set {CONFINED_ENV}=1."
        )
    else:
        message = f"No layer-2 sandbox can run here ({listed}), so the command was not run. {_FIX}"
    raise SandboxUnavailableError(message, tried=tried)
