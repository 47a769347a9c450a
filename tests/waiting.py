"""Waiting in tests on what happens, not for a fixed time (docs/development.md, "Timing in tests").

:func:`wait_until` and :func:`eventually` poll a condition until it holds, failing with what was
awaited after ``timeout_s`` (a bound for a hung test, far past the usual wait, never a speed goal:
those are in ``benchmarks/``). :func:`grace` is the one fixed wait left: the time a wrong
behaviour is given to show before the test checks it did not happen (nothing can be awaited for
what must not come).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["eventually", "grace", "wait_until"]

WAIT_S = 30.0
"""How long a condition is awaited by default: a hung test's bound, not a speed goal."""


def wait_until(condition: Callable[[], object], *, what: str, timeout_s: float = WAIT_S) -> None:
    """Poll ``condition`` (every 10 ms) until it is true; ``AssertionError`` naming ``what`` past ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
        time.sleep(0.01)


async def eventually(condition: Callable[[], object], *, what: str, timeout_s: float = WAIT_S) -> None:
    """:func:`wait_until` on the event loop: the loop runs on while ``condition`` is polled."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
        await asyncio.sleep(0.01)


def grace(seconds: float, *, why: str) -> float:
    """The time a wrong behaviour is given to show (``why`` says which), in seconds; sleep it yourself.

    Returns ``seconds``, for ``time.sleep(grace(...))`` or ``await asyncio.sleep(grace(...))``: the
    one kind of fixed wait a test keeps, named so a reader knows nothing is being waited for.
    """
    assert why, "say what the grace period gives a wrong behaviour time to do"
    return seconds
