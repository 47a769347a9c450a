"""The last step of a write: the final look at the target and the rename, back to back (FILE-12).

A writer that is not steerable (an editor, a command) cannot be locked out, so a write re-checks its
target right before the rename (``_disk.WriteGuard``), and what such a writer saves between that
check and ``rename(2)`` is lost to the rename. ``os.stat`` and a read release the GIL, and taking it
back waits for the other threads of the process, up to the switch interval (5 ms) and more: with 32
calls in flight that window was 1.3-2.2 ms at p99 and up to 24 ms (issue 28,
``benchmarks/editor_race.py``; docs/file-tools.md, "Editors and other programs").

So once the guard has vouched for the target, :func:`replace_if_unchanged` looks at it one last time
with ``statx`` called through ``ctypes.PyDLL``, which keeps the GIL, compares it with the identity
the guard saw, and calls ``renameat`` at once. That call gives the GIL up only as the system call
starts, and nothing waits for it to come back before the rename: no other thread of this process
runs between the look and the rename, and the window is microseconds (27-46 at p99 under the same
load). The GIL is held for the ``statx`` and the comparison only, never for the rename (which frees
the old file: milliseconds for a large one). A change found at the last look is a ``conflict`` like
the guard's. A creation needs none of this: its rename never replaces a file
(:func:`rename_noreplace`, ``RENAME_NOREPLACE``).

Only on Linux, and only on local filesystems (:data:`LOCAL_FILESYSTEMS`): a ``statx`` that keeps the
GIL stops every thread of the process while it lasts, so on a network or FUSE filesystem, where it
may wait on a server, the rename stays ``os.replace`` (and the window as it was). ``ctypes`` is
loaded at the first write, not at start-up.
"""

from __future__ import annotations

import errno
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["LOCAL_FILESYSTEMS", "Identity", "rename_noreplace", "remove_if_unchanged", "replace_if_unchanged"]

Identity = tuple[int, int, int, int, int]
"""``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)``: a file as a write's checks see it."""

LOCAL_FILESYSTEMS: Final = frozenset(
    {
        0xEF53,  # ext2, ext3, ext4
        0x58465342,  # xfs
        0x9123683E,  # btrfs
        0x01021994,  # tmpfs
        0x858458F6,  # ramfs
        0x794C7630,  # overlayfs (containers)
        0xF2F52010,  # f2fs
        0x2FC12FC1,  # zfs
        0xCA451A4E,  # bcachefs
    }
)
"""``statfs`` ``f_type`` magic numbers of the filesystems whose renames keep the GIL (never a remote one)."""

Outcome = Literal["done", "changed", "deleted"]

_AT_SYMLINK_NOFOLLOW: Final = 0x100
_STATX_BASIC_STATS: Final = 0x7FF
_STATX_NEEDED: Final = 0x1 | 0x40 | 0x80 | 0x100 | 0x200  # type, mtime, ctime, ino, size
_UNSUPPORTED: Final = frozenset({errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP, errno.EINVAL})
"""``statx`` refused (an old kernel, a seccomp filter): the plain call, as on other systems."""


@dataclass(frozen=True, slots=True)
class _Calls:
    """The C library calls (``ctypes`` function pointers), bound once."""

    filesystem: Callable[[int], int]
    """The ``f_type`` of the filesystem holding a folder (``fstatfs``), or -1; gives the GIL up."""
    statx: Any
    """``statx(dir_fd, name, flags, mask, buf)``: keeps the GIL (``PyDLL``)."""
    renameat: Any
    """``renameat(dir_fd, old, dir_fd, new)``: gives the GIL up as the system call starts."""
    unlinkat: Any
    """``unlinkat(dir_fd, name, 0)``: likewise."""
    buffer: Callable[[], Any]
    """A new ``struct statx``."""
    address: Callable[[Any], Any]
    """``ctypes.byref``."""
    errno: Callable[[], int]
    """``ctypes.get_errno``: the errno of this thread's last call."""


def replace_if_unchanged(dir_fd: int, temp: str, name: str, seen: Identity) -> Outcome:
    """Rename ``temp`` onto ``name`` (both in ``dir_fd``) if ``name`` still has the identity ``seen``.

    ``seen`` is what the write's guard vouched for; the look and the rename run with no other thread
    of this process in between (see the module's docstring).

    Returns:
        ``done``; ``changed`` or ``deleted`` when ``name`` is no longer what the guard saw (nothing
        was renamed).

    Raises:
        OSError: When the rename fails.
    """
    return _if_unchanged(
        dir_fd,
        os.fsencode(name),
        seen,
        os.fsencode(temp),
        lambda: os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd),
    )


def remove_if_unchanged(dir_fd: int, name: str, seen: Identity) -> Outcome:
    """Delete ``name`` in ``dir_fd`` if it still has the identity ``seen`` (as :func:`replace_if_unchanged`).

    Raises:
        OSError: When the unlink fails.
    """
    return _if_unchanged(dir_fd, os.fsencode(name), seen, None, lambda: os.unlink(name, dir_fd=dir_fd))


def _if_unchanged(
    dir_fd: int, name: bytes, seen: Identity, temp: bytes | None, plain: Callable[[], None]
) -> Outcome:
    """Rename ``temp`` onto ``name`` (or delete ``name``) if it still has the identity ``seen``."""
    calls = _calls()
    # fstatfs gives the GIL up and takes it back: the look and the rename start on a fresh time slice
    if calls is None or calls.filesystem(dir_fd) not in LOCAL_FILESYSTEMS:
        plain()
        return "done"
    dev, ino, size, mtime, ctime = seen
    major, minor = os.major(dev), os.minor(dev)
    mtime_s, mtime_ns = divmod(mtime, 1_000_000_000)
    ctime_s, ctime_ns = divmod(ctime, 1_000_000_000)
    info = calls.buffer()
    address = calls.address(info)
    # From the look to the rename, no call gives the GIL up and no Python function runs: the only
    # point where this thread could let another one run is right after statx returns (a switch that
    # another thread has been waiting 5 ms for, seldom due within these microseconds).
    if calls.statx(dir_fd, name, _AT_SYMLINK_NOFOLLOW, _STATX_BASIC_STATS, address) != 0:
        code = calls.errno()
        if code == errno.ENOENT:
            return "deleted"
        if code in _UNSUPPORTED:
            plain()
            return "done"
        raise OSError(code, os.strerror(code))
    if (
        info.ino == ino
        and info.size == size
        and info.mtime.nsec == mtime_ns
        and info.ctime.nsec == ctime_ns
        and info.mtime.sec == mtime_s
        and info.ctime.sec == ctime_s
        and info.dev_minor == minor
        and info.dev_major == major
        and info.mask & _STATX_NEEDED == _STATX_NEEDED
    ):
        if temp is None:
            failed = calls.unlinkat(dir_fd, name, 0)
        else:
            failed = calls.renameat(dir_fd, temp, dir_fd, name)
        if failed:
            code = calls.errno()
            raise OSError(code, os.strerror(code))
        return "done"
    if info.mask & _STATX_NEEDED != _STATX_NEEDED:  # this filesystem does not say: as elsewhere
        plain()
        return "done"
    return "changed"


@functools.cache
def _calls() -> _Calls | None:
    """The calls :func:`replace_if_unchanged` makes, from the C library (Linux), or ``None``."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    class Timestamp(ctypes.Structure):
        _fields_ = [("sec", ctypes.c_int64), ("nsec", ctypes.c_uint32), ("reserved", ctypes.c_int32)]

    class Statx(ctypes.Structure):  # <linux/stat.h>: the same layout on every architecture
        _fields_ = [
            ("mask", ctypes.c_uint32),
            ("blksize", ctypes.c_uint32),
            ("attributes", ctypes.c_uint64),
            ("nlink", ctypes.c_uint32),
            ("uid", ctypes.c_uint32),
            ("gid", ctypes.c_uint32),
            ("mode", ctypes.c_uint16),
            ("spare0", ctypes.c_uint16),
            ("ino", ctypes.c_uint64),
            ("size", ctypes.c_uint64),
            ("blocks", ctypes.c_uint64),
            ("attributes_mask", ctypes.c_uint64),
            ("atime", Timestamp),
            ("btime", Timestamp),
            ("ctime", Timestamp),
            ("mtime", Timestamp),
            ("rdev_major", ctypes.c_uint32),
            ("rdev_minor", ctypes.c_uint32),
            ("dev_major", ctypes.c_uint32),
            ("dev_minor", ctypes.c_uint32),
            ("spare", ctypes.c_uint64 * 14),
        ]

    try:
        free = ctypes.CDLL(None, use_errno=True)  # gives the GIL up around each call
        held = ctypes.PyDLL(None, use_errno=True)  # keeps it
        fstatfs, statx, renameat, unlinkat = free.fstatfs, held.statx, free.renameat, free.unlinkat
    except (OSError, AttributeError):  # not glibc 2.28+ or musl 1.2.5+
        return None
    fstatfs.argtypes = [ctypes.c_int, ctypes.c_void_p]
    statx.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
    renameat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    unlinkat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    for call in (fstatfs, statx, renameat, unlinkat):
        call.restype = ctypes.c_int

    def filesystem(dir_fd: int) -> int:
        buffer = ctypes.create_string_buffer(512)  # struct statfs, f_type first (a long)
        if fstatfs(dir_fd, buffer) != 0:
            return -1
        return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF

    return _Calls(filesystem, statx, renameat, unlinkat, Statx, ctypes.byref, ctypes.get_errno)


@functools.cache
def rename_noreplace() -> Callable[[int, str, str], None] | None:
    """``renameat2(..., RENAME_NOREPLACE)`` from the C library (Linux, glibc 2.28+), or ``None``.

    The returned call renames within one folder and raises ``FileExistsError`` when the target
    exists; a filesystem without the flag gets a hard link and an unlink. Looked up at the first
    creation (``ctypes`` stays out of start-up).
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.renameat2
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int

    def noreplace(dir_fd: int, old: str, new: str) -> None:
        if call(dir_fd, os.fsencode(old), dir_fd, os.fsencode(new), 1) != 0:  # 1: RENAME_NOREPLACE
            code = ctypes.get_errno()
            if code in (errno.ENOSYS, errno.EINVAL):  # no such call here, or this filesystem lacks it
                os.link(old, new, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                os.unlink(old, dir_fd=dir_fd)
                return
            raise OSError(code, os.strerror(code))

    return noreplace
