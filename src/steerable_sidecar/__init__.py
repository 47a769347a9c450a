"""steerable_sidecar: the process half of steerable (CLI, line session, MCP server).

Importing the package is cheap: its public names are imported from their modules on first use
(PEP 562 ``__getattr__``), so ``steerable mcp`` can answer a host's ``initialize`` before the
tools, pydantic or the ``mcp`` SDK are loaded (docs/mcp.md: Start-up).
"""

# isort: off
from . import _safe_path  # noqa: F401  (first: it drops sys.path entries naming the workspace)

# isort: on
import sys as _sys
import typing as _typing

if _sys.platform == "win32":  # the `steerable` command says why in one sentence and exits 2 (README)
    from ._windows import refuse_windows as _refuse_windows

    _refuse_windows()

from steerable_agent_runtime import __version__
from steerable_agent_runtime.lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._boot import boot_tools
    from .cli import build_parser, main
    from .cli._session import handle_line, run_session
    from .mcp import McpServer
    from .mcp_sources import McpServerError, McpToolSources, load_mcp_config
    from .providers import LLMConfig, OpenAICompatibleProvider, default_llm_provider
    from .run import terminal_ask_user_handler
    from .shared._codes import McpErrorCode, RunCodeErrorCode
    from .sidecar import ChatHandle, SidecarClient

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_boot": ("boot_tools",),
    "cli": ("build_parser", "main"),
    "cli._session": ("handle_line", "run_session"),
    "mcp": ("McpServer",),
    "mcp_sources": ("McpServerError", "McpToolSources", "load_mcp_config"),
    "providers": ("LLMConfig", "OpenAICompatibleProvider", "default_llm_provider"),
    "run": ("terminal_ask_user_handler",),
    "shared._codes": ("McpErrorCode", "RunCodeErrorCode"),
    "sidecar": ("ChatHandle", "SidecarClient"),
}
"""Each submodule and the public names it provides (the block above, for type checkers)."""


__all__ = [
    "ChatHandle",
    "LLMConfig",
    "McpErrorCode",
    "McpServer",
    "McpServerError",
    "McpToolSources",
    "OpenAICompatibleProvider",
    "RunCodeErrorCode",
    "SidecarClient",
    "__version__",
    "boot_tools",
    "build_parser",
    "default_llm_provider",
    "handle_line",
    "load_mcp_config",
    "main",
    "run_session",
    "terminal_ask_user_handler",
]


if not _typing.TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), submodules=True)
