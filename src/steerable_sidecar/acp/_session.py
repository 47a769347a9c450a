"""One ACP session of ``steerable acp``: its tools, its consent, and what the client is shown.

:class:`AcpSession` holds a session's booted workspace tools (rooted at the client's ``cwd``),
the MCP servers the client named, the "allow always" choices, and the turn in progress. It is
the front end's :class:`~steerable_sidecar.shared._assembly.Transport` for every prompt: it asks for
consent with ``session/request_permission``, turns the loop's events into ``session/update``
notifications, and wraps each call to show it running and, for edits, the diff it made. The
protocol methods are in :mod:`steerable_sidecar.acp._agent`; docs/acp.md has the whole picture.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from acp import helpers
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    ElicitationFormSessionMode,
    ElicitationSchema,
    PermissionOption,
    PlanEntry,
    ToolCallUpdate,
)

from steerable_agent_runtime import AgentLoop, ToolCall, ToolExecutor, ToolResult
from steerable_agent_runtime.ask_user import AskUserQuestionsPayload, make_ask_user_tool
from steerable_agent_runtime.context import CallContext
from steerable_agent_runtime.errors import WorkspaceError
from steerable_agent_runtime.executor import ConsentQuestion
from steerable_agent_runtime.llm import Message
from steerable_agent_runtime.loop import INTERRUPTED_RESULT, LoopEvent
from steerable_agent_runtime.modes import DEFAULT_CONSENT_POLICY, ConsentPolicy, ToolMode
from steerable_agent_runtime.tools import Tool, ToolExposure, arguments_too_deep
from steerable_agent_runtime.workspace import patch_paths

from .._boot import Booted
from ..mcp_sources._config import config_credentials
from ..shared._secrets import Redactor
from ..web_tools import FetchConsent, fetch_question_text
from ._inputs import mcp_configs
from ._updates import (
    EditorTerminal,
    FileDiff,
    LiveOutput,
    cancelled_update,
    result_update,
    start_update,
    tool_kind,
    tool_title,
    visible,
)

__all__ = ["EDITOR_READ_TIMEOUT_S", "MAX_DIFF_BYTES", "MAX_EDITOR_READ_BYTES", "AcpSession"]

logger = logging.getLogger(__name__)

EDITOR_READ_TIMEOUT_S: Final = 10.0
"""How long ``read_file`` waits for the editor's ``fs/read_text_file`` before it reads the disk."""

MAX_EDITOR_READ_BYTES: Final = 8 * 1024 * 1024
"""Largest file on disk asked of the editor: JSON escapes a control character in six bytes, so
its answer stays inside one 50 MiB message (MAX_ACP_FRAME_BYTES) whatever the text."""

MAX_DIFF_BYTES: Final = 1024 * 1024
"""Largest file, in bytes, whose before and after texts are sent as a diff (a bigger one: no diff)."""

_ALLOW_ONCE: Final = "allow_once"
_ALLOW_ALWAYS: Final = "allow_always"
_REJECT_ONCE: Final = "reject_once"

_NO_ELICITATION: Final = (
    "the editor (ACP client) does not support questions (elicitation forms), so nobody can answer "
    "here; decide yourself, and say in your answer what you assumed"
)

_PLAN_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "plan": {
            "type": "array",
            "description": "The whole plan, in order; send it again whenever a step's status changes.",
            "items": {
                "type": "object",
                "properties": {
                    "step": {"type": "string", "minLength": 1},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                },
                "required": ["step", "status"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["plan"],
    "additionalProperties": False,
}


class AcpSession:
    """A live ACP session (see the module docstring).

    Args:
        session_id: The session's id (its durable record's name).
        root: The workspace: the client's ``cwd``, resolved.
        booted: The workspace tools, booted for ``root``.
        stack: What closes with the session (the MCP servers the client named, the tools).
        client: The connection to the client.
        capabilities: What the client said it supports in ``initialize``.
        servers: The MCP servers the client named (booted again with the session).
        editor_terminal: Run ``bash`` in the editor's terminal when it has terminals
            (``--editor-terminal``, docs/acp.md "Terminals").
        secrets: Credentials never shown in a running call's output (the agent's); the
            ``servers``' own are added.
    """

    def __init__(
        self,
        session_id: str,
        root: Path,
        booted: Booted,
        stack: contextlib.AsyncExitStack,
        client: Client,
        capabilities: ClientCapabilities,
        *,
        servers: tuple[Any, ...] = (),
        editor_terminal: bool = False,
        secrets: Redactor,
    ) -> None:
        self.id = session_id
        self.root = root
        self.booted = booted
        self.stack = stack
        self.client = client
        self.capabilities = capabilities
        self.servers = servers
        self.secrets = secrets.adding(
            s for config in mcp_configs(servers) for s in config_credentials(config)
        )
        """What a running call's output never shows: the agent's credentials and its MCP servers'."""
        self.editor_terminal = editor_terminal and bool(capabilities.terminal)
        """Whether ``bash`` runs in the editor's terminal (asked for, and the editor has terminals)."""
        self._terminals: dict[str, str] = {}  # call id -> the editor's terminal it ran in
        self.always: set[str] = set()
        """Tool names the user allowed for the rest of this session (``allow_always``)."""
        self.fetch_consent = FetchConsent(booted.web.config if booted.web is not None else None)
        """The hosts ``web_fetch`` may reach in this session without asking (SAFE-4)."""
        self.loop: AgentLoop | None = None
        """The running turn's loop, once assembled."""
        self.turn: asyncio.Future[Any] | None = None
        """The running (or last) turn: set before the turn's first await."""
        self.cancelling = False
        """Whether the running turn was told to stop."""
        self.pins = 0
        """Prompts holding the session live between their lookup and their turn's start."""
        self.editor_answers = True
        """Whether ``read_file`` asks the editor: not after one read it left unanswered."""
        self.reseed = False
        """Whether the next turn seeds the read state from the record (a session booted from one:
        ``session/load``, a parked session booted again), through the assembly's ``read_state``."""
        self.model: str | None = None
        """The model picked for this session (``session/set_config_option``); ``None``: the configured one."""
        self.policy: ConsentPolicy = DEFAULT_CONSENT_POLICY
        """The session's mode (``session/set_mode``): which calls run, ask or are refused."""
        self.context_tokens = 0
        """Tokens in the model's context at its last answer (prompt and answer): ``usage_update.used``."""
        self._announced: dict[str, str] = {}  # call id -> tool name, for the calls the client was shown
        self._diffs: dict[str, list[FileDiff]] = {}
        self._texted = False  # whether this round's answer text was streamed
        self._install_tools()

    # -- the session's own tools ----------------------------------------------------------------
    def _install_tools(self) -> None:
        router = self.booted.router
        elicitation = self.capabilities.elicitation
        if "ask_user" in router:  # a plugin's own: left as it is
            pass
        elif elicitation is not None and elicitation.form is not None:
            router.register(make_ask_user_tool(self.ask_user))
        else:
            router.mark_unavailable("ask_user", _NO_ELICITATION)
        fs = self.capabilities.fs
        if fs is not None and fs.read_text_file and "read_file" in router:
            self._read_from_the_editor()
        if "update_plan" not in router:
            router.register(
                Tool(
                    name="update_plan",
                    description=(
                        "Keep a short plan of the task's steps, shown to the user beside the chat. Send "
                        "the whole list each time a step starts or finishes; at most one in_progress."
                    ),
                    parameters=_PLAN_PARAMETERS,
                    handler=self._update_plan,
                    mode=ToolMode.READ,
                    exposure=ToolExposure.DIRECT,
                )
            )

    def _read_from_the_editor(self) -> None:
        """``read_file`` reads the editor's buffer (``fs/read_text_file``): unsaved changes included.

        Where the buffer holds what the disk holds (line endings aside), the result is the disk
        read itself. Where it differs, the result is the buffer's text with ``version`` its hash
        (the hash of what was returned) and ``unsavedChanges: true``: a write is then checked
        against the disk, whose version differs, and refused as a conflict until the editor
        saves (docs/acp.md, "Editor buffers"). A buffer the editor cannot give reads the disk.
        """
        router = self.booted.router
        disk = router.unregister("read_file")
        workspace = self.booted.workspace

        async def read_file(path: str, offset: int | None = None, limit: int | None = None) -> Any:
            real, display = workspace.resolve_file(path)
            size = await asyncio.to_thread(_size_on_disk, real)
            too_big = size is not None and size > min(workspace.max_file_bytes, MAX_EDITOR_READ_BYTES)
            if too_big or not self.editor_answers:  # its answer would not fit, or will not come
                return await disk.handler(path=path, offset=offset, limit=limit)
            try:
                answer = await asyncio.wait_for(
                    self.client.read_text_file(session_id=self.id, path=str(real)), EDITOR_READ_TIMEOUT_S
                )
            except TimeoutError:
                logger.warning(
                    "session %s: the editor did not answer fs/read_text_file; reading the disk", self.id
                )
                self.editor_answers = False
                return await disk.handler(path=path, offset=offset, limit=limit)
            except Exception as exc:  # not known to the editor, or it failed: the disk answers
                logger.debug("session %s: the editor did not give %s: %s", self.id, display, exc)
                return await disk.handler(path=path, offset=offset, limit=limit)
            buffer = answer.content.encode("utf-8", errors="surrogatepass")
            on_disk = await workspace.load(real, display)
            if len(buffer) > workspace.max_file_bytes or (
                on_disk is not None and _same_text(on_disk, answer.content)
            ):
                return await disk.handler(path=path, offset=offset, limit=limit)
            shown = await workspace.read_file(path, offset, limit, raw=buffer)
            shown["unsavedChanges"] = True
            shown["note"] = (
                "This is the editor's text, with changes not saved to disk; version is its hash. A write "
                "is checked against the file on disk and refused until the editor saves: ask the user "
                "to save, then read again."
            )
            return shown

        router.register(dataclasses.replace(disk, handler=read_file))

    async def _update_plan(self, plan: list[dict[str, str]]) -> ToolResult:
        entries = [PlanEntry(content=item["step"], priority="medium", status=item["status"]) for item in plan]  # type: ignore[arg-type]
        await self.send(helpers.update_plan(entries))
        return ToolResult(success=True, message=f"Plan updated ({len(entries)} steps).")

    async def ask_user(self, payload: AskUserQuestionsPayload) -> Mapping[str, Any] | None:
        """``ask_user``'s handler: one ``elicitation/create`` form, one field per question.

        Returns:
            The answers by question id; ``None`` when the user declined or cancelled.
        """
        properties: dict[str, Any] = {}
        for question in payload["questions"]:
            field: dict[str, Any] = {"title": question["text"]}
            options = question.get("options")
            if question["type"] == "select" and options and question.get("multiSelect"):
                field.update(type="array", items={"type": "string", "enum": options})
            elif question["type"] == "select" and options:
                field.update(type="string", enum=options)
            else:
                field["type"] = "string"
            properties[question["id"]] = field
        message = "\n\n".join(part for part in (payload["intro"], payload.get("outro", "")) if part)
        schema = ElicitationSchema.model_validate(
            {"type": "object", "properties": properties, "required": list(properties)}
        )
        mode = ElicitationFormSessionMode(session_id=self.id, requested_schema=schema)
        response = await self.client.create_elicitation(
            message=message or "Questions from the agent", mode=mode
        )
        if response.action != "accept":
            return None
        return _checked_answers(payload, response.content or {})

    # -- consent ---------------------------------------------------------------------------------
    async def approve(
        self, call: ToolCall, mode: ToolMode, *, question: ConsentQuestion | None = None
    ) -> bool:
        """Ask the client with ``session/request_permission`` (allow once, allow always, reject).

        A ``question`` (the first ``web_fetch`` of a host, SAFE-4) is asked whatever was allowed
        always, with two options: allow the host for the rest of the session, or reject. Under a
        mode that does not remember (``ask``), every call is asked, without an "always" option,
        and what was allowed always before counts again once the mode is left.
        """
        if question is not None:
            return await self._approve_host(call, mode, question)
        remembers = self.policy.remembers
        if remembers and call.name in self.always:
            await self.send(helpers.update_tool_call(call.id, status="in_progress"))
            return True
        options = [PermissionOption(option_id=_ALLOW_ONCE, name="Allow once", kind="allow_once")]
        if remembers:
            always = f"Always allow {call.name} in this session"
            options.append(PermissionOption(option_id=_ALLOW_ALWAYS, name=always, kind="allow_always"))
        options.append(PermissionOption(option_id=_REJECT_ONCE, name="Reject", kind="reject_once"))
        shown = ToolCallUpdate(
            tool_call_id=call.id,
            title=tool_title(call.name, call.arguments, mode),
            kind=tool_kind(call.name, mode),
            status="pending",
            raw_input=call.arguments,
        )
        response = await self.client.request_permission(session_id=self.id, tool_call=shown, options=options)
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome):
            return False  # cancelled: the turn is being cancelled
        offered = {option.option_id for option in options}
        if outcome.option_id == _ALLOW_ALWAYS and remembers:
            self.always.add(call.name)
        allowed = outcome.option_id in offered and outcome.option_id in (_ALLOW_ONCE, _ALLOW_ALWAYS)
        if allowed:
            await self.send(helpers.update_tool_call(call.id, status="in_progress"))
        return allowed

    async def _approve_host(self, call: ToolCall, mode: ToolMode, question: ConsentQuestion) -> bool:
        options = [
            PermissionOption(
                option_id=_ALLOW_ALWAYS, name=f"Allow {question.domain} in this session", kind="allow_always"
            ),
            PermissionOption(option_id=_REJECT_ONCE, name="Reject", kind="reject_once"),
        ]
        shown = ToolCallUpdate(
            tool_call_id=call.id,
            title=visible(fetch_question_text(question)),
            kind=tool_kind(call.name, mode),
            status="pending",
            raw_input=call.arguments,
        )
        response = await self.client.request_permission(session_id=self.id, tool_call=shown, options=options)
        outcome = response.outcome
        allowed = isinstance(outcome, AllowedOutcome) and outcome.option_id == _ALLOW_ALWAYS
        if allowed:  # the gate hands the yes to fetch_consent: the host asks no more
            await self.send(helpers.update_tool_call(call.id, status="in_progress"))
        return allowed

    # -- what the client is shown ----------------------------------------------------------------
    async def send(self, update: Any) -> None:
        """One ``session/update``; a client that is gone is logged, never raised into the loop."""
        try:
            await self.client.session_update(session_id=self.id, update=update)
        except Exception as exc:  # the connection closed under the turn: the record still has it all
            logger.debug("session %s: an update was not delivered: %s", self.id, exc)

    def _inside(self, path: str) -> Path | None:
        """``path``'s real path when the workspace would accept it, else ``None``."""
        try:
            return self.booted.workspace.root.resolve(path)
        except Exception:  # refused (outside, a symlink out, a bad name): no location to show
            return None

    def consent_policy(self) -> ConsentPolicy:
        """The session's policy now (the consent gate asks before each call: a mode change mid-turn holds)."""
        return self.policy

    def _mode(self, name: str) -> ToolMode | None:
        tool = self.booted.router.get(name)
        return tool.mode if tool is not None else None

    async def on_event(self, event: LoopEvent) -> None:
        """The loop's event sink: text, reasoning and tool calls become ``session/update``s."""
        kind = event["type"]
        if kind == "round":
            self._texted = False
        elif kind == "text" and event["text"]:
            self._texted = True
            await self.send(helpers.update_agent_message_text(event["text"]))
        elif kind == "reasoning" and event["text"]:
            await self.send(helpers.update_agent_thought_text(event["text"]))
        elif kind == "assistant":
            usage = event.get("usage") or {}
            used = usage.get("promptTokens", 0) + usage.get("completionTokens", 0)
            self.context_tokens = (
                used or self.context_tokens
            )  # an answer without counts keeps the turn's last
            if self._texted:
                return
            content = event.get("message", {}).get("content")
            if isinstance(content, str) and content:  # a provider that does not stream
                await self.send(helpers.update_agent_message_text(content))
        elif kind == "tool_call":
            call = event["call"]
            self._announced[call["id"]] = call["name"]
            arguments = _arguments(call.get("arguments"))
            await self.send(
                start_update(call["id"], call["name"], arguments, self._mode(call["name"]), self._inside)
            )
        elif kind == "tool_result":
            call_id = event["id"]
            self._announced.pop(call_id, None)
            diffs = self._diffs.pop(call_id, [])
            terminal = self._terminals.pop(call_id, None)
            shown = result_update(
                call_id, event["name"], event["result"], diffs, terminal, redact=self.secrets
            )
            await self.send(shown)

    async def close_open_calls(self) -> None:
        """Mark the calls still shown as running ``failed`` (the turn was cancelled under them)."""
        announced, self._announced = self._announced, {}
        self._diffs.clear()
        self._terminals.clear()
        for call_id in announced:
            await self.send(cancelled_update(call_id))

    def wrap(self, inner: ToolExecutor) -> ToolExecutor:
        """The executor of a turn: ``in_progress`` before each shown call, its diff after an edit."""

        async def run(call: ToolCall, context: CallContext | None = None, /) -> ToolResult:
            if call.id not in self._announced:  # a nested call (run_code's): the client never saw it
                return await inner(call, context)
            mode = self._mode(call.name)
            if mode is None or self.policy.verdict(mode) == "run":  # else shown running once allowed
                await self.send(helpers.update_tool_call(call.id, status="in_progress"))
            paths = _edited_paths(call)
            before = await self._texts(paths) if paths else {}
            live = LiveOutput(call.id, self.send, redact=self.secrets)  # a tool's streamed output (bash)
            context = context if context is not None else CallContext(call)
            if context.output is None:
                context.output = live.output
            if self.editor_terminal and context.terminal is None:
                context.terminal = EditorTerminal(self.client, self.id, call.id, self.send, self._terminals)
            try:
                result = await inner(call, context)
            finally:
                await live.close()  # before the result is shown: no output update after it
            if paths and result.success:
                after = await self._texts(paths)
                self._diffs[call.id] = [
                    (shown, before.get(shown), after.get(shown))
                    for shown in {**before, **after}
                    if before.get(shown) != after.get(shown)
                ]
            return result

        return run

    async def _texts(self, paths: Sequence[str]) -> dict[str, str | None]:
        """Each path's text now (``None``: absent), by absolute path; refused, odd or big ones left out.

        Read as the file tools read (``Workspace.load``: a FIFO, a device or a symlink swapped in
        is refused without blocking), after a size check so a big file is not read for nothing.
        """
        workspace = self.booted.workspace
        texts: dict[str, str | None] = {}
        for path in paths:
            try:
                real, display = workspace.resolve_file(path)
                size = await asyncio.to_thread(_size_on_disk, real)
                if size is not None and size > MAX_DIFF_BYTES:
                    continue
                data = await workspace.load(real, display)
            except (WorkspaceError, OSError):  # refused or unreadable: the tool says why, no diff
                continue
            if data is None:
                texts[str(real)] = None
            elif len(data) <= MAX_DIFF_BYTES:
                texts[str(real)] = data.decode("utf-8", errors="replace")
        return texts

    # -- session/load ----------------------------------------------------------------------------
    async def replay(self, history: Sequence[Message]) -> None:
        """Send a loaded session's history as updates: user and agent messages, thoughts, tool calls."""
        results = _results_by_call(history)
        for message in history:
            role = message.get("role")
            content = message.get("content")
            if role == "user" and _text_of(content):
                await self.send(helpers.update_user_message_text(_text_of(content)))
            if role != "assistant":
                continue
            reasoning = message.get("reasoning_content")
            if isinstance(reasoning, str) and reasoning:
                await self.send(helpers.update_agent_thought_text(reasoning))
            if _text_of(content):
                await self.send(helpers.update_agent_message_text(_text_of(content)))
            for call in message.get("tool_calls") or []:
                await self._replay_call(call, results)

    async def _replay_call(self, call: Any, results: Mapping[str, Mapping[str, Any]]) -> None:
        function = call.get("function") if isinstance(call, Mapping) else None
        call_id = call.get("id") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(call_id, str):
            return
        name = str(function.get("name") or "tool")
        arguments = _arguments(function.get("arguments"))
        await self.send(start_update(call_id, name, arguments, self._mode(name), self._inside))
        result = results.get(call_id)
        # a call the record never answered: the process that ran it died mid-call (the next
        # turn answers it so for the model too, AgentLoop's interrupted result)
        shown = result if result is not None else INTERRUPTED_RESULT.to_wire()
        await self.send(result_update(call_id, name, shown, redact=self.secrets))

    @property
    def running(self) -> bool:
        """Whether a turn is running (or still being assembled)."""
        return self.turn is not None and not self.turn.done()

    def stop(self, reason: str | None = None) -> None:
        """Stop the running turn: its loop (which records the cancel), or its assembly still.

        ``reason`` (a signal ending the process) records the calls in flight as interrupted.
        """
        if self.turn is None or not self.running:
            return
        self.cancelling = True
        if self.loop is None or not self.loop.cancel(reason):  # the loop not assembled, or not yet running
            self.turn.cancel()

    async def aclose(self) -> None:
        """Stop the turn in progress (recorded as cancelled), then the MCP servers and the tools."""
        self.stop()
        if self.turn is not None:
            with contextlib.suppress(BaseException):
                await self.turn
        await self.stack.aclose()


def _arguments(raw: Any) -> Any:
    """A call's arguments as an object when they are JSON text (the record's shape), else the text.

    Text the router would refuse as too deep (a model's runaway call, kept raw in the record) is
    shown as text: decoding it could exhaust the stack, and the SDK would not serialise it (SAFE-6).
    """
    if isinstance(raw, str):
        try:
            decoded = json.loads(raw)
        except (ValueError, RecursionError):
            return raw
        if isinstance(decoded, dict) and arguments_too_deep(decoded) is not None:
            return raw
        return decoded
    return raw


def _checked_answers(payload: AskUserQuestionsPayload, content: Mapping[str, Any]) -> dict[str, Any]:
    """The form's answers the questions allow: a choice among the options, text as text.

    An editor's form may not enforce the schema it was given: a value off the list (or of the
    wrong type) is left out, as an unanswered question, rather than handed to the model.
    """
    answers: dict[str, Any] = {}
    for question in payload["questions"]:
        value = content.get(question["id"])
        options = question.get("options") or []
        if question["type"] == "select" and options and question.get("multiSelect"):
            if isinstance(value, list) and all(isinstance(v, str) and v in options for v in value):
                answers[question["id"]] = value
        elif question["type"] == "select" and options:
            if isinstance(value, str) and value in options:
                answers[question["id"]] = value
        elif isinstance(value, str):
            answers[question["id"]] = value
    return answers


def _size_on_disk(real: Path) -> int | None:
    """``real``'s size in bytes, ``None`` when it is not there (blocking: a worker thread)."""
    try:
        return real.stat().st_size
    except OSError:
        return None


def _same_text(on_disk: bytes, buffer: str) -> bool:
    """Whether an editor's buffer holds the file's text (a BOM and CRLF line ends aside)."""
    try:
        text = on_disk.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return False
    return text.replace("\r\n", "\n") == buffer.replace("\r\n", "\n")


def _edited_paths(call: ToolCall) -> list[str]:
    """The files an edit tool's call may change, as the model named them."""
    arguments = call.arguments
    if call.name in ("write_file", "edit_file") and isinstance(arguments.get("path"), str):
        return [arguments["path"]]
    if call.name == "apply_patch" and isinstance(arguments.get("patch"), str):
        return patch_paths(arguments["patch"])
    return []


def _text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return ""


def _results_by_call(history: Sequence[Message]) -> dict[str, Mapping[str, Any]]:
    """The recorded result of each call, by call id (a tool message's JSON content)."""
    found: dict[str, Mapping[str, Any]] = {}
    for message in history:
        if message.get("role") != "tool" or not isinstance(message.get("tool_call_id"), str):
            continue
        try:
            result = json.loads(str(message.get("content")))
        except ValueError:
            result = {"success": True, "message": str(message.get("content"))}
        if isinstance(result, Mapping):
            found[message["tool_call_id"]] = result
    return found
