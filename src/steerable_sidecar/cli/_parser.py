"""The ``steerable`` command's parsers: no abbreviated options, and usage errors that name the fix.

:func:`build_parser` builds the top-level parser from the command table (``_commands.COMMANDS``);
each command's parser is a :class:`CommandParser` whose options are added when it is used.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any, Final, NoReturn

from steerable_agent_runtime import __version__
from steerable_agent_runtime.harness import HarnessStrategy

from ._commands import COMMANDS, Command, resolve

__all__ = ["CommandParser", "build_parser", "command_named", "did_you_mean", "hinted", "usage_hook"]

_HARNESS_CHOICES: Final = tuple(strategy.value for strategy in HarnessStrategy)

_EPILOG: Final = (
    "Shared options work before or after the command; `steerable COMMAND --help` lists the ones it "
    "takes. Configuration comes from flags, then STEERABLE_* variables, then the configuration file "
    "(~/.config/steerable/config.toml): `steerable doctor` shows what they resolve to here and where "
    "each came from, docs/configuration.md lists them all."
)


class CommandParser(argparse.ArgumentParser):
    """A command's parser: no abbreviated options (``--all`` is not ``--allow-...``, ever).

    A usage error names the fix when it can: the command or choice meant by a misspelt one (``steerable
    tool``: did you mean 'tools'?) and the option meant by an unknown one (:func:`did_you_mean`).

    Args:
        setup: Adds the command's arguments when the command is parsed or its usage shown, so a
            command builds (and imports) only its own options: ``steerable call`` does not load
            ``run``'s, ``acp``'s or ``jobs``' modules.
        on_usage_error: Called with a usage error's message before the usage is printed
            (``steerable run`` prints its one-line JSON summary on stdout).
    """

    def __init__(
        self,
        *args: Any,
        setup: Callable[[argparse.ArgumentParser], None] | None = None,
        on_usage_error: Callable[[str], None] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._setup = setup
        self.on_usage_error = on_usage_error
        self.unknown_options: list[str] = []
        """The long options given that this parser does not know, for its usage errors' hint."""

    def _set_up(self) -> None:
        setup, self._setup = self._setup, None
        if setup is not None:
            setup(self)

    def parse_known_args(  # type: ignore[override]  # typeshed's overloads, one implementation
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._set_up()
        given = sys.argv[1:] if args is None else list(args)
        ends = given.index("--") if "--" in given else len(given)
        options = (token.split("=", 1)[0] for token in given[:ends] if token.startswith("--"))
        self.unknown_options = [option for option in options if option not in self._option_string_actions]
        return super().parse_known_args(given, namespace)

    def error(self, message: str) -> NoReturn:
        message = hinted(message, did_you_mean(self, self.unknown_options, message))
        if self.on_usage_error is not None:
            self.on_usage_error(message)
        super().error(message)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            import difflib  # only when there is an error to report (start-up)

            choices = [str(choice) for choice in action.choices or ()]
            close = difflib.get_close_matches(str(value), choices, n=1)
            if not close:
                raise
            raise argparse.ArgumentError(action, f"{exc.message}; did you mean {close[0]!r}?") from None

    def format_usage(self) -> str:
        self._set_up()
        return super().format_usage()

    def format_help(self) -> str:
        self._set_up()
        return super().format_help()


def hinted(message: str, hint: str) -> str:
    return f"{message}; {hint}" if hint else message


def did_you_mean(parser: argparse.ArgumentParser, given: Sequence[str], message: str) -> str:
    """``did you mean --workspace?`` for the options in ``given`` close to one ``parser`` lists, or ``""``.

    The mistyped option is named too (``did you mean --instruction for --instrction?``) unless
    ``message``, the error it is added to, names it already (``unrecognized arguments: --qiet``).
    """
    if not given:
        return ""
    import difflib  # only when there is an error to report (start-up)

    listed = {
        option[2:]: option
        for action in parser._actions
        if action.help is not argparse.SUPPRESS
        for option in action.option_strings
        if option.startswith("--")
    }
    meant = []
    for option in dict.fromkeys(given):
        close = difflib.get_close_matches(option[2:], listed, n=1)
        if close:
            meant.append((option, listed[close[0]]))
    if not meant:
        return ""
    if len(meant) == 1 and meant[0][0] in {word.split("=", 1)[0] for word in message.split()}:
        return f"did you mean {meant[0][1]}?"
    return f"did you mean {', '.join(f'{right} for {wrong}' for wrong, right in meant)}?"


def build_parser() -> argparse.ArgumentParser:
    """Return the ``steerable`` argument parser (each command's options are added when it is used)."""
    parser = CommandParser(
        prog="steerable",
        description="Agent tool runtime: validated tool calls and safe workspace file tools.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"steerable {__version__}")
    parser.set_defaults(setting_origins={})  # the variables the configuration file set (_configure)
    shared_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    for command in COMMANDS.values():
        sub.add_parser(
            command.name,
            help=command.summary,
            description=command.description,
            epilog=command.epilog,
            setup=_setup(command),
            on_usage_error=usage_hook(command.on_usage_error),
        )
    return parser


def _setup(command: Command) -> Callable[[argparse.ArgumentParser], None]:
    """A command's setup: the shared options if it takes them, then its own (imported now)."""

    def setup(parser: argparse.ArgumentParser) -> None:
        if command.shared:
            shared_options(parser, top=False, hidden=command.refused)
        if command.arguments is not None:
            resolve(command.arguments)(parser)

    return setup


def usage_hook(target: str | None) -> Callable[[str], None] | None:
    """A parser's ``on_usage_error`` calling ``"module:function"`` (imported then); ``None`` for none."""
    if target is None:
        return None

    def hook(message: str) -> None:
        resolve(target)(message)

    return hook


def shared_options(parser: argparse.ArgumentParser, *, top: bool, hidden: Collection[str] = ()) -> None:
    """Add the options every command takes, so they work before or after the command name.

    On the top parser they carry the defaults; on a command's parser their default is
    ``SUPPRESS``, so a value given before the command is not reset by the command's parser. The
    ``hidden`` ones (a command's ``refused``) are parsed, to be refused by name, but not listed.
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


def command_named(parser: argparse.ArgumentParser, argv: Sequence[str]) -> Command | None:
    """The command ``argv`` names (its first word that is no option nor an option's value), if any.

    ``parser`` is the top-level parser: its options that take a value (``--workspace DIR``) say
    which words to skip. For an error it reports before any command's parser ran: ``steerable
    --harness ful run x`` is ``run``'s, which prints its JSON line for every usage error.
    """
    takes_value = {
        option for action in parser._actions if action.nargs != 0 for option in action.option_strings
    }
    words = iter(argv)
    for word in words:
        if word == "--":
            break
        if word.startswith("-"):
            if word in takes_value:
                next(words, None)
            continue
        return COMMANDS.get(word)
    return None
