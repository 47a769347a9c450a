"""Round-trip latency of ``tool.invoke`` over a real sidecar's stdio pipe vs in-process dispatch.

Goal (issue 3): under 0.3 ms added per call at p50. Both sides run in this process's interpreter;
the sidecar is a real subprocess serving one trivial ``echo`` tool through the production
``Sidecar`` + ``JsonRpcPeer`` + stdio transport, driven by ``SidecarClient``.

Run: ``python benchmarks/rpc_roundtrip.py [CALLS]``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time

from steerable_agent_runtime import ToolCall, ToolRouter
from steerable_sidecar.sidecar._client import SidecarClient

SIDECAR = """
import asyncio, sys, tempfile
from pathlib import Path
from steerable_agent_runtime import ToolRouter
from steerable_sidecar.rpc._peer import JsonRpcPeer, open_stdio_streams
from steerable_sidecar.sidecar._server import Sidecar, SidecarConfig

async def main():
    router = ToolRouter()

    @router.tool
    async def echo(text: str) -> dict:
        "Echo."
        return {"text": text}

    reader, writer = await open_stdio_streams()
    peer = JsonRpcPeer(reader, writer, name="sidecar")
    state = Path(tempfile.mkdtemp())
    await Sidecar(peer, SidecarConfig(workspace=state, state_dir=state), router=router).run()

asyncio.run(main())
"""


def router() -> ToolRouter:
    r = ToolRouter()

    @r.tool
    async def echo(text: str) -> dict[str, str]:
        """Echo."""
        return {"text": text}

    return r


def p50_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def main(calls: int) -> None:
    local = router()
    call = ToolCall(id="c", name="echo", arguments={"text": "x"})
    for _ in range(200):
        await local.dispatch(call)
    inproc: list[float] = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await local.dispatch(call)
        inproc.append(time.perf_counter() - t0)

    with tempfile.TemporaryDirectory() as tmp:
        client = await SidecarClient.start(command=[sys.executable, "-c", SIDECAR], cwd=tmp)
        try:
            for _ in range(200):
                await client.invoke("echo", {"text": "x"}, id="c")
            rpc: list[float] = []
            for _ in range(calls):
                t0 = time.perf_counter()
                await client.invoke("echo", {"text": "x"}, id="c")
                rpc.append(time.perf_counter() - t0)
            ping: list[float] = []
            for _ in range(calls):
                t0 = time.perf_counter()
                await client.ping()
                ping.append(time.perf_counter() - t0)
        finally:
            await client.shutdown()

    added = p50_us(rpc) - p50_us(inproc)
    print(f"calls per figure:            {calls}")
    print(f"in-process dispatch p50:     {p50_us(inproc):8.1f} us")
    print(f"system.ping round trip p50:  {p50_us(ping):8.1f} us")
    p90 = statistics.quantiles(rpc, n=10)[-1] * 1e6
    print(f"tool.invoke round trip p50:  {p50_us(rpc):8.1f} us  (p90 {p90:.1f} us)")
    print(f"added per call at p50:       {added:8.1f} us  ({p50_us(rpc) / p50_us(inproc):.0f}x in-process)")
    verdict = "met" if added < 300 else "MISSED"
    print(f"goal: under 300 us added at p50 -> {verdict}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000))
