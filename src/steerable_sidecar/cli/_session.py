"""The ``steerable session`` line protocol: ToolCall JSON lines in, result lines out.

Each stdin line is one ``ToolCall`` (``{"id", "name", "arguments"}``); each stdout line is
``{"id": <the call's id or null>, "result": <ToolResult>}``, in input order. The router (and so the
read-before-write state) lives for the whole session. A line that is not JSON, or not a valid
envelope, gets a failed result with ``needsFollowup``; the session never stops on bad input. A
line nested too deeply for the JSON decoder (about 1,000 levels) is answered with
``data.code == "arguments_too_deep"`` and the ``id`` its top level holds (a string; read by a
shallow scan, :mod:`steerable_sidecar.rpc._shallow_json`), else ``id: null``; arguments that decode
are checked by the router (SAFE-6).

SIGTERM, SIGHUP and SIGINT end the session (REC-4): the call in flight is stopped (its sandbox
killed, its protected paths put back) and answered with a failed ``needsFollowup`` result,
``data.code == "interrupted"``, saying steerable is shutting down; no further line is read.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable
from typing import IO, TYPE_CHECKING, Any, Final, TypeVar

from steerable_agent_runtime import ToolErrorCode
from steerable_agent_runtime.tools import MAX_ARGUMENT_DEPTH

from ..exit_codes import ExitCode
from ..rpc._shallow_json import top_level_scalars

if TYPE_CHECKING:
    from steerable_agent_runtime import ToolResult, ToolRouter

    from .._boot import Booted
    from ..shared._signals import Shutdown

__all__ = [
    "STOPPED",
    "handle_line",
    "interrupted_result",
    "interruptible",
    "run_session",
    "run_session_command",
    "search_the_deferred_tier",
]

T = TypeVar("T")

_MAX_LINE_CHARS = 64 * 1024 * 1024
"""Longest accepted input line, in characters (64 Mi); a longer one is refused, not split."""


async def handle_line(router: ToolRouter, line: str) -> dict[str, Any] | None:
    """Dispatch one input line.

    Args:
        router: The session's router.
        line: One line of stdin (blank lines are ignored).

    Returns:
        The output object ``{"id", "result"}``, or ``None`` for a blank line.
    """
    if not line.strip():
        return None
    try:
        raw = json.loads(line)
    except RecursionError:  # deeper than the decoder goes (SAFE-6): the id from a shallow scan
        result = _refused(
            "not a JSON line (nested too deeply to decode; tool arguments may nest at most "
            f"{MAX_ARGUMENT_DEPTH} levels); send one ToolCall object per line, with flatter arguments",
            data={"code": ToolErrorCode.ARGUMENTS_TOO_DEEP, "maxDepth": MAX_ARGUMENT_DEPTH},
        )
        found = (top_level_scalars(line, ("id",)) or {}).get("id")
        return {"id": found if isinstance(found, str) else None, "result": result}
    except ValueError as exc:  # JSONDecodeError, an over-long integer
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        refused = _refused(f"not a JSON line ({message}); send one ToolCall object per line")
        return {"id": None, "result": refused}
    if not isinstance(raw, dict):
        return {"id": None, "result": _refused("a ToolCall must be a JSON object {id, name, arguments}")}
    call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    return {"id": call_id, "result": await router.dispatch_wire(raw)}


def _refused(error: str, *, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """The wire result for a line that is no tool call: ``needsFollowup``, ``error``, ``data``."""
    from steerable_agent_runtime.types import ToolResult

    return ToolResult.retry(error, data=data).to_wire()


_OVERSIZED = object()


def _read_line(stream: IO[str]) -> str | object:
    line = stream.readline(_MAX_LINE_CHARS)
    if len(line) < _MAX_LINE_CHARS or line.endswith("\n"):
        return line
    while True:  # drain the rest of an oversized line so the next line starts clean
        more = stream.readline(_MAX_LINE_CHARS)
        if not more or more.endswith("\n"):
            return _OVERSIZED


STOPPED: Final = object()
"""What :func:`interruptible` returns when a signal stopped the work."""


async def interruptible(work: Awaitable[T], shutdown: Shutdown | None, *, drain_s: float) -> T | object:
    """Await ``work`` unless a signal comes first; then cancel it and give it ``drain_s`` to wind down.

    Returns:
        What ``work`` returned, or a sentinel object (not a ``T``) when the signal stopped it.
    """
    task = asyncio.ensure_future(work)
    if shutdown is None:
        return await task
    stop = asyncio.ensure_future(shutdown.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if task.done():
        return task.result()
    task.cancel()  # a tool call's sandbox is killed, its protected paths put back
    await asyncio.wait({task}, timeout=drain_s)
    task.add_done_callback(lambda done: done.cancelled() or done.exception())
    return STOPPED


def interrupted_result(shutdown: Shutdown) -> ToolResult:
    """The result of a call a signal stopped: ``needsFollowup``, ``data.code == "interrupted"``."""
    from steerable_agent_runtime.types import ToolResult

    data = {"code": ToolErrorCode.INTERRUPTED, "signal": shutdown.name}
    return ToolResult.retry(shutdown.interrupted_message(), data=data)


async def run_session(
    router: ToolRouter,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
    *,
    shutdown: Shutdown | None = None,
) -> None:
    """Serve the line protocol until end of input, or a signal.

    Args:
        router: The tools (and their session state).
        stdin: Input stream (default ``sys.stdin``).
        stdout: Output stream (default ``sys.stdout``); flushed after every line.
        shutdown: Set by a signal: the call in flight is stopped and answered as interrupted,
            and the session ends without reading on (REC-4).
    """
    from ..shared._signals import INTERRUPT_DRAIN_S

    source = stdin if stdin is not None else sys.stdin
    sink = stdout if stdout is not None else sys.stdout
    while True:
        # a signal while the reader waits for a line ends the session at once (the thread stays
        # blocked on the read: the process exits without it)
        line = await interruptible(asyncio.to_thread(_read_line, source), shutdown, drain_s=0)
        if line == "" or line is STOPPED:
            return
        if isinstance(line, str):
            out = await interruptible(handle_line(router, line), shutdown, drain_s=INTERRUPT_DRAIN_S)
            if out is STOPPED:
                assert shutdown is not None
                found = (top_level_scalars(line, ("id",)) or {}).get("id")
                out = {
                    "id": found if isinstance(found, str) else None,
                    "result": interrupted_result(shutdown).to_wire(),
                }
        else:
            error = f"line longer than {_MAX_LINE_CHARS} characters; send smaller tool calls"
            out = {"id": None, "result": _refused(error)}
        if out is not None:
            sink.write(json.dumps(out) + "\n")  # ASCII: safe under any locale and any line splitter
            sink.flush()
        if shutdown is not None and shutdown.requested:
            return


async def run_session_command(
    args: argparse.Namespace, booted: Booted, shutdown: Shutdown | None = None
) -> int:
    """``steerable session``: serve the line protocol on stdin and stdout with the booted tools."""
    search_the_deferred_tier(booted.router)
    out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # a tool's print never lands between result lines
        await run_session(booted.router, stdout=out, shutdown=shutdown)
    return ExitCode.OK


def search_the_deferred_tier(router: ToolRouter) -> None:
    """``call`` and ``session`` dispatch by name: give them ``tool_search`` when there is a deferred tier.

    Without a harness of their own to offer it, ``tool_search`` is how a caller finds the deferred
    tools (MCP sources' tools, a plugin's ``exposure="deferred"`` tools), whatever ``--harness``
    says. With no deferred tool it is marked unavailable, so the answer says why instead of
    "unknown tool"; a plugin's own ``tool_search`` is left alone.
    """
    from steerable_agent_runtime.tools import ToolExposure

    if "tool_search" in router:
        return
    if any(tool.exposure is ToolExposure.DEFERRED for tool in router):
        from steerable_agent_runtime.tool_search import register_tool_search

        register_tool_search(router)
    else:
        router.mark_unavailable(
            "tool_search", "there is no deferred tool to search here: every tool is called by its name."
        )
