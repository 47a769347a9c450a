"""The ``bash`` tool: a shell command in the workspace, under the layer-2 sandbox.

Arguments and result fields are contract (``docs/requirements.md`` CON-1): ``{command, timeout_ms?}`` in,
``{stdout, stderr, stdoutBytes, stderrBytes, exitCode, timedOut, durationMs, _sandbox}`` out, plus
``protectedReverted`` / ``protectedNotReverted`` when the command changed protected paths (FILE-15),
``denyReadRestored`` / ``denyReadNotRestored`` when it moved deny-read entries inside the workspace
(SAFE-3), and in the container posture ``backgroundJobs`` when it left processes running.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

from .._codes import ToolErrorCode
from .._plain_arguments import builtin_tool
from .._protected import PROTECTED_ENV
from .._tool_schemas import TOOL_PARAMETERS
from ..config import env_flag
from ..context import CallContext
from ..lazy import Field  # pydantic's, imported when the validator is built (at the first call)
from ..modes import ToolMode
from ..tools import Tool
from ._codes import SandboxErrorCode
from ._config import LIMIT_ENV, SandboxConfig
from ._spawn import SandboxSpawner

if TYPE_CHECKING:  # the runner, the backends, the guard, the wire types load at the first call (start-up)
    from ..types import ToolResult
    from ._backend import SandboxBackend
    from ._jobs import JobWatch
    from ._output import RunResult
    from ._protect import ScanCache

__all__ = ["BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS", "bash_tool"]

BASH_DEFAULT_TIMEOUT_MS: Final = 120_000
"""``timeout_ms`` when the model gives none (2 minutes)."""
BASH_MAX_TIMEOUT_MS: Final = 600_000
"""The largest ``timeout_ms`` accepted (10 minutes)."""


def bash_tool(
    workspace: str | os.PathLike[str],
    *,
    config: SandboxConfig | None = None,
    environ: Mapping[str, str] | None = None,
    backend: SandboxBackend | None = None,
    allow_protected_writes: bool | None = None,
) -> Tool:
    """Build the ``bash`` tool for one workspace (``local`` mode: it needs consent).

    Each call runs ``bash -c <command>`` in the workspace under the backend :func:`select_backend`
    picks (or ``backend``), with the allowlisted environment and ``config``'s network and limits,
    guarding the protected paths (FILE-15). Its results (exit status, timeout, memory limit,
    ``sandbox_unavailable``, ``protected_reverted``): ``docs/sandbox.md``, "The ``bash`` tool". In
    the container posture (``STEERABLE_SANDBOX=container``) what a command leaves running outlives
    the call, is recorded and listed in the result (``docs/sandbox.md``, "The container posture").

    Args:
        workspace: The directory commands run in and may write to.
        config: Sandbox settings (default: resolved from ``environ``).
        environ: The environment to resolve settings from and to pass the allowlist of (default
            ``os.environ``, read at each call).
        backend: Use this backend instead of selecting one (tests, embedders with their own).
        allow_protected_writes: Let commands change protected paths (no read-only binds, no
            audit). ``None``: ``STEERABLE_ALLOW_PROTECTED_WRITES`` in ``environ`` (default off).

    Returns:
        The tool, not yet registered.

    Raises:
        ConfigError: When ``config`` is ``None`` and a ``STEERABLE_SANDBOX*`` or
            ``STEERABLE_SIDECAR_CONFINED`` variable is invalid, or when
            ``allow_protected_writes`` is ``None`` and ``STEERABLE_ALLOW_PROTECTED_WRITES`` is not
            a boolean (the message names it).
    """
    cfg = SandboxConfig.from_env(environ) if config is None else config
    allow = cfg.container or (  # in the container posture a command may write anything it can
        env_flag(PROTECTED_ENV, False, environ=environ)
        if allow_protected_writes is None
        else allow_protected_writes
    )
    root = Path(workspace).resolve()
    spawner = SandboxSpawner(cfg, backend=backend, environ=environ)
    cap = cfg.limits.max_output_bytes
    scans: ScanCache | None = None  # this workspace's directory listings, reused while unchanged

    async def bash(
        command: str,
        timeout_ms: Annotated[
            int, Field(ge=1, le=BASH_MAX_TIMEOUT_MS, strict=True)
        ] = BASH_DEFAULT_TIMEOUT_MS,
        context: CallContext | None = None,
    ) -> ToolResult:
        """Run a shell command with bash in the workspace, inside an OS sandbox.

        Args:
            command: The command line, run as `bash -c command` in the workspace root.
            timeout_ms: Wall-clock limit in milliseconds (default 120000, at most 600000); on
                expiry the command and everything it started are killed.
            context: The call's context (injected, not in the schema): when it has an output sink,
                the command's output streams there while it runs (``_live.py``); when it has a
                terminal, the command runs there, sandboxed the same way (``_handoff.py``).
        """
        from ..types import ToolResult
        from ._audit import SnapshotTooLarge
        from ._deny_moves import DenyReadDisplaced
        from ._guard import guard_protected_paths, protected_result, snapshot_too_large
        from ._live import live_output
        from ._protect import ScanCache, known_entries_file

        try:
            os.fsencode(command)
        except UnicodeEncodeError as exc:  # a lone surrogate (a "\\ud83d" escape in the model's JSON)
            bad = ascii(command[exc.start : exc.end])
            return ToolResult.retry(
                f"the command holds {bad}, half of a UTF-16 pair that is no character: send it as "
                "valid Unicode text",
                data={"code": ToolErrorCode.INVALID_ARGUMENTS},
            )
        nonlocal scans
        # the container posture's leftovers are on record through its own relay: never handed over
        terminal = context.terminal if context is not None and not cfg.container else None
        if scans is None:  # the protected entries earlier processes found here are guarded too
            scans = ScanCache(known_entries_file(str(root), environ))
        chosen = await spawner.select()
        shell = shutil.which("bash", path=spawner.environment().get("PATH")) or "/bin/sh"
        argv = [shell, "-c", command]
        watch: JobWatch | None = None
        if cfg.container:  # what the command leaves running outlives the call, on record
            from ._jobs import JobWatch

            watch = await asyncio.to_thread(JobWatch.begin, environ)
            argv = watch.argv(argv)
        try:
            async with guard_protected_paths(
                root, chosen, allow=allow, cache=scans, deny_read=cfg.deny_read, environ=environ
            ) as guarded:
                policy = spawner.policy((root,), read_only=guarded.read_only)
                run = None
                if terminal is not None:  # the editor's terminal runs the sandbox's own start
                    from ._handoff import run_in_terminal

                    run = await run_in_terminal(
                        terminal,
                        argv,
                        policy,
                        backend=chosen,
                        env=spawner.environment(),
                        timeout_s=timeout_ms / 1000,
                    )
                if run is None:
                    async with live_output(context) as observe:
                        async with await spawner.spawn(
                            argv, policy, backend=chosen, timeout_s=timeout_ms / 1000, on_output=observe
                        ) as proc:
                            run = await proc.finish()
        except SnapshotTooLarge:
            return snapshot_too_large("command")
        except DenyReadDisplaced as exc:  # an earlier run moved a secret that could not be put back
            return exc.result("command")
        result = _read_only_hint(
            _run_result(run, timeout_ms, memory_bytes=cfg.limits.memory_bytes, container=cfg.container),
            guarded.read_only,
            root,
            cfg.deny_read,
        )
        result = protected_result(result, guarded.outcome, "command", moves=guarded.moves)
        if watch is None:
            return result
        from ._jobs import jobs_result

        left = await asyncio.to_thread(watch.leftovers, proc.pid, command=command, workspace=root)
        return jobs_result(result, left)

    network = "on" if cfg.network else "off"
    description = (  # the first paragraph is the summary compact descriptors keep (docs/harness.md)
        "Run a shell command with bash in the workspace root, inside an OS sandbox: only the "
        f"workspace and $TMPDIR are writable, the network is {network}. Returns stdout, stderr and "
        "exitCode; a non-zero exit is a failure.\n\n"
        f"The environment holds no secrets. stdout and stderr are each clipped to {cap} bytes (head "
        "and tail kept, with the total byte counts). Background processes are killed when the "
        "command exits."
    )
    if cfg.container:
        description = (
            "Run a shell command with bash in the workspace root. The container is the sandbox: the "
            "command may write anywhere the user may and use the container's network. Returns "
            "stdout, stderr and exitCode; a non-zero exit is a failure.\n\n"
            "The environment is the container's, without credentials. stdout and stderr are each "
            f"clipped to {cap} bytes (head and tail kept, with the total byte counts). Background "
            "processes (`server &`, `nohup`, `setsid`) keep running after the command returns: the "
            "result lists them (pid, command) and where their output goes; stop one with `kill PID`."
        )
    if not allow:
        description += (
            " Protected paths (.git, .vscode, .mcp.json, shell start-up files and other editor and "
            "agent configuration) are read-only: a change there is put back after the command."
        )
    built = builtin_tool(  # the schema computed ahead of time; plain arguments need no pydantic
        bash,
        parameters=TOOL_PARAMETERS["bash"],
        description=description,
        mode=ToolMode.LOCAL,
        timeout_ms=BASH_MAX_TIMEOUT_MS + 60_000,
    )
    # MCP's openWorldHint says whether the commands reach the network: off unless the sandbox
    # lets them (STEERABLE_SANDBOX_NETWORK) or the container's network is theirs (docs/mcp.md)
    return replace(built, annotations={"title": "Bash", "openWorldHint": cfg.network or cfg.container})


def _read_only_hint(
    result: ToolResult, read_only: tuple[Path, ...], root: Path, deny_read: tuple[Path, ...]
) -> ToolResult:
    """Say why a write failed with "Read-only file system": which mount refused it, and the fix.

    A protected entry bound read-only (FILE-15), steerable's runtime, a deny-read folder, a path
    outside the workspace and a read-only mount all give the OS's same words; a failed command gets
    the reason after its error, and the opt-out only when it is the protected entries (``_read_only``).
    """
    if result.success:
        return result
    from ._read_only import read_only_hint

    hint = read_only_hint(str((result.data or {}).get("stderr") or ""), root, read_only, deny_read=deny_read)
    if not hint:
        return result
    from ..types import ToolResult

    return ToolResult.retry(f"{result.error}{hint}", data=result.data)


def _run_result(run: RunResult, timeout_ms: int, *, memory_bytes: int, container: bool = False) -> ToolResult:
    from ..types import ToolResult

    data: dict[str, Any] = {
        "stdout": run.stdout.text,
        "stderr": run.stderr.text,
        "stdoutBytes": run.stdout.total_bytes,
        "stderrBytes": run.stderr.total_bytes,
        "exitCode": run.exit_code,
        "timedOut": run.timed_out,
        "durationMs": round(run.duration_ms),
        "_sandbox": run.sandbox.as_data(),
    }
    if run.timed_out:
        killed = "the processes in its process group" if container else "every process it started"
        return ToolResult.retry(
            f"The command timed out after {timeout_ms} ms; it and {killed} were killed.",
            data={**data, "code": SandboxErrorCode.TIMEOUT},
        )
    if run.memory_exceeded:
        return ToolResult.retry(
            (
                f"The command was killed: it and the processes it started went over the memory limit of "
                f"{memory_bytes} bytes together (files written to /tmp and /dev/shm count too; "
                f"{LIMIT_ENV['memory_bytes']}), so all of them were stopped."
            ),
            data={**data, "code": SandboxErrorCode.MEMORY_LIMIT},
        )
    if run.exit_code != 0:
        return ToolResult.retry(
            f"The command exited with status {run.exit_code}.",
            data={**data, "code": SandboxErrorCode.EXIT_STATUS},
        )
    return ToolResult(success=True, data=data)
