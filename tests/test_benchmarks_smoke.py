"""Issue 33, item 7: every benchmark runs, in a smoke mode, so none can rot unnoticed.

Each script in ``benchmarks/`` runs as a user runs it (``python benchmarks/NAME.py``), with the
smallest sizes and one round: it must exit 0 and print its figures. Goals are not judged here
(``--check`` is not passed): a smoke run measures too little to mean anything, and timing goals
belong to the benchmarks themselves, run on a quiet machine. The two that need what a test run
does not have (``harbor_trials.py``: Docker and Harbor; ``real_model.py``: a model endpoint) are
run with ``--help``, which still imports them whole. Slow (under two minutes in all):
``pytest -m "not slow"`` skips it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
NODE_MODULES = REPO / "tests" / "hosts" / "node_modules"

SMOKE: dict[str, tuple[str, ...]] = {
    "acp_updates.py": ("--rounds", "1", "--model-rounds", "1"),
    "apply_patch_scale.py": ("--rounds", "1", "--files", "20"),
    "dispatch_overhead.py": ("--calls", "200", "--rounds", "1"),
    "edit_miss_nearest.py": ("--rounds", "1"),
    "editor_race.py": ("--seconds", "1"),
    "file_integrity.py": (
        "--rounds",
        "1",
        "--seconds",
        "0.5",
        "--trials",
        "1",
        "--in-flight-rounds",
        "1",
        "--smoke",
    ),  # fmt: skip
    "grep_scale.py": ("--quick",),
    "harbor_trials.py": ("--help",),
    "host_typescript.py": ("--calls", "10", "--size", "200", "--rounds", "1"),
    "list_dir.py": ("--rounds", "1", "--no-peers"),
    "protected_paths.py": ("--rounds", "1"),
    "read_file_10mb.py": ("--rounds", "1"),
    "real_model.py": ("--help",),
    "rpc_roundtrip.py": ("50",),
    "run_code_startup.py": ("--rounds", "1"),
    "sandbox_startup.py": ("--rounds", "1"),
    "search_worst_cases.py": ("--rounds", "1"),
    "sse_long_line.py": ("--rounds", "1"),
    "startup.py": ("--rounds", "1", "--load-rounds", "0", "--no-peers"),
    "tool_prompt.py": (),
    "tool_search_quality.py": (),
    "tool_search_speed.py": ("--sizes", "1000", "--rounds", "1"),
    "web_fetch.py": ("--rounds", "1"),
    "write_diff_bound.py": ("--lines", "2000", "--rounds", "1", "--no-before"),
}
"""Each benchmark and the arguments of its smoke run."""


def test_every_benchmark_has_a_smoke_run() -> None:
    scripts = {path.name for path in BENCHMARKS.glob("*.py") if not path.name.startswith("_")}
    assert scripts == set(SMOKE)


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_benchmark_runs(script: str) -> None:
    arguments = SMOKE[script]
    if script == "host_typescript.py" and not (NODE_MODULES.is_dir() and shutil.which("node")):
        pytest.skip("tests/hosts/node_modules is missing (npm ci --prefix tests/hosts)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *arguments],
        cwd=REPO,
        env={**env, "STEERABLE_CONFIG": "off"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (
        f"{script} {' '.join(arguments)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    assert done.stdout.strip(), f"{script} printed nothing"
