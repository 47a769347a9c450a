"""``CallContext``: what dispatch tells a tool about the call it runs, and the executor protocol.

The one object per call that passes down the executor chain (``AgentLoop`` -> ``ApprovalGate`` ->
``ToolRouter.dispatch``) and into a tool that asks for it, the way pydantic-ai's ``RunContext`` and
the MCP SDK's ``Context`` are handed to tools: it carries the call, the executor chain running it,
cancellation and an output sink. A tool opts in with a parameter annotated
``CallContext``: dispatch passes the context there, and the parameter is not part of the tool's
JSON Schema (the model never sees it, and cannot send it)::

    @tool(router=router)
    async def build(target: str, context: CallContext) -> str:
        await context.send_output(f"building {target}")
        return "built"

Spec: ToolCall ("new per-call metadata should go through the harness's TraceSpan.attrs, not into
ToolCall"): :attr:`CallContext.attrs` lands in the call's ``TraceSpan.attrs``.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .types import ToolCall, ToolResult

__all__ = ["CallContext", "OutputSink", "ToolExecutor"]

logger = logging.getLogger(__name__)


class ToolExecutor(Protocol):
    """Runs one call; answers with a result (a failed one for bad input), never raises for it.

    ``context`` is the call's :class:`CallContext` (``None``: the innermost dispatch makes one);
    a wrapper passes it on to the executor it wraps.
    """

    def __call__(self, call: ToolCall, context: CallContext | None = None, /) -> Awaitable[ToolResult]:
        """Run ``call`` and return its result."""
        ...


OutputSink = Callable[[str], Awaitable[None] | None]
"""Receives one chunk of a running call's output (text, as the tool produced it); sync or async."""


@dataclass(slots=True, eq=False)
class CallContext:
    """One tool call as it runs: the call, the executor chain running it, where its output goes.

    Attributes:
        call: The call being run (its id included).
        executor: The live executor chain running this call (approval, host forwarding), set by
            the agent loop; a tool that makes calls of its own (``run_code``) sends them through it,
            so they are approved and forwarded exactly like the model's own calls. ``None`` when no
            agent loop runs the call (a host's ``tool.invoke``, ``steerable mcp``/``call``/
            ``session``): such a tool uses its own router and fails closed on calls that need
            consent.
        output: Where :meth:`send_output` chunks go (the MCP server's progress notifications), or
            ``None``: nobody watches.
        attrs: Per-call metadata for the call's ``TraceSpan.attrs``: ``approved`` (set by the
            :class:`~steerable_agent_runtime.executor.ApprovalGate` when a consent prompt ran),
            ``context`` (the sidecar's ``tool.invoke`` context).
    """

    call: ToolCall
    executor: ToolExecutor | None = None
    output: OutputSink | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    _stopped: threading.Event = field(default_factory=threading.Event, init=False, repr=False)

    @property
    def cancelled(self) -> bool:
        """``True`` once the call was cancelled or ran past its timeout (thread-safe).

        An async tool gets ``CancelledError`` at its next ``await`` anyway; a sync tool runs in a
        worker thread that nothing can interrupt, and checks this to stop early.
        """
        return self._stopped.is_set()

    def cancel(self) -> None:
        """Mark the call cancelled (dispatch does, when the call's task is cancelled or times out)."""
        self._stopped.set()

    async def send_output(self, text: str) -> None:
        """Stream one chunk of output while the call runs; nothing happens without a sink.

        The chunk is not part of the result: return what the model should see. Best effort: a
        sink that fails (a client gone) is logged, never raised into the tool.
        """
        sink = self.output
        if sink is not None:
            try:
                await _settled(sink(text))
            except Exception:
                logger.exception("the output sink of %s failed", self.call.name)


async def _settled(value: object) -> None:
    """Await ``value`` when a sink answered with an awaitable (sinks may be sync or async)."""
    if inspect.isawaitable(value):
        await value
