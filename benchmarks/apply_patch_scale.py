"""``apply_patch`` at 2,000, 4,000 and 8,000 hunks: time linear in the hunks (SAFE-8).

What it measures
    The real tool (``workspace_tools_for_cwd``: the file read first, then ``apply_patch`` through
    the router, diff and fsynced commit included), median of ``--rounds`` wall times, on three
    shapes of patch; each hunk changes one line and has one context line on each side:

    1. one file of 40,000 distinct lines, 2,000 / 4,000 / 8,000 hunks;
    2. one file growing with the patch, 10 lines per hunk (20,000 / 40,000 / 80,000 lines);
    3. many files of three lines, one hunk each (``--files`` per step, default 500 / 1,000 / 2,000:
       each file costs its own fsyncs).

    For each shape: the time per size and the ratio of the largest to the smallest (4x the work).
    ``--before`` also times, on shape 1, the diff as ``apply_patch`` made it until SAFE-8:
    ``difflib`` over every line from the first change to the last (``unified_diff`` without
    ``changes``), which costs lines x hunks (about 12 s at 2,000 hunks).

Goal
    The largest step takes at most 5x the smallest (linear: 4x; quadratic: 16x).

Run
    python benchmarks/apply_patch_scale.py [--rounds R] [--files N] [--before] [--check]

    Goals are printed as PASS/FAIL lines; ``--check`` makes a missed goal exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd
from steerable_agent_runtime.workspace._diff import unified_diff
from steerable_agent_runtime.workspace._patch import UpdateFile, apply_chunks_detailed, parse_patch

HUNKS = (2_000, 4_000, 8_000)
FIXED_LINES = 40_000
LINES_PER_HUNK = 10
MAX_RATIO = 5.0


def one_file(lines_total: int, hunks: int) -> tuple[str, str]:
    """A file of ``lines_total`` distinct lines and a patch changing ``hunks`` of them, evenly spread."""
    lines = [f"    value_{i} = compute({i % 97}, {i * 7 % 1000})" for i in range(lines_total)]
    step = lines_total // hunks
    body = ["*** Begin Patch", "*** Update File: big.py"]
    for k in range(hunks):
        j = k * step + step // 2
        body += ["@@", f" {lines[j - 1]}", f"-{lines[j]}", f"+{lines[j]}  # changed", f" {lines[j + 1]}"]
    body.append("*** End Patch")
    return "\n".join(lines) + "\n", "\n".join(body)


def many_files(root: Path, files: int) -> str:
    """Write ``files`` three-line files in 50 folders; return a patch with one hunk in each."""
    body = ["*** Begin Patch"]
    for i in range(files):
        folder = root / f"d{i % 50}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"first {i}\nsecond {i}\nthird {i}\n")
        body += [f"*** Update File: d{i % 50}/f{i}.txt", "@@", f" first {i}", f"-second {i}", f"+2nd {i}"]
        body.append(f" third {i}")
    body.append("*** End Patch")
    return "\n".join(body)


async def _apply(root: Path, patch: str, reads: list[str]) -> float:
    router = workspace_tools_for_cwd(root)
    for path in reads:
        read = await router.dispatch(ToolCall(id="r", name="read_file", arguments={"path": path}))
        assert read.success, read.error
    started = time.perf_counter()
    result = await router.dispatch(ToolCall(id="p", name="apply_patch", arguments={"patch": patch}))
    elapsed = time.perf_counter() - started
    assert result.success, result.error
    return elapsed


def median_of(rounds: int, once: Callable[[Path], float]) -> float:
    times = []
    for _ in range(rounds):
        gc.collect()
        with tempfile.TemporaryDirectory() as folder:
            times.append(once(Path(folder)))
    return statistics.median(times)


def one_file_time(lines_total: int, hunks: int, rounds: int) -> float:
    text, patch = one_file(lines_total, hunks)

    def once(root: Path) -> float:
        (root / "big.py").write_text(text)
        return asyncio.run(_apply(root, patch, ["big.py"]))

    return median_of(rounds, once)


def many_files_time(files: int, rounds: int) -> float:
    def once(root: Path) -> float:
        patch = many_files(root, files)
        return asyncio.run(_apply(root, patch, [f"d{i % 50}/f{i}.txt" for i in range(files)]))

    return median_of(rounds, once)


def old_diff_time(hunks: int) -> float:
    """The diff as it was made before SAFE-8: difflib over the whole changed region."""
    text, patch = one_file(FIXED_LINES, hunks)
    (update,) = parse_patch(patch)
    assert isinstance(update, UpdateFile)
    new = apply_chunks_detailed(text, update.chunks, path="big.py").text
    started = time.perf_counter()
    unified_diff(text, new, "big.py")
    return time.perf_counter() - started


def report(name: str, sizes: tuple[int, ...], seconds: list[float]) -> bool:
    for size, value in zip(sizes, seconds, strict=True):
        print(f"  {name:<44} {size:>6,}  {value * 1e3:9.1f} ms")
    ratio = seconds[-1] / seconds[0]
    ok = ratio <= MAX_RATIO
    verdict = "PASS" if ok else "FAIL"
    print(f"{verdict}: {name}: {sizes[-1]:,} vs {sizes[0]:,} takes {ratio:.1f}x (<= {MAX_RATIO:g}x)")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds; the median is reported")
    parser.add_argument("--files", type=int, default=500, help="files in the smallest many-files patch")
    parser.add_argument("--before", action="store_true", help="also time the diff as it was before (slow)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    print(f"apply_patch_scale: median of {args.rounds} rounds, the whole tool call")
    ok = report(
        f"one file of {FIXED_LINES:,} lines, hunks",
        HUNKS,
        [one_file_time(FIXED_LINES, hunks, args.rounds) for hunks in HUNKS],
    )
    ok &= report(
        f"one file of {LINES_PER_HUNK} lines per hunk, hunks",
        HUNKS,
        [one_file_time(LINES_PER_HUNK * hunks, hunks, args.rounds) for hunks in HUNKS],
    )
    files = (args.files, 2 * args.files, 4 * args.files)
    ok &= report("files of one hunk each, files", files, [many_files_time(n, args.rounds) for n in files])
    if args.before:
        print(f"  before SAFE-8 (difflib over the whole file), diff alone, {FIXED_LINES:,} lines:")
        for hunks in HUNKS:
            print(f"  {'':<44} {hunks:>6,}  {old_diff_time(hunks) * 1e3:9.1f} ms")
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
