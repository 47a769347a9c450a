"""The ``steerable`` command's process exit codes, one table for every subcommand.

``steerable run``'s per-outcome codes are documented in docs/headless.md (Exit codes); the other
subcommands use the first three and the signal codes. 70 is ``EX_SOFTWARE`` from BSD
``sysexits.h``, 75 its ``EX_TEMPFAIL``; 130 and 141 are the shell's ``128 + n`` for SIGINT and SIGPIPE.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """A process exit status; an ``int``, so ``sys.exit(ExitCode.USAGE)`` exits 2."""

    OK = 0
    """The command (or run) succeeded; ``steerable call``: the tool's result succeeded."""
    FAILED = 1
    """``steerable call``: the tool's result failed; ``steerable run``: a failed terminal result."""
    USAGE = 2
    """Bad arguments or configuration (the message names the flag or variable); doctor: errors."""
    MAX_ROUNDS = 3
    """``steerable run`` reached its round limit."""
    PROVIDER_ERROR = 4
    """``steerable run``: the model provider failed."""
    INCOMPLETE = 5
    """``steerable run``: the model's answer was cut off or filtered."""
    EMPTY_ANSWER = 6
    """``steerable run``: the model answered nothing twice."""
    REFUSED = 7
    """``steerable run``: the model declined the task (its words are in the summary's ``error``)."""
    INTERNAL_ERROR = 70
    """A bug, or the durable record could not be written (the traceback is on stderr)."""
    SESSION_BUSY = 75
    """``steerable run``: another process has the session open (``EX_TEMPFAIL``: try again later)."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT)."""
    BROKEN_PIPE = 141
    """stdout's reader went away (SIGPIPE)."""
