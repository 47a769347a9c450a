"""An error response rebuilt, on the calling side, as the :class:`SteerableError` its code names.

The sidecar answers a handler's exception with the code of its class in
:data:`~steerable_sidecar.rpc._peer.ERROR_CODES` and the class's attributes in ``data``
(:func:`~steerable_sidecar.rpc._peer.error_data_for`); :func:`typed_remote_error` reads the same table
backwards. The exception it returns is both a :class:`RemoteError` (``code``, ``message`` and
``data`` exactly as the response had them) and an instance of the class the code names, with that
class's attributes restored from ``data`` (docs/sidecar-protocol.md, "steerable error codes").
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from steerable_agent_runtime import errors
from steerable_agent_runtime.errors import RemoteError, SteerableError

from ..rpc._peer import ERROR_CODES

__all__ = ["typed_remote_error"]

_ATTRIBUTES: Final[Mapping[type[SteerableError], Mapping[str, str]]] = MappingProxyType(
    {
        errors.ToolSignal: {"nextAction": "next_action"},
        errors.DuplicateToolError: {"name": "name"},
        errors.PluginLoadError: {"plugin": "plugin", "tool": "tool", "otherPlugin": "other_plugin"},
        errors.PluginStateError: {"plugin": "plugin", "state": "state"},
        errors.ProviderError: {"status": "status", "retryable": "retryable"},
        errors.McpServerError: {"server": "server"},
    }
)
"""Each class's attributes as :func:`~steerable_sidecar.rpc._peer.error_data_for` names them in ``data``.

``code``, ``message`` and ``data`` are not among them: on a rebuilt error they are the response's
(a file tool's string code is ``data["code"]``, a ``ToolSignal``'s result data ``data["data"]``).
"""


def _remote_init(self: RemoteError, code: int, message: str, data: Any = None) -> None:
    # RemoteError's own fields only: the typed class's __init__ takes other arguments.
    Exception.__init__(self, f"{message} (JSON-RPC error {code})")
    self.code, self.message, self.data = code, message, data


def _typed_class(cls: type[SteerableError]) -> type[RemoteError]:
    """``RemoteError`` joined with ``cls``, so ``except RemoteError`` and ``except cls`` both catch it."""
    return type(
        f"Remote{cls.__name__}",
        (RemoteError, cls),
        {"__init__": _remote_init, "__str__": BaseException.__str__, "__module__": __name__},
    )


_BY_CODE: Final[Mapping[int, type[RemoteError]]] = MappingProxyType(
    {
        code: _typed_class(cls)
        for cls, code in ERROR_CODES.items()
        if not issubclass(cls, RemoteError)  # a RemoteError's own code is answered as it is
    }
)


def typed_remote_error(error: RemoteError) -> RemoteError:
    """Return ``error`` rebuilt as the class its code names, or ``error`` itself.

    Args:
        error: What :meth:`~steerable_sidecar.rpc._peer.JsonRpcPeer.request` raised.

    Returns:
        For a code of :data:`~steerable_sidecar.rpc._peer.ERROR_CODES` (other than ``RemoteError``'s and
        ``PeerClosedError``'s), an exception that is a ``RemoteError`` with the same ``code``,
        ``message`` and ``data`` and an instance of that class (``ConfigError`` for -32040...),
        its attributes (``plugin``, ``status``...) read from ``data``; otherwise ``error``.
    """
    typed = _BY_CODE.get(error.code)
    if typed is None or isinstance(error, errors.PeerClosedError):
        return error
    rebuilt = typed(error.code, error.message, error.data)
    data = error.data if isinstance(error.data, Mapping) else {}
    for cls, attributes in _ATTRIBUTES.items():
        if isinstance(rebuilt, cls):
            for key, attribute in attributes.items():
                setattr(rebuilt, attribute, data.get(key, False if attribute == "retryable" else None))
    if isinstance(rebuilt, errors.ToolSignal):
        rebuilt.error = error.message
    if isinstance(rebuilt, errors.SandboxUnavailableError):
        tried = data.get("data", {}).get("tried") if isinstance(data.get("data"), Mapping) else None
        rebuilt.tried = dict(tried) if isinstance(tried, Mapping) else {}
    return rebuilt
