"""The editor race (issue 28): the saves an outside editor loses to steerable's writes, and the window.

What it measures
    Three editor processes each save a document (``dN/docN.txt``, 4 KiB, every save the same size),
    in one of two styles: **in place** (open with ``O_TRUNC``, write, close: a shell redirection,
    some IDEs) or **by rename** (write a temp file beside it, then rename it over: vim, VS Code,
    most editors). Each save is aimed at a steerable write under way: a random 0 to ``--aim-ms``
    (10) ms after a steerable temp file in its folder is complete (inotify); ``--pace random`` saves
    a random 0 to ``--pause-ms`` apart instead. Meanwhile a ``Workspace`` in this process reads each
    document and writes it back whole with ``write_file`` through the read-before-write gate, as a
    model does, again and again. Three loads: the three documents' calls alone; **32 more** calls in
    flight (``write_file`` and ``edit_file`` on 32 other 16 KB files: the worker threads contend for
    the GIL); and those plus a **busy thread** doing pure-Python work (a sidecar's JSON, a plugin).

    Each row runs twice, alternating: **plain**, the last look at the file being the guard's
    ``os.stat`` or read and the rename ``os.replace``, as before issue 28 (``_rename`` turned off),
    and **held**, the last look a ``statx`` that keeps the GIL and ``renameat`` at once. With the
    code before issue 28 on ``PYTHONPATH`` only the plain rows run.

    Lost saves. Every rename steerable makes onto a document is made with
    ``renameat2(RENAME_EXCHANGE)`` in place of ``rename(2)`` (a benchmark-only patch: the same atomic
    replacement at the path, but the file replaced stays reachable and is moved aside). After the run
    each file set aside holds exactly what that rename replaced, an in-place save still being written
    into it included. A save is **lost** when a write replaced it after reading another whole version
    (the window), **torn** when the write had read it half-written (in place: truncated, its bytes
    not yet written; the save then finished in the file replaced). Saves the guard saw (``conflict``)
    and saves the editor itself saved over are neither.

    The window: for every rename steerable makes (documents, other files), the time from the start
    of the last look at the file to the start of the rename, p50 / p99 / max, timed by wrapping those
    calls (``time.perf_counter_ns``, which keeps the GIL; production code has no hooks). A save that
    lands in it is lost, and so is one landing while the rename itself waits (for the filesystem's
    journal): the editor's own steps show what that costs here (in place, from the truncation to the
    end of the write; by rename, the ``rename(2)`` alone).

    Goals: under load (the two loaded rows), the held window's p99 is under 100 us, and held loses at
    most half as many saves as plain.

Run
    python benchmarks/editor_race.py [--seconds S] [--aim-ms A | --pace random] [--check]
    PYTHONPATH=/tmp/before/src python benchmarks/editor_race.py   # the code before, plain rows only

    (``/tmp/before`` from ``git archive <commit> src | tar -x -C /tmp/before``.) Goals are printed as
    PASS/FAIL lines; ``--check`` makes a missed goal exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import dataclasses
import itertools
import json
import os
import re
import sys
import tempfile
import threading
import time
import types
from collections import Counter
from pathlib import Path
from typing import Any

from read_file_10mb import source_like_text
from steerable_agent_runtime.errors import WriteConflictError
from steerable_agent_runtime.workspace import Edit, Workspace, _disk

try:
    from steerable_agent_runtime.workspace import _rename
except ImportError:  # the code before issue 28: os.stat or a read, then os.replace
    _rename = None  # type: ignore[assignment]

DOCS = 3
SIZE = 4096
LOAD_FILES = 32
MAX_P99_US = 100
MAX_LOST_RATIO = 0.5
TAG = re.compile(r"(editor|steerable|initial) (\d+)\n")
DOC = re.compile(r"doc\d+\.txt")

EDITOR = r"""
import ctypes, json, os, random, re, select, sys, time
path, style, seconds, size, pause, aim = sys.argv[1:7]
seconds, size, pause, aim = float(seconds), int(size), float(pause), float(aim)
folder = os.path.dirname(path)
temp = os.path.join(folder, ".editor-save.tmp")
rng, saves, took = random.Random(7), 0, []
watch = -1
if aim > 0:  # aimed: a random 0..aim s after a steerable temp file is complete (inotify)
    libc = ctypes.CDLL(None, use_errno=True)
    watch = libc.inotify_init1(os.O_CLOEXEC | os.O_NONBLOCK)
    if watch < 0 or libc.inotify_add_watch(watch, folder.encode(), 0x8) < 0:  # 0x8: IN_CLOSE_WRITE
        sys.exit("no inotify here: use --pace random")
steerable_temp = re.compile(rb"\.steerable-[0-9a-f]{16}\.tmp")


def drained():
    found = False
    while True:
        try:
            events = os.read(watch, 65536)
        except BlockingIOError:
            return found
        while events:
            length = int.from_bytes(events[12:16], sys.byteorder)
            found = found or steerable_temp.match(events[16 : 16 + length]) is not None
            events = events[16 + length :]


print("ready", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    if watch >= 0:
        drained()  # a write under way from now on
        ready, _, _ = select.select([watch], [], [], 0.1)
        if not ready or not drained():
            continue
        time.sleep(rng.uniform(0, aim))
    else:
        time.sleep(rng.uniform(0, pause))
    saves += 1
    data = f"editor {saves}\n".encode().ljust(size - 1, b".") + b"\n"
    if style == "in place":
        started = time.perf_counter_ns()
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, data)
        took.append(time.perf_counter_ns() - started)
        os.close(fd)
    else:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.close(fd)
        started = time.perf_counter_ns()
        os.rename(temp, path)
        took.append(time.perf_counter_ns() - started)
print(json.dumps({"saves": saves, "took": took}), flush=True)
"""


def content(tag: str) -> str:
    return f"{tag}\n".ljust(SIZE - 1, ".") + "\n"


def tag_of(text: str) -> str:
    """``editor 12`` / ``steerable 3`` / ``initial 0`` for a whole save, ``?`` for a torn one."""
    match = TAG.match(text)
    return f"{match[1]} {match[2]}" if match and len(text) == SIZE and text.endswith(".\n") else "?"


def quantiles(values: list[int]) -> tuple[float, float, float]:
    """p50, p99, max in microseconds."""
    ordered = sorted(values)
    return (
        ordered[len(ordered) // 2] / 1e3,
        ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] / 1e3,
        ordered[-1] / 1e3,
    )


def _us(values: list[int]) -> str:
    return "/".join(f"{v:.0f}" for v in quantiles(values)) if values else "-"


class Probe:
    """The benchmark-only instrumentation: the windows, and each replaced document kept aside."""

    def __init__(self) -> None:
        self.looked = threading.local()
        self.windows: dict[str, list[int]] = {"docs": [], "other": []}
        self.replaced: list[tuple[str, str]] = []  # (name set aside, the tag its write was based on)
        self.current: dict[str, str] = {}  # document -> the base of its write in flight (one at a time)
        self.kept = itertools.count()
        self.grave_fd = -1
        self.held: Any = None  # _rename's calls, when this code has them
        self.renameat2 = ctypes.CDLL(None, use_errno=True).renameat2  # gives the GIL up, as os.replace
        self.renameat2.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        ]
        self.renameat2.restype = ctypes.c_int
        self.install()

    def reset(self, grave: Path, held: bool) -> None:
        """A new run: empty figures, replaced files kept in ``grave``, the held look on or off."""
        self.windows = {"docs": [], "other": []}
        self.replaced, self.current, self.kept = [], {}, itertools.count()
        self.grave_fd = os.open(grave, os.O_RDONLY | os.O_DIRECTORY)
        if _rename is not None:
            calls = self.held if held else None
            _rename._calls = lambda: calls  # type: ignore[method-assign]

    def look(self) -> None:
        self.looked.t = time.perf_counter_ns()

    def renaming(self, name: str) -> bool:
        """Record the window of this rename; whether it is a document's, to be kept aside."""
        now = time.perf_counter_ns()
        doc = DOC.fullmatch(name) is not None
        self.windows["docs" if doc else "other"].append(now - getattr(self.looked, "t", now))
        return doc and name in self.current

    def exchange(self, dir_fd: int, temp: str, name: str) -> None:
        """RENAME_EXCHANGE ``temp`` and ``name``, then move the file replaced aside with its write's base."""
        if self.renameat2(dir_fd, os.fsencode(temp), dir_fd, os.fsencode(name), 2) != 0:  # EXCHANGE
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        kept = f"{name}.{next(self.kept)}"  # threads renaming other documents do this at the same time
        os.rename(temp, kept, src_dir_fd=dir_fd, dst_dir_fd=self.grave_fd)
        self.replaced.append((kept, self.current[name]))

    def install(self) -> None:
        """Wrap the looks and renames of ``_disk`` (and ``_rename``); ``reset`` picks plain or held."""
        probe = self

        class Timed:
            def __init__(self, handle: Any) -> None:
                self.handle = handle

            def read(self, *args: Any) -> Any:
                probe.look()
                return self.handle.read(*args)

            def __enter__(self) -> Timed:
                return self

            def __exit__(self, *exc: object) -> None:
                self.handle.close()

            def __getattr__(self, name: str) -> Any:
                return getattr(self.handle, name)

        class Os(types.ModuleType):
            def __getattr__(self, name: str) -> Any:
                return getattr(os, name)

        def stat(*args: Any, **kwargs: Any) -> Any:
            probe.look()
            return os.stat(*args, **kwargs)

        def open_(*args: Any, **kwargs: Any) -> Any:
            probe.look()
            return os.open(*args, **kwargs)

        def fdopen(*args: Any, **kwargs: Any) -> Any:
            return Timed(os.fdopen(*args, **kwargs))

        def replace(src: str, dst: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
            if probe.renaming(dst):
                probe.exchange(src_dir_fd, src, dst)
            else:
                os.replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

        proxy = Os("os")
        proxy.stat, proxy.open, proxy.fdopen, proxy.replace = stat, open_, fdopen, replace  # type: ignore[attr-defined]
        _disk.os = proxy  # type: ignore[attr-defined]
        if _rename is None:
            return
        _rename.os = proxy  # type: ignore[attr-defined]  # its plain fallback
        real = _rename._calls()
        if real is None:
            return

        def statx(*args: Any) -> Any:
            probe.look()
            return real.statx(*args)

        def renameat(dir_fd: int, old: bytes, new_dir_fd: int, new: bytes) -> int:
            if not probe.renaming(new.decode()):
                return int(real.renameat(dir_fd, old, new_dir_fd, new))
            try:  # renameat2 gives the GIL up as it starts, as renameat does
                probe.exchange(dir_fd, old.decode(), new.decode())
            except OSError as exc:
                ctypes.set_errno(exc.errno or 1)
                return -1
            return 0

        self.held = dataclasses.replace(real, statx=statx, renameat=renameat)


PROBE = Probe()


async def _doc_writer(ws: Workspace, doc: str, stop: asyncio.Event, stats: Counter[str]) -> None:
    """Read the document, write it back whole (as a model does), again and again."""
    name = doc.rsplit("/", 1)[1]
    written = 0
    while not stop.is_set():
        seen = await ws.read_file(doc)
        PROBE.current[name] = tag_of(seen["content"])
        try:
            await ws.write_file(doc, content(f"steerable {written + 1}"))
            written += 1
            stats["written"] += 1
        except WriteConflictError:
            stats["refused"] += 1
        finally:
            del PROBE.current[name]


async def _load_writer(ws: Workspace, index: int, stop: asyncio.Event) -> None:
    name = f"load/f{index:02d}.txt"
    body = source_like_text(16_000, seed=index).decode()
    await ws.read_file(name)
    rounds = 0
    while not stop.is_set():
        rounds += 1
        if rounds % 2:
            await ws.write_file(name, body + f"# round {rounds}\n")
        else:
            await ws.edit_file(name, [Edit(f"# round {rounds - 1}\n", f"# round {rounds}\n")])


def _busy(stop: threading.Event) -> None:
    payload = {"items": list(range(300)), "text": "x" * 300}
    while not stop.is_set():
        json.loads(json.dumps(payload))


@dataclasses.dataclass
class Row:
    """One run's figures, added up over the runs of its row."""

    saves: int = 0
    lost: int = 0
    torn: int = 0
    written: int = 0
    refused: int = 0
    anomalies: list[str] = dataclasses.field(default_factory=list)
    docs: list[int] = dataclasses.field(default_factory=list)
    other: list[int] = dataclasses.field(default_factory=list)
    steps: list[int] = dataclasses.field(default_factory=list)  # the editor's truncate+write, or rename

    def add(self, run: Row) -> None:
        for item in dataclasses.fields(self):
            setattr(self, item.name, getattr(self, item.name) + getattr(run, item.name))


async def _editor(root: Path, doc: str, style: str, args: argparse.Namespace) -> asyncio.subprocess.Process:
    aim = args.aim_ms / 1e3 if args.pace == "aimed" else 0.0
    argv = [str(root / doc), style, str(args.seconds), str(SIZE), str(args.pause_ms / 1e3), str(aim)]
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", EDITOR, *argv, stdout=asyncio.subprocess.PIPE
    )


async def one_run(style: str, load: int, busy: bool, held: bool, args: argparse.Namespace) -> Row:
    with tempfile.TemporaryDirectory() as tmp:
        root, grave = Path(tmp) / "ws", Path(tmp) / "grave"
        docs = [f"d{index}/doc{index}.txt" for index in range(DOCS)]
        (root / "load").mkdir(parents=True)
        grave.mkdir()
        for doc in docs:
            (root / doc).parent.mkdir()
            (root / doc).write_text(content("initial 0"))
        for index in range(load):
            (root / f"load/f{index:02d}.txt").write_text(source_like_text(16_000, seed=index).decode())
        PROBE.reset(grave, held)
        ws = Workspace(root)
        stats: Counter[str] = Counter()
        stop, halt = asyncio.Event(), threading.Event()
        tasks = [asyncio.ensure_future(_doc_writer(ws, doc, stop, stats)) for doc in docs]
        tasks += [asyncio.ensure_future(_load_writer(ws, i, stop)) for i in range(load)]
        burner = threading.Thread(target=_busy, args=(halt,), daemon=True)
        if busy:
            burner.start()
        editors = [await _editor(root, doc, style, args) for doc in docs]
        for editor in editors:
            assert editor.stdout is not None
            await editor.stdout.readline()  # ready
        reports = []
        for editor in editors:
            assert editor.stdout is not None
            line = await editor.stdout.readline()
            if await editor.wait() != 0 or not line:
                raise SystemExit(f"an editor process failed (exit {editor.returncode})")
            reports.append(json.loads(line))
        stop.set()
        halt.set()
        await asyncio.gather(*tasks)
        if busy:
            burner.join()
        row = Row(written=stats["written"], refused=stats["refused"])
        for kept, base in PROBE.replaced:
            before = tag_of((grave / kept).read_text(errors="replace"))
            if before == base:
                continue  # the write had read what it replaced
            if not before.startswith("editor"):
                row.anomalies.append(f"{before} replaced by a write based on {base}")  # must not happen
            elif base == "?":
                row.torn += 1
            else:
                row.lost += 1
        os.close(PROBE.grave_fd)
        row.saves = sum(report["saves"] for report in reports)
        row.steps = [ns for report in reports for ns in report["took"]]
        row.docs, row.other = PROBE.windows["docs"], PROBE.windows["other"]
        return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per run (default 10)")
    parser.add_argument("--runs", type=int, default=1, help="runs per row and mode (default 1)")
    parser.add_argument("--pace", choices=["aimed", "random"], default="aimed")
    parser.add_argument(
        "--aim-ms", type=float, default=10.0, help="aimed: a random 0..A ms after a temp file"
    )
    parser.add_argument("--pause-ms", type=float, default=20.0, help="random: a random 0..P ms apart")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    modes = ["plain"] if PROBE.held is None else ["plain", "held"]
    loads = [("3 documents", 0, False), (f"+{LOAD_FILES} in flight", LOAD_FILES, False)]
    loads.append((f"+{LOAD_FILES} + busy thread", LOAD_FILES, True))
    pace = (
        f"each a random 0-{args.aim_ms:g} ms after a steerable temp file beside it is complete"
        if args.pace == "aimed"
        else f"a random 0-{args.pause_ms:g} ms apart"
    )
    print(f"{DOCS} editor processes save a {SIZE} B document each, {pace}")
    print(
        f"{args.runs} x {args.seconds:g} s per row and mode; switch interval "
        f"{sys.getswitchinterval() * 1e3:g} ms; {os.cpu_count()} cores"
    )
    if PROBE.held is None:
        print("the last look and the rename: os.stat or a read, then os.replace (no _rename here)")
    rows: dict[tuple[str, str, str], Row] = {}
    for style in ("in place", "by rename"):
        for label, load, busy in loads:
            for _ in range(args.runs):
                for mode in modes:
                    run = asyncio.run(one_run(style, load, busy, mode == "held", args))
                    rows.setdefault((style, label, mode), Row()).add(run)
    print(
        f"{'style':<9} {'load':<19} {'mode':<5} {'saves':>6} {'lost':>5} {'torn':>5} {'writes':>6} "
        f"{'refused':>7}  {'window us, documents':>20}  {'other files':>14}  {'editor step us':>15}"
    )
    loaded: dict[str, list[int]] = {mode: [0, 0] for mode in modes}  # saves, lost
    loaded_p99: dict[str, float] = {mode: 0.0 for mode in modes}
    anomalies = []
    for (style, label, mode), row in rows.items():
        print(
            f"{style:<9} {label:<19} {mode:<5} {row.saves:6d} {row.lost:5d} {row.torn:5d} {row.written:6d} "
            f"{row.refused:7d}  {_us(row.docs):>20}  {_us(row.other):>14}  {_us(row.steps):>15}"
        )
        anomalies += [f"{style}, {label}, {mode}: {what}" for what in row.anomalies]
        if label != "3 documents":
            loaded[mode][0] += row.saves
            loaded[mode][1] += row.lost
            if row.docs + row.other:
                loaded_p99[mode] = max(loaded_p99[mode], quantiles(row.docs + row.other)[1])
    print(
        "lost: saves a write replaced after reading another whole version (the window); torn: saves a\n"
        "write replaced after reading them half-written (in place, truncated, then written into the\n"
        "file replaced). window: p50/p99/max from the start of the last look at a file to the start\n"
        "of its rename. editor step: in place, truncation to end of write; by rename, the rename(2)."
    )
    for what in anomalies[:5]:
        print(f"  {what}")
    for mode in modes:
        saves, lost = loaded[mode]
        per_1000 = 1000 * lost / max(saves, 1)
        print(
            f"under load, {mode}: {lost} of {saves} saves lost ({per_1000:.1f} per 1,000), "
            f"window p99 {loaded_p99[mode]:.0f} us"
        )
    goals = [("no steerable version replaced by a write that had not read it", not anomalies)]
    if "held" in modes:
        rate = {mode: loaded[mode][1] / max(loaded[mode][0], 1) for mode in modes}
        goals += [
            (f"under load: held window p99 < {MAX_P99_US} us", loaded_p99["held"] < MAX_P99_US),
            (
                f"under load: held loses at most {MAX_LOST_RATIO:g}x the saves plain loses",
                rate["held"] <= MAX_LOST_RATIO * rate["plain"],
            ),
        ]
    for label, ok in goals:
        print(f"{'PASS' if ok else 'FAIL'}: {label}")
    return 1 if args.check and not all(ok for _, ok in goals) else 0


if __name__ == "__main__":
    sys.exit(main())
