"""Sandbox start-up: a bare ``python -I -S -c pass`` child against the same child under each backend.

What it measures
    Wall time of one short-lived child, ``python -I -S -c pass`` (same ``sys.executable``), started
    in these ways, one warm-up each, then rounds interleaved; medians reported with the ratio to
    the bare child, all in the same run:

    * bare: ``subprocess.run`` of the child (the baseline);
    * bwrap alone: ``bwrap`` with the backend's namespaces and mounts, no launcher, no socket filter
      (what bubblewrap itself costs);
    * launcher alone: the launcher with the resource limits, exec'ing the child (what
      ``python -I -S _launch.py`` costs);
    * launcher + bwrap: bubblewrap through the launcher (how the bwrap backend started before the
      runner learnt to start it directly; ``launcher_argv`` still can);
    * launcher + Landlock: what the Landlock backend spawns (limits, dropped capabilities, the
      Landlock ruleset and the socket filter applied with ``ctypes``, supervision);
    * ``run_sandboxed`` with bwrap / with Landlock: the full async runner as ``bash`` uses it
      (bubblewrap started directly, its init limited from outside; the run's cgroups when root;
      output capture, teardown);
    * ``run_sandboxed``, bwrap, no cgroups: the same with no writable cgroup, as a non-root
      sidecar runs (``RunCgroup.acquire`` patched to find none).

    Then the start-up steps of the bwrap run (``SandboxedProcess.startup_ms``, medians): when the
    process existed in its cgroups, when bubblewrap reported its sandbox, when the limits were set,
    the cgroups checked, and the command let go.

    Then, where the run's cgroups can be made (root): moving a running process into them from
    outside (``RunCgroup.join`` of a ``sleep``: the kernel waits an RCU grace period), against
    entering them from inside (``RunCgroup.inside``: the forking thread writes ``0`` to ``tasks``
    and moves back, as the runner does before it forks bubblewrap), medians in ms.

Goals
    * the bwrap backend's full run (``run_sandboxed``) within 6x the bare child;
    * the Landlock backend's full run within 6x the bare child;
    * the cgroup step of a bwrap run within 5 ms of the limits step (median): bubblewrap was forked
      inside, so its init is only checked, never moved (a move costs an RCU grace period);
    * a move from outside within 1 s (median; one RCU grace period, not more).

    Where the time goes: bubblewrap itself about 4.5 ms; the launcher (Landlock only now) is a
    second interpreter start (about 7.5 ms); the runner (pipes, the private directory, the
    handshake with bubblewrap, teardown) about 2 ms.

Run
    python benchmarks/sandbox_startup.py [--rounds R] [--check]

    PASS/FAIL per goal; ``--check`` exits 1 when one is missed. Needs Linux with bubblewrap and
    Landlock (the benchmark says which is missing).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from unittest import mock

from steerable_agent_runtime.sandbox import (
    BubblewrapBackend,
    LandlockBackend,
    SandboxBackend,
    SandboxPolicy,
    _cgroup,
    child_environment,
    spawn_sandboxed,
)
from steerable_agent_runtime.sandbox._pinning import launcher_argv, launcher_code

CHILD = [sys.executable, "-I", "-S", "-c", "pass"]
MAX_RATIO = 6.0
MAX_CHECK_MS = 5.0
"""The cgroup step after the limits step of a bwrap run: a check, no move (test_bwrap_direct.py)."""
MAX_JOIN_MS = 1000.0
"""Moving a running process into the run's cgroups from outside (tests/sandbox/test_cgroup.py)."""
PAUSE_S = 0.05
"""Before each cgroup move, as between runs (right after another cgroup write, no grace period is due)."""


def timed_run(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter_ns()
    done = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    elapsed = (time.perf_counter_ns() - start) / 1e6
    if done.returncode != 0:
        raise SystemExit(
            f"{argv[:3]!r}... exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}"
        )
    return elapsed


STEPS: dict[str, list[float]] = {}


def timed_runner(backend: SandboxBackend, policy: SandboxPolicy, *, cgroups: bool = True) -> float:
    async def once() -> float:
        start = time.perf_counter_ns()
        proc = await spawn_sandboxed(CHILD, policy, backend=backend, timeout_s=30)
        async with proc:
            result = await proc.finish()
        elapsed = (time.perf_counter_ns() - start) / 1e6
        if result.exit_code != 0:
            raise SystemExit(
                f"run_sandboxed under {backend.info.backend} exited {result.exit_code}: {result.stderr.text}"
            )
        if cgroups and backend.info.backend == "bwrap":
            for step, ms in proc.startup_ms.items():
                STEPS.setdefault(step, []).append(ms)
        return elapsed

    if cgroups:
        return asyncio.run(once())
    with no_cgroups():
        return asyncio.run(once())


def cgroup_moves(rounds: int) -> tuple[list[float], list[float]] | None:
    """Milliseconds per round to move a running ``sleep`` into a run's cgroups from outside, and to
    enter and leave them from inside (this thread); ``None`` where no cgroup can be made."""
    cgroup = _cgroup.RunCgroup.acquire(max_processes=16, memory_bytes=64 << 20)
    if cgroup is None:
        return None
    joins: list[float] = []
    entries: list[float] = []
    try:
        for _ in range(rounds + 1):  # the first round warms up
            child = subprocess.Popen(["sleep", "30"])
            try:
                time.sleep(PAUSE_S)
                start = time.perf_counter_ns()
                cgroup.join(child.pid)
                joins.append((time.perf_counter_ns() - start) / 1e6)
                if cgroup.missing(child.pid):
                    raise SystemExit(f"RunCgroup.join left the process out of {cgroup.missing(child.pid)}")
            finally:
                child.kill()
                child.wait()
            time.sleep(PAUSE_S)
            start = time.perf_counter_ns()
            with cgroup.inside():
                pass
            entries.append((time.perf_counter_ns() - start) / 1e6)
    finally:
        cgroup.release()
    return joins[1:], entries[1:]


def no_cgroups() -> AbstractContextManager[object]:
    """Run as a sidecar without a writable cgroup (a non-root one): ``RunCgroup.acquire`` finds none."""
    return mock.patch.object(_cgroup.RunCgroup, "acquire", lambda **limits: None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25, help="timed rounds; the median is reported")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)

    bwrap, landlock = BubblewrapBackend(), LandlockBackend()
    for backend in (bwrap, landlock):
        reason = backend.unavailable_reason()
        if reason is not None:
            raise SystemExit(f"{backend.info.backend} cannot run here: {reason}")

    with tempfile.TemporaryDirectory(prefix="sbx-bench-") as scratch:
        root = Path(scratch)
        workspace, private_tmp = root / "ws", root / "tmp"
        workspace.mkdir()
        private_tmp.mkdir()
        policy = SandboxPolicy(writable_roots=(workspace,))
        env = child_environment()
        bwrap_plan = bwrap.plan(CHILD, policy, private_tmp=private_tmp)
        landlock_plan = landlock.plan(CHILD, policy, private_tmp=private_tmp)
        options = bwrap.options(policy)
        seccomp = options.index("--seccomp")
        bare_bwrap = [bwrap.executable or "bwrap", *options[:seccomp], *options[seccomp + 2 :], "--", *CHILD]
        limits_only = [
            sys.executable,
            "-I",
            "-S",
            launcher_code(),
            "--cpu",
            "600",
            "--as",
            str(8 << 30),
            "--",
            *CHILD,
        ]

        cases: dict[str, Callable[[], float]] = {
            "bare python -I -S -c pass": lambda: timed_run(CHILD, env, workspace),
            "bwrap alone": lambda: timed_run(bare_bwrap, env, workspace),
            "launcher alone (limits)": lambda: timed_run(limits_only, env, workspace),
            "launcher + bwrap": lambda: timed_run(
                launcher_argv(bwrap_plan, policy), {**env, **bwrap_plan.env}, workspace
            ),
            "launcher + Landlock": lambda: timed_run(
                launcher_argv(landlock_plan, policy), {**env, **landlock_plan.env}, workspace
            ),
            "run_sandboxed, bwrap": lambda: timed_runner(bwrap, policy),
            "run_sandboxed, bwrap, no cgroups": lambda: timed_runner(bwrap, policy, cgroups=False),
            "run_sandboxed, Landlock": lambda: timed_runner(landlock, policy),
        }
        for case in cases.values():  # warm-up: page cache, probes
            case()
        STEPS.clear()
        samples: dict[str, list[float]] = {label: [] for label in cases}
        for _ in range(args.rounds):
            for label, case in cases.items():
                samples[label].append(case())

    moves = cgroup_moves(args.rounds)
    med = {label: statistics.median(values) for label, values in samples.items()}
    base = med["bare python -I -S -c pass"]
    python = sys.version.split()[0]
    print(f"sandbox start-up: {args.rounds} rounds, median wall time (Python {python})")
    for label, ms in med.items():
        low, high = min(samples[label]), max(samples[label])
        ratio = "baseline" if ms == base else f"{ms / base:5.2f}x bare"
        print(f"  {label:<34} {ms:7.1f} ms  ({low:.1f}..{high:.1f})  {ratio}")
    print(f"  {'bwrap over bare':<34} {med['bwrap alone'] - base:7.1f} ms")
    print(f"  {'launcher over bare':<34} {med['launcher alone (limits)'] - base:7.1f} ms")
    landlock_setup = med["launcher + Landlock"] - med["launcher alone (limits)"]
    print(f"  {'Landlock setup over launcher':<34} {landlock_setup:7.1f} ms")
    print(f"  {'runner over bwrap alone':<34} {med['run_sandboxed, bwrap'] - med['bwrap alone']:7.1f} ms")
    steps = ", ".join(f"{step} {statistics.median(values):.1f}" for step, values in STEPS.items())
    print(f"  bwrap start-up steps, ms from the call: {steps}")

    goals = [(label, med[label] / base) for label in ("run_sandboxed, bwrap", "run_sandboxed, Landlock")]
    results = [
        (f"{label} within {MAX_RATIO:g}x bare ({ratio:.2f}x)", ratio <= MAX_RATIO) for label, ratio in goals
    ]
    if "cgroups" in STEPS and len(STEPS["cgroups"]) == len(STEPS["limits"]):
        check = statistics.median(c - lim for c, lim in zip(STEPS["cgroups"], STEPS["limits"], strict=True))
        print(f"  {'cgroup step after the limits step':<34} {check:7.2f} ms  (a check: forked inside)")
        within = f"cgroup step within {MAX_CHECK_MS:g} ms of the limits ({check:.2f} ms)"
        results.append((within, check < MAX_CHECK_MS))
    if moves is None:
        print("  cgroup moves: skipped (no writable cgroup here: non-root, or a read-only cgroupfs)")
    else:
        join, inside = (statistics.median(values) for values in moves)
        print(f"  {'cgroups entered from inside':<34} {inside:7.2f} ms  baseline (0 to tasks, and back)")
        print(f"  {'a process moved in from outside':<34} {join:7.2f} ms  {join / inside:5.1f}x inside")
        results.append((f"a move from outside within {MAX_JOIN_MS:g} ms ({join:.1f} ms)", join < MAX_JOIN_MS))
    for text, ok in results:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    return 1 if args.check and not all(ok for _, ok in results) else 0


if __name__ == "__main__":
    sys.exit(main())
