"""``run_code``: the model's Python program, run in a sandboxed child interpreter, calling tools.

Spec: ``run_code`` (programmatic tool calls), Child environment, Inheriting layer-1; docs/run-code.md
holds the long form. Opt-in with ``STEERABLE_RUN_CODE=1``; the arguments are ``{code, description}``.

The child (``_child.py``, whose docstring has the frame protocol) runs under the same
layer-2 backend as ``bash``. Each nested call goes through the live executor
(``CallContext.executor``, :mod:`steerable_agent_runtime.context`), consent included; without one
the calls go to the router the tool was built with and one that needs consent is refused
(``consent_required``). Every failure is a ``needsFollowup`` result whose ``data.code`` is listed
in docs/run-code.md, "Result", with the calls and the logs so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import marshal
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from steerable_agent_runtime import (
    CallContext,
    ToolCall,
    ToolErrorCode,
    ToolMode,
    ToolResult,
    ToolRouter,
    new_call_id,
)
from steerable_agent_runtime.config import check_int_fields, env_flag, int_field, int_fields, read_int_fields
from steerable_agent_runtime.errors import SandboxUnavailableError
from steerable_agent_runtime.executor import ApprovalGate, ToolExecutor, mode_lookup
from steerable_agent_runtime.sandbox import (
    LIMIT_ENV,
    PROTECTED_ENV,
    SandboxConfig,
    SandboxPolicy,
    SandboxSpawner,
)
from steerable_agent_runtime.tools import Tool

from ..shared._codes import RunCodeErrorCode
from ._switch import RUN_CODE_ENV, run_code_enabled

if TYPE_CHECKING:  # the runner, the backends and the guard load at the first call (start-up cost)
    from steerable_agent_runtime.sandbox import SandboxBackend, SandboxedProcess, SandboxInfo, ScanCache

__all__ = [
    "CHILD_PROGRAM",
    "RUN_CODE_ENV",
    "RUN_CODE_LIMIT_ENV",
    "RUN_CODE_TOOL_NAME",
    "RunCodeConfig",
    "child_argv",
    "direct_run_executor",
    "run_code_enabled",
    "run_code_tool",
]

RUN_CODE_TOOL_NAME: Final = "run_code"
"""The tool's name (reserved as local-only under ``toolsViaHost``)."""

CHILD_PROGRAM: Final = Path(__file__).with_name("_child.py")
"""The program the child interpreter runs (compiled here, passed with ``-c``)."""

_FRAME_SLACK_BYTES: Final = 4096  # a done frame's envelope around the value
_STDERR_TAIL: Final = 2000  # characters of the child's stderr kept when it ends without an answer
_BACKSTOP_S: Final = 5.0  # the runner's own deadline, past ours: kills the tree if we are stuck
_EXIT_GRACE_S: Final = 1.0  # after its last frame, how long the child gets to exit before it is killed
_PHASE_CODES: Final = {"syntax": RunCodeErrorCode.SYNTAX_ERROR, "value": RunCodeErrorCode.VALUE_LIMIT}
"""The child's ``error.phase`` -> ``data.code``; any other phase is a ``runtime_error``."""

_STOPPED: Final = {  # ToolResult(success=False, error=..., data=...).to_wire(), built by hand: no
    "success": False,  # model is built at import (start-up: the types' validators wait for a call)
    "error": "the program was stopped before this call finished",
    "data": {"code": ToolErrorCode.CANCELLED.value},
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCodeConfig:
    """The limits of one ``run_code`` call; an immutable value resolved from ``STEERABLE_RUN_CODE_*``.

    Exceeding any of them stops the program and fails the call with ``needsFollowup`` and a
    ``data.code`` naming the limit; the calls and logs so far are kept.

    Attributes:
        timeout_ms: Wall-clock time for the whole program, nested calls included, in milliseconds
            (``STEERABLE_RUN_CODE_TIMEOUT_MS``; default 120 000, from 1 to 3 600 000). Code
            ``timeout``.
        max_calls: Nested tool calls per program (``STEERABLE_RUN_CODE_MAX_CALLS``; default 200,
            from 0 to 100 000). Code ``call_limit``.
        max_source_bytes: Size of ``code`` in UTF-8 bytes (``STEERABLE_RUN_CODE_MAX_SOURCE_BYTES``;
            default 100 000, from 1 to 10 000 000). Code ``source_too_large``; nothing runs.
        max_output_bytes: Bytes the program may print (stdout and stderr together;
            ``STEERABLE_RUN_CODE_MAX_OUTPUT_BYTES``; default 30 000, from 1 to 100 000 000). Code
            ``output_limit``; the logs keep the first ``max_output_bytes``.
        max_value_bytes: Size of the return value as JSON (``STEERABLE_RUN_CODE_MAX_VALUE_BYTES``;
            default 1 000 000, from 2 to 8 000 000). Code ``value_limit``.
    """

    timeout_ms: int = int_field("STEERABLE_RUN_CODE_TIMEOUT_MS", 120_000, floor=1, ceiling=3_600_000)
    max_calls: int = int_field("STEERABLE_RUN_CODE_MAX_CALLS", 200, floor=0, ceiling=100_000)
    max_source_bytes: int = int_field(
        "STEERABLE_RUN_CODE_MAX_SOURCE_BYTES", 100_000, floor=1, ceiling=10_000_000
    )
    max_output_bytes: int = int_field(
        "STEERABLE_RUN_CODE_MAX_OUTPUT_BYTES", 30_000, floor=1, ceiling=100_000_000
    )
    max_value_bytes: int = int_field(
        "STEERABLE_RUN_CODE_MAX_VALUE_BYTES", 1_000_000, floor=2, ceiling=8_000_000
    )

    def __post_init__(self) -> None:
        check_int_fields(self)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RunCodeConfig:
        """Resolve the limits from ``STEERABLE_RUN_CODE_*`` variables (unset: the defaults).

        Raises:
            ConfigError: For a value that is not an integer in range; the message names the variable.
        """
        return cls(**read_int_fields(cls, environ))


RUN_CODE_LIMIT_ENV: Final[Mapping[str, str]] = MappingProxyType(
    {name: spec.variable for name, spec in int_fields(RunCodeConfig).items()}
)
"""The variable of each :class:`RunCodeConfig` field (declared on the field)."""


@functools.cache
def _child_bootstrap() -> str:
    """The ``-c`` text that runs the child program: its code object, compiled here once.

    The child gets the marshalled code (``marshal`` is built into every interpreter) instead of the
    source, so it does not spend two milliseconds compiling it on every start; both sides are the
    same interpreter, so the format matches. ``optimize=2`` leaves the docstrings out.
    """
    source = CHILD_PROGRAM.read_text(encoding="utf-8")
    code = compile(source, str(CHILD_PROGRAM), "exec", dont_inherit=True, optimize=2)
    return f"import marshal;exec(marshal.loads(bytes.fromhex('{marshal.dumps(code).hex()}')))"


def child_argv(python: str | None = None) -> list[str]:
    """The command that starts the child interpreter.

    ``-S`` skips ``site`` (the standard library and ``PYTHONPATH`` only, and a faster start), ``-P``
    keeps the current directory (the workspace, which the model writes) off ``sys.path``. ``-E``
    and ``-I`` are not used: they would drop the ``PYTHONPATH`` the spec lets the child keep. The
    interpreter is the real file behind ``sys.executable``: the child program is passed as this
    interpreter's compiled code, and nothing of a virtualenv is needed without ``site``.

    Args:
        python: Another interpreter of the same version (default: this one).
    """
    interpreter = python or os.path.realpath(sys.executable or "python3")
    return [interpreter, "-S", "-P", "-c", _child_bootstrap()]


def _failure(code: str, error: str, data: dict[str, Any], *, message: str | None = None) -> ToolResult:
    return ToolResult.retry(error, message=message, data={**data, "code": code})


def direct_run_executor(router: ToolRouter, inner: ToolExecutor | None = None) -> ToolExecutor:
    """The executor for the nested calls of a ``run_code`` that no agent loop runs.

    A call whose mode needs consent (``local``) is refused (``consent_required``): nobody approved
    it, and the approval of the program is not the approval of each call it makes. Every other
    call goes to ``inner``: ``router.dispatch`` by default, or a surface's own gate asking its
    questions (``steerable mcp`` hands its connection's ``web_fetch`` question this way, SAFE-4).

    Args:
        router: The tools: their modes and the check run before a refusal.
        inner: Runs the calls that need no consent (default ``router.dispatch``).
    """
    return ApprovalGate(
        router.dispatch if inner is None else inner,
        approve=None,
        mode_of=mode_lookup(router),
        check=router.check,
        unasked=" and needs the user's consent, which a run_code program invoked directly (not by an "
        "agent loop) cannot ask for; call it as a tool of its own instead",
    )


class _Run:
    """One program: spawn, converse, collect. Its data survives every way the run can end."""

    def __init__(
        self,
        code: str,
        executor: ToolExecutor,
        config: RunCodeConfig,
        sandbox: SandboxInfo,
        context: CallContext,
    ) -> None:
        self.code = code
        self.executor = executor
        self.context = context  # the run_code call's: its output sink takes the printed text
        self.config = config
        self.sandbox = sandbox
        self.calls: list[dict[str, Any]] = []
        self.logs: list[str] = []
        self.log_bytes = 0
        self.started = time.monotonic()
        self.answered = False  # the child sent its last frame

    def data(self, **extra: Any) -> dict[str, Any]:
        logs = "".join(self.logs)
        if self.log_bytes > self.config.max_output_bytes:
            logs = logs.encode("utf-8", "surrogatepass")[: self.config.max_output_bytes].decode(
                "utf-8", "ignore"
            )
        return {
            "value": None,
            **extra,
            "calls": self.calls,
            "logs": logs,
            "durationMs": round((time.monotonic() - self.started) * 1000),
            "_sandbox": self.sandbox.as_data(),
        }

    def fail(self, code: str, error: str, **extra: Any) -> ToolResult:
        return _failure(code, error, self.data(**extra))

    async def execute(self, proc: SandboxedProcess) -> ToolResult:
        deadline = asyncio.timeout(self.config.timeout_ms / 1000)
        try:
            async with deadline:
                return await self._converse(proc)
        except TimeoutError:
            if not deadline.expired():
                raise
            return self._timed_out()

    def _timed_out(self) -> ToolResult:
        return self.fail(
            RunCodeErrorCode.TIMEOUT,
            f"The program ran past its wall-clock limit of {self.config.timeout_ms} ms "
            f"({RUN_CODE_LIMIT_ENV['timeout_ms']}) and was stopped.",
        )

    async def _converse(self, proc: SandboxedProcess) -> ToolResult:
        stdin, stdout = proc.stdin, proc.stdout
        assert stdin is not None and stdout is not None  # spawned with stdin=True, stdout="pipe"
        limits = {"output": self.config.max_output_bytes, "value": self.config.max_value_bytes}
        await self._send(stdin, {"code": self.code, "limits": limits})
        while True:
            try:
                line = await stdout.readline()
            except ValueError:  # a line past the runner's pipe limit: not a frame this child sends
                return self.fail(
                    RunCodeErrorCode.PROTOCOL_ERROR,
                    "The program sent a frame over 16 MiB: the arguments of a nested call are too large; "
                    "write big data to a file in the workspace and pass its path.",
                )
            if not line:
                return await self._ended(proc)
            try:
                frame = json.loads(line)
            except (ValueError, RecursionError):
                frame = None
            kind = frame.get("t") if isinstance(frame, dict) else None
            if kind == "log":
                text = frame.get("text")
                if isinstance(text, str) and text and self.log_bytes <= self.config.max_output_bytes:
                    # printed text streams as it comes, cleaned as the result's logs are (to_wire)
                    await self.context.send_output(text)
                if self._log(text):
                    return self.fail(
                        RunCodeErrorCode.OUTPUT_LIMIT,
                        f"The program printed more than {self.config.max_output_bytes} bytes "
                        f"({RUN_CODE_LIMIT_ENV['max_output_bytes']}) and was stopped; print less, or "
                        "return the data.",
                    )
            elif kind == "call":
                if len(self.calls) >= self.config.max_calls:
                    return self.fail(
                        RunCodeErrorCode.CALL_LIMIT,
                        f"The program made more than {self.config.max_calls} tool calls "
                        f"({RUN_CODE_LIMIT_ENV['max_calls']}) and was stopped.",
                    )
                reply = await self._nested(frame)
                await self._send(stdin, reply)
            elif kind == "done":
                self.answered = True
                return self._done(frame, len(line))
            else:
                return self.fail(
                    RunCodeErrorCode.PROTOCOL_ERROR,
                    "The program's interpreter sent something that is not a frame.",
                )

    @staticmethod
    async def _send(stdin: asyncio.StreamWriter, frame: dict[str, Any]) -> None:
        # a dead child shows as EOF on its stdout, which the conversation loop reads next
        with contextlib.suppress(ConnectionError):
            stdin.write(json.dumps(frame, separators=(",", ":"), default=str).encode("ascii") + b"\n")
            await stdin.drain()

    def _log(self, text: Any) -> bool:
        """Add printed text; ``True`` when the program went past its output limit."""
        if not isinstance(text, str):
            return False
        size = len(text.encode("utf-8", "surrogatepass"))
        room = self.config.max_output_bytes + 1 - self.log_bytes
        if room > 0:
            self.logs.append(text)
        self.log_bytes += size
        return self.log_bytes > self.config.max_output_bytes

    async def _nested(self, frame: dict[str, Any]) -> dict[str, Any]:
        name, arguments = frame.get("tool"), frame.get("arguments")
        call_id = new_call_id()
        approved: Any = None
        if not isinstance(name, str) or not isinstance(arguments, dict):
            result = ToolResult.retry(
                "A nested call needs a tool name and an object of arguments.",
                data={"code": ToolErrorCode.INVALID_CALL},
            )
        elif name == RUN_CODE_TOOL_NAME:
            result = ToolResult.retry(
                "run_code cannot be called from inside a run_code program; call the tools directly.",
                data={"code": ToolErrorCode.NESTED_RUN_CODE},
            )
        else:
            call = ToolCall(id=call_id, name=name, arguments=arguments)
            context = CallContext(
                call, executor=self.executor, output=self.context.output, attrs=dict(self.context.attrs)
            )
            try:
                result = await self.executor(call, context)
            except asyncio.CancelledError:  # the run stopped (deadline, cancel) while the call ran
                self.calls.append(
                    {"id": call_id, "tool": name, "arguments": _bounded(arguments), "result": _STOPPED}
                )
                raise
            except Exception as exc:  # an executor broke its contract: still an answer
                result = ToolResult.retry(
                    f"{name} failed: {type(exc).__name__}: {exc}", data={"code": ToolErrorCode.TOOL_EXCEPTION}
                )
            approved = context.approved  # the gate's decision, when a prompt ran
        wire = result.to_wire()
        # the record keeps a bounded copy: a program making many calls with big arguments or results
        # must not grow the sidecar's memory (and the transcript) without bound
        entry: dict[str, Any] = {
            "id": call_id,
            "tool": name,
            "arguments": _bounded(arguments),
            "result": _bounded(wire),
        }
        if approved is not None:
            entry["approved"] = approved
        self.calls.append(entry)
        return {"t": "result", "id": frame.get("id"), "result": wire}

    def _done(self, frame: dict[str, Any], size: int) -> ToolResult:
        if frame.get("ok") is True:
            if size > self.config.max_value_bytes + _FRAME_SLACK_BYTES:
                return self.fail(
                    RunCodeErrorCode.VALUE_LIMIT,
                    f"The return value is over {self.config.max_value_bytes} bytes of JSON "
                    f"({RUN_CODE_LIMIT_ENV['max_value_bytes']}).",
                )
            extra = {"repr": True} if frame.get("repr") is True else {}
            done = ToolResult(success=True, data=self.data(value=frame.get("value"), **extra))
            try:  # to_wire() would answer for it, but the program's own failure says more
                done.model_dump(mode="json")
            except (ValueError, TypeError, RecursionError):
                return self.fail(
                    RunCodeErrorCode.VALUE_LIMIT,
                    "The return value is nested too deeply to send as JSON; return flatter data.",
                )
            return done
        raw = frame.get("error")
        error: dict[str, Any] = raw if isinstance(raw, dict) else {}
        kind = str(error.get("type") or "Error")[:200]
        message = str(error.get("message") or "")[:4000]
        line = error.get("line") if type(error.get("line")) is int else None
        column = error.get("column") if type(error.get("column")) is int else None
        raw_trace = error.get("traceback")
        trace = [str(t)[:400] for t in raw_trace[:40]] if isinstance(raw_trace, list) else []
        phase = error.get("phase")
        code = _PHASE_CODES.get(str(phase), RunCodeErrorCode.RUNTIME_ERROR)
        where = f" (line {line}{f', column {column}' if column else ''})" if line is not None else ""
        text = f"{kind}: {message}{where}" if message else f"{kind}{where}"
        if code == RunCodeErrorCode.SYNTAX_ERROR:
            text = f"The program does not compile: {text}. Fix it and run it again."
        elif code == RunCodeErrorCode.RUNTIME_ERROR:
            text = f"The program raised {text}."
        exception = {"type": kind, "message": message, "line": line, "column": column, "traceback": trace}
        return self.fail(code, text, exception=exception)

    async def _ended(self, proc: SandboxedProcess) -> ToolResult:
        run = await proc.finish()
        if run.timed_out:
            return self._timed_out()
        stderr = run.stderr.text[-_STDERR_TAIL:]
        if run.memory_exceeded:
            return self.fail(
                RunCodeErrorCode.MEMORY_LIMIT,
                "The program was killed: together with the files it wrote to /tmp and /dev/shm it went "
                f"over the sandbox memory limit ({LIMIT_ENV['memory_bytes']}). Use less memory.",
                stderr=stderr,
            )
        return self.fail(
            RunCodeErrorCode.CHILD_EXITED,
            f"The program's interpreter ended without an answer (exit status {run.exit_code}).",
            stderr=stderr,
        )


def run_code_tool(
    workspace: str | os.PathLike[str],
    *,
    router: ToolRouter,
    config: RunCodeConfig | None = None,
    sandbox: SandboxConfig | None = None,
    environ: Mapping[str, str] | None = None,
    backend: SandboxBackend | None = None,
    allow_protected_writes: bool | None = None,
) -> Tool:
    """Build the ``run_code`` tool for one workspace (``local`` mode: it needs consent).

    Protected paths (FILE-15) are guarded as for ``bash``: bound read-only where bubblewrap can, and
    put back after the program under every backend (``data.protectedReverted``); deny-read entries
    inside the workspace the program moved are put back too (``data.denyReadRestored``, SAFE-3).

    Args:
        workspace: The program's working directory; with the run's private temporary directory,
            the only place it may write.
        router: Where nested calls go when no agent loop runs the call (no live executor); such
            calls that need consent are refused.
        config: The limits (default: :meth:`RunCodeConfig.from_env` of ``environ``).
        sandbox: The sandbox settings, shared with ``bash`` (default: resolved from ``environ``).
        environ: The environment the settings and the child's allowlist come from (default
            ``os.environ``, read at each call).
        backend: Use this backend instead of selecting one (tests, embedders with their own).
        allow_protected_writes: Let programs change protected paths; ``None`` reads
            ``STEERABLE_ALLOW_PROTECTED_WRITES`` (default off).

    Returns:
        The tool, not yet registered.

    Raises:
        ConfigError: An invalid ``STEERABLE_RUN_CODE_*``, ``STEERABLE_SANDBOX*`` or
            ``STEERABLE_SIDECAR_CONFINED`` value (the message names it).
    """
    cfg = RunCodeConfig.from_env(environ) if config is None else config
    sandbox_cfg = SandboxConfig.from_env(environ) if sandbox is None else sandbox
    spawner = SandboxSpawner(sandbox_cfg, backend=backend, environ=environ)
    if allow_protected_writes is None:
        allow_protected_writes = env_flag(PROTECTED_ENV, False, environ=environ)
    allow = allow_protected_writes
    root = Path(workspace).resolve()
    fallback = direct_run_executor(router)
    scans: ScanCache | None = None  # this workspace's directory listings, reused while unchanged

    async def run_code(code: str, description: str, context: CallContext) -> ToolResult:
        """Run a Python program that can call tools; its return value is the result.

        Args:
            code: The BODY of a Python function: statements, ending with `return <value>`.
            description: One line saying what the program does, for the user.
            context: The call's context (injected; not in the schema).
        """
        from steerable_agent_runtime.sandbox import (
            DenyReadDisplaced,
            ScanCache,
            SnapshotTooLarge,
            guard_protected_paths,
            known_entries_file,
            protected_result,
            snapshot_too_large,
        )

        nonlocal scans
        if scans is None:  # the protected entries earlier processes found here are guarded too
            scans = ScanCache(known_entries_file(str(root), environ))
        executor = context.executor or fallback
        size = len(code.encode("utf-8", "surrogatepass"))
        empty: dict[str, Any] = {"value": None, "calls": [], "logs": ""}
        if size > cfg.max_source_bytes:
            return _failure(
                RunCodeErrorCode.SOURCE_TOO_LARGE,
                f"The program is {size} bytes, over the limit of {cfg.max_source_bytes} "
                f"({RUN_CODE_LIMIT_ENV['max_source_bytes']}); nothing was run. Send a shorter program.",
                empty,
            )
        try:
            chosen = await spawner.select()
        except SandboxUnavailableError as exc:  # spec: no backend -> error: sandbox_unavailable
            return _failure(
                RunCodeErrorCode.SANDBOX_UNAVAILABLE,
                "sandbox_unavailable",
                {**empty, "tried": exc.tried},
                message=exc.message,
            )
        try:
            async with guard_protected_paths(
                root,
                chosen,
                allow=allow,
                cache=scans,
                tool="run_code",
                deny_read=sandbox_cfg.deny_read,
                environ=environ,
            ) as guarded:
                policy = spawner.policy((root,), read_only=guarded.read_only)
                result = await _execute(_Run(code, executor, cfg, chosen.info, context), policy, chosen)
        except SnapshotTooLarge:
            refused = snapshot_too_large("program")
            return _failure(
                RunCodeErrorCode.PROTECTED_SNAPSHOT_TOO_LARGE,
                refused.error or "",
                {**empty, **(refused.data or {})},
            )
        except DenyReadDisplaced as exc:  # an earlier run moved a secret that could not be put back
            refused = exc.result("program")
            return _failure(
                RunCodeErrorCode.DENY_READ_DISPLACED, refused.error or "", {**empty, **(refused.data or {})}
            )
        return protected_result(result, guarded.outcome, "program", moves=guarded.moves)

    async def _execute(run: _Run, policy: SandboxPolicy, chosen: SandboxBackend) -> ToolResult:
        proc = await spawner.spawn(
            child_argv(),
            policy,
            backend=chosen,
            stdin=True,
            stdout="pipe",
            timeout_s=cfg.timeout_ms / 1000 + _BACKSTOP_S,
        )
        async with proc:  # the child is gone when this ends, before the guard puts paths back
            result = await run.execute(proc)
            if run.answered:  # the child exits right after its last frame: let it, rather than kill it
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), _EXIT_GRACE_S)
            return result

    where = (
        "in the workspace, the container around it being the sandbox: standard library only"
        if sandbox_cfg.container
        else "in an OS sandbox in the workspace: standard library only, no network, writes only to the "
        "workspace and $TMPDIR"
    )
    description = (
        "Run a Python program that calls tools, to chain many calls or process their results without "
        "a round trip through the model each time. `code` is the BODY of a function: its `return` "
        "value (JSON) is the result. Call tools with `tools.<name>(arg=value, ...)` or "
        "`tools.call(name, **arguments)`: a call blocks, returns the tool's data (the plain value when "
        "the tool returned one), and raises `ToolCallError` (with `.result`) when it fails. `print` "
        f"output comes back as logs. The program runs {where}; os, sys, subprocess, "
        f"socket and similar modules cannot be imported. Limits: {cfg.timeout_ms // 1000} s, "
        f"{cfg.max_calls} tool calls, {cfg.max_output_bytes} bytes printed. run_code cannot call itself."
    )
    return Tool.from_function(
        run_code,
        name=RUN_CODE_TOOL_NAME,
        description=description,
        mode=ToolMode.LOCAL,
        timeout_ms=cfg.timeout_ms + 30_000,
    )


RECORDED_CALL_BYTES: Final = 4_096
"""Each nested call's arguments and result are kept in ``data.calls`` up to this many bytes of JSON."""


_RECORDED_DEPTH: Final = 64
"""Recorded arguments and results nested deeper than this are replaced (JSON writers have limits)."""


def _depth(value: Any, limit: int) -> int:
    """How deeply ``value``'s lists and dicts nest, counting no further than ``limit + 1``."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list | tuple):
            deepest = max(deepest, level)
            if level > limit:
                return level
            children = item.values() if isinstance(item, dict) else item
            todo.extend((child, level + 1) for child in children)
    return deepest


def _bounded(value: Any) -> Any:
    """``value`` when its JSON is small, else ``{"truncated": true, "bytes": n, "preview": ...}``."""
    if _depth(value, _RECORDED_DEPTH) > _RECORDED_DEPTH:
        return {"truncated": True, "bytes": None, "preview": f"(nested deeper than {_RECORDED_DEPTH} levels)"}
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return {"truncated": True, "bytes": None, "preview": "(not serialisable: nested too deeply)"}
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= RECORDED_CALL_BYTES:
        return value
    return {"truncated": True, "bytes": size, "preview": text[:512]}
