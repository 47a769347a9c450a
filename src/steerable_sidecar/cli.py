"""The ``steerable`` command: inspect, call and serve the workspace tools.

Every sub-command boots the same way (``steerable_sidecar.boot``): workspace tools, plugins,
``--harness``, then the MCP servers of ``STEERABLE_MCP_CONFIG``. Sub-commands (each takes
``--workspace DIR``, default the current directory):

* ``steerable tools``: the inventory as a table (name, mode, tier, description); ``--json`` for JSON.
* ``steerable call NAME 'JSON'``: one tool call; prints the ToolResult JSON. Exit 0 on success,
  1 on a failed result, 2 on a usage error.
* ``steerable session``: ToolCall JSON lines on stdin, ``{"id", "result"}`` lines on stdout.
* ``steerable mcp``: serve the tools over MCP stdio.
* ``steerable plugins``: the plugins, their origins and tools.
* ``steerable run --instruction TEXT``: one headless agent run (``steerable_sidecar.headless``).
* ``steerable sidecar``: serve the tools and the agent loop to a host over JSON-RPC 2.0 on stdio
  (``docs/sidecar-protocol.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import textwrap
from collections.abc import Awaitable, Callable, Sequence

from steerable_agent_runtime import SteerableError, ToolCall, ToolRouter, new_call_id

from .boot import HARNESS_CHOICES, Booted, boot_tools, mcp_sources_for

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """Return the ``steerable`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="steerable",
        description="Agent tool runtime: validated tool calls and safe workspace file tools.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--workspace", "-w", default=None, metavar="DIR", help="workspace root (default: current directory)"
    )
    common.add_argument(
        "--allow-outside-workspace",
        action="store_true",
        help="accept paths outside the workspace (only for runs the host already jails)",
    )
    common.add_argument(
        "--allow-protected-writes",
        action="store_true",
        default=None,
        help="let the file tools (and bash) write .git, shell start-up files, editor, agent and MCP "
        "configuration (default: refused; also STEERABLE_ALLOW_PROTECTED_WRITES=1)",
    )
    common.add_argument(
        "--harness",
        choices=HARNESS_CHOICES,
        default="full",
        help="offered tools: full, minimal, or progressive (direct tier + tool_search)",
    )
    common.add_argument(
        "--no-plugins", action="store_true", help="skip plugins (entry points and STEERABLE_PLUGIN_DIR)"
    )
    common.add_argument(
        "--no-web-tools", action="store_true", help="omit web_search and web_fetch (offline task contract)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    tools = sub.add_parser("tools", parents=[common], help="list the tools (name, mode, tier, description)")
    tools.add_argument("--json", action="store_true", help="print the full inventory as JSON")
    call = sub.add_parser("call", parents=[common], help="run one tool call and print its ToolResult JSON")
    call.add_argument("name", help="tool name, e.g. read_file")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments (default {})")
    sub.add_parser("session", parents=[common], help="ToolCall JSON lines on stdin -> result lines on stdout")
    sub.add_parser("mcp", parents=[common], help="serve the tools over MCP stdio")
    plugins = sub.add_parser("plugins", parents=[common], help="list the plugins, their origins and tools")
    plugins.add_argument("--json", action="store_true", help="print the plugins as JSON")
    run = sub.add_parser(
        "run", help="one headless agent run in a jailed workspace; prints a JSON summary line on stdout"
    )
    from .headless import add_run_arguments

    add_run_arguments(run)
    sidecar = sub.add_parser(
        "sidecar",
        parents=[common],
        help="serve the tools and the agent loop to a host (JSON-RPC 2.0 on stdio)",
    )
    sidecar.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="durable session records (default: $STEERABLE_STATE_DIR or $XDG_STATE_HOME/steerable)",
    )
    return parser


def _boot(args: argparse.Namespace) -> Booted:
    return boot_tools(
        args.workspace or os.getcwd(),
        allow_outside=args.allow_outside_workspace,
        allow_protected_writes=args.allow_protected_writes,
        harness=args.harness,
        plugins=not args.no_plugins,
        web_tools=not args.no_web_tools,
    )


def _print_plugins(booted: Booted, as_json: bool) -> None:
    infos = booted.plugins.plugins()
    if as_json:
        print(json.dumps([info.to_dict() for info in infos], indent=2))
        return
    if not infos:
        print(
            "no plugins (install a package with a steerable.tools entry point, or set STEERABLE_PLUGIN_DIR)"
        )
        return
    for info in infos:
        print(f"{info.name}  [{info.state}]  {info.origin}: {info.source}")
        print(f"    tools: {', '.join(info.tools) or '(none)'}")


async def _with_mcp(booted: Booted, work: Callable[[], Awaitable[int]]) -> int:
    """Run ``work`` with the configured MCP servers connected (``STEERABLE_MCP_CONFIG``), if any."""
    sources = mcp_sources_for(booted.router, None)
    if sources is None:
        return await work()
    async with sources:
        return await work()


async def _closing(booted: Booted, work: Awaitable[int]) -> int:
    """Await ``work``, then release what the tools hold open (the web tools' HTTP clients)."""
    try:
        return await work
    finally:
        await booted.aclose()


def _print_table(router: ToolRouter) -> None:
    rows = [(t.name, t.mode.value, t.exposure.value, " ".join(t.description.split())) for t in router]
    widths = [max(len(r[i]) for r in rows + [("NAME", "MODE", "TIER", "")]) for i in range(3)]
    width = max(shutil.get_terminal_size((120, 24)).columns - sum(widths) - 6, 30)
    header = ("NAME", "MODE", "TIER", "DESCRIPTION")
    for row in [header, *rows]:
        desc = textwrap.shorten(row[3], width=width, placeholder="...") if row[3] else ""
        print(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {desc}".rstrip())


async def _call(router: ToolRouter, name: str, arguments: str) -> int:
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        print(f"steerable call: ARGUMENTS is not JSON: {exc.msg} at position {exc.pos}", file=sys.stderr)
        return 2
    except (ValueError, RecursionError) as exc:  # an over-long integer, nesting too deep
        print(f"steerable call: ARGUMENTS is not usable JSON: {exc or 'nested too deeply'}", file=sys.stderr)
        return 2
    if not isinstance(parsed, dict):
        print(
            'steerable call: ARGUMENTS must be a JSON object, e.g. \'{"path": "README.md"}\'', file=sys.stderr
        )
        return 2
    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the result JSON alone
        result = await router.dispatch(ToolCall(id=new_call_id(), name=name, arguments=parsed))
    print(json.dumps(result.to_wire(), ensure_ascii=False, indent=2))
    return 0 if result.success else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``steerable`` command.

    A reader that stops early (``steerable tools | head``) ends the command quietly, as for any
    Unix filter, instead of with a ``BrokenPipeError`` traceback.

    Args:
        argv: Arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        The process exit code (141, 128 + SIGPIPE, when the reader went away).
    """
    try:
        return _main(argv)
    except BrokenPipeError:
        # the Python docs' recipe: point stdout at devnull so the exit flush cannot fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # reported by the sub-command's parser, so `steerable run` still prints its JSON line
        report = getattr(args, "usage_error", None) or parser.error
        report(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "run":
        from .headless import run_headless

        return run_headless(args)
    if args.command == "sidecar":
        from .serve import run_sidecar

        return run_sidecar(
            args.workspace,
            state_dir=args.state_dir,
            allow_outside=args.allow_outside_workspace,
            allow_protected_writes=args.allow_protected_writes,
            harness=args.harness,
            plugins=not args.no_plugins,
            web_tools=not args.no_web_tools,
        )
    try:
        with contextlib.redirect_stdout(sys.stderr):  # a plugin's print at import or register
            booted = _boot(args)
        if args.command == "plugins":  # listing plugins needs no MCP server started
            return asyncio.run(_closing(booted, _command(args, booted)))
        return asyncio.run(_closing(booted, _with_mcp(booted, lambda: _command(args, booted))))
    except SteerableError as exc:
        print(f"steerable: {exc}", file=sys.stderr)
        return 2


async def _command(args: argparse.Namespace, booted: Booted) -> int:
    router = booted.router
    if args.command == "tools":
        if args.json:
            print(json.dumps(router.describe(), indent=2))
        else:
            _print_table(router)
        return 0
    if args.command == "plugins":
        _print_plugins(booted, args.json)
        return 0
    if args.command == "call":
        return await _call(router, args.name, args.arguments)
    if args.command == "session":
        from .session import run_session

        out = sys.stdout
        with contextlib.redirect_stdout(sys.stderr):  # a tool's print never lands between result lines
            await run_session(router, stdout=out)
        return 0
    from .mcp_server import serve_mcp_stdio  # imports the mcp SDK: only here

    await serve_mcp_stdio(router, offered=booted.harness.offered)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
