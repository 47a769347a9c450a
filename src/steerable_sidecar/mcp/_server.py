"""Serve a :class:`ToolRouter` over MCP (stdio) on the project's own JSON-RPC peer (:mod:`.rpc`).

The MCP specification, 2025-06-18 and 2025-11-25: lifecycle, tools, logging, progress and
cancellation. The ``mcp`` SDK's server is not used: importing it costs about 0.85 s, past a short
host start-up window (docs/mcp.md, "Start-up", has the figures); the SDK stays on the client side
(``mcp_sources``) and in the tests. docs/mcp.md, "What is served", maps every method to what
it does here. ``tools/call`` dispatches any tier (dispatch never gates on exposure); an unknown
name is JSON-RPC ``-32602`` with the router's suggestions. The tools may arrive after the
handshake: :meth:`McpServer.attach` hands them over, and ``tools/list`` or ``tools/call`` received
before that wait for them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from steerable_agent_runtime import ToolErrorCode, __version__
from steerable_agent_runtime.errors import SteerableError, UserError
from steerable_agent_runtime.modes import MODE_META_KEY, OPEN_WORLD_READS, ToolMode

from ..rpc._peer import InvalidParams, JsonRpcPeer, LineWriter, Params, open_stdio_streams
from ..rpc._wrong_protocol import MCP_NOT_ACP, acp_initialize, mcp_hint
from ..shared._live_text import LiveText
from ..shared._secrets import Redactor

if TYPE_CHECKING:
    from steerable_agent_runtime import ToolResult, ToolRouter
    from steerable_agent_runtime.context import ToolExecutor
    from steerable_agent_runtime.executor import ConsentQuestion, ConsentQuestions
    from steerable_agent_runtime.tools import Tool
    from steerable_agent_runtime.types import ToolCall

__all__ = [
    "DEFAULT_HEARTBEAT_S",
    "ELICITATION_TIMEOUT_S",
    "LATEST_PROTOCOL_VERSION",
    "LOG_LEVELS",
    "PROTOCOL_VERSIONS",
    "McpServer",
    "build_mcp_server",
    "mode_annotations",
    "serve_mcp_stdio",
    "to_call_tool_result",
    "tool_title",
]

logger = logging.getLogger(__name__)

PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The MCP revisions this server negotiates in ``initialize``, oldest first."""
LATEST_PROTOCOL_VERSION: Final = PROTOCOL_VERSIONS[-1]
"""Answered to a client that asks for a revision we do not speak (it may then disconnect)."""

LOG_LEVELS: Final[Mapping[str, int]] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": 55,
    "emergency": 60,
}
"""MCP's log levels (RFC 5424 severities, least severe first) and the ``logging`` level each is."""

DEFAULT_HEARTBEAT_S: Final = 1.0
"""Seconds between two progress notifications of a running call."""

ELICITATION_TIMEOUT_S: Final = 600.0
"""Longest wait for the client's answer to ``elicitation/create`` (a new host's question), in seconds."""

_DEFAULT_LOG_LEVEL: Final = logging.WARNING
_MAX_LOG_CHARS: Final = 8_000
_LOG_QUEUE: Final = 256  # records waiting to be sent; past that they are counted and dropped
_MAX_NAME_CHARS: Final = 256  # MCP names are at most 128 characters (2025-11-25); models' far fewer
_QUIET_LOGGERS: Final = (JsonRpcPeer.__module__, __name__)  # their own sends (the modules that log them)


def mode_annotations(
    mode: ToolMode, *, title: str | None = None, open_world: bool | None = None
) -> dict[str, Any]:
    """Map a :class:`ToolMode` onto MCP tool annotations, every hint stated.

    MCP's defaults for an absent hint are the cautious ones (not read-only, destructive, not
    idempotent, open world), so a host that is told nothing prompts for everything.

    Args:
        mode: The tool's mode.
        title: The display title (``annotations.title``), left out when ``None``.
        open_world: Overrides ``openWorldHint`` (``web_search`` / ``web_fetch`` are reads of the
            open web).

    Returns:
        ``{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}`` (and ``title``):
        ``read`` is read-only and idempotent; ``safe_write`` writes but never destroys;
        ``destructive`` may destroy; ``local`` (a shell, an unknown tool) may do anything on the
        machine, so it is destructive and open world (what
        :func:`~steerable_agent_runtime.modes.mode_from_annotations` reads back as ``local``);
        ``external`` calls outside services without destroying anything (the spec runs it without
        consent, and it reads back as ``safe_write``, which also needs none).
    """
    read_only = mode is ToolMode.READ
    hints: dict[str, Any] = {} if title is None else {"title": title}
    hints["readOnlyHint"] = read_only
    hints["destructiveHint"] = mode in (ToolMode.DESTRUCTIVE, ToolMode.LOCAL)
    hints["idempotentHint"] = read_only
    hints["openWorldHint"] = mode in (ToolMode.LOCAL, ToolMode.EXTERNAL) if open_world is None else open_world
    return hints


def tool_title(name: str) -> str:
    """A display title from a tool name: ``read_file`` -> ``Read file``, ``web_fetch`` -> ``Web fetch``."""
    words = name.replace("_", " ").replace("-", " ").split()
    return " ".join(words).capitalize() if words else name


_HINTS: Final = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
_MCP_DEFAULTS: Final = {  # MCP 2025-06-18, ToolAnnotations: a hint left out means this
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}


def _listing(tool: Tool) -> dict[str, Any]:
    """A tool as ``tools/list`` shows it, its mode in ``_meta``.

    A fronted MCP tool, or one that states hints of its own (``bash``'s ``openWorldHint``), keeps
    its hints and title; the others get every hint from their mode.
    """
    theirs = tool.annotations
    if theirs is None:  # one of ours: every hint from its mode
        title = tool_title(tool.name)
        open_world = True if tool.name in OPEN_WORLD_READS else None
        annotations = mode_annotations(tool.mode, title=title, open_world=open_world)
    else:  # a fronted tool: what its own server stated wins, and what it left out is MCP's default
        title = theirs["title"] if isinstance(theirs.get("title"), str) else tool_title(tool.name)
        annotations = {"title": title}
        for key in _HINTS:
            stated = theirs.get(key)
            annotations[key] = stated if isinstance(stated, bool) else _MCP_DEFAULTS[key]
        if annotations["readOnlyHint"] and not isinstance(theirs.get("destructiveHint"), bool):
            annotations["destructiveHint"] = False  # MCP: meaningful only when not read-only
    return {
        "name": tool.name,
        "title": title,
        "description": tool.description,
        "inputSchema": tool.parameters,
        "annotations": annotations,
        # the mode itself, for a steerable fronting this server: the hints alone read bash back as
        # destructive once it is closed to the network (mode_from_annotations), not local
        "_meta": {MODE_META_KEY: tool.mode.value},
    }


def to_call_tool_result(result: ToolResult) -> dict[str, Any]:
    """Wrap a :class:`ToolResult` as an MCP ``CallToolResult`` (a JSON-ready dict).

    Returns:
        ``{"content": [one text block with the wire ToolResult as JSON], "structuredContent": the
        wire ToolResult, "isError": not result.success}``.
    """
    wire = result.to_wire()
    return {
        "content": [{"type": "text", "text": json.dumps(wire, ensure_ascii=False)}],
        "structuredContent": wire,
        "isError": not result.success,
    }


class _ProgressClock:
    """One call's ``progress`` values: milliseconds since it started, strictly increasing."""

    def __init__(self) -> None:
        self._started = time.monotonic()
        self._last = -1

    def elapsed_s(self) -> float:
        return time.monotonic() - self._started

    def next(self) -> int:
        """0 the first time (the start), then the elapsed milliseconds, one more than last at least."""
        self._last = 0 if self._last < 0 else max(self._last + 1, int(self.elapsed_s() * 1000))
        return self._last


class _CallProgress:
    """One call's ``notifications/progress`` under its token, until :meth:`close` (docs/mcp.md).

    Each output chunk is one message (made fit to show by a :class:`LiveText`: no control
    sequence, redacted across chunks; then clipped to its last :attr:`MAX_LINES` lines and
    :attr:`MAX_BYTES` bytes: ``bash`` sends its output's tail every half second at most); a
    heartbeat (:meth:`running`) says the elapsed time, unless output went out since the last one.
    The sink is closed when the call's answer is due: a tool that kept its
    :class:`CallContext` (or another call holding it) sends nothing under a finished call's
    token; such a late chunk is dropped, with a debug log line.
    """

    MAX_LINES: Final = 40
    """Lines of one output chunk sent at most (its end is kept)."""
    MAX_BYTES: Final = 4096
    """UTF-8 bytes of one output chunk sent at most (its end is kept)."""

    def __init__(
        self,
        token: str | int,
        name: str,
        notify: Callable[[str, Params], Awaitable[None]],
        redact: Redactor,
    ) -> None:
        self._token = token
        self._name = name
        self._notify = notify
        self._live = LiveText(redact)
        self._clock = _ProgressClock()
        self._open = True
        self._told = False  # output went out since the last heartbeat

    def close(self) -> None:
        """Send nothing more under this token (idempotent)."""
        self._open = False

    async def started(self) -> None:
        await self._send(f"{self._name} started")

    async def running(self) -> None:
        """The heartbeat: the elapsed time, when no output was sent since the last one."""
        if self._told:
            self._told = False
            return
        await self._send(f"{self._name} running for {self._clock.elapsed_s():.1f} s")

    async def output(self, text: str) -> None:
        """One chunk of the tool's output (made fit, then clipped); dropped once the call is answered."""
        from steerable_agent_runtime.context import output_tail, plain_output

        gap, shown = self._live.feed(text)
        message = output_tail(
            plain_output(shown), max_lines=self.MAX_LINES, max_bytes=self.MAX_BYTES, dropped_bytes=gap
        )
        if message:  # else all of it may begin a secret: it waits for the next chunk
            await self._send(message)
            self._told = True

    async def _send(self, message: str) -> None:
        if not self._open:
            logger.debug("mcp: %s's output after its answer dropped (%d chars)", self._name, len(message))
            return
        progress = {"progressToken": self._token, "progress": self._clock.next(), "message": message}
        await self._notify("notifications/progress", progress)


class McpServer:
    """One MCP connection's server side: the handshake at once, the tools once attached.

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version`` (default: steerable's).
        instructions: ``instructions`` in the ``initialize`` result (a hint for the model).
        heartbeat_s: Seconds between progress notifications of a running call, over 0 (else
            ``UserError``).
        secrets: Strings never sent in a log notification (API keys, MCP sources' ``env`` values).
    """

    def __init__(
        self,
        *,
        name: str = "steerable",
        version: str | None = None,
        instructions: str | None = None,
        heartbeat_s: float = DEFAULT_HEARTBEAT_S,
        secrets: Sequence[str] = (),
    ) -> None:
        if heartbeat_s <= 0:
            raise UserError(f"heartbeat_s must be positive, got {heartbeat_s}")
        self._info = {"name": name, "title": name, "version": version or __version__}
        self._instructions = instructions
        self._heartbeat_s = heartbeat_s
        self._redactor = Redactor.of(secrets)
        self._router: ToolRouter | None = None
        self._offered: Callable[[], Sequence[Mapping[str, Any]]] | None = None
        self._questions: ConsentQuestions | None = None
        self._elicits = False  # the client said in initialize that it answers form elicitations
        self._gate: ToolExecutor | None = None
        self._nested: ToolExecutor | None = None  # a run_code program's calls, behind _gate (SAFE-4)
        self._failure: BaseException | None = None
        self._ready = asyncio.Event()
        self._failure_told = asyncio.Event()  # a request was answered with the failure
        self._peer: JsonRpcPeer | None = None
        self._log_level = _DEFAULT_LOG_LEVEL
        self._log_queue: asyncio.Queue[dict[str, Any]] | None = None
        self._dropped_logs = 0
        self._unsubscribe: Callable[[], None] | None = None
        self._list_changed_pending = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._initialized = asyncio.Event()  # initialize answered: log notifications may flow
        self._listed = asyncio.Event()  # a tools/list was answered from the attached tools
        self._background: set[asyncio.Task[None]] = set()

    # -- the tools ----------------------------------------------------------------------------

    def attach(
        self,
        router: ToolRouter,
        offered: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
        *,
        questions: ConsentQuestions | None = None,
    ) -> None:
        """Serve ``router``'s tools from now on; requests waiting for them go on.

        Args:
            router: The tools (its read state lasts as long as the connection).
            offered: Returns the descriptors to list (a harness's ``offered``); default: the
                direct tier. Every registered tool stays callable by name.
            questions: The connection's questions about calls (``FetchConsent``: the first
                ``web_fetch`` of each host, SAFE-4), put to a client that declared form
                elicitation with ``elicitation/create``; a client that did not is asked nothing.
        """
        self._router = router
        self._offered = offered
        self._questions, self._gate, self._nested = questions, None, None
        self._ready.set()
        if self._peer is not None:
            self._watch(router)

    def redact(self, text: str) -> str:
        """``text`` with every secret this server knows replaced by ``[redacted]``."""
        return self._redactor(text)

    def add_secrets(self, secrets: Sequence[str]) -> None:
        """Also keep ``secrets`` out of log notifications (MCP sources' ``env`` values, known later)."""
        self._redactor = self._redactor.adding(secrets)

    def fail(self, error: BaseException) -> None:
        """The tools will never come (the boot failed): tool requests are answered with ``error``."""
        self._failure = error
        self._ready.set()

    async def _tools(self) -> ToolRouter:
        await self._ready.wait()
        if self._router is None:
            assert self._failure is not None
            self._failure_told.set()
            raise self._failure
        return self._router

    def _client_left(self) -> None:
        """End of input: requests still waiting for the tools end now, not after the drain time."""
        if not self._ready.is_set():
            from steerable_agent_runtime.errors import PeerClosedError

            self.fail(PeerClosedError("the client closed the connection before the tools were ready"))

    async def listed(self) -> None:
        """Return once a ``tools/list`` has been answered from the attached tools (the host has them)."""
        await self._listed.wait()

    async def told_failure(self) -> None:
        """Return once a ``tools/*`` request has been answered with the :meth:`fail` error."""
        await self._failure_told.wait()

    def _watch(self, router: ToolRouter) -> None:
        loop = self._loop

        def changed(old: Tool | None, new: Tool | None) -> None:  # on any thread (a plugin reload)
            if self._list_changed_pending or loop is None or loop.is_closed():
                return
            self._list_changed_pending = True  # one notification for a burst of changes
            loop.call_soon_threadsafe(self._send_list_changed)

        self._unsubscribe = router.subscribe(changed)

    def _send_list_changed(self) -> None:
        self._list_changed_pending = False
        if self._peer is not None and not self._peer.closed:
            task = asyncio.ensure_future(self._notify("notifications/tools/list_changed", None))
            self._background.add(task)  # kept until done: the loop holds tasks weakly
            task.add_done_callback(self._background.discard)

    # -- serving ------------------------------------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader, writer: LineWriter) -> None:
        """Serve one connection until the client closes it (end of input) or :meth:`close`.

        Args:
            reader: Frames from the client (one JSON-RPC message per line).
            writer: Where responses and notifications go.
        """
        peer = JsonRpcPeer(reader, writer, name="mcp", scrub=self.redact, strict_ids=True)
        peer.on_eof = self._client_left
        self._peer = peer
        self._loop = asyncio.get_running_loop()
        peer.add_method("initialize", self._initialize)
        peer.add_method("ping", self._ping)
        peer.add_method("tools/list", self._list_tools)
        peer.add_method("tools/call", self._call_tool)
        peer.add_method("logging/setLevel", self._set_level)
        peer.add_notification("notifications/initialized", self._ignore)
        peer.add_notification("notifications/cancelled", self._cancelled)
        peer.not_found_hint = mcp_hint  # a sidecar host started the wrong subcommand
        if self._router is not None:
            self._watch(self._router)
        handler = _ForwardLogs(self._offer_log)
        self._log_queue = asyncio.Queue(maxsize=_LOG_QUEUE)
        sender = asyncio.create_task(self._send_logs(self._log_queue), name="mcp-logs")
        restore = _route_logs(handler, self._log_level, _Redacting(self.redact))
        try:
            await peer.serve()
        finally:
            restore()
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            if self._unsubscribe is not None:
                self._unsubscribe()

    async def interrupt(self, message: str, data: Any = None, *, grace_s: float) -> None:
        """The process is ending (a signal): answer every request in flight as interrupted, then close.

        See :meth:`JsonRpcPeer.interrupt <steerable_sidecar.rpc._peer.JsonRpcPeer.interrupt>` (REC-4).
        """
        if self._peer is not None:
            await self._peer.interrupt(message, data, grace_s=grace_s)

    async def close(self, grace_s: float = 1.0) -> None:
        """Let answers in flight be written (up to ``grace_s`` seconds), then close the connection."""
        peer = self._peer
        if peer is None:
            return
        await peer.drain(grace_s)
        await peer.aclose()

    async def _notify(self, method: str, params: Params) -> None:
        peer = self._peer
        if peer is None or peer.closed:
            return
        try:
            await peer.notify(method, params)
        except SteerableError as exc:  # the client went away mid-call: nothing left to tell
            logger.debug("mcp: %s not sent: %s", method, exc)

    # -- handlers -----------------------------------------------------------------------------

    async def _initialize(self, params: Params) -> dict[str, Any]:
        if not isinstance(params, dict):
            raise InvalidParams("initialize needs an object with protocolVersion, capabilities, clientInfo")
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            hint = f": {MCP_NOT_ACP}" if acp_initialize(params) else ""
            raise InvalidParams(f"'protocolVersion' must be a string such as \"2025-06-18\"{hint}")
        client = params.get("clientInfo")
        if isinstance(client, dict):
            logger.info("mcp: client %s %s asks for %s", client.get("name"), client.get("version"), requested)
        self._elicits = _elicits_forms(params.get("capabilities"))
        result: dict[str, Any] = {
            "protocolVersion": requested if requested in PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": dict(self._info),
        }
        if self._instructions:
            result["instructions"] = self._instructions
        # the answer is written once this returns; the queued log lines follow it
        asyncio.get_running_loop().call_soon(self._initialized.set)
        return result

    async def _ping(self, params: Params) -> dict[str, Any]:
        return {}

    async def _ignore(self, params: Params) -> None:
        return None

    async def _cancelled(self, params: Params) -> None:
        if isinstance(params, dict) and "requestId" in params:
            if self._peer is not None and self._peer.cancel_request(params["requestId"]):
                logger.info("mcp: request %r cancelled by the client", params["requestId"])

    async def _list_tools(self, params: Params) -> dict[str, Any]:
        if isinstance(params, dict) and params.get("cursor") is not None:
            raise InvalidParams("unknown cursor: this server lists every tool in one page")
        router = await self._tools()
        from .._boot import offered_tools

        listing = {"tools": [_listing(tool) for tool in offered_tools(router, self._offered)]}
        self._listed.set()
        return listing

    async def _call_tool(self, params: Params) -> dict[str, Any]:
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            raise InvalidParams("tools/call needs 'name' (a string) and optional 'arguments' (an object)")
        name: str = params["name"]
        if len(name) > _MAX_NAME_CHARS:  # never echoed whole: no tool has such a name
            raise InvalidParams(
                f"Unknown tool {name[:80]!r}... ({len(name)} characters): no tool has a name this long",
                data={"code": ToolErrorCode.UNKNOWN_TOOL, "suggestions": []},
            )
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise InvalidParams(f"'arguments' of {name} must be an object, not {type(arguments).__name__}")
        router = await self._tools()
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        from steerable_agent_runtime.context import CallContext
        from steerable_agent_runtime.types import ToolCall, new_call_id

        call = ToolCall(id=new_call_id(), name=name, arguments=arguments)
        if isinstance(token, str) or type(token) is int:
            progress = _CallProgress(token, name, self._notify, self._redactor)
            await progress.started()  # before the tool's own output
            beat = asyncio.create_task(self._heartbeat(progress), name=f"mcp-progress-{name}")
            context = CallContext(call, executor=self._nested_calls(router), output=progress.output)
            try:
                result = await self._executor(router)(call, context)
            finally:
                progress.close()  # the answer is written next: nothing under its token after it
                beat.cancel()
                await asyncio.gather(beat, return_exceptions=True)
        else:
            nested = self._nested_calls(router)
            bare = CallContext(call, executor=nested) if nested is not None else None
            result = await self._executor(router)(call, bare)
        unknown = isinstance(result.data, dict) and result.data.get("code") == ToolErrorCode.UNKNOWN_TOOL
        if not result.success and unknown:
            # not a tool at all: a protocol error (-32602); the router's text keeps "Did you mean"
            raise InvalidParams(result.error or f"Unknown tool {name!r}", data=result.data)
        if result.error:  # an exception's text may quote a credential: the model never reads one
            result = result.model_copy(update={"error": self.redact(result.error)})
        return to_call_tool_result(result)

    def _executor(self, router: ToolRouter) -> ToolExecutor:
        """``router.dispatch``, behind a gate asking :attr:`_questions` when the client can elicit.

        The client is the host that asks its user about each tool (every tool's annotations say
        what it may do), so no mode asks here (``consent_modes=()``); only a question does (SAFE-4).
        """
        if self._questions is None or not self._elicits:
            return router.dispatch
        if self._gate is None:
            from steerable_agent_runtime.executor import ApprovalGate, mode_lookup

            self._gate = ApprovalGate(
                router.dispatch,
                approve=self._elicit_consent,
                mode_of=mode_lookup(router),
                consent_modes=(),
                check=router.check,
                questions=self._questions,
            )
        return self._gate

    def _nested_calls(self, router: ToolRouter) -> ToolExecutor | None:
        """Where a ``run_code`` program's calls go: behind :meth:`_executor`'s gate, when it asks.

        No agent loop runs a ``tools/call``, so ``run_code`` would send its program's calls to its
        router, past the question a ``web_fetch`` the client calls gets. They go through the same
        gate instead (the connection's allowed hosts, the trusted list: SAFE-4), a ``local`` call
        still refused unasked (``run_code``'s :func:`~steerable_sidecar.run_code._tool.direct_run_executor`).
        ``None`` (``run_code``'s own router) when the gate asks nothing.
        """
        if self._questions is None or not self._elicits:
            return None
        if self._nested is None:
            from ..run_code._tool import direct_run_executor

            self._nested = direct_run_executor(router, self._executor(router))
        return self._nested

    async def _elicit_consent(
        self, call: ToolCall, mode: ToolMode, *, question: ConsentQuestion | None = None
    ) -> bool:
        """One ``elicitation/create`` form with no fields: ``accept`` allows, anything else refuses."""
        peer = self._peer
        if question is None or peer is None:  # never: no mode asks here
            return False
        from ..web_tools import fetch_question_text

        answer = await peer.request(
            "elicitation/create",
            {
                "message": fetch_question_text(question),
                "requestedSchema": {"type": "object", "properties": {}},
            },
            timeout_s=ELICITATION_TIMEOUT_S,
        )
        return isinstance(answer, dict) and answer.get("action") == "accept"

    async def _heartbeat(self, progress: _CallProgress) -> None:
        while True:
            await asyncio.sleep(self._heartbeat_s)
            await progress.running()

    async def _set_level(self, params: Params) -> dict[str, Any]:
        level = params.get("level") if isinstance(params, dict) else None
        if not isinstance(level, str) or level not in LOG_LEVELS:
            raise InvalidParams(f"'level' must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
        self._log_level = LOG_LEVELS[level]
        _route_logs_level(self._log_level)
        return {}

    # -- log forwarding -----------------------------------------------------------------------

    def _offer_log(self, record: logging.LogRecord) -> None:
        """Queue one record for the client (called on the loop thread; see :class:`_ForwardLogs`)."""
        queue = self._log_queue
        if queue is None or record.levelno < self._log_level or self._peer is None or self._peer.closed:
            return
        text = record.getMessage()  # already redacted, args folded in: the handler's _Redacting filter
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += self.redact(f" ({type(exc).__name__}: {exc})")
        if len(text) > _MAX_LOG_CHARS:
            text = text[:_MAX_LOG_CHARS] + f"... [{len(text) - _MAX_LOG_CHARS} more characters]"
        message = {"level": _mcp_level(record.levelno), "logger": record.name, "data": text}
        try:
            queue.put_nowait(message)
        except asyncio.QueueFull:
            self._dropped_logs += 1

    async def _send_logs(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        await self._initialized.wait()  # nothing but the answer may come before initialize's answer
        while True:
            message = await queue.get()
            if self._dropped_logs:
                dropped, self._dropped_logs = self._dropped_logs, 0
                notice = {"level": "warning", "logger": logger.name, "data": f"{dropped} log records dropped"}
                await self._notify("notifications/message", notice)
            await self._notify("notifications/message", message)


def _elicits_forms(capabilities: object) -> bool:
    """Whether ``initialize``'s client capabilities declare form elicitation.

    MCP 2025-06-18: ``elicitation: {}``; 2025-11-25: ``elicitation: {form?: {}, url?: {}}``, where
    an empty object still means form.
    """
    if not isinstance(capabilities, dict):
        return False
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, dict):
        return False
    return "form" in elicitation or "url" not in elicitation


def _mcp_level(levelno: int) -> str:
    """The MCP level of a ``logging`` level: the most severe MCP level at or below it."""
    chosen = "debug"
    for name, number in LOG_LEVELS.items():
        if levelno >= number:
            chosen = name
    return chosen


class _ForwardLogs(logging.Handler):
    """Hands this process's log records to ``offer`` on the running loop (records come from any thread)."""

    def __init__(self, offer: Callable[[logging.LogRecord], None]) -> None:
        super().__init__()
        self._offer = offer
        self._loop = asyncio.get_running_loop()

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(_QUIET_LOGGERS):  # a failed send logged by the sender: no loop
            return
        try:
            self._loop.call_soon_threadsafe(self._offer, record)
        except RuntimeError:  # the loop closed: the connection is over
            pass


class _Redacting(logging.Filter):
    """Rewrites a record's message with the secrets redacted, for every handler that follows.

    Hosts keep a server's stderr in their logs, so the stderr log gets the redacted text too.
    """

    def __init__(self, redact_text: Callable[[str], str]) -> None:
        super().__init__()
        self._redact = redact_text

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # arguments that do not fit the format: the format alone
            text = str(record.msg)
        record.msg, record.args = self._redact(text), None
        record.name = self._redact(record.name)
        if record.exc_info and not record.exc_text:  # the formatter would print the traceback raw
            import traceback

            record.exc_text = self._redact("".join(traceback.format_exception(*record.exc_info)).rstrip())
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        return True


def _route_logs(handler: _ForwardLogs, level: int, redacting: _Redacting) -> Callable[[], None]:
    """Add ``handler`` to the root logger; lower the root's level so records reach it.

    The root's other handlers (the stderr log of ``--verbose``/``STEERABLE_LOG_LEVEL``) keep the
    level they had: each gets it as its own handler level; each also gets ``redacting``. Returns a
    function that undoes all of it.
    """
    root = logging.getLogger()
    previous = root.level
    kept = [(h, h.level) for h in root.handlers]
    for h, _ in kept:
        if h.level == logging.NOTSET:
            h.setLevel(previous)
        h.addFilter(redacting)
    handler.addFilter(redacting)
    root.addHandler(handler)
    _route_logs_level(level)

    def restore() -> None:
        root.removeHandler(handler)
        for h, lv in kept:
            h.setLevel(lv)
            h.removeFilter(redacting)
        root.setLevel(previous)

    return restore


def _route_logs_level(level: int) -> None:
    """Set the root logger's level to the lowest of ``level`` and its other handlers' levels."""
    root = logging.getLogger()
    others = [h.level for h in root.handlers if not isinstance(h, _ForwardLogs) and h.level]
    root.setLevel(min([level, *others]))


def build_mcp_server(
    router: ToolRouter,
    *,
    name: str = "steerable",
    version: str | None = None,
    offered: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
    instructions: str | None = None,
) -> McpServer:
    """An :class:`McpServer` serving ``router``'s tools; run it with :meth:`McpServer.serve`.

    Args:
        router: The tools to serve (its read state persists for the connection's life).
        name: The server name announced at initialisation.
        version: The server version announced at initialisation (default: steerable's).
        offered: Returns the descriptors to list (a harness's ``offered``); default: the direct
            tier. Every registered tool stays callable by name (spec: dispatch never gates on
            exposure).
        instructions: The ``instructions`` of the ``initialize`` result.
    """
    server = McpServer(name=name, version=version, instructions=instructions)
    server.attach(router, offered)
    return server


async def serve_mcp_stdio(
    router: ToolRouter,
    *,
    name: str = "steerable",
    version: str | None = None,
    offered: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
) -> None:
    """Serve ``router`` over MCP on this process's stdin/stdout until the client disconnects.

    stdio is isolated first (:func:`~.rpc.isolate_stdio`): a stray ``print()`` lands on stderr.

    Args:
        router: The tools.
        name: The server name.
        version: The server version (default: steerable's own).
        offered: See :func:`build_mcp_server`.
    """
    server = build_mcp_server(router, name=name, version=version, offered=offered)
    reader, writer = await open_stdio_streams()
    await server.serve(reader, writer)
