"""``steerable sidecar``: the tools and the agent loop served to a host over JSON-RPC on stdio.

``SidecarClient`` is its Python client; the wire shapes are in :mod:`steerable_sidecar.sidecar.protocol`
(docs/sidecar-protocol.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steerable_agent_runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from ._client import ChatHandle, SidecarClient, SidecarStartError
    from ._server import PROTOCOL_VERSION, Sidecar, SidecarConfig

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_client": ("ChatHandle", "SidecarClient", "SidecarStartError"),
    "_server": ("PROTOCOL_VERSION", "Sidecar", "SidecarConfig"),
}
"""Each module and the public names it provides (the block above, for type checkers)."""

__all__ = [
    "PROTOCOL_VERSION",
    "ChatHandle",
    "Sidecar",
    "SidecarClient",
    "SidecarConfig",
    "SidecarStartError",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
