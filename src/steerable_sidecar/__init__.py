"""steerable_sidecar: the process half of steerable (CLI, line session, MCP server).

Importing the package is cheap: its public names are imported from their modules on first use
(PEP 562 ``__getattr__``), so ``steerable mcp`` can answer a host's ``initialize`` before the
tools, pydantic or the ``mcp`` SDK are loaded (docs/mcp.md: Start-up).
"""

import typing as _typing

from steerable_agent_runtime import __version__
from steerable_agent_runtime._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from .cli import build_parser, main
    from .session import handle_line, run_session

_EXPORTS: dict[str, tuple[str, ...]] = {
    "cli": ("build_parser", "main"),
    "session": ("handle_line", "run_session"),
}
"""Each submodule and the public names it provides (the block above, for type checkers)."""


__all__ = ["__version__", "build_parser", "handle_line", "main", "run_session"]


if not _typing.TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), submodules=True)
