"""Start-up cost: importing the framework, one ``steerable call``, the ``mcp`` and ``acp`` handshakes.

What it measures
    Wall time (``time.perf_counter_ns``) of fresh processes, same ``sys.executable``, cwd =
    repository root; one warm-up run each, then rounds interleaved; medians reported.

    * ``python -c pass`` (the baseline: interpreter start-up alone);
    * ``python -c "import steerable_agent_runtime"`` (the package; its names load on first use)
      and ``from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter`` (what a host
      that embeds the framework imports first; informational), beside ``import asyncio,
      pydantic`` (the floor of any call: the wire types are pydantic models and the tools async);
    * ``python -m steerable_sidecar call read_file '{"path": "README.md"}' --no-plugins`` (what
      the ``steerable call`` console script runs; ``--no-plugins`` because an installed plugin may
      import anything it likes);
    * ``steerable --version`` and ``steerable doctor --json --no-plugins`` (informational: doctor
      boots the tools and probes every sandbox backend);
    * MCP servers over stdio, the way a host starts them: spawn, write ``initialize`` at once, and
      time the answer; then ``notifications/initialized`` and ``tools/list``, timed from the spawn
      too. ``steerable mcp --workspace TMP --no-plugins`` against the reference Node servers
      ``@modelcontextprotocol/server-filesystem`` and ``server-memory`` (``benchmarks/peers``,
      installed with ``npm ci`` on first run), and a minimal server on the ``mcp`` SDK (for scale:
      why ``steerable mcp`` does not serve on it).
    * ACP agents over stdio, the way an editor starts them: spawn, write ``initialize`` at once,
      time the answer; then ``session/new`` (``cwd`` = TMP, no MCP servers), timed from the spawn
      too (by then the ACP SDK is loaded and the workspace tools booted).
      ``steerable acp --no-plugins --state-dir TMP`` (``STEERABLE_PROVIDER=scripted``, a
      ``STEERABLE_SCRIPT`` file; it answers ``initialize`` itself while the SDK loads in a worker
      thread), beside a minimal agent on the ACP SDK alone (``acp.run_agent``, answering
      ``initialize`` and ``session/new``; for scale: what serving on the SDK from the start costs).

    A second check runs one subprocess that imports ``steerable_agent_runtime`` and one that runs
    the CLI's ``main`` for a ``call``, each printing which of the heavy dependencies ``mcp``,
    ``jsonschema``, ``httpx``, ``html_to_markdown`` ended up in ``sys.modules``.

Goals (issue 15)
    * ``steerable mcp`` answers ``initialize`` no slower than ``server-filesystem`` (<= 1.0x);
    * ``steerable acp`` answers ``initialize`` no slower than ``server-filesystem`` (<= 1.0x; the
      ACP issue: the same start-up budget as ``steerable mcp``);
    * ``steerable call read_file`` costs <= 150 ms over ``python -c pass``;
    * ``import steerable_agent_runtime`` costs <= 150 ms over ``python -c pass``;
    * none of the heavy dependencies is imported by the framework, nor by ``steerable call``.

Run
    python benchmarks/startup.py [--rounds R] [--check] [--no-peers]

    Goals are printed as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal
    is missed (then 1). Without Node and npm (or with ``--no-peers``) the comparisons with
    ``server-filesystem`` (MCP and ACP) are skipped and said so. For a breakdown:
    ``python -X importtime -c "import steerable_agent_runtime"``.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PEERS = Path(__file__).resolve().parent / "peers"
MAX_IMPORT_MS = 150.0
MAX_CALL_MS = 150.0
MAX_MCP_RATIO = 1.0
MAX_ACP_RATIO = 1.0
HANDSHAKE_TIMEOUT_S = 30.0
HEAVY = ("mcp", "jsonschema", "httpx", "html_to_markdown")
# --no-plugins: an installed plugin may import anything (the test fixture plugin uses jsonschema)
CALL_ARGS = ["call", "read_file", '{"path": "README.md"}', "--no-plugins"]

COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import steerable_agent_runtime": [sys.executable, "-c", "import steerable_agent_runtime"],
    "pydantic + asyncio (the floor)": [sys.executable, "-c", "import asyncio, pydantic; pydantic.BaseModel"],
    "from ... import ToolCall, ToolRouter": [
        sys.executable,
        "-c",
        "from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter",
    ],
    "steerable call read_file README.md": [sys.executable, "-P", "-m", "steerable_sidecar", *CALL_ARGS],
    "steerable --version": [sys.executable, "-P", "-m", "steerable_sidecar", "--version"],
    "steerable doctor --json --no-plugins": [
        sys.executable,
        "-P",
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
    # PYTHONDONTWRITEBYTECODE would compile every module from source at each start, which no
    # installed steerable does: the warm-up round writes the bytecode the timed rounds read
    for var in (
        "PYTHONPROFILEIMPORTTIME",
        "PYTHONDEVMODE",
        "PYTHONTRACEMALLOC",
        "PYTHONASYNCIODEBUG",
        "PYTHONDONTWRITEBYTECODE",
    ):
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


SDK_SERVER = """
import asyncio
import mcp_types as t
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

async def list_tools(ctx, params):
    return t.ListToolsResult(tools=[])

async def main():
    server = Server("sdk-minimal", version="0", on_list_tools=list_tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

asyncio.run(main())
"""

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "startup-benchmark", "version": "1"},
    },
}


SDK_AGENT = """
import asyncio, uuid
from acp import PROTOCOL_VERSION, InitializeResponse, NewSessionResponse, run_agent

class Minimal:
    def on_connect(self, conn):
        pass

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        return InitializeResponse(protocol_version=PROTOCOL_VERSION)

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        return NewSessionResponse(session_id=uuid.uuid4().hex)

asyncio.run(run_agent(Minimal()))
"""

ACP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


def mcp_servers(workspace: Path, peers: bool) -> tuple[dict[str, list[str]], str | None]:
    """The MCP servers to time, and why the Node peers are missing (``None`` when present)."""
    servers = {
        "steerable mcp": [
            sys.executable,
            "-P",
            "-m",
            "steerable_sidecar",
            "mcp",
            "--workspace",
            str(workspace),
            "--no-plugins",
        ],
        "mcp SDK minimal server": [sys.executable, "-c", SDK_SERVER],
    }
    if not peers:
        return servers, "--no-peers"
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return servers, "node and npm are not installed"
    bin_dir = PEERS / "node_modules" / ".bin"
    if not (bin_dir / "mcp-server-filesystem").exists():
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=PEERS, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            return servers, f"npm ci in {PEERS} failed: {done.stderr.strip()[-300:]}"
    servers["server-filesystem (Node)"] = [node, str(bin_dir / "mcp-server-filesystem"), str(workspace)]
    servers["server-memory (Node)"] = [node, str(bin_dir / "mcp-server-memory")]
    return servers, None


def acp_agents(scratch: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The ACP agents to time, and what ``steerable acp`` needs in its environment (the scripted
    model's turns; it reads them at start-up, the SDK agent ignores them)."""
    script = scratch / "turns.json"
    script.write_text(json.dumps(["hello"]), encoding="utf-8")
    agents = {
        "steerable acp": [
            sys.executable,
            "-P",
            "-m",
            "steerable_sidecar",
            "acp",
            "--no-plugins",
            "--state-dir",
            str(scratch / "state"),
        ],
        "ACP SDK minimal agent": [sys.executable, "-c", SDK_AGENT],
    }
    return agents, {"STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)}


class _Lines:
    """Lines from a child's stdout, read with ``os.read`` (a buffered reader's leftover lines would
    hide from ``select``, and an unbuffered ``readline`` reads a byte per system call)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self._proc, self._fd, self._buffer = proc, proc.stdout.fileno(), b""

    def answer(self, request_id: int, deadline: float) -> None:
        """Read lines until the response to ``request_id`` arrives (notifications are skipped)."""
        while True:
            newline = self._buffer.find(b"\n")
            if newline < 0:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                    raise SystemExit(
                        f"{self._proc.args!r}: no answer to {request_id} within {HANDSHAKE_TIMEOUT_S} s"
                    )
                chunk = os.read(self._fd, 1 << 16)
                if not chunk:
                    raise SystemExit(f"{self._proc.args!r} closed stdout before answering {request_id}")
                self._buffer += chunk
                continue
            line, self._buffer = self._buffer[:newline], self._buffer[newline + 1 :]
            message = json.loads(line)
            if message.get("id") == request_id:
                if "error" in message:
                    raise SystemExit(f"{self._proc.args!r} answered {request_id} with {message['error']}")
                return


def time_handshake(
    argv: list[str], env: dict[str, str], workspace: Path, steps: list[tuple[list[bytes], int]]
) -> tuple[int, ...]:
    """Spawn a server; for each step write its lines, then ns from the spawn to its answer (by id)."""
    deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
    start = time.perf_counter_ns()
    proc = subprocess.Popen(
        argv, cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None
    lines = _Lines(proc)
    answered: list[int] = []
    try:
        for frames, request_id in steps:
            proc.stdin.write(b"".join(frame + b"\n" for frame in frames))
            proc.stdin.flush()
            lines.answer(request_id, deadline)
            answered.append(time.perf_counter_ns() - start)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return tuple(answered)


def time_mcp(argv: list[str], env: dict[str, str], workspace: Path) -> tuple[int, ...]:
    """Spawn an MCP server; ns to the ``initialize`` answer and to the ``tools/list`` answer."""
    initialized = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    listing = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
    return time_handshake(
        argv, env, workspace, [([json.dumps(INITIALIZE).encode()], 1), ([initialized, listing], 2)]
    )


def time_acp(argv: list[str], env: dict[str, str], workspace: Path) -> tuple[int, ...]:
    """Spawn an ACP agent; ns to the ``initialize`` answer and to the ``session/new`` answer."""
    new_session = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/new",
        "params": {"cwd": str(workspace), "mcpServers": []},
    }
    steps = [([json.dumps(ACP_INITIALIZE).encode()], 0), ([json.dumps(new_session).encode()], 1)]
    return time_handshake(argv, env, workspace, steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds; the median is reported")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--no-peers", action="store_true", help="skip the Node reference servers")
    args = parser.parse_args(argv)
    env = _env()
    scratch = tempfile.TemporaryDirectory(prefix="startup-ws-")
    workspace = Path(scratch.name)
    (workspace / "README.md").write_text("# a workspace\n", encoding="utf-8")
    servers, no_peers = mcp_servers(workspace, not args.no_peers)
    acp_scratch = tempfile.TemporaryDirectory(prefix="startup-acp-")
    agents, acp_env = acp_agents(Path(acp_scratch.name))
    acp_env = {**env, **acp_env}

    for command in COMMANDS.values():  # warm-up: bytecode caches, page cache
        run_once(command, env)
    for command in servers.values():
        time_mcp(command, env, workspace)
    for command in agents.values():
        time_acp(command, acp_env, workspace)
    samples: dict[str, list[int]] = {label: [] for label in COMMANDS}
    handshakes: dict[str, list[tuple[int, ...]]] = {label: [] for label in servers}
    acp_handshakes: dict[str, list[tuple[int, ...]]] = {label: [] for label in agents}
    for _ in range(args.rounds):
        for label, command in COMMANDS.items():
            samples[label].append(run_once(command, env))
        for label, command in servers.items():
            handshakes[label].append(time_mcp(command, env, workspace))
        for label, command in agents.items():
            acp_handshakes[label].append(time_acp(command, acp_env, workspace))
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
    print(f"  {'framework import (import - pass)':<36} {framework:8.1f} ms  (goal <= {MAX_IMPORT_MS:g} ms)")
    print(f"  {'steerable call (call - pass)':<36} {call_cost:8.1f} ms  (goal <= {MAX_CALL_MS:g} ms)")
    floor = med["pydantic + asyncio (the floor)"] - base
    print(f"  {'  of which pydantic + asyncio':<36} {floor:8.1f} ms  (the wire types are pydantic models)")

    print("MCP over stdio: spawn to the initialize answer, and to the tools/list answer (medians)")
    init_ms = {label: statistics.median(i for i, _ in runs) / 1e6 for label, runs in handshakes.items()}
    list_ms = {label: statistics.median(t for _, t in runs) / 1e6 for label, runs in handshakes.items()}
    peer = "server-filesystem (Node)"
    for label in servers:
        versus = f"  {init_ms[label] / init_ms[peer]:5.2f}x {peer}" if peer in init_ms else ""
        print(
            f"  {label:<36} initialize {init_ms[label]:7.1f} ms  tools/list {list_ms[label]:7.1f} ms{versus}"
        )
    if no_peers:
        print(f"  (the Node reference servers are not measured: {no_peers})")

    print("ACP over stdio: spawn to the initialize answer, and to the session/new answer (medians)")
    acp_init = {label: statistics.median(i for i, _ in runs) / 1e6 for label, runs in acp_handshakes.items()}
    acp_new = {label: statistics.median(n for _, n in runs) / 1e6 for label, runs in acp_handshakes.items()}
    for label in agents:
        versus = f"  {acp_init[label] / init_ms[peer]:5.2f}x {peer}" if peer in init_ms else ""
        shown = f"initialize {acp_init[label]:7.1f} ms  session/new {acp_new[label]:7.1f} ms"
        print(f"  {label:<36} {shown}{versus}")
    if no_peers:
        print(f"  (no {peer} to compare with: {no_peers})")

    loaded_import = probe(PROBE_IMPORT, env)
    loaded_call = probe(PROBE_CALL, env)
    heavy_import = [m for m in HEAVY if loaded_import.get(m)]
    heavy_call = [m for m in HEAVY if loaded_call.get(m)]
    print(f"  heavy modules after import steerable_agent_runtime: {heavy_import or 'none'}")
    print(f"  heavy modules after steerable call (exit {loaded_call.get('exit')}): {heavy_call or 'none'}")

    goals = [
        (
            f"framework import <= {MAX_IMPORT_MS:g} ms over pass ({framework:.1f} ms)",
            framework <= MAX_IMPORT_MS,
        ),
        (f"steerable call <= {MAX_CALL_MS:g} ms over pass ({call_cost:.1f} ms)", call_cost <= MAX_CALL_MS),
        (
            f"no heavy dependency imported by the framework ({', '.join(heavy_import) or 'none loaded'})",
            not heavy_import,
        ),
        (
            f"no heavy dependency imported by steerable call ({', '.join(heavy_call) or 'none loaded'})",
            not heavy_call and loaded_call.get("exit") == 0,
        ),
    ]
    if peer in init_ms:
        mcp_ratio = init_ms["steerable mcp"] / init_ms[peer]
        goals.append(
            (
                f"steerable mcp initialize <= {MAX_MCP_RATIO:g}x {peer} ({mcp_ratio:.2f}x)",
                mcp_ratio <= MAX_MCP_RATIO,
            )
        )
        acp_ratio = acp_init["steerable acp"] / init_ms[peer]
        goals.append(
            (
                f"steerable acp initialize <= {MAX_ACP_RATIO:g}x {peer} ({acp_ratio:.2f}x)",
                acp_ratio <= MAX_ACP_RATIO,
            )
        )
    for text, ok in goals:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    scratch.cleanup()
    acp_scratch.cleanup()
    return 1 if args.check and not all(ok for _, ok in goals) else 0


if __name__ == "__main__":
    sys.exit(main())
