"""A write's diff with changes scattered through the file: the work bound (SAFE-8, issue 31).

What it measures
    A file of ``--lines`` distinct lines (default 20,000) rewritten with every other line changed,
    difflib's worst case (its matcher takes time proportional to lines x changes):

    1. ``before``: the result's diff as ``write_file`` / ``edit_file`` made it until the work bound,
       ``difflib`` over every line from the first change to the last, unbounded (``unified_diff``,
       which keeps that path); skipped past 20,000 lines (over 5 minutes at 200,000), or with
       ``--no-before``;
    2. ``after``: ``DiffSummary``, what a result now carries (``DIFF_WORK_BUDGET``): the matcher
       stops at its budget, and the lines are counted in linear time;
    3. ``write_file`` through the real tool (``workspace_tools_for_cwd``, fsyncs and the journal
       included), median of ``--rounds``.

Goal
    ``after`` and the whole ``write_file`` under 1 s at 20,000 and at 200,000 lines.

Run
    python benchmarks/write_diff_bound.py [--lines N] [--rounds R] [--no-before] [--check]

    Goals are printed as PASS/FAIL lines; ``--check`` makes a missed goal exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd
from steerable_agent_runtime.workspace import version_of
from steerable_agent_runtime.workspace._diff import DiffSummary, unified_diff

GOAL_S = 1.0
BEFORE_MAX_LINES = 20_000


def scattered(lines: int) -> tuple[str, str]:
    """``lines`` distinct lines, and the same text with every other line changed."""
    kept = [f"line {i} of the module, unchanged text\n" for i in range(lines)]
    before = "".join(kept)
    after = "".join(line if i % 2 else f"line {i} rewritten\n" for i, line in enumerate(kept))
    return before, after


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


async def write_file_s(lines: int, rounds: int) -> tuple[float, dict[str, object]]:
    before, after = scattered(lines)
    times: list[float] = []
    data: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        router = workspace_tools_for_cwd(Path(tmp), bash=False, web_tools=False)
        for n in range(rounds):
            (Path(tmp) / "big.txt").write_text(before)
            call = ToolCall(
                id=f"w{n}",
                name="write_file",
                arguments={"path": "big.txt", "content": after, "expectedVersion": version_of(before)},
            )
            started = time.perf_counter()
            result = await router.dispatch(call)
            times.append(time.perf_counter() - started)
            assert result.success, result.error
            data = {k: v for k, v in (result.data or {}).items() if k not in ("version", "diff")}
    return statistics.median(times), data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, action="append", help="file sizes (default 20,000 and 200,000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-before", action="store_true", help="skip the unbounded difflib run")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args()
    missed = False
    for lines in args.lines or [20_000, 200_000]:
        before, after = scattered(lines)
        if not args.no_before and lines <= BEFORE_MAX_LINES:
            old = timed(functools.partial(unified_diff, before, after, "big.txt"))
            print(f"{lines:>7} lines  before (difflib, unbounded): {old:8.3f} s")
        summary = DiffSummary()
        new = timed(functools.partial(summary.add, before, after, "big.txt"))
        fields = summary.fields()
        print(
            f"{lines:>7} lines  after (DiffSummary):           {new:8.3f} s  "
            f"linesAdded {fields['linesAdded']}, linesRemoved {fields['linesRemoved']}, "
            f"diffNotComputed {fields.get('diffNotComputed', False)}"
        )
        whole, data = asyncio.run(write_file_s(lines, args.rounds))
        print(f"{lines:>7} lines  write_file, median of {args.rounds}:  {whole:8.3f} s  {data}")
        for label, seconds in (("after", new), ("write_file", whole)):
            ok = seconds < GOAL_S
            missed |= not ok
            print(f"{'PASS' if ok else 'FAIL'}: {label} at {lines} lines {seconds:.3f} s < {GOAL_S} s")
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
