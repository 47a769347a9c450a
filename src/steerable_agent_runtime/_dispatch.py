"""What ``ToolRouter.dispatch``, ``dispatch_wire`` and ``check`` do, loaded at a router's first call.

Registering tools and listing them need none of it (start-up: ``steerable mcp`` answers
``tools/list`` at once). A call that succeeds with plain JSON needs no pydantic either: it stays a
:class:`~._results.PlainSuccess` until ``dispatch`` makes it a ``ToolResult``, and
``dispatch_wire`` writes it as is (``steerable call``; ``benchmarks/startup.py``). The router's
documentation is on its methods; this is their body.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Final, cast

from ._codes import ToolErrorCode
from ._deadlines import resume
from ._depth import arguments_too_deep, nesting_depth, too_deep_retry
from ._results import (
    PlainSuccess,
    failed_result,
    invalid_arguments_result,
    is_validation_error,
    normalise,
    not_a_call,
    parse_envelope,
    plain_envelope,
    signal_result,
    timed_out_result,
)
from .context import CallContext
from .errors import ToolSignal
from .trace import TraceSink, TraceSpan

if TYPE_CHECKING:
    from .tools import Tool, ToolRouter
    from .types import ToolCall, ToolResult

__all__ = ["DISPATCHER", "Dispatcher"]


class Dispatcher:
    """Runs calls for any :class:`~steerable_agent_runtime.tools.ToolRouter` (stateless: one serves all)."""

    __slots__ = ()

    @staticmethod
    def result_of(done: ToolResult | PlainSuccess) -> ToolResult:
        """``router.dispatch``'s answer for :meth:`run`'s: a plain success made a ``ToolResult``."""
        return done.result() if isinstance(done, PlainSuccess) else done

    async def run(
        self, router: ToolRouter, call: ToolCall | Mapping[str, Any], context: CallContext | None
    ) -> ToolResult | PlainSuccess:
        """Run ``call`` on ``router`` (``router.dispatch``'s body, awaited by it with no layer between).

        Returns:
            The result, or a :class:`PlainSuccess` for a success with plain JSON (``dispatch`` makes
            it a ``ToolResult``: :meth:`result_of`; ``dispatch_wire`` writes it as it is).
        """
        started = time.perf_counter_ns()
        opened = _opened(call)
        if type(opened) is not tuple:
            return cast("ToolResult", opened)
        ident, name, arguments, _ = opened
        spec = router._tools.get(name)
        given = context  # the context the tool runs with: told when the call is cancelled
        if spec is None:
            result: ToolResult | PlainSuccess = _unknown(router, name)
        else:
            try:
                kwargs = _validated(spec, arguments)
            except ToolSignal as signal:
                result = signal_result(signal)
            except ValueError as exc:
                if not is_validation_error(exc):
                    raise
                result = invalid_arguments_result(spec.name, exc)
            else:
                if spec.context_param is not None:
                    given = given if given is not None else CallContext(_call_of(opened))
                    given.seal()  # the tool runs now: its consent decision is fixed
                    kwargs = {**kwargs, spec.context_param: given}
                finished, steps, pending = _first_step(spec, kwargs)
                if finished is None:
                    assert steps is not None
                    finished = await _finish(router, spec, steps, pending, given)
                result = finished
        if router.trace is not None:  # with what the tool noted, in a context made for it too
            _record(router.trace, name, ident, spec, given, started, result.success)
        return result

    def check(self, router: ToolRouter, call: ToolCall) -> ToolResult | None:
        """``router.check(call)``."""
        spec = router._tools.get(call.name)
        if spec is None:
            return _unknown(router, call.name)
        try:
            _validated(spec, call.arguments)
        except ToolSignal as signal:
            return signal_result(signal)
        except ValueError as exc:
            if not is_validation_error(exc):
                raise
            return invalid_arguments_result(spec.name, exc)
        return None


DISPATCHER: Final = Dispatcher()
"""The one dispatcher every router uses."""


_Envelope = tuple[str, str, dict[str, Any], "ToolCall | None"]
"""A call's id, name and arguments, and its ``ToolCall`` when it came as one."""


def _opened(call: ToolCall | Mapping[str, Any] | object) -> _Envelope | ToolResult:
    """The call to run, or the failed result of an envelope that is not one (spec: ToolCall)."""
    if type(call) is dict:  # a wire dict: plainly valid ones need no pydantic
        plain = plain_envelope(call)
        if plain is not None:
            return (*plain, None)
    call_type = _call_type()
    if isinstance(call, call_type) and type(call) is call_type:  # a subclass is no envelope
        return (call.id, call.name, call.arguments, call)
    parsed = parse_envelope(call) if isinstance(call, Mapping) else not_a_call(call)
    if isinstance(parsed, call_type):
        return (parsed.id, parsed.name, parsed.arguments, parsed)
    return cast("ToolResult", parsed)


def _call_of(opened: _Envelope) -> ToolCall:
    """The ``ToolCall`` (built from a plainly valid envelope for a tool that takes its context)."""
    ident, name, arguments, call = opened
    if call is not None:
        return call
    return _call_type().model_construct(id=ident, name=name, arguments=arguments)


@cache
def _call_type() -> type[ToolCall]:
    """``ToolCall``, imported at the first call that is not a plain wire dict (cached)."""
    from .types import ToolCall

    return ToolCall


def _first_step(
    spec: Tool, kwargs: dict[str, Any]
) -> tuple[ToolResult | PlainSuccess | None, Generator[Any, Any, Any] | None, Any]:
    """Start the handler: its result when it finished without suspending, else its steps to drive.

    The handler's first step runs inline (the await protocol by hand): most tools finish without
    suspending, and those never need a deadline armed.
    """
    try:
        steps = spec.handler(**kwargs).__await__()
        pending = steps.send(None)
    except StopIteration as done:
        return _normalised(spec, done.value), None, None
    except (Exception, SystemExit) as exc:  # a tool calling sys.exit() must not end the process
        return failed_result(spec.name, exc), None, None
    return None, steps, pending


def _unknown(router: ToolRouter, name: str) -> ToolResult:
    from .types import ToolResult

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
) -> ToolResult | PlainSuccess:
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
    name: str,
    ident: str,
    spec: Tool | None,
    context: CallContext | None,
    started: int,
    success: bool,
) -> None:
    """Send one dispatched call's span to ``sink``: the context's ``attrs`` (JSON-ready), the tool's mode."""
    attrs: dict[str, Any] = context.trace_attrs(("mode", "approved")) if context is not None else {}
    if spec is not None:
        attrs["mode"] = spec.mode  # a StrEnum: equal to its string; wins over a tool's own key
    sink(TraceSpan(name, ident, started, time.perf_counter_ns(), success, attrs))


def _normalised(spec: Tool, value: Any) -> ToolResult | PlainSuccess:
    try:
        return normalise(value)
    except Exception as exc:  # a return value with no JSON form (e.g. a lone surrogate in a key)
        return failed_result(spec.name, exc)
