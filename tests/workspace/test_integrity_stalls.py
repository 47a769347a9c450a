"""What a forged journal or a stuck process cannot do to the write locks (FILE-12, FILE-13).

A forged commit marker never stalls a write, a stopped lock holder never makes this process leak a
descriptor or a thread per attempt, and a process stopped in the middle of a patch is named when a
write waits for it. Real processes and real signals, as in ``test_integrity.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime.errors import WorkspaceError
from steerable_agent_runtime.workspace import Workspace
from steerable_agent_runtime.workspace import _workspace as workspace_module

REPO_SRC = Path(__file__).resolve().parents[2] / "src"
MARKER = "0123456789abcdef.json"


def _child(code: str) -> subprocess.Popen[str]:
    """A Python child running ``code`` (with this tree's ``src`` first), once it printed its line."""
    script = f"import sys\nsys.path.insert(0, {str(REPO_SRC)!r})\n" + textwrap.dedent(code)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _end(proc: subprocess.Popen[str]) -> None:
    proc.kill()  # a stopped process too
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


def _in_thread(work: Callable[[], Any], timeout_s: float) -> Any:
    """Run ``work`` in a daemon thread: one blocked forever (a FIFO read) fails the test, never hangs it."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout_s)
    assert not worker.is_alive(), f"the event loop was still blocked after {timeout_s} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


# -- FILE-13: forged commit markers --------------------------------------------------------------

_FORGED = ["intent_dir", "intent_symlink", "intent_fifo", "intent_fifo_locked", "marker_dir"]


def _forge(root: Path, kind: str) -> subprocess.Popen[str] | None:
    """A commit marker recovery cannot settle: its intent (or itself) is not a regular file."""
    txn = root / ".steerable" / "txn"
    (txn / "commits").mkdir(parents=True, exist_ok=True)
    intent = txn / MARKER
    if kind == "marker_dir":
        (txn / "commits" / MARKER).mkdir()
        return None
    (txn / "commits" / MARKER).write_text("")
    if kind == "intent_dir":
        intent.mkdir()
    elif kind == "intent_symlink":
        (root / "elsewhere.json").write_text('{"commit": [{"target": "b.txt"}]}\n')
        intent.symlink_to(root / "elsewhere.json")
    else:
        os.mkfifo(intent)
    if kind != "intent_fifo_locked":
        return None
    # another process holds a lock on the FIFO: reading it would block forever, so it is never opened
    return _child(
        f"""
        import fcntl, os, time
        fd = os.open({str(intent)!r}, os.O_RDWR | os.O_NONBLOCK)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("ready", flush=True)
        time.sleep(60)
        """
    )


@pytest.mark.parametrize("kind", _FORGED)
def test_a_forged_commit_marker_never_stalls_a_running_processs_writes_file_13(tmp_path, kind, caplog):
    # A command can write .steerable/txn: a marker whose intent is a directory, a symlink or a FIFO
    # (or a marker that is a directory) is not a committed patch. Before, every write of every process
    # waited the whole lock timeout and failed "busy: this steerable process ...".
    (tmp_path / "b.txt").write_text("b\n")
    ws = Workspace(tmp_path, require_read_before_write=False, lock_timeout_s=5)  # running before the forgery
    holder = _forge(tmp_path, kind)
    caplog.set_level(logging.WARNING, logger="steerable_agent_runtime")

    async def calls() -> float:
        started = time.monotonic()
        for n in range(3):
            await ws.read_file("b.txt")
            await ws.write_file("b.txt", f"written {n}\n")
            await ws.write_file(f"new{n}.txt", "made\n")
        return time.monotonic() - started

    try:
        took = _in_thread(lambda: asyncio.run(calls()), 20)
    finally:
        if holder is not None:
            _end(holder)
    assert took < 2.5, took  # a stalled write waits the whole 5 s lock timeout (then fails "busy")
    assert (tmp_path / "b.txt").read_text() == "written 2\n" and (tmp_path / "new2.txt").exists()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("kind", _FORGED)
def test_a_forged_commit_marker_is_pruned_at_the_next_start_file_13(tmp_path, kind, caplog):
    holder = _forge(tmp_path, kind)
    caplog.set_level(logging.WARNING, logger="steerable_agent_runtime")
    try:
        reopened = _in_thread(lambda: Workspace(tmp_path), 20)
    finally:
        if holder is not None:
            _end(holder)
    assert reopened.recovered == []
    assert not os.path.lexists(tmp_path / ".steerable" / "txn" / "commits" / MARKER)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_marker_recovery_cannot_settle_is_tried_once_then_ignored_file_13(
    tmp_path, monkeypatch, caplog
):
    # A committed patch whose writer is gone but which recovery leaves in place (here recovery does
    # nothing; in life: an intent it cannot open, targets another process keeps locked): each
    # process tries once, says so once, then writes on; the next start tries again.
    ws = Workspace(tmp_path, require_read_before_write=False, lock_timeout_s=3)
    txn = tmp_path / ".steerable" / "txn"
    (txn / "commits").mkdir(parents=True)
    (txn / "commits" / MARKER).write_text("")
    (txn / MARKER).write_text('{"v": 1, "op": "apply_patch"}\n{"commit": [{"target": "b.txt"}]}\n')
    tries: list[int] = []

    def settles_nothing(*args: Any) -> list[str]:
        tries.append(1)
        return []

    monkeypatch.setattr(workspace_module, "recover", settles_nothing)
    caplog.set_level(logging.WARNING, logger="steerable_agent_runtime")
    started = time.monotonic()
    for n in range(5):
        await ws.write_file("b.txt", f"{n}\n")
        await ws.read_file("b.txt")
    assert time.monotonic() - started < 1.5  # a write that waited for the marker waits its 3 s lock timeout
    assert (tmp_path / "b.txt").read_text() == "4\n"
    assert len(tries) == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [
        f"steerable: could not settle the interrupted patch {MARKER} in {txn} (its process is gone); "
        "this process goes on without it, and the next start tries again"
    ]


# -- FILE-12: a stopped lock holder ---------------------------------------------------------------


async def test_a_stopped_lock_holder_costs_one_waiter_however_many_writes_time_out_file_12(tmp_path):
    # A holder stopped (SIGSTOP) with a file's lock: every write of it times out. Before, each timed-out
    # wait left a thread blocked in flock with its own descriptor, until "Too many open files"; now
    # one waiter per inode serves every later wait, and each refusal still names the holder.
    (tmp_path / "a.txt").write_text("a\n")
    holder = _child(
        f"""
        import os, signal
        from pathlib import Path
        from steerable_agent_runtime.workspace._flock import PathLocks
        held = PathLocks().acquire([Path({str(tmp_path / "a.txt")!r})])
        print("ready", flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)
        """
    )
    workspaces = [Workspace(tmp_path, require_read_before_write=False, lock_timeout_s=0.05) for _ in range(4)]
    fds, threads, refusals = [], [], []

    async def attempts(ws: Workspace) -> None:
        for _ in range(80):
            with pytest.raises(WorkspaceError) as refused:
                await ws.write_file("a.txt", "b\n")
            refusals.append(refused.value)
            fds.append(len(os.listdir("/proc/self/fd")))
            threads.append(threading.active_count())

    try:
        await workspaces[0].write_file("warm.txt", "up\n")  # the executor's threads, the journal
        base_fds, base_threads = len(os.listdir("/proc/self/fd")), threading.active_count()
        await asyncio.gather(*(attempts(ws) for ws in workspaces))
    finally:
        _end(holder)
    assert len(refusals) == 320
    assert {r.code for r in refusals} == {"file_locked"}
    assert {(r.data or {}).get("holderPid") for r in refusals} == {holder.pid}
    assert all(r.error.startswith(f"another process (pid {holder.pid}, ") for r in refusals)
    assert max(fds) - base_fds <= 20, (base_fds, max(fds))  # 320 before: one per timed-out write
    assert max(threads) - base_threads <= 16, (base_threads, max(threads))
    ws = workspaces[0]
    ws.lock_timeout_s = 5  # the holder is gone: the one waiter let go of the lock, nothing kept it
    await ws.write_file("a.txt", "written\n")
    assert (tmp_path / "a.txt").read_text() == "written\n"


# -- FILE-13: a process stopped in the middle of a patch ------------------------------------------

_PATCHER = """
    import os, signal
    from pathlib import Path
    from steerable_agent_runtime.workspace import Workspace
    from steerable_agent_runtime.workspace._apply import _entries, _Plan, _stage
    root = Path({root!r})
    ws = Workspace(root, require_read_before_write=False)
    a, n = root / "a.txt", root / "n.txt"
    plan = _Plan()
    plan.original.update({{a: a.read_bytes(), n: None}})
    plan.final.update({{a: b"new\\n", n: b"added\\n"}})
    held = ws.cross_process.acquire([a, n])  # as apply_patch holds its files' locks (n: none, absent)
    intent = ws.begin_intent("apply_patch")
    temps = {{}}
    _stage(ws, intent, plan.final, {{}}, [], temps)
    intent.commit(_entries(ws, plan.final, plan.original, temps))
    os.replace(root / temps[a], a)  # the first rename; then it stops before adding n.txt
    print("ready", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
"""


async def test_a_write_waiting_for_a_stopped_patch_names_its_process_file_13(tmp_path, monkeypatch):
    # The patch adds n.txt, so a write of n.txt takes no file lock; it waits for the patch's intent,
    # which the stopped process holds. The refusal names that process (not "busy: this steerable
    # process"), and the wait re-checks the intent without running recovery over and over.
    (tmp_path / "a.txt").write_text("old\n")
    ws = Workspace(tmp_path, require_read_before_write=False, lock_timeout_s=0.5)
    patcher = _child(_PATCHER.format(root=str(tmp_path)))
    runs: list[int] = []
    real_recover = workspace_module.recover  # type: ignore[attr-defined]

    def counting(*args: Any) -> list[str]:
        runs.append(1)
        return real_recover(*args)

    monkeypatch.setattr(workspace_module, "recover", counting)
    try:
        started = time.monotonic()
        with pytest.raises(WorkspaceError) as refused:
            await ws.write_file("n.txt", "mine\n")
        waited = time.monotonic() - started
        assert refused.value.code == "file_locked"
        assert refused.value.error.startswith(f"another process (pid {patcher.pid}, "), refused.value.error
        assert refused.value.error.endswith(
            ") has held the write lock of n.txt for over 0.5 s; nothing was written. Try again in a moment"
        )
        assert refused.value.data == {"code": "file_locked", "paths": ["n.txt"], "holderPid": patcher.pid}
        assert 0.5 <= waited < 10.0  # the lock timeout; the stopped patcher never lets go by itself
        assert len(runs) <= 1
        assert not (tmp_path / "n.txt").exists()
    finally:
        _end(patcher)
    # its process is gone: the next write finishes the patch first, then lands on top of it
    ws.lock_timeout_s = 5
    await ws.write_file("n.txt", "mine\n")
    assert (tmp_path / "a.txt").read_text() == "new\n" and (tmp_path / "n.txt").read_text() == "mine\n"
    assert ws.recovered == [
        "rolled forward an interrupted apply_patch (its process died); completed n.txt; already done a.txt"
    ]
