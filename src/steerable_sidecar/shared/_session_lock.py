"""One session, one process: the lock every surface takes on a durable session (REC-3).

A session's record is ``<state>/sessions/<id>.jsonl``; its lock is ``<id>.lock`` beside it, an
exclusive ``flock`` taken without waiting by whatever opens the session: ``steerable run``
(``--session-id``, or the fresh id it makes up), a sidecar chat (``agent.chat.stream``) and
``steerable acp`` (``session/new``, ``session/load``, a parked session booted again). The opener
holds it for as long as it has the session open and the kernel drops it when the process ends,
however it ends, so a lock left by a killed process never blocks. Once it holds the lock, the
holder writes its pid and command line into the file; a second opener is refused, and
:meth:`SessionHolder.message` names the holder. Each surface words the refusal its own way:
``steerable run`` exits 75 (``ExitCode.SESSION_BUSY``), a sidecar chat is ``UserError``
(-32030), ACP is ``-32600``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from steerable_agent_runtime.errors import ConfigError
from steerable_agent_runtime.record import DurableRecord

__all__ = ["SessionHolder", "SessionLocks"]

_HOLDER_WAIT_S: Final = 0.2
"""How long a refused opener waits for the holder's pid to appear in the lock file (the holder
writes it right after taking the lock, so only a race between the two needs any wait)."""

_MAX_SHOWN_ARGS: Final = 8
_MAX_ARG_CHARS: Final = 200


@dataclass(frozen=True, slots=True)
class SessionHolder:
    """The process that has a session open, as its lock file names it.

    Attributes:
        session_id: The session.
        pid: The holder's process id; ``None`` when the lock file does not (yet) name a live one.
        command: Its command line, shortened (``steerable run --session-id s1 ...``); may be empty.
    """

    session_id: str
    pid: int | None
    command: str

    def message(self) -> str:
        """The refusal, e.g. ``session 's1' is open in another steerable process (pid 41, ...)``."""
        if self.pid is None:
            who = ""
        else:
            who = f" (pid {self.pid}{f': {self.command}' if self.command else ''})"
        return (
            f"session {self.session_id!r} is open in another steerable process{who}; wait for it to "
            "end, or use another session id"
        )


class SessionLocks:
    """The sessions this process has open, each holding ``<sessions>/<id>.lock``.

    Args:
        sessions: The sessions folder (``<state>/sessions``); created on the first lock.

    :meth:`hold` does blocking I/O (a worker thread, or :meth:`take` from the event loop);
    :meth:`release` only closes a descriptor.
    """

    def __init__(self, sessions: Path) -> None:
        self._dir = sessions
        self._held: dict[str, int] = {}

    def holds(self, session_id: str) -> bool:
        """Whether this object holds ``session_id``'s lock."""
        return session_id in self._held

    def hold(self, session_id: str) -> SessionHolder | None:
        """Take ``session_id``'s lock without waiting (already held here: nothing to do).

        Returns:
            ``None`` once the lock is held; the :class:`SessionHolder` when another process (or
            another opener in this one) has it.

        Raises:
            UserError: ``session_id`` is not a safe file name (the record's rule).
            ConfigError: The lock file cannot be opened (a read-only state directory, a directory
                in the way); the message names it.
        """
        if session_id in self._held:
            return None
        path = DurableRecord.for_session(self._dir, session_id).path.with_suffix(".lock")
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise ConfigError(
                f"the session's lock {path} cannot be opened: {exc.strerror or exc}; the state "
                "directory must be writable (--state-dir)"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return _holder(fd, session_id)
            finally:
                os.close(fd)
        except BaseException:
            os.close(fd)
            raise
        self._held[session_id] = fd
        with contextlib.suppress(OSError):  # the name is for the refusal's message: the lock holds anyway
            os.ftruncate(fd, 0)
            os.pwrite(fd, _holder_line(), 0)
        return None

    async def take(self, session_id: str) -> SessionHolder | None:
        """:meth:`hold` in a worker thread; a caller cancelled meanwhile gives back what it took."""
        already = session_id in self._held
        task = asyncio.ensure_future(asyncio.to_thread(self.hold, session_id))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not already:
                with contextlib.suppress(Exception):
                    await task
                self.release(session_id)
            raise

    def release(self, session_id: str) -> None:
        """Give ``session_id``'s lock back (nothing when it is not held)."""
        fd = self._held.pop(session_id, None)
        if fd is not None:
            os.close(fd)

    def release_all(self) -> None:
        """Give every lock back."""
        for session_id in list(self._held):
            self.release(session_id)


def _holder_line() -> bytes:
    """What the holder writes into its lock file: ``{"pid", "command"}``."""
    return (json.dumps({"pid": os.getpid(), "command": _command_line()}) + "\n").encode()


def _command_line() -> str:
    """This process's command line as a person would type it, shortened."""
    argv = [" ".join(word.split()) for word in sys.argv]
    if not argv:
        return ""
    program = os.path.basename(argv[0])
    if program == "__main__.py":  # python -m package
        program = f"python -m {os.path.basename(os.path.dirname(argv[0]))}"
    shown = [word if len(word) <= _MAX_ARG_CHARS else word[: _MAX_ARG_CHARS - 1] + "…" for word in argv[1:]]
    more = " ..." if len(shown) > _MAX_SHOWN_ARGS else ""
    return " ".join([program, *shown[:_MAX_SHOWN_ARGS]]) + more


def _holder(fd: int, session_id: str) -> SessionHolder:
    """Who holds the lock open on ``fd``, as the file says (a pid that is no longer alive is stale)."""
    deadline = time.monotonic() + _HOLDER_WAIT_S
    while True:
        pid, command = _named(fd)
        if pid is not None and _alive(pid):
            return SessionHolder(session_id, pid, command)
        if time.monotonic() >= deadline:
            return SessionHolder(session_id, None, "")
        time.sleep(0.01)


def _named(fd: int) -> tuple[int | None, str]:
    try:
        raw = json.loads(os.pread(fd, 4096, 0))
    except (OSError, ValueError):
        return None, ""
    if not isinstance(raw, dict):
        return None, ""
    pid, command = raw.get("pid"), raw.get("command")
    return (
        pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
        command if isinstance(command, str) else "",
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    return True
