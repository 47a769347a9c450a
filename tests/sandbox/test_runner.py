"""The runner: capture and clipping, exit codes, deadlines and cancellation killing the whole tree,
and the stdin/stdout pipe a JSON-lines child (``run_code``) talks over."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path

import pytest
from sbx_helpers import real_backend

from steerable_agent_runtime.sandbox import (
    InheritedBackend,
    ResourceLimits,
    SandboxPolicy,
    run_sandboxed,
    spawn_sandboxed,
)
from steerable_agent_runtime.sandbox._cgroup import pids_cgroup_parent
from steerable_agent_runtime.sandbox._output import Clip
from waiting import WAIT_S, eventually

PY = sys.executable


@pytest.fixture(params=["bwrap", "landlock", "inherited"])
def any_backend(request: pytest.FixtureRequest):
    return InheritedBackend() if request.param == "inherited" else real_backend(request.param)


def alive(token: str) -> list[int]:
    """Host pids (not zombies) whose command line contains ``token``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


async def gone(token: str, within_s: float = WAIT_S) -> bool:
    """Whether every process with ``token`` in its command line is gone (waited for, ``within_s`` at most)."""
    try:
        await eventually(
            lambda: not alive(token), what=f"the processes of {token!r} gone", timeout_s=within_s
        )
    except AssertionError:
        return False
    return True


def sleeper() -> tuple[str, str]:
    """A ``sleep`` whose argument is unique to this test, so the host can look for it."""
    seconds = f"{100 + uuid.uuid4().int % 100_000 / 100_000:.5f}"
    return seconds, f"sleep {seconds}"


# -- capture ----------------------------------------------------------------------------------------


def test_clip_keeps_head_and_tail_and_counts_everything():
    clip = Clip(10)
    for chunk in (b"abc", b"defghij", b"klmnopqrstu", b"vwxyz"):
        clip.feed(chunk)
    out = clip.result()
    assert out.text == "abcde\n[... 16 bytes clipped; 26 bytes in total ...]\nvwxyz"
    assert (out.total_bytes, out.kept_bytes, out.clipped) == (26, 10, True)
    small = Clip(10)
    small.feed("héllo".encode())
    assert small.result().text == "héllo" and not small.result().clipped


async def test_output_is_clipped_with_a_marker_and_the_total(any_backend, workspace: Path):
    policy = SandboxPolicy(writable_roots=(workspace,), limits=ResourceLimits(max_output_bytes=1000))
    script = "head -c 100000 /dev/zero | tr '\\0' a; printf END; printf 'oops' >&2"
    result = await run_sandboxed(["/bin/sh", "-c", script], policy, backend=any_backend, timeout_s=20)
    out = result.stdout
    assert out.total_bytes == 100_003 and out.kept_bytes == 1000 and out.clipped
    assert out.text.startswith("a" * 500 + "\n[... 99003 bytes clipped; 100003 bytes in total ...]\n")
    assert out.text.endswith("a" * 497 + "END")
    assert result.stderr.text == "oops" and not result.stderr.clipped
    assert result.exit_code == 0 and not result.timed_out and result.sandbox == any_backend.info


async def test_exit_codes_and_signals(any_backend, policy):
    three = await run_sandboxed(["/bin/sh", "-c", "exit 3"], policy, backend=any_backend, timeout_s=20)
    assert three.exit_code == 3
    killed = await run_sandboxed(["/bin/sh", "-c", "kill -9 $$"], policy, backend=any_backend, timeout_s=20)
    assert killed.exit_code == 128 + 9
    fed = await run_sandboxed(["cat"], policy, backend=any_backend, timeout_s=20, input=b"fed through stdin")
    assert fed.stdout.text == "fed through stdin"


# -- deadlines, exits and cancellation kill the whole tree -----------------------------------------


async def test_a_timeout_kills_the_command_and_its_background_children(any_backend, policy):
    seconds, token = sleeper()
    started = time.monotonic()
    result = await run_sandboxed(
        ["/bin/sh", "-c", f"sleep {seconds} & setsid sleep {seconds} & echo started; sleep {seconds}"],
        policy,
        backend=any_backend,
        timeout_s=0.5,
    )
    assert result.timed_out and result.exit_code is None
    assert result.stdout.text == "started\n"
    # cut short at the 0.5 s deadline: a run that waited for its sleeps would take over 100 s
    assert time.monotonic() - started < 10
    assert await gone(token), f"left running: {alive(token)}"


async def test_leftovers_are_killed_when_the_command_exits(any_backend, policy):
    seconds, token = sleeper()
    started = time.monotonic()
    result = await run_sandboxed(
        ["/bin/sh", "-c", f"sleep {seconds} & setsid sleep {seconds} & echo bye"],
        policy,
        backend=any_backend,
        timeout_s=30,
    )
    assert result.exit_code == 0 and result.stdout.text == "bye\n" and not result.timed_out
    # nobody waited for the background sleeps: they run over 100 s, and the run's deadline is 30 s
    assert time.monotonic() - started < 10
    assert await gone(token), f"left running: {alive(token)}"


async def test_cancellation_kills_the_tree_and_cleans_up(any_backend, policy):
    seconds, token = sleeper()
    task = asyncio.ensure_future(
        run_sandboxed(["/bin/sh", "-c", f"sleep {seconds} & sleep {seconds}"], policy, backend=any_backend)
    )
    await eventually(lambda: alive(token) or task.done(), what="the sleeps started")
    assert alive(token), task.result() if task.done() else "still starting"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(token), f"left running: {alive(token)}"


async def test_private_directories_are_removed_and_cgroups_emptied(any_backend, policy):
    mark = f"mark-{uuid.uuid4().hex}"
    script = f"echo x > $TMPDIR/{mark}; sleep 100 &"
    await run_sandboxed(["/bin/sh", "-c", script], policy, backend=any_backend, timeout_s=20)
    assert not list(Path("/tmp").glob(f"steerable-sbx-*/{mark}"))
    parent = pids_cgroup_parent()
    if os.geteuid() == 0:
        assert parent is not None, "root needs a writable pids cgroup to bound processes"

        # the run's cgroup goes back to the pool only when it counts no process at all (zombies
        # awaiting their reaper included); otherwise it is removed once they are gone
        def emptied() -> bool:
            try:
                return all(
                    (cgroup / "pids.current").read_text().strip() == "0"
                    for cgroup in parent.glob(f"steerable-{os.getpid()}-*")
                )
            except FileNotFoundError:  # removed meanwhile: look again
                return False

        await eventually(emptied, what="the run's pids cgroups count no process")
        left = list(parent.glob(f"steerable-{os.getpid()}-*"))
        assert all((cgroup / "cgroup.procs").read_text() == "" for cgroup in left)  # nothing left inside
        assert all((cgroup / "pids.current").read_text().strip() == "0" for cgroup in left)


# -- a JSON-lines child over stdin/stdout (what run_code builds on) ---------------------------------

ECHO_CHILD = """
import json, sys
print("child started", file=sys.stderr, flush=True)
for line in sys.stdin:
    frame = json.loads(line)
    if frame.get("op") == "stop":
        print(json.dumps({"done": True, "value": frame["value"]}), flush=True)
        break
    print(json.dumps({"reply": frame["n"] * 2}), flush=True)
"""


async def test_a_caller_talks_json_lines_over_stdio_while_stderr_is_captured(any_backend, policy):
    proc = await spawn_sandboxed(
        [PY, "-c", ECHO_CHILD], policy, backend=any_backend, stdin=True, stdout="pipe", timeout_s=20
    )
    async with proc:
        assert proc.stdin is not None and proc.stdout is not None
        replies = []
        for n in range(3):
            proc.stdin.write(json.dumps({"n": n}).encode() + b"\n")
            await proc.stdin.drain()
            replies.append(json.loads(await proc.stdout.readline()))
        proc.stdin.write(b'{"op": "stop", "value": "' + b"x" * 200_000 + b'"}\n')
        final = json.loads(await proc.stdout.readline())
        result = await proc.finish()
    assert replies == [{"reply": 0}, {"reply": 2}, {"reply": 4}]
    assert final == {"done": True, "value": "x" * 200_000}  # long lines pass (16 MiB line limit)
    assert result.exit_code == 0 and result.stderr.text == "child started\n"
    assert result.stdout.total_bytes == 0  # the caller read stdout itself


async def test_the_deadline_ends_a_silent_child_and_reads_see_eof(any_backend, policy):
    proc = await spawn_sandboxed(
        [PY, "-c", "import time; time.sleep(100)"],
        policy,
        backend=any_backend,
        stdin=True,
        stdout="pipe",
        timeout_s=0.3,
    )
    async with proc:
        assert proc.stdout is not None
        async with asyncio.timeout(5):  # the 0.3 s deadline ends it; the child would sleep 100 s
            assert await proc.stdout.readline() == b""
        result = await proc.finish()
    assert proc.timed_out and result.timed_out and result.exit_code is None
