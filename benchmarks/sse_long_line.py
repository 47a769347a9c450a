"""The model provider reading one long SSE line (a 10 MB content delta), against plain httpx.

What it measures
    Wall time of ``OpenAICompatibleProvider.complete`` (``steerable_sidecar.providers``) of a
    streamed answer whose one content delta is a line of ``--mb`` MB of text (then a stop chunk
    and ``[DONE]``), served from a loopback server in a child process (so its work does not
    share this event loop) in 16 KB writes, as a real network delivers it: the provider's SSE
    reader, its line buffer, the JSON decoding and the answer's assembly. In-run baseline: a
    plain ``httpx.AsyncClient`` streamed POST of the same URL, its bytes joined, split into
    events and each ``data:`` line JSON-decoded (the least an SSE client must do). Both at a
    quarter of the size and whole: the growth (linear: about 4x; quadratic: 16x, as when every
    read rescanned the line buffered so far: 7.5 s for 10 MB). Rounds alternate between the two;
    medians are reported.

Goals
    The provider grows at most 8x for 4x the line (linear), and reads the whole line within 3x
    of the baseline.

Run
    python benchmarks/sse_long_line.py [--mb MB] [--rounds R] [--check]

    Goals print as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal is
    missed (then 1).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import httpx
from pydantic import SecretStr

from steerable_agent_runtime.llm import ChatRequest, Message
from steerable_sidecar.providers import LLMConfig, OpenAICompatibleProvider

MAX_GROWTH = 8.0
MAX_RATIO = 3.0
ASK = ChatRequest(messages=[Message(role="user", content="hi")])

SERVE = r"""
import asyncio, json, sys

def chunk(delta, finish=None):
    body = {"id": "c", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"

bodies = {}

def body(chars):
    if chars not in bodies:
        bodies[chars] = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            + chunk({"role": "assistant", "content": "x" * chars}) + chunk({}, "stop") + b"data: [DONE]\n\n"
        )
    return bodies[chars]

async def handle(reader, writer):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    chars = int(lines[0].split(b" ")[1].split(b"/")[2])  # POST /v1/CHARS/chat/completions
    length = next((int(l.split(b":")[1]) for l in lines if l.lower().startswith(b"content-length")), 0)
    await reader.readexactly(length)
    answer = body(chars)
    try:
        for start in range(0, len(answer), 16_384):
            writer.write(answer[start : start + 16_384])
            await writer.drain()
    finally:
        writer.close()

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


def events(data: bytes) -> str:
    """The baseline's work on the bytes: split into events, decode each ``data:`` line, join the content."""
    content = []
    for event in data.split(b"\n\n"):
        if event.startswith(b"data: {"):
            delta = json.loads(event[6:])["choices"][0]["delta"]
            content.append(delta.get("content") or "")
    return "".join(content)


async def measure(port: int, sizes: tuple[int, int], rounds: int) -> dict[tuple[str, int], list[float]]:
    samples: dict[tuple[str, int], list[float]] = {}
    plain = httpx.AsyncClient(timeout=120)
    providers = {
        chars: OpenAICompatibleProvider(
            LLMConfig(
                provider="openai",
                model="m",
                base_url=f"http://127.0.0.1:{port}/v1/{chars}",
                api_key=SecretStr("sk-bench-0123456789"),
                request_timeout_ms=120_000,
            ),
            max_retries=0,
        )
        for chars in sizes
    }
    try:
        for chars in sizes:

            async def provider(chars: int = chars) -> str:
                return (await providers[chars].complete(ASK)).text

            async def baseline(chars: int = chars) -> str:
                body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
                url = f"http://127.0.0.1:{port}/v1/{chars}/chat/completions"
                async with plain.stream("POST", url, json=body) as response:
                    return events(b"".join([part async for part in response.aiter_bytes()]))

            calls: dict[str, Callable[[], Awaitable[str]]] = {"provider": provider, "baseline": baseline}
            for name, call in calls.items():  # warm-up, and both read the whole line
                if len(await call()) != chars:
                    raise SystemExit(f"{name}: the {chars}-character line was not read whole")
            for _ in range(rounds):
                for name, call in calls.items():
                    gc.collect()
                    start = time.perf_counter()
                    await call()
                    samples.setdefault((name, chars), []).append(time.perf_counter() - start)
    finally:
        await plain.aclose()
        for made in providers.values():
            await made.aclose()
    return samples


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="the line's size in MB (default 10)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds; the median is reported")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    whole = int(args.mb * 1_000_000)
    sizes = (whole // 4, whole)

    server = subprocess.Popen(
        [sys.executable, "-c", SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        samples = asyncio.run(measure(port, sizes, args.rounds))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)

    ms = {key: statistics.median(values) * 1e3 for key, values in samples.items()}
    python = sys.version.split()[0]
    print(f"sse_long_line: one SSE line of {args.mb:g} MB, {args.rounds} rounds, medians (Python {python})")
    print(f"  {'':<32} {'quarter':>10} {'whole':>10} {'growth':>7} {'MB/s':>7}")
    labels = {"provider": "OpenAICompatibleProvider", "baseline": "baseline: httpx + json.loads"}
    for name, label in labels.items():
        small, full = ms[(name, sizes[0])], ms[(name, sizes[1])]
        rate = whole / 1e6 / (full / 1e3)
        print(f"  {label:<32} {small:7.1f} ms {full:7.1f} ms {full / small:6.2f}x {rate:7.0f}")
    growth = ms[("provider", sizes[1])] / ms[("provider", sizes[0])]
    ratio = ms[("provider", sizes[1])] / ms[("baseline", sizes[1])]
    print(f"  ratio provider / baseline, whole {ratio:10.2f}x")
    grows_ok, ratio_ok = growth <= MAX_GROWTH, ratio <= MAX_RATIO
    print(
        f"{_verdict(grows_ok)}: the provider grows at most {MAX_GROWTH:g}x for 4x the line, linear not "
        f"quadratic (16x) ({growth:.2f}x)"
    )
    print(f"{_verdict(ratio_ok)}: the whole line within {MAX_RATIO:g}x of the baseline ({ratio:.2f}x)")
    return 1 if args.check and not (grows_ok and ratio_ok) else 0


if __name__ == "__main__":
    sys.exit(main())
