"""steerable_sidecar: the process half of steerable (CLI, line session, MCP server).

The MCP server lives in :mod:`steerable_sidecar.mcp_server` and is not imported here, so that
``import steerable_sidecar`` stays free of the ``mcp`` SDK's start-up cost.
"""

from steerable_agent_runtime import __version__

from .cli import build_parser, main
from .session import handle_line, run_session

__all__ = ["__version__", "build_parser", "handle_line", "main", "run_session"]
