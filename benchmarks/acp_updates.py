"""What a ``session/update`` adds to a turn: ``steerable acp``'s prompt vs the agent loop alone.

What it measures
    One process, one scripted turn played three ways; one warm-up round, then rounds interleaved
    (the three ways in turn); medians reported. The turn: ``--model-rounds`` (default 10) model
    rounds, each streaming a sentence (``ScriptedProvider``'s 16-character chunks) and calling
    ``read_file`` and ``list_dir`` (20 tool calls), then a streamed answer; the workspace is a
    temporary folder of small Python files; each round opens a new session.

    * ``agent loop alone``: ``AgentLoop`` over ``workspace_tools_for_cwd`` with ``on_event=None``
      (no record, no consent gate; the baseline the ACP issue names);
    * ``loop as steerable acp assembles it``: ``open_session`` + ``assemble_loop`` (the durable
      record, fsync'd per message; the consent gate) over ``boot_tools``, the tools a session
      gets, still with ``on_event=None``: all a ``session/prompt`` does but the updates;
    * ``via ACP``: ``session/prompt`` from the ACP SDK's client to ``serve_streams`` (what
      ``steerable acp`` serves with) over two ``os.pipe()``s in this process (the wiring of
      ``tests/sidecar/acp_client.py``'s ``in_process_acp``), timed at the client from the request
      to the answer; every ``session/update`` it receives is counted.

    Added per update = (via ACP - assembled loop) / updates per turn, of the medians. Both ends
    share this process's event loop, so the figure includes the client's decoding of each update
    too: an upper bound of what the agent pays (an editor decodes in its own process). Per update,
    in the ACP rounds (an ``AcpSession`` subclass patched in and the agent's pipe writer wrapped
    record them, < 1 us each):

    * ``AcpSession.on_event`` per loop event that sent an update: how long the loop waits for it
      (the update built, validated by the SDK's model, encoded, written to the pipe); with the
      executor's own ``in_progress`` sends, the agent side of the added time;
    * ``AcpSession.send``: the SDK's part of it (validation, encoding, the write);
    * latency to the pipe: from ``send`` to the update's line handed to the pipe (what an editor
      in another process could read then);
    * latency to the client's handler: from ``send`` to the client's ``session_update`` (in one
      event loop this includes the wait until the agent next yields; informational).

Goal (the ACP issue: the latency an update adds over the agent loop alone)
    * an update adds < 1 ms at the median over the same loop without updates (added per update
      above: against the loop as ``steerable acp`` assembles it, so the record's fsyncs, which
      every front end pays, do not count; the figure over the bare loop is printed beside it).
      Why 1 ms: a real model's turn makes one update per streamed chunk and three per tool call;
      at 1 ms a 20-call turn of ~120 updates pays ~0.1 s, under 1% of the tens of seconds its
      model rounds take, and an editor redrawing at 60 Hz (16 ms a frame) never waits on one.

Run
    python benchmarks/acp_updates.py [--rounds R] [--model-rounds N] [--check]

    Goals are printed as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal
    is missed (then 1).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast
from unittest import mock

from acp import connect_to_agent, text_block
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import DeniedOutcome, PermissionOption, RequestPermissionResponse

from steerable_agent_runtime import AgentLoop, RunOutcome
from steerable_agent_runtime.llm import ScriptedProvider
from steerable_agent_runtime.loop import LoopEvent
from steerable_agent_runtime.types import new_call_id
from steerable_agent_runtime.workspace import workspace_tools_for_cwd
from steerable_sidecar._boot import boot_tools
from steerable_sidecar.acp import _agent as acp_agent
from steerable_sidecar.acp._agent import ACP_SYSTEM_PROMPT, AcpOptions
from steerable_sidecar.acp._command import AcpSetup, serve_streams
from steerable_sidecar.acp._session import AcpSession
from steerable_sidecar.rpc._peer import LineWriter, open_fd_streams
from steerable_sidecar.shared._assembly import LoopOptions, Transport, assemble_loop, open_session

MAX_ADDED_MS = 1.0
PROMPT = "Walk through src/ and tell me what each module does."


def make_workspace(root: Path, files: int) -> None:
    src = root / "src"
    src.mkdir()
    for i in range(files):
        lines = [f'"""Module {i}."""', ""] + [f"def f{i}_{n}(x):\n    return x + {n}\n" for n in range(20)]
        (src / f"mod_{i}.py").write_text("\n".join(lines), encoding="utf-8")


def script(model_rounds: int) -> list[Any]:
    """One turn: per model round a sentence and two calls (read_file, list_dir), then the answer."""
    turns: list[Any] = []
    for i in range(model_rounds):
        turns.append(
            {
                "text": f"Round {i}: reading src/mod_{i}.py, then listing src/ to see what comes next.",
                "tool_calls": [
                    {"id": f"r{i}", "name": "read_file", "arguments": {"path": f"src/mod_{i}.py"}},
                    {"id": f"l{i}", "name": "list_dir", "arguments": {"path": "src"}},
                ],
            }
        )
    turns.append(
        "Each module under src/ defines twenty small functions that add a constant to their "
        "argument; none imports another, none has side effects, and nothing needs changing."
    )
    return turns


class Stamps:
    """What the patched session records during the ACP rounds (``perf_counter_ns`` values)."""

    def __init__(self) -> None:
        self.sent: list[int] = []  # AcpSession.send entered: the update leaves the loop's hands
        self.send_ns: list[int] = []  # how long each send took
        self.on_event_ns: list[int] = []  # how long each on_event that sent an update took
        self.outside_ns: list[int] = []  # sends outside on_event (the executor's in_progress)
        self.piped: list[int] = []  # its line was handed to the pipe (an editor could read it)
        self.received: list[int] = []  # the client's session_update handler got it

    def clear(self) -> None:
        for values in (self.sent, self.send_ns, self.on_event_ns, self.outside_ns, self.piped, self.received):
            values.clear()


STAMPS = Stamps()


class StampedSession(AcpSession):
    """``AcpSession`` recording when each update is sent and what it cost the loop."""

    _in_event = False

    async def send(self, update: Any) -> None:
        start = time.perf_counter_ns()
        STAMPS.sent.append(start)
        await super().send(update)
        took = time.perf_counter_ns() - start
        STAMPS.send_ns.append(took)
        if not self._in_event:
            STAMPS.outside_ns.append(took)

    async def on_event(self, event: LoopEvent) -> None:
        before, start = len(STAMPS.sent), time.perf_counter_ns()
        self._in_event = True
        try:
            await super().on_event(event)
        finally:
            self._in_event = False
        if len(STAMPS.sent) > before:
            STAMPS.on_event_ns.append(time.perf_counter_ns() - start)


class StampingClient:
    """An editor's side that timestamps each ``session/update`` on receipt and refuses consent."""

    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        STAMPS.received.append(time.perf_counter_ns())
        self.updates += 1

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    def on_connect(self, conn: Any) -> None:
        pass


class CountingWriter:
    """The agent's pipe writer, counting the bytes it writes and stamping each update's line."""

    def __init__(self, inner: LineWriter) -> None:
        self.inner, self.written = inner, 0

    def write(self, data: bytes, /) -> object:
        self.written += len(data)
        done = self.inner.write(data)  # a pipe's transport writes at once when its buffer is empty
        if b'"session/update"' in data:
            STAMPS.piped.append(time.perf_counter_ns())
        return done

    async def drain(self) -> None:
        await self.inner.drain()


@contextlib.asynccontextmanager
async def serve_in_process(client: StampingClient, options: AcpOptions, provider: ScriptedProvider) -> Any:
    """``serve_streams`` in this process, the SDK's client over two pipes (as ``in_process_acp``)."""
    to_agent_read, to_agent_write = os.pipe()
    to_client_read, to_client_write = os.pipe()
    agent_reader, agent_writer = await open_fd_streams(to_agent_read, to_client_write)
    client_reader, client_writer = await open_fd_streams(to_client_read, to_agent_write)
    assert isinstance(client_writer, asyncio.StreamWriter)
    assert isinstance(agent_writer, asyncio.StreamWriter)
    counting = CountingWriter(agent_writer)
    serving = asyncio.ensure_future(
        serve_streams(agent_reader, counting, lambda: AcpSetup(options, provider, None))
    )
    conn = connect_to_agent(cast("Client", client), client_writer, client_reader, use_unstable_protocol=True)
    try:
        yield conn, counting
    finally:
        await conn.close()
        client_writer.close()  # EOF: the agent closes its sessions and returns
        assert await asyncio.wait_for(serving, 30) == 0
        agent_writer.close()
        while await client_reader.read(65536):
            pass
        for writer in (client_writer, agent_writer):
            await writer.wait_closed()


def system_for(workspace: Path) -> str:
    return ACP_SYSTEM_PROMPT.replace("{cwd}", str(workspace))


async def turn_alone(workspace: Path, turns: list[Any], max_rounds: int) -> int:
    router = workspace_tools_for_cwd(workspace)
    loop = AgentLoop(ScriptedProvider(turns), router, on_event=None, max_rounds=max_rounds)
    prompt = [{"role": "system", "content": system_for(workspace)}, {"role": "user", "content": PROMPT}]
    start = time.perf_counter_ns()
    summary = await loop.run([], prompt)
    elapsed = time.perf_counter_ns() - start
    assert summary.outcome is RunOutcome.COMPLETED, summary
    return elapsed


async def turn_assembled(workspace: Path, state: Path, turns: list[Any], max_rounds: int) -> int:
    booted = await asyncio.to_thread(boot_tools, workspace, plugins=False, web_tools=False)
    try:
        start = time.perf_counter_ns()
        opened = await open_session(state, new_call_id())
        loop = await assemble_loop(
            opened,
            ScriptedProvider(turns),
            booted.router,
            transport=Transport(),
            offered=booted.harness.offered,
            options=LoopOptions(max_rounds=max_rounds),
        )
        user = [{"role": "user", "content": PROMPT}]
        summary = await loop.run(opened.history, opened.opening(system_for(workspace), user))
        elapsed = time.perf_counter_ns() - start
    finally:
        await booted.aclose()
    assert summary.outcome is RunOutcome.COMPLETED, summary
    return elapsed


async def turn_via_acp(
    conn: ClientSideConnection, client: StampingClient, counting: CountingWriter, workspace: Path
) -> tuple[int, int, int]:
    """One prompt on a new session: ns from the request to the answer, updates, bytes written."""
    session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
    for _ in range(1000):  # what session/new sent after its answer (the commands offered) arrives first
        if len(STAMPS.received) >= len(STAMPS.piped):
            break
        await asyncio.sleep(0.001)
    client.updates, written = 0, counting.written
    STAMPS.clear()
    start = time.perf_counter_ns()
    answer = await conn.prompt(session_id=session.session_id, prompt=[text_block(PROMPT)])
    elapsed = time.perf_counter_ns() - start
    assert answer.stop_reason == "end_turn", answer
    for _ in range(100):  # a handler task may still be queued behind the answer
        if len(STAMPS.received) == len(STAMPS.sent):
            break
        await asyncio.sleep(0)
    counts = (len(STAMPS.sent), len(STAMPS.piped), len(STAMPS.received), client.updates)
    assert len(set(counts)) == 1, counts
    return elapsed, client.updates, counting.written - written


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


async def run(rounds: int, model_rounds: int) -> int:
    with tempfile.TemporaryDirectory(prefix="acp-updates-") as tmp:
        workspace, state = Path(tmp) / "ws", Path(tmp) / "state"
        workspace.mkdir()
        state.mkdir()
        make_workspace(workspace, model_rounds)
        turns = script(model_rounds)
        max_rounds = model_rounds + 1
        options = AcpOptions(state_dir=state, plugins=False, web_tools=False, max_rounds=max_rounds)
        alone: list[int] = []
        assembled: list[int] = []
        via: list[int] = []
        updates: list[int] = []
        sizes: list[int] = []
        on_event_ns: list[int] = []
        send_ns: list[int] = []
        delivery_ns: list[int] = []
        piped_ns: list[int] = []
        agent_ns: list[int] = []  # per turn: the loop's time in on_event and the executor's sends
        client = StampingClient()
        provider = ScriptedProvider(turns * (rounds + 1))  # one turn a prompt, the warm-up's too
        with mock.patch.object(acp_agent, "AcpSession", StampedSession):
            async with serve_in_process(client, options, provider) as (conn, counting):
                await conn.initialize(protocol_version=1)
                for index in range(rounds + 1):
                    a = await turn_alone(workspace, turns, max_rounds)
                    b = await turn_assembled(workspace, state, turns, max_rounds)
                    c, n, size = await turn_via_acp(conn, client, counting, workspace)
                    if index == 0:
                        continue  # warm-up: imports, caches, the SDK's first models
                    alone.append(a)
                    assembled.append(b)
                    via.append(c)
                    updates.append(n)
                    sizes.append(size)
                    on_event_ns += STAMPS.on_event_ns
                    agent_ns.append(sum(STAMPS.on_event_ns) + sum(STAMPS.outside_ns))
                    send_ns += STAMPS.send_ns
                    delivery_ns += [b - a for a, b in zip(STAMPS.sent, STAMPS.received, strict=True)]
                    piped_ns += [b - a for a, b in zip(STAMPS.sent, STAMPS.piped, strict=True)]
    per_update = (on_event_ns, send_ns, piped_ns, delivery_ns)
    return report(rounds, model_rounds, (alone, assembled, via), updates, sizes, agent_ns, per_update)


def report(
    rounds: int,
    model_rounds: int,
    turns: tuple[list[int], list[int], list[int]],
    updates: list[int],
    sizes: list[int],
    agent_ns: list[int],
    per_update: tuple[list[int], list[int], list[int], list[int]],
) -> int:
    alone, assembled, via = turns
    on_event_ns, send_ns, piped_ns, delivery_ns = per_update
    ms = {
        "agent loop alone": statistics.median(alone) / 1e6,
        "loop as steerable acp assembles it": statistics.median(assembled) / 1e6,
        "via ACP (session/prompt round trip)": statistics.median(via) / 1e6,
    }
    spread = {"agent loop alone": alone, "loop as steerable acp assembles it": assembled}
    spread["via ACP (session/prompt round trip)"] = via
    per_turn = statistics.median(updates)
    base = ms["agent loop alone"]
    python = sys.version.split()[0]
    print(
        f"acp_updates: one turn of {model_rounds} model rounds, {2 * model_rounds} tool calls, "
        f"{rounds} rounds, median wall time (Python {python})"
    )
    for label, value in ms.items():
        low, high = min(spread[label]) / 1e6, max(spread[label]) / 1e6
        ratio = "baseline" if label == "agent loop alone" else f"{value / base:5.2f}x the loop alone"
        print(f"  {label:<38} {value:8.2f} ms  ({low:.2f}..{high:.2f})  {ratio}")
    via_ms, assembled_ms = ms["via ACP (session/prompt round trip)"], ms["loop as steerable acp assembles it"]
    print(
        f"  {'updates per turn':<38} {per_turn:8.0f}     ({statistics.mean(sizes) / per_turn:.0f} bytes each)"
    )
    added = (via_ms - assembled_ms) / per_turn
    added_bare = (via_ms - base) / per_turn
    agent = statistics.median(agent_ns) / 1e6
    print(f"  {'added per update (via - assembled)':<38} {added:8.3f} ms  (goal < {MAX_ADDED_MS:g} ms)")
    print(
        f"  {'  the agent side (on_event, sends)':<38} {agent / per_turn:8.3f} ms  ({agent:.2f} ms a turn; "
        "the rest: the client's decoding, the prompt's own round trip)"
    )
    print(
        f"  {'over the bare loop (via - alone)':<38} {added_bare:8.3f} ms  (the record and the gate included)"
    )
    print(f"per update ({len(send_ns)} in the timed rounds): median / p95")
    for label, values in (
        ("AcpSession.on_event (the loop waits)", on_event_ns),
        ("AcpSession.send (every update)", send_ns),
        ("latency, send to the pipe", piped_ns),
        ("latency, send to the client's handler", delivery_ns),
    ):
        as_ms = [v / 1e6 for v in values]
        print(f"  {label:<38} {statistics.median(as_ms):8.3f} ms  p95 {percentile(as_ms, 95):.3f} ms")
    goals = [
        (
            f"an update adds < {MAX_ADDED_MS:g} ms over the loop without updates ({added:.3f} ms)",
            added < MAX_ADDED_MS,
        )
    ]
    for text, ok in goals:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    return 0 if all(ok for _, ok in goals) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="timed rounds; the median is reported")
    parser.add_argument("--model-rounds", type=int, default=10, help="model rounds per turn (2 calls each)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    missed = asyncio.run(run(args.rounds, args.model_rounds))
    return missed if args.check else 0


if __name__ == "__main__":
    sys.exit(main())
