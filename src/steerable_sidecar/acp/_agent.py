"""``steerable acp``: steerable as an Agent Client Protocol agent, for Zed, JetBrains and others.

:class:`SteerableAcpAgent` implements the ACP SDK's ``Agent`` (``agent-client-protocol``,
imported as ``acp``): ``session/new`` boots the workspace tools for the client's ``cwd``
(confined as everywhere) and starts the MCP servers it names as deferred tools; ``session/prompt``
runs the agent loop (:mod:`steerable_sidecar.shared._assembly`, the one session assembly) and streams
what happens as ``session/update``s; ``session/cancel`` stops the turn; ``session/load`` replays a
durable record and re-seeds the read state from it; ``session/list`` lists the recorded ones
(:mod:`steerable_sidecar.acp._listing`). ``session/set_mode`` (or the ``mode`` config option)
picks the session's consent policy (:mod:`steerable_sidecar.acp._modes`), the ``model`` config
option its model (:mod:`steerable_sidecar.acp._models`); ``/mode``, ``/model`` and ``/tools`` are
slash commands (:mod:`steerable_sidecar.acp._slash_commands`). Each ``session/prompt`` answer carries the
turn's token usage, and a ``usage_update`` the context's size when it is known. Sessions are
recorded under the state directory, as ``steerable run`` records them. How a client registers
it: docs/acp.md.

:func:`serve_acp` runs an agent over a :class:`~steerable_sidecar.acp._wire.LineTransport`
until the client leaves; ``steerable acp`` (:mod:`steerable_sidecar.acp._command`) is the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, cast

from acp import RequestError, helpers, run_agent
from acp.interfaces import Agent, Client
from acp.schema import (
    AudioContentBlock,
    ClientCapabilities,
    ConfigOptionUpdate,
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpServerStdio,
    NewSessionResponse,
    PromptResponse,
    ResourceContentBlock,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionInfoUpdate,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    StopReason,
    TextContentBlock,
    UsageUpdate,
)

from steerable_agent_runtime import DEFAULT_MAX_ROUNDS, RunOutcome
from steerable_agent_runtime.errors import SteerableError
from steerable_agent_runtime.llm import LLMProvider
from steerable_agent_runtime.loop import RunSummary
from steerable_agent_runtime.modes import DEFAULT_CONSENT_POLICY, ConsentPolicy
from steerable_agent_runtime.record import DurableRecord
from steerable_agent_runtime.types import new_call_id

from .._boot import boot_tools
from ..shared._assembly import LoopOptions, Transport, assemble_loop, open_session
from ..shared._secrets import Redactor
from ..shared._session_lock import SessionLocks
from ..shared._state_dir import environ_with_state_dir
from ._choices import CHOICE_ENTRY, choice_entry, recorded_choice
from ._inputs import mcp_configs, prompt_text, session_workspace
from ._listing import SESSION_ENTRY, list_recorded, session_entry, title_of
from ._models import DEFAULT_MODEL_ID, chosen_model, model_option, offered_models, turn_usage
from ._modes import MODE_OPTION_ID, chosen_mode, mode_option, mode_state, offered_modes
from ._session import AcpSession
from ._slash_commands import (
    SlashCommand,
    available_commands,
    mode_text,
    model_text,
    slash_command,
    tools_text,
)
from ._wire import LineTransport, initialize_result

__all__ = ["ACP_SYSTEM_PROMPT", "STOP_REASONS", "AcpOptions", "SteerableAcpAgent", "serve_acp", "stop_reason"]

logger = logging.getLogger(__name__)

ACP_SYSTEM_PROMPT: Final = (
    "You are a coding agent working in the user's project at {cwd}, driven from their editor. Use "
    "the tools to inspect and change files there; paths are relative to it. Read a file before you "
    "change it. For a task of several steps keep a plan with update_plan. When the task is done, "
    "answer with a short summary and call no more tools."
)

STOP_REASONS: Final[Mapping[RunOutcome, StopReason]] = {
    RunOutcome.COMPLETED: "end_turn",
    RunOutcome.TERMINAL: "end_turn",
    RunOutcome.EMPTY_ANSWER: "end_turn",
    RunOutcome.MAX_ROUNDS: "max_turn_requests",
    RunOutcome.CANCELLED: "cancelled",
    RunOutcome.REFUSED: "refusal",
}
"""The ACP stop reason of each outcome; ``incomplete`` depends on why, ``error`` is a JSON-RPC error."""

_REFUSAL_FINISHES: Final = frozenset({"content_filter", "sensitive"})
CLOSE_TIMEOUT_S: Final = 10.0
"""How long closing a session waits for its turn and its MCP servers before the agent goes on."""


def stop_reason(summary: RunSummary) -> StopReason:
    """The ``session/prompt`` stop reason of a finished run (docs/acp.md, "Stop reasons").

    Raises:
        RequestError: The provider failed (``error``): ``-32603`` with the provider's message.
    """
    if summary.outcome is RunOutcome.ERROR:
        raise RequestError(
            -32603, f"the model failed: {summary.error}", {"outcome": "error", "error": summary.error}
        )
    if summary.outcome is RunOutcome.INCOMPLETE:
        return "refusal" if summary.finish_reason in _REFUSAL_FINISHES else "max_tokens"
    return STOP_REASONS[summary.outcome]


@dataclass(frozen=True, slots=True)
class AcpOptions:
    """How ``steerable acp`` runs its sessions (from its command line).

    Attributes:
        state_dir: Where session records go (``<state_dir>/sessions/<id>.jsonl``).
        harness: The offered tools: ``full``, ``minimal`` or ``progressive``.
        plugins: Load plugins.
        web_tools: Offer ``web_search`` / ``web_fetch``.
        allow_protected_writes: Let the tools write protected paths (``None``: the environment's).
        max_rounds: Model calls per prompt at most.
        model_timeout_ms: Deadline of one model call, in milliseconds (``None``: none).
        system: The system prompt (``{cwd}`` is replaced); default :data:`ACP_SYSTEM_PROMPT`.
        max_live_sessions: Sessions kept booted at once (each holds its tools and MCP servers);
            past it the least recently used idle one is closed, and booted again (its read state
            re-seeded from its record) when the editor next uses it.
        model: The configured model (``STEERABLE_MODEL``), each session's to begin with
            (``None``: the provider's own name for it, else ``"default"``).
        models: More models offered to the editor (``--models``); any other id is taken too.
        consent: Each session's first mode (``STEERABLE_CONSENT``, ``--consent``).
        context_window: The model's context, in tokens (``--context-window``): each turn then
            ends with a ``usage_update`` (``None``: unknown, none is sent).
        editor_terminal: Run ``bash`` in the editor's terminal when it offers terminals
            (``--editor-terminal``; sandboxed the same way: docs/acp.md, "Terminals").
        secrets: Credentials never shown in a running call's output (the model's key, the
            environment's); each session adds its MCP servers'.
    """

    state_dir: Path
    harness: str = "full"
    plugins: bool = True
    web_tools: bool = True
    allow_protected_writes: bool | None = None
    max_rounds: int = DEFAULT_MAX_ROUNDS
    model_timeout_ms: int | None = 600_000
    system: str | None = None
    max_live_sessions: int = 16
    model: str | None = None
    models: tuple[str, ...] = ()
    consent: ConsentPolicy = DEFAULT_CONSENT_POLICY
    context_window: int | None = None
    editor_terminal: bool = False
    secrets: Redactor = field(default=Redactor(), repr=False)


_McpServer = HttpMcpServer | SseMcpServer | McpServerStdio


@dataclass(frozen=True, slots=True)
class _Parked:
    """How to boot a closed idle session again: its folder, its MCP servers, its "always" choices."""

    cwd: str
    servers: tuple[_McpServer, ...]
    always: frozenset[str]
    hosts: frozenset[str] = frozenset()  # the hosts web_fetch was allowed to reach (SAFE-4)
    model: str | None = None  # the model picked for it (session/set_config_option)
    policy: ConsentPolicy = DEFAULT_CONSENT_POLICY  # its mode (session/set_mode)


class SteerableAcpAgent:
    """The ACP ``Agent`` (see the module docstring).

    Args:
        options: How sessions run.
        provider: The model; ``None`` with ``provider_error`` set when its configuration is bad
            (every ``session/new`` is then answered with that error, naming the variable).
        provider_error: Why there is no provider.
        hello: The ``initialize`` params when the command answered ``initialize`` itself.
    """

    def __init__(
        self,
        options: AcpOptions,
        *,
        provider: LLMProvider | None,
        provider_error: str | None = None,
        hello: Mapping[str, Any] | None = None,
    ) -> None:
        self.options = options
        self.provider = provider
        self.provider_error = provider_error
        self.sessions: dict[str, AcpSession] = {}
        """The live sessions, least recently used first."""
        self._locks = SessionLocks(options.state_dir / "sessions")
        self._parked: dict[str, _Parked] = {}
        self._opening: dict[str, asyncio.Lock] = {}  # one load or reboot of an id at a time
        # session/cancel count per id: a prompt that saw an older count when it came stops
        self._cancels: dict[str, int] = {}
        self._interrupted: tuple[str, dict[str, Any]] | None = None  # a signal: the prompts' error (REC-4)
        self.capabilities = _capabilities(hello.get("clientCapabilities") if hello else None)
        self._client: Client | None = None
        self._background: set[asyncio.Task[None]] = set()  # notifications sent after an answer
        self.default_model = options.model or _provider_model(provider) or DEFAULT_MODEL_ID
        """The model each session starts with: its prompts go to the provider as configured."""
        self.models = offered_models(self.default_model, options.models)
        """The ``model`` option's choices: the default first."""
        self.modes = offered_modes(options.consent)
        """The session modes offered: the named consent policies (and ``--consent``'s, when not one)."""

    def on_connect(self, conn: Client) -> None:
        """The SDK hands over the connection to the client."""
        self._client = conn

    @property
    def client(self) -> Client:
        """The connection to the client (set by the SDK before the first request)."""
        if self._client is None:
            raise RequestError.internal_error({"details": "not connected"})
        return self._client

    # -- lifecycle -------------------------------------------------------------------------------
    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """Answer ``initialize`` (when the command did not answer it early)."""
        self.capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse.model_validate(initialize_result({"protocolVersion": protocol_version}))

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[HttpMcpServer | SseMcpServer | McpServerStdio] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        """Open a session on the workspace ``cwd`` with the client's MCP servers.

        Raises:
            RequestError: ``-32602`` for a ``cwd`` that is not an absolute directory or is ``/`` or
                a home folder, or an MCP server that is not stdio; ``-32603`` when the model's
                configuration, the tools or an MCP server fail (the message says which).
        """
        session = await self._open(new_call_id(), cwd, mcp_servers or [])
        session.policy = self.options.consent
        await self._register(session)
        self._announce_commands(session)
        return NewSessionResponse(
            session_id=session.id,
            modes=mode_state(session.policy, self.modes),
            config_options=self._options(session),
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[HttpMcpServer | SseMcpServer | McpServerStdio] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """Reopen a recorded session: replay its history to the client, re-seed its read state.

        Raises:
            RequestError: ``-32002`` (resource not found) for a session with no record;
                ``-32600`` while a turn of it runs here, or when another process has it open;
                the errors of :meth:`new_session`.
        """
        try:
            opened = await open_session(self.options.state_dir, session_id)
        except SteerableError as exc:  # not a safe file name: no such session
            raise RequestError.resource_not_found(session_id) from exc
        if not opened.history and not opened.record.exists():
            raise RequestError.resource_not_found(session_id)
        async with self._opening.setdefault(session_id, asyncio.Lock()):
            self._refuse_if_busy(session_id)
            # the new session is opened first: a bad cwd or MCP server leaves the live one as it was
            session = await self._open(session_id, cwd, mcp_servers or [])
            try:
                self._refuse_if_busy(session_id)  # a prompt may have started a turn meanwhile
            except RequestError:
                await session.aclose()
                raise
            # spec: File tools, "the ACP adapter seeds its session on hydration": its first turn
            # seeds the read state from the record, through the assembly (assemble_loop)
            session.reseed = True
            old = self.sessions.pop(session_id, None)
            parked = self._parked.pop(session_id, None)
            kept: AcpSession | _Parked | None = old if old is not None else parked
            if kept is not None:
                session.model, session.policy = kept.model, kept.policy
            else:  # as it was left in another process (its record's last choice)
                recorded = await recorded_choice(opened.record, self.modes, self.models)
                session.model, session.policy = recorded.model, recorded.policy or self.options.consent
            if old is not None:
                await old.aclose()
            await self._register(session)
        await session.replay(opened.history)
        self._announce_commands(session)
        return LoadSessionResponse(
            modes=mode_state(session.policy, self.modes), config_options=self._options(session)
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """``session/list``: the recorded editor sessions (of ``cwd`` when given), newest first.

        Raises:
            RequestError: ``-32602`` for a relative ``cwd`` or a cursor this agent did not give.
        """
        return await list_recorded(self.options.state_dir / "sessions", cwd, cursor)

    def _announce_commands(self, session: AcpSession) -> None:
        """Send the slash commands once the answer is out (a client learns of the session first)."""

        async def announce() -> None:
            await asyncio.sleep(0)
            await session.send(helpers.update_available_commands(available_commands()))

        task = asyncio.get_running_loop().create_task(announce(), name=f"acp-commands-{session.id}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _refuse_if_busy(self, session_id: str) -> None:
        live = self.sessions.get(session_id)
        if live is not None and not self._unused(live):
            raise RequestError.invalid_request(
                {"sessionId": session_id, "reason": "a turn is running: cancel it (session/cancel) first"}
            )

    async def _open(
        self,
        session_id: str,
        cwd: str,
        servers: Sequence[HttpMcpServer | SseMcpServer | McpServerStdio],
    ) -> AcpSession:
        """Boot a session on ``cwd`` (not live yet: the caller registers it) with its lock taken."""
        if self.provider is None:
            raise RequestError(-32603, self.provider_error or "no model is configured", None)
        root = session_workspace(cwd, self.options.state_dir)
        configs = mcp_configs(servers)
        acquired = not self._locks.holds(session_id)
        try:
            holder = await self._locks.take(session_id)
        except SteerableError as exc:  # the lock file cannot be opened (a read-only state directory)
            raise RequestError(-32603, str(exc), {"sessionId": session_id}) from exc
        if holder is not None:  # REC-3: another process (a run, a sidecar chat, an editor) has it
            raise RequestError.invalid_request(
                {"sessionId": session_id, "reason": holder.message(), "pid": holder.pid}
            )
        try:
            return await self._boot(session_id, root, configs, servers)
        except BaseException:
            if acquired:  # taken for this boot alone: nobody else here holds it
                self._locks.release(session_id)
            raise

    async def _boot(
        self,
        session_id: str,
        root: Path,
        configs: Sequence[Any],
        servers: Sequence[HttpMcpServer | SseMcpServer | McpServerStdio],
    ) -> AcpSession:
        stack = contextlib.AsyncExitStack()
        try:
            booted = await asyncio.to_thread(
                boot_tools,
                root,
                allow_protected_writes=self.options.allow_protected_writes,
                harness=self.options.harness,
                plugins=self.options.plugins,
                web_tools=self.options.web_tools,
                environ=environ_with_state_dir(self.options.state_dir),  # commands may not read it (SAFE-3)
            )
        except SteerableError as exc:
            raise RequestError(-32603, f"the tools could not start: {exc}", None) from exc
        stack.push_async_callback(booted.aclose)
        try:
            if configs:
                from ..mcp_sources._sources import MAX_RESULT_BYTES, McpToolSources

                sources = McpToolSources(booted.router, configs, max_result_bytes=MAX_RESULT_BYTES.read())
                await stack.enter_async_context(sources)
        except Exception as exc:
            await stack.aclose()
            raise RequestError(-32603, f"an MCP server could not start: {exc}", None) from exc
        return AcpSession(
            session_id,
            root,
            booted,
            stack,
            self.client,
            self.capabilities,
            servers=tuple(servers),
            editor_terminal=self.options.editor_terminal,
            secrets=self.options.secrets,
        )

    async def _register(self, session: AcpSession) -> None:
        """Make ``session`` live (the most recently used); park idle ones past the limit."""
        self.sessions[session.id] = session
        await self._park_idle(keep=session.id)

    async def _park_idle(self, *, keep: str) -> None:
        """Close the least recently used idle sessions past ``max_live_sessions`` (never ``keep``).

        Idle: no turn running, none about to start (a prompt pins its session from the lookup to
        its turn), no load or reboot of its id under way. The close and the lock's release hold
        the id's opening lock, so a reboot of it waits for both and takes the lock afresh.
        """
        while len(self.sessions) > max(self.options.max_live_sessions, 1):
            idle = next((s for s in self.sessions.values() if s.id != keep and self._idle(s)), None)
            if idle is None:
                return  # every one is busy: none to close
            async with self._opening.setdefault(idle.id, asyncio.Lock()):  # may wait: a waiter goes first
                if self.sessions.get(idle.id) is not idle or not self._unused(idle):
                    continue  # replaced, closed or taken while this waited: look again
                del self.sessions[idle.id]
                self._parked[idle.id] = _Parked(
                    str(idle.root),
                    idle.servers,
                    frozenset(idle.always),
                    idle.fetch_consent.allowed,
                    idle.model,
                    idle.policy,
                )
                await idle.aclose()
                self._locks.release(idle.id)  # taken again when it boots again (another process may have it)

    def _idle(self, session: AcpSession) -> bool:
        opening = self._opening.get(session.id)
        return self._unused(session) and (opening is None or not opening.locked())

    @staticmethod
    def _unused(session: AcpSession) -> bool:
        """No turn running and none about to start (no prompt holds a pin)."""
        return not session.running and session.pins == 0

    def _known(self, session_id: str) -> bool:
        """Whether ``session_id`` is live, parked, or being loaded or booted again here."""
        opening = self._opening.get(session_id)
        return session_id in self.sessions or session_id in self._parked or bool(opening and opening.locked())

    async def _session(self, session_id: str) -> AcpSession:
        """The live session ``session_id`` (a parked one booted again), now the most recently used.

        The session comes back pinned (``pins``): the caller unpins it once its turn is set.
        """
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self.sessions[session_id] = session
            session.pins += 1
            return session
        if not self._known(session_id):
            raise RequestError.resource_not_found(session_id)
        async with self._opening.setdefault(session_id, asyncio.Lock()):
            if session_id in self.sessions:  # booted again meanwhile, by a prompt before this one
                session = self.sessions[session_id]
                session.pins += 1
                return session
            parked = self._parked.pop(session_id, None)
            if parked is None:
                raise RequestError.resource_not_found(session_id)
            try:
                session = await self._open(session_id, parked.cwd, parked.servers)
            except BaseException:
                self._parked[session_id] = parked  # the same error next time, and back once it is fixed
                raise
            session.pins = 1  # the caller's: not parked again before its turn starts
            session.reseed = True  # its next turn seeds the read state from the record
            session.always.update(parked.always)
            session.fetch_consent.restore(parked.hosts)
            session.model = parked.model
            session.policy = parked.policy
            await self._register(session)
        return session

    # -- a turn ----------------------------------------------------------------------------------
    async def prompt(
        self,
        prompt: list[
            TextContentBlock
            | ImageContentBlock
            | AudioContentBlock
            | ResourceContentBlock
            | EmbeddedResourceContentBlock
        ],
        session_id: str,
        **kwargs: Any,
    ) -> PromptResponse:
        """Run one turn of the agent loop on ``prompt``; stream it; answer how it stopped.

        Raises:
            RequestError: ``-32002`` for an unknown session; ``-32600`` while another turn of the
                session runs (ACP v1 has one turn at a time: cancel it first); ``-32602`` for an
                image or audio block; ``-32603`` when the model failed.
        """
        cancels = self._cancels.get(session_id, 0)  # before any await: a cancel from now on stops it
        session = await self._session(session_id)  # pinned: not parked before its turn is set
        try:
            text = prompt_text(prompt)
            if not text.strip():
                raise RequestError.invalid_params({"prompt": "empty", "reason": "the prompt has no text"})
            command = slash_command(text)
            if command is not None:
                await self._command(session, command)
                return PromptResponse(stop_reason="end_turn")
            if session.turn is not None and session.running and session.cancelling:
                await asyncio.wait(
                    {session.turn}, timeout=CLOSE_TIMEOUT_S
                )  # a cancelled turn winds down first
            if self._cancels.get(session_id, 0) != cancels:  # cancelled while it waited to start
                return PromptResponse(stop_reason="cancelled")
            if session.running:
                raise RequestError.invalid_request(
                    {
                        "sessionId": session_id,
                        "reason": "a turn is already running: cancel it (session/cancel) first",
                    }
                )
            # the turn is the session's from here, before any await: a second prompt is refused
            # and a cancel reaches it even while its loop is still being assembled
            turn = asyncio.ensure_future(self._turn(session, text))
            session.turn, session.loop, session.cancelling = turn, None, False
        finally:
            session.pins -= 1
        try:
            summary: RunSummary = await asyncio.shield(turn)
        except OSError as exc:  # the record could not be read or written (a full disk): the turn stopped
            raise RequestError(
                -32603,
                f"the session's record could not be read or written: {exc.strerror or exc}",
                {"sessionId": session_id, "path": str(exc.filename or "")},
            ) from exc
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if turn.cancelled() and task is not None and not task.cancelling():
                if self._interrupted is not None:  # a signal, before the turn's loop ran (REC-4)
                    raise RequestError(-32603, *self._interrupted) from None
                return PromptResponse(stop_reason="cancelled")  # cancelled before its loop ran
            session.stop()  # the connection closed: stop the turn, keep the record whole
            with contextlib.suppress(BaseException):
                await turn
            raise
        finally:
            await session.close_open_calls()
        if self._interrupted is not None:  # a signal stopped the turn (REC-4): recorded, then said
            raise RequestError(-32603, *self._interrupted)
        reason = stop_reason(summary)
        if self.options.context_window is not None and session.context_tokens:
            await session.send(
                UsageUpdate(
                    session_update="usage_update",
                    used=session.context_tokens,
                    size=self.options.context_window,
                )
            )
        return PromptResponse(stop_reason=reason, usage=turn_usage(summary.usage))

    async def _turn(self, session: AcpSession, text: str) -> RunSummary:
        """Assemble the turn's loop over the session's record (read again: it grew) and run it."""
        assert self.provider is not None  # a session exists only with a provider
        opened = await open_session(self.options.state_dir, session.id)
        loop = await assemble_loop(
            opened,
            self.provider,
            session.booted.router,
            transport=Transport(
                approve=session.approve,
                on_event=session.on_event,
                wrap=session.wrap,
                read_state=session.booted.workspace.state.seed if session.reseed else None,
                questions=session.fetch_consent,  # SAFE-4: a new host's first web_fetch asks
                consent=session.consent_policy,  # the session's mode, read before each call
            ),
            offered=session.booted.harness.offered,
            options=LoopOptions(
                max_rounds=self.options.max_rounds,
                model=session.model,  # None: the provider's configured model
                model_timeout_ms=self.options.model_timeout_ms,
            ),
        )
        session.loop, session.reseed, session.context_tokens = loop, False, 0  # counted anew each turn
        if not opened.history:  # a new session's record opens with its folder and title (session/list)
            title = title_of(text)
            await opened.record.append(
                entries=[
                    (SESSION_ENTRY, session_entry(session.root, title)),
                    (CHOICE_ENTRY, choice_entry(session.policy, session.model)),  # picks made before it
                ]
            )
            await session.send(SessionInfoUpdate(session_update="session_info_update", title=title))
        system = (self.options.system or ACP_SYSTEM_PROMPT).replace("{cwd}", str(session.root))
        return await loop.run(opened.history, opened.opening(system, [{"role": "user", "content": text}]))

    # -- the model -------------------------------------------------------------------------------
    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """``session/set_config_option``: pick the session's model or mode.

        A model holds from the session's next prompt (a turn already running keeps its model);
        a mode from its next tool call, the running turn's included. A session closed while idle
        keeps the choice and takes it back when it boots again; so does one loaded again in
        this process. A mode picked here is also sent as a ``current_mode_update``.

        Raises:
            RequestError: ``-32002`` for an unknown session; ``-32602`` for an option other than
                ``model`` and ``mode``, a bad model id
                (:func:`~steerable_sidecar.acp._models.chosen_model`) or an unknown mode.
        """
        if not self._known(session_id):
            raise RequestError.resource_not_found(session_id)
        if config_id == MODE_OPTION_ID:
            policy = chosen_mode(value, self.modes, config_id=config_id)
            await self._tell(await self._choose(session_id, policy=policy), mode=True)
        else:
            chosen = chosen_model(config_id, value, self.models)
            model = None if chosen == self.default_model else chosen
            await self._choose(session_id, model=model)
        return SetSessionConfigOptionResponse(config_options=self._options(session_id))

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
        """``session/set_mode``: pick the session's consent policy, from its next tool call on.

        Raises:
            RequestError: ``-32002`` for an unknown session; ``-32602`` for an unknown mode
                (``data.reason`` lists the session's modes).
        """
        if not self._known(session_id):
            raise RequestError.resource_not_found(session_id)
        await self._tell(
            await self._choose(session_id, policy=chosen_mode(mode_id, self.modes)), options=True
        )
        return SetSessionModeResponse()

    async def _tell(self, session: AcpSession | None, *, mode: bool = False, options: bool = False) -> None:
        """Tell the client of a choice made otherwise (``current_mode_update``, ``config_option_update``)."""
        if session is not None and mode:
            await session.send(helpers.update_current_mode(session.policy.name))
        if session is not None and options:
            update = ConfigOptionUpdate(
                session_update="config_option_update", config_options=self._options(session)
            )
            await session.send(update)

    async def _choose(self, session_id: str, **changes: Any) -> AcpSession | None:
        """Set a live or parked session's ``model`` and/or ``policy``; the live session, if it is one.

        Raises:
            RequestError: ``-32002`` when the session was closed meanwhile.
        """
        async with self._opening.setdefault(session_id, asyncio.Lock()):  # not while it is (re)booted
            live = self.sessions.get(session_id)
            if live is not None:
                for name, value in changes.items():
                    setattr(live, name, value)
                chosen: AcpSession | _Parked = live
            elif (parked := self._parked.get(session_id)) is not None:
                chosen = self._parked[session_id] = replace(parked, **changes)
            else:  # closed meanwhile
                raise RequestError.resource_not_found(session_id)
            record = DurableRecord.for_session(self.options.state_dir / "sessions", session_id)
            if record.exists():  # else its first prompt writes it, after the session entry
                await record.append_entry(CHOICE_ENTRY, choice_entry(chosen.policy, chosen.model))
            return live

    def _options(
        self, session: AcpSession | str
    ) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        """A session's config options: its model and its mode (a parked one's as it was left)."""
        if isinstance(session, str):
            live = self.sessions.get(session)
            parked = self._parked.get(session)
            chosen = live if live is not None else parked
            model = chosen.model if chosen is not None else None
            policy = chosen.policy if chosen is not None else self.options.consent
        else:
            model, policy = session.model, session.policy
        return [
            model_option(model or self.default_model, self.models, self.default_model),
            mode_option(policy, self.modes),
        ]

    async def _command(self, session: AcpSession, command: SlashCommand) -> None:
        """Answer a slash command (``/mode``, ``/model``, ``/tools``) as the agent's message."""
        answer = ""
        try:
            if command.name == "mode" and command.argument:
                await self._choose(session.id, policy=chosen_mode(command.argument, self.modes))
                await self._tell(session, mode=True, options=True)
            elif command.name == "model" and command.argument:
                chosen = chosen_model("model", command.argument, self.models)
                await self._choose(session.id, model=None if chosen == self.default_model else chosen)
                await self._tell(session, options=True)
        except RequestError as exc:  # a name it does not know: said, and nothing changed
            answer = f"{exc.data.get('reason', exc) if isinstance(exc.data, dict) else exc}\n"
        if command.name == "tools":
            answer = tools_text(session)
        elif command.name == "mode":
            answer += mode_text(session.policy, self.modes)
        else:
            answer += model_text(session.model or self.default_model, self.models)
        await session.send(helpers.update_agent_message_text(answer))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """``session/cancel``: stop the session's turn; its ``session/prompt`` answers ``cancelled``."""
        if not self._known(session_id):
            return  # nothing to stop (and nothing kept: an editor may send any id)
        self._cancels[session_id] = self._cancels.get(session_id, 0) + 1  # a prompt still on its way too
        session = self.sessions.get(session_id)
        if session is not None:
            session.stop()

    def interrupt(self, reason: str, message: str, data: dict[str, Any]) -> None:
        """A signal is ending the process (REC-4): stop every turn, its calls recorded as interrupted.

        Each ``session/prompt`` in flight is then answered ``-32603`` with ``message`` and
        ``data``, once its turn has recorded the calls it had running and its end.
        """
        self._interrupted = (message, data)
        for session in list(self.sessions.values()):
            session.stop(reason)

    async def aclose(self) -> None:
        """Stop every turn (each recorded as cancelled) and close every session."""
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            try:
                await asyncio.wait_for(session.aclose(), CLOSE_TIMEOUT_S)
            except TimeoutError:  # a tool or an MCP server that ignores its cancel: go all the same
                logger.error("session %s did not close within %.0f s", session.id, CLOSE_TIMEOUT_S)
            except Exception:
                logger.exception("session %s did not close cleanly", session.id)
        self._locks.release_all()


def _provider_model(provider: LLMProvider | None) -> str | None:
    """The model an injected provider is configured with (an OpenAI-compatible one's ``config.model``)."""
    if provider is None:
        return None
    from ..providers._openai import OpenAICompatibleProvider  # loaded by then when it is one

    if not isinstance(provider, OpenAICompatibleProvider):
        return None
    model = provider.config.model
    return model or None


def _capabilities(raw: Any) -> ClientCapabilities:
    try:
        return ClientCapabilities.model_validate(raw or {})
    except ValueError:
        return ClientCapabilities()


async def serve_acp(agent: SteerableAcpAgent, transport: LineTransport) -> None:
    """Serve ``agent`` to the client on ``transport`` until it leaves, then close every session."""
    try:
        # the SDK's Agent protocol lists every optional method; the router answers the missing
        # ones (session/list, session/set_mode, ...) with "method not found"
        await run_agent(cast("Agent", agent), transport, use_unstable_protocol=True)
    finally:
        await agent.aclose()
