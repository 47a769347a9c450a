"""Building results: the one place where values and exceptions become results.

Spec: ToolResult, Completion semantics. Used by :class:`~steerable_agent_runtime.tools.ToolRouter`.
A call that succeeds with plain JSON (most do) becomes a :class:`PlainSuccess`, which needs no
pydantic; the wire types are imported when a result must be a :class:`ToolResult` (a failure, or
``ToolRouter.dispatch``'s answer), so ``ToolRouter.dispatch_wire`` of a plain call never loads
them (start-up of ``steerable call``: ``benchmarks/startup.py``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Final, TypeGuard

from ._codes import ToolErrorCode
from ._depth import too_deep_retry
from ._plain_json import NotPlain, plain_copy, wire_safe
from ._problems import invalid_text, validation_problems
from .errors import ToolFailed, ToolRetry, ToolSignal

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError

    from .types import ToolCall, ToolResult

__all__ = [
    "PlainSuccess",
    "failed_result",
    "invalid_arguments_result",
    "is_validation_error",
    "normalise",
    "not_a_call",
    "parse_envelope",
    "plain_envelope",
    "signal_result",
    "timed_out_result",
]

logger = logging.getLogger(__name__)

_SCALARS: Final = frozenset({str, int, float, bool})


class PlainSuccess:
    """``ToolResult(success=True, data=data)`` before it is one: what a plain successful call gives.

    Attributes:
        data: The result's ``data`` (``None``: no data), plain JSON (:func:`~._plain_json.plain_copy`).
    """

    __slots__ = ("data",)

    success: Final = True

    def __init__(self, data: dict[str, Any] | None) -> None:
        self.data = data

    def result(self) -> ToolResult:
        """The :class:`ToolResult` this is (``ToolResult.success_with(data)``)."""
        return _result_type().success_with(self.data)

    def to_wire(self) -> dict[str, Any]:
        """What ``self.result().to_wire()`` returns, without building the result."""
        if self.data is None:
            return {"success": True}
        return {"success": True, "data": wire_safe(self.data, nulls=True)}


@cache
def _result_type() -> type[ToolResult]:
    """``ToolResult``, imported at the first result that must be one (the dispatch path: cached)."""
    from .types import ToolResult

    return ToolResult


def normalise(value: Any) -> ToolResult | PlainSuccess:
    kind = type(value)
    if kind in _SCALARS:  # the common case first: no ABC or metaclass isinstance checks
        return PlainSuccess({"value": value})
    if kind is dict:
        return _success(*_json_ready(value))
    if value is None:
        return PlainSuccess(None)
    if kind is not list and kind is not tuple:
        if isinstance(value, _result_type()):  # before Mapping: a result is never data
            return value
        if isinstance(value, Mapping):
            return _success(*_json_ready(dict(value)))
    ready, plain = _json_ready(value)  # the value itself, then wrapped: its nesting limit is its own
    return _success({"value": ready}, plain)


def _json_ready(value: Any) -> tuple[Any, bool]:
    """``to_jsonable_python(value, fallback=str)``, and whether it was plain JSON (no pydantic used)."""
    try:
        return plain_copy(value), True
    except NotPlain:
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(value, fallback=str), False


def _success(data: dict[str, Any], plain: bool) -> ToolResult | PlainSuccess:
    """A success with JSON-ready ``data``: a :class:`PlainSuccess` when it was plain JSON."""
    return PlainSuccess(data) if plain else _result_type().success_with(data)


def is_validation_error(exc: BaseException) -> TypeGuard[ValidationError]:
    """Tell whether ``exc`` is pydantic's ``ValidationError`` (an argument validator's answer)."""
    from pydantic import ValidationError

    return isinstance(exc, ValidationError)


def signal_result(signal: ToolSignal) -> ToolResult:
    return _result_type()(
        success=False,
        needs_followup=True if isinstance(signal, ToolRetry) else None,
        terminal=True if isinstance(signal, ToolFailed) else None,
        error=signal.error,
        message=signal.message,
        next_action=signal.next_action,
        data=signal.data,
    )


def failed_result(name: str, exc: Exception | SystemExit) -> ToolResult:
    """Turn a handler's exception into its result: signals as they say, anything else as a tool bug."""
    if isinstance(exc, ToolSignal):
        return signal_result(exc)
    logger.error("tool %s raised", name, exc_info=exc)
    return _result_type()(
        success=False,
        error=f"{type(exc).__name__}: {exc}",
        data={"code": ToolErrorCode.TOOL_EXCEPTION, "exceptionType": type(exc).__name__},
    )


def timed_out_result(name: str, timeout_ms: int | None) -> ToolResult:
    """The answer to a call of tool ``name`` stopped at its deadline of ``timeout_ms`` milliseconds.

    ``timeout_ms`` is ``None`` where no deadline was set and the executor itself raised
    ``TimeoutError`` (the agent loop); the message and ``data.timeoutMs`` then say ``None``/null.
    """
    return _result_type().retry(
        f"{name} timed out after {timeout_ms} ms",
        data={"code": ToolErrorCode.TIMEOUT, "timeoutMs": timeout_ms},
    )


def invalid_arguments_result(name: str, exc: ValidationError) -> ToolResult:
    problems = validation_problems(exc)
    return _result_type().retry(
        invalid_text(name, problems), data={"code": ToolErrorCode.INVALID_ARGUMENTS, "errors": problems}
    )


def not_a_call(value: object) -> ToolResult:
    return _result_type().retry(
        f"a tool call must be an object {{id, name, arguments}}, got {type(value).__name__}",
        data={"code": ToolErrorCode.INVALID_ENVELOPE},
    )


def plain_envelope(raw: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    """``(id, name, arguments)`` of a call envelope that is plainly valid, else ``None``.

    Plainly valid: exactly the three keys, two strings and a dict keyed by strings (what
    :func:`parse_envelope` accepts unchanged); the arguments are a shallow copy, as validation
    makes. Anything else is :func:`parse_envelope`'s.
    """
    ident, name, arguments = raw.get("id"), raw.get("name"), raw.get("arguments")
    if (
        len(raw) != 3
        or type(ident) is not str
        or type(name) is not str
        or type(arguments) is not dict
        or not all(type(key) is str for key in arguments)
    ):
        return None
    return ident, name, dict(arguments)  # a copy, as validation makes: the caller's is never touched


@cache
def _envelope() -> TypeAdapter[ToolCall]:
    from pydantic import TypeAdapter

    from .types import ToolCall

    return TypeAdapter(ToolCall)


def parse_envelope(raw: Mapping[str, Any]) -> ToolCall | ToolResult:
    result_type = _result_type()
    payload = dict(raw)
    arguments = payload.get("arguments")
    if isinstance(arguments, str):
        try:
            payload["arguments"] = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return result_type.retry(
                f"arguments is not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object",
                data={"code": ToolErrorCode.INVALID_ENVELOPE},
            )
        except RecursionError:  # deeper than the decoder goes: the depth rule's answer (SAFE-6)
            name = payload.get("name")
            return signal_result(too_deep_retry(name if isinstance(name, str) else "the tool", None))
        except ValueError as exc:  # an over-long integer
            return result_type.retry(
                f"arguments is not usable JSON ({exc}); send a JSON object",
                data={"code": ToolErrorCode.INVALID_ENVELOPE},
            )
    from pydantic import ValidationError

    try:
        return _envelope().validate_python(payload)
    except ValidationError as exc:
        problems = validation_problems(exc)
        listed = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        return result_type.retry(
            f"Malformed tool call: {listed}. A tool call is {{id, name, arguments}} only.",
            data={"code": ToolErrorCode.INVALID_ENVELOPE, "errors": problems},
        )
