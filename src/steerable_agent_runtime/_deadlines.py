"""Per-call handler timeouts that cost almost nothing when calls finish in time.

A handler that completes without ever suspending cannot overrun a deadline, so the router runs
its first step directly and arms a deadline only if it suspends; :func:`resume` then drives the
rest exactly as ``await`` would (the ``yield from`` protocol).

``asyncio.timeout`` arms and cancels a timer handle on every call (about 3.5 us each). A
:class:`Deadlines` keeps one timer per event loop, set to the earliest pending deadline; arming a
call is a dict insert and disarming a dict delete. When the timer fires, every call past its
deadline has its task cancelled, and the dispatcher turns that cancellation into a timeout result
(calls in the same task nest correctly: each checks its own token).
"""

from __future__ import annotations

import asyncio
import time
import types
from collections.abc import Generator
from typing import Any

__all__ = ["Deadlines", "resume"]

_current_task = asyncio.current_task


class _Token:
    __slots__ = ("deadline", "expired", "task")

    def __init__(self, task: asyncio.Task[object], deadline: float) -> None:
        self.task = task
        self.deadline = deadline
        self.expired = False


class Deadlines:
    """Timeouts for the calls of one router (safe across event loops: one timer per loop)."""

    def __init__(self) -> None:
        self._pending: dict[_Token, None] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def arm(self, timeout_s: float) -> _Token | None:
        """Start a deadline ``timeout_s`` seconds from now for the current task.

        Returns:
            A token for :meth:`disarm` and :meth:`expired`, or ``None`` outside a task.
        """
        loop = asyncio.get_running_loop()
        task = _current_task(loop)
        if task is None:
            return None
        token = _Token(task, time.monotonic() + timeout_s)
        self._pending[token] = None
        if token.deadline < self._timer_at or self._timer_loop is not loop:
            self._schedule(loop, token.deadline)
        return token

    def disarm(self, token: _Token | None) -> None:
        """Forget a finished call's deadline."""
        if token is not None:
            self._pending.pop(token, None)

    def _schedule(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_loop = loop
        self._timer_at = when
        # loop.time() and time.monotonic() share a clock on every asyncio loop in the stdlib
        self._timer = loop.call_at(loop.time() + max(0.0, when - time.monotonic()), self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = float("inf")
        now = time.monotonic()
        upcoming = float("inf")
        for token in list(self._pending):
            if token.task.done():
                self._pending.pop(token, None)
            elif token.deadline <= now:
                self._pending.pop(token, None)
                token.expired = True
                token.task.cancel()
            else:
                upcoming = min(upcoming, token.deadline)
        if upcoming != float("inf") and self._timer_loop is not None and not self._timer_loop.is_closed():
            self._schedule(self._timer_loop, upcoming)


@types.coroutine
def resume(iterator: Generator[Any, Any, Any], pending: Any) -> Generator[Any, Any, Any]:
    """Continue an awaitable suspended after its first ``send(None)`` until it returns; ``await`` this.

    Values sent and exceptions thrown in by the task (including cancellation) are passed through.
    """
    value = pending
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            iterator.close()
            raise
        except BaseException as exc:
            try:
                value = iterator.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                value = iterator.send(sent)
            except StopIteration as stop:
                return stop.value
