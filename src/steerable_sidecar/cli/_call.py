"""``steerable call NAME 'JSON'``: one tool call in the workspace, its ToolResult JSON on stdout."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import TYPE_CHECKING

from ..exit_codes import ExitCode

if TYPE_CHECKING:
    from steerable_agent_runtime import ToolRouter

    from .._boot import Booted
    from ..shared._signals import Shutdown

__all__ = ["add_call_arguments", "run_call"]


def add_call_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``NAME`` and the optional ``ARGUMENTS`` JSON to ``steerable call``'s parser."""
    parser.add_argument("name", help="tool name, e.g. read_file")
    parser.add_argument("arguments", nargs="?", default=None, help="JSON object of arguments (default {})")


async def run_call(args: argparse.Namespace, booted: Booted, shutdown: Shutdown | None = None) -> int:
    """Dispatch ``args.name`` with ``args.arguments``; exit 0 when the result succeeded, 1 when not."""
    from ._session import search_the_deferred_tier

    search_the_deferred_tier(booted.router)
    return await _call(booted.router, args.name, args.arguments or "{}", shutdown)


async def _call(router: ToolRouter, name: str, arguments: str, shutdown: Shutdown | None = None) -> int:
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        print(f"steerable call: ARGUMENTS is not JSON: {exc.msg} at position {exc.pos}", file=sys.stderr)
        return ExitCode.USAGE
    except (ValueError, RecursionError) as exc:  # an over-long integer, nesting too deep
        print(f"steerable call: ARGUMENTS is not usable JSON: {exc or 'nested too deeply'}", file=sys.stderr)
        return ExitCode.USAGE
    if not isinstance(parsed, dict):
        print(
            'steerable call: ARGUMENTS must be a JSON object, e.g. \'{"path": "README.md"}\'', file=sys.stderr
        )
        return ExitCode.USAGE
    from steerable_agent_runtime import new_call_id

    from ..shared._signals import INTERRUPT_DRAIN_S
    from ._session import STOPPED, interrupted_result, interruptible

    # written as the wire dict it is: a call that succeeds with plain JSON builds no ToolResult,
    # and imports no pydantic (start-up: benchmarks/startup.py)
    call = {"id": new_call_id(), "name": name, "arguments": parsed}
    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the result JSON alone
        done = await interruptible(router.dispatch_wire(call), shutdown, drain_s=INTERRUPT_DRAIN_S)
    if done is STOPPED:  # a signal (REC-4): the call is answered as interrupted, the exit is 128 + n
        assert shutdown is not None
        result = interrupted_result(shutdown).to_wire()
    else:
        assert isinstance(done, dict)
        result = done
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return ExitCode.OK if result["success"] else ExitCode.FAILED
