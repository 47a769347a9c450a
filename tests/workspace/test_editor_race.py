"""The editor race (issue 28): what an outside program saves between a write's last look and its rename.

A writer that is not steerable cannot be locked out, so each write re-checks its target right before
the rename; what remains is the window between that last look and ``rename(2)``. These tests pin it
down: the last look and the rename run with no other thread of the process in between (a real child
process, a real competing thread, the interpreter's own audit events), a change found at the last
look is refused, and a patch re-checks each file right before its own rename (FILE-12).
``benchmarks/editor_race.py`` measures the window and the saves lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from integrity_helpers import child_env

from steerable_agent_runtime.errors import WorkspaceError, WriteConflictError
from steerable_agent_runtime.workspace import Workspace, _apply, _rename
from steerable_agent_runtime.workspace._disk import remove_file, replace_temp

REPO_SRC = Path(__file__).resolve().parents[2] / "src"
TEMP = ".steerable-0123456789abcdef.tmp"


def _held_here(folder: Path) -> bool:
    """Whether the last look and the rename keep the GIL in ``folder`` (Linux, a local filesystem)."""
    calls = _rename._calls()
    if calls is None:
        return False
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return calls.filesystem(fd) in _rename.LOCAL_FILESYSTEMS
    finally:
        os.close(fd)


# A steerable process writing a 16 MiB file while another thread spins a counter, taking the GIL at
# every chance it gets. The counter is noted right before each look at the file (the guard's os.stat
# or read, the last look's statx) and right before each rename of it (os.replace, or renameat): the
# same count from the last look to the rename means no other thread ran between them. The notes wrap
# the calls (``_disk``'s os, ``_rename``'s C calls) and give the GIL up nowhere. Every file counts as
# just changed, so the guard compares the bytes: a read long enough for the spinner to take the GIL,
# which the code before issue 28 then had to wait for before its rename (a switch interval, 5 ms).
_CHILD = textwrap.dedent(
    """
    import asyncio, dataclasses, json, os, sys, threading, types
    sys.path.insert(0, {src!r})
    from pathlib import Path
    from steerable_agent_runtime.workspace import Workspace, _disk

    NAME, WRITES, SIZE = "doc.txt", 3, 16 << 20
    counter, running, last, gaps = [0], [True], {{}}, []

    def look():
        last[threading.get_ident()] = counter[0]

    def renaming(name):
        if name == NAME:
            gaps.append(counter[0] - last.pop(threading.get_ident(), -10**9))

    class Timed:
        def __init__(self, handle):
            self.handle = handle
        def read(self, *args):
            look()
            return self.handle.read(*args)
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            self.handle.close()
        def __getattr__(self, name):
            return getattr(self.handle, name)

    class Os(types.ModuleType):
        def __getattr__(self, name):
            return getattr(os, name)

    def stat(*args, **kwargs):
        look()
        return os.stat(*args, **kwargs)

    def replace(src, dst, **kwargs):
        renaming(dst)
        return os.replace(src, dst, **kwargs)

    proxy = Os("os")
    proxy.stat, proxy.replace = stat, replace
    proxy.fdopen = lambda *args, **kwargs: Timed(os.fdopen(*args, **kwargs))
    _disk.os = proxy
    try:
        from steerable_agent_runtime.workspace import _rename
    except ImportError:  # before issue 28
        _rename = None
    if _rename is not None:
        _rename.os = proxy
        calls = _rename._calls()

        def statx(*args):
            look()
            return calls.statx(*args)

        def renameat(dir_fd, old, new_dir_fd, new):
            renaming(new.decode())
            return calls.renameat(dir_fd, old, new_dir_fd, new)

        held = dataclasses.replace(calls, statx=statx, renameat=renameat)
        _rename._calls = lambda: held

    def spin():
        while running[0]:
            counter[0] += 1

    async def main():
        ws = Workspace({root!r}, require_read_before_write=False)
        moved = []
        for n in range(WRITES):
            before = counter[0]
            await ws.write_file(NAME, str(n) * SIZE)
            moved.append(counter[0] - before)
        return moved

    _disk._RECENT_NS = 10**15  # every file changed just now: the guard compares the bytes (a long read)
    Path({root!r}, NAME).write_text("-" * SIZE)
    sys.setswitchinterval(0.005)  # the default
    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        moved = asyncio.run(main())
    finally:
        running[0] = False
        spinner.join()
    print(json.dumps({{"moved": moved, "gaps": gaps}}))
    """
)


def test_no_other_thread_runs_between_the_last_look_and_the_rename_file_12(tmp_path):
    # Before issue 28 the last look was os.stat or a read and the rename os.replace: taking the GIL
    # back after the look waited for the other threads, so the spinner ran there (gaps of hundreds of
    # thousands). Now the look (statx) keeps the GIL and the rename follows at once.
    if not _held_here(tmp_path):
        pytest.skip("the last look keeps the GIL on Linux, on a local filesystem only")
    child = subprocess.run(
        [sys.executable, "-c", _CHILD.format(src=str(REPO_SRC), root=str(tmp_path))],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
    )
    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout)
    assert all(moved > 0 for moved in report["moved"])  # the spinner did run during every write
    assert report["gaps"] == [0, 0, 0]  # ... but never between a last look and its rename
    assert (tmp_path / "doc.txt").read_text() == "2" * (16 << 20)


def _stat_identity(path: Path) -> tuple[int, int, int, int, int]:
    info = path.stat()
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def test_a_change_after_the_guard_is_refused_at_the_last_look_file_12(tmp_path):
    # What the guard vouched for (seen) is looked at again right before the rename: a save made after
    # the guard's check (here: before the call) is a conflict, and the other program's bytes stay.
    if not _held_here(tmp_path):
        pytest.skip("the last look runs on Linux, on a local filesystem only")
    target = tmp_path / "a.txt"
    target.write_text("as loaded\n")
    seen = _stat_identity(target)
    target.write_text("the editor\n")  # the same size: only the timestamps tell
    (tmp_path / TEMP).write_text("steerable\n")
    with pytest.raises(WriteConflictError) as refused:
        replace_temp(target, TEMP, root=tmp_path, display="a.txt", seen=seen)
    assert refused.value.code == "conflict"
    assert refused.value.error == (
        "a.txt was changed by another program while this write was being prepared (an editor or a "
        "command); nothing was written. Read it again, then write with the new version"
    )
    assert target.read_text() == "the editor\n" and not (tmp_path / TEMP).exists()

    os.replace(tmp_path / "a.txt", tmp_path / "b.txt")  # an editor's save by rename: a new file
    (tmp_path / "a.txt").write_text("the editor\n")
    (tmp_path / TEMP).write_text("steerable\n")
    with pytest.raises(WriteConflictError):
        replace_temp(target, TEMP, root=tmp_path, display="a.txt", seen=_stat_identity(tmp_path / "b.txt"))
    assert target.read_text() == "the editor\n"

    target.unlink()
    (tmp_path / TEMP).write_text("steerable\n")
    with pytest.raises(WriteConflictError) as deleted:
        replace_temp(target, TEMP, root=tmp_path, display="a.txt", seen=seen)
    assert "a.txt was deleted by another program" in deleted.value.error
    assert not target.exists() and not (tmp_path / TEMP).exists()

    target.write_text("unchanged\n")
    (tmp_path / TEMP).write_text("steerable\n")
    replace_temp(target, TEMP, root=tmp_path, display="a.txt", seen=_stat_identity(target))
    assert target.read_text() == "steerable\n" and not (tmp_path / TEMP).exists()


def test_a_patch_delete_looks_at_the_file_right_before_the_unlink_file_12(tmp_path):
    if not _held_here(tmp_path):
        pytest.skip("the last look runs on Linux, on a local filesystem only")
    target = tmp_path / "gone.txt"
    target.write_text("as loaded\n")
    seen = _stat_identity(target)
    target.write_text("the editor\n")
    with pytest.raises(WriteConflictError):
        remove_file(target, root=tmp_path, display="gone.txt", seen=seen)
    assert target.read_text() == "the editor\n"
    assert remove_file(target, root=tmp_path, display="gone.txt", seen=_stat_identity(target))
    assert not target.exists()
    assert not remove_file(
        target, root=tmp_path, display="gone.txt", seen=seen
    )  # already gone: nothing to do


async def test_a_file_an_editor_saves_while_a_patch_renames_is_kept_and_the_patch_undone_file_12(
    tmp_path, monkeypatch
):
    # A patch checks all its files before its first rename, then writes its commit record (an fsync)
    # and renames them one by one: an editor saving b.txt meanwhile used to lose its save. Each file is
    # now looked at again right before its own rename; a change there undoes the patch.
    if not _held_here(tmp_path):
        pytest.skip("the last look runs on Linux, on a local filesystem only")
    (tmp_path / "a.txt").write_text("a old\n")
    (tmp_path / "b.txt").write_text("b old\n")
    ws = Workspace(tmp_path)
    await ws.read_file("a.txt")
    await ws.read_file("b.txt")
    real_replace = replace_temp  # what _apply calls

    def editor_saves_b_during_the_renames(real, temp, **kwargs):
        real_replace(real, temp, **kwargs)
        if real.name == "a.txt" and (tmp_path / "b.txt").read_text() == "b old\n":
            (tmp_path / "b.txt").write_text("b saved\n")  # after a.txt's rename, before b.txt's

    monkeypatch.setattr(_apply, "replace_temp", editor_saves_b_during_the_renames)
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n-a old\n+a new\n"
        "*** Update File: b.txt\n-b old\n+b new\n*** End Patch"
    )
    with pytest.raises(WorkspaceError) as refused:
        await _apply.apply_patch(ws, patch)
    assert refused.value.code == "conflict"
    assert refused.value.error == (
        "could not apply the patch: b.txt was changed by another program while this write was being "
        "prepared (an editor or a command); nothing was written. Read it again, then write with the new "
        "version; nothing was changed"
    )
    assert (tmp_path / "a.txt").read_text() == "a old\n"  # undone
    assert (tmp_path / "b.txt").read_text() == "b saved\n"  # the editor's save is kept
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".steerable") == ["a.txt", "b.txt"]
