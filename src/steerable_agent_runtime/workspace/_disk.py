"""Disk primitives for the file tools: bounded reads, atomic mode-preserving writes, deletes.

Every operation walks from the workspace root to the file's directory one component at a time
with ``O_NOFOLLOW`` directory handles (``openat``), then acts relative to that handle. A symlink or
file swapped into the path after :meth:`WorkspaceRoot.resolve` checked it therefore cannot send a
read, a write or a delete anywhere else: the walk fails instead (``path_changed``). These are
blocking functions; the workspace runs them through ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from ..errors import WorkspaceError

__all__ = ["atomic_write", "file_mode", "open_directory", "read_bytes", "remove_empty_dirs", "remove_file"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _default_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


_NEW_FILE_MODE = _default_mode()


def _changed(display: str, code: int | None) -> WorkspaceError:
    if code == errno.ENOTDIR:
        return WorkspaceError(
            "not_a_directory",
            f"{display}: a parent of this path is a file, not a directory",
            data={"path": display},
        )
    return WorkspaceError(
        "path_changed",
        f"{display} changed while it was being accessed (a directory was replaced or became a symlink); "
        "check the path and try again",
        data={"path": display},
    )


def _parent_dir(
    root: Path, real: Path, display: str, *, create: bool = False, created: list[Path] | None = None
) -> contextlib.AbstractContextManager[int]:
    return open_directory(root, real.parent, display, create=create, created=created)


@contextlib.contextmanager
def open_directory(
    root: Path, parent: Path, display: str, *, create: bool = False, created: list[Path] | None = None
) -> Iterator[int]:
    """Yield an ``O_NOFOLLOW`` directory handle for ``parent``, walked down from ``root``.

    Raises:
        FileNotFoundError: A component is missing (and ``create`` is false).
        WorkspaceError: ``not_a_directory`` or ``path_changed`` when a component is a file or a symlink.
    """
    if parent.is_relative_to(root):
        base, parts = root, parent.relative_to(root).parts
    else:  # allow_outside: walk from the filesystem root
        base, parts = Path(parent.anchor), parent.parts[1:]
    fd = os.open(base, _DIR_FLAGS)
    try:
        current = base
        for part in parts:
            current = current / part
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o777, dir_fd=fd)
                if created is not None:
                    created.append(current)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    link = stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
                    raise _changed(display, errno.ELOOP if link else errno.ENOTDIR) from None
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def read_bytes(real: Path, *, root: Path, display: str, max_bytes: int) -> bytes | None:
    """Read a whole regular file.

    Args:
        real: The resolved path.
        root: The workspace root (the walk starts there).
        display: The path as the model knows it, for error messages.
        max_bytes: Refuse files larger than this many bytes.

    Returns:
        The content, or ``None`` when the file does not exist.

    Raises:
        WorkspaceError: ``is_directory``, ``not_a_file`` (device, FIFO...), ``file_too_large``,
            ``permission_denied``, ``not_a_directory``, ``path_changed``.
    """
    try:
        with _parent_dir(root, real, display) as dir_fd:
            # O_NONBLOCK: a FIFO cannot block the open; O_NOFOLLOW: a symlink swapped in is refused.
            fd = os.open(real.name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except PermissionError:
        raise WorkspaceError(
            "permission_denied", f"{display}: permission denied", data={"path": display}
        ) from None
    except IsADirectoryError:
        raise WorkspaceError(
            "is_directory",
            f"{display} is a directory; use list_dir to see its entries",
            data={"path": display},
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WorkspaceError(
                "not_a_file", f"{display} is not a regular file", data={"path": display}
            ) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise WorkspaceError(
                "is_directory",
                f"{display} is a directory; use list_dir to see its entries",
                data={"path": display},
            )
        raise WorkspaceError("not_a_file", f"{display} is not a regular file", data={"path": display})
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > max_bytes:
            raise WorkspaceError(
                "file_too_large",
                f"{display} is {info.st_size} bytes, over the file tools' limit of {max_bytes} bytes; "
                "use bash (head, sed, split) to work with it",
                data={"path": display, "bytes": info.st_size, "limit": max_bytes},
            )
        data = handle.read(info.st_size + 1)  # one exact-size buffer, not a max_bytes one
        if len(data) > info.st_size:  # the file grew since the stat
            data += handle.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise WorkspaceError(
            "file_too_large",
            f"{display} is over the file tools' limit of {max_bytes} bytes",
            data={"path": display, "limit": max_bytes},
        )
    return data


def file_mode(real: Path, *, root: Path, display: str) -> int | None:
    """Return the permission bits of an existing regular file, or ``None`` when it does not exist."""
    try:
        with _parent_dir(root, real, display) as dir_fd:
            info = os.stat(real.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


def atomic_write(
    real: Path,
    data: bytes,
    *,
    root: Path,
    display: str,
    mode: int | None = None,
    created: list[Path] | None = None,
) -> None:
    """Replace ``real`` with ``data`` atomically: a temp file in the same directory, fsync, rename.

    Args:
        real: The resolved target.
        data: The new content.
        root: The workspace root (the walk starts there).
        display: The path as the model knows it, for error messages.
        mode: Permission bits for the result; default: the existing file's, else ``0o666 & ~umask``.
            An existing file's owner and group are kept too when the writer may set them (root).
        created: Directories created on the way are appended here (for a rollback).

    On any failure the temp file is removed and the original is untouched.

    Raises:
        WorkspaceError: ``not_a_directory``, ``path_changed``.
        OSError: When the directory is not writable or the disk is full.
    """
    with _parent_dir(root, real, display, create=True, created=created) as dir_fd:
        owner: tuple[int, int] | None = None
        try:
            existing = os.stat(real.name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISREG(existing.st_mode):
                owner = (existing.st_uid, existing.st_gid)
                if mode is None:
                    mode = stat.S_IMODE(existing.st_mode)
        except FileNotFoundError:
            pass
        if mode is None:
            mode = _NEW_FILE_MODE
        tmp = f".steerable-{secrets.token_hex(8)}.tmp"  # short: any valid target name fits beside it
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
                if owner is not None and owner != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(PermissionError):  # only a privileged writer can keep it
                        os.fchown(handle.fileno(), *owner)
                # never the set-user-ID / set-group-ID bits: a command may have set them (io_uring, an
                # ACL...) hoping a root sidecar's write would make its program set-uid root
                os.fchmod(handle.fileno(), mode & ~(stat.S_ISUID | stat.S_ISGID))
            os.replace(tmp, real.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise


def remove_file(real: Path, *, root: Path, display: str) -> None:
    """Delete a file (the name itself, never a symlink's target); a missing file is not an error."""
    try:
        with _parent_dir(root, real, display) as dir_fd:
            os.unlink(real.name, dir_fd=dir_fd)
    except FileNotFoundError:
        return


def remove_empty_dirs(dirs: list[Path]) -> None:
    """Remove directories a failed operation created, deepest first, if they are still empty."""
    for path in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            path.rmdir()
