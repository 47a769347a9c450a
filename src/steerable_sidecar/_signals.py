"""SIGTERM and SIGHUP end a steerable command as a cancellation, not a sudden death (SAFE-2).

Python's default for both signals is to die at once. A ``bash`` command running then is killed
with steerable (``--die-with-parent``, the launcher's parent-death signal), but what it changed in
the workspace stays until the next steerable start recovers it, and the host's next ``git status``
may come first: the official MCP client ends its server with SIGTERM two seconds after closing its
stdin. :func:`run_until_signalled` runs a command's main coroutine with both signals cancelling it;
then every task still running is cancelled and awaited (each tool call runs in a task: its sandbox
is killed and its protected paths put back), and the process exits with ``128 + n``, the status
the signal would have given.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from typing import Any, Final, NoReturn, TypeVar

__all__ = ["SIGNALS", "run_until_signalled"]

SIGNALS: Final = (signal.SIGTERM, signal.SIGHUP)
"""The signals that cancel the command (``SIGINT`` keeps Python's ``KeyboardInterrupt``)."""

T = TypeVar("T")


def run_until_signalled(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, with SIGTERM and SIGHUP cancelling it and every task it left.

    Returns:
        What ``main`` returns when no signal came.

    Raises:
        Whatever ``main`` raises. After a signal this does not return: once the tasks are done, the
        process exits with ``128 + signal`` (without waiting for threads blocked on a read of stdin,
        which a signal leaves no other way out of).
    """
    received: list[int] = []
    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(main)

        def stop(signum: int) -> None:
            received.append(signum)
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
            if not received:
                raise
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)
            _cancel_the_rest(loop)
            if received:  # every task is done: leave without waiting for threads blocked on stdin
                _exit(128 + received[0])
        loop.run_until_complete(loop.shutdown_default_executor())
        return result
    finally:
        loop.close()


def _cancel_the_rest(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel every task still pending and wait for them (their ``finally`` blocks run)."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())


def _exit(status: int) -> NoReturn:
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
