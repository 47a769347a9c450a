"""The journal's seal: recovery acts only on records this user's steerable wrote here (FILE-13, FILE-15).

Every line of an intent file in ``<root>/.steerable/txn/`` is ``<MAC> <JSON>``: an HMAC-SHA256
under a per-user key kept in the state directory (``journal.key``, outside every workspace and in
the sandbox's deny-read set, SAFE-3), chained line to line from a seed that names the workspace
root and the record's token. A record a repository ships, one copied from another workspace or
written under another key, an unsealed (older) one or one a command wrote never checks, and
recovery neither deletes nor restores anything from it (``_txn.recover``). docs/file-tools.md, "The
journal's seal".
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import logging
import os
import secrets
import stat
import threading
import time
from pathlib import Path
from typing import Final

from .._state_write import FULL_DISK_ERRNOS, state_write_error
from ..config import default_state_dir

__all__ = ["KEY_BYTES", "KEY_FILE", "JournalKey", "Seal", "journal_key", "opened"]

logger = logging.getLogger(__name__)

KEY_FILE: Final = "journal.key"
"""The key's file in the state directory (mode ``0600``, this user's)."""
KEY_BYTES: Final = 32
"""The key's length (256 bits)."""
_MAC_HEX: Final = 2 * hashlib.sha256().digest_size
_UNSEALED: Final = b"-"  # the MAC field of a line written without a key: never trusted
_CREATE_WAIT_S: Final = 1.0  # how long a reader waits for another process's half-written key


class JournalKey:
    """This user's journal key (the bytes stay out of ``repr``).

    Args:
        secret: The key (:data:`KEY_BYTES` bytes).
        path: Where it lives, for messages.
    """

    __slots__ = ("_secret", "path")

    def __init__(self, secret: bytes, path: Path) -> None:
        self._secret = secret
        self.path = path

    def __repr__(self) -> str:
        return f"JournalKey({str(self.path)!r})"

    def seed(self, root: Path, token: str) -> bytes:
        """The chain's start for the record ``token`` of the workspace ``root`` (its real path)."""
        named = b"steerable-journal-2\0" + os.fsencode(str(root)) + b"\0" + token.encode("ascii")
        return hmac.digest(self._secret, named, "sha256")

    def link(self, previous: bytes, payload: bytes) -> bytes:
        """The MAC of one line: over the previous line's MAC (or the seed) and this line's JSON."""
        return hmac.digest(self._secret, previous + b"\0" + payload, "sha256")


class Seal:
    """A writer's running chain: :meth:`line` turns each JSON payload into a sealed journal line.

    Args:
        key: The key (``None``: lines are written unsealed, and recovery never acts on them).
        root: The workspace's real path.
        token: The record's token (its file name without ``.json``).
    """

    def __init__(self, key: JournalKey | None, root: Path, token: str) -> None:
        self._key = key
        self._last = key.seed(root, token) if key is not None else b""

    def line(self, payload: bytes) -> bytes:
        """``<MAC hex> <payload>`` and a newline, chained after the lines before it."""
        if self._key is None:
            return _UNSEALED + b" " + payload + b"\n"
        self._last = self._key.link(self._last, payload)
        return self._last.hex().encode() + b" " + payload + b"\n"


def opened(raw: bytes, key: JournalKey, root: Path, token: str) -> list[bytes] | None:
    """The JSON payloads of a record whose seal checks, or ``None`` when its first line does not.

    The payloads of the lines that check, in order, up to the first that does not (a torn last
    line: the writer died while appending it; nothing depends on a line never fsynced). A record
    whose header does not check was not written by this user's steerable for this workspace and
    this token: it is forged, copied or unsealed.
    """
    last = key.seed(root, token)
    payloads: list[bytes] = []
    for line in raw.split(b"\n"):
        mac, _, payload = line.partition(b" ")
        if len(mac) != _MAC_HEX:
            break
        link = key.link(last, payload)
        if not hmac.compare_digest(link.hex().encode(), mac):
            break
        payloads.append(payload)
        last = link
    return payloads or None


_KEYS: dict[str, JournalKey | None] = {}
_KEYS_LOCK = threading.Lock()


def journal_key(state_dir: Path | None = None) -> JournalKey | None:
    """This user's journal key in ``state_dir`` (default: ``config.default_state_dir()``).

    Read once per process and state directory (later calls return the same key); created on first
    use with :data:`KEY_BYTES` random bytes, mode ``0600``, and never through a symbolic link. A key
    file that is not a regular file of this user's, that others may read or write, or that holds
    anything but a key is refused. ``None`` (logged once, at WARNING) when there is no usable key:
    then the journal is written unsealed and recovery acts on no record.
    """
    directory = default_state_dir() if state_dir is None else state_dir
    cache_key = str(directory)
    with _KEYS_LOCK:
        if cache_key in _KEYS:
            return _KEYS[cache_key]
        try:
            key: JournalKey | None = JournalKey(_load_or_create(directory), directory / KEY_FILE)
        except (OSError, _Refused) as exc:
            if isinstance(exc, OSError) and exc.errno in FULL_DISK_ERRNOS:  # say which file, and the fix
                exc = state_write_error("the write-journal key", directory / KEY_FILE, exc)
            logger.warning(
                "steerable: no write-journal key (%s): crash recovery is off in this process, and "
                "interrupted writes and commands are left as they are",
                exc,
            )
            key = None
        _KEYS[cache_key] = key
        return key


class _Refused(Exception):
    """A key file that must not be trusted (its message says why)."""


def _load_or_create(directory: Path) -> bytes:
    with contextlib.suppress(FileExistsError):
        os.makedirs(directory, mode=0o700)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + _CREATE_WAIT_S
        while True:
            try:
                return _read_key(dir_fd, directory)
            except FileNotFoundError:
                _create_key(dir_fd)
            except _Short:  # another process is writing it (a filesystem without hard links)
                if time.monotonic() >= deadline:
                    raise _Refused(f"{directory / KEY_FILE} does not hold a key") from None
                time.sleep(0.01)
    finally:
        os.close(dir_fd)


class _Short(Exception):
    """The key file is shorter than a key."""


def _read_key(dir_fd: int, directory: Path) -> bytes:
    path = directory / KEY_FILE
    try:
        fd = os.open(KEY_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Refused(f"{path} is a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Refused(f"{path} is not a regular file")
        if info.st_uid != os.geteuid():
            raise _Refused(f"{path} belongs to another user")
        if info.st_mode & 0o077:
            raise _Refused(f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o}; want 600)")
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) < KEY_BYTES:
        raise _Short
    if len(data) > KEY_BYTES:
        raise _Refused(f"{path} does not hold a key")
    return data


def _create_key(dir_fd: int) -> None:
    """Write a new key beside its name, then link it there (a reader never sees half a key)."""
    tmp = f".{KEY_FILE}.{secrets.token_hex(6)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
    try:
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, KEY_FILE, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:  # another process made one first: that one is read
            return
        except OSError:  # no hard links here: created in place (a reader waits for its 32 bytes)
            _create_in_place(dir_fd)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)


def _create_in_place(dir_fd: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(KEY_FILE, flags, 0o600, dir_fd=dir_fd)
    except FileExistsError:
        return
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
