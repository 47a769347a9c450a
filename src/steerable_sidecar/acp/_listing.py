"""``session/list`` for ``steerable acp``: the recorded editor sessions, newest first, in pages.

A session opened through ``steerable acp`` starts its durable record with a ``session`` entry
(:func:`session_entry`: the workspace and a title, the first line of its first prompt), so the
listing reads one line per record and never the history. Records without one (``steerable run``,
sidecar chats, records older than the listing) are not listed: nothing says which folder they
belong to. ``updatedAt`` is the record's modification time. Pages hold :data:`PAGE_SIZE`
sessions; ``nextCursor`` is opaque (docs/acp.md, "Session list").
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from acp import RequestError
from acp.schema import ListSessionsResponse, SessionInfo

from steerable_agent_runtime.record import valid_session_id

__all__ = ["PAGE_SIZE", "SESSION_ENTRY", "TITLE_CHARS", "list_recorded", "session_entry", "title_of"]

SESSION_ENTRY: Final = "session"
"""The record entry kind that opens an ACP session's record."""

PAGE_SIZE: Final = 50
"""Sessions per ``session/list`` page."""

TITLE_CHARS: Final = 80
"""The longest title: the first line of the first prompt, clipped."""

_CONTROLS: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_FIRST_LINE_BYTES: Final = 64 * 1024  # a session entry is far shorter: a longer first line is not one


def title_of(prompt: str) -> str:
    """A session's title: the first non-blank line of its first prompt, at most :data:`TITLE_CHARS`.

    Control characters (an escape sequence, a bell) become spaces.
    """
    line = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    line = _CONTROLS.sub(" ", line)
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 3].rstrip() + "..."


def session_entry(cwd: Path, title: str) -> dict[str, Any]:
    """The ``session`` entry's payload: the workspace (absolute) and the title."""
    return {"cwd": str(cwd), "title": title, "frontEnd": "acp"}


@dataclass(frozen=True, slots=True)
class _Listed:
    session_id: str
    cwd: str
    title: str
    mtime_ns: int

    @property
    def key(self) -> str:
        return f"{self.mtime_ns:020d}/{self.session_id}"


async def list_recorded(sessions: Path, cwd: str | None, cursor: str | None) -> ListSessionsResponse:
    """One ``session/list`` page: the recorded ACP sessions (in ``cwd`` when given), newest first.

    Args:
        sessions: The records' folder (``<state>/sessions``).
        cwd: Only sessions of this workspace (absolute; compared resolved); ``None``: all.
        cursor: A ``nextCursor`` of an earlier page; ``None``: the first page.

    Raises:
        RequestError: ``-32602`` for a relative ``cwd`` or a cursor this agent did not give.
    """
    if cwd is not None and not os.path.isabs(cwd):
        raise RequestError.invalid_params({"cwd": cwd, "reason": "cwd must be an absolute path"})
    if cursor is not None and not _valid_cursor(cursor):
        raise RequestError.invalid_params({"cursor": cursor[:64], "reason": "not a cursor session/list gave"})
    wanted = str(Path(cwd).resolve()) if cwd is not None else None
    listed = await asyncio.to_thread(_scan, sessions, wanted)
    listed.sort(key=lambda item: item.key, reverse=True)
    if cursor is not None:
        listed = [item for item in listed if item.key < cursor]
    page, rest = listed[:PAGE_SIZE], listed[PAGE_SIZE:]
    return ListSessionsResponse(
        sessions=[
            SessionInfo(
                session_id=item.session_id,
                cwd=item.cwd,
                title=item.title or None,
                updated_at=datetime.fromtimestamp(item.mtime_ns / 1e9, UTC).isoformat(timespec="seconds"),
            )
            for item in page
        ],
        next_cursor=page[-1].key if rest else None,
    )


def _valid_cursor(cursor: str) -> bool:
    stamp, _, session_id = cursor.partition("/")
    return len(stamp) == 20 and stamp.isdigit() and bool(session_id)


def _scan(sessions: Path, wanted: str | None) -> list[_Listed]:
    """Every record under ``sessions`` whose first line is a ``session`` entry (of ``wanted``)."""
    try:
        entries = list(os.scandir(sessions))
    except FileNotFoundError:
        return []
    found: list[_Listed] = []
    for entry in entries:
        if not entry.name.endswith(".jsonl") or not entry.is_file(follow_symlinks=False):
            continue
        opened = _opening_entry(entry.path)
        if opened is None:
            continue
        cwd, title = opened
        if wanted is not None and cwd != wanted:
            continue
        try:
            mtime_ns = entry.stat(follow_symlinks=False).st_mtime_ns
        except OSError:  # removed meanwhile
            continue
        session_id = entry.name.removesuffix(".jsonl")
        if valid_session_id(session_id):  # one session/load takes
            found.append(_Listed(session_id, cwd, title_of(title), mtime_ns))
    return found


def _opening_entry(path: str) -> tuple[str, str] | None:
    """``(cwd, title)`` of a record that opens with a ``session`` entry, else ``None``."""
    try:
        with open(path, "rb") as record:
            line = record.readline(_FIRST_LINE_BYTES)
        entry = json.loads(line)
    except (OSError, ValueError):
        return None
    payload = (
        entry.get(SESSION_ENTRY) if isinstance(entry, dict) and entry.get("type") == SESSION_ENTRY else None
    )
    if not isinstance(payload, dict):
        return None
    cwd, title = payload.get("cwd"), payload.get("title")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        return None
    return cwd, title if isinstance(title, str) else ""
