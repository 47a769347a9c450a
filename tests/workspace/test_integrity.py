"""Integrity under real conditions (issue 11): two processes on one file, kill -9 mid-patch, an editor
writing under a running call. Real processes, real signals, real renames: nothing here is mocked.

FILE-12: cross-process compare-and-swap. FILE-13: crash-atomic multi-file patches and temp files.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from integrity_helpers import (
    SessionProcess,
    child_env,
    committed_patch,
    counter_file,
    lost_updates,
    sealed_record,
    steerable_argv,
    steerable_call,
    two_process_edits,
)

from mounts import tmpfs
from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd
from steerable_agent_runtime.errors import WorkspaceError, WriteConflictError
from steerable_agent_runtime.sandbox._protect import coarse_now
from steerable_agent_runtime.workspace import Edit, Workspace, version_of
from steerable_agent_runtime.workspace._apply import _entries, _Plan, _stage
from waiting import grace, wait_until

REPO_SRC = Path(__file__).resolve().parents[2] / "src"


def leftovers(root: Path) -> list[str]:
    temps = [p.relative_to(root).as_posix() for p in root.rglob(".steerable-*.tmp")]
    txn = root / ".steerable" / "txn"
    return sorted(temps + ([f"txn/{p.name}" for p in txn.iterdir()] if txn.exists() else []))


# -- FILE-12: two processes, one file -------------------------------------------------------------


async def test_two_session_processes_editing_one_file_lose_no_update_file_12(tmp_path):
    # The reproduction 1: two `steerable session` processes read a 240 KB file and edit
    # different lines of it in a loop. Every successful edit must be in the final file; the loser of
    # a race gets `conflict`, never a silent overwrite.
    (tmp_path / "big.txt").write_text(counter_file(240_000))
    a, b = await two_process_edits(tmp_path, "big.txt", 30.0, until_each=5)
    text = (tmp_path / "big.txt").read_text()
    assert a.other == {} and b.other == {}
    assert a.successes > 5 and b.successes > 5
    assert lost_updates(text, a, b) == 0, (a, b)
    assert leftovers(tmp_path) == []


async def test_a_session_and_a_sidecar_share_the_lock_file_12(tmp_path):
    from steerable_sidecar.sidecar._client import SidecarClient

    (tmp_path / "big.txt").write_text(counter_file(240_000))
    line = (tmp_path / "big.txt").read_text().split("\n").index("A: 0") + 1
    session = await SessionProcess.start(tmp_path)
    successes = {"A": 0, "B": 0}
    try:
        async with await SidecarClient.start(workspace=str(tmp_path), env=child_env()) as sidecar:

            async def bump(call, name: str) -> None:
                # until both have written a few times: a fixed window starved one side on a loaded machine
                deadline = time.monotonic() + 30.0
                while min(successes.values()) <= 3 and time.monotonic() < deadline:
                    read = await call("read_file", {"path": "big.txt", "offset": line, "limit": 2})
                    value = int(
                        next(x for x in read["data"]["content"].splitlines() if x.startswith(name))[3:]
                    )
                    edit = {"oldText": f"\n{name}: {value}\n", "newText": f"\n{name}: {value + 1}\n"}
                    result = await call("edit_file", {"path": "big.txt", "edits": [edit]})
                    if result["success"]:
                        successes[name] += 1
                    else:
                        assert result["data"]["code"] == "conflict", result

            async def via_session(name, arguments):
                return await session.call(name, **arguments)

            async def via_sidecar(name, arguments):
                return (await sidecar.invoke(name, arguments)).to_wire()

            await asyncio.gather(bump(via_session, "A"), bump(via_sidecar, "B"))
    finally:
        await session.close()
    text = (tmp_path / "big.txt").read_text()
    assert successes["A"] > 3 and successes["B"] > 3
    assert f"\nA: {successes['A']}\n" in text and f"\nB: {successes['B']}\n" in text


_HOLDER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {src!r})
    from pathlib import Path
    from steerable_agent_runtime.workspace._flock import PathLocks
    held = PathLocks().acquire([Path(p) for p in {dirs!r}])
    print("held", flush=True)
    time.sleep(60)
    """
)


def _hold_lock(root: Path, dirs: list[str]) -> subprocess.Popen[str]:
    """Another process holding the write lock of ``dirs`` (relative to ``root``) until it is killed."""
    code = _HOLDER.format(src=str(REPO_SRC), dirs=[str(root / d) for d in dirs])
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


async def test_a_held_lock_makes_a_writer_wait_then_fail_with_file_locked_file_12(tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    holder = _hold_lock(tmp_path, ["a.txt"])
    try:
        router = workspace_tools_for_cwd(tmp_path, bash=False)
        router.workspace.lock_timeout_s = 0.3
        await router.dispatch(ToolCall(id="r", name="read_file", arguments={"path": "a.txt"}))
        started = time.monotonic()
        result = await router.dispatch(
            ToolCall(id="w", name="write_file", arguments={"path": "a.txt", "content": "b\n"})
        )
        waited = time.monotonic() - started
    finally:
        _stop(holder)
    wire = result.to_wire()
    # the holder is named: its pid and command line (/proc/locks)
    head = f"another process (pid {holder.pid}, {Path(sys.executable).name} -c import sys, time sys.path."
    assert wire["error"].startswith(head), wire["error"]
    assert wire["error"].endswith(
        ") has held the write lock of a.txt for over 0.3 s; nothing was written. Try again in a moment"
    )
    assert wire["data"] == {"code": "file_locked", "paths": ["a.txt"], "holderPid": holder.pid}
    assert wire["needsFollowup"] is True
    assert 0.3 <= waited < 10.0  # the lock timeout, not the holder's 60 s: it never lets go by itself
    assert (tmp_path / "a.txt").read_text() == "a\n"


async def test_a_lock_on_one_file_never_holds_up_another_in_its_folder_file_12(tmp_path):
    # FILE-12 (issue 28): the lock is per file, so a write of b.txt does not wait for a.txt's holder
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    holder = _hold_lock(tmp_path, ["a.txt"])
    try:
        router = workspace_tools_for_cwd(tmp_path, bash=False)
        router.workspace.lock_timeout_s = 0.3
        await router.dispatch(ToolCall(id="r", name="read_file", arguments={"path": "b.txt"}))
        result = await router.dispatch(
            ToolCall(id="w", name="write_file", arguments={"path": "b.txt", "content": "B\n"})
        )
        created = await router.dispatch(
            ToolCall(id="c", name="write_file", arguments={"path": "c.txt", "content": "C\n"})
        )
    finally:
        _stop(holder)
    assert result.success and created.success, (result.error, created.error)
    assert (tmp_path / "b.txt").read_text() == "B\n" and (tmp_path / "a.txt").read_text() == "a\n"


async def test_a_busy_file_in_this_process_says_busy_not_another_process_file_12(tmp_path):
    # FILE-12 (issue 28): calls of one process queue in order; one that waits past the deadline is
    # told this process is busy with the file, never that another process holds it
    ws = Workspace(tmp_path, lock_timeout_s=0.2)
    paths = [ws.resolve_file("a.txt")[0]]
    async with ws.locked(paths):
        with pytest.raises(WorkspaceError) as refused:
            await ws.write_file("a.txt", "x\n")
    assert refused.value.code == "file_locked"
    assert refused.value.error == (
        "busy: this steerable process has been writing a.txt for over 0.2 s (earlier calls still in "
        "flight); nothing was written. Try again in a moment"
    )
    assert not (tmp_path / "a.txt").exists()


async def test_a_killed_lock_holder_releases_its_lock_file_12(tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    holder = _hold_lock(tmp_path, ["a.txt"])
    router = workspace_tools_for_cwd(tmp_path, bash=False)
    await router.dispatch(ToolCall(id="r", name="read_file", arguments={"path": "a.txt"}))
    write = asyncio.create_task(
        router.dispatch(ToolCall(id="w", name="write_file", arguments={"path": "a.txt", "content": "b\n"}))
    )
    await asyncio.sleep(grace(0.3, why="a write that ignored the held lock would be done"))
    assert not write.done()  # waiting for the holder
    os.kill(holder.pid, signal.SIGKILL)
    _stop(holder)
    result = await asyncio.wait_for(write, 5)
    assert result.success, result.error
    assert (tmp_path / "a.txt").read_text() == "b\n"


async def test_patches_taking_the_same_files_in_opposite_orders_do_not_deadlock_file_12(tmp_path):
    (tmp_path / "a.txt").write_text("0\n")
    (tmp_path / "b.txt").write_text("0\n")
    env = {"STEERABLE_REQUIRE_READ_BEFORE_WRITE": "0"}
    first = await SessionProcess.start(tmp_path, **env)
    second = await SessionProcess.start(tmp_path, **env)

    async def loop(session: SessionProcess, order: tuple[str, str], rounds: int) -> int:
        applied = 0
        for _ in range(rounds):
            values = {p: (tmp_path / p).read_text().strip() for p in order}
            body = "".join(f"*** Update File: {p}\n@@\n-{values[p]}\n+{int(values[p]) + 1}\n" for p in order)
            result = await session.call("apply_patch", patch=f"*** Begin Patch\n{body}*** End Patch")
            if result["success"]:
                applied += 1
            else:
                assert result["data"]["code"] in {"context_not_found", "conflict"}, result
        return applied

    try:
        done = await asyncio.wait_for(
            asyncio.gather(loop(first, ("a.txt", "b.txt"), 40), loop(second, ("b.txt", "a.txt"), 40)), 60
        )
    finally:
        await first.close()
        await second.close()
    a, b = (int((tmp_path / p).read_text()) for p in ("a.txt", "b.txt"))
    assert a == b == sum(done)  # every applied patch changed both files, none was lost


# -- an editor writing under a running call ------------------------------------------------------


async def test_an_editor_writing_during_a_write_gets_a_conflict_not_an_overwrite_file_12(tmp_path):
    # A writer that is not steerable cannot be locked out: the target is re-checked right before the
    # rename. Here a thread plays the editor: as soon as steerable's temp file appears (the write is
    # under way), it rewrites the target in place, keeping its size.
    big = "x" * 40_000_000 + "\n"
    (tmp_path / "big.txt").write_text(big)
    ws = Workspace(tmp_path)
    await ws.read_file("big.txt", limit=1)
    stop = threading.Event()

    def editor() -> None:
        while not stop.is_set():
            if any(p.name.startswith(".steerable-") for p in tmp_path.iterdir()):
                with open(tmp_path / "big.txt", "r+b") as handle:
                    handle.write(b"y")
                return
            time.sleep(0.0002)

    thread = threading.Thread(target=editor)
    thread.start()
    try:
        with pytest.raises(WriteConflictError) as caught:
            await ws.edit_file("big.txt", [Edit("xxxx\n", "done\n")])
    finally:
        stop.set()
        thread.join()
    assert caught.value.code == "conflict"
    assert caught.value.error == (
        "big.txt was changed by another program while this write was being prepared (an editor or a "
        "command); nothing was written. Read it again, then write with the new version"
    )
    assert (tmp_path / "big.txt").read_bytes()[:2] == b"yx"  # the editor's change is kept
    assert leftovers(tmp_path) == []


# -- FILE-13: crash-atomic multi-file patches ---------------------------------------------------


def _state(root: Path, names: list[str]) -> set[str]:
    return {(root / n).read_text().splitlines()[-1] for n in names}


async def test_a_crash_after_the_first_rename_is_rolled_forward_at_the_next_start_file_13(tmp_path):
    # The reproduction 2, as the disk is left by a process killed once a.txt is replaced and
    # before b.txt is: the commit record is on disk, a.txt is new, b.txt's new content is a temp file.
    (tmp_path / "a.txt").write_text("old\n")
    (tmp_path / "b.txt").write_text("filler\n" * 100_000 + "old\n")
    ws = Workspace(tmp_path, require_read_before_write=False)
    plan = _Plan()
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    for real in (a, b):
        plan.original[real] = real.read_bytes()
        plan.final[real] = real.read_bytes().replace(b"old\n", b"new\n")
    intent = ws.begin_intent("apply_patch")
    temps: dict[Path, str] = {}
    _stage(ws, intent, plan.final, {}, [], temps)
    intent.commit(_entries(ws, plan.final, plan.original, temps))
    os.replace(tmp_path / temps[a], a)  # the first rename, then the "crash":
    intent.abandon()  # closes its descriptor: the kernel drops a dead process's lock exactly like this
    assert _state(tmp_path, ["a.txt", "b.txt"]) == {"new", "old"}

    reopened = Workspace(tmp_path)  # the next start of any surface
    assert _state(tmp_path, ["a.txt", "b.txt"]) == {"new"}
    assert reopened.recovered == [
        "rolled forward an interrupted apply_patch (its process died); completed b.txt; already done a.txt"
    ]
    assert leftovers(tmp_path) == []


async def test_a_running_process_finishes_a_patch_killed_between_its_renames_file_13(tmp_path):
    # issue 28: a process already running when a patch's process died between its renames never
    # shows nor builds on the half-applied files: its next read or write finishes the patch first
    (tmp_path / "a.txt").write_text("a first\nold\n")
    (tmp_path / "b.txt").write_text("b first\nold\n")
    running = Workspace(tmp_path)  # opened before the crash: its start had nothing to settle
    dying = Workspace(tmp_path, require_read_before_write=False)
    plan = _Plan()
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    for real in (a, b):
        plan.original[real] = real.read_bytes()
        plan.final[real] = real.read_bytes().replace(b"old\n", b"new\n")
    intent = dying.begin_intent("apply_patch")
    temps: dict[Path, str] = {}
    _stage(dying, intent, plan.final, {}, [], temps)
    intent.commit(_entries(dying, plan.final, plan.original, temps))
    os.replace(tmp_path / temps[a], a)  # the first rename, then the process dies:
    intent.abandon()  # closes its descriptor: the kernel drops a dead process's lock exactly like this
    assert _state(tmp_path, ["a.txt", "b.txt"]) == {"new", "old"}
    # b.txt, which the patch had not reached: the running process reads the patch's content...
    read = await running.read_file("b.txt")
    assert read["content"] == "b first\nnew\n"
    assert running.recovered == [
        "rolled forward an interrupted apply_patch (its process died); completed b.txt; already done a.txt"
    ]
    # ...and its edit lands on top of it, so the patch is whole and stays whole
    await running.edit_file("b.txt", [Edit("b first\n", "B FIRST\n")])
    assert b.read_text() == "B FIRST\nnew\n" and a.read_text() == "a first\nnew\n"
    assert leftovers(tmp_path) == []


async def test_a_running_process_finishes_it_before_a_write_too_file_13(tmp_path):
    # the same, when the running process's first call is a write to the file the patch had not reached
    (tmp_path / "a.txt").write_text("old\n")
    (tmp_path / "b.txt").write_text("old\n")
    running = Workspace(tmp_path, require_read_before_write=False)
    plan = _Plan()
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    for real in (a, b):
        plan.original[real] = b"old\n"
        plan.final[real] = b"new\n"
    intent = running.begin_intent("apply_patch")
    temps: dict[Path, str] = {}
    _stage(running, intent, plan.final, {}, [], temps)
    intent.commit(_entries(running, plan.final, plan.original, temps))
    os.replace(tmp_path / temps[a], a)
    intent.abandon()
    with pytest.raises(WriteConflictError) as refused:  # written against "old", which it no longer is
        await running.write_file("b.txt", "mine\n", expected_version=version_of(b"old\n"))
    assert refused.value.code == "conflict"
    assert _state(tmp_path, ["a.txt", "b.txt"]) == {"new"}
    assert leftovers(tmp_path) == []


async def test_a_patch_process_killed_mid_renames_is_finished_by_a_running_session_file_13(tmp_path):
    # the same with a real `steerable call apply_patch` SIGKILLed once its first file is replaced,
    # while this process (a session already running) holds the workspace open
    for attempt in range(5):
        root = tmp_path / f"try{attempt}"
        root.mkdir()
        names, patch = _patch_workspace(root)
        running = Workspace(root)
        kill_during_patch(root, patch, first_renamed=names[0])
        if _state(root, names) == {"new", "old"}:  # killed between its renames (not after the last)
            break
    else:
        pytest.skip("the patch finished before every kill landed (an idle machine)")
    last = await running.read_file(names[-1])  # the last file the patch changes: not reached when killed
    assert _state(root, names) == {"new"}
    assert last["version"] == version_of((root / names[-1]).read_bytes())
    assert (root / "added" / "new.txt").read_text() == "new\n"
    assert leftovers(root) == []


async def test_an_uncommitted_patch_is_dropped_and_its_temp_files_removed_file_13(tmp_path):
    (tmp_path / "a.txt").write_text("old\n")
    (tmp_path / "sub").mkdir()
    ws = Workspace(tmp_path, require_read_before_write=False)
    intent = ws.begin_intent("apply_patch")
    created: list[Path] = []
    plan_final: dict[Path, bytes | None] = {tmp_path / "a.txt": b"new\n", tmp_path / "new/dir/c.txt": b"c\n"}
    _stage(ws, intent, plan_final, {}, created, {})
    intent.abandon()  # killed before the commit record
    assert leftovers(tmp_path) != []
    reopened = Workspace(tmp_path)
    assert (tmp_path / "a.txt").read_text() == "old\n"
    assert not (tmp_path / "new").exists()  # the directories it created are gone too
    assert reopened.recovered == [
        "removed 2 temp file(s) of an interrupted apply_patch (its process died before changing any file: "
        "nothing was applied)"
    ]
    assert leftovers(tmp_path) == []


async def test_recovery_leaves_a_file_changed_since_the_crash_alone_file_13(tmp_path):
    committed_patch(tmp_path, ("a.txt", "b.txt"))
    (tmp_path / "b.txt").write_text("a human edited this after the crash\n")
    reopened = Workspace(tmp_path)
    assert (tmp_path / "a.txt").read_text() == "new\n"
    assert (tmp_path / "b.txt").read_text() == "a human edited this after the crash\n"
    assert reopened.recovered == [
        "rolled forward an interrupted apply_patch (its process died); completed a.txt; "
        "left alone (changed since) b.txt"
    ]
    assert leftovers(tmp_path) == []


async def test_a_live_writers_intent_is_not_touched_by_another_start_file_13(tmp_path):
    (tmp_path / "a.txt").write_text("old\n")
    ws = Workspace(tmp_path)
    intent = ws.begin_intent("write")
    intent.note_temp(".steerable-0123456789abcdef.tmp")
    (tmp_path / ".steerable-0123456789abcdef.tmp").write_text("in flight\n")
    other = Workspace(tmp_path)  # a second process starting meanwhile (a new open file description)
    assert other.recovered == []
    assert (tmp_path / ".steerable-0123456789abcdef.tmp").exists()
    intent.finish()


async def test_a_forged_journal_cannot_move_a_temp_onto_a_file_outside_or_unrelated_file_13(tmp_path):
    # The second line of defence, behind the seal (test_journal_seal.py): even a record sealed with
    # this user's key (say a steerable bug wrote it) makes recovery rename only temp-named files onto
    # targets in the same directory whose version matches.
    (tmp_path / "victim.txt").write_text("keep\n")
    (tmp_path / ".steerable-aaaaaaaaaaaaaaaa.tmp").write_text("evil\n")
    (tmp_path / "evil.txt").write_text("evil\n")
    txn = tmp_path / ".steerable" / "txn"
    txn.mkdir(parents=True)
    entries = [
        {"target": "victim.txt", "temp": "evil.txt", "before": None, "after": None},
        {"target": "../outside.txt", "temp": ".steerable-aaaaaaaaaaaaaaaa.tmp", "before": None, "after": "x"},
        {
            "target": "victim.txt",
            "temp": ".steerable-aaaaaaaaaaaaaaaa.tmp",
            "before": "0" * 64,
            "after": "1" * 64,
        },
    ]
    lines = [{"v": 2, "op": "apply_patch"}, {"temp": "../../etc/passwd"}, {"commit": entries}]
    sealed_record(tmp_path, "0000000000000000", lines)
    Workspace(tmp_path)
    assert (tmp_path / "victim.txt").read_text() == "keep\n"
    assert (tmp_path / "evil.txt").read_text() == "evil\n"
    assert not (tmp_path.parent / "outside.txt").exists()
    assert list(txn.iterdir()) == []


_PATCHER_FILES = 200


def _patch_workspace(root: Path) -> tuple[list[str], str]:
    names = [f"f{n:03d}.txt" for n in range(_PATCHER_FILES)]
    for name in names:
        (root / name).write_text(f"{name}\nold\n")
    (root / "big.txt").write_text("filler line\n" * 200_000 + "old\n")
    names.append("big.txt")
    body = "".join(f"*** Update File: {n}\n@@\n-old\n+new\n" for n in names)
    return names, f"*** Begin Patch\n{body}*** Add File: added/new.txt\n+new\n*** End Patch"


def kill_during_patch(
    root: Path, patch: str, delay_s: float = 0.0, *, first_renamed: str | None = None
) -> None:
    """Run ``steerable call apply_patch`` and SIGKILL it.

    ``delay_s`` after its write intent appears; or, with ``first_renamed``, as soon as that file has
    its new content (the renames have begun: the issue's "killed once a.txt is replaced").
    """
    proc = subprocess.Popen(
        steerable_argv("call", root, "apply_patch", json.dumps({"patch": patch})),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=child_env(STEERABLE_REQUIRE_READ_BEFORE_WRITE="0"),
    )
    txn = root / ".steerable" / "txn"
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if first_renamed is not None:
            if (root / first_renamed).read_bytes().endswith(b"new\n"):
                break
        elif txn.exists() and any(p.suffix == ".json" for p in txn.iterdir()):
            time.sleep(delay_s)
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.mark.parametrize("trial", range(4))
def test_kill_9_at_a_random_moment_of_a_multi_file_patch_leaves_all_or_nothing_file_13(tmp_path, trial):
    # The reproduction 2 with real kills: after the next start every file is entirely old or
    # entirely new, all together, and no temp file or intent is left. benchmarks/file_integrity.py runs
    # 40+ trials and reports how many landed before, during and after the renames.
    names, patch = _patch_workspace(tmp_path)
    kill_during_patch(tmp_path, patch, random.Random(trial).uniform(0, 0.5))
    Workspace(tmp_path)  # the next start
    seen = _state(tmp_path, names)
    assert seen in ({"old"}, {"new"}), f"half-applied: {sorted(seen)}"
    assert (tmp_path / "added/new.txt").exists() == (seen == {"new"})
    assert leftovers(tmp_path) == []


def test_kill_9_once_the_first_file_is_replaced_is_finished_at_the_next_start_file_13(tmp_path):
    # The reproduction 2 exactly: killed once the first file is replaced, the others not yet.
    names, patch = _patch_workspace(tmp_path)
    kill_during_patch(tmp_path, patch, first_renamed=names[0])
    assert (tmp_path / names[0]).read_text().endswith("new\n")
    assert "old" in _state(tmp_path, names)  # half-applied on disk until the next start
    # the next start is a real surface: a one-shot `steerable call` that only lists a directory
    listed = steerable_call(tmp_path, "list_dir", "{}", timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert (
        "steerable: rolled forward an interrupted apply_patch (its process died); completed " in listed.stderr
    )
    assert _state(tmp_path, names) == {"new"} and (tmp_path / "added/new.txt").exists()
    assert leftovers(tmp_path) == []
    assert ".steerable" not in listed.stdout


async def test_listings_never_show_steerables_own_files_file_13(tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / ".steerable-0123456789abcdef.tmp").write_text("a killed writer's temp file\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".steerable-fedcba9876543210.tmp").write_text("another\n")
    router = workspace_tools_for_cwd(tmp_path, bash=False)
    await router.dispatch(ToolCall(id="r", name="read_file", arguments={"path": "a.txt"}))
    await router.dispatch(ToolCall(id="w", name="write_file", arguments={"path": "a.txt", "content": "b\n"}))
    assert (tmp_path / ".steerable").is_dir()
    listing = await router.dispatch(ToolCall(id="l", name="list_dir", arguments={}))
    assert listing.data is not None
    assert [e["name"] for e in listing.data["entries"]] == ["sub", "a.txt"]
    found = await router.dispatch(ToolCall(id="g", name="glob", arguments={"pattern": "**/*"}))
    assert found.data is not None
    assert found.data["files"] == ["a.txt"]
    grep = await router.dispatch(ToolCall(id="s", name="grep", arguments={"pattern": "."}))
    assert grep.data is not None
    assert {m["path"] for m in grep.data["matches"]} == {"a.txt"}


async def test_the_state_folder_is_ignored_by_git_file_13(tmp_path):
    if subprocess.run(["git", "init", "-q", str(tmp_path)]).returncode != 0:
        pytest.skip("git is not installed")
    router = workspace_tools_for_cwd(tmp_path, bash=False)
    await router.dispatch(ToolCall(id="w", name="write_file", arguments={"path": "a.txt", "content": "a\n"}))
    status = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == "?? a.txt\n"


async def test_a_write_without_the_lock_still_works_when_turned_off_file_12(tmp_path):
    router = workspace_tools_for_cwd(tmp_path, bash=False, environ={"STEERABLE_CROSS_PROCESS_LOCK": "0"})
    assert router.workspace.cross_process is None
    result = await router.dispatch(
        ToolCall(id="w", name="write_file", arguments={"path": "a.txt", "content": "a\n"})
    )
    assert result.success and not (tmp_path / ".steerable" / "lock").exists()


async def test_sessions_on_nested_workspace_roots_share_the_lock_file_12(tmp_path):
    # A session on the repository and another on a sub-folder of it write the same file: the lock is on
    # the file's own inode, the same for both, whatever root each was given.
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "big.txt").write_text(counter_file(240_000))
    line = (sub / "big.txt").read_text().split("\n").index("A: 0") + 1
    outer, inner = await SessionProcess.start(tmp_path), await SessionProcess.start(sub)
    successes = {"A": 0, "B": 0}

    async def bump(session: SessionProcess, path: str, name: str) -> None:
        # until both have written a few times: a fixed window starved one side on a loaded machine
        deadline = time.monotonic() + 30.0
        while min(successes.values()) <= 3 and time.monotonic() < deadline:
            read = await session.call("read_file", path=path, offset=line, limit=2)
            value = int(next(x for x in read["data"]["content"].splitlines() if x.startswith(name))[3:])
            edit = {"oldText": f"\n{name}: {value}\n", "newText": f"\n{name}: {value + 1}\n"}
            result = await session.call("edit_file", path=path, edits=[edit])
            if result["success"]:
                successes[name] += 1
            else:
                assert result["data"]["code"] == "conflict", result

    try:
        await asyncio.gather(bump(outer, "pkg/big.txt", "A"), bump(inner, "big.txt", "B"))
    finally:
        await outer.close()
        await inner.close()
    text = (sub / "big.txt").read_text()
    assert successes["A"] > 3 and successes["B"] > 3
    assert f"\nA: {successes['A']}\n" in text and f"\nB: {successes['B']}\n" in text


@pytest.fixture
def small_disk(tmp_path):
    """A real 1 MiB tmpfs (root only): a full disk, not a mocked ENOSPC."""
    with tmpfs(tmp_path / "disk", "size=1m") as mount:
        yield mount


async def test_a_full_disk_fails_the_write_and_keeps_the_original_file_11(small_disk):
    (small_disk / "a.txt").write_text("original\n")
    router = workspace_tools_for_cwd(small_disk, bash=False)
    await router.dispatch(ToolCall(id="r", name="read_file", arguments={"path": "a.txt"}))
    result = await router.dispatch(
        ToolCall(id="w", name="write_file", arguments={"path": "a.txt", "content": "x" * 2_000_000})
    )
    assert result.to_wire() == {
        "success": False,
        "needsFollowup": True,
        "error": "could not write a.txt: No space left on device",
        "data": {"code": "write_failed", "path": "a.txt"},
    }
    assert (small_disk / "a.txt").read_text() == "original\n"
    assert leftovers(small_disk) == []


async def test_a_full_disk_fails_a_patch_before_any_file_changes_file_13(small_disk):
    (small_disk / "a.txt").write_text("a\n")
    (small_disk / "b.txt").write_text("b\n")
    router = workspace_tools_for_cwd(small_disk, bash=False)
    for name in ("a.txt", "b.txt"):
        await router.dispatch(ToolCall(id=name, name="read_file", arguments={"path": name}))
    big = "".join(f"+{'y' * 99}\n" for _ in range(12_000))  # 1.2 MB: more than the disk holds
    patch = f"*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: c.txt\n{big}*** End Patch"
    result = await router.dispatch(ToolCall(id="p", name="apply_patch", arguments={"patch": patch}))
    assert result.data is not None
    assert result.data["code"] == "write_failed"
    assert result.error == "could not apply the patch: No space left on device (c.txt); nothing was changed"
    assert (small_disk / "a.txt").read_text() == "a\n" and not (small_disk / "c.txt").exists()
    assert leftovers(small_disk) == []


async def test_a_created_file_is_summarised_not_echoed_file_11(tmp_path):
    # issue 31: the model wrote the content; the result says what landed, not the lines again
    router = workspace_tools_for_cwd(tmp_path, bash=False)
    result = await router.dispatch(
        ToolCall(id="w", name="write_file", arguments={"path": "new.txt", "content": "one\ntwo\n"})
    )
    assert result.data == {
        "path": "new.txt",
        "version": version_of(b"one\ntwo\n"),
        "created": True,
        "bytes": 8,
        "lines": 2,
    }
    patch = "*** Begin Patch\n*** Add File: added.txt\n+hello\n*** End Patch"
    added = await router.dispatch(ToolCall(id="p", name="apply_patch", arguments={"patch": patch}))
    assert added.data is not None
    assert (added.data["diff"], added.data["linesAdded"], added.data["linesRemoved"]) == ("", 1, 0)


@pytest.mark.parametrize("planted", ["fifo", "symlink", "file"])
async def test_a_planted_journal_folder_fails_writes_clearly_never_hangs_file_13(tmp_path, planted):
    state = tmp_path / ".steerable"
    state.mkdir()
    (tmp_path / "elsewhere").mkdir()
    {
        "fifo": lambda: os.mkfifo(state / "txn"),
        "symlink": lambda: os.symlink(tmp_path / "elsewhere", state / "txn"),
        "file": lambda: (state / "txn").write_text(""),
    }[planted]()
    router = workspace_tools_for_cwd(tmp_path, bash=False)
    result = await asyncio.wait_for(
        router.dispatch(ToolCall(id="w", name="write_file", arguments={"path": "a.txt", "content": "a\n"})),
        10,
    )
    assert result.to_wire() == {
        "success": False,
        "needsFollowup": True,
        "error": ".steerable/txn in the workspace is not a directory (a symlink or a file); remove it so "
        "steerable can keep its write journal there",
        "data": {"code": "path_changed"},
    }
    assert not (tmp_path / "a.txt").exists() and list((tmp_path / "elsewhere").iterdir()) == []


async def test_a_forged_journal_cannot_plant_a_protected_file_at_the_next_start_file_13(tmp_path):
    # Behind the seal (a forged record is never read: test_journal_seal.py), recovery runs outside
    # the sandbox, so it refuses to roll an entry forward onto a protected path, versions matching
    # or not, even in a record sealed with this user's key.
    from steerable_agent_runtime.workspace import version_of

    (tmp_path / ".git").mkdir()
    config = b"[core]\n\tbare = false\n"
    evil = b"[core]\n\tfsmonitor = touch /tmp/pwned\n"
    (tmp_path / ".git" / "config").write_bytes(config)
    (tmp_path / ".git" / ".steerable-bbbbbbbbbbbbbbbb.tmp").write_bytes(evil)
    (tmp_path / ".steerable" / "txn").mkdir(parents=True)
    entry = {
        "target": ".git/config",
        "temp": ".git/.steerable-bbbbbbbbbbbbbbbb.tmp",
        "before": version_of(config),
        "after": version_of(evil),
    }
    sealed_record(tmp_path, "1111111111111111", [{"v": 2, "op": "apply_patch"}, {"commit": [entry]}])
    reopened = Workspace(tmp_path)
    assert (tmp_path / ".git" / "config").read_bytes() == config
    assert reopened.recovered == [
        "rolled forward an interrupted apply_patch (its process died); not written (protected paths) .git/config"
    ]


def test_a_forged_journal_over_a_huge_sparse_file_does_not_stall_the_next_start_file_13(tmp_path):
    # A sparse 100 GB file and a journal naming it a thousand times (sealed: an unsealed one is never
    # read); every later start must still open the workspace at once (recovery hashes at most twice
    # the tools' limit).
    with open(tmp_path / "big.bin", "wb") as handle:
        handle.truncate(100 * 2**30)
    txn = tmp_path / ".steerable" / "txn"
    txn.mkdir(parents=True)
    entries = [{"target": "big.bin", "temp": None, "before": "0" * 64, "after": None}] * 1000
    sealed_record(tmp_path, "2222222222222222", [{"v": 2, "op": "apply_patch"}, {"commit": entries}])
    for name in (".forged.json", ".3333333333333333.new"):
        (txn / name).write_bytes((txn / "2222222222222222.json").read_bytes())
    started = time.monotonic()
    done = steerable_call(tmp_path, "list_dir", "{}", timeout=60)
    assert done.returncode == 0, done.stderr
    # at once, not hashing 100 GB a thousand times (hours; the call would hit its 60 s timeout)
    assert time.monotonic() - started < 20
    assert (tmp_path / "big.bin").stat().st_size == 100 * 2**30  # left alone
    assert not (txn / "2222222222222222.json").exists()  # settled
    assert (txn / ".forged.json").exists()  # not an intent name: never read


def test_cleaning_up_never_removes_a_directory_outside_through_a_swapped_parent_file_13(tmp_path):
    from steerable_agent_runtime.workspace._disk import remove_empty_dirs

    root, outside = tmp_path / "ws", tmp_path / "outside"
    (outside / "d2").mkdir(parents=True)
    root.mkdir()
    os.symlink(outside, root / "d1")  # d1 was a directory the write made; a command swapped it for a link
    remove_empty_dirs([root / "d1" / "d2", root / "d1"], root=root)
    assert (outside / "d2").is_dir()
    assert (root / "d1").is_symlink()


async def test_a_file_another_process_creates_during_a_creation_is_never_overwritten_file_12(tmp_path):
    # A file that does not exist takes no lock (issue 28: creations in one folder never wait on each
    # other); another process creating the same file while this write is staged wins, and this write
    # is refused: before the rename by the re-check, in the last window by renameat2(RENAME_NOREPLACE)
    code = textwrap.dedent(
        f"""
        import os, sys, time
        from pathlib import Path
        target = Path({str(tmp_path / "new")!r})
        print("ready", flush=True)
        while not target.is_dir():
            pass
        (target / "a.txt").write_text("theirs\\n")
        print("made", flush=True)
        time.sleep(30)
        """
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        router = workspace_tools_for_cwd(tmp_path, bash=False)
        result = await router.dispatch(
            ToolCall(id="w", name="write_file", arguments={"path": "new/a.txt", "content": "x" * 60_000_000})
        )
        if holder.stdout.readline().strip() != "made":
            pytest.fail("the other process never made new/a.txt")
    finally:
        _stop(holder)
    assert result.data is not None
    assert result.data["code"] == "conflict", result.error
    assert result.error == (
        "new/a.txt was created by another program while this write was being prepared (an editor or a "
        "command); nothing was written. Read it again, then write with the new version"
    )
    assert (tmp_path / "new" / "a.txt").read_text() == "theirs\n" and leftovers(tmp_path) == []


def test_a_creation_never_replaces_a_file_made_in_the_last_moment_file_12(tmp_path):
    # the window after the re-check: the rename itself refuses to replace (renameat2 RENAME_NOREPLACE,
    # else link + unlink)
    from steerable_agent_runtime.workspace._disk import replace_temp

    (tmp_path / ".steerable-tmp-0123456789ab").write_text("ours\n")
    (tmp_path / "a.txt").write_text("theirs\n")
    with pytest.raises(WriteConflictError) as refused:
        replace_temp(
            tmp_path / "a.txt", ".steerable-tmp-0123456789ab", root=tmp_path, display="a.txt", create=True
        )
    assert refused.value.code == "conflict"
    assert (tmp_path / "a.txt").read_text() == "theirs\n"
    assert not (tmp_path / ".steerable-tmp-0123456789ab").exists()
    (tmp_path / ".steerable-tmp-0123456789ab").write_text("ours\n")
    replace_temp(
        tmp_path / "b.txt", ".steerable-tmp-0123456789ab", root=tmp_path, display="b.txt", create=True
    )
    assert (tmp_path / "b.txt").read_text() == "ours\n" and not (
        tmp_path / ".steerable-tmp-0123456789ab"
    ).exists()


async def test_a_cancelled_write_keeps_its_locks_until_its_thread_is_done_file_12(tmp_path):
    # A deadline cancels the tool's task, but the worker thread renaming the file cannot be stopped:
    # the cancel returns only once it is done, so its locks never go while the rename is still to come.
    router = workspace_tools_for_cwd(tmp_path, bash=False)
    call = ToolCall(id="w", name="write_file", arguments={"path": "big.txt", "content": "x" * 80_000_000})
    task = asyncio.ensure_future(router.dispatch(call))
    while not any(p.name.startswith(".steerable-") for p in tmp_path.iterdir()):
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert leftovers(tmp_path) == []  # the thread had finished (its intent is gone) when the cancel returned
    assert (tmp_path / "big.txt").stat().st_size == 80_000_000


def test_a_sandbox_record_cannot_make_the_next_start_remove_older_files_file_15(tmp_path):
    # Behind the seal (an unsealed record is never acted on: test_journal_seal.py), a sealed record
    # claiming nothing protected existed before its run only removes what changed after it was
    # written, so the user's older .vscode stays.
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "settings.json").write_text("{}\n")
    # the record is newer than the user's files: a clock tick or more (no process can set a ctime back)
    older = max(
        p.stat().st_ctime_ns for p in (tmp_path, tmp_path / ".vscode", tmp_path / ".vscode" / "settings.json")
    )
    wait_until(lambda: coarse_now() > older, what="the clock a tick past the user's files")
    txn = sealed_record(tmp_path, "4444444444444444", [{"v": 2, "op": "bash"}, {"protected": []}]).parent
    reopened = Workspace(tmp_path)
    assert (tmp_path / ".vscode" / "settings.json").read_text() == "{}\n"
    assert reopened.recovered == [] and list(txn.iterdir()) == []
