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
    from ._codes import McpErrorCode, RunCodeErrorCode
    from .boot import boot_tools
    from .cli import build_parser, main
    from .client import ChatHandle, SidecarClient
    from .mcp_server import McpServer
    from .mcp_sources import McpServerError, McpToolSources, load_mcp_config
    from .providers import LLMConfig, OpenAICompatibleProvider, default_llm_provider
    from .session import handle_line, run_session
    from .terminal_prompt import terminal_ask_user_handler

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_codes": ("McpErrorCode", "RunCodeErrorCode"),
    "boot": ("boot_tools",),
    "cli": ("build_parser", "main"),
    "client": ("ChatHandle", "SidecarClient"),
    "mcp_server": ("McpServer",),
    "mcp_sources": ("McpServerError", "McpToolSources", "load_mcp_config"),
    "providers": ("LLMConfig", "OpenAICompatibleProvider", "default_llm_provider"),
    "session": ("handle_line", "run_session"),
    "terminal_prompt": ("terminal_ask_user_handler",),
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
