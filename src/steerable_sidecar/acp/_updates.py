"""What an ACP client is shown of a tool call: its title, kind, locations and result content.

Pure functions from our calls and results to the SDK's ``session/update`` payloads
(``tool_call``, ``tool_call_update``); :mod:`steerable_sidecar.acp._agent` sends them. The kind
comes from the tool's name for the tools we know and from its :class:`ToolMode` otherwise
(docs/acp.md, "Tool calls"); paths are shown absolute, as ACP wants them. What is shown cannot say
more than the call does: a title's hidden characters are made visible (:func:`visible`), a name
that says "read" counts only for a ``read``-mode tool, and a result's text is plain and redacted
with the session's secrets (:func:`shown_text`), as its live output is. One piece holds state:
:class:`LiveOutput`, a running call's output shown as it comes.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from acp import helpers
from acp.interfaces import Client
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
)

from steerable_agent_runtime.context import output_tail, plain_output
from steerable_agent_runtime.modes import ToolMode

from ..shared._live_text import LiveText
from ..shared._secrets import Redactor

__all__ = [
    "LIVE_INTERVAL_S",
    "LIVE_MAX_BYTES",
    "LIVE_MAX_LINES",
    "MAX_SHOWN_CHARS",
    "MAX_TITLE_CHARS",
    "TERMINAL_OUTPUT_BYTES",
    "EditorTerminal",
    "FileDiff",
    "LiveOutput",
    "Resolver",
    "cancelled_update",
    "clipped",
    "locations_of",
    "output_update",
    "result_content",
    "result_update",
    "shown_text",
    "start_update",
    "tool_kind",
    "tool_title",
    "visible",
]

MAX_SHOWN_CHARS: Final = 20_000
"""The most characters of one result's text shown in a tool call's content (the model gets it all)."""

TERMINAL_OUTPUT_BYTES: Final = 1024 * 1024
"""The output an editor's terminal keeps for a ``bash`` call at most (its ``outputByteLimit``)."""

LIVE_INTERVAL_S: Final = 0.5
"""The shortest time between two updates showing a running call's output."""
LIVE_MAX_LINES: Final = 40
"""The most lines of a running call's output shown (its end)."""
LIVE_MAX_BYTES: Final = 4096
"""The most UTF-8 bytes of a running call's output shown (its end)."""

_KIND_BY_NAME: Final[Mapping[str, ToolKind]] = {
    "read_file": "read",
    "read_spilled": "read",
    "list_dir": "read",
    "glob": "search",
    "grep": "search",
    "tool_search": "search",
    "web_search": "search",
    "web_fetch": "fetch",
    "write_file": "edit",
    "edit_file": "edit",
    "apply_patch": "edit",
    "bash": "execute",
    "run_code": "execute",
    "update_plan": "think",
    "ask_user": "other",
}

_KIND_BY_MODE: Final[Mapping[ToolMode, ToolKind]] = {
    ToolMode.READ: "read",
    ToolMode.SAFE_WRITE: "edit",
    ToolMode.DESTRUCTIVE: "delete",
    ToolMode.LOCAL: "execute",
    ToolMode.EXTERNAL: "other",  # calls an outside service, maybe to change it: not only a fetch
}

Resolver = Callable[[str], Path | None]
"""A path the model named -> its real path when it lies inside the workspace, else ``None``."""

FileDiff = tuple[str, str | None, str | None]
"""One file an edit changed: ``(absolute path, text before, text after)``; ``None``: no such file."""


_KIND_BY_VERB: Final[Mapping[str, ToolKind]] = {
    **dict.fromkeys(("read", "get", "list", "show", "view", "describe", "cat", "head", "tail"), "read"),
    **dict.fromkeys(("search", "find", "grep", "glob", "query", "lookup"), "search"),
    **dict.fromkeys(
        ("write", "edit", "create", "update", "set", "add", "append", "patch", "replace", "insert", "save"),
        "edit",
    ),
    **dict.fromkeys(("delete", "remove", "rm", "drop", "unlink", "erase", "purge"), "delete"),
    **dict.fromkeys(("move", "rename", "mv", "copy", "cp"), "move"),
    **dict.fromkeys(("fetch", "download", "browse", "navigate", "http"), "fetch"),
    **dict.fromkeys(("run", "exec", "execute", "shell", "bash", "terminal", "spawn"), "execute"),
    **dict.fromkeys(("think", "plan"), "think"),
}
"""The kind of a tool steerable does not know, by the first word of its name (``write_file``: edit)."""

_MCP_PREFIX: Final = "mcp__"


def mcp_parts(name: str) -> tuple[str, str] | None:
    """``(server, tool)`` of an MCP server's tool as registered (``mcp__server__tool``), else ``None``."""
    if not name.startswith(_MCP_PREFIX):
        return None
    server, separator, tool = name[len(_MCP_PREFIX) :].partition("__")
    return (server, tool) if separator and server and tool else None


_HARMLESS_KINDS: Final = frozenset({"read", "search", "fetch"})
"""Kinds that say a call only looks: taken from a name only when the tool's mode is ``read``."""


def tool_kind(name: str, mode: ToolMode | None) -> ToolKind:
    """The ACP tool kind of a call: by name, by the first word of its name, else by ``mode``.

    An MCP server's tool goes by its own name: the reference filesystem server's ``write_file``
    is ``edit``, not its mode's ``delete``. A name that says the call only looks (``read_file``,
    ``search_...``, ``fetch_...``) counts only when ``mode`` agrees (``read``, or unknown): a
    server's ``read_file`` annotated ``destructiveHint: true`` is shown as its mode's ``delete``.
    """
    parts = mcp_parts(name)
    tool = parts[1] if parts is not None else name
    verb = tool.replace("-", "_").split("_", 1)[0].lower()
    kind = _KIND_BY_NAME.get(tool) or _KIND_BY_VERB.get(verb)
    if kind is not None and not (kind in _HARMLESS_KINDS and _not_read(mode)):
        return kind
    return _KIND_BY_MODE.get(mode, "other") if mode is not None else "other"


def _not_read(mode: ToolMode | None) -> bool:
    return mode is not None and mode is not ToolMode.READ


MAX_TITLE_CHARS: Final = 200
"""The longest title shown (a tool name or a server name can be long)."""

_HIDDEN: Final = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)
"""What a title never holds as it is: control characters (escape sequences start with one), Unicode's
bidirectional controls (they reorder what follows) and its line and paragraph separators."""


def _picture(found: re.Match[str]) -> str:
    code = ord(found[0])
    if code < 0x20:
        return chr(0x2400 + code)  # its Control Picture: ESC is ␛, LF is ␊
    return "\u2421" if code == 0x7F else "\ufffd"  # DEL is ␡; C1, bidi, separators: �


def visible(text: str) -> str:
    """``text`` with every character that could hide or reorder what a title says made visible.

    A C0 control (escape sequences start with ESC) becomes its Control Picture (``␛``, ``␊``), DEL
    ``␡``, a tab a space; a C1 control, a bidirectional control (U+061C, U+200E, U+200F,
    U+202A-U+202E, U+2066-U+2069) or a line or paragraph separator becomes ``�``. Nothing is
    deleted, so the title cannot come to say something its text does not.
    """
    return _HIDDEN.sub(_picture, text.replace("\t", " "))


def _one_line(text: str, limit: int = 80) -> str:
    flat = re.sub(" {2,}", " ", visible(text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _code(text: str) -> str:
    """``text`` as a Markdown code span whose backticks it cannot close."""
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _command_title(command: str) -> str:
    """``Run `make test` ``; a command of several lines shows its first and how many more it has."""
    lines = [line for line in command.split("\n") if line.strip()]
    if not lines:
        return "Run an empty command"
    more = len(lines) - 1
    rest = f" (+{more} more line{'s' if more > 1 else ''})" if more else ""
    return f"Run {_code(_one_line(lines[0]))}{rest}"


def tool_title(name: str, arguments: Mapping[str, Any], mode: ToolMode | None = None) -> str:
    """A short human title: ``Read src/app.py``, ``Run `pytest -q` ``, else the tool's name.

    An MCP server's tool is named after its server: ``filesystem: Write notes.txt``,
    ``github: create_issue``. A title that says the call only looks (``Read``, ``List``,
    ``Search``, ``Fetch``) is given only when ``mode`` is ``read`` (or unknown); else the tool's
    name and what it names: ``filesystem: read_file notes.txt``. Control characters and bidi
    controls are shown (:func:`visible`), a multi-line command as its first line and a count.
    """
    title = visible(_title(name, arguments, mode))
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def _title(name: str, arguments: Mapping[str, Any], mode: ToolMode | None) -> str:
    parts = mcp_parts(name)
    if parts is not None:
        return f"{parts[0]}: {_title(parts[1], arguments, mode)}"
    path = arguments.get("path")
    shown = _one_line(path) if isinstance(path, str) and path else None
    if name in ("write_file", "edit_file") and shown:
        return f"{'Write' if name == 'write_file' else 'Edit'} {shown}"
    if name == "bash" and isinstance(arguments.get("command"), str):
        return _command_title(arguments["command"])
    if name == "apply_patch":
        return "Apply patch"
    looks: tuple[str, str] | None = None  # what a call that only looks is titled: (verb, its object)
    if name == "read_file" and shown:
        looks = ("Read", shown)
    elif name == "list_dir":
        looks = ("List", shown or ".")
    else:
        for key, verb in (("pattern", "Search"), ("query", "Search"), ("url", "Fetch")):
            value = arguments.get(key)
            if isinstance(value, str) and value:
                looks = (verb, _one_line(value))
                break
    if looks is None:
        return name
    return f"{name} {looks[1]}" if _not_read(mode) else f"{looks[0]} {looks[1]}"


def locations_of(name: str, arguments: Mapping[str, Any], inside: Resolver) -> list[ToolCallLocation]:
    """The file a file tool's call names, with the first line of a ranged read.

    Only a path that resolves inside the workspace (``inside`` gives its real path, else
    ``None``) is shown: an editor that follows the agent opens it, and a path the tool will
    refuse (outside, through a symlink out) must not send it elsewhere.
    """
    path = arguments.get("path")
    if name == "list_dir" and path in (None, ""):
        path = "."  # its default: the workspace root
    if name not in ("read_file", "write_file", "edit_file", "list_dir") or not isinstance(path, str):
        return []
    real = inside(path)
    if real is None:
        return []
    line = arguments.get("offset") if name == "read_file" else None
    start = line if isinstance(line, int) and not isinstance(line, bool) and line >= 1 else None
    return [ToolCallLocation(path=str(real), line=start)]


def start_update(
    call_id: str, name: str, arguments: Any, mode: ToolMode | None, inside: Resolver
) -> ToolCallStart:
    """The ``tool_call`` update announcing a call (status ``pending``)."""
    args = arguments if isinstance(arguments, Mapping) else {}
    return helpers.start_tool_call(
        call_id,
        tool_title(name, args, mode),
        kind=tool_kind(name, mode),
        status="pending",
        locations=locations_of(name, args, inside) or None,
        raw_input=arguments,
    )


def clipped(text: str, limit: int = MAX_SHOWN_CHARS, missing: str = "not shown") -> str:
    """``text``'s first ``limit`` characters, and a line saying how many more are ``missing``."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters {missing}]"


def _fenced(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}{'' if text.endswith(chr(10)) else chr(10)}{fence}"


def _text(text: str) -> ContentToolCallContent:
    return helpers.tool_content(helpers.text_block(text))


def shown_text(text: str, redact: Redactor, limit: int = MAX_SHOWN_CHARS) -> str:
    r"""Text of a result as a call's content shows it: plain (as a live view), redacted, then clipped.

    No escape sequence nor control character but ``\n`` and ``\t`` (a line's ``\r`` overwrites
    resolved: :func:`~steerable_agent_runtime.context.plain_output`), no secret ``redact`` knows.
    """
    return clipped(redact(plain_output(text)), limit)


def result_content(
    name: str,
    result: Mapping[str, Any],
    diffs: Sequence[FileDiff] = (),
    terminal: str | None = None,
    *,
    redact: Redactor,
) -> list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent]:
    """What a finished call shows: diffs for edits, ``bash`` output (or its terminal), else its message.

    Every text shown goes through :func:`shown_text` with ``redact`` (the session's secrets, the ones
    its live output keeps out); a diff shows the file as it is on disk (the editor has it anyway).
    """
    data = result.get("data") if isinstance(result.get("data"), Mapping) else {}
    shown: list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent] = []
    if terminal is not None:  # the editor's terminal shows the output (released, still shown)
        shown.append(helpers.tool_terminal_ref(terminal))
    if result.get("success"):
        shown.extend(
            helpers.tool_diff_content(path, after if after is not None else "", before)
            for path, before, after in diffs
        )
    if name in ("bash", "run_code") and isinstance(data, Mapping) and terminal is None:
        output = "".join(str(data.get(k) or "") for k in ("stdout", "stderr"))
        if output:
            shown.append(_text(_fenced(shown_text(output, redact))))
    problem = result.get("error")
    if isinstance(problem, str) and problem:
        shown.append(_text(shown_text(problem, redact)))
    elif not shown:
        message = result.get("message")
        if isinstance(message, str) and message:
            shown.append(_text(shown_text(message, redact)))
        elif name not in ("read_file", "read_spilled") and data:
            dumped = json.dumps(_cleaned(data, redact), ensure_ascii=False, indent=2)
            shown.append(_text(_fenced(shown_text(dumped, redact))))
    return shown


def _cleaned(value: Any, redact: Redactor) -> Any:
    r"""``value`` with each string in it plain and redacted, before JSON escapes them (``\u001b``, ``\"``)."""
    if isinstance(value, str):
        return redact(plain_output(value))
    if isinstance(value, Mapping):
        return {_cleaned(str(key), redact): _cleaned(item, redact) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_cleaned(item, redact) for item in value]
    return value


def result_update(
    call_id: str,
    name: str,
    result: Mapping[str, Any],
    diffs: Sequence[FileDiff] = (),
    terminal: str | None = None,
    *,
    redact: Redactor,
) -> ToolCallProgress:
    """The ``tool_call_update`` closing a call: ``completed`` or ``failed``, its content, its result.

    ``terminal``: the id of the editor's terminal the call ran in (shown instead of its output).
    ``redact``: the session's secrets, kept out of the content (:func:`result_content`); the
    ``rawOutput`` is the result as the model gets it.
    """
    status: ToolCallStatus = "completed" if result.get("success") else "failed"
    content = result_content(name, result, diffs, terminal, redact=redact)
    return helpers.update_tool_call(call_id, status=status, content=content, raw_output=dict(result))


def cancelled_update(call_id: str) -> ToolCallProgress:
    """The ``tool_call_update`` of a call the turn's cancel stopped."""
    return helpers.update_tool_call(call_id, status="failed", content=[_text("cancelled")])


def output_update(call_id: str, shown: str) -> ToolCallProgress:
    """The ``tool_call_update`` showing a running call's output so far (its tail), as a code block."""
    return helpers.update_tool_call(call_id, content=[_text(_fenced(shown))])


class LiveOutput:
    """A running call's output (``CallContext.send_output`` chunks) shown as ``tool_call_update``s.

    :meth:`output` is the call's output sink: it keeps the tail of what the call sent and returns
    at once (the tool never waits for the client); a task sends the tail, at most one update every
    ``interval_s``, the first no sooner than ``interval_s`` after the call started (a call that ends
    before shows its result alone). :meth:`close` stops it before the call's result is shown, so
    no output update comes after the result. Make it when the call starts. What is kept is made
    fit to show (:class:`LiveText`; overwritten lines as a terminal shows them); after a gap in the
    chunks (``[... N bytes not shown]``) the tail starts anew, the count shown is every byte not shown.

    Args:
        call_id: The call shown.
        send: Sends one ``session/update`` (never raises).
        redact: The secrets never shown (the session's).
        interval_s: The shortest time between two updates.
    """

    def __init__(
        self,
        call_id: str,
        send: Callable[[ToolCallProgress], Awaitable[None]],
        *,
        redact: Redactor,
        interval_s: float = LIVE_INTERVAL_S,
    ) -> None:
        self._call_id = call_id
        self._send = send
        self._interval_s = interval_s
        self._live = LiveText(redact)
        self._text = ""  # the output's tail, its last line's \r kept (what comes next overwrites it)
        self._dropped = 0  # bytes of output not in _text
        self._due = False  # output arrived that no update has shown
        self._last = asyncio.get_running_loop().time()  # when the last update went (or the call started)
        self._task: asyncio.Task[None] | None = None
        self._sending = False
        self._closed = False
        self.sent = 0
        """How many updates went out."""

    def output(self, text: str) -> None:
        """Take one chunk (the sink); dropped once closed."""
        if self._closed or not text:
            return
        gap, fresh = self._live.feed(text)
        if gap:  # output was left out: what came before it is no longer the output's end
            self._dropped += gap + len(plain_output(self._text).encode("utf-8", "replace"))
            self._text = ""
        elif not fresh:
            return  # all of it may begin a secret: it waits for the next chunk
        line = self._text.rfind("\n") + 1  # the last line so far: a \r in what came overwrites it
        self._text = self._text[:line] + plain_output(self._text[line:] + fresh, more=True)
        if len(self._text) > 4 * LIVE_MAX_BYTES:  # keep a bounded tail; output_tail cuts it exactly
            cut = len(self._text) - 2 * LIVE_MAX_BYTES
            self._dropped += len(self._text[:cut].encode("utf-8", "replace"))
            self._text = self._text[cut:]
        self._due = True
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._show(), name=f"acp-live-{self._call_id}"
            )

    async def _show(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._due and not self._closed:
                wait = self._last + self._interval_s - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                self._due = False
                shown = output_tail(
                    plain_output(self._text),
                    max_lines=LIVE_MAX_LINES,
                    max_bytes=LIVE_MAX_BYTES,
                    dropped_bytes=self._dropped,
                )
                self._sending = True
                try:
                    await self._send(output_update(self._call_id, shown))
                finally:
                    self._sending = False
                self._last = loop.time()
                self.sent += 1
        finally:
            self._task = None

    async def close(self) -> None:
        """Show nothing more: an update being sent is let finish, one waiting for its turn is dropped."""
        self._closed = True
        task = self._task
        if task is None:
            return
        if not self._sending:
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class EditorTerminal:
    """The editor's terminal for one call (``CallContext.terminal``, ``steerable acp --editor-terminal``).

    :meth:`open` is ``terminal/create`` with the words ``bash`` hands over (the sandbox's own start,
    steerable's environment: the editor adds none), then shown in the call as its content; the id
    goes into ``opened`` under the call's id, so the call's result shows the terminal too.
    :meth:`close` is ``terminal/release`` (the command is stopped by then: steerable stops it); a
    terminal the command never ran in is no longer shown with the call.

    Args:
        client: The connection to the editor.
        session_id: The session the call runs in.
        call_id: The call shown.
        send: Sends one ``session/update`` (never raises).
        opened: Call id -> terminal id, the session's.
    """

    def __init__(
        self,
        client: Client,
        session_id: str,
        call_id: str,
        send: Callable[[ToolCallProgress], Awaitable[None]],
        opened: dict[str, str],
    ) -> None:
        self._client = client
        self._session_id = session_id
        self._call_id = call_id
        self._send = send
        self._opened = opened

    async def open(self, command: str, args: Sequence[str], *, cwd: str) -> str:
        """``terminal/create``, shown in the call; the terminal's id (an error from the editor is raised)."""
        made = await self._client.create_terminal(
            session_id=self._session_id,
            command=command,
            args=list(args),
            env=[],
            cwd=cwd,
            output_byte_limit=TERMINAL_OUTPUT_BYTES,
        )
        self._opened[self._call_id] = made.terminal_id
        await self._send(
            helpers.update_tool_call(self._call_id, content=[helpers.tool_terminal_ref(made.terminal_id)])
        )
        return made.terminal_id

    async def close(self, terminal_id: str, *, ran: bool) -> None:
        """``terminal/release`` (kills what still runs there; the editor keeps showing its output)."""
        if not ran and self._opened.get(self._call_id) == terminal_id:
            del self._opened[self._call_id]  # the call shows its output, from here, instead
        await self._client.release_terminal(session_id=self._session_id, terminal_id=terminal_id)
