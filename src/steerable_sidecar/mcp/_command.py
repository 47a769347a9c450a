"""``steerable mcp``: answer the host's handshake at once, boot the tools meanwhile, then serve them.

The order is what keeps start-up inside a host's window (docs/mcp.md, "Start-up"): once the
workspace is known to be one to serve, ``boot`` (the workspace tools, plugins, the harness) starts
in a daemon thread, before asyncio and the MCP modules load, so the tools are ready as early as
the process's work allows; meanwhile stdio is isolated and the MCP peer answers ``initialize``.
Then the MCP sources of ``STEERABLE_MCP_CONFIG`` connect, and only then are the tools attached: a
``tools/list`` that comes earlier waits for them and lists everything. A boot failure is answered
to the waiting requests, printed on stderr and ends the command with exit 2, as before the
handshake existed. SIGTERM, SIGHUP and SIGINT answer every
request in flight as interrupted, then end it with ``128 + n`` (docs/mcp.md, "Shutdown and
signals").
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from steerable_agent_runtime import __version__
from steerable_agent_runtime.errors import SteerableError

from ..exit_codes import ExitCode

if TYPE_CHECKING:  # loaded once the boot has started (start-up: benchmarks/startup.py)
    import asyncio
    from concurrent.futures import Future

    from .._boot import Booted
    from ..shared._signals import Shutdown
    from ..web_tools import FetchConsent
    from ._server import McpServer

__all__ = ["add_mcp_arguments", "mcp_command", "mcp_config_error", "run_mcp"]

_LEFT_DURING_BOOT_S: Final = 2.0
"""Seconds a boot may still take after the host left (then the process ends without it)."""
_TELL_FAILURE_S: Final = 10.0
"""Seconds a failed boot waits for the host's ``tools/list`` to answer it with the error."""
_QUIET_START_S: Final = 1.0
"""Seconds the work after the boot (the sandbox probe) waits for the host's first ``tools/list``."""


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--read-max-chars`` to ``steerable mcp``'s parser."""
    parser.add_argument(
        "--read-max-chars",
        type=_positive_chars,
        default=None,
        metavar="N",
        help="clip read_file's content past N characters as the result's JSON holds it (1 to 100,000; "
        "default 40,000: a whole result fits what Claude Code shows its model; the other commands "
        "clip at 100,000 characters of text)",
    )


def _positive_chars(text: str) -> int:
    """``--read-max-chars``: 1 to the spec's clip (a larger bound would turn the clip off)."""
    from steerable_agent_runtime.workspace import DEFAULT_MAX_OUTPUT_CHARS

    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= DEFAULT_MAX_OUTPUT_CHARS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of characters from 1 to {DEFAULT_MAX_OUTPUT_CHARS:,}"
        )
    return value


def mcp_command(args: argparse.Namespace) -> int:
    """``steerable mcp`` with its options: the tools booted with ``read_file``'s clip for hosts.

    The clip is ``--read-max-chars``, else ``HOST_READ_MAX_CHARS`` (docs/mcp.md).
    """
    from steerable_agent_runtime.workspace import HOST_READ_MAX_CHARS

    from .._boot import boot_from_options

    chars: int | None = args.read_max_chars
    clip = HOST_READ_MAX_CHARS if chars is None else chars
    return run_mcp(args, boot=lambda: boot_from_options(args, read_max_chars=clip))


def mcp_config_error(args: argparse.Namespace, error: SteerableError) -> int:
    """A bad setting is answered to the host, as any failed boot is: the handshake, then the error."""

    def boot() -> Booted:
        raise error

    return run_mcp(args, boot=boot)


def run_mcp(args: argparse.Namespace, *, boot: Callable[[], Booted]) -> int:
    """Run ``steerable mcp`` until the host disconnects.

    Args:
        args: The parsed command line (``workspace``, ``harness``).
        boot: Builds the tools (``boot_tools`` with the command's options); run in a worker thread.

    Returns:
        0 when the host disconnected; 2 for a failed boot (the message is on stderr). A refused
        workspace never gets here: ``steerable_sidecar.cli._main`` applies the one rule first.
    """
    # the workspace follows the one rule (shared._workspace_rule), checked before this runs: not /, a
    # home folder, above one, nor the state directory's, and an existing current directory unless
    # --workspace is absolute
    root = Path(args.workspace or os.getcwd()).resolve()
    booting = _in_daemon_thread(boot)  # first: the tools are what the host waits on longest
    from ..shared._signals import run_until_signalled

    return run_until_signalled(lambda shutdown: _serve(args, booting, root, shutdown))


async def _serve(
    args: argparse.Namespace, booting: Future[Booted], root: Path, shutdown: Shutdown | None = None
) -> int:
    import asyncio

    from ..rpc._peer import open_stdio_streams
    from ..shared._secrets import credential_values
    from ._server import McpServer

    reader, writer = await open_stdio_streams()  # first: a print() from here on lands on stderr
    server = McpServer(
        instructions=(
            f"Tools for the workspace {root}: paths are relative to it. Read a file before writing "
            "or editing it; a stale read is refused with the current version."
        ),
        secrets=credential_values(os.environ),
    )
    watching = asyncio.ensure_future(_interrupt_on(shutdown, server))
    try:
        return await _serve_with(
            args, _awaited(booting), root, server, asyncio.ensure_future(server.serve(reader, writer))
        )
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)


async def _interrupt_on(shutdown: Shutdown | None, server: McpServer) -> None:
    """At a signal, answer every request in flight as interrupted and close (REC-4)."""
    if shutdown is None:
        return
    from ..shared._signals import INTERRUPT_DRAIN_S

    await shutdown.wait()
    await server.interrupt(
        shutdown.interrupted_message(), shutdown.interrupted_data(), grace_s=INTERRUPT_DRAIN_S
    )


async def _serve_with(
    args: argparse.Namespace,
    booting: asyncio.Future[Booted],
    root: Path,
    server: McpServer,
    serving: asyncio.Task[None],
) -> int:
    import asyncio

    either: set[asyncio.Future[Any]] = {serving, booting}
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    if not booting.done():  # the host left during the boot: a little longer, then go
        await asyncio.wait({booting}, timeout=_LEFT_DURING_BOOT_S)
        if not booting.done():
            return ExitCode.OK  # the boot thread is a daemon: a hung plugin does not keep the process alive
    booted: Booted | None = None
    try:
        booted = booting.result()
        if serving.done():  # the host left already: say what would have been served all the same
            _announce(args, booted, root, probe=False)
            return ExitCode.OK
        from .._boot import mcp_sources_for

        sources = mcp_sources_for(booted.router, None)
        async with contextlib.AsyncExitStack() as stack:
            if sources is not None:
                from ..mcp_sources._sources import config_secrets

                server.add_secrets(config_secrets(os.environ))  # known_credentials' other half
                connecting = asyncio.ensure_future(stack.enter_async_context(sources))
                await asyncio.wait({serving, connecting}, return_when=asyncio.FIRST_COMPLETED)
                if not connecting.done():  # the host left while the sources started
                    connecting.cancel()
                    await asyncio.gather(connecting, return_exceptions=True)
                    return ExitCode.OK
                connecting.result()  # fails loud, naming the server
            server.attach(booted.router, booted.harness.offered, questions=_fetch_consent(booted))
            later = asyncio.ensure_future(_after_the_listing(args, booted, root, server))
            try:
                await serving
            finally:
                later.cancel()
        return ExitCode.OK
    except SteerableError as exc:  # a plugin, a STEERABLE_* variable, an MCP source
        server.fail(exc)
        print(f"steerable: {server.redact(str(exc))}", file=sys.stderr, flush=True)
        # give the host the time to ask for the tools and read why there are none
        told = asyncio.ensure_future(server.told_failure())
        await asyncio.wait({told, serving}, timeout=_TELL_FAILURE_S, return_when=asyncio.FIRST_COMPLETED)
        told.cancel()
        await server.close()
        await asyncio.gather(serving, return_exceptions=True)
        return ExitCode.USAGE
    finally:
        if booted is not None:
            await booted.aclose()


async def _after_the_listing(args: argparse.Namespace, booted: Booted, root: Path, server: McpServer) -> None:
    """Once the host has its tools (or :data:`_QUIET_START_S` on): say what is served, ready a call.

    The sandbox probe, pydantic's import and the wire types' validators (nothing the boot or the
    listing needs) wait until then, so none competes with the first ``tools/list`` for the
    interpreter.
    """
    import asyncio

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(server.listed(), _QUIET_START_S)
    _announce(args, booted, root)


def _fetch_consent(booted: Booted) -> FetchConsent | None:
    """The connection's question before each new host's first ``web_fetch`` (SAFE-4), with the web pair."""
    if booted.web is None:
        return None
    from ..web_tools import FetchConsent

    return FetchConsent(booted.web.config)


def _in_daemon_thread(boot: Callable[[], Booted]) -> Future[Booted]:
    """Start ``boot`` in a daemon thread (a hung plugin does not keep the process alive); its outcome."""
    from concurrent.futures import Future

    future: Future[Booted] = Future()

    def run() -> None:
        try:
            future.set_result(boot())
        except BaseException as exc:  # delivered to the loop, which decides
            future.set_exception(exc)

    threading.Thread(target=run, name="steerable-mcp-boot", daemon=True).start()
    return future


def _awaited(booting: Future[Booted]) -> asyncio.Future[Booted]:
    """The boot's outcome on the running loop (a closed loop, the host long gone, is not told)."""
    import asyncio

    loop = asyncio.get_running_loop()
    awaited: asyncio.Future[Booted] = loop.create_future()

    def settle() -> None:
        if awaited.done():
            return
        error = booting.exception()
        if error is None:
            awaited.set_result(booting.result())
        else:
            awaited.set_exception(error)

    def done(_: Future[Booted]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed
            loop.call_soon_threadsafe(settle)

    booting.add_done_callback(done)  # at once when the boot is over already
    return awaited


def _announce(args: argparse.Namespace, booted: Booted, root: Path, *, probe: bool = True) -> None:
    """Say on stderr, once, what is served: a terminal otherwise shows nothing.

    The sandbox is probed in a daemon thread, so a slow probe (a hung bwrap) delays neither calls
    nor the exit; the thread first imports pydantic and builds the wire types' validators, which
    the first ``tools/call`` would otherwise do. ``probe=False`` (the host already left) says so
    without probing.
    """
    from .._boot import offered_tools

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
        from steerable_agent_runtime.types import ToolCall, ToolResult

        for model in (ToolCall, ToolResult):  # defer_build: built here, not in the first call
            model.model_rebuild()
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
