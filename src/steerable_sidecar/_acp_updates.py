"""What an ACP client is shown of a tool call: its title, kind, locations and result content.

Pure functions from our calls and results to the SDK's ``session/update`` payloads
(``tool_call``, ``tool_call_update``); :mod:`steerable_sidecar.acp_agent` sends them. The kind
comes from the tool's name for the tools we know and from its :class:`ToolMode` otherwise
(docs/acp.md, "Tool calls"); paths are shown absolute, as ACP wants them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from acp import helpers
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
)

from steerable_agent_runtime.modes import ToolMode

__all__ = [
    "MAX_SHOWN_CHARS",
    "FileDiff",
    "Resolver",
    "cancelled_update",
    "clipped",
    "locations_of",
    "result_content",
    "result_update",
    "start_update",
    "tool_kind",
    "tool_title",
]

MAX_SHOWN_CHARS: Final = 20_000
"""The most characters of one result's text shown in a tool call's content (the model gets it all)."""

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


def tool_kind(name: str, mode: ToolMode | None) -> ToolKind:
    """The ACP tool kind of a call: by name for the known tools, else by ``mode``, else ``other``."""
    if name in _KIND_BY_NAME:
        return _KIND_BY_NAME[name]
    return _KIND_BY_MODE.get(mode, "other") if mode is not None else "other"


def _one_line(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_title(name: str, arguments: Mapping[str, Any]) -> str:
    """A short human title: ``Read src/app.py``, ``Run `pytest -q` ``, else the tool's name."""
    path = arguments.get("path")
    shown = _one_line(path) if isinstance(path, str) and path else None
    if name == "read_file" and shown:
        return f"Read {shown}"
    if name in ("write_file", "edit_file") and shown:
        return f"{'Write' if name == 'write_file' else 'Edit'} {shown}"
    if name == "list_dir":
        return f"List {shown or '.'}"
    if name == "bash" and isinstance(arguments.get("command"), str):
        return f"Run `{_one_line(arguments['command'])}`"
    for key, verb in (("pattern", "Search"), ("query", "Search"), ("url", "Fetch")):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return f"{verb} {_one_line(value)}"
    if name == "apply_patch":
        return "Apply patch"
    return name


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
        tool_title(name, args),
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


def result_content(
    name: str, result: Mapping[str, Any], diffs: Sequence[FileDiff] = ()
) -> list[ContentToolCallContent | FileEditToolCallContent]:
    """What a finished call shows: diffs for edits, output for ``bash``, else the message or error."""
    data = result.get("data") if isinstance(result.get("data"), Mapping) else {}
    shown: list[ContentToolCallContent | FileEditToolCallContent] = []
    if result.get("success"):
        shown.extend(
            helpers.tool_diff_content(path, after if after is not None else "", before)
            for path, before, after in diffs
        )
    if name in ("bash", "run_code") and isinstance(data, Mapping):
        output = "".join(str(data.get(k) or "") for k in ("stdout", "stderr"))
        if output:
            shown.append(_text(_fenced(clipped(output))))
    problem = result.get("error")
    if isinstance(problem, str) and problem:
        shown.append(_text(clipped(problem)))
    elif not shown:
        message = result.get("message")
        if isinstance(message, str) and message:
            shown.append(_text(clipped(message)))
        elif name not in ("read_file", "read_spilled") and data:
            shown.append(_text(_fenced(clipped(json.dumps(data, ensure_ascii=False, indent=2)))))
    return shown


def result_update(
    call_id: str, name: str, result: Mapping[str, Any], diffs: Sequence[FileDiff] = ()
) -> ToolCallProgress:
    """The ``tool_call_update`` closing a call: ``completed`` or ``failed``, its content, its result."""
    status: ToolCallStatus = "completed" if result.get("success") else "failed"
    return helpers.update_tool_call(
        call_id, status=status, content=result_content(name, result, diffs), raw_output=dict(result)
    )


def cancelled_update(call_id: str) -> ToolCallProgress:
    """The ``tool_call_update`` of a call the turn's cancel stopped."""
    return helpers.update_tool_call(call_id, status="failed", content=[_text("cancelled")])
