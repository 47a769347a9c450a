"""The TypeScript host package (js/, ``@steerable/host``) against the Python one, in the same run.

What it measures
    * ``tool.invoke`` round trip of a trivial ``echo`` tool over a real sidecar's stdio pipe
      (``rpc_roundtrip.SIDECAR``: the production ``Sidecar`` + ``JsonRpcPeer``), driven by the
      TypeScript ``SidecarClient`` (Node) and by the Python ``SidecarClient``; p50 / p90 in
      microseconds and TypeScript / Python at p50. Sequential calls, after a warm-up of 200.
    * ``tool_search`` ranking over the same deferred inventory (``_tool_corpus.synthetic_inventory``,
      Seal-Tools grown to ``--size`` tools) and the same three query sets as
      ``tool_search_speed.py`` (keywords, requests, tasks; 300 each): ``ToolIndex.search``
      (TypeScript, MaxScore like the Python index) against ``ToolSearchIndex.scores`` (Python),
      top 8; p50 per query in ms, and whether every query's top 8 agree (same names in the same
      order, scores within the contract's 1e-9).
    * ``SidecarClient.start`` to ``lifecycle.ready``, both clients, median of 5 (the sidecar's
      own boot dominates: the client's share is what differs).

Goals
    * TypeScript round trip p50 within 1.5x the Python client's (the host's language must not be
      the bottleneck of a tool call);
    * TypeScript ranking p50 under ``tool_search_speed.py``'s goals (1 ms at 10,000 deferred tools,
      5 ms at 100,000), with agreement on every query (the contract at scale, not only its
      eight-tool inventory).

Run
    npm ci --prefix js && npm run build --prefix js    # once: the benchmark drives js/dist
    python benchmarks/host_typescript.py [--calls N] [--size N] [--check]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _tool_corpus import deferred_tool, synthetic_inventory
from rpc_roundtrip import SIDECAR
from steerable_agent_runtime.tool_search import ToolSearchIndex
from steerable_sidecar.sidecar._client import SidecarClient
from tool_search_speed import GOAL_P50_MS, _query_sets

ROOT = Path(__file__).resolve().parent.parent
ENTRY = ROOT / "js" / "dist" / "index.js"
TOLERANCE = json.loads((ROOT / "spec" / "tool_contract.json").read_text(encoding="utf-8"))["toolSearch"][
    "bm25"
]["tolerance"]
K = 8

DRIVER = """
import { readFileSync } from "node:fs";
import { SidecarClient, ToolIndex } from %(entry)s;

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = {};
const started = [];
for (let i = 0; i < 5; i++) {
  const t0 = process.hrtime.bigint();
  const sidecar = await SidecarClient.start({ command: job.command, cwd: job.cwd, logger: () => {} });
  started.push(Number(process.hrtime.bigint() - t0) / 1e6);
  if (i < 4) { await sidecar.close(); continue; }
  for (let j = 0; j < 200; j++) await sidecar.invoke("echo", { text: "x" }, { id: "c" });
  const rtt = [];
  for (let j = 0; j < job.calls; j++) {
    const t = process.hrtime.bigint();
    await sidecar.invoke("echo", { text: "x" }, { id: "c" });
    rtt.push(Number(process.hrtime.bigint() - t) / 1e3);
  }
  out.rtt_us = rtt;
  await sidecar.close();
}
out.start_ms = started;
const index = new ToolIndex(job.inventory.map(([name, description]) => ({ name, description })));
for (const q of job.queries) index.search(q, { maxResults: %(k)d });
out.rank_ms = [];
out.top = [];
for (const q of job.queries) {
  const times = [];
  let hits;
  for (let r = 0; r < job.rounds; r++) {
    const t = process.hrtime.bigint();
    hits = index.search(q, { maxResults: %(k)d });
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  out.rank_ms.push(times[Math.floor(times.length / 2)]);
  out.top.push(hits.map((h) => [h.name, h.score]));
}
console.log(JSON.stringify(out));
"""


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


async def python_side(calls: int, cwd: str) -> tuple[list[float], list[float]]:
    command = [sys.executable, "-c", SIDECAR]
    starts = []
    for _ in range(5):
        t0 = time.perf_counter()
        client = await SidecarClient.start(command=command, cwd=cwd)
        starts.append((time.perf_counter() - t0) * 1e3)
        await client.aclose()
    client = await SidecarClient.start(command=command, cwd=cwd)
    try:
        for _ in range(200):
            await client.invoke("echo", {"text": "x"}, id="c")
        rtt = []
        for _ in range(calls):
            t0 = time.perf_counter()
            await client.invoke("echo", {"text": "x"}, id="c")
            rtt.append((time.perf_counter() - t0) * 1e6)
    finally:
        await client.aclose()
    return rtt, starts


def agree(ours: list[tuple[str, float]], theirs: list[tuple[str, float]]) -> bool:
    """The same names in the same order, each score within the contract's tolerance."""
    if [name for name, _ in ours] != [name for name, _ in theirs]:
        return False
    return all(abs(score - other) <= TOLERANCE for (_, score), (_, other) in zip(ours, theirs, strict=True))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    node = shutil.which("node")
    if node is None or not ENTRY.exists():
        print("needs node and js/dist: npm ci --prefix js && npm run build --prefix js", file=sys.stderr)
        return 2

    inventory = synthetic_inventory(args.size)
    sets = _query_sets()  # keywords, requests, tasks: 300 each
    queries = [q for batch in sets.values() for q in batch]
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.json"
        job.write_text(
            json.dumps(
                {
                    "command": [sys.executable, "-c", SIDECAR],
                    "cwd": tmp,
                    "calls": args.calls,
                    "inventory": inventory,
                    "queries": queries,
                    "rounds": args.rounds,
                }
            )
        )
        driver = Path(tmp) / "driver.mjs"
        driver.write_text(DRIVER % {"entry": json.dumps(ENTRY.as_uri()), "k": K})
        run = subprocess.run([node, str(driver), str(job)], capture_output=True, text=True, check=False)
        if run.returncode != 0:
            print(run.stderr, file=sys.stderr)
            return 1
        ts = json.loads(run.stdout)
        py_rtt, py_start = asyncio.run(python_side(args.calls, tmp))

    index = ToolSearchIndex(deferred_tool(name, description) for name, description in inventory)
    for q in queries:
        index.scores(q, K)
    py_rank, agreed = [], 0
    for q, theirs in zip(queries, ts["top"], strict=True):
        times = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            ours = index.scores(q, K)
            times.append((time.perf_counter() - t0) * 1e3)
        py_rank.append(statistics.median(times))
        agreed += agree(ours, theirs)

    ts_p50, py_p50 = statistics.median(ts["rtt_us"]), statistics.median(py_rtt)
    print(
        f"node {subprocess.run([node, '--version'], capture_output=True, text=True).stdout.strip()}, "
        f"python {sys.version.split()[0]}; {args.calls} sequential calls, {args.size:,} deferred tools"
    )
    print(f"{'tool.invoke round trip':<28} {'p50 us':>9} {'p90 us':>9}")
    print(f"{'  TypeScript SidecarClient':<28} {ts_p50:9.1f} {pct(ts['rtt_us'], 0.9):9.1f}")
    print(f"{'  Python SidecarClient':<28} {py_p50:9.1f} {pct(py_rtt, 0.9):9.1f}")
    print(f"  TypeScript / Python at p50: {ts_p50 / py_p50:.2f}x")
    print(
        f"start to lifecycle.ready (median of 5): TypeScript {statistics.median(ts['start_ms']):.0f} ms, "
        f"Python {statistics.median(py_start):.0f} ms"
    )
    print(f"tool_search top {K} at {args.size:,} tools: p50 TypeScript, p50 Python, TypeScript / Python")
    start, ts_rank = 0, 0.0
    for label, batch in sets.items():
        ts_p, py_p = (statistics.median(r[start : start + len(batch)]) for r in (ts["rank_ms"], py_rank))
        print(f"  {label:<9} {len(batch)} queries {ts_p:9.3f} ms {py_p:9.3f} ms {ts_p / py_p:8.2f}x")
        ts_rank, start = max(ts_rank, ts_p), start + len(batch)
    print(f"  top {K} agree on {agreed}/{len(queries)} queries (names and order, scores within {TOLERANCE})")

    failures = []
    for ok, goal in (
        (
            ts_p50 <= 1.5 * py_p50,
            f"TypeScript round trip p50 {ts_p50:.0f} us within 1.5x Python's {py_p50:.0f} us",
        ),
        (
            ts_rank < GOAL_P50_MS.get(args.size, float("inf")),
            f"TypeScript ranking p50 (worst set) {ts_rank:.3f} ms < {GOAL_P50_MS.get(args.size, '-')} ms"
            f" at {args.size:,} (tool_search_speed.py's goals)",
        ),
        (agreed == len(queries), f"every query's top {K} agrees ({agreed}/{len(queries)})"),
    ):
        print(f"{'PASS' if ok else 'FAIL'}: {goal}")
        if not ok:
            failures.append(goal)
    return 1 if failures and args.check else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
