"""``bash``'s live output (issue 31, "Live output"): what a running command prints reaches the call's
``CallContext.send_output`` while it runs, coalesced (the first output at once, then one chunk per
half second at most), bounded (the tail: ``output_tail``), whole UTF-8 characters, never holding
the command up; the result is the same as without a watcher (CON-1's result fields)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sbx_helpers import real_backend

from steerable_agent_runtime import ToolCall, ToolRouter
from steerable_agent_runtime.context import OUTPUT_TAIL_BYTES, OUTPUT_TAIL_LINES, CallContext, output_tail
from steerable_agent_runtime.sandbox import SandboxBackend, bash_tool
from steerable_agent_runtime.sandbox._live import LIVE_INTERVAL_S, LiveOutput
from waiting import WAIT_S, eventually, grace


def until_made(path: Path) -> str:
    """Shell: wait until the test makes ``path`` (the command goes on when the test says so)."""
    return f"until [ -e {path} ]; do sleep 0.01; done"


class Watcher:
    """An output sink that notes when each chunk came (seconds since it was made); optionally stuck."""

    def __init__(self, *, stuck: bool = False) -> None:
        self.started = time.monotonic()
        self.chunks: list[tuple[float, str]] = []
        self.stuck = stuck

    async def __call__(self, text: str) -> None:
        self.chunks.append((time.monotonic() - self.started, text))
        if self.stuck:  # a client that never takes its notification: until the call ends and cancels it
            await asyncio.Event().wait()

    def sent(self, count: int, call: asyncio.Future[Any]) -> Callable[[], bool]:
        """Whether ``count`` chunks came (or ``call`` ended), for :func:`eventually`."""
        return lambda: len(self.chunks) >= count or call.done()

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.chunks]


def _router(workspace: Path, backend: SandboxBackend) -> ToolRouter:
    router = ToolRouter()
    router.register(bash_tool(workspace, backend=backend))
    return router


async def _run(router: ToolRouter, command: str, watcher: Watcher | None) -> tuple[dict[str, object], float]:
    call = ToolCall(id="b1", name="bash", arguments={"command": command})
    context = CallContext(call, output=watcher)
    started = time.monotonic()
    result = await router.dispatch(call, context)
    assert result.data is not None
    return dict(result.data), time.monotonic() - started


async def test_lines_arrive_while_the_command_runs_under_each_backend(
    workspace: Path, backend: SandboxBackend
):
    router = _router(workspace, backend)
    watcher = Watcher()
    # each line is printed once the test has seen the one before: the command waits for it
    gates = [workspace / f"go{i}" for i in (1, 2, 3)]
    command = "; ".join(f"echo line{i}; {until_made(gate)}" for i, gate in enumerate(gates, 1))
    call = asyncio.ensure_future(_run(router, command, watcher))
    for i, gate in enumerate(gates, 1):
        await eventually(watcher.sent(i, call), what=f"line{i} sent")
        assert not call.done(), call.result()  # line i came while the command ran (it waits for go{i})
        gate.touch()
    data, _ = await call
    assert data["stdout"] == "line1\nline2\nline3\n" and data["exitCode"] == 0
    assert watcher.texts[:3] == ["line1\n", "line2\n", "line3\n"]  # one chunk per line here, in order
    first_at, _ = watcher.chunks[0]
    assert watcher.chunks[1][0] - first_at > 0.4  # line2 came an interval (0.5 s) after line1 at least


async def test_the_result_is_the_same_without_a_watcher(workspace: Path):
    router = _router(workspace, real_backend("bwrap"))
    command = "printf 'a\\nb\\n'; printf 'err\\n' >&2; seq 1 20000"
    watched, _ = await _run(router, command, Watcher())
    bare, _ = await _run(router, command, None)
    for data in (watched, bare):
        data.pop("durationMs")
    assert watched == bare


async def test_a_flood_is_sent_as_its_tail_and_a_slow_consumer_never_holds_the_command(workspace: Path):
    router = _router(workspace, real_backend("bwrap"))
    slow = Watcher(stuck=True)  # a client that never reads its first notification while the call runs
    async with asyncio.timeout(WAIT_S):  # the command ran at its own pace: held by the client, never ends
        data, _ = await _run(router, "seq 1 500000; sleep 0.8; echo end; sleep 0.3", slow)
    assert data["stdoutBytes"] == len("".join(f"{n}\n" for n in range(1, 500001))) + 4
    assert len(slow.chunks) == 1  # the pump still waits on the first one
    fast = Watcher()
    tail, end = workspace / "tail-sent", workspace / "end-sent"  # "end" comes once the tail was sent
    call = asyncio.ensure_future(
        _run(router, f"seq 1 500000; {until_made(tail)}; echo end; {until_made(end)}", fast)
    )
    await eventually(
        lambda: any(t.endswith("\n500000\n") for t in fast.texts) or call.done(), what="the tail sent"
    )
    tail.touch()
    await eventually(lambda: "end\n" in fast.texts or call.done(), what="end sent")
    end.touch()
    await call
    for text in fast.texts:
        assert len(text.encode()) <= OUTPUT_TAIL_BYTES + 40  # the marker line aside
        assert text.count("\n") <= OUTPUT_TAIL_LINES + 1
    assert fast.texts[-1] == "end\n"
    assert any(t.startswith("[... ") and t.endswith("499999\n500000\n") for t in fast.texts), fast.texts


async def test_chunks_are_at_least_the_interval_apart(workspace: Path):
    router = _router(workspace, real_backend("bwrap"))
    watcher = Watcher()
    await _run(router, "for i in $(seq 1 30); do echo tick$i; sleep 0.05; done", watcher)
    times = [at for at, _ in watcher.chunks]
    # 1.5 s of ticks or more (as the machine runs them): the first at once, then one per 0.5 s at most
    assert 2 <= len(times) <= 1 + times[-1] / LIVE_INTERVAL_S, watcher.chunks
    assert all(b - a >= 0.45 for a, b in zip(times, times[1:], strict=False))
    shown = "".join(watcher.texts)
    assert shown.startswith("tick1\n") and shown == "".join(
        f"tick{n}\n" for n in range(1, len(shown.split()) + 1)
    )


async def test_a_character_split_between_reads_arrives_whole(workspace: Path):
    router = _router(workspace, real_backend("bwrap"))
    watcher = Watcher()
    # "é" is c3 a9: the first byte, a pause that ends the read, then the second; each part is
    # printed once the one before was sent (a chunk each), the command ends once the last was
    parts = ["printf 'caf\\xc3'", "printf '\\xa9\\n'", "printf 'bad \\xff byte\\n'"]
    gates = [workspace / f"go{i}" for i in (1, 2, 3)]
    command = "; ".join(f"{part}; {until_made(gate)}" for part, gate in zip(parts, gates, strict=True))
    call = asyncio.ensure_future(_run(router, command, watcher))
    for i, gate in enumerate(gates, 1):
        await eventually(watcher.sent(i, call), what=f"part {i} sent")
        gate.touch()
    data, _ = await call
    assert data["stdout"] == "café\nbad \ufffd byte\n"
    assert "".join(watcher.texts) == "café\nbad \ufffd byte\n"
    assert all("\ufffd" not in t for t in watcher.texts if "caf" in t)


async def test_a_line_that_does_not_end_is_sent_after_an_interval(workspace: Path):
    router = _router(workspace, real_backend("landlock"))
    watcher = Watcher()
    ended, done = workspace / "ended", workspace / "done"
    command = f"printf 'waiting...'; {until_made(ended)}; echo ' done'; {until_made(done)}"
    call = asyncio.ensure_future(_run(router, command, watcher))
    await eventually(lambda: watcher.chunks or call.done(), what="the unended line sent")
    assert not call.done(), call.result()  # sent as it is while the line had not ended (it waits for us)
    ended.touch()
    await eventually(lambda: len(watcher.chunks) >= 2 or call.done(), what="the line's end sent")
    done.touch()
    await call
    assert watcher.texts[:2] == ["waiting...", " done\n"]
    assert 0.4 < watcher.chunks[0][0]  # held one interval (0.5 s) for its end, then sent as it is


def test_output_tail_keeps_the_end_within_lines_and_bytes() -> None:
    assert output_tail("a\nb\nc\n", max_lines=2) == "[... 2 bytes not shown]\nb\nc\n"
    assert output_tail("a\nb\nc", max_lines=2) == "[... 2 bytes not shown]\nb\nc"
    assert output_tail("x" * 10 + "\n" + "y" * 5 + "\n", max_bytes=8) == "[... 11 bytes not shown]\nyyyyy\n"
    assert output_tail("é" * 10, max_bytes=5) == "[... 16 bytes not shown]\néé"  # never half a character
    assert output_tail("abc", dropped_bytes=7) == "[... 7 bytes not shown]\nabc"
    assert output_tail("short\n") == "short\n"


async def test_live_output_decodes_each_stream_on_its_own() -> None:
    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)

    live = LiveOutput(send, interval_s=0.05)
    pump = asyncio.create_task(live.pump())
    live.feed("stdout", b"caf\xc3")
    live.feed("stderr", b"warn\n")  # between the two halves of stdout's character
    live.feed("stdout", b"\xa9\n")
    await eventually(lambda: sent, what="the first chunk sent")
    await asyncio.sleep(grace(0.2, why="a chunk more (four intervals), had the output been split"))
    pump.cancel()
    assert sent == ["cafwarn\né\n"]  # in the order it came, the character whole
