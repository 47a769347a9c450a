"""``grep`` and ``glob`` on the patterns and files that used to blow up, against a plain search of the same.

What it measures
    Wall time of one ``grep`` / ``glob`` call through ``router.dispatch`` (``workspace_tools_for_cwd``,
    no ``bash``) on inputs that once took a backtracking engine to its 20 s budget or far past it,
    each in a workspace of its own built in a temporary folder:

    * ``(x+x+)+y`` over a line of 5,000 ``x`` (and a file holding ``xxy``): the issue's case (FILE-16);
    * the glob ``*a*a*a*a*a*a*a*a*a*a*b`` against a file named by 100 ``a``;
    * nested ``**`` against a file 200 folders down (``d/d/.../f.txt``): three patterns that match
      nothing (twelve ``**`` in a row, ``**/d/`` twelve times, ``**/*d*d*d*d*d*d*d*/**/[q]``), each
      through ``glob`` and through ``grep``'s ``glob`` filter, and one that matches the file, all
      in one figure; on ripgrep and on the Python engine (``STEERABLE_RIPGREP=off``);
    * ``grep x`` in a 16 MiB file of one line (a minified bundle): the answer is one 500-character
      match.

    Each is checked whole (not cut at the search budget: no ``timedOut``) and right. Baseline, in
    the same run and workspace: a plain call of the same tool (a literal ``xxy``; the glob ``*b``;
    ``**/f.txt`` and ``grep needle`` over the deep tree; a literal that is not in the 16 MiB
    line), so the ratio says what the hard input costs over an easy one. One warm-up each, then
    rounds interleaved; medians in ms.

Goals
    The figures the tests asserted before their timing moved here (tests/workspace/test_search.py,
    test_search_engines.py): the backtracking grep and the ``*a*...b`` glob within 2 s each, the
    nested ``**`` set within 5 s on each engine, the 16 MiB line within 10 s.

Run
    python benchmarks/search_worst_cases.py [--rounds R] [--check]

    Goals are printed as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal
    is missed (then 1).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steerable_agent_runtime import ToolCall, ToolRouter, workspace_tools_for_cwd

DEEP = "/".join(["d"] * 200) + "/f.txt"
NOTHING = ["/".join(["**"] * 12) + "/[z]zz", "**/d/" * 12 + "[z]zz", "**/*d*d*d*d*d*d*d*/**/[q]"]
_ids = itertools.count()


@dataclass
class Case:
    """One worst case: the hard calls, the plain ones, and the goal for the hard ones (seconds)."""

    label: str
    hard: Callable[[], Awaitable[None]]
    plain: Callable[[], Awaitable[None]]
    goal_s: float


class Tools:
    """A workspace's router, called as a model calls it; every answer checked whole."""

    def __init__(self, root: Path, **environ: str) -> None:
        self.root = root
        env = {"HOME": str(root.parent / "home"), "PATH": os.environ.get("PATH", ""), **environ}
        self.router: ToolRouter = workspace_tools_for_cwd(root, bash=False, environ=env)

    def write(self, path: str, data: bytes) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    async def call(self, name: str, key: str, expected: object, **arguments: Any) -> None:
        result = await self.router.dispatch(ToolCall(id=f"c{next(_ids)}", name=name, arguments=arguments))
        data = result.data or {}
        if not result.success or "timedOut" in data or data.get(key) != expected:
            raise SystemExit(f"{name} {arguments!r:.200}: unexpected answer {result.to_wire()!r:.500}")


def cases(scratch: Path) -> list[Case]:
    def workspace(name: str, **environ: str) -> Tools:
        root = scratch / name / "ws"
        root.mkdir(parents=True)
        return Tools(root, **environ)

    backtracking = workspace("backtracking")
    backtracking.write("evil.txt", b"x" * 5000 + b"\n")
    backtracking.write("ok.txt", b"xxy\n")
    ok = [{"path": "ok.txt", "line": 1, "text": "xxy"}]

    names = workspace("glob-stars")
    names.write("a" * 100, b"x")

    def nested(tools: Tools) -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]:
        tools.write(DEEP, b"needle\n")

        async def hard() -> None:
            for pattern in NOTHING:
                await tools.call("glob", "files", [], pattern=pattern)
                await tools.call("grep", "matches", [], pattern="needle", glob=pattern)
            await tools.call("glob", "files", [DEEP], pattern="**/d/**/d/**/f.txt")

        async def plain() -> None:
            await tools.call("glob", "files", [DEEP], pattern="**/f.txt")
            found = [{"path": DEEP, "line": 1, "text": "needle"}]
            await tools.call("grep", "matches", found, pattern="needle")

        return hard, plain

    rg_hard, rg_plain = nested(workspace("nested-rg"))
    py_hard, py_plain = nested(workspace("nested-python", STEERABLE_RIPGREP="off"))

    minified = workspace("minified")
    minified.write("min.js", b"x" * (16 * 1024 * 1024) + b"\n")
    first = [{"path": "min.js", "line": 1, "text": "x" * 500}]

    return [
        Case(
            "grep (x+x+)+y, 5,000 x",
            lambda: backtracking.call("grep", "matches", ok, pattern=r"(x+x+)+y"),
            lambda: backtracking.call("grep", "matches", ok, pattern="xxy"),
            2.0,
        ),
        Case(
            "glob *a*a*a*a*a*a*a*a*a*a*b, 100 a",
            lambda: names.call("glob", "files", [], pattern="*a*a*a*a*a*a*a*a*a*a*b"),
            lambda: names.call("glob", "files", [], pattern="*b"),
            2.0,
        ),
        Case("nested ** x 7 calls, ripgrep", rg_hard, rg_plain, 5.0),
        Case("nested ** x 7 calls, Python", py_hard, py_plain, 5.0),
        Case(
            "grep x, one 16 MiB line",
            lambda: minified.call("grep", "matches", first, pattern="x"),
            lambda: minified.call("grep", "matches", [], pattern="not-in-the-line"),
            10.0,
        ),
    ]


async def timed(call: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter_ns()
    await call()
    return (time.perf_counter_ns() - start) / 1e9


async def measure(scratch: Path, rounds: int) -> list[tuple[Case, list[float], list[float]]]:
    measured: list[tuple[Case, list[float], list[float]]] = [(case, [], []) for case in cases(scratch)]
    for case, _, _ in measured:  # warm-up: page cache, the engines' first start
        await case.hard()
        await case.plain()
    for _ in range(rounds):
        for case, hard, plain in measured:
            hard.append(await timed(case.hard))
            plain.append(await timed(case.plain))
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds; the median is reported")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="steerable-bench-") as scratch:
        measured = asyncio.run(measure(Path(scratch), args.rounds))

    python = sys.version.split()[0]
    print(f"search_worst_cases: {args.rounds} rounds, median wall time (Python {python})")
    print(f"  {'case':<36} {'hard':>10} {'plain':>10} {'ratio':>8}   goal")
    results = []
    for case, hard, plain in measured:
        hard_s, plain_s = statistics.median(hard), statistics.median(plain)
        ok = hard_s <= case.goal_s
        print(
            f"  {case.label:<36} {hard_s * 1e3:7.1f} ms {plain_s * 1e3:7.1f} ms {hard_s / plain_s:7.2f}x"
            f"   <= {case.goal_s:g} s"
        )
        results.append((f"{case.label} within {case.goal_s:g} s ({hard_s * 1e3:.1f} ms)", ok))
    for text, ok in results:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    return 1 if args.check and not all(ok for _, ok in results) else 0


if __name__ == "__main__":
    sys.exit(main())
