"""FILE-12: the per-file lock's pieces, in this process (the cross-process tests are in test_integrity.py).

A second handle on one inode conflicts with the first even in one process (``flock`` locks open file
descriptions), so a holder here stands for another process.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from steerable_agent_runtime.errors import WorkspaceError
from steerable_agent_runtime.workspace._flock import LockHeld, PathLocks, lock_holder


def hold(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_a_file_is_locked_by_its_own_inode_and_an_absent_one_by_nothing_file_12(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    held = PathLocks().acquire([tmp_path / "a.txt", tmp_path / "new.txt", tmp_path / "a.txt"])
    try:
        assert len(held.fds) == 1 and held.taken == 1
        assert os.fstat(held.fds[0]).st_ino == (tmp_path / "a.txt").stat().st_ino
        assert held.absent == frozenset({tmp_path / "new.txt"})
        other = PathLocks().acquire([tmp_path / "b.txt"])  # another file of the folder: no wait
        other.release()
    finally:
        held.release()
    assert held.fds == [] and held.absent == frozenset()


def test_links_fifos_and_unreadable_files_lock_no_inode_of_their_own_file_12(tmp_path: Path) -> None:
    (tmp_path / "target.txt").write_text("t\n")
    os.symlink(tmp_path / "target.txt", tmp_path / "link.txt")
    os.mkfifo(tmp_path / "pipe")
    held = PathLocks().acquire([tmp_path / "link.txt", tmp_path / "pipe"])
    try:
        assert held.fds == [] and held.absent == frozenset({tmp_path / "link.txt", tmp_path / "pipe"})
    finally:
        held.release()


def test_a_held_file_times_out_naming_this_process_file_12(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    holder = hold(tmp_path / "a.txt")
    try:
        started = time.monotonic()
        with pytest.raises(WorkspaceError) as refused:
            PathLocks().acquire([tmp_path / "a.txt"], timeout_s=0.05)
        assert time.monotonic() - started >= 0.05
        info = os.fstat(holder)
        assert lock_holder((info.st_dev, info.st_ino)) is not None
    finally:
        os.close(holder)
    assert refused.value.code == "file_locked"
    assert refused.value.data is not None and refused.value.data["holderPid"] == os.getpid()
    assert f"another process (pid {os.getpid()}, " in refused.value.error
    assert refused.value.error.endswith(
        f"has held the write lock of {tmp_path / 'a.txt'} for over 0.05 s; nothing was written. Try again "
        "in a moment"
    )


def test_a_file_replaced_while_waiting_is_locked_anew_file_12(tmp_path: Path) -> None:
    # the writer's rename puts a new inode at the path: the lock taken on the old one stands for nothing
    (tmp_path / "a.txt").write_text("old\n")
    locks, held = PathLocks(), LockHeld()
    holder = hold(tmp_path / "a.txt")
    try:
        assert not locks.try_acquire([tmp_path / "a.txt"], held)
        (tmp_path / "new.tmp").write_text("new\n")
        os.replace(tmp_path / "new.tmp", tmp_path / "a.txt")
    finally:
        os.close(holder)
    assert locks.try_acquire([tmp_path / "a.txt"], held)
    try:
        assert os.fstat(held.fds[0]).st_ino == (tmp_path / "a.txt").stat().st_ino
    finally:
        held.release()


def test_a_file_made_while_the_others_were_taken_is_locked_instead_file_12(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    locks, held = PathLocks(), LockHeld()
    holder = hold(tmp_path / "a.txt")
    try:
        assert not locks.try_acquire([tmp_path / "a.txt", tmp_path / "b.txt"], held)
        (tmp_path / "b.txt").write_text("made meanwhile\n")
    finally:
        os.close(holder)
    assert locks.try_acquire([tmp_path / "a.txt", tmp_path / "b.txt"], held)
    try:
        assert len(held.fds) == 2 and held.absent == frozenset()
    finally:
        held.release()


def test_no_holder_is_named_for_an_unlocked_inode_file_12(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    info = (tmp_path / "a.txt").stat()
    assert lock_holder((info.st_dev, info.st_ino)) is None
