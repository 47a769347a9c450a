"""``apply_patch`` does work linear in its hunks (SAFE-8), counted, not timed.

The time goal lives in ``benchmarks/apply_patch_scale.py``. Here the work is counted: every Python
line the workspace package and ``difflib`` execute while the real tool applies a patch, in every
thread (the tool parses, matches and diffs in worker threads). The count is deterministic, so
four times the hunks (in a file four times as long) must cost about four times the lines, where
the diff that compared every line against every change cost sixteen times.
"""

from __future__ import annotations

import asyncio
import difflib
import random
import sys
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import steerable_agent_runtime.workspace as workspace_package
from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd
from steerable_agent_runtime.workspace._diff import unified_diff
from steerable_agent_runtime.workspace._patch import Chunk, UpdateFile, apply_chunks_detailed, parse_patch

LINES_PER_HUNK = 10
WATCHED = (str(Path(workspace_package.__file__).parent), difflib.__file__)


def one_line_hunks(hunks: int) -> tuple[str, str]:
    """A file of ``10 * hunks`` distinct lines and a patch changing every tenth one, with context."""
    lines = [f"    value_{i} = compute({i % 97}, {i * 7 % 1000})" for i in range(LINES_PER_HUNK * hunks)]
    body = ["*** Begin Patch", "*** Update File: big.py"]
    for k in range(hunks):
        j = k * LINES_PER_HUNK + 5
        body += ["@@", f" {lines[j - 1]}", f"-{lines[j]}", f"+{lines[j]}  # changed", f" {lines[j + 1]}"]
    body.append("*** End Patch")
    return "\n".join(lines) + "\n", "\n".join(body)


def counted_patch(root: Path, hunks: int) -> int:
    """Apply a ``hunks``-hunk patch through the real tool; return the lines executed in the watched files."""
    text, patch = one_line_hunks(hunks)
    (root / "big.py").write_text(text)
    router = workspace_tools_for_cwd(root, require_read_before_write=False)
    counts: Counter[int] = Counter()  # per thread: no two threads add to one number

    def local(frame: FrameType, event: str, _arg: Any) -> Any:
        if event == "line":
            counts[threading.get_ident()] += 1
        return local

    def tracer(frame: FrameType, _event: str, _arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(WATCHED) else None

    async def apply() -> Any:
        return await router.dispatch(ToolCall(id="p", name="apply_patch", arguments={"patch": patch}))

    previous, previous_threads = sys.gettrace(), threading.gettrace()  # coverage's, under pytest --cov
    threading.settrace(tracer)  # the worker threads of the fresh loop below start traced
    sys.settrace(tracer)
    try:
        result = asyncio.run(apply())
    finally:
        sys.settrace(previous)
        threading.settrace(previous_threads)
    assert result.success, result.error
    # the diff of 50 or 200 hunks is past what a result shows (issue 31): counted, not shown
    assert (result.data["linesAdded"], result.data["linesRemoved"]) == (hunks, hunks)
    return sum(counts.values())


def test_four_times_the_hunks_cost_about_four_times_the_work_safe_8(tmp_path: Path) -> None:
    # SAFE-8: 50 and then 200 one-line hunks, the file growing with them (500 and 2,000 lines)
    warm, small, large = tmp_path / "warm", tmp_path / "small", tmp_path / "large"
    for folder in (warm, small, large):
        folder.mkdir()
    counted_patch(warm, 1)  # modules the first patch imports run their bodies once: not counted
    ratio = counted_patch(large, 200) / counted_patch(small, 50)
    assert ratio < 5.0, f"4x the hunks executed {ratio:.1f}x the lines: the patch is not linear in its hunks"


def test_the_diff_of_known_changes_equals_difflibs_on_distinct_lines() -> None:
    # SAFE-8 keeps the diff: with distinct lines both ways give the same text
    text, patch = one_line_hunks(30)
    (update,) = parse_patch(patch)
    assert isinstance(update, UpdateFile)
    outcome = apply_chunks_detailed(text, update.chunks, path="big.py")
    assert unified_diff(text, outcome.text, "big.py", changes=outcome.changes) == unified_diff(
        text, outcome.text, "big.py"
    )


def random_update(seed: int) -> tuple[str, list[Chunk]]:
    """Distinct lines, with or without a last newline; hunks that replace, delete, insert, touch."""
    rnd = random.Random(seed)
    lines = [f"line {i}" for i in range(rnd.randint(1, 40))]
    text = "\n".join(lines) + ("\n" if rnd.random() < 0.6 else "")
    chunks, at = [], 0
    while at < len(lines) and rnd.random() < 0.8:
        start = rnd.randint(at, len(lines) - 1)
        old = lines[start : start + rnd.randint(0, 3)]
        new = [line for line in old if rnd.random() < 0.6] + [
            f"new {seed}.{k}" for k in range(rnd.randint(0, 2))
        ]
        chunks.append(Chunk(None, tuple(old), tuple(new), is_end_of_file=False))
        at = start + len(old)  # the next hunk may start right where this one ended
    if not chunks or rnd.random() < 0.3:
        chunks.append(Chunk(None, (), (f"tail {seed}",), is_end_of_file=True))
    return text, chunks


def test_known_changes_cover_every_changed_line_safe_8() -> None:
    # SAFE-8: touching hunks, insertions, deletions, a last line without its newline: same diff
    for seed in range(400):
        text, chunks = random_update(seed)
        outcome = apply_chunks_detailed(text, chunks, path="f.txt")
        expected = unified_diff(text, outcome.text, "f.txt")
        assert unified_diff(text, outcome.text, "f.txt", changes=outcome.changes) == expected, seed
