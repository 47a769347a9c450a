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
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Final, NoReturn

from steerable_agent_runtime import __version__
from steerable_agent_runtime.errors import SteerableError
from steerable_agent_runtime.harness import HarnessStrategy

from ._cli_parser import CommandParser, did_you_mean, hinted
from ._logging import configure_logging, log_level
from .exit_codes import ExitCode, exit_codes_help

if TYPE_CHECKING:  # the tools are imported when a command needs them (start-up: benchmarks/startup.py)
    from steerable_agent_runtime import ToolRouter
    from steerable_agent_runtime.tools import Tool

    from ._signals import Shutdown
    from .boot import Booted

__all__ = ["build_parser", "main"]

_HARNESS_CHOICES: Final = tuple(strategy.value for strategy in HarnessStrategy)


_EPILOG: Final = (
    "Shared options work before or after the command; `steerable COMMAND --help` lists the ones it "
    "takes. Configuration comes from flags, then STEERABLE_* variables, then the configuration file "
    "(~/.config/steerable/config.toml): `steerable doctor` shows what they resolve to here and where "
    "each came from, docs/configuration.md lists them all."
)
_RUN_EPILOG: Final = (
    "The model comes from --provider, --model and --base-url, else STEERABLE_PROVIDER (openai, "
    "anthropic, ollama, vllm, openrouter, deepseek... or scripted), STEERABLE_MODEL and "
    "STEERABLE_BASE_URL, else the configuration file (~/.config/steerable/config.toml); the key only "
    "from STEERABLE_API_KEY or the file (STEERABLE_SCRIPT for scripted). `steerable doctor` shows "
    "where each came from. " + exit_codes_help()
)

_DESCRIPTIONS: Final = {
    "tools": "List the tools offered in the workspace: name, mode (read, safe_write, destructive, local, "
    "external), tier and description; --json prints each one's full descriptor, input schema included. "
    "It is the list `steerable mcp` serves.",
    "call": "Run one tool call in the workspace and print its ToolResult JSON on stdout; exit 0 when the "
    'result succeeded, 1 when it failed. Example: steerable call read_file \'{"path": "README.md"}\'. '
    "Each call is its own session: for several steps that share read state, use `session` or `mcp`.",
    "session": "Read one ToolCall JSON object per line on stdin and write one result line per call on "
    "stdout, keeping the read state between calls: the tools for a script or a host of your own "
    '(docs/mcp.md, "The line session").',
    "mcp": "Serve the workspace tools to an MCP host (Claude Desktop, Claude Code, Cursor...) over stdio. "
    "In the host's configuration, name the project: a host may start the server in / or a home "
    "directory, and serving those is refused (docs/mcp.md).",
    "acp": "Run steerable as the agent of an Agent Client Protocol editor (Zed, JetBrains IDEs...) over "
    "stdio: the editor starts it, each session works in the folder the editor opens, confined to it, "
    "and the model comes from the STEERABLE_* settings (docs/acp.md).",
    "plugins": "List the plugins found (steerable.tools entry points and STEERABLE_PLUGIN_DIR): where each "
    "came from, whether it loaded, and its tools (docs/plugins.md).",
    "doctor": "Resolve the configuration the way every command does and show what each part will do "
    "here: the sandbox, the search engine, the web tools, the model provider, plugins, MCP servers, the "
    "state directory and every STEERABLE_* variable. Exit 2 on a misconfiguration, with the message the "
    "failing command would print.",
    "jobs": "List the background processes that bash commands left running in the container posture "
    "(STEERABLE_SANDBOX=container), or stop them with `steerable jobs stop` (docs/sandbox.md, "
    '"The container posture").',
    "run": "Run the agent once, headless, on one task in a jailed workspace: progress on stderr, one JSON "
    "summary line on stdout and an exit code per outcome; for evals and CI (docs/headless.md).",
    "sidecar": "Serve the tools and the agent loop to a host application over stdio (JSON-RPC 2.0, one "
    "object per line), sessions recorded in the state directory; SidecarClient starts it "
    "(docs/sidecar-protocol.md).",
}
"""Each command's ``--help`` description: what it does, and what it is for."""

_ACP_OWN_FOLDER: Final = (
    "is not accepted: each session's workspace is the folder the editor opens (session/new's cwd), "
    "confined to it"
)
_REFUSED: Final[Mapping[str, Mapping[str, str]]] = {
    "acp": {
        "--workspace": f"--workspace {_ACP_OWN_FOLDER}",
        "--allow-outside-workspace": f"--allow-outside-workspace {_ACP_OWN_FOLDER}",
    },
    "run": {
        "--allow-outside-workspace": "steerable run jails the workspace: --allow-outside-workspace is not "
        "accepted"
    },
}
"""The shared options a command refuses, and why: its ``--help`` does not list them (:func:`_parse`)."""


def _shared_options(parser: argparse.ArgumentParser, *, top: bool, hidden: Collection[str] = ()) -> None:
    """Add the options every command takes, so they work before or after the command name.

    On the top parser they carry the defaults; on a command's parser their default is
    ``SUPPRESS``, so a value given before the command is not reset by the command's parser. The
    ``hidden`` ones (a command's :data:`_REFUSED`) are parsed, to be refused by name, but not listed.
    """

    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    def listed(option: str, text: str) -> str:
        return argparse.SUPPRESS if option in hidden else text

    parser.add_argument(
        "--workspace",
        "-w",
        type=os.path.expanduser,  # a host passes "~/proj" with no shell to expand it
        default=default(None),
        metavar="DIR",
        help=listed("--workspace", "workspace root (default: current directory)"),
    )
    parser.add_argument(
        "--allow-outside-workspace",
        action="store_true",
        default=default(False),
        help=listed(
            "--allow-outside-workspace",
            "accept paths outside the workspace (only for runs the host already jails)",
        ),
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


def _with_shared(
    add: Callable[[argparse.ArgumentParser], None] | None = None, *, hidden: Collection[str] = ()
) -> Callable[[argparse.ArgumentParser], None]:
    """A command's setup: the shared options (:func:`_shared_options`), then its own (``add``)."""

    def setup(parser: argparse.ArgumentParser) -> None:
        _shared_options(parser, top=False, hidden=hidden)
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


def _add_mcp_arguments(mcp: argparse.ArgumentParser) -> None:
    mcp.add_argument(
        "--read-max-chars",
        type=_positive_chars,
        default=None,
        metavar="N",
        help="clip read_file's content past N characters as the result's JSON holds it (1 to 100,000; "
        "default 40,000: a whole result fits what Claude Code shows its model; the other commands "
        "clip at 100,000 characters of text)",
    )


def _positive_chars(text: str) -> int:
    """``--read-max-chars``: 1 to the spec's clip (a larger bound would turn the clip off)."""
    from steerable_agent_runtime.workspace import DEFAULT_MAX_OUTPUT_CHARS

    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= DEFAULT_MAX_OUTPUT_CHARS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of characters from 1 to {DEFAULT_MAX_OUTPUT_CHARS:,}"
        )
    return value


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
    report = run.error  # run's own: the JSON summary line first, then the usage

    def error(message: str) -> NoReturn:
        unknown = run.unknown_options if isinstance(run, CommandParser) else ()
        report(hinted(message, did_you_mean(run, unknown, message)))

    run.error = error  # type: ignore[method-assign]
    run.set_defaults(usage_error=error)


def _add_sidecar_arguments(sidecar: argparse.ArgumentParser) -> None:
    sidecar.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="durable session records (default: $STEERABLE_STATE_DIR or $XDG_STATE_HOME/steerable)",
    )


def build_parser() -> argparse.ArgumentParser:
    """Return the ``steerable`` argument parser (each command's options are added when it is used)."""
    parser = CommandParser(
        prog="steerable",
        description="Agent tool runtime: validated tool calls and safe workspace file tools.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"steerable {__version__}")
    parser.set_defaults(setting_origins={})  # the variables the configuration file set: _apply_config_file
    _shared_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    commands: list[tuple[str, str, Callable[[argparse.ArgumentParser], None]]] = [
        (
            "tools",
            "list the offered tools (name, mode, tier, description)",
            _with_shared(_add_tools_arguments),
        ),
        ("call", "run one tool call and print its ToolResult JSON", _with_shared(_add_call_arguments)),
        ("session", "ToolCall JSON lines on stdin -> result lines on stdout", _with_shared()),
        ("mcp", "serve the tools over MCP stdio", _with_shared(_add_mcp_arguments)),
        (
            "acp",
            "run the agent for an ACP editor (Agent Client Protocol on stdio)",
            _with_shared(_add_acp_arguments, hidden=_REFUSED["acp"]),
        ),
        ("plugins", "list the plugins, their origins and tools", _with_shared(_add_plugins_arguments)),
        (
            "doctor",
            "show the resolved configuration and what each part will do here; exit 2 on a problem",
            _with_shared(_add_doctor_arguments),
        ),
        (
            "jobs",
            "list (or stop) the processes bash commands left running (STEERABLE_SANDBOX=container)",
            _add_jobs_arguments,  # reads its records alone: none of the shared options is its
        ),
        (
            "run",
            "one headless agent run in a jailed workspace; prints a JSON summary line on stdout",
            _with_shared(_add_run_arguments, hidden=_REFUSED["run"]),
        ),
        (
            "sidecar",
            "serve the tools and the agent loop to a host (JSON-RPC 2.0 on stdio)",
            _with_shared(_add_sidecar_arguments),
        ),
    ]
    for name, summary, setup in commands:
        epilog = _RUN_EPILOG if name == "run" else None
        sub.add_parser(name, help=summary, description=_DESCRIPTIONS[name], epilog=epilog, setup=setup)
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
        read_max_chars=_read_max_chars(args),
    )


def _read_max_chars(args: argparse.Namespace) -> int | None:
    """``read_file``'s clip: ``steerable mcp``'s (``--read-max-chars``, else the hosts'); else ``None``."""
    if args.command != "mcp":
        return None
    from steerable_agent_runtime.workspace import HOST_READ_MAX_CHARS

    chars: int | None = args.read_max_chars
    return HOST_READ_MAX_CHARS if chars is None else chars


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
    from steerable_agent_runtime import new_call_id

    from ._signals import INTERRUPT_DRAIN_S
    from .session import STOPPED, interrupted_result, interruptible

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
    if extra:  # reported by the command's parser: its usage, and `steerable run` still prints its JSON line
        command = _command_parser(parser, args)
        if isinstance(command, CommandParser):  # what it did not know may have come before the command name
            command.unknown_options = [token.split("=", 1)[0] for token in extra if token.startswith("--")]
        report = args.usage_error if args.command == "run" else command.error
        report(f"unrecognized arguments: {' '.join(extra)}")
    for option, reason in _REFUSED.get(args.command, {}).items():
        if vars(args).get(option[2:].replace("-", "_")) not in (None, False):
            if args.command == "run":
                args.usage_error(reason)
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
    from ._unknown_env import warn_unknown_variables  # a set lookup per variable; stderr, never fails

    warn_unknown_variables()  # a misspelt STEERABLE_* name is named, not ignored (docs/configuration.md)
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
            print(f"steerable: {_explained(exc, args)}", file=sys.stderr)
            return ExitCode.USAGE
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
    """Apply the configuration file, set up logging and check the workspace; the exit code when that fails.

    A bad file or setting ends the command with a usage error, except where the command reports it
    itself: ``doctor`` in its table, ``run`` in its JSON line, ``mcp`` to the host. So does a
    workspace the one rule refuses (``_workspace_policy``: not ``/``, a home folder, ...).
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
        if args.command == "run":  # a setting, not the command line: its JSON line, without the usage
            from .headless import usage_line

            print(f"steerable run: {exc}", file=sys.stderr)
            usage_line(str(exc))
            return ExitCode.USAGE
        if args.command == "mcp":  # the host is answered with the error, as for any bad setting
            configure_logging(log_level(args.verbose, {}))
            from ._mcp_cli import run_mcp

            return run_mcp(args, boot=_raiser(exc))
        print(f"steerable: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    from ._workspace_policy import refuse_workspace

    return refuse_workspace(args)


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

    ``args.setting_origins`` (``{}`` by default) gets where the file set each variable it gave, for
    the errors that name one (``config_file.with_origins``).

    Raises:
        ConfigError: The file is invalid (the message names it and the key).
    """
    from .config_file import read_config_file

    try:
        workspace = None if args.command == "acp" else vars(args).get("workspace") or os.getcwd()
    except FileNotFoundError:  # the current directory was deleted: the workspace rule says so next
        return
    loaded = read_config_file(workspace=workspace)  # acp: each session's folder is checked for the file
    if loaded.ignored:  # a folder the rule refuses is no workspace: the refusal is what the user is told
        from ._workspace_policy import workspace_refusal

        if workspace_refusal(workspace, command=args.command) is not None:
            loaded = read_config_file()
    if loaded.ignored:
        print(
            f"steerable: the configuration file {loaded.path} is not read: {loaded.ignored}", file=sys.stderr
        )
    applied = loaded.applied(os.environ)
    os.environ.update(applied)
    args.setting_origins = loaded.origins(applied)  # an error naming one of them says where it is


def _explained(exc: Exception, args: argparse.Namespace) -> str:
    """``exc``'s message, with where the configuration file set each variable it names."""
    from .config_file import with_origins

    origins: dict[str, str] = args.setting_origins
    return with_origins(str(exc), origins)


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
