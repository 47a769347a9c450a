"""The older executor shape, ``async def ex(call) -> ToolResult``, adapted once where one is taken.

An executor now takes the call's :class:`~steerable_agent_runtime.context.CallContext` as an
optional second argument (:class:`~steerable_agent_runtime.context.ToolExecutor`). One written to
the one-argument shape still runs calls: :func:`taking_context` reads its signature once, when the
``AgentLoop`` or ``ApprovalGate`` is built (never per call), and wraps it so the context is
dropped. Such an executor does not see the call's context (docs/agent-loop.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import cast

from .context import CallContext, ToolExecutor
from .types import ToolCall, ToolResult

__all__ = ["AnyExecutor", "taking_context"]

AnyExecutor = ToolExecutor | Callable[[ToolCall], Awaitable[ToolResult]]
"""An executor of either shape: ``(call, context=None)`` or the older ``(call)``."""


def taking_context(executor: AnyExecutor) -> ToolExecutor:
    """Return ``executor`` when it accepts ``(call, context)``, else a wrapper that drops the context.

    A callable whose signature cannot be read (some builtins) is taken as it is.
    """
    try:
        signature = inspect.signature(executor)
    except (TypeError, ValueError):
        return cast(ToolExecutor, executor)  # nothing to read: trust the declared type
    try:
        signature.bind(None, None)
    except TypeError:
        return _WithoutContext(executor)  # it takes the call alone
    return cast(ToolExecutor, executor)  # it takes the context too


class _WithoutContext:
    """A one-argument executor seen as a :class:`ToolExecutor` (it never sees the context)."""

    __slots__ = ("inner",)

    def __init__(self, inner: Callable[[ToolCall], Awaitable[ToolResult]]) -> None:
        self.inner = inner

    def __call__(self, call: ToolCall, context: CallContext | None = None, /) -> Awaitable[ToolResult]:
        return self.inner(call)
