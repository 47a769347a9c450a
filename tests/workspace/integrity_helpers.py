"""Real steerable processes for the integrity tests and benchmarks (FILE-12, FILE-13).

Nothing here mocks a lock, a rename or a kill: each helper starts ``python -m steerable_sidecar`` (the
``steerable`` command) as a child process and talks to it over its real stdio protocol.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steerable_agent_runtime.workspace._seal import JournalKey, Seal, journal_key

_ids = itertools.count()


def child_env(**overrides: str) -> dict[str, str]:
    """The environment for a steerable child: this one, read-before-write on, plus ``overrides``.

    Its state directory is this process's (tests/conftest.py): a child seals its journal with the
    key kept there, and the tests' own ``Workspace`` recovers what a killed child left.
    """
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_") or k == "STEERABLE_STATE_DIR"
    }
    env.update(overrides)
    return env


def sealed_record(
    root: Path, token: str, records: list[dict[str, Any]], key: JournalKey | None = None
) -> Path:
    """Write ``.steerable/txn/<token>.json`` as steerable does: each line sealed (``workspace._seal``).

    With ``key`` (default: this user's journal key, in this process's state directory), for the
    workspace ``root`` (its real path).
    """
    key = key if key is not None else journal_key()
    assert key is not None
    seal = Seal(key, Path(os.path.realpath(root)), token)
    txn = root / ".steerable" / "txn"
    txn.mkdir(parents=True, exist_ok=True)
    path = txn / f"{token}.json"
    path.write_bytes(b"".join(seal.line(json.dumps(record).encode()) for record in records))
    return path


def committed_patch(root: Path, names: tuple[str, ...]) -> None:
    """Leave an ``apply_patch`` of ``names`` (``old`` to ``new`` lines) committed in its journal, unapplied.

    As a process that died right after committing leaves it: the temp files staged, the record's
    commit line written, no target renamed. Each file is written ``old\\n`` first.
    """
    from steerable_agent_runtime.workspace import Workspace
    from steerable_agent_runtime.workspace._apply import _entries, _Plan, _stage

    for name in names:
        (root / name).write_text("old\n")
    ws = Workspace(root, require_read_before_write=False)
    plan = _Plan()
    for name in names:
        plan.original[root / name] = b"old\n"
        plan.final[root / name] = b"new\n"
    intent = ws.begin_intent("apply_patch")
    temps: dict[Path, str] = {}
    _stage(ws, intent, plan.final, {}, [], temps)
    intent.commit(_entries(ws, plan.final, plan.original, temps))
    intent.abandon()


def steerable_argv(command: str, workspace: Path, *args: str) -> list[str]:
    """``python -m steerable_sidecar COMMAND`` on ``workspace`` (no web tools, no plugins), then ``args``."""
    return [
        sys.executable,
        "-P",
        "-m",
        "steerable_sidecar",
        command,
        "--workspace",
        str(workspace),
        "--no-web-tools",
        "--no-plugins",
        *args,
    ]


def steerable_call(
    workspace: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``steerable call ARGS`` (a tool name and its JSON, maybe flags first) to its end."""
    return subprocess.run(
        steerable_argv("call", workspace, *args),
        capture_output=True,
        text=True,
        env=child_env() if env is None else env,
        timeout=timeout,
    )


class SessionProcess:
    """One ``steerable session`` child on a workspace: send a ToolCall line, read its result line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, workspace: Path, **env: str) -> SessionProcess:
        proc = await asyncio.create_subprocess_exec(
            *steerable_argv("session", workspace),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_env(**env),
            limit=64 * 1024 * 1024,
        )
        return cls(proc)

    async def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Run one tool call; return the ``ToolResult`` wire dict."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        line = json.dumps({"id": f"c{next(_ids)}", "name": name, "arguments": arguments}) + "\n"
        self.proc.stdin.write(line.encode())
        await self.proc.stdin.drain()
        answer = await self.proc.stdout.readline()
        if not answer:
            err = await self.proc.stderr.read() if self.proc.stderr else b""
            raise RuntimeError(f"steerable session exited: {err.decode(errors='replace')[-2000:]}")
        result: dict[str, Any] = json.loads(answer)["result"]
        return result

    async def close(self) -> None:
        if self.proc.returncode is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


def counter_file(size_bytes: int) -> str:
    """A text file of about ``size_bytes`` with two counters, ``A: 0`` and ``B: 0``, in its middle."""
    filler = "".join(f"line {n:06d} of filler text that no edit touches\n" for n in range(size_bytes // 46))
    half = len(filler) // 2
    cut = filler.index("\n", half) + 1
    return filler[:cut] + "A: 0\nB: 0\n" + filler[cut:]


def counter(text: str, name: str) -> int:
    found = re.search(rf"^{name}: (\d+)$", text, re.MULTILINE)
    assert found is not None, f"counter {name} is gone from the file"
    return int(found.group(1))


@dataclass
class EditTally:
    """What one editing process saw."""

    name: str
    successes: int = 0
    conflicts: int = 0
    other: dict[str, int] = field(default_factory=dict)


def counter_line(text: str) -> int:
    """The 1-based line of ``A: ...`` (``B`` is the next one)."""
    return text[: text.index("\nA: ")].count("\n") + 2


async def edit_counter_loop(
    session: SessionProcess,
    path: str,
    name: str,
    line: int,
    seconds: float,
    start: asyncio.Event,
    tally: EditTally | None = None,
    enough: Callable[[], bool] = lambda: False,
) -> EditTally:
    """Read the counters' lines, then bump counter ``name`` with ``edit_file``, for ``seconds``
    (or until ``enough()``)."""
    tally = tally if tally is not None else EditTally(name)
    await start.wait()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not enough():
        read = await session.call("read_file", path=path, offset=line - 1, limit=4)
        assert read["success"], read
        value = counter(read["data"]["content"], name)
        result = await session.call(
            "edit_file",
            path=path,
            edits=[{"oldText": f"\n{name}: {value}\n", "newText": f"\n{name}: {value + 1}\n"}],
        )
        if result["success"]:
            tally.successes += 1
        elif result["data"]["code"] == "conflict":
            tally.conflicts += 1
        else:
            code = result["data"]["code"]
            tally.other[code] = tally.other.get(code, 0) + 1
    return tally


async def two_process_edits(
    workspace: Path, path: str, seconds: float, *, until_each: int | None = None, **env: str
) -> tuple[EditTally, EditTally]:
    """Two ``steerable session`` processes bump counters A and B in one file for ``seconds``.

    With ``until_each``, they stop as soon as each has more successful edits than that (``seconds``
    then only bounds a hung run): a fixed window starves one side on a loaded machine.
    """
    line = counter_line((workspace / path).read_text())
    a, b = EditTally("A"), EditTally("B")

    def enough() -> bool:
        return until_each is not None and min(a.successes, b.successes) > until_each

    first = await SessionProcess.start(workspace, **env)
    second = await SessionProcess.start(workspace, **env)
    try:
        await first.call("list_dir")  # both are up before the clock starts
        await second.call("list_dir")
        start = asyncio.Event()
        tasks = [
            asyncio.create_task(edit_counter_loop(first, path, "A", line, seconds, start, a, enough)),
            asyncio.create_task(edit_counter_loop(second, path, "B", line, seconds, start, b, enough)),
        ]
        start.set()
        await asyncio.gather(*tasks)
        return a, b
    finally:
        await first.close()
        await second.close()


def lost_updates(text: str, a: EditTally, b: EditTally) -> int:
    """How many successful edits are missing from the final text."""
    return (a.successes - counter(text, "A")) + (b.successes - counter(text, "B"))


def patch_over(files: dict[str, str], new: dict[str, str]) -> str:
    """An ``apply_patch`` text that replaces each file's single line ``files[p]`` with ``new[p]``."""
    parts = ["*** Begin Patch"]
    for path, old_line in files.items():
        parts += [f"*** Update File: {path}", "@@", f"-{old_line}", f"+{new[path]}"]
    parts.append("*** End Patch")
    return "\n".join(parts)
