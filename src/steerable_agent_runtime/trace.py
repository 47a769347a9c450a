"""``TraceSpan``: the record of one dispatched call.

Spec: ToolCall (new per-call metadata goes through ``TraceSpan.attrs``, never into the
``ToolCall`` envelope).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TraceSink", "TraceSpan"]


@dataclass(slots=True)
class TraceSpan:
    """One tool call's timing and outcome.

    Attributes:
        name: The tool name.
        call_id: The ``ToolCall.id``.
        start_ns: ``time.perf_counter_ns()`` when dispatch began (nanoseconds, monotonic).
        end_ns: ``time.perf_counter_ns()`` when the result was ready.
        success: ``ToolResult.success``.
        attrs: Free-form per-call metadata (mode, approval decision, sandbox...).
    """

    name: str
    call_id: str
    start_ns: int
    end_ns: int
    success: bool
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def duration_ms(self) -> float:
        """Wall time of the call in milliseconds."""
        return (self.end_ns - self.start_ns) / 1e6


TraceSink = Callable[[TraceSpan], None]
"""Receives one span per dispatched call; must not block (it runs on the event loop)."""
