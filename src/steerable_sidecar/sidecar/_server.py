"""The sidecar: the workspace tools and the agent loop served to a host over JSON-RPC 2.0 on stdio.

Spec: every mention of the sidecar and the host (``tool.invoke``, ``tool.list``, ``toolsViaHost``,
``ask_user.request``, ``read_state.seed``). One sidecar process serves one session of one host.
The protocol (methods, params, results, reverse calls, error codes) is in
``docs/sidecar-protocol.md``; :data:`PROTOCOL_VERSION` changes when it breaks.

Host -> sidecar requests: ``system.ping``, ``system.shutdown``, ``tool.list``, ``tool.invoke``,
``agent.chat.stream``, ``agent.chat.cancel``, ``plugin.list``, ``plugin.enable``,
``plugin.disable``, ``plugin.reload``, ``plugin.unload``. Sidecar -> host requests: ``tool.invoke`` (under
``toolsViaHost``), ``ask_user.request``, ``read_state.seed``, ``approval.request``. Sidecar -> host
notifications: ``lifecycle.ready`` (once, at boot) and ``agent.chat.event`` (progress of a chat).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, Protocol, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

import steerable_agent_runtime
from steerable_agent_runtime import (
    CallContext,
    PeerClosedError,
    RemoteError,
    ToolCall,
    ToolErrorCode,
    ToolMode,
    ToolResult,
    ToolRouter,
    UserError,
    Workspace,
    new_call_id,
)
from steerable_agent_runtime.ask_user import AskUserQuestionsPayload, make_ask_user_tool
from steerable_agent_runtime.errors import ConfigError
from steerable_agent_runtime.executor import (
    ApprovalGate,
    ApprovalHandler,
    ConsentQuestion,
    ConsentQuestions,
    approve_all,
    mode_lookup,
)
from steerable_agent_runtime.harness import AssembledHarness
from steerable_agent_runtime.llm import LLMProvider, Message
from steerable_agent_runtime.loop import DEFAULT_MAX_ROUNDS, AgentLoop, LoopEvent, RunOutcome, RunSummary
from steerable_agent_runtime.modes import CONSENT_ENV, DEFAULT_CONSENT_POLICY, ConsentPolicy, consent_policy
from steerable_agent_runtime.plugins import PluginInfo, PluginRegistry
from steerable_agent_runtime.record import valid_session_id
from steerable_agent_runtime.tool_search import is_tool_search
from steerable_agent_runtime.tools import Tool
from steerable_agent_runtime.trace import TraceSpan

from .._boot import Booted, boot_tools
from ..rpc._peer import InvalidParams, JsonRpcPeer
from ..rpc._wrong_protocol import sidecar_hint
from ..shared._assembly import LoopOptions, Transport, assemble_loop, open_session
from ..shared._session_lock import SessionLocks
from ..shared._signals import INTERRUPT_DRAIN_S
from ._host_tools import register_host_tools

if TYPE_CHECKING:
    from ..shared._signals import Shutdown
    from ..web_tools import FetchConsent
    from .protocol import (
        ApprovalRequestParams,
        AskUserRequestParams,
        CancelResult,
        ChatEvent,
        ChatEventParams,
        ChatSummary,
        HostInvokeParams,
        PingResult,
        PluginInfoWire,
        PluginListResult,
        PluginResult,
        ReadStateSeedParams,
        ReadyParams,
        RunSummaryWire,
        ShutdownResult,
        ToolDescriptor,
        ToolListResult,
    )

__all__ = ["PROTOCOL_VERSION", "Sidecar", "SidecarConfig", "boot_for"]

PROTOCOL_VERSION: Final = 1
"""The sidecar protocol version sent in ``lifecycle.ready``."""

SHUTDOWN_DRAIN_S: Final = 5.0
"""After ``system.shutdown``, seconds the calls already running get to write their answers."""

HOST_CALL_TIMEOUT_S: Final = 600.0
"""Longest wait for a reverse call (``approval.request``, ``read_state.seed``), in seconds."""

logger = logging.getLogger(__name__)


@runtime_checkable
class _Closable(Protocol):
    """A provider that owns an HTTP client (``OpenAICompatibleProvider``); the protocol does not ask it."""

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class SidecarConfig:
    """How one sidecar process is set up; an immutable value (``dataclasses.replace`` for a variant).

    Attributes:
        workspace: The workspace root (the process's working directory unless ``--workspace``).
        state_dir: Durable records (``sessions/<id>.jsonl``) and spilled data live here.
        allow_outside: Accept file paths outside the workspace (host-jailed runs only).
        allow_protected_writes: Let the tools write protected paths (FILE-15); ``None`` reads
            ``STEERABLE_ALLOW_PROTECTED_WRITES`` from ``environ``.
        environ: The environment the configuration is resolved from.
        provider_factory: Builds the model provider on the first chat (default: the
            ``STEERABLE_*`` configuration through :func:`~steerable_sidecar.providers.default_llm_provider`).
        ask_user_timeout_ms: How long ``ask_user`` waits for the host, in milliseconds.
        model_timeout_ms: A deadline for each whole model call, in milliseconds (``None``: none).
        default_harness: The harness of a chat that names none (``steerable sidecar --harness``).
    """

    workspace: Path
    state_dir: Path
    allow_outside: bool = False
    allow_protected_writes: bool | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    provider_factory: Callable[[], LLMProvider] | None = None
    ask_user_timeout_ms: int = 600_000
    model_timeout_ms: int | None = 600_000
    default_harness: str = "full"


def boot_for(config: SidecarConfig, **options: Any) -> Booted:
    """:func:`~steerable_sidecar._boot.boot_tools` for ``config``'s workspace, paths and environment.

    ``options`` are ``boot_tools``'s others (``harness``, ``plugins``, ``web_tools``...).
    """
    return boot_tools(
        config.workspace,
        allow_outside=config.allow_outside,
        allow_protected_writes=config.allow_protected_writes,
        environ=config.environ,
        **options,
    )


def _no_params(method: str, params: Any) -> None:
    if params not in (None, {}, []):
        raise InvalidParams(f"{method} takes no params")


class _Params(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class InvokeParams(_Params):
    """``tool.invoke`` params: ``{id?, name, arguments, consentGranted?, context?}``."""

    id: str | None = None
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    consent_granted: bool = False
    context: dict[str, Any] | None = None


class ChatParams(_Params):
    """``agent.chat.stream`` params (see ``docs/sidecar-protocol.md``)."""

    chat_id: str | None = None
    session_id: str | None = None
    message: str | None = None
    messages: list[dict[str, Any]] | None = None
    system: str | None = None
    ask_user: bool = False
    tools_via_host: bool = False
    tools: Annotated[  # spec/sidecar.schema.json: protocol.HostToolEntry (checked when registered)
        list[dict[str, Any]] | None, WithJsonSchema({"type": "array", "items": {"x-def": "HostToolEntry"}})
    ] = None
    auto_approve: bool = False
    consent: str | None = None
    max_rounds: int = Field(default=DEFAULT_MAX_ROUNDS, ge=1, le=10_000)
    model: str | None = None
    harness: Literal["full", "minimal", "progressive"] | None = None


class PluginParams(_Params):
    """``plugin.enable|disable|reload|unload`` params: ``{name}``."""

    name: str


class CancelParams(_Params):
    """``agent.chat.cancel`` params: ``{chatId}``."""

    chat_id: str


@dataclass(slots=True)
class _Chat:
    session_id: str
    consent: ConsentPolicy = DEFAULT_CONSENT_POLICY  # which modes ask, which are refused
    loop: AgentLoop | None = None
    cancelled: bool = False
    cleanup: list[Callable[[], None]] = field(default_factory=list)
    asking: int = 0  # ask_user.request calls waiting for the host
    stop_after_batch: bool = False  # the host left mid-question: stop once the batch is recorded


class Sidecar:
    """Serve one host over a :class:`JsonRpcPeer`.

    Args:
        peer: The connection to the host (stdio in production, any stream pair in tests).
        config: The process configuration.
        router: The tools (default: :func:`~steerable_sidecar._boot.boot_tools` for
            ``config.workspace``, without plugins and web tools).
        plugins: The plugin registry over ``router`` (default: an empty one).
        workspace: The workspace behind ``router``'s file tools, whose read state a resumed chat
            seeds (default: the default router's; none for a given ``router``).

    Raises:
        ConfigError: An invalid ``STEERABLE_*`` variable (e.g. the read-before-write gate).
        WorkspaceError: The workspace is not a directory.
    """

    def __init__(
        self,
        peer: JsonRpcPeer,
        config: SidecarConfig,
        *,
        router: ToolRouter | None = None,
        plugins: PluginRegistry | None = None,
        workspace: Workspace | None = None,
    ) -> None:
        self.peer = peer
        self.config = config
        if router is None:  # the tools every entry point boots (boot.py), offline and without plugins
            booted = boot_for(config, plugins=False, web_tools=False)
            router, workspace = booted.router, booted.workspace
            plugins = plugins if plugins is not None else booted.plugins
        self.router = router
        self._workspace = workspace
        self.plugins = plugins if plugins is not None else PluginRegistry(self.router)
        self.router.trace = self._trace
        self._provider: LLMProvider | None = None
        self._chats: dict[str, _Chat] = {}
        self._busy_sessions: set[str] = set()
        self._session_locks = SessionLocks(config.state_dir / "sessions")  # REC-3, across processes
        self._fetch_consent: dict[str, FetchConsent] = {}  # per session: the hosts its user allowed
        self._stopping = asyncio.Event()
        self._interrupting: str | None = None  # a signal is ending the process: why (REC-4)
        try:
            self._consent = consent_policy(config.environ.get(CONSENT_ENV) or "default")
        except UserError as exc:
            raise ConfigError(str(exc)) from None
        for name, handler in {
            "system.ping": self.ping,
            "system.shutdown": self.shutdown,
            "tool.list": self.tool_list,
            "tool.invoke": self.tool_invoke,
            "agent.chat.stream": self.chat_stream,
            "agent.chat.cancel": self.chat_cancel,
            "plugin.list": self.plugin_list,
            "plugin.enable": self._plugin_call(PluginRegistry.enable),
            "plugin.disable": self._plugin_call(PluginRegistry.disable),
            "plugin.reload": self._plugin_call(PluginRegistry.reload),
            "plugin.unload": self._plugin_call(PluginRegistry.unload),
        }.items():
            peer.add_method(name, handler)
        peer.not_found_hint = sidecar_hint  # an MCP or ACP host started the wrong subcommand

    # -- lifecycle ------------------------------------------------------------------------------
    async def run(self, shutdown: Shutdown | None = None) -> None:
        """Announce ``lifecycle.ready``, serve until stdin EOF or ``system.shutdown``, then stop chats.

        Args:
            shutdown: Set when a signal ends the process (REC-4): every request in flight is then
                answered as interrupted (a chat's record gets its calls and its end first), within
                :data:`SHUTDOWN_DRAIN_S`.
        """
        ready: ReadyParams = {
            "version": steerable_agent_runtime.__version__,
            "protocolVersion": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "workspace": str(self.config.workspace),
        }
        await self.peer.notify(
            "lifecycle.ready",
            ready,
        )
        self.peer.on_eof = self._host_gone  # the host is gone: stop acting on its behalf now
        serving = asyncio.create_task(self.peer.serve())
        stopping = asyncio.create_task(self._stopping.wait())
        signalled = asyncio.create_task(shutdown.wait()) if shutdown is not None else stopping
        try:
            await asyncio.wait({serving, stopping, signalled}, return_when=asyncio.FIRST_COMPLETED)
            if shutdown is not None and shutdown.requested and not serving.done():
                self._interrupting = shutdown.reason  # chats record their calls as interrupted
                await self.peer.interrupt(
                    shutdown.interrupted_message(), shutdown.interrupted_data(), grace_s=INTERRUPT_DRAIN_S
                )
            elif stopping.done() and not serving.done():  # system.shutdown: let running calls answer
                self._cancel_chats()
                await self.peer.drain(SHUTDOWN_DRAIN_S)
        finally:
            self._cancel_chats()
            stopping.cancel()
            signalled.cancel()
            if not serving.done():
                serving.cancel()
            await asyncio.gather(serving, stopping, signalled, return_exceptions=True)
            if isinstance(self._provider, _Closable):  # the provider's shared HTTP client
                try:
                    await self._provider.aclose()
                except Exception:
                    logger.exception("closing the model provider failed")

    def _cancel_chats(self) -> None:
        for chat in list(self._chats.values()):
            chat.cancelled = True
            if chat.loop is not None:
                chat.loop.cancel()

    def _host_gone(self) -> None:
        """End of input: cancel every chat, except one waiting in ``ask_user`` for the host.

        Its question fails next (the peer fails pending requests right after this callback), so
        ``ask_user`` records empty answers as the spec says an unreachable host does, and the chat
        stops as soon as that batch of results is in the record (see ``emit`` in ``_run_chat``).
        """
        for chat in list(self._chats.values()):
            chat.cancelled = True
            if chat.asking and chat.loop is not None:
                chat.stop_after_batch = True
            elif chat.loop is not None:
                chat.loop.cancel()

    async def ping(self, params: Any) -> PingResult:
        """``system.ping`` -> ``{"pong": true, "pid"}``."""
        _no_params("system.ping", params)
        return {"pong": True, "pid": os.getpid()}

    async def shutdown(self, params: Any) -> ShutdownResult:
        """``system.shutdown`` -> ``{"ok": true}``.

        Running chats are cancelled; other calls in flight get up to 5 s to write their answers;
        then the process exits.
        """
        _no_params("system.shutdown", params)
        asyncio.get_running_loop().call_soon(self._stopping.set)
        return {"ok": True}

    # -- tools ----------------------------------------------------------------------------------
    async def tool_list(self, params: Any) -> ToolListResult:
        """``tool.list`` -> ``{"tools": [{name, description, parameters, mode, exposure}], ...}``.

        The handshake: the full inventory of every tier (spec: ``describe()`` keeps the full
        inventory for host introspection). A capability that is not configured is not registered,
        so it is never listed.
        """
        _no_params("tool.list", params)
        tools = cast("list[ToolDescriptor]", self.router.describe())  # Tool.describe(): that shape
        return {"tools": tools, "protocolVersion": PROTOCOL_VERSION}

    async def tool_invoke(self, params: Any) -> dict[str, Any]:
        """``tool.invoke {id?, name, arguments, consentGranted?, context?}`` -> a ToolResult.

        A tool whose mode needs consent (``local``) runs only with ``consentGranted: true``:
        without it the answer is a failed result with ``data.code == "consent_required"`` (the
        host asks its user and sends the call again); invalid arguments are answered first.
        ``context`` is copied into the call's ``TraceSpan.attrs`` (spec: per-call metadata goes
        through TraceSpan.attrs, never ToolCall).
        """
        p = InvokeParams.model_validate(params)
        call = ToolCall(id=p.id or new_call_id(), name=p.name, arguments=p.arguments)
        # the host asked its user already (consentGranted) or nobody can be asked: no prompt here
        gate = ApprovalGate.for_router(
            self.router,
            approve=approve_all if p.consent_granted else None,
            unasked=": ask the user, then send the call again with consentGranted: true",
        )
        context = CallContext(call, attrs={"context": p.context} if p.context else {})
        result = await gate(call, context)
        return result.to_wire()

    def _trace(self, span: TraceSpan) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "tool %s id=%s success=%s %.2f ms %s",
                span.name,
                span.call_id,
                span.success,
                span.duration_ms,
                span.attrs,
            )

    # -- plugins --------------------------------------------------------------------------------
    async def plugin_list(self, params: Any) -> PluginListResult:
        """``plugin.list`` -> ``{"plugins": [{name, origin, source, state, tools}]}``."""
        _no_params("plugin.list", params)
        return {"plugins": [_plugin_wire(info) for info in self.plugins.plugins()]}

    def _plugin_call(
        self, action: Callable[[PluginRegistry, str], PluginInfo]
    ) -> Callable[[Any], Awaitable[PluginResult]]:
        """``plugin.enable|disable|reload|unload {name}`` -> ``{"plugin": info}``.

        The change shows at once in ``tool.list`` and in ``tool_search``. Unknown or wrong-state
        plugins raise ``PluginStateError``; a failed enable or reload raises ``PluginLoadError``
        (the old tools stay on a failed reload).
        """

        async def handler(params: Any) -> PluginResult:
            p = PluginParams.model_validate(params)
            return {"plugin": _plugin_wire(action(self.plugins, p.name))}

        return handler

    # -- chat -----------------------------------------------------------------------------------
    def _model(self) -> LLMProvider:
        if self._provider is None:
            if self.config.provider_factory is not None:
                self._provider = self.config.provider_factory()
            else:
                from ..providers._openai import default_llm_provider

                self._provider = default_llm_provider(environ=self.config.environ)
        return self._provider

    async def chat_stream(self, params: Any) -> ChatSummary:
        """``agent.chat.stream``: run the agent loop; progress as ``agent.chat.event`` notifications.

        The chat id and the session are reserved before anything is awaited, so a second chat on
        the same session (or with the same chat id) is refused, and ``agent.chat.cancel`` works
        from the first moment (a chat cancelled before its loop starts ends ``cancelled``).

        Returns:
            ``{"chatId", "sessionId", ...RunSummary.to_dict()}`` once the run ends.

        Raises:
            InvalidParams: Missing ``message``/``messages``, ``toolsViaHost`` without ``tools``, an
                invalid ``sessionId`` or host tool descriptor, ``progressive`` with ``toolsViaHost``.
            ConfigError: The model provider is not configured (the message names the variable).
            UserError: The chat id or the session already has a chat running, or another process
                has the session open (REC-3: the message names its pid and command line).
        """
        p = ChatParams.model_validate(params)
        if p.message is None and not p.messages:
            raise InvalidParams("agent.chat.stream needs 'message' (text) or 'messages'")
        if p.tools_via_host and p.tools is None:
            raise InvalidParams(
                "toolsViaHost needs 'tools': the host's tool descriptors (as tool.list gives them)"
            )
        session_id = p.session_id or new_call_id()
        if not valid_session_id(session_id):
            raise InvalidParams(f"invalid sessionId {session_id!r}: use letters, digits, '.', '_' or '-'")
        try:
            # spec: the host-tools path has no router to bind, so it must use full or minimal
            default = self.config.default_harness
            if p.tools_via_host and default == "progressive":  # not possible over the wire: full
                default = "full"
            harness = AssembledHarness(p.harness or default, host_tools=p.tools_via_host)
            consent = self._consent if p.consent is None else consent_policy(p.consent, variable="consent")
        except UserError as exc:
            raise InvalidParams(str(exc)) from None
        chat_id = p.chat_id or new_call_id()
        if chat_id in self._chats:
            raise UserError(f"chat {chat_id!r} is already running")
        busy_key = session_id.lower()  # one record file on a case-insensitive file system
        if busy_key in self._busy_sessions:
            raise UserError(f"session {session_id!r} already has a chat running; cancel it or wait")
        provider = self._model()
        chat = _Chat(session_id, consent)
        self._chats[chat_id] = chat
        self._busy_sessions.add(busy_key)
        try:
            holder = await self._session_locks.take(session_id)
            if holder is not None:  # REC-3: a run, an editor or another sidecar has it open
                raise UserError(holder.message())
            summary = await self._to_the_end(
                chat, self._run_chat(p, chat, chat_id, session_id, harness, provider)
            )
        finally:
            self._session_locks.release(session_id)
            self._busy_sessions.discard(busy_key)
            self._chats.pop(chat_id, None)
            for undo in chat.cleanup:
                undo()
        ended = cast("RunSummaryWire", summary.to_dict())  # RunSummary.to_dict(): that shape
        return {"chatId": chat_id, "sessionId": session_id, **ended}

    async def _to_the_end(self, chat: _Chat, running: Coroutine[Any, Any, RunSummary]) -> RunSummary:
        """Run a chat in a task of its own, so that a cancel of its request ends it cleanly.

        The request cancelled (a signal ending the process, the drain after end of input run
        out) stops the chat's loop, which records the calls it had running (as interrupted, for
        a signal) and the run's end; the cancel goes on once that is written (at most
        :data:`SHUTDOWN_DRAIN_S`).
        """
        task = asyncio.ensure_future(running)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            chat.cancelled = True
            if chat.loop is None or not chat.loop.cancel(self._interrupting):
                task.cancel()  # still being set up: nothing recorded yet
            await asyncio.wait({task}, timeout=SHUTDOWN_DRAIN_S)
            task.add_done_callback(_retrieve)  # what it ends with is the record's, not this request's
            raise

    async def _run_chat(
        self,
        p: ChatParams,
        chat: _Chat,
        chat_id: str,
        session_id: str,
        harness: AssembledHarness,
        provider: LLMProvider,
    ) -> RunSummary:
        session = await open_session(self.config.state_dir, session_id)
        try:
            router, transport = self._chat_tools(p, chat, chat_id, session_id)
        except UserError as exc:  # a host tool descriptor without a name, an invalid schema...
            raise InvalidParams(str(exc)) from None
        options = LoopOptions(p.max_rounds, p.model, self.config.model_timeout_ms)
        loop = await assemble_loop(
            session, provider, router, transport=transport, offered=harness.offered, options=options
        )
        harness.wire_tools(router)
        said: list[Message] = [*(p.messages or [])]
        if p.message is not None:
            said.append({"role": "user", "content": p.message})
        chat.loop = loop
        if chat.cancelled:  # cancelled while the chat was being set up
            return RunSummary(RunOutcome.CANCELLED)
        return await loop.run(session.history, session.opening(p.system, said))

    def _chat_events(self, chat: _Chat, chat_id: str) -> Callable[[LoopEvent], Awaitable[None]]:
        async def emit(event: LoopEvent) -> None:
            if chat.stop_after_batch and event.get("type") == "tool_result" and chat.loop is not None:
                # the batch is in the record and nobody is left to act for: stop before another
                # round; the sleep lets the cancellation land here, not in the next model call
                chat.loop.cancel()
                await asyncio.sleep(0)
            try:
                told: ChatEventParams = {"chatId": chat_id, "event": cast("ChatEvent", event)}
                await self.peer.notify("agent.chat.event", told)
            except PeerClosedError:  # the host is gone; the run finishes into the record
                pass

        return emit

    def _follow_main_router(self, router: ToolRouter, chat: _Chat) -> None:
        """Give the chat the process's tools, and keep them in step while the chat runs.

        A plugin enabled, disabled or reloaded mid-chat shows in the chat's next round and in its
        ``tool_search``. The main router's own ``tool_search`` is not copied: the chat's harness
        wires one over the chat's router.
        """
        main = self.router

        def mirror(old: Tool | None, new: Tool | None) -> None:
            if old is not None and router.get(old.name) is old:
                router.unregister(old.name)
            if new is not None and not is_tool_search(main, new) and new.name not in router:
                router.register(new)

        for spec in main:
            mirror(None, spec)
        chat.cleanup.append(main.subscribe(mirror))

    def _chat_tools(
        self, p: ChatParams, chat: _Chat, chat_id: str, session_id: str
    ) -> tuple[ToolRouter, Transport]:
        """The chat's router and its side of the session assembly (``_assembly.Transport``)."""
        router = ToolRouter(default_timeout_ms=self.router.default_timeout_ms)
        forwarded: frozenset[str] = frozenset()
        if p.tools_via_host:
            forwarded = frozenset(register_host_tools(router, p.tools or [], self._host_invoke(chat_id)))
            # run_code is answered here, never forwarded (LOCAL_ONLY_TOOLS); its nested calls reach
            # the host through this chat's executor, which the agent loop hands each call
            # (CallContext.executor)
            run_code = self.router.get("run_code")
            if run_code is not None:
                router.register(run_code)
        else:
            self._follow_main_router(router, chat)
        if p.ask_user:
            ask = make_ask_user_tool(self._host_ask_user(chat_id), timeout_ms=self.config.ask_user_timeout_ms)
            router.register(ask)
        events = self._chat_events(chat, chat_id)
        approve = approve_all if p.auto_approve else self._host_approval(chat_id)
        # SAFE-4: the first web_fetch of each host in the session is put to the host's user, unless
        # autoApprove says the host answers yes to everything
        questions = None if p.auto_approve else self._session_fetch_consent(session_id)
        if p.tools_via_host:
            # the host executes its tools and owns their consent; it gets a resume's read state
            return router, Transport(
                on_event=events,
                trace=self._trace,
                read_state=functools.partial(self._seed_host, session_id),
                executor=_gate_all_but(router, forwarded, approve, questions, chat.consent),
            )
        seed = self._workspace.state.seed if self._workspace is not None else None
        return router, Transport(
            approve=approve,
            on_event=events,
            trace=self._trace,
            read_state=seed,
            questions=questions,
            consent=chat.consent,
        )

    def _session_fetch_consent(self, session_id: str) -> FetchConsent:
        """The session's ``web_fetch`` hosts (SAFE-4): kept for the process's life, across its chats."""
        key = session_id.lower()  # as the busy-session key: one record file on any file system
        consent = self._fetch_consent.get(key)
        if consent is None:
            from ..web_tools import FetchConsent, WebToolsConfig

            try:
                config = WebToolsConfig.from_env(self.config.environ)
            except ConfigError:  # the web pair is not served then (logged at boot): nothing is trusted
                config = WebToolsConfig()
            consent = self._fetch_consent[key] = FetchConsent(config)
        return consent

    # -- reverse calls --------------------------------------------------------------------------
    def _host_invoke(self, chat_id: str) -> Callable[[ToolCall], Any]:
        async def invoke(call: ToolCall) -> ToolResult:
            try:
                forwarded: HostInvokeParams = {
                    "id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                    "context": {"chatId": chat_id},
                }
                answer = await self.peer.request("tool.invoke", forwarded)
            except PeerClosedError:
                return ToolResult(
                    success=False,
                    terminal=True,
                    error=f"the host closed the connection before {call.name} finished",
                    data={"code": ToolErrorCode.HOST_UNREACHABLE},
                )
            except RemoteError as exc:
                return ToolResult.retry(
                    f"the host could not run {call.name}: {exc.message}",
                    data={"code": ToolErrorCode.HOST_ERROR, "rpcCode": exc.code},
                )
            try:
                return ToolResult.model_validate(answer, strict=True)
            except ValueError:
                return ToolResult.retry(
                    f"the host answered {call.name} with something that is not a ToolResult",
                    data={"code": ToolErrorCode.HOST_ERROR},
                )

        return invoke

    def _host_ask_user(self, chat_id: str) -> Callable[[AskUserQuestionsPayload], Any]:
        async def ask(payload: AskUserQuestionsPayload) -> Mapping[str, Any] | None:
            chat = self._chats.get(chat_id)
            if chat is not None:
                chat.asking += 1
            try:
                # the host closing stdin now raises PeerClosedError: ask_user records empty answers
                asked = cast("AskUserRequestParams", {"chatId": chat_id, **payload})  # + the questions
                answer = await self.peer.request("ask_user.request", asked)
            finally:
                if chat is not None:
                    chat.asking -= 1
            if not isinstance(answer, Mapping) or answer.get("cancelled") is True:
                return None
            answers = answer.get("answers")
            return answers if isinstance(answers, Mapping) else None

        return ask

    def _host_approval(self, chat_id: str) -> ApprovalHandler:
        async def approve(call: ToolCall, mode: ToolMode, *, question: ConsentQuestion | None = None) -> bool:
            params = cast(
                "ApprovalRequestParams", {"chatId": chat_id, "call": call.model_dump(), "mode": mode.value}
            )
            if question is not None:  # SAFE-4: {reason: "new_domain", domain, url}
                params.update(cast("ApprovalRequestParams", question.to_wire()))
            answer = await self.peer.request("approval.request", params, timeout_s=HOST_CALL_TIMEOUT_S)
            return isinstance(answer, Mapping) and answer.get("approved") is True

        return approve

    async def _seed_host(self, session_id: str, state: dict[str, str]) -> None:
        try:
            seed: ReadStateSeedParams = {"sessionId": session_id, "readState": state}
            await self.peer.request("read_state.seed", seed, timeout_s=HOST_CALL_TIMEOUT_S)
        except (RemoteError, TimeoutError) as exc:  # one fewer CAS check on the host, never a wrong write
            logger.warning("read_state.seed failed: %s", exc)

    async def chat_cancel(self, params: Any) -> CancelResult:
        """``agent.chat.cancel {chatId}`` -> ``{"cancelled": bool}`` (false when no such chat runs)."""
        p = CancelParams.model_validate(params)
        chat = self._chats.get(p.chat_id)
        if chat is None or chat.cancelled:
            return {"cancelled": False}
        chat.cancelled = True
        if chat.loop is not None:
            chat.loop.cancel()
        return {"cancelled": True}


def _plugin_wire(info: PluginInfo) -> PluginInfoWire:
    return cast("PluginInfoWire", info.to_dict())  # PluginInfo.to_dict(): that shape


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _gate_all_but(
    router: ToolRouter,
    forwarded: frozenset[str],
    approve: ApprovalHandler,
    questions: ConsentQuestions | None = None,
    consent: ConsentPolicy | None = None,
) -> ApprovalGate:
    """A ``toolsViaHost`` chat's executor: consent for the tools the sidecar runs itself.

    The host executes the ``forwarded`` tools and owns their consent, so their mode asks nothing;
    a tool answered here (``run_code``: it runs in the sidecar, LOCAL_ONLY_TOOLS) asks ``approve``
    like any chat's call (docs/runtime.md, Consent). ``questions`` (the first ``web_fetch`` of a
    host, SAFE-4) are asked whoever runs the call, before it is forwarded.
    """
    modes = mode_lookup(router)

    def mode_of(name: str) -> ToolMode | None:
        return None if name in forwarded else modes(name)

    return ApprovalGate(
        router.dispatch,
        approve=approve,
        mode_of=mode_of,
        check=router.check,
        questions=questions,
        policy=consent,
    )
