"""A failed write to steerable's own state, said with the file, the cause and the setting that moves it.

The state directory (``--state-dir``, else ``STEERABLE_STATE_DIR``, else ``$XDG_STATE_HOME/steerable``)
holds the session records, spilled tool results and the write-journal key. A write there that
fails would otherwise surface as the OS's bare ``[Errno 28] No space left on device``, naming
neither the file nor what to do; :func:`state_write_error` turns it into a
:class:`StateWriteError` that says which file, that the disk is full (or the quota used up), and
how to put the state on another disk.
"""

from __future__ import annotations

import errno
import os
from typing import Final

from .config import STATE_DIR_ENV

__all__ = ["FULL_DISK_ERRNOS", "StateWriteError", "state_write_error"]

FULL_DISK_ERRNOS: Final = frozenset({errno.ENOSPC, errno.EDQUOT})
"""``No space left on device`` and ``Disk quota exceeded``: no write there succeeds until space is freed."""


class StateWriteError(OSError):
    """A write to the state directory failed; ``str()`` is the whole sentence, ``errno`` the OS's.

    Attributes:
        filename: The file that could not be written.
    """

    def __init__(self, message: str, code: int | None, filename: str) -> None:
        super().__init__(code, message)
        self.filename = filename
        self._message = message

    def __str__(self) -> str:
        return self._message


def state_write_error(what: str, path: str | os.PathLike[str], exc: OSError) -> StateWriteError:
    """The :class:`StateWriteError` for ``exc``, raised writing ``what`` to ``path``.

    A full disk or an exhausted quota says so and names the settings that choose the state
    directory; any other error gives the OS's words after the file.
    """
    why = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno == errno.ENOSPC:
        cause = f"the disk is full ({why})"
    elif exc.errno == errno.EDQUOT:
        cause = f"the disk quota is used up ({why})"
    else:
        cause = why
    message = f"cannot write {what} {os.fspath(path)}: {cause}"
    if exc.errno in FULL_DISK_ERRNOS:
        message += (
            "; free space there, or put steerable's state directory on another disk with --state-dir "
            f"or {STATE_DIR_ENV}"
        )
    return StateWriteError(message, exc.errno, os.fspath(path))
