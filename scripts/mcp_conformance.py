"""Run the official MCP conformance suite (``@modelcontextprotocol/conformance``) against ``steerable mcp``.

``python scripts/mcp_conformance.py [--scenario NAME ...] [--keep]``

The suite's npm manifest and lockfile live in ``scripts/conformance/``; ``npm ci`` runs there when
its ``node_modules`` is missing. The suite needs Node >= 22, taken from the npm package ``node``
(``scripts/conformance/node_modules/node/bin/node``), so the machine's own Node does not matter.

The suite tests servers over Streamable HTTP; ``steerable mcp`` serves stdio. A small bridge in this
file (stdlib ``http.server``) listens on 127.0.0.1 only and starts one ``steerable mcp --workspace
<tmp> --no-plugins`` per MCP session, passing JSON-RPC lines through unchanged: each POST that
carries requests is answered with an SSE stream of what the server sends until every one of those
requests is answered. Every server scenario the suite lists is run, one at a time; the table says
which apply to steerable (``NOT_APPLICABLE`` holds the others with the reason) and the result. The
exit status is 0 only when every applicable scenario that ran passed.

``--python`` (or ``STEERABLE_CONFORMANCE_PYTHON``) picks the interpreter that runs the server and
``--src`` (or ``STEERABLE_CONFORMANCE_SRC``) a source tree put first on its ``PYTHONPATH``, e.g. a
``git worktree`` of another commit; by default this interpreter and its installed package are used.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import http.server
import json
import os
import queue
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

CONFORMANCE_DIR = Path(__file__).resolve().parent / "conformance"
NODE_MODULES = CONFORMANCE_DIR / "node_modules"
NODE = NODE_MODULES / "node" / "bin" / "node"
SUITE_CLI = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
MCP_PATH = "/mcp"
SCENARIO_TIMEOUT = 180.0  # seconds for one scenario, the suite's own client timeouts included
SESSION_HEADER = "Mcp-Session-Id"

_FIXTURE = "calls the suite's fixture tool {}, which steerable does not serve"
_TRANSPORT = "tests the Streamable HTTP transport ({}), i.e. this script's bridge; steerable serves stdio"

# Scenarios the suite has that do not test steerable. Every other scenario counts, so one that a
# new suite version adds is run and counted until it is listed here with its reason.
NOT_APPLICABLE: dict[str, str] = {
    "completion-complete": "completions: steerable serves no prompts or resource templates to complete",
    "tools-call-simple-text": _FIXTURE.format("test_simple_text"),
    "tools-call-image": _FIXTURE.format("test_image_content"),
    "tools-call-audio": _FIXTURE.format("test_audio_content"),
    "tools-call-embedded-resource": _FIXTURE.format("test_embedded_resource"),
    "tools-call-mixed-content": _FIXTURE.format("test_multiple_content_types"),
    "tools-call-with-logging": _FIXTURE.format("test_tool_with_logging"),
    "tools-call-error": _FIXTURE.format("test_error_handling") + " (an unknown tool is not a failing tool)",
    "tools-call-with-progress": _FIXTURE.format("test_tool_with_progress"),
    "tools-call-sampling": _FIXTURE.format("test_sampling") + "; steerable never asks the host to sample",
    "tools-call-elicitation": _FIXTURE.format("test_elicitation") + "; steerable never elicits",
    "json-schema-2020-12": _FIXTURE.format("json_schema_2020_12_tool"),
    "elicitation-sep1034-defaults": _FIXTURE.format("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": _FIXTURE.format("test_elicitation_sep1330_enums"),
    "server-sse-polling": _FIXTURE.format("test_reconnection") + "; SSE resumption is the transport's",
    "server-sse-multiple-streams": _TRANSPORT.format("concurrent POST SSE streams"),
    "dns-rebinding-protection": _TRANSPORT.format("Host/Origin checks"),
    "resources-list": "resources: steerable serves none",
    "resources-read-text": "resources: steerable serves none (reads the suite's test://static-text)",
    "resources-read-binary": "resources: steerable serves none (reads the suite's test://static-binary)",
    "resources-templates-read": "resources: steerable serves no resource templates",
    "resources-subscribe": "resources: steerable serves none to subscribe to",
    "resources-unsubscribe": "resources: steerable serves none to subscribe to",
    "prompts-list": "prompts: steerable serves none",
    "prompts-get-simple": "prompts: steerable serves none (gets the suite's test_simple_prompt)",
    "prompts-get-with-args": "prompts: steerable serves none (gets the suite's test_prompt_with_arguments)",
    "prompts-get-embedded-resource": "prompts: steerable serves none (test_prompt_with_embedded_resource)",
    "prompts-get-with-image": "prompts: steerable serves none (gets the suite's test_prompt_with_image)",
}


# --- the stdio-to-Streamable-HTTP bridge ------------------------------------------------------------


def _key(request_id: Any) -> str:
    """Key a JSON-RPC id by its JSON text, so 1 and "1" stay apart."""
    return json.dumps(request_id, sort_keys=True)


class _Stream:
    """One open SSE response: the messages routed to it, then ``None`` when it is done."""

    def __init__(self, request_ids: list[Any] | None = None) -> None:
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.outstanding = {_key(i) for i in request_ids or []}


class _Session:
    """One MCP session: one ``steerable mcp`` process and the streams waiting on it."""

    def __init__(self, session_id: str, command: list[str], env: dict[str, str], stderr: BinaryIO) -> None:
        self.session_id = session_id
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[_Stream, Any]] = {}  # request id -> (its stream, progress token)
        self._standalone: _Stream | None = None
        self.closed = False
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
        )
        threading.Thread(target=self._read, name=f"stdout-{session_id[:8]}", daemon=True).start()

    def send(self, messages: list[dict[str, Any]], stream: _Stream | None = None) -> None:
        """Write messages to the server's stdin; the requests' replies go to ``stream``."""
        assert self.proc.stdin is not None
        with self._lock:
            if self.closed:
                raise BrokenPipeError("the session's server has exited")
            if stream is not None:
                for message in messages:
                    if "method" in message and "id" in message:
                        meta = (message.get("params") or {}).get("_meta") or {}
                        self._pending[_key(message["id"])] = (stream, meta.get("progressToken"))
            data = b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in messages)
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def open_standalone(self) -> _Stream | None:
        """The session's GET stream, or None when one is open already."""
        with self._lock:
            if self._standalone is not None or self.closed:
                return None
            self._standalone = _Stream()
            return self._standalone

    def detach(self, stream: _Stream) -> None:
        """Forget a stream whose client went away; what was routed to it is dropped."""
        with self._lock:
            for key in [k for k, (s, _) in self._pending.items() if s is stream]:
                del self._pending[key]
            if self._standalone is stream:
                self._standalone = None

    def _route(self, message: dict[str, Any]) -> None:
        with self._lock:
            if "method" not in message and "id" in message:  # a response
                stream, _ = self._pending.pop(_key(message["id"]), (None, None))
                if stream is None:
                    return
                stream.messages.put(message)
                stream.outstanding.discard(_key(message["id"]))
                if not stream.outstanding:
                    stream.messages.put(None)
                return
            # a notification or a request to the client: progress goes with the request it reports
            # on, anything else with the oldest request in flight, else on the GET stream
            token = (message.get("params") or {}).get("progressToken")
            target = next((s for s, t in self._pending.values() if token is not None and t == token), None)
            if target is None and self._pending:
                target = next(iter(self._pending.values()))[0]
            target = target or self._standalone
            if target is not None:
                target.messages.put(message)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict):
                    self._route(message)
        code = self.proc.wait()
        with self._lock:
            self.closed = True
            streams = {id(s): s for s, _ in self._pending.values()}
            for key, (stream, _) in self._pending.items():
                error = {"code": -32603, "message": f"steerable mcp exited (code {code}) before answering"}
                stream.messages.put({"jsonrpc": "2.0", "id": json.loads(key), "error": error})
            self._pending.clear()
            if self._standalone is not None:
                streams[id(self._standalone)] = self._standalone
            for stream in streams.values():
                stream.messages.put(None)

    def close(self) -> None:
        """End the server: close its stdin, then terminate and kill it if it lingers."""
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        for stop in (None, self.proc.terminate, self.proc.kill):
            if stop is not None:
                stop()
            try:
                self.proc.wait(timeout=5)
                return
            except subprocess.TimeoutExpired:
                continue


class Bridge(http.server.ThreadingHTTPServer):
    """Streamable HTTP on 127.0.0.1, one stdio server process per MCP session."""

    daemon_threads = True

    def __init__(self, command: list[str], env: dict[str, str], log: BinaryIO) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.command = command
        self.env = env
        self.log = log
        self.sessions: dict[str, _Session] = {}
        self.sessions_lock = threading.Lock()
        port = self.server_address[1]
        self.allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
        self.url = f"http://127.0.0.1:{port}{MCP_PATH}"

    def new_session(self) -> _Session:
        """Start a server process for a new session."""
        session = _Session(secrets.token_hex(16), self.command, self.env, self.log)
        with self.sessions_lock:
            self.sessions[session.session_id] = session
        return session

    def end_session(self, session_id: str) -> bool:
        """End one session; False when there is no such session."""
        with self.sessions_lock:
            session = self.sessions.pop(session_id, None)
        if session is None:
            return False
        session.close()
        return True

    def end_sessions(self) -> None:
        """End every session (between scenarios, and at the end)."""
        with self.sessions_lock:
            sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            session.close()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Bridge

    def log_message(self, format: str, *args: Any) -> None:
        self.server.log.write(f"bridge: {self.address_string()} {format % args}\n".encode())
        self.server.log.flush()

    def _reply(self, status: int, body: dict[str, Any] | None = None, session_id: str | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        if session_id:
            self.send_header(SESSION_HEADER, session_id)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, code: int, message: str) -> None:
        self._reply(status, {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})

    def _admitted(self) -> bool:
        """Check the path and refuse a Host or Origin that is not this loopback server (DNS rebinding)."""
        if self.path.split("?", 1)[0] != MCP_PATH:
            self._error(404, -32600, f"not found: the MCP endpoint is {MCP_PATH}")
            return False
        host = self.headers.get("Host", "")
        origin = self.headers.get("Origin")
        if host not in self.server.allowed_hosts or (
            origin is not None and origin not in {f"http://{h}" for h in self.server.allowed_hosts}
        ):
            self._error(403, -32600, "forbidden: Host or Origin is not this loopback server")
            return False
        return True

    def _session(self) -> _Session | None:
        session_id = self.headers.get(SESSION_HEADER)
        if not session_id:
            self._error(400, -32600, f"bad request: no {SESSION_HEADER} header")
            return None
        with self.server.sessions_lock:
            session = self.server.sessions.get(session_id)
        if session is None or session.closed:
            self._error(404, -32001, "session not found")
            return None
        return session

    def do_POST(self) -> None:
        """Forward JSON-RPC messages; answer requests with an SSE stream, the rest with 202."""
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True  # the body's end is unknown: the connection cannot be reused
            self._error(411, -32600, "bad request: Content-Length needed")
            return
        # read before any refusal, so a kept-alive connection stays in step
        raw = self.rfile.read(int(length))
        if not self._admitted():
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._error(400, -32700, "parse error")
            return
        messages = body if isinstance(body, list) else [body]
        if not messages or not all(isinstance(m, dict) for m in messages):
            self._error(400, -32600, "invalid request: expected a JSON-RPC message object")
            return
        if any(m.get("method") == "initialize" for m in messages):
            if len(messages) > 1 or self.headers.get(SESSION_HEADER):
                self._error(400, -32600, "invalid request: initialize must come alone and without a session")
                return
            session: _Session | None = self.server.new_session()
        else:
            session = self._session()
        if session is None:
            return
        requests = [m["id"] for m in messages if "method" in m and "id" in m]
        stream = _Stream(requests) if requests else None
        try:
            session.send(messages, stream)
        except OSError:
            self._error(404, -32001, "session not found: its server has exited")
            return
        if stream is None:
            self._reply(202, session_id=session.session_id)
            return
        self._stream(session, stream)

    def do_GET(self) -> None:
        """Open the session's standalone SSE stream, for what the server sends outside a request."""
        if not self._admitted():
            return
        session = self._session()
        if session is None:
            return
        stream = session.open_standalone()
        if stream is None:
            self._error(409, -32600, "conflict: this session's GET stream is open already")
            return
        self._stream(session, stream, keepalive=10.0)

    def do_DELETE(self) -> None:
        """End a session."""
        if not self._admitted():
            return
        session_id = self.headers.get(SESSION_HEADER, "")
        if self.server.end_session(session_id):
            self._reply(200)
        else:
            self._error(404, -32001, "session not found")

    def _stream(self, session: _Session, stream: _Stream, keepalive: float | None = None) -> None:
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header(SESSION_HEADER, session.session_id)
        self.end_headers()
        try:
            self.wfile.flush()
            while True:
                try:
                    message = stream.messages.get(timeout=keepalive)
                except queue.Empty:
                    self.wfile.write(b": keepalive\n\n")  # finds a client that has gone away
                    self.wfile.flush()
                    continue
                if message is None:
                    break
                self.wfile.write(b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n")
                self.wfile.flush()
        except OSError:
            pass
        finally:
            session.detach(stream)


# --- running the suite --------------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    """What one scenario came to."""

    scenario: str
    result: str  # pass, fail, error, timeout
    warnings: int = 0
    failures: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        """Whether the scenario passed."""
        return self.result == "pass"


def ensure_installed() -> None:
    """Run ``npm ci`` in scripts/conformance when its packages are missing, then check the Node version."""
    if not (NODE.is_file() and SUITE_CLI.is_file()):
        npm = shutil.which("npm")
        if npm is None:
            sys.exit("npm is needed once, to install scripts/conformance (npm ci); it is not on PATH")
        print(f"installing the suite: npm ci in {CONFORMANCE_DIR}", flush=True)
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=CONFORMANCE_DIR, check=True)
        if not NODE.is_file():
            sys.exit(f"npm ci did not install the node package's binary at {NODE}")
    version = subprocess.run([str(NODE), "--version"], capture_output=True, text=True, check=True).stdout
    match = re.match(r"v(\d+)\.", version.strip())
    if not match or int(match.group(1)) < 22:
        sys.exit(f"the suite needs Node >= 22; {NODE} is {version.strip()!r}")


def suite_scenarios() -> list[str]:
    """The server scenarios the installed suite lists (``conformance list --server``)."""
    out = subprocess.run(
        [str(NODE), str(SUITE_CLI), "list", "--server"], capture_output=True, text=True, check=True
    ).stdout
    return re.findall(r"^\s*-\s+(\S+)", out, flags=re.MULTILINE)


def run_scenario(name: str, url: str, results: Path) -> Outcome:
    """Run one scenario with the suite's CLI and read its checks.json."""
    out_dir = results / name
    start = time.monotonic()
    try:
        done = subprocess.run(
            [str(NODE), str(SUITE_CLI), "server", "--url", url, "--scenario", name, "-o", str(out_dir)],
            capture_output=True,
            text=True,
            timeout=SCENARIO_TIMEOUT,
            cwd=results,
        )
    except subprocess.TimeoutExpired:
        return Outcome(name, "timeout", failures=[f"no result after {SCENARIO_TIMEOUT:.0f} s"])
    seconds = time.monotonic() - start
    (results / f"{name}.log").write_text(done.stdout + done.stderr)
    found = sorted(out_dir.glob("*/checks.json"))
    if not found:
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        failure = f"no checks.json (exit {done.returncode}): " + " | ".join(tail)
        return Outcome(name, "error", failures=[failure])
    checks = json.loads(found[-1].read_text())
    failures = [
        f"{c.get('name')}: {c.get('errorMessage') or c.get('description')}"
        for c in checks
        if c.get("status") == "FAILURE"
    ]
    warnings = sum(1 for c in checks if c.get("status") == "WARNING")
    result = "pass" if not failures and done.returncode == 0 else "fail"
    if result == "fail" and not failures:
        failures = [f"the suite exited {done.returncode} with no failed check"]
    return Outcome(name, result, warnings, failures, seconds)


def server_command(python: str, workspace: Path, src: str | None) -> tuple[list[str], dict[str, str]]:
    """The ``steerable mcp`` command line and environment for one session."""
    env = dict(os.environ)
    env.pop("STEERABLE_MCP_CONFIG", None)  # no upstream MCP servers: the suite sees steerable's own tools
    if src:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    command = [python, "-P", "-m", "steerable_sidecar", "mcp", "--workspace", str(workspace), "--no-plugins"]
    return command, env


def print_table(outcomes: list[Outcome], verbose: bool = False) -> None:
    """Print scenario, applies, result and a note (the reason, or the first failure), then the failures."""
    width = max(len(o.scenario) for o in outcomes)
    print(f"\n{'scenario':<{width}}  applies  {'result':<16}  note")
    print(f"{'-' * width}  -------  {'-' * 16}  ----")
    for o in outcomes:
        reason = NOT_APPLICABLE.get(o.scenario)
        result = o.result + (f" ({o.warnings} warn)" if o.warnings else "")
        note = reason if reason else (o.failures[0] if o.failures else "")
        print(f"{o.scenario:<{width}}  {'no' if reason else 'yes':<7}  {result:<16}  {note}")
    sections = [("failures of applicable scenarios", False)] + [("failures not counted", True)] * verbose
    for title, not_applicable in sections:
        failed = [o for o in outcomes if o.failures and (o.scenario in NOT_APPLICABLE) == not_applicable]
        if failed:
            print(f"\n{title}:")
            for o in failed:
                for failure in o.failures:
                    print(f"  {o.scenario}: {failure}")


def main(argv: list[str] | None = None) -> int:
    """Install if needed, start the bridge, run the scenarios, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--scenario", action="append", metavar="NAME", help="run only this one (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace, logs and results")
    parser.add_argument("--verbose", action="store_true", help="list the uncounted failures too")
    parser.add_argument(
        "--python",
        default=os.environ.get("STEERABLE_CONFORMANCE_PYTHON", sys.executable),
        help="interpreter that runs steerable mcp (default: this one; env STEERABLE_CONFORMANCE_PYTHON)",
    )
    parser.add_argument(
        "--src",
        default=os.environ.get("STEERABLE_CONFORMANCE_SRC"),
        help="source tree put first on the server's PYTHONPATH (env STEERABLE_CONFORMANCE_SRC)",
    )
    args = parser.parse_args(argv)

    ensure_installed()
    available = suite_scenarios()
    if not available:
        sys.exit("the suite listed no server scenarios")
    stale = sorted(set(NOT_APPLICABLE) - set(available))
    if stale:
        print(f"note: NOT_APPLICABLE names scenarios the suite no longer has: {', '.join(stale)}")
    unknown = sorted(set(args.scenario or []) - set(available))
    if unknown:
        sys.exit(f"unknown scenario(s): {', '.join(unknown)}; the suite has: {', '.join(available)}")
    selected = [s for s in available if not args.scenario or s in args.scenario]

    tmp = Path(tempfile.mkdtemp(prefix="steerable-conformance-"))
    workspace, results = tmp / "workspace", tmp / "results"
    workspace.mkdir()
    results.mkdir()
    command, env = server_command(args.python, workspace, args.src)
    outcomes: list[Outcome] = []
    with open(tmp / "server.log", "wb") as log:
        bridge = Bridge(command, env, log)
        threading.Thread(target=bridge.serve_forever, name="bridge", daemon=True).start()
        print(f"bridge {bridge.url} -> {' '.join(command)}", flush=True)
        try:
            for name in selected:
                outcome = run_scenario(name, bridge.url, results)
                bridge.end_sessions()
                outcomes.append(outcome)
                print(f"  {name}: {outcome.result} ({outcome.seconds:.1f} s)", flush=True)
        finally:
            bridge.shutdown()
            bridge.end_sessions()
            bridge.server_close()

    print_table(outcomes, args.verbose)
    applicable = [o for o in outcomes if o.scenario not in NOT_APPLICABLE]
    passed = sum(o.passed for o in applicable)
    print(
        f"\napplicable: {passed} passed, {len(applicable) - passed} failed; not applicable: "
        f"{len(outcomes) - len(applicable)} (run, not counted)"
    )
    if args.keep:
        print(f"kept {tmp} (workspace/, results/<scenario>/, results/<scenario>.log, server.log)")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if passed == len(applicable) else 1


if __name__ == "__main__":
    sys.exit(main())
