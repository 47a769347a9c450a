"""What ``ToolRouter.dispatch`` and ``ToolRouter.check`` do, loaded at a router's first call.

It needs pydantic (the wire types, validation errors); registering tools and listing them do not,
so ``tools.py`` imports this module at the first dispatch or check instead of at its own import
(start-up: ``steerable mcp`` answers ``tools/list`` before pydantic loads; ``benchmarks/startup.py``).
The router's documentation is on its methods; this is their body.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from ._codes import ToolErrorCode
from ._deadlines import resume
from ._depth import arguments_too_deep, nesting_depth, too_deep_retry
from ._results import (
    failed_result,
    invalid_arguments_result,
    normalise,
    not_a_call,
    parse_envelope,
    signal_result,
    timed_out_result,
)
from .context import CallContext
from .errors import ToolSignal
from .trace import TraceSink, TraceSpan
from .types import ToolCall, ToolResult

if TYPE_CHECKING:
    from .tools import Tool, ToolRouter

__all__ = ["DISPATCHER", "Dispatcher"]


class Dispatcher:
    """Runs calls for any :class:`~steerable_agent_runtime.tools.ToolRouter` (stateless: one serves all)."""

    __slots__ = ()

    async def dispatch(
        self, router: ToolRouter, call: ToolCall | Mapping[str, Any], context: CallContext | None
    ) -> ToolResult:
        """``router.dispatch(call, context)``."""
        started = time.perf_counter_ns()
        if type(call) is not ToolCall:
            parsed = parse_envelope(call) if isinstance(call, Mapping) else not_a_call(call)
            if isinstance(parsed, ToolResult):
                return parsed
            call = parsed
        spec = router._tools.get(call.name)
        given = context  # the context the tool runs with: told when the call is cancelled
        if spec is None:
            result = _unknown(router, call.name)
        else:
            try:
                kwargs = _validated(spec, call.arguments)
            except ValidationError as exc:
                result = invalid_arguments_result(spec.name, exc)
            except ToolSignal as signal:
                result = signal_result(signal)
            else:
                if spec.context_param is not None:
                    given = context if context is not None else CallContext(call)
                    given.seal()  # the tool runs now: its consent decision is fixed
                    kwargs = {**kwargs, spec.context_param: given}
                # The handler's first step runs inline (the await protocol by hand): most tools finish
                # without suspending, and those never need a deadline armed.
                try:
                    steps = spec.handler(**kwargs).__await__()
                    pending = steps.send(None)
                except StopIteration as done:
                    result = _normalised(spec, done.value)
                except (Exception, SystemExit) as exc:  # a tool calling sys.exit() must not end the process
                    result = failed_result(spec.name, exc)
                else:
                    result = await _finish(router, spec, steps, pending, given)
        if router.trace is not None:  # with what the tool noted, in a context made for it too
            _record(router.trace, call, spec, given, started, result)
        return result

    def check(self, router: ToolRouter, call: ToolCall) -> ToolResult | None:
        """``router.check(call)``."""
        spec = router._tools.get(call.name)
        if spec is None:
            return _unknown(router, call.name)
        try:
            _validated(spec, call.arguments)
        except ValidationError as exc:
            return invalid_arguments_result(spec.name, exc)
        except ToolSignal as signal:
            return signal_result(signal)
        return None


DISPATCHER: Final = Dispatcher()
"""The one dispatcher every router uses."""


def _unknown(router: ToolRouter, name: str) -> ToolResult:
    reason = router._unavailable.get(name)
    if reason is not None:
        return ToolResult.retry(
            f"The tool {name!r} is not available here: {reason} Carry on with the offered tools.",
            data={"code": ToolErrorCode.TOOL_UNAVAILABLE, "reason": reason},
        )
    close = router.suggest(name)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return ToolResult.retry(
        f"Unknown tool {name!r}.{hint} Call one of the offered tools.",
        data={"code": ToolErrorCode.UNKNOWN_TOOL, "suggestions": close},
    )


async def _finish(
    router: ToolRouter,
    spec: Tool,
    steps: Generator[Any, Any, Any],
    pending: Any,
    context: CallContext | None,
) -> ToolResult:
    """Drive a handler that suspended, under its deadline (armed only now)."""
    timeout_ms = spec.timeout_ms if spec.timeout_ms is not None else router.default_timeout_ms
    deadlines = router._deadlines
    token = deadlines.arm(timeout_ms / 1000) if timeout_ms else None
    try:
        value = await resume(steps, pending)
    except asyncio.CancelledError:
        if context is not None:  # a sync tool's thread cannot be interrupted: it can stop itself
            context.cancel()
        if token is None or not token.expired:
            raise  # cancelled from outside: not ours to swallow
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
        return timed_out_result(spec.name, timeout_ms)
    except (Exception, SystemExit) as exc:
        return failed_result(spec.name, exc)
    finally:
        deadlines.disarm(token)
    return _normalised(spec, value)


def _validated(spec: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """``spec.validate(arguments)``, refusing arguments nested past ``MAX_ARGUMENT_DEPTH`` first (SAFE-6).

    Raises:
        ToolRetry: Too deep (``arguments_too_deep``), or a validator that still ran out of stack.
        ValidationError: From the tool's validator.
    """
    depth = arguments_too_deep(arguments)
    if depth is not None:
        raise too_deep_retry(spec.name, depth)
    try:
        return spec.validate(arguments)
    except RecursionError:  # a schema that costs many frames a level: still the model's to flatten
        raise too_deep_retry(spec.name, nesting_depth(arguments), for_schema=True) from None


def _record(
    sink: TraceSink,
    call: ToolCall,
    spec: Tool | None,
    context: CallContext | None,
    started: int,
    result: ToolResult,
) -> None:
    """Send one dispatched call's span to ``sink``: the context's ``attrs`` (JSON-ready), the tool's mode."""
    attrs: dict[str, Any] = context.trace_attrs(("mode", "approved")) if context is not None else {}
    if spec is not None:
        attrs["mode"] = spec.mode  # a StrEnum: equal to its string; wins over a tool's own key
    sink(TraceSpan(call.name, call.id, started, time.perf_counter_ns(), result.success, attrs))


def _normalised(spec: Tool, value: Any) -> ToolResult:
    try:
        return normalise(value)
    except Exception as exc:  # a return value with no JSON form (e.g. a lone surrogate in a key)
        return failed_result(spec.name, exc)
