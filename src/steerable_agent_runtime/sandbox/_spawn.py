"""One way to start a sandboxed child: choose the backend, build the policy, spawn under it.

``bash``, ``run_code`` and ``web_fetch``'s HTML converter all go through :class:`SandboxSpawner`:
the backend is the one given, or the one :func:`select_backend` picks for the configuration (in a
worker thread: its probes block); the policy takes the configuration's network switch and limits
unless told otherwise; the child gets the allowlisted environment (:func:`child_environment`), or
in the container posture the environment without credentials (:func:`container_environment`).
``docs/sandbox.md`` (Building on it) shows it in use.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ._config import SandboxConfig
from ._policy import ResourceLimits, SandboxPolicy, child_environment, container_environment

if TYPE_CHECKING:  # the runner and the backends load at the first spawn (start-up cost)
    from ._backend import SandboxBackend
    from ._output import OutputObserver, RunResult
    from ._runner import SandboxedProcess

__all__ = ["SandboxSpawner"]


@dataclass(frozen=True, slots=True)
class SandboxSpawner:
    """Chooses a backend, builds a policy and spawns a child under them, the same way for every tool.

    Attributes:
        config: The sandbox settings (``SandboxConfig.from_env``): backend choice, network, limits.
        backend: Use this backend instead of selecting one (tests, embedders with their own).
        environ: The environment whose allowlist the child gets (default ``os.environ``, read at
            each spawn); in the container posture, the whole of it but credentials.
    """

    config: SandboxConfig
    backend: SandboxBackend | None = None
    environ: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if self.config.container:  # before any model call: no command may read the key from us
            from ._container import keep_environment_private

            keep_environment_private()

    async def select(self) -> SandboxBackend:
        """Return :attr:`backend`, or the one :func:`select_backend` picks for :attr:`config`.

        The selection runs in a worker thread (its probes block); it is not remembered here
        (``select_backend`` caches its probes per process).

        Raises:
            SandboxUnavailableError: No backend can run here (nothing may run unconfined).
        """
        if self.backend is not None:
            return self.backend
        from ._select import select_backend

        return await asyncio.to_thread(select_backend, self.config)

    def environment(self) -> dict[str, str]:
        """The child's environment: the allowlist of :attr:`environ` (:func:`child_environment`).

        In the container posture (``config.container``), :attr:`environ` without credentials
        (:func:`container_environment`).
        """
        if self.config.container:
            return container_environment(self.environ)
        return child_environment(self.environ)

    def policy(
        self,
        writable_roots: Sequence[str | os.PathLike[str]] = (),
        *,
        read_only: Sequence[str | os.PathLike[str]] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        network: bool | None = None,
        limits: ResourceLimits | None = None,
    ) -> SandboxPolicy:
        """The policy of one child: :attr:`config`'s network, limits (unless given) and deny-read set.

        Args:
            writable_roots: Directories the child may write (besides its private ``TMPDIR``).
            read_only: Paths under them kept read-only where the backend can; ``None`` (the
                default): the protected paths the backend finds itself (:class:`SandboxPolicy`).
            cwd: The working directory (default: the first writable root).
            network: Overrides ``config.network``.
            limits: Overrides ``config.limits``.

        Raises:
            ConfigError: An invalid root or limit (from :class:`SandboxPolicy`).
        """
        return SandboxPolicy(
            writable_roots=tuple(Path(root) for root in writable_roots),
            network=self.config.network if network is None else network,
            limits=self.config.limits if limits is None else limits,
            read_only=None if read_only is None else tuple(Path(path) for path in read_only),
            cwd=None if cwd is None else Path(cwd),
            deny_read=self.config.deny_read,
        )

    async def spawn(
        self,
        argv: Sequence[str],
        policy: SandboxPolicy,
        *,
        backend: SandboxBackend,
        stdin: bool = False,
        stdout: Literal["capture", "pipe"] = "capture",
        timeout_s: float | None = None,
        on_output: OutputObserver | None = None,
    ) -> SandboxedProcess:
        """Start ``argv`` under ``backend`` (from :meth:`select`) with ``policy`` and :meth:`environment`.

        See :func:`spawn_sandboxed` for ``stdin``, ``stdout``, ``timeout_s`` and ``on_output``.

        Raises:
            SandboxUnavailableError: The interpreter running steerable lies inside a writable root.
            OSError: The sandbox cannot be started at all.
        """
        from ._runner import spawn_sandboxed

        return await spawn_sandboxed(
            argv,
            policy,
            backend=backend,
            env=self.environment(),
            stdin=stdin,
            stdout=stdout,
            timeout_s=timeout_s,
            on_output=on_output,
        )

    async def run(
        self,
        argv: Sequence[str],
        policy: SandboxPolicy,
        *,
        backend: SandboxBackend,
        timeout_s: float | None = None,
    ) -> RunResult:
        """Run ``argv`` to the end like :meth:`spawn`, its stdin ``/dev/null`` (:func:`run_sandboxed`)."""
        from ._runner import run_sandboxed

        return await run_sandboxed(argv, policy, backend=backend, env=self.environment(), timeout_s=timeout_s)
