"""``steerable sidecar``: boot the sidecar on this process's stdin/stdout.

Logs go to stderr only (level from ``--verbose`` or ``STEERABLE_LOG_LEVEL``, default ``WARNING``);
stdout carries nothing but protocol frames (a stray ``print`` is redirected to stderr). Exit codes:
0 after stdin EOF or ``system.shutdown``, 2 when the configuration is invalid (the message names
the variable), ``128 + n`` after SIGTERM, SIGHUP or SIGINT (every request in flight answered as
interrupted first: docs/sidecar-protocol.md, "End of input and shutdown").
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys
from pathlib import Path

from steerable_agent_runtime import SteerableError

from .._boot import mcp_sources_for
from ..exit_codes import ExitCode
from ..rpc._peer import JsonRpcPeer, open_stdio_streams
from ..shared._logging import LOG_LEVEL_ENV
from ..shared._signals import Shutdown, run_until_signalled
from ..shared._state_dir import checked_state_dir, environ_with_state_dir
from ._server import Sidecar, SidecarConfig, boot_for

__all__ = ["LOG_LEVEL_ENV", "add_sidecar_arguments", "run_sidecar", "serve_stdio", "sidecar_command"]


async def serve_stdio(
    config: SidecarConfig,
    *,
    harness: str = "full",
    plugins: bool = True,
    web_tools: bool = True,
    shutdown: Shutdown | None = None,
) -> None:
    """Boot the tools, connect the MCP servers, serve on stdio until EOF or ``system.shutdown``.

    Args:
        config: The process configuration.
        shutdown: Set by a signal: the requests in flight are answered as interrupted, then it ends.
        harness: The default ``agent.chat.stream`` harness (a chat's ``harness`` param overrides it).
        plugins: Load the configured plugins.
        web_tools: Serve ``web_search`` / ``web_fetch``. An invalid ``STEERABLE_WEB_*`` variable is
            logged and the sidecar serves without them (spec: Bounds); with
            ``STEERABLE_WEB_SEARCH_PROVIDER=host`` the host runs each search (``web_search.request``).

    Raises:
        SteerableError: Invalid configuration or a plugin that failed to load (raised before
            ``lifecycle.ready`` is sent; the message names the offender).
    """
    # stdio first: from here on a stray print (a plugin's, at import or register) lands on stderr
    reader, writer = await open_stdio_streams()
    peer = JsonRpcPeer(reader, writer, name="sidecar")  # not serving yet: the host search needs it
    # {query, maxResults, allowedDomains, blockedDomains}; web_search's deadline bounds the wait, and
    # HostSearchProvider checks the answer's shape
    host_search = functools.partial(peer.request, "web_search.request")
    booted = boot_for(
        config,
        harness=harness,
        plugins=plugins,
        web_tools=web_tools,
        web_config_errors="log",
        host_search=host_search,
    )
    config = dataclasses.replace(config, default_harness=harness)
    try:
        sources = mcp_sources_for(booted.router, None, config.environ)
        sidecar = Sidecar(
            peer, config, router=booted.router, plugins=booted.plugins, workspace=booted.workspace
        )
        if sources is None:
            await sidecar.run(shutdown)
            return
        async with sources:
            await sidecar.run(shutdown)
    finally:
        await booted.aclose()


def add_sidecar_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--state-dir`` to ``steerable sidecar``'s parser."""
    parser.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="durable session records (default: $STEERABLE_STATE_DIR or $XDG_STATE_HOME/steerable)",
    )


def sidecar_command(args: argparse.Namespace) -> int:
    """``steerable sidecar`` with its parsed options (:func:`run_sidecar`); returns the exit code."""
    return run_sidecar(
        args.workspace,
        state_dir=args.state_dir,
        allow_outside=args.allow_outside_workspace,
        allow_protected_writes=args.allow_protected_writes,
        harness=args.harness,
        plugins=not args.no_plugins,
        web_tools=not args.no_web_tools,
    )


def run_sidecar(
    workspace: str | None,
    *,
    state_dir: str | None = None,
    allow_outside: bool = False,
    allow_protected_writes: bool | None = None,
    harness: str = "full",
    plugins: bool = True,
    web_tools: bool = True,
) -> int:
    """Run ``steerable sidecar``; returns the exit code.

    Args:
        workspace: The workspace root (default: the working directory).
        state_dir: Where session records go (default ``$STEERABLE_STATE_DIR``, else
            ``$XDG_STATE_HOME/steerable``); one that is not a usable directory ends the command with exit 2.
        allow_outside: Accept file paths outside the workspace.
        allow_protected_writes: Let the tools write protected paths; ``None`` reads
            ``STEERABLE_ALLOW_PROTECTED_WRITES``.
        harness: The default chat harness.
        plugins: Load the configured plugins.
        web_tools: Serve ``web_search`` / ``web_fetch`` (``--no-web-tools``: omit them).
    """
    try:
        state = checked_state_dir(state_dir)  # a ConfigError naming --state-dir or the variable
        config = SidecarConfig(
            workspace=Path(workspace or os.getcwd()).resolve(),
            state_dir=state,
            allow_outside=allow_outside,
            allow_protected_writes=allow_protected_writes,
            environ=environ_with_state_dir(state),  # commands may not read it (SAFE-3)
        )
        run_until_signalled(  # SIGTERM, SIGHUP, SIGINT: answered as interrupted, then 128 + n (REC-4)
            lambda shutdown: serve_stdio(
                config, harness=harness, plugins=plugins, web_tools=web_tools, shutdown=shutdown
            )
        )
    except SteerableError as exc:
        print(f"steerable sidecar: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    return ExitCode.OK
