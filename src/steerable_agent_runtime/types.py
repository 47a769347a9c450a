"""The two wire envelopes, ``ToolCall`` and ``ToolResult``, and completion semantics.

Spec: ToolCall, ToolResult, Completion semantics. JSON on the wire is camelCase
(``needsFollowup``, ``nextAction``); Python attributes are snake_case. Serialise with
:func:`ToolResult.to_wire` (or ``model_dump(by_alias=True, exclude_none=True)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import to_jsonable_python

from ._call_id import new_call_id
from ._codes import ToolErrorCode
from ._plain_json import wire_safe

__all__ = ["ToolCall", "ToolResult", "is_terminal_result", "new_call_id"]
# BaseModel's slot descriptors, for building results without validation (see ToolResult.success_with)
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


class _WireModel(BaseModel):
    # defer_build: the validator and serializer are built at the first use, so importing the types
    # (and booting the tools: tools/list, session/new) builds none, nor loads pydantic's plugins
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, defer_build=True
    )


class ToolCall(_WireModel):
    """What the assistant asks to run. Extra fields are rejected (spec: ToolCall).

    Attributes:
        id: Unique within a chat; runtime-made ids come from :func:`new_call_id` (cuid2).
        name: A tool name registered with the runtime.
        arguments: The model's JSON arguments, validated later by the tool's schema.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    arguments: dict[str, Any]


class ToolResult(_WireModel):
    """What the runtime reports back. Extra fields are kept for forward compatibility.

    Attributes:
        success: Hard distinction; ``False`` flips the call's status to error.
        terminal: Explicitly marks the result as ending the run.
        needs_followup: Wire ``needsFollowup``; re-prompt the model even when ``success`` is false.
        next_action: Wire ``nextAction``; machine-readable hint for the next operation.
        message: User-facing text.
        error: Debug-friendly error string.
        data: Arbitrary structured payload.
    """

    model_config = ConfigDict(extra="allow")

    success: bool
    terminal: bool | None = None
    needs_followup: bool | None = Field(default=None)
    next_action: str | None = None
    message: str | None = None
    error: str | None = None
    data: dict[str, Any] | None = None

    @classmethod
    def ok(cls, data: dict[str, Any] | None = None, *, message: str | None = None) -> ToolResult:
        """Build a successful result.

        Args:
            data: The structured payload.
            message: Optional user-facing text.

        Returns:
            ``ToolResult(success=True, data=data, message=message)``.
        """
        return cls(success=True, data=data, message=message)

    @classmethod
    def retry(
        cls, error: str, *, message: str | None = None, data: dict[str, Any] | None = None
    ) -> ToolResult:
        """Build a recoverable failure: ``success=False, needsFollowup=True``.

        Args:
            error: What went wrong, naming the fix.
            message: Optional user-facing text.
            data: Optional structured detail.

        Returns:
            A failed result the agent loop re-prompts on.
        """
        return cls(success=False, needs_followup=True, error=error, message=message, data=data)

    @classmethod
    def success_with(cls, data: dict[str, Any] | None) -> ToolResult:
        """Build ``ToolResult(success=True, data=data)`` without validation (the dispatch hot path).

        ``data`` must already be JSON-ready (the router runs ``to_jsonable_python`` on it first).
        """
        result = cls.__new__(cls)
        fields = _EMPTY_FIELDS.copy()
        fields["data"] = data
        _set_dict(result, fields)
        _set_fields_set(result, {"success"} if data is None else {"success", "data"})
        _set_extra(result, {})
        _set_private(result, None)
        return result

    def to_wire(self) -> dict[str, Any]:
        """Return the camelCase JSON-ready dict with ``None`` fields left out.

        Every string in it is encodable as UTF-8: a lone surrogate (a file name that was not UTF-8,
        decoded by the OS layer with ``surrogateescape``) becomes U+FFFD, so no transport can fail
        on it. A result no JSON writer takes (``data`` nested too deeply) becomes a failed result
        the model can act on (``data.code == "unserializable_result"``): every transport (the
        agent loop, the sidecar, MCP, the line session) writes results through here, and none of
        them may fail on one.
        """
        try:
            wire: dict[str, Any] = wire_safe(_dumped(self))
        except (ValueError, TypeError, RecursionError) as exc:
            return {
                "success": False,
                "needsFollowup": True,
                "error": f"The tool's result cannot be sent as JSON ({type(exc).__name__}: {exc}); "
                "ask for less deeply nested data",
                "data": {"code": ToolErrorCode.UNSERIALIZABLE_RESULT},
            }
        return wire


_EMPTY_FIELDS: dict[str, Any] = {name: None for name in ToolResult.model_fields} | {"success": True}
_WIRE_FIELDS: Final = tuple(
    (
        name,
        field.serialization_alias or field.alias or name,
        bool if name in ("success", "terminal", "needs_followup") else str,
    )
    for name, field in ToolResult.model_fields.items()
    if name != "data"
)
"""Each field but ``data``: its name, its wire name, and the type a plain result holds there."""


def _dumped(result: ToolResult) -> dict[str, Any]:
    """``result.model_dump(by_alias=True, exclude_none=True, mode="json")``, without building the serializer.

    The wire types build their serializer at the first use, and the first build of any model looks
    up pydantic's plugins (every installed distribution's entry points are read): some 20 ms, all
    of a one-shot ``steerable call``'s margin (``benchmarks/startup.py``). A plain result (a
    ``ToolResult`` itself, every field of its declared type, ``data`` keyed by strings, no extra
    field) is written here: each value of ``data`` goes through ``pydantic_core.to_jsonable_python``
    with the settings ``model_dump`` gives an ``Any`` value (aliases, ``None`` fields of a nested
    model left out, NaN and the infinities as ``null``). Anything else is ``model_dump``'s.
    """
    values = result.__dict__
    if type(result) is not ToolResult or result.__pydantic_extra__:
        return result.model_dump(by_alias=True, exclude_none=True, mode="json")
    wire: dict[str, Any] = {}
    for name, key, kind in _WIRE_FIELDS:
        value = values[name]
        if value is None:
            continue
        if type(value) is not kind:
            return result.model_dump(by_alias=True, exclude_none=True, mode="json")
        wire[key] = value
    data = values["data"]
    if data is None:
        return wire
    if type(data) is not dict or not all(type(key) is str for key in data):
        return result.model_dump(by_alias=True, exclude_none=True, mode="json")
    # value by value, as the model's dict[str, Any] serializer walks them (the same depth limit)
    wire["data"] = {
        key: to_jsonable_python(value, by_alias=True, exclude_none=True, inf_nan_mode="null")
        for key, value in data.items()
    }
    return wire


def is_terminal_result(result: ToolResult | Mapping[str, Any] | None) -> bool:
    """Tell whether a tool result ends the agent run.

    Terminal when ``terminal`` is exactly ``True``, or when ``success`` is exactly ``False`` and
    ``needsFollowup`` is not exactly ``True`` (identity semantics, as the spec's TypeScript
    ``===``). ``None`` and ``{}`` are not terminal. Spec: Completion semantics.

    Args:
        result: A ``ToolResult`` or its wire dict (camelCase ``needsFollowup``; the snake_case
            key is accepted too).

    Returns:
        ``True`` when the run should stop.
    """
    if result is None:
        return False
    if isinstance(result, ToolResult):
        terminal: Any = result.terminal
        success: Any = result.success
        followup: Any = result.needs_followup
    else:
        terminal = result.get("terminal")
        success = result.get("success")
        followup = result.get("needsFollowup", result.get("needs_followup"))
    if terminal is True:
        return True
    return success is False and followup is not True
