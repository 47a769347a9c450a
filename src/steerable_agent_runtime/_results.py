"""Building :class:`ToolResult` s: the one place where values and exceptions become results.

Spec: ToolResult, Completion semantics. Used by :class:`~steerable_agent_runtime.tools.ToolRouter`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from ._codes import ToolErrorCode
from ._depth import too_deep_retry
from ._problems import invalid_text, validation_problems
from .errors import ToolFailed, ToolRetry, ToolSignal
from .types import ToolCall, ToolResult

__all__ = [
    "failed_result",
    "invalid_arguments_result",
    "normalise",
    "not_a_call",
    "parse_envelope",
    "signal_result",
    "timed_out_result",
]

logger = logging.getLogger(__name__)

_ENVELOPE: Final = TypeAdapter(ToolCall)

_SCALARS: Final = frozenset({str, int, float, bool})


def normalise(value: Any) -> ToolResult:
    kind = type(value)
    if kind in _SCALARS:  # the common case first: no ABC or metaclass isinstance checks
        return ToolResult.success_with({"value": value})
    if kind is dict:
        return ToolResult.success_with(to_jsonable_python(value, fallback=str))
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult.success_with(None)
    if isinstance(value, Mapping):
        data = value if type(value) is dict else dict(value)
        return ToolResult.success_with(to_jsonable_python(data, fallback=str))
    return ToolResult.success_with({"value": to_jsonable_python(value, fallback=str)})


def signal_result(signal: ToolSignal) -> ToolResult:
    return ToolResult(
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
    return ToolResult(
        success=False,
        error=f"{type(exc).__name__}: {exc}",
        data={"code": ToolErrorCode.TOOL_EXCEPTION, "exceptionType": type(exc).__name__},
    )


def timed_out_result(name: str, timeout_ms: int | None) -> ToolResult:
    """The answer to a call of tool ``name`` stopped at its deadline of ``timeout_ms`` milliseconds.

    ``timeout_ms`` is ``None`` where no deadline was set and the executor itself raised
    ``TimeoutError`` (the agent loop); the message and ``data.timeoutMs`` then say ``None``/null.
    """
    return ToolResult.retry(
        f"{name} timed out after {timeout_ms} ms",
        data={"code": ToolErrorCode.TIMEOUT, "timeoutMs": timeout_ms},
    )


def invalid_arguments_result(name: str, exc: ValidationError) -> ToolResult:
    problems = validation_problems(exc)
    return ToolResult.retry(
        invalid_text(name, problems), data={"code": ToolErrorCode.INVALID_ARGUMENTS, "errors": problems}
    )


def not_a_call(value: object) -> ToolResult:
    return ToolResult.retry(
        f"a tool call must be an object {{id, name, arguments}}, got {type(value).__name__}",
        data={"code": ToolErrorCode.INVALID_ENVELOPE},
    )


def parse_envelope(raw: Mapping[str, Any]) -> ToolCall | ToolResult:
    payload = dict(raw)
    arguments = payload.get("arguments")
    if isinstance(arguments, str):
        try:
            payload["arguments"] = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return ToolResult.retry(
                f"arguments is not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object",
                data={"code": ToolErrorCode.INVALID_ENVELOPE},
            )
        except RecursionError:  # deeper than the decoder goes: the depth rule's answer (SAFE-6)
            name = payload.get("name")
            return signal_result(too_deep_retry(name if isinstance(name, str) else "the tool", None))
        except ValueError as exc:  # an over-long integer
            return ToolResult.retry(
                f"arguments is not usable JSON ({exc}); send a JSON object",
                data={"code": ToolErrorCode.INVALID_ENVELOPE},
            )
    try:
        return _ENVELOPE.validate_python(payload)
    except ValidationError as exc:
        problems = validation_problems(exc)
        listed = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        return ToolResult.retry(
            f"Malformed tool call: {listed}. A tool call is {{id, name, arguments}} only.",
            data={"code": ToolErrorCode.INVALID_ENVELOPE, "errors": problems},
        )
