"""JSON-RPC error codes, and how an exception becomes an error object (``docs/sidecar-protocol.md``).

:data:`ERROR_CODES` gives each :class:`~steerable_agent_runtime.errors.SteerableError` class its
own code in the JSON-RPC server range; :func:`error_code_for` picks the most specific one and
:func:`error_data_for` builds the ``data``. The public names are re-exported by
:mod:`steerable_sidecar.rpc._peer`, whose peer is the one place exceptions become wire errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from steerable_agent_runtime import errors

if TYPE_CHECKING:
    import pydantic

__all__ = [
    "ERROR_CODES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "InvalidParams",
    "error_code_for",
    "error_data_for",
    "validation_error",
]

PARSE_ERROR: Final = -32700
"""The frame is not JSON (or not UTF-8). Answered with ``id: null``."""
INVALID_REQUEST: Final = -32600
"""The JSON is not a valid request object, the batch is empty, or the frame is too large."""
METHOD_NOT_FOUND: Final = -32601
"""No handler is registered under the request's ``method``."""
INVALID_PARAMS: Final = -32602
"""The handler raised :class:`InvalidParams` or a pydantic ``ValidationError``."""
INTERNAL_ERROR: Final = -32603
"""The handler raised an exception outside the :class:`SteerableError` tree."""

ERROR_CODES: Final[Mapping[type[errors.SteerableError], int]] = MappingProxyType(
    {
        errors.SteerableError: -32000,
        errors.ToolSignal: -32010,
        errors.ToolRetry: -32011,
        errors.ToolFailed: -32012,
        errors.SandboxUnavailableError: -32013,
        errors.WebError: -32014,
        errors.WorkspaceError: -32020,
        errors.PathEscapeError: -32021,
        errors.WriteConflictError: -32022,
        errors.EditError: -32023,
        errors.PatchError: -32024,
        errors.UserError: -32030,
        errors.DuplicateToolError: -32031,
        errors.PluginLoadError: -32032,
        errors.PluginStateError: -32033,
        errors.ConfigError: -32040,
        errors.ProviderError: -32050,
        errors.SidecarStartError: -32060,
        errors.McpServerError: -32080,
        errors.RemoteError: -32090,
        errors.PeerClosedError: -32099,
    }
)
"""The JSON-RPC error code of each :class:`SteerableError` class (all distinct, -32099..-32000).

A handler's exception is answered with the code of the most specific class in its MRO, so a
subclass defined outside steerable inherits its parent's code. Every steerable class has its own
entry (a test walks the tree), and the table is repeated in ``docs/sidecar-protocol.md``.
"""


class InvalidParams(Exception):
    """Raised by a handler to answer ``-32602 Invalid params``.

    It is a signal from handler code to this module, like a return value, and never escapes the
    peer; it sits outside the :class:`SteerableError` tree because its code is a standard
    JSON-RPC code, not one of the server-range codes of :data:`ERROR_CODES`.

    Args:
        message: What is wrong with the params, naming the field.
        data: Optional JSON ``data`` for the error object.
    """

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(message)
        self.data = data


def error_code_for(exc: BaseException) -> int:
    """Return the JSON-RPC error code a handler's exception is answered with.

    Args:
        exc: The exception a handler raised.

    Returns:
        The code of the most specific :data:`ERROR_CODES` class in the exception's MRO;
        :data:`INVALID_PARAMS` for :class:`InvalidParams` and pydantic's ``ValidationError``;
        :data:`INTERNAL_ERROR` for anything else.
    """
    for cls in type(exc).__mro__:
        if issubclass(cls, errors.SteerableError) and cls in ERROR_CODES:
            return ERROR_CODES[cls]
    if isinstance(exc, InvalidParams) or validation_error(exc) is not None:
        return INVALID_PARAMS
    return INTERNAL_ERROR


def validation_error(exc: BaseException) -> pydantic.ValidationError | None:
    """``exc`` if it is pydantic's ``ValidationError`` (imported here: MCP start-up skips pydantic)."""
    from pydantic import ValidationError

    return exc if isinstance(exc, ValidationError) else None


def error_data_for(exc: errors.SteerableError) -> dict[str, Any]:
    """Return the error object's ``data`` for a :class:`SteerableError`.

    ``type`` is the class name; the other keys carry the class's machine-readable attributes:
    a :class:`ToolSignal`'s ``message``/``nextAction``/``data`` (the ``ToolResult`` fields), a
    :class:`WorkspaceError`'s ``code``, a :class:`DuplicateToolError`'s ``name``, a
    :class:`ProviderError`'s ``status``/``retryable``, and a :class:`RemoteError`'s
    ``remoteCode``/``remoteData`` (the error a reverse call received), a plugin error's
    ``plugin``/``tool``/``otherPlugin``/``state``, and an :class:`McpServerError`'s ``server``.
    Absent values are left out.
    """
    data: dict[str, Any] = {"type": type(exc).__name__}
    if isinstance(exc, errors.ToolSignal):
        _put(data, "message", exc.message)
        _put(data, "nextAction", exc.next_action)
        _put(data, "data", exc.data)
    if isinstance(exc, errors.WorkspaceError):
        data["code"] = exc.code
    if isinstance(exc, errors.DuplicateToolError):
        data["name"] = exc.name
    if isinstance(exc, errors.ProviderError):
        _put(data, "status", exc.status)
        data["retryable"] = exc.retryable
    if isinstance(exc, errors.RemoteError) and not isinstance(exc, errors.PeerClosedError):
        data["remoteCode"] = exc.code
        _put(data, "remoteData", exc.data)
    if isinstance(exc, errors.PluginLoadError):
        _put(data, "plugin", exc.plugin)
        _put(data, "tool", exc.tool)
        _put(data, "otherPlugin", exc.other_plugin)
    if isinstance(exc, errors.PluginStateError):
        _put(data, "plugin", exc.plugin)
        _put(data, "state", exc.state)
    if isinstance(exc, errors.McpServerError):
        data["server"] = exc.server
    return data


def _put(data: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        data[key] = value
