"""``steerable mcp``: answer the host's handshake at once, boot the tools meanwhile, then serve them.

The order is what keeps start-up inside a host's window (docs/mcp.md, "Start-up"): stdio is
isolated and the MCP peer is serving before the tools are built, so ``initialize`` is answered
after the interpreter, asyncio and two small modules have loaded; ``boot`` (the workspace tools,
plugins, the harness) runs in a worker thread, then the MCP sources of ``STEERABLE_MCP_CONFIG``
connect, and only then are the tools attached: the first ``tools/list`` waits for them and lists
everything. A boot failure is answered to the waiting requests, printed on stderr and ends the
command with exit 2, as before the handshake existed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from steerable_agent_runtime._version import __version__
from steerable_agent_runtime.errors import SteerableError

from ._secrets import credential_values
from .mcp_server import McpServer
from .rpc import open_stdio_streams

if TYPE_CHECKING:
    from .boot import Booted

__all__ = ["refused_workspace", "run_mcp"]


def refused_workspace(workspace: str | None, cwd: Path, home: Path | None) -> str | None:
    """Why ``steerable mcp`` will not serve the current directory, or ``None`` when it will.

    A host starts a stdio server in whatever directory it likes: Claude Desktop in ``/``, others in
    the user's home. Serving that silently hands the model the whole disk, so without
    ``--workspace`` the current directory must not be ``/``, the home directory, or a folder above
    it (``/home``, ``/Users``). ``--workspace`` naming any of them is the user's explicit choice.

    Args:
        workspace: ``--workspace`` as given (``None`` when absent).
        cwd: The current directory, resolved.
        home: The user's home directory, resolved (``None`` when it cannot be known).

    Returns:
        The message for stderr, or ``None``.
    """
    if workspace is not None:
        return None
    if cwd == Path(cwd.anchor) or (home is not None and (cwd == home or cwd in home.parents)):
        where = "the file system's root" if cwd == Path(cwd.anchor) else "your home directory or above it"
        return (
            f"steerable mcp: the current directory {cwd} is {where}, and serving it would give the model "
            "every file there. Name the project to serve: `steerable mcp --workspace /path/to/project` "
            '(in the host\'s config: "args": ["mcp", "--workspace", "/path/to/project"]); '
            f"--workspace {cwd} serves it anyway"
        )
    return None


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, OSError, KeyError):  # no HOME and no passwd entry
        return None


def run_mcp(args: argparse.Namespace, *, boot: Callable[[], Booted]) -> int:
    """Run ``steerable mcp`` until the host disconnects.

    Args:
        args: The parsed command line (``workspace``, ``harness``).
        boot: Builds the tools (``boot_tools`` with the command's options); run in a worker thread.

    Returns:
        0 when the host disconnected; 2 for a refused workspace or a failed boot (the message is
        on stderr).
    """
    cwd = Path.cwd().resolve()
    refusal = refused_workspace(args.workspace, cwd, _home())
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    root = Path(args.workspace).resolve() if args.workspace else cwd
    return asyncio.run(_serve(args, boot, root))


async def _serve(args: argparse.Namespace, boot: Callable[[], Booted], root: Path) -> int:
    reader, writer = await open_stdio_streams()  # first: a print() from here on lands on stderr
    server = McpServer(
        instructions=(
            f"Tools for the workspace {root}: paths are relative to it. Read a file before writing "
            "or editing it; a stale read is refused with the current version."
        ),
        secrets=credential_values(os.environ),
    )
    serving = asyncio.ensure_future(server.serve(reader, writer))
    booting = asyncio.ensure_future(asyncio.to_thread(boot))
    await asyncio.wait({serving, booting}, return_when=asyncio.FIRST_COMPLETED)
    booted: Booted | None = None
    try:
        booted = await booting  # the host may have left already: finish the boot, then release it
        if serving.done():  # say what would have been served all the same
            _announce(args, booted, root, probe=False)
            return 0
        from .boot import mcp_sources_for

        sources = mcp_sources_for(booted.router, None)
        async with contextlib.AsyncExitStack() as stack:
            if sources is not None:
                from .mcp_sources import config_secrets

                server.add_secrets(config_secrets(os.environ))
                await stack.enter_async_context(sources)  # fails loud, naming the server
            server.attach(booted.router, booted.harness.offered)
            _announce(args, booted, root)
            await serving
        return 0
    except SteerableError as exc:  # a plugin, a STEERABLE_* variable, an MCP source
        server.fail(exc)
        print(f"steerable: {exc}", file=sys.stderr, flush=True)
        await server.close()
        await asyncio.gather(serving, return_exceptions=True)
        return 2
    finally:
        if booted is not None:
            await booted.aclose()


def _announce(args: argparse.Namespace, booted: Booted, root: Path, *, probe: bool = True) -> None:
    """Say on stderr, once, what is served: a terminal otherwise shows nothing.

    The sandbox is probed in a daemon thread, so a slow probe (a hung bwrap) delays neither calls
    nor the exit; ``probe=False`` (the host already left) says so without probing.
    """
    from .boot import offered_tools

    offered = len(offered_tools(booted.router, booted.harness.offered))

    def say(backend: str) -> None:
        print(
            f"steerable mcp {__version__}: serving {offered} tools ({args.harness} harness) for {root}; "
            f"sandbox: {backend}",
            file=sys.stderr,
            flush=True,
        )

    def probed() -> None:
        from steerable_agent_runtime.errors import SandboxUnavailableError
        from steerable_agent_runtime.sandbox import select_backend

        try:
            backend = select_backend().info.backend
        except SandboxUnavailableError:
            backend = "none (bash refuses every command; see steerable doctor)"
        except SteerableError as exc:
            backend = f"misconfigured ({exc})"
        say(backend)

    if probe:
        threading.Thread(target=probed, name="steerable-mcp-announce", daemon=True).start()
    else:
        say("not probed yet")
