"""The ``steerable`` command's process exit codes, one table for every subcommand.

``steerable run``'s per-outcome codes are documented in docs/headless.md (Exit codes); the other
subcommands use the first three and the signal codes. 70 is ``EX_SOFTWARE`` from BSD
``sysexits.h``, 75 its ``EX_TEMPFAIL``; 130 and 141 are the shell's ``128 + n`` for SIGINT and SIGPIPE.
Each code carries the few words ``steerable run --help`` says of it (:func:`exit_codes_help`).
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode", "exit_codes_help"]


class ExitCode(IntEnum):
    """A process exit status; an ``int``, so ``sys.exit(ExitCode.USAGE)`` exits 2.

    Attributes:
        meaning: What the code says, in a few words (``steerable run --help``).
    """

    _value_: int
    meaning: str

    def __new__(cls, value: int, meaning: str) -> ExitCode:
        """A member from its ``(value, meaning)`` pair."""
        code = int.__new__(cls, value)
        code._value_ = value
        code.meaning = meaning
        return code

    OK = 0, "success"
    """The command (or run) succeeded; ``steerable call``: the tool's result succeeded."""
    FAILED = 1, "a failed terminal result"
    """``steerable call``: the tool's result failed; ``steerable run``: a failed terminal result."""
    USAGE = 2, "usage or configuration error"
    """Bad arguments or configuration (the message names the flag or variable); doctor: errors."""
    MAX_ROUNDS = 3, "round limit"
    """``steerable run`` reached its round limit."""
    PROVIDER_ERROR = 4, "provider failure"
    """``steerable run``: the model provider failed."""
    INCOMPLETE = 5, "an answer cut off or filtered"
    """``steerable run``: the model's answer was cut off or filtered."""
    EMPTY_ANSWER = 6, "empty answers"
    """``steerable run``: the model answered nothing twice."""
    REFUSED = 7, "the model refused"
    """``steerable run``: the model declined the task (its words are in the summary's ``error``)."""
    INTERNAL_ERROR = 70, "internal error"
    """A bug (the traceback is on stderr), or steerable's state could not be written (``error`` says why)."""
    SESSION_BUSY = 75, "the session is open in another process"
    """``steerable run``: another process has the session open (``EX_TEMPFAIL``: try again later)."""
    INTERRUPTED = 130, "Ctrl-C"
    """Ctrl-C (SIGINT)."""
    BROKEN_PIPE = 141, "stdout closed"
    """stdout's reader went away (SIGPIPE)."""


_OTHER_SIGNALS = ((129, "SIGHUP"), (143, "SIGTERM"))
"""The signals that end a command with ``128 + n`` and have no member of their own."""


def exit_codes_help() -> str:
    """Every :class:`ExitCode` with its meaning, one sentence (``steerable run --help``'s epilog)."""
    plain = ", ".join(f"{int(code)} {code.meaning}" for code in ExitCode if code < 128)
    signalled = sorted([(int(code), code.meaning) for code in ExitCode if code >= 128] + list(_OTHER_SIGNALS))
    signals = ", ".join(f"{value} {meaning}" for value, meaning in signalled)
    return f"Exit codes: {plain}; 128 + n on signal n: {signals}."
