"""``web_fetch``: HTML to Markdown on a 1 MB page, a capped fetch of a 50 MB local response, hostile pages.

What it measures
    1. ``markdown_from_html`` (the conversion itself) on a generated 1 MB documentation-like page
       (headings, paragraphs, links, code, tables, scripts, nav), and the same through
       ``HtmlConverter`` (what ``web_fetch`` runs: a warm child process in the layer-2 sandbox,
       held to a memory ceiling, the page and the Markdown sent over a pipe). In-run baseline: one
       pass of the stdlib ``html.parser.HTMLParser`` over the same page (parsing alone, no
       output). Goal: under 150 ms, for both. The first conversion (which chooses the sandbox
       backend and starts the child) is reported without a goal.
    2. ``WebFetcher.fetch`` of a 50 MB ``text/plain`` response from a local server running in a
       child process (so server work does not share this event loop), through the whole path:
       DNS (an injected resolver), the SSRF check, the pinned request (a transport that maps
       93.184.216.34 to 127.0.0.1), the streamed read under the byte cap, decoding. In-run
       baseline: a plain shared ``httpx.AsyncClient`` streaming read of the same bytes (the
       first ``cap`` bytes into a bytearray, then close). Two caps: 1 MB (the default; the fetch
       stops early) and 100 MB (the ceiling; all 50 MB are read and decoded). Peak Python memory
       (``tracemalloc``, one extra round each) is reported against the cap. Goals: time within
       1.5x of the baseline, peak memory within 3x of the cap. A gzip-encoded variant (a 50 MB
       body compressed about 1000x) is reported without a goal.
    3. ``text_from_html`` (the text a page falls back to when it cannot be converted) on six
       hostile pages of about 1 MB that a scanner searching again from each ``<`` or ``&`` would
       take quadratic time on: unclosed ``<script``, unclosed comments, unclosed tags, one long
       tag, unclosed end tags, bare ampersands (the inputs of
       ``test_text_from_html_is_linear_on_hostile_input``). Each at a quarter of its size and at
       full size: the growth (linear: about 4x; quadratic: 16x). In-run baseline: the same on the
       1 MB documentation page of (1), a quarter and whole. Goal: each grows at most 8x for 4x
       the input (about 50 ms at 1 MB here; a quadratic pass would take minutes).

Run
    python benchmarks/web_fetch.py [--rounds R] [--check]

    Goals print as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal is
    missed (then 1).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import html.parser
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from steerable_sidecar.web_tools._config import WebToolsConfig
from steerable_sidecar.web_tools._converter import HtmlConverter
from steerable_sidecar.web_tools._fetch import WebFetcher
from steerable_sidecar.web_tools._html import markdown_from_html, text_from_html

# Where web_servers (the scripted test servers) lives; the server child imports it from there too.
WEB_TESTS = str(Path(__file__).resolve().parents[1] / "tests" / "sidecar" / "web_tools")
sys.path.insert(0, WEB_TESTS)

from web_servers import PUBLIC_IP, PinRecorder, ScriptedResolver  # noqa: E402

PAGE_BYTES = 1_000_000
BODY_BYTES = 50_000_000
HTML_GOAL_MS = 150.0
MAX_TIME_RATIO = 1.5
MAX_PEAK_RATIO = 3.0
MAX_GROWTH = 8.0
HOST = "docs.example.com"

_WORDS = (
    "request response client server header stream buffer token config session cache record "
    "payload context handler index value result offset limit parser state timeout retry"
).split()


def docs_page(size: int, seed: int = 0) -> str:
    """A deterministic documentation-like HTML page of about ``size`` characters."""
    rng = random.Random(seed)
    parts = [
        "<!doctype html><html><head><title>Reference</title><style>body{font:14px sans-serif}</style>",
        "<script>window.analytics={track:function(){}};</script></head><body>",
        '<nav><a href="/">Home</a> <a href="/guide/">Guide</a> <a href="/api/">API</a></nav><main>',
    ]
    total = sum(map(len, parts))
    section = 0
    while total < size:
        section += 1
        words = " ".join(rng.choice(_WORDS) for _ in range(60))
        name = f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}"
        block = (
            f'<h2 id="s{section}">{section}. The {name} option</h2>'
            f'<p>{words} See <a href="/api/{name}.html">{name}</a> and <code>{name}()</code>.</p>'
            f"<pre><code>client.{name}(timeout={rng.randint(1, 99)})\n"
            f"print(result.{rng.choice(_WORDS)})</code></pre>"
            "<table><tr><th>Field</th><th>Type</th><th>Default</th></tr>"
            f"<tr><td>{rng.choice(_WORDS)}</td><td>int</td><td>{rng.randint(0, 999)}</td></tr>"
            f"<tr><td>{rng.choice(_WORDS)}</td><td>str</td><td>none</td></tr></table>"
            f"<ul><li>{rng.choice(_WORDS)}</li><li>{rng.choice(_WORDS)}</li></ul>"
            f"<script>track('{name}')</script>"
        )
        parts.append(block)
        total += len(block)
    parts.append("</main></body></html>")
    return "".join(parts)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


HOSTILE: dict[str, Callable[[int], str]] = {
    "unclosed <script": lambda size: "<script" * (size // 7),
    "unclosed comments": lambda size: "<!--" * (size // 4),
    "unclosed tags": lambda size: "<a" * (size // 2),
    "one long tag": lambda size: "<p " + "x" * size,
    "unclosed end tags": lambda size: "</div" * (size // 5),
    "bare ampersands": lambda size: "&" * size,
    "baseline: docs page": docs_page,
}
"""Each hostile page by the characters it has (about), the baseline last."""


def bench_hostile(rounds: int) -> list[tuple[str, float, float]]:
    """``text_from_html`` of each :data:`HOSTILE` page at a quarter and at full size (median ms)."""
    rows = []
    for name, make in HOSTILE.items():
        small, full = make(PAGE_BYTES // 4), make(PAGE_BYTES)
        text_from_html(small)  # warm-up
        times: tuple[list[float], list[float]] = ([], [])
        for _ in range(rounds):
            for page, out in ((small, times[0]), (full, times[1])):
                gc.collect()
                start = time.perf_counter()
                text_from_html(page)
                out.append(time.perf_counter() - start)
        rows.append((name, median_ms(times[0]), median_ms(times[1])))
    return rows


def bench_html(rounds: int) -> tuple[float, float, int]:
    page = docs_page(PAGE_BYTES)
    markdown_from_html(page, "https://docs.example.com/ref/")  # warm-up
    convert: list[float] = []
    parse: list[float] = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        out = markdown_from_html(page, "https://docs.example.com/ref/")
        convert.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        parser = html.parser.HTMLParser()
        parser.feed(page)
        parser.close()
        parse.append(time.perf_counter() - start)
    return median_ms(convert), median_ms(parse), len(out)


async def bench_child(rounds: int) -> tuple[float, float, str]:
    """``HtmlConverter.convert`` of the same page: the first call (it starts the child), then warm.

    Returns:
        The first call's milliseconds, the warm median's, and the sandbox backend's name.
    """
    page = docs_page(PAGE_BYTES)
    converter = HtmlConverter()
    loop = asyncio.get_running_loop()
    first = 0.0
    try:
        samples: list[float] = []
        for i in range(rounds + 1):
            start = time.perf_counter()
            rendered = await converter.convert(
                page,
                base_url="https://docs.example.com/ref/",
                max_chars=4 * PAGE_BYTES,
                deadline=loop.time() + 30,
            )
            if i:  # the first round starts the child
                samples.append(time.perf_counter() - start)
            else:
                first = (time.perf_counter() - start) * 1e3
            assert rendered.fallback is None, rendered.fallback
    finally:
        await converter.aclose()
    sandbox = converter.sandbox.backend if converter.sandbox is not None else "none"
    return first, median_ms(samples), sandbox


SERVE = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from web_servers import Reply, ScriptedServer, gzip_body
size = int(sys.argv[2])
line = b"GET /index.html 200 steerable web_fetch benchmark line of plain ASCII text\\n"
body = (line * (size // len(line) + 1))[:size]
routes = {
    "/plain": Reply(headers=[("Content-Type", "text/plain; charset=utf-8")], body=body),
    "/gzip": Reply(
        headers=[("Content-Type", "text/plain"), ("Content-Encoding", "gzip")], body=gzip_body(body)
    ),
}
async def main():
    async with ScriptedServer(routes) as server:
        print(server.port, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
asyncio.run(main())
"""


async def alternating(
    a: Callable[[], Awaitable[Any]], b: Callable[[], Awaitable[Any]], rounds: int
) -> tuple[list[float], list[float]]:
    """Time ``a`` and ``b`` in alternating rounds (so drift hits both alike)."""
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for call, out in ((a, samples[0]), (b, samples[1])):
            gc.collect()
            start = time.perf_counter()
            await call()
            out.append(time.perf_counter() - start)
    return samples


async def peak(call: Callable[[], Awaitable[Any]]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        await call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def bench_fetch(port: int, rounds: int) -> list[dict[str, Any]]:
    rows = []
    plain = httpx.AsyncClient()
    try:
        for path, cap, n in (
            ("/plain", 1_000_000, rounds * 4),
            ("/plain", 100_000_000, rounds),
            ("/gzip", 1_000_000, rounds * 4),
        ):
            fetcher = WebFetcher(
                WebToolsConfig(fetch_max_bytes=cap, fetch_timeout_ms=120_000),
                resolver=ScriptedResolver({HOST: [PUBLIC_IP]}),
                transport=PinRecorder({PUBLIC_IP: port}),
            )

            async def fetch(fetcher: WebFetcher = fetcher, path: str = path) -> int:
                result = await fetcher.fetch(f"http://{HOST}{path}")
                return int(result["bytes"])

            async def baseline(cap: int = cap, path: str = path) -> int:
                body = bytearray()
                async with plain.stream("GET", f"http://127.0.0.1:{port}{path}") as response:
                    async for chunk in response.aiter_bytes():
                        body += chunk[: cap - len(body)]
                        if len(body) >= cap:
                            break
                return len(body)

            got = await fetch()
            want = await baseline()
            if got != want:
                raise SystemExit(f"{path} cap {cap}: web_fetch read {got} bytes, the baseline {want}")
            fetch_s, base_s = await alternating(fetch, baseline, n)
            rows.append(
                {
                    "path": path,
                    "cap": cap,
                    "bytes": got,
                    "fetch_ms": median_ms(fetch_s),
                    "base_ms": median_ms(base_s),
                    "fetch_peak": await peak(fetch),
                    "base_peak": await peak(baseline),
                }
            )
            await fetcher.aclose()
    finally:
        await plain.aclose()
    return rows


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (x4 for the 1 MB cap); medians")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    python = sys.version.split()[0]
    ok = True

    convert_ms, parse_ms, out_chars = bench_html(args.rounds * 2)
    print(f"web_fetch benchmark (Python {python}), medians")
    print(f"  HTML -> Markdown, {PAGE_BYTES / 1e6:.1f} MB page ({out_chars} chars out)  {convert_ms:8.1f} ms")
    ratio = convert_ms / parse_ms
    print(f"  baseline stdlib HTMLParser pass          {parse_ms:8.1f} ms   ratio {ratio:.2f}x")
    passed = convert_ms < HTML_GOAL_MS
    ok &= passed
    print(f"{_verdict(passed)}: HTML -> Markdown of 1 MB under {HTML_GOAL_MS:g} ms ({convert_ms:.1f} ms)")
    first_ms, child_ms, sandbox = asyncio.run(bench_child(args.rounds * 2))
    print(f"  the same through web_fetch's converter child ({sandbox}), warm  {child_ms:8.1f} ms")
    print(f"  its first conversion (backend chosen, child started)  {first_ms:8.1f} ms")
    passed = child_ms < HTML_GOAL_MS
    ok &= passed
    print(f"{_verdict(passed)}: web_fetch's conversion of 1 MB under {HTML_GOAL_MS:g} ms ({child_ms:.1f} ms)")

    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, WEB_TESTS, str(BODY_BYTES)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        rows = asyncio.run(bench_fetch(port, args.rounds))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)

    ok &= report_fetch(rows)
    ok &= report_hostile(bench_hostile(args.rounds * 3))
    return 1 if args.check and not ok else 0


def report_fetch(rows: list[dict[str, Any]]) -> bool:
    ok = True
    for row in rows:
        cap_mb = row["cap"] / 1e6
        ratio = row["fetch_ms"] / row["base_ms"]
        peak_ratio = row["fetch_peak"] / min(row["cap"], row["bytes"])
        label = f"{row['path'][1:]} 50 MB response, cap {cap_mb:g} MB ({row['bytes'] / 1e6:g} MB read)"
        print(f"  {label}")
        print(f"    web_fetch      {row['fetch_ms']:8.1f} ms   peak {row['fetch_peak'] / 1e6:7.2f} MB")
        print(f"    plain httpx    {row['base_ms']:8.1f} ms   peak {row['base_peak'] / 1e6:7.2f} MB")
        print(f"    ratio time {ratio:.2f}x, peak / bytes kept {peak_ratio:.2f}x")
        if row["path"] == "/plain":
            time_ok = ratio <= MAX_TIME_RATIO
            peak_ok = peak_ratio <= MAX_PEAK_RATIO
            ok &= time_ok and peak_ok
            name = f"cap {cap_mb:g} MB"
            goal = f"within {MAX_TIME_RATIO:g}x of plain httpx"
            print(f"{_verdict(time_ok)}: {name} fetch {goal} ({ratio:.2f}x)")
            goal = f"within {MAX_PEAK_RATIO:g}x of the bytes kept"
            print(f"{_verdict(peak_ok)}: {name} peak {goal} ({peak_ratio:.2f}x)")
    return ok


def report_hostile(rows: list[tuple[str, float, float]]) -> bool:
    *hostile, (_, _, base_ms) = rows
    print(f"  text_from_html on hostile pages: a quarter, whole ({PAGE_BYTES / 1e6:g} MB), medians")
    print(f"    {'page':<20} {'quarter':>9} {'whole':>9} {'growth':>7} {'/ docs page':>11}")
    for name, small_ms, full_ms in rows:
        growth, ratio = full_ms / small_ms, full_ms / base_ms
        print(f"    {name:<20} {small_ms:6.1f} ms {full_ms:6.1f} ms {growth:6.2f}x {ratio:10.2f}x")
    worst_name, worst_small, worst_full = max(hostile, key=lambda row: row[2] / row[1])
    growth = worst_full / worst_small
    passed = growth <= MAX_GROWTH
    print(
        f"{_verdict(passed)}: each hostile page grows at most {MAX_GROWTH:g}x for 4x the input, "
        f"linear not quadratic (16x) (worst: {worst_name}, {growth:.2f}x)"
    )
    return passed


if __name__ == "__main__":
    sys.exit(main())
