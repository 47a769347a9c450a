"""The ``steerable`` command: parse, configure, then run the chosen row of the command table.

Every command is a row of ``_commands.COMMANDS``: its help, its options and the code that runs it.
A one-shot command (``tools``, ``call``, ``session``, ``plugins``) has its tools booted here
(:mod:`steerable_sidecar._boot`: workspace tools, plugins, ``--harness``, then the MCP servers of
``STEERABLE_MCP_CONFIG``); the others start their own way (``run``: docs/headless.md, ``sidecar``:
docs/sidecar-protocol.md, ``mcp``: docs/mcp.md, ``acp``: docs/acp.md, ``doctor``, ``jobs``). The
shared options work before or after the command name. Exit codes are
:class:`~steerable_sidecar.exit_codes.ExitCode` (docs/headless.md, "Exit codes"). Logs go to
stderr at ``--verbose`` or ``STEERABLE_LOG_LEVEL``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from steerable_agent_runtime.errors import SteerableError

from ..exit_codes import ExitCode
from ._commands import COMMANDS, Command, resolve
from ._configure import configure, explained, loading
from ._parser import CommandParser, build_parser, command_named, usage_hook

if TYPE_CHECKING:  # the tools are imported when a command needs them (start-up: benchmarks/startup.py)
    from .._boot import Booted

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``steerable`` command.

    A reader that stops early (``steerable tools | head``) ends the command quietly, as for any
    Unix filter, instead of with a ``BrokenPipeError`` traceback. Ctrl-C before a command's own
    handling is in place (while it loads) ends it with 130, without a traceback either.

    Args:
        argv: Arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        The process exit code (141, 128 + SIGPIPE, when the reader went away).
    """
    for stream in (sys.stdout, sys.stderr):
        # a lone surrogate (from a model's text, a file name, the environment) is written as \udXXX,
        # a valid JSON escape, instead of crashing the command after its work is done
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C before the command's event loop handles it (REC-4)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # the Python docs' recipe: point stdout at devnull so the exit flush cannot fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return ExitCode.BROKEN_PIPE


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    named = command_named(parser, sys.argv[1:] if argv is None else argv)
    if isinstance(parser, CommandParser) and named is not None:  # a shared option's error, before it
        parser.on_usage_error = usage_hook(named.on_usage_error)
    args, extra = parser.parse_known_args(argv)
    if args.command == "call" and args.arguments is None and extra and not extra[0].startswith("-"):
        # `call NAME --harness X '{...}'`: argparse gives the optional `arguments` up before the
        # option, so the JSON lands in the extras; it is the command's second positional
        args.arguments = extra.pop(0)
    if extra:  # reported by the command's parser: its usage (and `steerable run` still prints its JSON line)
        chosen = _command_parser(parser, args)
        if isinstance(chosen, CommandParser):  # what it did not know may have come before the command name
            chosen.unknown_options = [token.split("=", 1)[0] for token in extra if token.startswith("--")]
        chosen.error(f"unrecognized arguments: {' '.join(extra)}")
    command = COMMANDS.get(args.command or "")
    for option, reason in (command.refused if command else {}).items():
        if vars(args).get(option[2:].replace("-", "_")) not in (None, False):
            if command is not None and command.on_usage_error is not None:
                _command_parser(parser, args).error(reason)  # run: its JSON line, then the usage
            print(f"steerable {args.command}: {reason}", file=sys.stderr)
            raise SystemExit(ExitCode.USAGE)
    return args


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command ``args`` chose (``jobs stop``'s for ``steerable jobs stop``)."""
    while True:
        chosen = None
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(args, action.dest, None) or "")
        if chosen is None:
            return parser
        parser = chosen


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = _parse(parser, argv)
    if args.command is None:
        parser.print_help()
        return ExitCode.USAGE
    command = COMMANDS[args.command]
    if command.serves_stdio and (closed := _closed_stdio()):
        print(
            f"steerable {command.name}: {closed} is closed: the command reads requests on stdin and "
            "answers on stdout (start it with a pipe on each)",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    from ..config._unknown_env import warn_unknown_variables  # a set lookup per variable; stderr, never fails

    warn_unknown_variables()  # a misspelt STEERABLE_* name is named, not ignored (docs/configuration.md)
    if not command.one_shot:  # it starts its own way (run, sidecar, mcp, acp, doctor, jobs)
        failed = configure(args, command)
        if failed is not None:
            return failed
        code: int = resolve(command.run)(args)
        return code
    return _one_shot(args, command, own_process=argv is None)


def _closed_stdio() -> str:
    """``"stdin"`` or ``"stdout"`` when this process was started with that descriptor closed, else ``""``."""
    for fd, name in ((0, "stdin"), (1, "stdout")):
        try:
            os.fstat(fd)
        except OSError:
            return name
    return ""


def _one_shot(args: argparse.Namespace, command: Command, *, own_process: bool) -> int:
    """Boot the tools here, run the command's work with them, and end (tools, call, session, plugins)."""
    with loading(own_process=own_process):
        failed = configure(args, command)
        if failed is not None:
            return failed
        try:
            with contextlib.redirect_stdout(sys.stderr):  # a plugin's print at import or register
                from .._boot import boot_from_options

                booted = boot_from_options(args)
        except SteerableError as exc:
            print(f"steerable: {explained(exc, args)}", file=sys.stderr)
            return ExitCode.USAGE
    from ..shared._signals import run_until_signalled  # SIGTERM, SIGHUP, SIGINT (REC-4, SAFE-2)

    work = resolve(command.run)
    try:
        if command.connects_mcp:
            code = run_until_signalled(
                lambda shutdown: _closing(booted, _with_mcp(booted, lambda: work(args, booted, shutdown)))
            )
        else:
            code = run_until_signalled(_closing(booted, work(args, booted)))
    except SteerableError as exc:
        print(f"steerable: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if own_process:  # the process ends with the command (not a caller's main([...]) in its own process)
        import gc

        # what is left is freed with the process: without this, the interpreter's teardown collects
        # every object once more (benchmarks/startup.py)
        gc.freeze()
    return code


async def _with_mcp(booted: Booted, work: Callable[[], Awaitable[int]]) -> int:
    """Run ``work`` with the configured MCP servers connected (``STEERABLE_MCP_CONFIG``), if any."""
    from .._boot import mcp_sources_for

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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
