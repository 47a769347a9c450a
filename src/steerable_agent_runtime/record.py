"""The durable record: an append-only, fsync'd JSONL transcript of one session.

Spec: File tools (resume re-seeds the read state "from the durable record, whose tool messages
carry the result JSON with data.path / data.version"), ``ask_user`` (answers land in the durable
record). The agent loop appends every message *before* the next model call, so a crash loses at
most the model call in flight, never a tool result the model already acted on.

Each line is one JSON object::

    {"v": 1, "type": "message", "message": {"role": "tool", "tool_call_id": "...", "content": "..."}}
    {"v": 1, "type": "trace", "trace": {"name": "read_file", "callId": "...", "success": true, ...}}
    {"v": 1, "type": "run", "run": {"outcome": "completed", "rounds": 3, ...}}

Lines are written whole with one ``write`` and an ``fsync``. A torn last line (the process died in
the middle of a write) was never acknowledged, so :meth:`DurableRecord.load` skips it and the next
append cuts it off before writing. A write that fails (a full disk) is cut back at once and raised
as :class:`~steerable_agent_runtime._state_write.StateWriteError`, naming the file and the fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from ._state_write import StateWriteError, state_write_error
from .errors import UserError
from .workspace import read_file_state_from_messages

__all__ = ["RECORD_VERSION", "DurableRecord", "StateWriteError", "valid_session_id"]

RECORD_VERSION: Final = 1
"""The ``v`` written on every line."""

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

logger = logging.getLogger(__name__)


def valid_session_id(session_id: str) -> bool:
    """Return whether ``session_id`` is usable as a record file name.

    1 to 128 characters of ``A-Z a-z 0-9 . _ -``, starting with a letter or digit (so never
    ``..``, a path separator or a hidden file).
    """
    return bool(_SESSION_ID.fullmatch(session_id)) and ".." not in session_id


class DurableRecord:
    """One session's append-only JSONL transcript.

    Args:
        path: The ``.jsonl`` file (created on the first append, with its parent directories).

    Appends are serialised by an :class:`asyncio.Lock` and run in a worker thread (the write and
    ``fsync`` never block the event loop).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = asyncio.Lock()
        self._checked_tail = False

    @classmethod
    def for_session(cls, directory: str | os.PathLike[str], session_id: str) -> DurableRecord:
        """Return the record of ``session_id`` under ``directory`` (``<directory>/<id>.jsonl``).

        Raises:
            UserError: When ``session_id`` is not a safe file name (see :func:`valid_session_id`).
        """
        if not valid_session_id(session_id):
            raise UserError(
                f"invalid session id {session_id!r}: use 1-128 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        return cls(Path(directory) / f"{session_id}.jsonl")

    def exists(self) -> bool:
        """Whether the record file exists (a session to resume)."""
        return self.path.is_file()

    # -- writing --------------------------------------------------------------------------------
    async def append(
        self,
        messages: Iterable[Mapping[str, Any]] = (),
        entries: Iterable[tuple[str, Mapping[str, Any]]] = (),
    ) -> None:
        """Append messages, then other entries, in one write and one ``fsync``.

        Args:
            messages: OpenAI chat messages; each becomes one ``{"type": "message"}`` line.
            entries: ``(kind, payload)`` pairs, e.g. ``("trace", span)``; ``"message"`` is reserved.

        Raises:
            UserError: An entry of kind ``"message"``.
        """
        lines = [{"v": RECORD_VERSION, "type": "message", "message": dict(m)} for m in messages]
        for kind, payload in entries:
            if kind == "message":
                raise UserError("use messages= for messages")
            lines.append({"v": RECORD_VERSION, "type": kind, kind: dict(payload)})
        await self._append(lines)

    async def append_messages(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """Append chat messages durably (written and fsync'd when this returns).

        Args:
            messages: OpenAI chat messages; each becomes one ``{"type": "message"}`` line.
        """
        await self.append(messages)

    async def append_entry(self, kind: str, payload: Mapping[str, Any]) -> None:
        """Append one non-message entry, e.g. ``append_entry("run", summary)``.

        Args:
            kind: The entry type (``"run"``, ``"meta"``...); ``"message"`` is reserved.
            payload: Stored under the key named ``kind``.
        """
        if kind == "message":
            raise UserError("use append_messages for messages")
        await self._append([{"v": RECORD_VERSION, "type": kind, kind: dict(payload)}])

    async def _append(self, entries: list[dict[str, Any]]) -> None:
        if not entries:
            return
        lines = "".join(_line(entry) for entry in entries).encode("utf-8")
        async with self._lock:
            await asyncio.to_thread(self._write, lines)

    def _write(self, data: bytes) -> None:
        """Append ``data`` whole, or not at all.

        Raises:
            StateWriteError: The file could not be written (a full disk says so, and how to
                move the state directory); what part of ``data`` reached it is cut off again.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise state_write_error("the session record", self.path, exc) from exc
        try:
            if not self._checked_tail:
                _cut_torn_tail(fd)
                self._checked_tail = True
            start = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            except OSError as exc:
                with contextlib.suppress(OSError):  # no torn line left behind: the next append starts clean
                    os.ftruncate(fd, start)
                raise state_write_error("the session record", self.path, exc) from exc
        finally:
            os.close(fd)

    # -- reading --------------------------------------------------------------------------------
    def entries(self) -> list[dict[str, Any]]:
        """Return every complete entry in order; a torn or unparseable line is skipped (and logged).

        A missing file reads as no entries.
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out: list[dict[str, Any]] = []
        lines = raw.split(b"\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                torn = number == len(lines)  # no newline after it: an interrupted write
                logger.warning(
                    "%s:%d: skipping %s line", self.path, number, "a torn" if torn else "an unreadable"
                )
                continue
            if isinstance(entry, dict):
                out.append(entry)
        return out

    def messages(self) -> list[dict[str, Any]]:
        """Return the recorded chat messages, in order (what a resume replays to the model)."""
        return [
            e["message"]
            for e in self.entries()
            if e.get("type") == "message" and isinstance(e.get("message"), dict)
        ]

    def read_state(self) -> dict[str, str]:
        """Rebuild the ``{path: version}`` read state from the recorded tool messages.

        Spec: File tools (resume re-seeds it from the durable record); see
        :func:`~steerable_agent_runtime.workspace.read_file_state_from_messages`.
        """
        return read_file_state_from_messages(self.messages())

    async def load(self) -> list[dict[str, Any]]:
        """:meth:`messages`, read in a worker thread."""
        return await asyncio.to_thread(self.messages)


def _line(entry: Mapping[str, Any]) -> str:
    try:
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape it instead of losing the entry
        text = json.dumps(entry, ensure_ascii=True, separators=(",", ":"))
    return text + "\n"


def _cut_torn_tail(fd: int) -> None:
    """Truncate an unterminated last line (a write that never completed) before appending."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    if os.pread(fd, 1, size - 1) == b"\n":
        return
    # scan back to the last newline, in blocks
    end = size
    block = 64 * 1024
    while end > 0:
        start = max(0, end - block)
        chunk = os.pread(fd, end - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            os.ftruncate(fd, start + cut + 1)
            return
        end = start
    os.ftruncate(fd, 0)
