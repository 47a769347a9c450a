"""The ``steerable`` command's parsers: no abbreviated options, and usage errors that name the fix.

Used by :mod:`steerable_sidecar.cli` for the top-level parser and every command's (``run``'s own
error wrapper adds the same hint).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

__all__ = ["CommandParser", "did_you_mean", "hinted"]


class CommandParser(argparse.ArgumentParser):
    """A command's parser: no abbreviated options (``--all`` is not ``--allow-...``, ever).

    A usage error names the fix when it can: the command or choice meant by a misspelt one (``steerable
    tool``: did you mean 'tools'?) and the option meant by an unknown one (:func:`did_you_mean`).

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
        super().error(hinted(message, did_you_mean(self, self.unknown_options, message)))

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
