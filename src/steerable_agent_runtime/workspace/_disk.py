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
import hashlib
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..errors import WorkspaceError, WriteConflictError
from ._codes import FileErrorCode
from ._rename import Identity, remove_if_unchanged, rename_noreplace, replace_if_unchanged

__all__ = [
    "DIR_FLAGS",
    "TEMP_NAME",
    "open_regular",
    "Snapshot",
    "WriteGuard",
    "check_unchanged",
    "file_mode",
    "file_version",
    "new_temp_name",
    "open_directory",
    "read_bytes",
    "read_snapshot",
    "remove_empty_dirs",
    "remove_file",
    "replace_temp",
    "sync_directory",
    "write_temp",
]

TEMP_NAME: Final = re.compile(r"\.steerable-[0-9a-f]{16}\.tmp")
"""A temp file a write creates beside its target (renamed onto it, or removed)."""


def new_temp_name() -> str:
    """A fresh temp file name (short: any valid target name fits beside it)."""
    return f".steerable-{secrets.token_hex(8)}.tmp"


DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
"""A file opened to read: ``O_NONBLOCK`` (a FIFO cannot block the open), ``O_NOFOLLOW`` (no symlink)."""


def _default_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


_NEW_FILE_MODE = _default_mode()


def _changed(display: str, code: int | None) -> WorkspaceError:
    if code == errno.ENOTDIR:
        return WorkspaceError(
            FileErrorCode.NOT_A_DIRECTORY,
            f"{display}: a parent of this path is a file, not a directory",
            data={"path": display},
        )
    return WorkspaceError(
        FileErrorCode.PATH_CHANGED,
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
    fd = os.open(base, DIR_FLAGS)
    try:
        current = base
        for part in parts:
            current = current / part
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                    if created is not None:
                        created.append(current)
                except FileExistsError:  # another process made it meanwhile
                    pass
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
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


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A file as a load saw it: its bytes and the identity a later write re-checks.

    Attributes:
        data: The content, or ``None`` when the file did not exist.
        identity: ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)`` of what was read, or ``None``.
        loaded_ns: ``time.time_ns()`` just before the open (a change in the same timestamp tick as the
            load cannot be told from the load by the identity alone).
    """

    data: bytes | None
    identity: Identity | None
    loaded_ns: int


def _identity(info: os.stat_result) -> Identity:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def read_bytes(real: Path, *, root: Path, display: str, max_bytes: int) -> bytes | None:
    """Read a whole regular file; ``None`` when it does not exist (see :func:`read_snapshot`)."""
    return read_snapshot(real, root=root, display=display, max_bytes=max_bytes).data


def open_regular(dir_fd: int, name: str, display: str) -> tuple[int, os.stat_result] | None:
    """Open ``name`` in the folder ``dir_fd`` for reading, as a regular file only.

    ``O_NONBLOCK``: a FIFO cannot block the open; ``O_NOFOLLOW``: a symlink swapped in is refused.

    Returns:
        ``(fd, its fstat)``, the caller closes ``fd``; ``None`` when ``name`` does not exist.

    Raises:
        WorkspaceError: ``is_directory``, ``not_a_file`` (a symlink, device, FIFO...),
            ``permission_denied``.
    """
    try:
        fd = _open_for_reading(dir_fd, name, display)
    except PermissionError:
        raise WorkspaceError(
            FileErrorCode.PERMISSION_DENIED, f"{display}: permission denied", data={"path": display}
        ) from None
    except IsADirectoryError:
        raise _is_directory(display) from None
    if fd is None:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise _is_directory(display)
        raise _not_a_file(display)
    return fd, info


def _open_for_reading(dir_fd: int, name: str, display: str) -> int | None:
    """``name`` in ``dir_fd`` opened with :data:`_READ_FLAGS`; ``None`` when it does not exist.

    Raises:
        WorkspaceError: ``not_a_file`` for a symlink (``ELOOP``).
        OSError: Any other failure of the open, as raised.
    """
    try:
        return os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _not_a_file(display) from None
        raise


def _not_a_file(display: str) -> WorkspaceError:
    return WorkspaceError(
        FileErrorCode.NOT_A_FILE, f"{display} is not a regular file", data={"path": display}
    )


def _is_directory(display: str) -> WorkspaceError:
    return WorkspaceError(
        FileErrorCode.IS_DIRECTORY,
        f"{display} is a directory; use list_dir to see its entries",
        data={"path": display},
    )


def read_snapshot(real: Path, *, root: Path, display: str, max_bytes: int) -> Snapshot:
    """Read a whole regular file and the identity a later write re-checks.

    Args:
        real: The resolved path.
        root: The workspace root (the walk starts there).
        display: The path as the model knows it, for error messages.
        max_bytes: Refuse files larger than this many bytes.

    Returns:
        The :class:`Snapshot` (``data`` ``None`` when the file does not exist).

    Raises:
        WorkspaceError: ``is_directory``, ``not_a_file`` (device, FIFO...), ``file_too_large``,
            ``permission_denied``, ``not_a_directory``, ``path_changed``.
    """
    loaded_ns = time.time_ns()
    try:
        with _parent_dir(root, real, display) as dir_fd:
            opened = open_regular(dir_fd, real.name, display)
    except FileNotFoundError:
        return Snapshot(None, None, loaded_ns)
    except PermissionError:
        raise WorkspaceError(
            FileErrorCode.PERMISSION_DENIED, f"{display}: permission denied", data={"path": display}
        ) from None
    if opened is None:
        return Snapshot(None, None, loaded_ns)
    fd, info = opened
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > max_bytes:
            raise WorkspaceError(
                FileErrorCode.FILE_TOO_LARGE,
                f"{display} is {info.st_size} bytes, over the file tools' limit of {max_bytes} bytes; "
                "use bash (head, sed, split) to work with it",
                data={"path": display, "bytes": info.st_size, "limit": max_bytes},
            )
        data = handle.read(info.st_size + 1)  # one exact-size buffer, not a max_bytes one
        if len(data) > info.st_size:  # the file grew since the stat
            data += handle.read(max_bytes + 1 - len(data))
        after = os.fstat(handle.fileno())
    if len(data) > max_bytes:
        raise WorkspaceError(
            FileErrorCode.FILE_TOO_LARGE,
            f"{display} is over the file tools' limit of {max_bytes} bytes",
            data={"path": display, "limit": max_bytes},
        )
    # the identity after the read: a change during the read then shows as a different identity later
    return Snapshot(data, _identity(after) if after.st_size == len(data) else None, loaded_ns)


_RECENT_NS: Final = 50_000_000
"""A file changed this close before a load (50 ms) may change again within the same timestamp tick."""


@dataclass(frozen=True, slots=True)
class WriteGuard:
    """The re-check right before a rename: the target must still be what the write was based on.

    Another steerable process cannot change it meanwhile (it waits for the lock); an editor or a
    command can, so the target's identity is compared with the load's, and its bytes when the identity
    changed or the file changed within 50 ms before the load (a same-tick change keeps the
    timestamps). The identity this check vouches for is looked at once more right before the rename,
    with no other thread running in between (``_rename.replace_if_unchanged``).

    Attributes:
        snapshot: What the write's load saw.
        display: The path as the model knows it, for the refusal.
    """

    snapshot: Snapshot
    display: str

    def check(self, dir_fd: int, name: str) -> Identity | None:
        """Raise ``conflict`` unless ``name`` in ``dir_fd`` is unchanged since the load.

        Returns:
            The identity the target has now (``None``: it does not exist, as at the load), for the
            last look right before the rename.

        Raises:
            WriteConflictError: ``conflict`` naming what happened.
        """
        try:
            info: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        before = self.snapshot
        if before.data is None:
            if info is None:
                return None
            raise self.conflict("was created by another program while this write was being prepared")
        if info is None:
            raise self.conflict("was deleted by another program while this write was being prepared")
        now = _identity(info)
        if before.identity == now and info.st_ctime_ns < before.loaded_ns - _RECENT_NS:
            return now
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(before.data):
            raise self.conflict("was changed by another program while this write was being prepared")
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
        except OSError:
            raise self.conflict("was replaced by another program while this write was prepared") from None
        with os.fdopen(fd, "rb") as handle:
            same = handle.read(len(before.data) + 1) == before.data
        if not same:
            raise self.conflict("was changed by another program while this write was being prepared")
        return now  # a change after the stat shows as a new identity at the last look

    def conflict(self, what: str) -> WriteConflictError:
        """The refusal, saying ``what`` happened to the file."""
        return _conflict(self.display, what)


def _conflict(display: str, what: str) -> WriteConflictError:
    return WriteConflictError(
        FileErrorCode.CONFLICT,
        f"{display} {what} (an editor or a command); nothing was written. "
        "Read it again, then write with the new version",
        data={"path": display},
    )


def file_version(real: Path, *, root: Path, display: str, max_bytes: int) -> str | None:
    """The SHA-256 version of a regular file, hashed in 1 MiB reads; ``None`` when absent.

    Raises:
        WorkspaceError: ``not_a_file`` for anything but a regular file, ``file_too_large`` over
            ``max_bytes`` (a sparse 4 TB file must not stall recovery), and the walk's codes.
    """
    try:
        with _parent_dir(root, real, display) as dir_fd:
            fd = _open_for_reading(dir_fd, real.name, display)
    except FileNotFoundError:
        return None
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _not_a_file(display)
        if info.st_size > max_bytes:
            raise WorkspaceError(
                FileErrorCode.FILE_TOO_LARGE, f"{display} is over {max_bytes} bytes", data={"path": display}
            )
        digest = hashlib.sha256()
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def file_mode(real: Path, *, root: Path, display: str) -> int | None:
    """Return the permission bits of an existing regular file, or ``None`` when it does not exist."""
    try:
        with _parent_dir(root, real, display) as dir_fd:
            info = os.stat(real.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


def write_temp(
    real: Path,
    data: bytes,
    *,
    root: Path,
    display: str,
    mode: int | None = None,
    created: list[Path] | None = None,
    on_temp: Callable[[str], None] | None = None,
) -> str:
    """Write ``data`` to a new, fsynced temp file beside ``real`` and return its name.

    The temp file gets ``real``'s final mode: ``mode``, default the existing file's, else
    ``0o666 & ~umask``, never with the set-id bits; and an existing file's owner and group when the
    writer may set them (root). ``created`` collects the directories made on the way; ``on_temp`` is
    called with the temp file's name before it is created (the write's intent record). The temp file
    is removed again on any failure. :func:`replace_temp` renames it into place.

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
        tmp = new_temp_name()
        if on_temp is not None:
            on_temp(tmp)
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
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    return tmp


def replace_temp(
    real: Path,
    temp: str,
    *,
    root: Path,
    display: str,
    guard: WriteGuard | None = None,
    seen: Identity | None = None,
    sync: bool = True,
    create: bool = False,
) -> None:
    """Rename the temp file ``temp`` (beside ``real``) onto ``real``, after ``guard``'s re-check.

    Args:
        real: The target.
        temp: The temp file's name, from :func:`write_temp`.
        root: The workspace root.
        display: The target's display path.
        guard: Re-checked right before the rename.
        seen: The identity an earlier check vouched for (a patch checks all its files first); the
            target is renamed over only if it still has it. Taken from ``guard`` when there is one.
        sync: fsync the directory afterwards (a caller renaming several files does it once per directory).
        create: The target must not exist (:func:`create_from_temp`); implied by a ``guard`` that
            saw no file.

    The last look at an existing target and the rename run back to back, with no other thread of
    this process between them (``_rename.replace_if_unchanged``). On a failure the temp file is
    removed.

    Raises:
        WriteConflictError: ``conflict`` from the guard or the last look, or a file made there
            meanwhile (``create``).
        WorkspaceError: ``not_a_directory``, ``path_changed``.
        OSError: When the rename fails.
    """
    create = create or (guard is not None and guard.snapshot.data is None)
    with _parent_dir(root, real, display) as dir_fd:
        try:
            if guard is not None:
                seen = guard.check(dir_fd, real.name)
            if create:
                create_from_temp(dir_fd, temp, real.name, display)
            elif seen is not None:
                outcome = replace_if_unchanged(dir_fd, temp, real.name, seen)
                if outcome != "done":
                    raise _conflict(
                        display, f"was {outcome} by another program while this write was being prepared"
                    )
            else:
                os.replace(temp, real.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        if sync:
            os.fsync(dir_fd)


def create_from_temp(dir_fd: int, temp: str, name: str, display: str) -> None:
    """Rename ``temp`` to ``name`` (both in ``dir_fd``) only if ``name`` does not exist (FILE-12).

    A file's creation takes no lock: two writers making one file race here, and the second is
    refused, never a silent overwrite. ``renameat2(RENAME_NOREPLACE)`` where the kernel has it,
    else a hard link and an unlink; a filesystem with neither gets a plain rename.

    Raises:
        WriteConflictError: ``conflict`` when a file was made there meanwhile.
    """
    try:
        noreplace = rename_noreplace()
        if noreplace is not None:
            noreplace(dir_fd, temp, name)
            return
        os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        raise WriteConflictError(
            FileErrorCode.CONFLICT,
            f"{display} was created by another program while this write was being prepared (an editor "
            "or a command); nothing was written. Read it again, then write with the new version",
            data={"path": display},
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL, errno.EMLINK):
            raise
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # no links here: the guard's check
        return
    os.unlink(temp, dir_fd=dir_fd)


def check_unchanged(real: Path, *, root: Path, guard: WriteGuard) -> Identity | None:
    """Run ``guard``'s re-check on ``real`` now (before a batch of renames).

    Returns:
        The identity it vouched for (``seen`` for :func:`replace_temp` and :func:`remove_file`), or
        ``None`` when the file does not exist.

    Raises:
        WriteConflictError: ``conflict`` when it changed since its load.
    """
    try:
        with _parent_dir(root, real, guard.display) as dir_fd:
            return guard.check(dir_fd, real.name)
    except FileNotFoundError:  # its directory is gone: it was deleted (or never existed)
        if guard.snapshot.data is not None:
            raise guard.conflict(
                "was deleted by another program while this write was being prepared"
            ) from None
        return None


def sync_directory(directory: Path, *, root: Path) -> None:
    """Flush a directory (after renames or unlinks in it); a missing directory is skipped."""
    with contextlib.suppress(FileNotFoundError), open_directory(root, directory, str(directory)) as dir_fd:
        os.fsync(dir_fd)


def remove_file(
    real: Path, *, root: Path, display: str, sync: bool = False, seen: Identity | None = None
) -> bool:
    """Delete a file (the name itself, never a symlink's target); a missing file is not an error.

    Args:
        real: The file.
        root: The workspace root.
        display: Its display path.
        sync: fsync the directory afterwards.
        seen: The identity an earlier check vouched for: the file is deleted only if it still has it
            (looked at right before the unlink, as :func:`replace_temp` does before a rename).

    Returns:
        Whether there was a file to delete.

    Raises:
        WriteConflictError: ``conflict`` when ``seen`` is given and the file changed (not when it is
            gone: there is nothing to delete).
    """
    try:
        with _parent_dir(root, real, display) as dir_fd:
            if seen is None:
                os.unlink(real.name, dir_fd=dir_fd)
            else:
                outcome = remove_if_unchanged(dir_fd, real.name, seen)
                if outcome == "deleted":
                    return False
                if outcome != "done":
                    raise _conflict(
                        display, "was changed by another program while this write was being prepared"
                    )
            if sync:
                os.fsync(dir_fd)
    except FileNotFoundError:
        return False
    return True


def remove_empty_dirs(dirs: list[Path], *, root: Path) -> None:
    """Remove directories a failed operation created, deepest first, if they are still empty.

    Each is removed by name through an ``O_NOFOLLOW`` walk of its parent from ``root``, so a parent
    swapped for a symlink meanwhile never makes this remove a directory somewhere else.
    """
    for path in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError, WorkspaceError), open_directory(root, path.parent, str(path)) as fd:
            os.rmdir(path.name, dir_fd=fd)
