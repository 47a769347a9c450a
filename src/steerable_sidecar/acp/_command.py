"""``steerable acp``: serve the Agent Client Protocol on stdio (docs/acp.md).

Start-up order, for the client's handshake window (docs/acp.md, "Start-up"): stdio is isolated
first (a stray ``print`` lands on stderr, never in the protocol stream); the ACP SDK, the agent
module and the model's configuration load in a worker thread; meanwhile the client's
``initialize`` is answered here (:func:`~steerable_sidecar.acp._wire.early_initialize`); every
later message waits for the SDK. The process ends when the client closes stdin, or at SIGTERM,
SIGHUP or SIGINT: every turn is stopped (its calls recorded as interrupted, its record's end
written), each request in flight answered as interrupted, and the exit is ``128 + n`` (docs/acp.md,
"Shutdown and signals").
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from steerable_agent_runtime.errors import SteerableError

from ..exit_codes import ExitCode
from ._model_ids import MAX_MODEL_ID_CHARS, model_id_problem

if TYPE_CHECKING:  # the parser (every command) imports this module: asyncio and the wire wait
    import asyncio

    from steerable_agent_runtime.llm import LLMProvider
    from steerable_agent_runtime.modes import ConsentPolicy

    from ..providers._config import LLMConfig
    from ..rpc._peer import LineWriter
    from ..shared._signals import Shutdown
    from ._agent import AcpOptions, SteerableAcpAgent
    from ._wire import LineTransport

__all__ = [
    "HARBOR_MODEL_ENV",
    "AcpSetup",
    "add_acp_arguments",
    "harbor_model",
    "model_ids",
    "run_acp",
    "serve_streams",
]

HARBOR_MODEL_ENV: Final = "HARBOR_ACP_REQUESTED_MODEL"
"""The model Harbor's ACP runner (``harbor run -a acp -m MODEL``) will ask for: it passes its
environment on to the agent, and sets only a model the session offers, so it is offered too."""


def model_ids(text: str | None) -> tuple[str, ...]:
    """``--models``' list: comma-separated, blanks around each id and empty items dropped."""
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())


def harbor_model(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The model Harbor's runner asks for (:data:`HARBOR_MODEL_ENV`), its ``provider/`` part dropped.

    Harbor names models LiteLLM's way, the provider first (``openai/gpt-4.1``,
    ``openrouter/openai/gpt-4o``); the endpoint is steerable's own configuration, so the id offered
    is the rest (``gpt-4.1``, ``openai/gpt-4o``), which Harbor matches with or without the prefix.
    An id that is no model id (:func:`model_id_problem`) is not offered.
    """
    requested = environ.get(HARBOR_MODEL_ENV, "").strip()
    model = requested.split("/", 1)[1] if "/" in requested else requested
    return (model,) if model and model_id_problem(model) is None else ()


def add_acp_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``steerable acp``'s own options to ``parser`` (the shared ones come from the CLI)."""
    parser.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="where session records go (default: $STEERABLE_STATE_DIR or $XDG_STATE_HOME/steerable)",
    )
    parser.add_argument(
        "--max-rounds", type=int, default=None, metavar="N", help="model calls per prompt at most"
    )
    parser.add_argument(
        "--model-timeout-ms", type=int, default=600_000, metavar="MS", help="deadline of one model call"
    )
    parser.add_argument("--system", default=None, metavar="TEXT", help="replace the default system prompt")
    parser.add_argument(
        "--models",
        default=None,
        metavar="LIST",
        help="more models the editor may pick, comma-separated (STEERABLE_MODEL is the default)",
    )
    parser.add_argument(
        "--consent",
        default=None,
        metavar="MODE",
        help="each session's first mode: read-only, ask, default or auto, or the tool modes that ask, "
        "comma-separated (default: $STEERABLE_CONSENT, else default)",
    )
    parser.add_argument(
        "--editor-terminal",
        action="store_true",
        help="run bash in the editor's terminal when it offers terminals (sandboxed as always)",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        default=None,
        metavar="TOKENS",
        help="the model's context size: each turn then ends with a usage_update (tokens used of it)",
    )


def consent_of(args: argparse.Namespace, environ: Mapping[str, str]) -> ConsentPolicy:
    """The sessions' first mode: ``--consent``, else ``STEERABLE_CONSENT``, else ``default``.

    Raises:
        UserError: The value names no policy nor modes (the message names the flag or variable).
    """
    from steerable_agent_runtime.modes import CONSENT_ENV, consent_policy

    if args.consent is not None:
        return consent_policy(args.consent, variable="--consent")
    return consent_policy(environ.get(CONSENT_ENV) or "default")


@dataclass(frozen=True, slots=True)
class AcpSetup:
    """What the start-up's worker thread loaded: the options, the model or why there is none."""

    options: AcpOptions
    provider: LLMProvider | None
    provider_error: str | None


def run_acp(args: argparse.Namespace, *, provider: LLMProvider | None = None) -> int:
    """Run ``steerable acp`` until the client disconnects.

    Args:
        args: The parsed command line.
        provider: The model (default: from the ``STEERABLE_*`` environment, read once).

    Returns:
        0 when the client disconnected; 2 for a bad option or state directory (said on stderr).
        ``--workspace`` and ``--allow-outside-workspace`` never reach here: the command line
        refuses them (``steerable_sidecar.cli._main``), as the editor names each session's folder.
    """
    for name in ("max_rounds", "model_timeout_ms"):
        value = getattr(args, name)
        if value is not None and value < 1:
            print(
                f"steerable acp: --{name.replace('_', '-')} must be at least 1, got {value}", file=sys.stderr
            )
            return ExitCode.USAGE
    if args.context_window is not None and args.context_window < 1:
        print(
            f"steerable acp: --context-window must be at least 1, got {args.context_window}", file=sys.stderr
        )
        return ExitCode.USAGE
    try:
        consent_of(args, os.environ)
    except SteerableError as exc:
        print(f"steerable acp: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    for model in model_ids(args.models):
        problem = model_id_problem(model)
        if problem is not None:
            print(f"steerable acp: --models: {problem}: {model[:MAX_MODEL_ID_CHARS]!r}", file=sys.stderr)
            return ExitCode.USAGE
    from ..shared._state_dir import checked_state_dir

    try:
        state_dir = checked_state_dir(args.state_dir)
    except SteerableError as exc:
        print(f"steerable acp: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    from ..shared._signals import run_until_signalled  # SIGTERM, SIGHUP, SIGINT (REC-4, SAFE-2)

    return run_until_signalled(lambda shutdown: _serve(args, state_dir, provider, shutdown))


def _load(args: argparse.Namespace, state_dir: Path, provider: LLMProvider | None) -> AcpSetup:
    """The slow part of start-up (the SDK's import, the model's configuration): a worker thread."""
    from steerable_agent_runtime import DEFAULT_MAX_ROUNDS

    from ..shared._lean_imports import import_acp_sdk, import_httpx

    # before the agent and provider modules import them: the SDK's models built at their first
    # use, httpx without its command-line client (start-up: benchmarks/startup.py)
    import_acp_sdk()
    import_httpx()
    from ..mcp_sources._config import known_credentials
    from ._agent import AcpOptions

    options = AcpOptions(
        state_dir=state_dir,
        harness=args.harness,
        plugins=not args.no_plugins,
        web_tools=not args.no_web_tools,
        allow_protected_writes=args.allow_protected_writes,
        max_rounds=args.max_rounds or DEFAULT_MAX_ROUNDS,
        model_timeout_ms=args.model_timeout_ms,
        system=args.system,
        models=(*model_ids(args.models), *harbor_model(os.environ)),
        consent=consent_of(args, os.environ),  # checked by run_acp
        context_window=args.context_window,
        editor_terminal=args.editor_terminal,
        secrets=known_credentials(os.environ),  # kept out of a running call's output, as steerable mcp does
    )
    if provider is not None:
        return AcpSetup(options, provider, None)
    from ..providers._openai import LLMConfig, default_llm_provider

    try:
        config = LLMConfig.from_env()
        options = replace(
            options, model=config.model, secrets=options.secrets.adding(_model_credentials(config))
        )
        return AcpSetup(options, default_llm_provider(config), None)
    except SteerableError as exc:  # said to the client at session/new, and here on stderr
        from ..config._file import with_origins

        said = with_origins(str(exc), args.setting_origins)  # a value from the configuration file
        print(f"steerable acp: {said}", file=sys.stderr)
        return AcpSetup(options, None, said)


def _model_credentials(config: LLMConfig) -> list[str]:
    """The model's key and the credentials in its extra headers (``Authorization: Bearer X``)."""
    from ..shared._secrets import credential_arguments

    key = [config.api_key.get_secret_value()] if config.api_key is not None else []
    return [*key, *credential_arguments([f"{name}: {value}" for name, value in config.extra_headers.items()])]


async def _serve(
    args: argparse.Namespace, state_dir: Path, provider: LLMProvider | None, shutdown: Shutdown
) -> int:
    from ..rpc._peer import open_stdio_streams

    reader, writer = await open_stdio_streams()  # first: a print() from here on lands on stderr
    return await serve_streams(reader, writer, lambda: _load(args, state_dir, provider), shutdown)


async def serve_streams(
    reader: asyncio.StreamReader,
    writer: LineWriter,
    load: Callable[[], AcpSetup],
    shutdown: Shutdown | None = None,
) -> int:
    """Serve ACP on a pair of line streams until the client leaves (what ``steerable acp`` runs).

    Args:
        reader: The client's messages.
        writer: Where the agent's messages go.
        load: Builds the setup; run in a worker thread while ``initialize`` is answered.
        shutdown: Set by a signal: every turn is stopped and recorded, each request in flight
            answered as interrupted, and serving ends (REC-4).

    Returns:
        0.
    """
    import asyncio

    from ._wire import LineTransport

    transport = LineTransport(reader, writer)
    agents: list[SteerableAcpAgent] = []  # the agent, once the client is greeted and the SDK loaded
    serving = asyncio.ensure_future(_serve_transport(transport, load, agents))
    if shutdown is None:
        return await serving
    signalled = asyncio.ensure_future(shutdown.wait())
    try:
        await asyncio.wait({serving, signalled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        signalled.cancel()
    if serving.done():
        return serving.result()
    from ..shared._signals import INTERRUPT_DRAIN_S

    message, data = shutdown.interrupted_message(), shutdown.interrupted_data()
    for agent in agents:
        agent.interrupt(shutdown.reason, message, data)
    await transport.interrupt(message, data, drain_s=INTERRUPT_DRAIN_S)
    serving.cancel()  # the SDK stops reading; serve_acp closes every session
    await asyncio.wait({serving})
    return ExitCode.OK


async def _serve_transport(
    transport: LineTransport, load: Callable[[], AcpSetup], agents: list[SteerableAcpAgent]
) -> int:
    import asyncio

    from ._wire import early_initialize

    loading = asyncio.ensure_future(asyncio.to_thread(load))
    hello = await early_initialize(transport)
    if hello is None:  # the client left without a word
        loading.cancel()
        return ExitCode.OK
    setup = await loading
    from ._agent import SteerableAcpAgent, serve_acp

    agent = SteerableAcpAgent(
        setup.options,
        provider=setup.provider,
        provider_error=setup.provider_error,
        hello=hello if isinstance(hello, dict) else None,
    )
    agents.append(agent)
    await serve_acp(agent, transport)
    return ExitCode.OK
