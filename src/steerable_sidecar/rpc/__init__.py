"""JSON-RPC 2.0 over line-delimited streams: the peer every steerable server and client uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from steerable_agent_runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from ._peer import (
        ERROR_CODES,
        InvalidParams,
        JsonRpcPeer,
        MethodHandler,
        NotificationHandler,
        Params,
        error_code_for,
        open_fd_streams,
        open_stdio_streams,
    )

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_peer": (
        "ERROR_CODES",
        "InvalidParams",
        "JsonRpcPeer",
        "MethodHandler",
        "NotificationHandler",
        "Params",
        "error_code_for",
        "open_fd_streams",
        "open_stdio_streams",
    ),
}
"""Each module and the public names it provides (the block above, for type checkers)."""

__all__ = [
    "ERROR_CODES",
    "InvalidParams",
    "JsonRpcPeer",
    "MethodHandler",
    "NotificationHandler",
    "Params",
    "error_code_for",
    "open_fd_streams",
    "open_stdio_streams",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
