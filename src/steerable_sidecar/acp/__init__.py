"""``steerable acp``: steerable as an Agent Client Protocol agent for editors (docs/acp.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from steerable_agent_runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from ._agent import ACP_SYSTEM_PROMPT, AcpOptions, SteerableAcpAgent, serve_acp

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_agent": ("ACP_SYSTEM_PROMPT", "AcpOptions", "SteerableAcpAgent", "serve_acp"),
}
"""Each module and the public names it provides (the block above, for type checkers)."""

__all__ = [
    "ACP_SYSTEM_PROMPT",
    "AcpOptions",
    "SteerableAcpAgent",
    "serve_acp",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
