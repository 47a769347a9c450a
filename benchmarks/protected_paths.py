"""What guarding the protected paths (FILE-15) costs each ``bash`` call, on big trees.

What it measures
    On three workspaces, each a git repository: a copy of this Python's standard library (hard
    links, with its ``site-packages``), a synthetic wide monorepo (40 packages of 50 modules, each
    with 10 files and 3 subdirectories of 10 files: about 2 000 directories within three levels,
    88 000 entries, a nested repository and a nested ``.vscode``), and a small project (a few files):

    * ``find_protected`` at depths 2 and 3: the first scan (nothing kept) and the next ones
      (directory listings kept while their ``ctime`` holds: one ``stat`` per directory);
    * ``ProtectedAudit.take`` and ``revert`` with nothing changed (what every call pays on top of
      the scans: the snapshot of what is not bound read-only; under Landlock ``.git``'s config
      and hooks);
    * a ``bash`` call of ``true`` under bubblewrap and under Landlock, guarded against
      ``allow_protected_writes=True`` (no binds, no audit), interleaved, 0.2 s apart (as calls
      come): the whole overhead per call.

    Medians of ``--rounds`` rounds after one warm-up.

Run
    python benchmarks/protected_paths.py [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from steerable_agent_runtime.sandbox import bash_tool
from steerable_agent_runtime.sandbox._audit import ProtectedAudit
from steerable_agent_runtime.sandbox._protect import ScanCache, find_protected


def _git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def _stdlib(base: Path) -> Path:
    root = base / "stdlib"
    source = sysconfig.get_paths()["stdlib"]
    if subprocess.run(["cp", "-al", source, str(root)], check=False).returncode != 0:
        subprocess.run(["cp", "-a", source, str(root)], check=True)
    _git_init(root)
    return root


def _monorepo(base: Path) -> Path:
    root = base / "mono"
    for a in range(40):
        for b in range(50):
            module = root / f"pkg{a}" / f"mod{b}"
            for c in range(3):
                (module / f"sub{c}").mkdir(parents=True)
                for f in range(10):
                    os.mknod(module / f"sub{c}" / f"g{f}.py")
            for f in range(10):
                os.mknod(module / f"f{f}.py")
    _git_init(root)
    _git_init(root / "pkg3" / "mod7")
    (root / "pkg5" / ".vscode").mkdir()
    (root / "pkg5" / ".vscode" / "settings.json").write_text("{}\n")
    return root


def _small(base: Path) -> Path:
    root = base / "small"
    (root / "src").mkdir(parents=True)
    for i in range(20):
        (root / "src" / f"m{i}.py").write_text("pass\n")
    _git_init(root)
    return root


def _median_ms(fn: Callable[[], object], rounds: int) -> float:
    fn()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _cold_ms(root: str, depth: int, cache: ScanCache) -> float:
    started = time.perf_counter()
    find_protected(root, depth=depth, cache=cache)
    return (time.perf_counter() - started) * 1000


def _bash_ms(root: Path, backend: str, rounds: int) -> tuple[float, float]:
    """Median ms of ``true`` guarded and with the opt-out, rounds interleaved."""
    environ = {"STEERABLE_SANDBOX": backend, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    tools = [bash_tool(root, environ=environ, allow_protected_writes=allow) for allow in (False, True)]

    async def calls() -> tuple[float, float]:
        times: list[list[float]] = [[], []]
        for i in range(rounds + 1):
            for tool, kept in zip(tools, times, strict=True):
                await asyncio.sleep(0.2)  # calls come seconds apart: let the last run's cleanup finish
                started = time.perf_counter()
                await tool.handler(command="true")
                if i:
                    kept.append(time.perf_counter() - started)
        return statistics.median(times[0]) * 1000, statistics.median(times[1]) * 1000

    return asyncio.run(calls())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="steerable-protected-") as tmp:
        base = Path(tmp)
        trees = {"stdlib copy": _stdlib(base), "wide monorepo": _monorepo(base)}
        trees["small project"] = _small(base)
        time.sleep(0.1)  # listings of directories changed in the last 50 ms are not kept
        print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, {args.rounds} rounds, medians")
        for name, path in trees.items():
            root = os.path.realpath(path)
            dirs = sum(1 for _ in Path(root).glob("*/*/")) + sum(1 for _ in Path(root).glob("*/")) + 1
            found = [f.rel for f in find_protected(root)]
            print(f"\n{name}: {dirs} directories within 2 levels, found {found}")
            for depth in (2, 3):
                cache = ScanCache()
                cold = _cold_ms(root, depth, cache)
                warm = _median_ms(
                    functools.partial(find_protected, root, depth=depth, cache=cache), args.rounds
                )
                print(f"  find_protected depth {depth}: first {cold:7.2f} ms, then {warm:6.2f} ms")
            for carve in (True, False):
                cache = ScanCache()
                audit = ProtectedAudit.take(root, carve=carve, cache=cache)
                take = _median_ms(
                    functools.partial(ProtectedAudit.take, root, carve=carve, cache=cache), args.rounds
                )
                revert = _median_ms(audit.revert, args.rounds)
                label = "bwrap (bound entries skipped)" if carve else "landlock (all snapshotted)"
                print(f"  take + revert, {label}: {take:6.2f} + {revert:6.2f} ms")
            for backend in ("bwrap", "landlock"):
                guarded, open_ = _bash_ms(path, backend, args.rounds)
                print(
                    f"  bash 'true' under {backend}: {guarded:6.1f} ms guarded, {open_:6.1f} ms with the "
                    f"opt-out (+{guarded - open_:.1f} ms)"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
