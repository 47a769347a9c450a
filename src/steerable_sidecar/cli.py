"""The ``steerable`` command: inspect, call and serve the workspace tools.

Every sub-command boots the same way (:mod:`steerable_sidecar.boot`): workspace tools, plugins,
``--harness``, then the MCP servers of ``STEERABLE_MCP_CONFIG``; the shared options work before or
after the command name. Sub-commands: ``tools`` (what ``mcp`` lists), ``call NAME 'JSON'`` (one
ToolResult), ``session`` (docs/mcp.md, "The line session"), ``mcp`` (docs/mcp.md), ``acp``
(docs/acp.md), ``plugins``, ``doctor`` (:mod:`steerable_sidecar.doctor`), ``jobs`` (docs/sandbox.md,
"The container posture"), ``run`` (docs/headless.md) and ``sidecar``
(docs/sidecar-protocol.md). Exit codes are :class:`~steerable_sidecar.exit_codes.ExitCode`
(docs/headless.md, "Exit codes"). Logs go to stderr at ``--verbose`` or ``STEERABLE_LOG_LEVEL``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from steerable_agent_runtime import __version__
from steerable_agent_runtime.errors import SteerableError
from steerable_agent_runtime.harness import HarnessStrategy

from ._logging import configure_logging, log_level
from .exit_codes import ExitCode

if TYPE_CHECKING:  # the tools are imported when a command needs them (start-up: benchmarks/startup.py)
    from steerable_agent_runtime import ToolRouter
    from steerable_agent_runtime.tools import Tool

    from ._signals import Shutdown
    from .boot import Booted

__all__ = ["build_parser", "main"]

_HARNESS_CHOICES: Final = tuple(strategy.value for strategy in HarnessStrategy)


_EPILOG: Final = (
    "Shared options work before or after the command. Configuration comes from STEERABLE_* "
    "variables: `steerable doctor` shows what they resolve to here, docs/configuration.md lists them all."
)
_RUN_EPILOG: Final = (
    "The model comes from STEERABLE_PROVIDER (openai, openrouter, deepseek, glm, ollama, scripted), "
    "STEERABLE_MODEL, STEERABLE_BASE_URL and STEERABLE_API_KEY (STEERABLE_SCRIPT for scripted); "
    "`steerable doctor` checks them. Exit codes: 0 success, 1 failed terminal result, 2 usage or "
    "configuration error, 3 round limit, 4 provider failure, 70 internal error, 128 + n on a signal "
    "(130 Ctrl-C, 143 SIGTERM)."
)


def _shared_options(parser: argparse.ArgumentParser, *, top: bool, outside: bool = True) -> None:
    """Add the options every command takes, so they work before or after the command name.

    On the top parser they carry the defaults; on a command's parser their default is
    ``SUPPRESS``, so a value given before the command is not reset by the command's parser.
    """

    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    parser.add_argument(
        "--workspace",
        "-w",
        default=default(None),
        metavar="DIR",
        help="workspace root (default: current directory)",
    )
    parser.add_argument(  # run takes it only to refuse it by name (its help hides it)
        "--allow-outside-workspace",
        action="store_true",
        default=default(False),
        help="accept paths outside the workspace (only for runs the host already jails)"
        if outside
        else argparse.SUPPRESS,
    )
    parser.add_argument(
        "--allow-protected-writes",
        action="store_true",
        default=default(None),
        help="let the file tools (and bash) write .git, shell start-up files, editor, agent and MCP "
        "configuration (default: refused; also STEERABLE_ALLOW_PROTECTED_WRITES=1)",
    )
    parser.add_argument(
        "--harness",
        choices=_HARNESS_CHOICES,
        default=default("full"),
        help="offered tools: full, minimal, or progressive (direct tier + tool_search)",
    )
    parser.add_argument(
        "--no-plugins",
        action="store_true",
        default=default(False),
        help="skip plugins (entry points and STEERABLE_PLUGIN_DIR)",
    )
    parser.add_argument(
        "--no-web-tools",
        action="store_true",
        default=default(False),
        help="omit web_search and web_fetch (offline task contract)",
    )
    parser.add_argument(
        "--verbose",
        "-v",
        action="count",
        default=default(0),
        help="log to stderr: -v INFO, -vv DEBUG (default: STEERABLE_LOG_LEVEL, else WARNING)",
    )


class _Parser(argparse.ArgumentParser):
    """A command's parser: no abbreviated options (``--all`` is not ``--allow-...``, ever).

    Args:
        setup: Adds the command's arguments when the command is parsed or its usage shown, so a
            command builds (and imports) only its own options: ``steerable call`` does not load
            ``run``'s, ``acp``'s or ``jobs``' modules.
    """

    def __init__(
        self, *args: Any, setup: Callable[[argparse.ArgumentParser], None] | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._setup = setup

    def _set_up(self) -> None:
        setup, self._setup = self._setup, None
        if setup is not None:
            setup(self)

    def parse_known_args(  # type: ignore[override]  # typeshed's overloads, one implementation
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._set_up()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._set_up()
        return super().format_usage()

    def format_help(self) -> str:
        self._set_up()
        return super().format_help()


def _with_shared(
    add: Callable[[argparse.ArgumentParser], None] | None = None, *, outside: bool = True
) -> Callable[[argparse.ArgumentParser], None]:
    """A command's setup: the shared options (:func:`_shared_options`), then its own (``add``)."""

    def setup(parser: argparse.ArgumentParser) -> None:
        _shared_options(parser, top=False, outside=outside)
        if add is not None:
            add(parser)

    return setup


def _add_tools_arguments(tools: argparse.ArgumentParser) -> None:
    tools.add_argument("--json", action="store_true", help="print the tools' full descriptors as JSON")
    tools.add_argument(
        "--all", action="store_true", help="every registered tool, deferred and hidden ones included"
    )


def _add_call_arguments(call: argparse.ArgumentParser) -> None:
    call.add_argument("name", help="tool name, e.g. read_file")
    call.add_argument("arguments", nargs="?", default=None, help="JSON object of arguments (default {})")


def _add_acp_arguments(acp: argparse.ArgumentParser) -> None:
    from ._acp_cli import add_acp_arguments

    add_acp_arguments(acp)


def _add_plugins_arguments(plugins: argparse.ArgumentParser) -> None:
    plugins.add_argument("--json", action="store_true", help="print the plugins as JSON")


def _add_doctor_arguments(doctor: argparse.ArgumentParser) -> None:
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.add_argument("--state-dir", default=None, metavar="DIR", help="the state directory to check")


def _add_jobs_arguments(jobs: argparse.ArgumentParser) -> None:
    from ._jobs_cli import add_jobs_arguments

    add_jobs_arguments(jobs)


def _add_run_arguments(run: argparse.ArgumentParser) -> None:
    from .headless import add_run_arguments

    add_run_arguments(run)


def _add_sidecar_arguments(sidecar: argparse.ArgumentParser) -> None:
    sidecar.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="durable session records (default: $STEERABLE_STATE_DIR or $XDG_STATE_HOME/steerable)",
    )


def build_parser() -> argparse.ArgumentParser:
    """Return the ``steerable`` argument parser (each command's options are added when it is used)."""
    parser = _Parser(
        prog="steerable",
        description="Agent tool runtime: validated tool calls and safe workspace file tools.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"steerable {__version__}")
    _shared_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.add_parser(
        "tools",
        help="list the offered tools (name, mode, tier, description)",
        setup=_with_shared(_add_tools_arguments),
    )
    sub.add_parser(
        "call",
        help="run one tool call and print its ToolResult JSON",
        setup=_with_shared(_add_call_arguments),
    )
    sub.add_parser(
        "session", help="ToolCall JSON lines on stdin -> result lines on stdout", setup=_with_shared()
    )
    sub.add_parser("mcp", help="serve the tools over MCP stdio", setup=_with_shared())
    sub.add_parser(
        "acp",
        help="run the agent for an ACP editor (Agent Client Protocol on stdio)",
        setup=_with_shared(_add_acp_arguments),
    )
    sub.add_parser(
        "plugins",
        help="list the plugins, their origins and tools",
        setup=_with_shared(_add_plugins_arguments),
    )
    sub.add_parser(
        "doctor",
        help="show the resolved configuration and what each part will do here; exit 2 on a problem",
        setup=_with_shared(_add_doctor_arguments),
    )
    sub.add_parser(
        "jobs",
        help="list (or stop) the processes bash commands left running (STEERABLE_SANDBOX=container)",
        setup=_add_jobs_arguments,
    )
    sub.add_parser(
        "run",
        help="one headless agent run in a jailed workspace; prints a JSON summary line on stdout",
        epilog=_RUN_EPILOG,
        setup=_with_shared(_add_run_arguments, outside=False),
    )
    sub.add_parser(
        "sidecar",
        help="serve the tools and the agent loop to a host (JSON-RPC 2.0 on stdio)",
        setup=_with_shared(_add_sidecar_arguments),
    )
    return parser


def _raiser(exc: SteerableError) -> Callable[[], Booted]:
    def boot() -> Booted:
        raise exc

    return boot


def _boot(args: argparse.Namespace) -> Booted:
    from .boot import boot_tools

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
    from .boot import mcp_sources_for

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


def _search_the_deferred_tier(router: ToolRouter) -> None:
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


def _print_table(tools: Sequence[Tool]) -> None:
    import shutil
    import textwrap

    rows = [(t.name, t.mode.value, t.exposure.value, " ".join(t.description.split())) for t in tools]
    widths = [max(len(r[i]) for r in rows + [("NAME", "MODE", "TIER", "")]) for i in range(3)]
    width = max(shutil.get_terminal_size((120, 24)).columns - sum(widths) - 6, 30)
    header = ("NAME", "MODE", "TIER", "DESCRIPTION")
    for row in [header, *rows]:
        desc = textwrap.shorten(row[3], width=width, placeholder="...") if row[3] else ""
        print(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {desc}".rstrip())


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
    from steerable_agent_runtime.types import ToolCall, ToolResult, new_call_id

    from ._signals import INTERRUPT_DRAIN_S
    from .session import STOPPED, interrupted_result, interruptible

    # three fields known good (a fresh id, a name from the command line, a JSON object): validating
    # them would build ToolCall's validator, and look pydantic's plugins up, for nothing (start-up)
    call = ToolCall.model_construct(id=new_call_id(), name=name, arguments=parsed)
    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the result JSON alone
        done = await interruptible(router.dispatch(call), shutdown, drain_s=INTERRUPT_DRAIN_S)
    if done is STOPPED:  # a signal (REC-4): the call is answered as interrupted, the exit is 128 + n
        assert shutdown is not None
        result = interrupted_result(shutdown)
    else:
        assert isinstance(done, ToolResult)
        result = done
    print(json.dumps(result.to_wire(), ensure_ascii=False, indent=2))
    return ExitCode.OK if result.success else ExitCode.FAILED


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
    args, extra = parser.parse_known_args(argv)
    if args.command == "call" and args.arguments is None and extra and not extra[0].startswith("-"):
        # `call NAME --harness X '{...}'`: argparse gives the optional `arguments` up before the
        # option, so the JSON lands in the extras; it is the command's second positional
        args.arguments = extra.pop(0)
    if extra:  # reported by the sub-command's parser, so `steerable run` still prints its JSON line
        report = args.usage_error if args.command == "run" else parser.error
        report(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "run" and args.allow_outside_workspace:
        args.usage_error("steerable run jails the workspace: --allow-outside-workspace is not accepted")
    return args


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = _parse(parser, argv)
    if args.command is None:
        parser.print_help()
        return ExitCode.USAGE
    if args.command not in _ONE_SHOT:
        failed = _configure(args)
        return failed if failed is not None else _served(args)
    with _loading(own_process=argv is None):
        failed = _configure(args)
        if failed is not None:
            return failed
        try:
            with contextlib.redirect_stdout(sys.stderr):  # a plugin's print at import or register
                booted = _boot(args)
        except SteerableError as exc:
            print(f"steerable: {exc}", file=sys.stderr)
            return ExitCode.USAGE
        if args.command in ("call", "session"):  # what they answer with, loaded with the tools
            import steerable_agent_runtime.types  # noqa: F401
    from ._signals import run_until_signalled  # SIGTERM, SIGHUP, SIGINT (REC-4, SAFE-2)

    try:
        if args.command == "plugins":  # listing plugins needs no MCP server started
            code = run_until_signalled(_closing(booted, _command(args, booted)))
        else:
            code = run_until_signalled(
                lambda shutdown: _closing(booted, _with_mcp(booted, lambda: _command(args, booted, shutdown)))
            )
    except SteerableError as exc:
        print(f"steerable: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if argv is None:  # the process ends with the command (not a caller's main([...]) in its own process)
        import gc

        # what is left is freed with the process: without this, the interpreter's teardown collects
        # every object once more (benchmarks/startup.py)
        gc.freeze()
    return code


_ONE_SHOT: Final = frozenset({"tools", "call", "session", "plugins"})
"""The commands booted here that end with their work; the others start their own way (:func:`_served`)."""


def _configure(args: argparse.Namespace) -> int | None:
    """Apply the configuration file and set up logging; the exit code when that fails (else ``None``).

    A bad file or setting ends the command with a usage error, except where the command reports it
    itself: ``doctor`` in its table, ``run`` in its JSON line, ``mcp`` to the host.
    """
    try:
        if args.command != "doctor":  # doctor reads the file itself, to say where each value came from
            _apply_config_file(args)
        configure_logging(log_level(args.verbose))
    except SteerableError as exc:
        if args.command == "doctor":  # doctor reports it in its table, with everything else
            configure_logging(log_level(args.verbose, {}))
            from .doctor import run_doctor

            return run_doctor(args)
        if args.command == "run":
            args.usage_error(str(exc))
        if args.command == "mcp":  # the host is answered with the error, as for any bad setting
            configure_logging(log_level(args.verbose, {}))
            from ._mcp_cli import run_mcp

            return run_mcp(args, boot=_raiser(exc))
        print(f"steerable: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    return None


@contextlib.contextmanager
def _loading(*, own_process: bool) -> Iterator[None]:
    """Load a one-shot command's tools without the garbage collector, then keep them out of its way.

    Loading allocates some 30,000 objects, modules, classes and functions that live as long as the
    process; the collector would walk them again and again meanwhile (several ms of a ``steerable
    call``, benchmarks/startup.py). It is paused while they load and, once they are loaded, they
    are moved out of its sight (``gc.freeze``): what the command allocates afterwards is collected
    as usual. Only when this process runs the command alone (``main()`` of the ``steerable``
    program, not a caller's ``main([...])``, whose objects are its own).
    """
    if not own_process:
        yield
        return
    import gc

    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _apply_config_file(args: argparse.Namespace) -> None:
    """Put the configuration file's settings under the environment's (variable > file > default).

    Raises:
        ConfigError: The file is invalid (the message names it and the key).
    """
    from .config_file import read_config_file

    workspace = vars(args).get("workspace") or os.getcwd()
    loaded = read_config_file(workspace=workspace)
    if loaded.ignored:
        print(
            f"steerable: the configuration file {loaded.path} is not read: {loaded.ignored}", file=sys.stderr
        )
    os.environ.update(loaded.applied(os.environ))


def _served(args: argparse.Namespace) -> int:
    """Run the commands that manage their own start-up (run, sidecar, doctor, jobs, acp, mcp)."""
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
    if args.command == "doctor":
        from .doctor import run_doctor

        return run_doctor(args)
    if args.command == "jobs":  # reads the records alone: no tools booted
        from ._jobs_cli import run_jobs

        return run_jobs(args)
    if args.command == "acp":  # answers the editor's initialize first (docs/acp.md: Start-up)
        from ._acp_cli import run_acp

        return run_acp(args)
    if args.command == "mcp":  # answers the host's handshake first, then boots (docs/mcp.md: Start-up)
        from ._mcp_cli import run_mcp

        return run_mcp(args, boot=lambda: _boot(args))
    raise AssertionError(f"unhandled command {args.command!r}")  # pragma: no cover


async def _command(args: argparse.Namespace, booted: Booted, shutdown: Shutdown | None = None) -> int:
    from .boot import offered_tools

    router = booted.router
    if args.command == "tools":
        listed = list(router) if args.all else offered_tools(router, booted.harness.offered)
        if args.json:
            print(json.dumps([tool.describe() for tool in listed], indent=2))
        else:
            _print_table(listed)
        return ExitCode.OK
    if args.command == "plugins":
        _print_plugins(booted, args.json)
        return ExitCode.OK
    if args.command in ("call", "session"):
        _search_the_deferred_tier(router)
    if args.command == "call":
        return await _call(router, args.name, args.arguments or "{}", shutdown)
    if args.command == "session":
        from .session import run_session

        out = sys.stdout
        with contextlib.redirect_stdout(sys.stderr):  # a tool's print never lands between result lines
            await run_session(router, stdout=out, shutdown=shutdown)
        return ExitCode.OK
    raise AssertionError(f"unhandled command {args.command!r}")  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
