"""Per-call overhead of ``ToolRouter.dispatch`` for a trivial tool.

What it measures
    ``await router.dispatch(call)`` for ``async def add(a: int, b: int) -> int`` registered with
    ``@tool(router=router)`` on ``ToolRouter(trace=lambda span: None)``: name lookup, argument
    validation, the handler timeout, result normalisation into a ``ToolResult`` and the trace span.
    The ``ToolCall`` is built once, outside the timed loop (like the MCP baseline, which receives a
    name and an argument dict). Baselines measured in the same run, same arguments:

    * pydantic ``TypeAdapter(TypedDict{a: int, b: int}).validate_python`` alone (the floor: the
      validation dispatch cannot avoid);
    * the official ``mcp`` SDK, in process, no transport: ``MCPServer`` (2.x name of FastMCP) with
      ``@server.tool()``, called through its tool manager
      (``server._tool_manager.call_tool(name, args, context, convert_result=True)``, the most
      direct path that still yields a ``CallToolResult``) and through the public
      ``MCPServer.call_tool`` (which also builds a ``Context`` per call);
    * a plain ``await add(1, 2)`` for reference.

    Every candidate runs N calls in a loop inside one coroutine on one event loop (amortising loop
    overhead); rounds are interleaved across candidates after a warm-up round; the median of the
    rounds is reported, in microseconds per call.

Goals
    * dispatch per call <= 4x TypeAdapter validation alone;
    * dispatch >= 5x faster than the mcp SDK's direct in-process tool call (tool manager path).

Run
    python benchmarks/dispatch_overhead.py [--calls N] [--rounds R] [--check]

    Goals are printed as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal
    is missed (then 1).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from steerable_agent_runtime import ToolCall, ToolRouter, tool

MAX_VS_VALIDATION = 4.0
MIN_SPEEDUP_VS_MCP = 5.0

ARGS: dict[str, Any] = {"a": 1, "b": 2}


class AddArgs(TypedDict):
    a: int
    b: int


def build_router() -> ToolRouter:
    router = ToolRouter(trace=lambda span: None)

    @tool(router=router)
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return router


async def plain_add(a: int, b: int) -> int:
    return a + b


Loop = Callable[[int], Awaitable[int]]


def make_loops() -> dict[str, Loop]:
    """Return ``label -> coroutine function(n) -> elapsed ns`` for every candidate."""
    from mcp.server.mcpserver import MCPServer  # heavy import; kept out of the framework's path
    from mcp.server.mcpserver.context import Context

    router = build_router()
    call = ToolCall(id="call_1", name="add", arguments=ARGS)
    wire = {"id": "call_1", "name": "add", "arguments": ARGS}
    adapter = TypeAdapter(AddArgs)

    server: Any = MCPServer("bench")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    manager = server._tool_manager
    context = Context(mcp_server=server, subscriptions=server._subscriptions)

    async def run_dispatch(n: int) -> int:
        dispatch = router.dispatch
        start = time.perf_counter_ns()
        for _ in range(n):
            await dispatch(call)
        return time.perf_counter_ns() - start

    async def run_dispatch_wire(n: int) -> int:
        dispatch = router.dispatch
        start = time.perf_counter_ns()
        for _ in range(n):
            await dispatch(wire)
        return time.perf_counter_ns() - start

    async def run_validation(n: int) -> int:
        validate = adapter.validate_python
        start = time.perf_counter_ns()
        for _ in range(n):
            validate(ARGS)
        return time.perf_counter_ns() - start

    async def run_mcp_manager(n: int) -> int:
        call_tool = manager.call_tool
        start = time.perf_counter_ns()
        for _ in range(n):
            await call_tool("add", ARGS, context, convert_result=True)
        return time.perf_counter_ns() - start

    async def run_mcp_server(n: int) -> int:
        call_tool = server.call_tool
        start = time.perf_counter_ns()
        for _ in range(n):
            await call_tool("add", ARGS)
        return time.perf_counter_ns() - start

    async def run_plain(n: int) -> int:
        fn = plain_add
        start = time.perf_counter_ns()
        for _ in range(n):
            await fn(1, 2)
        return time.perf_counter_ns() - start

    return {
        "dispatch": run_dispatch,
        "dispatch_wire": run_dispatch_wire,
        "validation": run_validation,
        "mcp_manager": run_mcp_manager,
        "mcp_server": run_mcp_server,
        "plain": run_plain,
    }


async def sanity() -> None:
    """Check once that every path computes the same thing (so no candidate is a no-op)."""
    from mcp.server.mcpserver import MCPServer

    router = build_router()
    result = await router.dispatch(ToolCall(id="c", name="add", arguments=ARGS))
    wire = await router.dispatch({"id": "c", "name": "add", "arguments": ARGS})
    server: Any = MCPServer("sanity")

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    mcp_result = await server.call_tool("add", ARGS)
    checks = {
        "dispatch(ToolCall)": result.success and result.data == {"value": 3},
        "dispatch(wire dict)": wire.success and wire.data == {"value": 3},
        "mcp call_tool": mcp_result.structured_content == {"result": 3},
        "TypeAdapter": TypeAdapter(AddArgs).validate_python(ARGS) == ARGS,
    }
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        raise SystemExit(f"sanity check failed for: {', '.join(failed)}")


async def measure(calls: int, rounds: int) -> dict[str, float]:
    """Return the median ns per call of each candidate."""
    await sanity()
    loops = make_loops()
    for run in loops.values():  # warm-up: caches, lazy imports, pydantic validators
        await run(max(calls // 4, 1000))
    samples: dict[str, list[float]] = {label: [] for label in loops}
    for _ in range(rounds):
        for label, run in loops.items():  # interleaved, so drift hits every candidate alike
            gc.collect()
            samples[label].append(await run(calls) / calls)
    return {label: statistics.median(values) for label, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000, help="calls per round (default 20000)")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds; the median is reported")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)

    med = asyncio.run(measure(args.calls, args.rounds))
    us = {label: ns / 1000 for label, ns in med.items()}
    vs_validation = med["dispatch"] / med["validation"]
    vs_mcp = med["mcp_manager"] / med["dispatch"]
    vs_mcp_public = med["mcp_server"] / med["dispatch"]
    python = sys.version.split()[0]
    print(f"dispatch_overhead: {args.calls} calls x {args.rounds} rounds, median per call (Python {python})")
    rows = [
        ("ToolRouter.dispatch(ToolCall)", f"{us['dispatch']:8.3f} us", ""),
        ("ToolRouter.dispatch(wire dict)", f"{us['dispatch_wire']:8.3f} us", "info: + envelope check"),
        ("baseline TypeAdapter.validate_python", f"{us['validation']:8.3f} us", ""),
        ("baseline mcp ToolManager.call_tool", f"{us['mcp_manager']:8.3f} us", "goal baseline"),
        ("baseline mcp MCPServer.call_tool", f"{us['mcp_server']:8.3f} us", "info: public API"),
        ("reference plain await add(1, 2)", f"{us['plain']:8.3f} us", ""),
        ("dispatch overhead over plain await", f"{us['dispatch'] - us['plain']:8.3f} us", ""),
        ("ratio dispatch / validation", f"{vs_validation:8.2f}x", f"goal <= {MAX_VS_VALIDATION:g}x"),
        ("speedup mcp ToolManager / dispatch", f"{vs_mcp:8.2f}x", f"goal >= {MIN_SPEEDUP_VS_MCP:g}x"),
        ("speedup mcp MCPServer.call_tool / dispatch", f"{vs_mcp_public:8.2f}x", "info"),
    ]
    for label, value, note in rows:
        print(f"  {label:<44} {value}" + (f"   ({note})" if note else ""))

    goals = [
        (
            f"dispatch <= {MAX_VS_VALIDATION:g}x TypeAdapter validation ({vs_validation:.2f}x)",
            vs_validation <= MAX_VS_VALIDATION,
        ),
        (
            f"dispatch >= {MIN_SPEEDUP_VS_MCP:g}x faster than mcp direct tool call ({vs_mcp:.2f}x)",
            vs_mcp >= MIN_SPEEDUP_VS_MCP,
        ),
    ]
    for text, ok in goals:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    return 1 if args.check and not all(ok for _, ok in goals) else 0


if __name__ == "__main__":
    sys.exit(main())
