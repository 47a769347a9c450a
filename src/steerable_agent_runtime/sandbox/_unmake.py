"""An ordinary folder a command made a git directory: what made it one goes, nothing of the user's.

git takes any folder holding ``HEAD`` with ``objects/`` and ``refs/`` (or with ``commondir``) for a
repository, whatever its name, and runs the hooks and ``core.fsmonitor`` its ``config`` names
(SAFE-2). After a run, the audit (``_audit.py``) calls :func:`unmake_git_dir` for each such folder
that was not one before (the workspace root included):

1. markers that are wholly the run's (it and everything in it changed during the run: ``ctime``)
   are removed, ``HEAD`` first, then ``commondir``, ``refs``, ``objects``, until the folder is no
   git directory;
2. if the folder is still a git directory (the command assembled it from entries older than the
   run: a ``HEAD`` written by an earlier call, folders renamed into place), the marker changed
   last is moved aside, to ``<name>.steerable-moved-<hex>``, beside it: git no longer takes the
   folder for a repository, and no byte of the user's is deleted.
"""

from __future__ import annotations

import os
import secrets
import stat
from typing import Final, Protocol

from .._protected import GIT_MARKERS, is_git_directory

__all__ = ["ALL_FRESH_MAX", "MOVED_SUFFIX", "Reverting", "all_fresh", "unmake_git_dir"]

MOVED_SUFFIX: Final = ".steerable-moved"
"""What a marker moved aside is renamed to: ``objects`` -> ``objects.steerable-moved-1a2b3c4d``."""
_MARKERS: Final = ("HEAD", "commondir", "refs", "objects")
assert set(_MARKERS) == GIT_MARKERS
ALL_FRESH_MAX: Final = 10_000
"""Entries one marker's walk looks through before it counts the marker as not wholly the run's."""


class Reverting(Protocol):
    """What this needs of the audit's revert pass (``_audit._Revert``)."""

    def fresh(self, info: os.stat_result) -> bool:
        """Did the run change the entry ``info`` describes?"""

    def remove(self, dir_fd: int, name: str, now: os.stat_result, spec: None, rel: str) -> None:
        """Remove ``name`` whole, reporting ``rel``."""

    def done(self, rel: str) -> None:
        """Report ``rel`` put back."""


def unmake_git_dir(revert: Reverting, folder_fd: int, rel: str) -> None:
    """Make the folder open at ``folder_fd`` (``rel``: its path, ``""`` for the root) no git directory.

    Raises:
        OSError: When a removal or the move aside fails (the caller reports the entry as failed).
    """
    prefix = f"{rel}/" if rel else ""
    present = {marker: info for marker in _MARKERS if (info := _lstat(folder_fd, marker)) is not None}
    for marker in _MARKERS:  # HEAD first: the least the command made that undoes it
        if not is_git_directory(present):
            return
        info = present[marker] if marker in present else None
        if info is not None and all_fresh(revert, folder_fd, marker, info, [ALL_FRESH_MAX]):
            revert.remove(folder_fd, marker, info, None, prefix + marker)
            del present[marker]
    if not is_git_directory(present):
        return
    newest = max(present, key=lambda marker: present[marker].st_ctime_ns)
    os.rename(
        newest, f"{newest}{MOVED_SUFFIX}-{secrets.token_hex(4)}", src_dir_fd=folder_fd, dst_dir_fd=folder_fd
    )
    revert.done(prefix + newest)


def all_fresh(revert: Reverting, dir_fd: int, name: str, info: os.stat_result, budget: list[int]) -> bool:
    """Did the run change ``name`` and everything in it (never following links)?"""
    budget[0] -= 1
    if budget[0] < 0 or not revert.fresh(info):
        return False
    if not stat.S_ISDIR(info.st_mode):
        return True
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        for child in os.listdir(fd):
            sub = _lstat(fd, child)
            if sub is not None and not all_fresh(revert, fd, child, sub, budget):
                return False
    finally:
        os.close(fd)
    return True


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
