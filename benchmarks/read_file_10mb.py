"""``read_file`` of a 10 MB text file through the router, against a raw read + SHA-256.

What it measures
    Wall time of ``await router.dispatch(ToolCall(name="read_file", arguments={"path": ...}))`` on a
    router from ``workspace_tools_for_cwd(tmpdir)``, for a 10 MiB ASCII file of source-like lines
    generated in a temporary directory. That is the whole tool path: envelope and argument
    validation, path resolution, the bounded read (worker thread), UTF-8 decoding, line-ending
    detection, the SHA-256 version, line counting, the 100,000-character display clip, recording
    the version in the session's read state, and result normalisation. Baseline in the same run:
    ``open(path, "rb").read()``, ``hashlib.sha256(data).hexdigest()``, ``data.decode("utf-8")``
    and ``text.count("\n")`` of the same bytes: the least a version-stamped read of text must do
    (the bytes, their version, the text, its lines); the bytes and the hash alone are shown too
    (informational). After warm-up calls (page cache hot), rounds alternate between them; medians
    are reported in ms and MB/s (1 MB = 10**6 bytes).

Goal
    read_file through dispatch within 2x of the baseline (read + SHA-256 + decode + line count).

Run
    python benchmarks/read_file_10mb.py [--rounds R] [--check]

    Goals are printed as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal
    is missed (then 1).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from steerable_agent_runtime import ToolCall, ToolRouter, workspace_tools_for_cwd

FILE_BYTES = 10 * 1024 * 1024
MAX_RATIO = 2.0

_WORDS = (
    "value result index buffer config handler request response items count total offset limit "
    "parser token state cache stream record payload header client server session context"
).split()


def source_like_text(size: int, seed: int = 0) -> bytes:
    """Return ``size`` bytes of deterministic ASCII lines that look like Python source."""
    rng = random.Random(seed)
    lines: list[str] = []
    total = 0
    while total < size:
        indent = "    " * rng.randint(0, 3)
        a, b, c = rng.choice(_WORDS), rng.choice(_WORDS), rng.choice(_WORDS)
        kind = rng.randint(0, 5)
        if kind == 0:
            line = f"{indent}def {a}_{b}(self, {c}: int = {rng.randint(0, 999)}) -> {b.title()}:"
        elif kind == 1:
            line = f"{indent}# {a} {b} {c}: keep the {b} in sync with {c}_{rng.randint(0, 99)}"
        elif kind == 2:
            line = f"{indent}if {a} is not None and {b} > {rng.randint(0, 9999)}:"
        elif kind == 3:
            line = ""
        else:
            line = f"{indent}{a}_{b} = self.{c}.get({a!r}, {rng.randint(0, 99999)}) + len({b})"
        lines.append(line + "\n")
        total += len(line) + 1
    return "".join(lines).encode("ascii")[:size]


def raw_read_and_hash(path: Path) -> str:
    with open(path, "rb") as handle:
        data = handle.read()
    return hashlib.sha256(data).hexdigest()


def text_read(path: Path) -> tuple[str, int]:
    """The baseline: the bytes, their SHA-256, the text and its line count."""
    with open(path, "rb") as handle:
        data = handle.read()
    version = hashlib.sha256(data).hexdigest()
    return version, data.decode("utf-8").count("\n")


async def measure(path: Path, router: ToolRouter, rounds: int) -> tuple[list[int], list[int], list[int], str]:
    call = ToolCall(id="call_read", name="read_file", arguments={"path": path.name})
    expected = raw_read_and_hash(path)
    result = await router.dispatch(call)
    data = result.data or {}
    if not result.success or data.get("version") != expected:
        raise SystemExit(f"read_file failed or returned the wrong version: {result.to_wire()!r:.500}")
    view = router.workspace.state.get(path.name)  # type: ignore[attr-defined]
    if view is None or view.version != expected:
        raise SystemExit("read_file did not record the read in the session state")
    for _ in range(2):  # warm-up (page cache, thread pool, lazy paths)
        await router.dispatch(call)
        raw_read_and_hash(path)
        text_read(path)
    tool_ns: list[int] = []
    raw_ns: list[int] = []
    text_ns: list[int] = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter_ns()
        await router.dispatch(call)
        tool_ns.append(time.perf_counter_ns() - start)
        gc.collect()
        start = time.perf_counter_ns()
        raw_read_and_hash(path)
        raw_ns.append(time.perf_counter_ns() - start)
        gc.collect()
        start = time.perf_counter_ns()
        text_read(path)
        text_ns.append(time.perf_counter_ns() - start)
    shown = len(data["content"])
    clip = f"partial={data.get('partial')}, totalLines={data.get('totalLines')}, shown={shown} chars"
    return tool_ns, raw_ns, text_ns, clip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds; the median is reported")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="steerable-bench-") as tmp:
        path = Path(tmp) / "big_module.py"
        path.write_bytes(source_like_text(FILE_BYTES))
        router = workspace_tools_for_cwd(tmp)
        tool_ns, raw_ns, text_ns, clip = asyncio.run(measure(path, router, args.rounds))

    tool_ms = statistics.median(tool_ns) / 1e6
    raw_ms = statistics.median(raw_ns) / 1e6
    text_ms = statistics.median(text_ns) / 1e6
    ratio = tool_ms / text_ms
    mb = FILE_BYTES / 1e6
    python = sys.version.split()[0]
    print(f"read_file_10mb: {FILE_BYTES} bytes, {args.rounds} rounds, median (Python {python})")
    print(f"  result: {clip}")
    rows = [
        ("read_file via ToolRouter.dispatch", f"{tool_ms:8.2f} ms", f"{mb / (tool_ms / 1e3):8.0f} MB/s"),
        ("baseline read+sha256+decode+lines", f"{text_ms:8.2f} ms", f"{mb / (text_ms / 1e3):8.0f} MB/s"),
        ("bytes alone: read + sha256 (info)", f"{raw_ms:8.2f} ms", f"{mb / (raw_ms / 1e3):8.0f} MB/s"),
        ("spread read_file min..max", f"{min(tool_ns) / 1e6:.2f}..{max(tool_ns) / 1e6:.2f} ms", ""),
        ("spread baseline min..max", f"{min(text_ns) / 1e6:.2f}..{max(text_ns) / 1e6:.2f} ms", ""),
        ("ratio read_file / baseline", f"{ratio:8.2f}x", f"(goal <= {MAX_RATIO:g}x)"),
        ("ratio read_file / bytes alone", f"{tool_ms / raw_ms:8.2f}x", "(info)"),
    ]
    for label, value, extra in rows:
        print(f"  {label:<36} {value}  {extra}".rstrip())
    ok = ratio <= MAX_RATIO
    verdict = "PASS" if ok else "FAIL"
    print(
        f"{verdict}: read_file through dispatch within {MAX_RATIO:g}x of read + sha256 + decode + line count "
        f"({ratio:.2f}x)"
    )
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
