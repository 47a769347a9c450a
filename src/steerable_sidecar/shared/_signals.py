"""SIGTERM, SIGHUP and SIGINT end a steerable command cleanly, never as a sudden death (REC-4, SAFE-2).

Python's default for SIGTERM and SIGHUP is to die at once, and for SIGINT a ``KeyboardInterrupt``
traceback. A ``bash`` command running then is killed with steerable (``--die-with-parent``, the
launcher's parent-death signal), but the call in flight goes unanswered, the durable record has
no end, the run's cgroups stay, and what the command changed in the workspace stays until the
next steerable start recovers it (the host's next ``git status`` may come first: the official MCP
client ends its server with SIGTERM two seconds after closing its stdin).

:func:`run_until_signalled` runs a command's main coroutine with the three signals handled. A
command that takes a :class:`Shutdown` (``sidecar``, ``mcp``, ``acp``, ``session``, ``call``)
is told and drains: it stops its calls in flight, answers each as interrupted, and the record of
a chat or a turn gets its end. It has :data:`SHUTDOWN_GRACE_S` for that; then, or at a second
signal, whatever still runs is cancelled. Every task still running is cancelled and awaited (a
tool call's sandbox is killed and its protected paths put back), the run cgroups this process
made are removed, and the process exits with ``128 + n``, the status the signal would have given
(143 SIGTERM, 129 SIGHUP, 130 SIGINT), without a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, Final, NoReturn, TypeVar

__all__ = [
    "INTERRUPTED_CODE",
    "INTERRUPT_DRAIN_S",
    "SHUTDOWN_GRACE_S",
    "SIGNALS",
    "Shutdown",
    "remove_run_cgroups",
    "run_until_signalled",
]

SIGNALS: Final = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
"""The signals that end a command cleanly."""

SHUTDOWN_GRACE_S: Final = 5.0
"""Seconds a command has after the signal to answer, record and clean up before it is cancelled."""

INTERRUPT_DRAIN_S: Final = SHUTDOWN_GRACE_S - 1.0
"""Of the grace, the seconds the calls in flight get to wind down and be answered (then closing)."""

_CANCEL_WAIT_S: Final = 2.0
"""Seconds the tasks still running after the grace get to wind down once cancelled."""

INTERRUPTED_CODE: Final = "interrupted"
"""``data.code`` of an answer to a call a signal interrupted (``ToolErrorCode.INTERRUPTED``)."""

T = TypeVar("T")


class Shutdown:
    """The process was asked to end: which signal, and an event a command waits on.

    Passed to the command's main coroutine by :func:`run_until_signalled` (or made by a test).
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        """The first signal received (``None`` while none was)."""
        self._event = asyncio.Event()
        self._watchers = 0

    @property
    def requested(self) -> bool:
        """Whether a signal asked the process to end."""
        return self.signum is not None

    @property
    def watched(self) -> bool:
        """Whether a task is waiting in :meth:`wait` (the command is ready to drain)."""
        return self._watchers > 0

    def request(self, signum: int) -> None:
        """Record ``signum`` (the first one counts) and wake every waiter."""
        if self.signum is None:
            self.signum = signum
        self._event.set()

    async def wait(self) -> int:
        """Return the signal once one has come (meanwhile the shutdown is :attr:`watched`)."""
        self._watchers += 1
        try:
            await self._event.wait()
        finally:
            self._watchers -= 1
        assert self.signum is not None
        return self.signum

    @property
    def name(self) -> str:
        """The signal's name (``SIGTERM``), or ``""`` before one came."""
        if self.signum is None:
            return ""
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"

    @property
    def reason(self) -> str:
        """Why calls stop: ``steerable is shutting down (SIGTERM)``."""
        return f"steerable is shutting down ({self.name or 'signal'})"

    def interrupted_message(self) -> str:
        """The text a call in flight is answered (or recorded) with."""
        return (
            f"interrupted: {self.reason} and stopped this call before it finished; check its effect "
            "before retrying it"
        )

    def interrupted_data(self) -> dict[str, Any]:
        """The ``data`` of that answer: ``{"type", "code": "interrupted", "signal"}``."""
        return {"type": "Interrupted", "code": INTERRUPTED_CODE, "signal": self.name}


def run_until_signalled(
    main: Coroutine[Any, Any, T] | Callable[[Shutdown], Coroutine[Any, Any, T]],
    *,
    grace_s: float = SHUTDOWN_GRACE_S,
) -> T:
    """``asyncio.run(main)``, with SIGTERM, SIGHUP and SIGINT ending it cleanly.

    Args:
        main: The command's coroutine, cancelled at the first signal; or a function taking a
            :class:`Shutdown` and returning it: while a task of it waits on the shutdown
            (:attr:`Shutdown.watched`), a signal is left to it, and it gets ``grace_s`` seconds to
            end by itself (then, or at a second signal, it is cancelled); otherwise it is
            cancelled at once.
        grace_s: The drain time of a ``main`` that takes a :class:`Shutdown`.

    Returns:
        What ``main`` returns when no signal came.

    Raises:
        Whatever ``main`` raises. After a signal this does not return: once the tasks are done, the
        run cgroups are removed and the process exits with ``128 + signal`` (without waiting for
        threads blocked on a read of stdin, which a signal leaves no other way out of).
    """
    loop = asyncio.new_event_loop()
    try:
        shutdown = Shutdown()
        coroutine = main(shutdown) if callable(main) else main
        task = loop.create_task(coroutine)

        def stop(signum: int) -> None:
            first = not shutdown.requested
            shutdown.request(signum)
            if first and shutdown.watched:  # the command drains: the grace bounds it
                loop.call_later(grace_s, task.cancel)
            else:
                task.cancel()

        installed = []
        for signum in SIGNALS:
            try:
                loop.add_signal_handler(signum, stop, signum)
                installed.append(signum)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals
                pass
        try:
            result = loop.run_until_complete(task)
        except asyncio.CancelledError:
            if not shutdown.requested:
                raise
        except Exception as exc:
            if not shutdown.requested:
                raise
            logger = logging.getLogger(__name__)  # one line: no traceback on the way out
            logger.warning("the command failed while shutting down: %s: %s", type(exc).__name__, exc)
            logger.debug("the failure while shutting down", exc_info=exc)
        finally:
            try:
                _cancel_the_rest(loop)
            finally:
                for signum in installed:
                    loop.remove_signal_handler(signum)
                if shutdown.signum is not None:  # leave without waiting for threads blocked on stdin
                    remove_run_cgroups()
                    _exit(128 + shutdown.signum)
        loop.run_until_complete(loop.shutdown_default_executor())
        return result
    finally:
        loop.close()


def _cancel_the_rest(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel every task still pending and wait (a bounded time) for their ``finally`` blocks."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.wait(pending, timeout=_CANCEL_WAIT_S))
    for task in pending:  # read every outcome: nothing is logged as "never retrieved"
        if task.done() and not task.cancelled():
            task.exception()
    loop.run_until_complete(loop.shutdown_asyncgens())


def remove_run_cgroups() -> None:
    """Remove the run cgroups this process made, killing what is left in them (when any were made).

    They are removed at a normal exit too (an ``atexit`` hook of the sandbox); a signal's exit
    skips ``atexit``, so it calls this first.
    """
    if "steerable_agent_runtime.sandbox._cgroup" not in sys.modules:  # no command ever ran here
        return
    from steerable_agent_runtime.sandbox import remove_run_cgroups as remove

    try:
        remove()
    except Exception:  # never in the way of the exit
        logging.getLogger(__name__).exception("removing the run cgroups failed")


def _exit(status: int) -> NoReturn:
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
