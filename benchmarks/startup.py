"""Start-up cost: what a user waits on before steerable answers, in each way it is started.

What it measures
    Wall time (``time.perf_counter_ns``) of fresh processes, same ``sys.executable``, cwd =
    repository root; one warm-up run each, then rounds interleaved; medians reported.

    * ``python -c pass`` (the baseline: interpreter start-up alone);
    * ``from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter``: what a host that
      embeds the framework imports first (its wire types are pydantic models, its router async),
      beside ``import steerable_agent_runtime`` (the package alone: its names load on first use;
      informational) and the floor it stands on, asyncio and pydantic with one model defined
      (informational);
    * ``python -m steerable_sidecar call read_file '{"path": "README.md"}' --no-plugins`` (what
      the ``steerable call`` console script runs; ``--no-plugins`` because an installed plugin may
      import anything it likes), beside its floor, ``import asyncio`` (informational): a call that
      succeeds with plain JSON goes and comes back as wire dicts (``ToolRouter.dispatch_wire``)
      and loads no pydantic;
    * ``steerable --version`` and ``steerable doctor --json --no-plugins`` (informational: doctor
      boots the tools and probes every sandbox backend);
    * MCP servers over stdio, the way a host starts them: spawn, write ``initialize`` at once, and
      time its answer from the spawn; then write ``notifications/initialized`` and ``tools/list``
      and time that answer from the moment ``tools/list`` was written (the host asks whenever it
      likes: the tools must be ready by then). ``steerable mcp --workspace TMP --no-plugins``
      against the reference Node servers ``@modelcontextprotocol/server-filesystem`` and
      ``server-memory`` (``benchmarks/peers``, installed with ``npm ci`` on first run), and a
      minimal server on the ``mcp`` SDK (for scale: why ``steerable mcp`` does not serve on it).
    * ACP agents over stdio, the way an editor starts them: spawn, write ``initialize`` at once,
      time its answer; then ``session/new`` (``cwd`` = TMP, no MCP servers), its answer timed from
      the spawn: what an editor waits on before the user can type. ``steerable acp --no-plugins
      --state-dir TMP`` with an OpenAI-compatible endpoint configured as a user would
      (``session/new`` sends nothing to it), against a minimal agent on the ACP SDK alone
      (``acp.run_agent``, answering ``initialize`` and ``session/new``): the floor of serving ACP
      on that SDK.
    * Under load (informational): the same ``call``, ``steerable mcp`` and ACP handshakes while one
      CPU-bound process per core runs (``while True: pass``), as on a laptop busy with a host's own
      start-up.

    A second check runs one subprocess that imports ``steerable_agent_runtime`` and one that runs
    the CLI's ``main`` for a ``call``, each printing which of the heavy dependencies ``mcp``,
    ``jsonschema``, ``httpx``, ``html_to_markdown`` (and, for the call, pydantic) ended up in
    ``sys.modules``.

Goals (issues 15 and 31)
    * ``steerable mcp`` answers ``initialize`` no slower than ``server-filesystem`` (<= 1.0x);
    * ``steerable mcp`` answers ``tools/list`` within 50 ms of the request that follows
      ``initialize``;
    * ``steerable acp`` answers ``initialize`` no slower than ``server-filesystem`` (<= 1.0x);
    * ``steerable acp`` answers the first ``session/new`` (from the spawn) no later than the bare
      ACP SDK agent (<= 1.0x);
    * ``steerable call read_file`` costs <= 150 ms over ``python -c pass``;
    * ``from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter`` costs <= 150 ms
      over ``python -c pass``;
    * none of the heavy dependencies is imported by the framework, nor by ``steerable call``;
    * ``steerable call read_file`` imports no pydantic.

Run
    python benchmarks/startup.py [--rounds R] [--load-rounds L] [--check] [--no-peers]

    Goals are printed as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal
    is missed (then 1). Without Node and npm (or with ``--no-peers``) the comparisons with
    ``server-filesystem`` (MCP and ACP) are skipped and said so; ``--load-rounds 0`` skips the
    measurement under load. The machine should be otherwise idle: other work on it shows in every
    figure. For a breakdown: ``python -X importtime -c "from steerable_agent_runtime import
    ToolCall, ToolResult, ToolRouter"``.
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
MAX_LIST_MS = 50.0
MAX_MCP_RATIO = 1.0
MAX_ACP_RATIO = 1.0
MAX_SESSION_RATIO = 1.0
HANDSHAKE_TIMEOUT_S = 30.0
HEAVY = ("mcp", "jsonschema", "httpx", "html_to_markdown")
# --no-plugins: an installed plugin may import anything (the test fixture plugin uses jsonschema)
CALL_ARGS = ["call", "read_file", '{"path": "README.md"}', "--no-plugins"]
PASS = "python -c pass"
FRAMEWORK = "import ToolCall, ToolResult, ToolRouter"
CALL = "steerable call read_file README.md"
STEERABLE_MCP = "steerable mcp"
STEERABLE_ACP = "steerable acp"
SDK_ACP = "ACP SDK minimal agent"

COMMANDS: dict[str, list[str]] = {
    PASS: [sys.executable, "-c", "pass"],
    "import steerable_agent_runtime": [sys.executable, "-c", "import steerable_agent_runtime"],
    "asyncio + pydantic, one model (floor)": [
        sys.executable,
        "-c",
        "import asyncio, pydantic\nclass M(pydantic.BaseModel):\n    x: int",
    ],
    "asyncio alone": [sys.executable, "-c", "import asyncio"],
    FRAMEWORK: [sys.executable, "-c", "from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter"],
    CALL: [sys.executable, "-P", "-m", "steerable_sidecar", *CALL_ARGS],
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
from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter
print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))
"""

PROBE_CALL = f"""
import contextlib, io, json, sys
from steerable_sidecar.cli._main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main({CALL_ARGS!r})
print(json.dumps({{"exit": code, **{{m: m in sys.modules for m in {HEAVY!r} + ("pydantic",)}}}}))
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

# an OpenAI-compatible endpoint, configured as a user would; session/new sends nothing to it
ACP_MODEL_ENV = {
    "STEERABLE_PROVIDER": "openai",
    "STEERABLE_BASE_URL": "http://127.0.0.1:9/v1",
    "STEERABLE_MODEL": "startup-benchmark",
    "STEERABLE_API_KEY": "sk-startup-benchmark",
}


def mcp_servers(workspace: Path, peers: bool) -> tuple[dict[str, list[str]], str | None]:
    """The MCP servers to time, and why the Node peers are missing (``None`` when present)."""
    servers = {
        STEERABLE_MCP: [
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


def acp_agents(scratch: Path) -> dict[str, list[str]]:
    """The ACP agents to time (``steerable acp`` reads its model from :data:`ACP_MODEL_ENV`)."""
    return {
        STEERABLE_ACP: [
            sys.executable,
            "-P",
            "-m",
            "steerable_sidecar",
            "acp",
            "--no-plugins",
            "--state-dir",
            str(scratch / "state"),
        ],
        SDK_ACP: [sys.executable, "-c", SDK_AGENT],
    }


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
) -> list[tuple[int, int]]:
    """Spawn a server; for each step write its lines and wait for its answer (by id).

    Returns:
        Per step, ns from the spawn to the step's request written, and to its answer read.
    """
    deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
    start = time.perf_counter_ns()
    proc = subprocess.Popen(
        argv, cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None
    lines = _Lines(proc)
    timed: list[tuple[int, int]] = []
    try:
        for frames, request_id in steps:
            asked = time.perf_counter_ns() - start
            proc.stdin.write(b"".join(frame + b"\n" for frame in frames))
            proc.stdin.flush()
            lines.answer(request_id, deadline)
            timed.append((asked, time.perf_counter_ns() - start))
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return timed


def time_mcp(argv: list[str], env: dict[str, str], workspace: Path) -> tuple[int, int]:
    """Spawn an MCP server: ns from the spawn to the ``initialize`` answer, and from the
    ``tools/list`` request (written once ``initialize`` is answered) to its answer."""
    initialized = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    listing = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
    (_, init), (asked, listed) = time_handshake(
        argv, env, workspace, [([json.dumps(INITIALIZE).encode()], 1), ([initialized, listing], 2)]
    )
    return init, listed - asked


def time_acp(argv: list[str], env: dict[str, str], workspace: Path) -> tuple[int, int]:
    """Spawn an ACP agent: ns from the spawn to the ``initialize`` answer and to the ``session/new``
    answer (written once ``initialize`` is answered)."""
    new_session = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/new",
        "params": {"cwd": str(workspace), "mcpServers": []},
    }
    steps = [([json.dumps(ACP_INITIALIZE).encode()], 0), ([json.dumps(new_session).encode()], 1)]
    (_, init), (_, opened) = time_handshake(argv, env, workspace, steps)
    return init, opened


def _median_ms(values: list[int]) -> float:
    return statistics.median(values) / 1e6


class Suite:
    """One set of rounds: the commands, the MCP servers and the ACP agents, interleaved."""

    def __init__(
        self,
        commands: dict[str, list[str]],
        servers: dict[str, list[str]],
        agents: dict[str, list[str]],
        workspace: Path,
    ) -> None:
        self.commands, self.servers, self.agents, self.workspace = commands, servers, agents, workspace
        self.runs: dict[str, list[int]] = {label: [] for label in commands}
        self.mcp: dict[str, list[tuple[int, int]]] = {label: [] for label in servers}
        self.acp: dict[str, list[tuple[int, int]]] = {label: [] for label in agents}

    def run(self, rounds: int, env: dict[str, str], acp_env: dict[str, str], *, warm_up: bool) -> Suite:
        if warm_up:  # bytecode caches, page cache
            for command in self.commands.values():
                run_once(command, env)
            for command in self.servers.values():
                time_mcp(command, env, self.workspace)
            for command in self.agents.values():
                time_acp(command, acp_env, self.workspace)
        for _ in range(rounds):
            for label, command in self.commands.items():
                self.runs[label].append(run_once(command, env))
            for label, command in self.servers.items():
                self.mcp[label].append(time_mcp(command, env, self.workspace))
            for label, command in self.agents.items():
                self.acp[label].append(time_acp(command, acp_env, self.workspace))
        return self

    def ms(self, label: str) -> float:
        return _median_ms(self.runs[label])

    def over_pass(self, label: str) -> float:
        return self.ms(label) - self.ms(PASS)

    def mcp_ms(self, label: str) -> tuple[float, float]:
        """Median ms to the ``initialize`` answer, and from the ``tools/list`` request to its answer."""
        runs = self.mcp[label]
        return _median_ms([i for i, _ in runs]), _median_ms([t for _, t in runs])

    def acp_ms(self, label: str) -> tuple[float, float]:
        """Median ms from the spawn to the ``initialize`` answer and to the ``session/new`` answer."""
        runs = self.acp[label]
        return _median_ms([i for i, _ in runs]), _median_ms([n for _, n in runs])


def busy_cores() -> list[subprocess.Popen[bytes]]:
    """One CPU-bound process per core (the load of the measurement under load)."""
    cores = max(os.cpu_count() or 1, 1)
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]


def report(quiet: Suite, peer: str, no_peers: str | None, rounds: int) -> list[tuple[str, bool]]:
    """Print the figures of the quiet rounds; return the goals, each with whether it is met."""
    base = quiet.ms(PASS)
    framework, call_cost = quiet.over_pass(FRAMEWORK), quiet.over_pass(CALL)
    python = sys.version.split()[0]
    print(f"startup: fresh subprocesses, {rounds} rounds, median wall time (Python {python})")
    for label in quiet.commands:
        ms = quiet.ms(label)
        low, high = min(quiet.runs[label]) / 1e6, max(quiet.runs[label]) / 1e6
        ratio = f"{ms / base:5.2f}x python -c pass" if label != PASS else "baseline"
        print(f"  {label:<40} {ms:8.1f} ms  ({low:.1f}..{high:.1f})  {ratio}")
    print(f"  {'framework import (import - pass)':<40} {framework:8.1f} ms  (goal <= {MAX_IMPORT_MS:g} ms)")
    print(f"  {'steerable call (call - pass)':<40} {call_cost:8.1f} ms  (goal <= {MAX_CALL_MS:g} ms)")
    floor = quiet.over_pass("asyncio + pydantic, one model (floor)")
    print(f"  {'  framework: of which asyncio + pydantic':<40} {floor:8.1f} ms  (its floor)")
    alone = quiet.over_pass("asyncio alone")
    print(f"  {'  call: of which asyncio':<40} {alone:8.1f} ms  (its floor: a plain call loads no pydantic)")

    print("MCP over stdio: spawn to the initialize answer; tools/list request to its answer (medians)")
    have_peer = peer in quiet.mcp
    peer_init = quiet.mcp_ms(peer)[0] if have_peer else 0.0
    for label in quiet.servers:
        init, listed = quiet.mcp_ms(label)
        versus = f"  {init / peer_init:5.2f}x {peer}" if have_peer else ""
        shown = f"initialize {init:7.1f} ms  tools/list {listed:6.1f} ms after it is asked"
        print(f"  {label:<40} {shown}{versus}")
    if no_peers:
        print(f"  (the Node reference servers are not measured: {no_peers})")

    print("ACP over stdio: spawn to the initialize answer, and to the first session/new answer (medians)")
    sdk_new = quiet.acp_ms(SDK_ACP)[1]
    for label in quiet.agents:
        init, opened = quiet.acp_ms(label)
        versus = f"  {init / peer_init:5.2f}x {peer}" if have_peer else ""
        shown = f"initialize {init:7.1f} ms  session/new {opened:7.1f} ms ({opened / sdk_new:4.2f}x SDK's)"
        print(f"  {label:<40} {shown}{versus}")
    if no_peers:
        print(f"  (no {peer} to compare with: {no_peers})")

    listed = quiet.mcp_ms(STEERABLE_MCP)[1]
    session_ratio = quiet.acp_ms(STEERABLE_ACP)[1] / sdk_new
    goals = [
        (
            f"from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter <= {MAX_IMPORT_MS:g} ms "
            f"over pass ({framework:.1f} ms)",
            framework <= MAX_IMPORT_MS,
        ),
        (f"steerable call <= {MAX_CALL_MS:g} ms over pass ({call_cost:.1f} ms)", call_cost <= MAX_CALL_MS),
        (
            f"steerable mcp answers tools/list <= {MAX_LIST_MS:g} ms after it is asked ({listed:.1f} ms)",
            listed <= MAX_LIST_MS,
        ),
        (
            f"steerable acp answers the first session/new <= {MAX_SESSION_RATIO:g}x the bare ACP SDK agent "
            f"({session_ratio:.2f}x)",
            session_ratio <= MAX_SESSION_RATIO,
        ),
    ]
    if have_peer:
        mcp_ratio = quiet.mcp_ms(STEERABLE_MCP)[0] / peer_init
        acp_ratio = quiet.acp_ms(STEERABLE_ACP)[0] / peer_init
        goals.append(
            (
                f"steerable mcp initialize <= {MAX_MCP_RATIO:g}x {peer} ({mcp_ratio:.2f}x)",
                mcp_ratio <= MAX_MCP_RATIO,
            )
        )
        goals.append(
            (
                f"steerable acp initialize <= {MAX_ACP_RATIO:g}x {peer} ({acp_ratio:.2f}x)",
                acp_ratio <= MAX_ACP_RATIO,
            )
        )
    return goals


def report_load(loaded: Suite, hogs: int, rounds: int) -> None:
    """Print the figures measured under load (informational: no goal)."""
    init, listed = loaded.mcp_ms(STEERABLE_MCP)
    sdk_new = loaded.acp_ms(SDK_ACP)[1]
    opened = loaded.acp_ms(STEERABLE_ACP)[1]
    print(f"under load ({hogs} CPU-bound processes, {rounds} rounds, medians; informational):")
    print(f"  {'steerable call (call - pass)':<40} {loaded.over_pass(CALL):8.1f} ms")
    print(f"  {'steerable mcp':<40} initialize {init:7.1f} ms  tools/list {listed:6.1f} ms after it is asked")
    print(
        f"  {'steerable acp':<40} session/new {opened:7.1f} ms, the SDK agent's {sdk_new:7.1f} ms "
        f"({opened / sdk_new:4.2f}x)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds; the median is reported")
    parser.add_argument(
        "--load-rounds", type=int, default=5, help="rounds under load, informational (0: none)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--no-peers", action="store_true", help="skip the Node reference servers")
    args = parser.parse_args(argv)
    env = _env()
    scratch = tempfile.TemporaryDirectory(prefix="startup-ws-")
    workspace = Path(scratch.name)
    (workspace / "README.md").write_text("# a workspace\n", encoding="utf-8")
    servers, no_peers = mcp_servers(workspace, not args.no_peers)
    acp_scratch = tempfile.TemporaryDirectory(prefix="startup-acp-")
    agents = acp_agents(Path(acp_scratch.name))
    acp_env = {**env, **ACP_MODEL_ENV}
    peer = "server-filesystem (Node)"

    quiet = Suite(COMMANDS, servers, agents, workspace).run(args.rounds, env, acp_env, warm_up=True)
    goals = report(quiet, peer, no_peers, args.rounds)
    if args.load_rounds > 0:
        loaded_commands = {label: COMMANDS[label] for label in (PASS, CALL)}
        loaded_servers = {STEERABLE_MCP: servers[STEERABLE_MCP]}
        hogs = busy_cores()
        try:
            loaded = Suite(loaded_commands, loaded_servers, agents, workspace).run(
                args.load_rounds, env, acp_env, warm_up=False
            )
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
        report_load(loaded, len(hogs), args.load_rounds)

    loaded_import = probe(PROBE_IMPORT, env)
    loaded_call = probe(PROBE_CALL, env)
    heavy_import = [m for m in HEAVY if loaded_import.get(m)]
    heavy_call = [m for m in HEAVY if loaded_call.get(m)]
    print(f"  heavy modules after the framework import: {heavy_import or 'none'}")
    print(f"  heavy modules after steerable call (exit {loaded_call.get('exit')}): {heavy_call or 'none'}")
    print(f"  pydantic after steerable call: {'loaded' if loaded_call.get('pydantic') else 'not loaded'}")
    goals += [
        (
            f"no heavy dependency imported by the framework ({', '.join(heavy_import) or 'none loaded'})",
            not heavy_import,
        ),
        (
            f"no heavy dependency imported by steerable call ({', '.join(heavy_call) or 'none loaded'})",
            not heavy_call and loaded_call.get("exit") == 0,
        ),
        ("steerable call read_file imports no pydantic", loaded_call.get("pydantic") is False),
    ]
    for text, ok in goals:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    scratch.cleanup()
    acp_scratch.cleanup()
    return 1 if args.check and not all(ok for _, ok in goals) else 0


if __name__ == "__main__":
    sys.exit(main())
