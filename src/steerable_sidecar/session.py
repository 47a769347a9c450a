"""The ``steerable session`` line protocol: ToolCall JSON lines in, result lines out.

Each stdin line is one ``ToolCall`` (``{"id", "name", "arguments"}``); each stdout line is
``{"id": <the call's id or null>, "result": <ToolResult>}``, in input order. The router (and so the
read-before-write state) lives for the whole session. A line that is not JSON, or not a valid
envelope, gets a failed result with ``needsFollowup``; the session never stops on bad input. A
line nested too deeply for the JSON decoder (about 1,000 levels) is answered with
``data.code == "arguments_too_deep"`` and the ``id`` its top level holds (a string; read by a
shallow scan, :mod:`steerable_sidecar._shallow_json`), else ``id: null``; arguments that decode
are checked by the router (SAFE-6).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import IO, Any

from steerable_agent_runtime import ToolErrorCode, ToolResult, ToolRouter
from steerable_agent_runtime.tools import MAX_ARGUMENT_DEPTH

from ._shallow_json import top_level_scalars

__all__ = ["handle_line", "run_session"]

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
        result = ToolResult.retry(
            "not a JSON line (nested too deeply to decode; tool arguments may nest at most "
            f"{MAX_ARGUMENT_DEPTH} levels); send one ToolCall object per line, with flatter arguments",
            data={"code": ToolErrorCode.ARGUMENTS_TOO_DEEP, "maxDepth": MAX_ARGUMENT_DEPTH},
        )
        found = (top_level_scalars(line, ("id",)) or {}).get("id")
        return {"id": found if isinstance(found, str) else None, "result": result.to_wire()}
    except ValueError as exc:  # JSONDecodeError, an over-long integer
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        result = ToolResult.retry(f"not a JSON line ({message}); send one ToolCall object per line")
        return {"id": None, "result": result.to_wire()}
    if not isinstance(raw, dict):
        result = ToolResult.retry("a ToolCall must be a JSON object {id, name, arguments}")
        return {"id": None, "result": result.to_wire()}
    call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    result = await router.dispatch(raw)
    return {"id": call_id, "result": result.to_wire()}


_OVERSIZED = object()


def _read_line(stream: IO[str]) -> str | object:
    line = stream.readline(_MAX_LINE_CHARS)
    if len(line) < _MAX_LINE_CHARS or line.endswith("\n"):
        return line
    while True:  # drain the rest of an oversized line so the next line starts clean
        more = stream.readline(_MAX_LINE_CHARS)
        if not more or more.endswith("\n"):
            return _OVERSIZED


async def _lines(stream: IO[str]) -> AsyncIterator[str | object]:
    while True:
        line = await asyncio.to_thread(_read_line, stream)
        if line == "":
            return
        yield line


async def run_session(
    router: ToolRouter, stdin: IO[str] | None = None, stdout: IO[str] | None = None
) -> None:
    """Serve the line protocol until end of input.

    Args:
        router: The tools (and their session state).
        stdin: Input stream (default ``sys.stdin``).
        stdout: Output stream (default ``sys.stdout``); flushed after every line.
    """
    source = stdin if stdin is not None else sys.stdin
    sink = stdout if stdout is not None else sys.stdout
    async for line in _lines(source):
        if isinstance(line, str):
            out = await handle_line(router, line)
        else:
            error = f"line longer than {_MAX_LINE_CHARS} characters; send smaller tool calls"
            out = {"id": None, "result": ToolResult.retry(error).to_wire()}
        if out is not None:
            sink.write(json.dumps(out) + "\n")  # ASCII: safe under any locale and any line splitter
            sink.flush()
