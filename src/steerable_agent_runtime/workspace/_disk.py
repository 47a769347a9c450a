"""Disk primitives for the file tools: bounded reads and atomic, mode-preserving writes.

These are blocking functions; the workspace calls them through ``asyncio.to_thread`` so the event
loop never waits on the disk.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from ..errors import WorkspaceError

__all__ = ["atomic_write", "read_bytes", "remove_file"]


def _default_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


_NEW_FILE_MODE = _default_mode()


def read_bytes(real: Path, *, display: str, max_bytes: int) -> bytes | None:
    """Read a whole regular file.

    Args:
        real: The resolved path.
        display: The path as the model knows it, for error messages.
        max_bytes: Refuse files larger than this many bytes.

    Returns:
        The content, or ``None`` when the file does not exist.

    Raises:
        WorkspaceError: ``is_directory``, ``not_a_file`` (device, FIFO...), ``file_too_large``,
            ``permission_denied``.
    """
    try:
        info = real.stat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except PermissionError:
        raise WorkspaceError(
            "permission_denied", f"{display}: permission denied", data={"path": display}
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise WorkspaceError(
            "is_directory",
            f"{display} is a directory; use list_dir to see its entries",
            data={"path": display},
        )
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError("not_a_file", f"{display} is not a regular file", data={"path": display})
    if info.st_size > max_bytes:
        raise WorkspaceError(
            "file_too_large",
            f"{display} is {info.st_size} bytes, over the file tools' limit of {max_bytes} bytes; "
            "use grep to find what you need, or bash for bulk processing",
            data={"path": display, "bytes": info.st_size, "limit": max_bytes},
        )
    try:
        # O_NONBLOCK: a FIFO swapped in after the stat cannot block the read; O_NOFOLLOW: nor can a
        # symlink swapped in for the resolved path. The fstat below re-checks what was opened.
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except PermissionError:
        raise WorkspaceError(
            "permission_denied", f"{display}: permission denied", data={"path": display}
        ) from None
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WorkspaceError(
            "not_a_file", f"{display} changed while being opened ({exc.strerror})", data={"path": display}
        ) from None
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise WorkspaceError("not_a_file", f"{display} is not a regular file", data={"path": display})
        data = handle.read(opened.st_size + 1)  # one exact-size buffer, not a max_bytes one
        if len(data) > opened.st_size:  # the file grew since the stat
            data += handle.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise WorkspaceError(
            "file_too_large",
            f"{display} is over the file tools' limit of {max_bytes} bytes",
            data={"path": display, "limit": max_bytes},
        )
    return data


def atomic_write(real: Path, data: bytes) -> None:
    """Replace ``real`` with ``data`` atomically: a temp file in the same directory, fsync, rename.

    The existing file's permission bits are kept; a new file gets ``0o666 & ~umask``. Missing
    parent directories are created. On any failure the temp file is removed and the original is
    untouched.

    Raises:
        OSError: When the directory is not writable or the disk is full.
    """
    try:
        mode = stat.S_IMODE(real.stat().st_mode)
    except FileNotFoundError:
        mode = _NEW_FILE_MODE
        real.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".steerable-tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def remove_file(real: Path) -> None:
    """Delete a regular file (a missing file is not an error)."""
    with contextlib.suppress(FileNotFoundError):
        real.unlink()
