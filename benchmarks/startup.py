"""Start-up cost: importing the framework and one ``steerable call``, as fresh processes.

What it measures
    Wall time (``time.perf_counter_ns`` around ``subprocess.run``) of three fresh interpreters,
    same ``sys.executable``, cwd = repository root:

    * ``python -c pass`` (the baseline: interpreter start-up alone);
    * ``python -c "import steerable_agent_runtime"``;
    * ``python -m steerable_sidecar call read_file '{"path": "README.md"}' --no-plugins`` (what
      the ``steerable call`` console script runs; ``-m`` so it works without the script on PATH;
      ``--no-plugins`` because an installed plugin may import anything it likes);
    * ``steerable --version`` and ``steerable doctor --json --no-plugins`` (informational: doctor
      boots the tools and probes every sandbox backend, so it costs a few ``call``\ s).

    One warm-up run each, then rounds interleaved across the three; medians reported. The framework
    import cost is (import - ``python -c pass``). A second check runs one subprocess that imports
    ``steerable_agent_runtime`` and one that runs the CLI's ``main`` for a ``call``, each printing
    which of the heavy dependencies ``mcp``, ``jsonschema``, ``httpx``, ``html_to_markdown`` ended
    up in ``sys.modules`` (``jsonschema`` is meant to load lazily, in ``Tool.from_schema`` only; the
    ``mcp`` SDK only for ``steerable mcp``).

Goals
    * framework import (import - ``python -c pass``) under 150 ms;
    * none of the heavy dependencies is imported by the framework, nor by ``steerable call``.

Run
    python benchmarks/startup.py [--rounds R] [--check]

    Goals are printed as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal
    is missed (then 1). For a breakdown: ``python -X importtime -c "import steerable_agent_runtime"``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
MAX_IMPORT_MS = 150.0
HEAVY = ("mcp", "jsonschema", "httpx", "html_to_markdown")
# --no-plugins: an installed plugin may import anything (the test fixture plugin uses jsonschema)
CALL_ARGS = ["call", "read_file", '{"path": "README.md"}', "--no-plugins"]

COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import steerable_agent_runtime": [sys.executable, "-c", "import steerable_agent_runtime"],
    "steerable call read_file README.md": [sys.executable, "-m", "steerable_sidecar", *CALL_ARGS],
    "steerable --version": [sys.executable, "-m", "steerable_sidecar", "--version"],
    "steerable doctor --json --no-plugins": [
        sys.executable,
        "-m",
        "steerable_sidecar",
        "doctor",
        "--json",
        "--no-plugins",
    ],
}

PROBE_IMPORT = f"""
import json, sys
import steerable_agent_runtime
print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))
"""

PROBE_CALL = f"""
import contextlib, io, json, sys
from steerable_sidecar.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main({CALL_ARGS!r})
print(json.dumps({{"exit": code, **{{m: m in sys.modules for m in {HEAVY!r}}}}}))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("PYTHONPROFILEIMPORTTIME", "PYTHONDEVMODE", "PYTHONTRACEMALLOC", "PYTHONASYNCIODEBUG"):
        env.pop(var, None)
    return env


def run_once(argv: list[str], env: dict[str, str]) -> int:
    start = time.perf_counter_ns()
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter_ns() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv!r} exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    return elapsed


def probe(code: str, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"probe failed ({done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds; the median is reported")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    env = _env()

    for command in COMMANDS.values():  # warm-up: bytecode caches, page cache
        run_once(command, env)
    samples: dict[str, list[int]] = {label: [] for label in COMMANDS}
    for _ in range(args.rounds):
        for label, command in COMMANDS.items():
            samples[label].append(run_once(command, env))
    med = {label: statistics.median(values) / 1e6 for label, values in samples.items()}
    base = med["python -c pass"]
    framework = med["import steerable_agent_runtime"] - base
    call_cost = med["steerable call read_file README.md"] - base

    python = sys.version.split()[0]
    print(f"startup: fresh subprocesses, {args.rounds} rounds, median wall time (Python {python})")
    for label, ms in med.items():
        low, high = min(samples[label]) / 1e6, max(samples[label]) / 1e6
        ratio = f"{ms / base:5.2f}x python -c pass" if label != "python -c pass" else "baseline"
        print(f"  {label:<36} {ms:8.1f} ms  ({low:.1f}..{high:.1f})  {ratio}")
    print(f"  {'framework import (import - pass)':<36} {framework:8.1f} ms  (goal < {MAX_IMPORT_MS:g} ms)")
    print(f"  {'steerable call (call - pass)':<36} {call_cost:8.1f} ms")

    loaded_import = probe(PROBE_IMPORT, env)
    loaded_call = probe(PROBE_CALL, env)
    heavy_import = [m for m in HEAVY if loaded_import.get(m)]
    heavy_call = [m for m in HEAVY if loaded_call.get(m)]
    print(f"  heavy modules after import steerable_agent_runtime: {heavy_import or 'none'}")
    print(f"  heavy modules after steerable call (exit {loaded_call.get('exit')}): {heavy_call or 'none'}")

    goals = [
        (f"framework import under {MAX_IMPORT_MS:g} ms ({framework:.1f} ms)", framework < MAX_IMPORT_MS),
        (
            f"no heavy dependency imported by the framework ({', '.join(heavy_import) or 'none loaded'})",
            not heavy_import,
        ),
        (
            f"no heavy dependency imported by steerable call ({', '.join(heavy_call) or 'none loaded'})",
            not heavy_call and loaded_call.get("exit") == 0,
        ),
    ]
    for text, ok in goals:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    return 1 if args.check and not all(ok for _, ok in goals) else 0


if __name__ == "__main__":
    sys.exit(main())
