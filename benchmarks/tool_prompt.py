"""What the offered tools cost in prompt, every round: steerable's harnesses beside a peer's tools.

What it measures
    The bytes of the ``tools`` array a request carries, as steerable sends it (compact JSON), for
    ``--harness full``, ``minimal`` and ``progressive`` (``steerable_sidecar._boot.boot_tools``, no
    plugins, no web tools), beside:

    * **before**: the same tools as sent before issue 29 (the validation schema whole, ``title``
      keywords and ``null`` branches included, and JSON with spaces after separators), computed
      in this run from the same tools;
    * **peer**: LangChain's file-management toolkit and shell tool
      (``langchain_community.agent_toolkits.FileManagementToolkit`` and ``ShellTool``, whose shell
      is ``langchain_experimental``'s), converted with LangChain's own ``convert_to_openai_tool``,
      for the tools both have: read, write, list, find files, shell. Run with a Python that has
      them (``--peer-python PATH``; ``pip install langchain-community langchain-experimental`` in
      a venv of its own); without one the peer rows are skipped, saying so.

    With ``--tokenize-url`` (a llama.cpp server's root, e.g. ``http://127.0.0.1:8080``) each set is
    also counted in that model's tokens (``POST /tokenize``); otherwise bytes / 4 is shown as an
    estimate.

Run
    python benchmarks/tool_prompt.py [--peer-python PATH] [--tokenize-url URL]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import urllib.request
from typing import Any

from steerable_sidecar._boot import boot_tools

# steerable's tool -> the peer's tool doing the same job
PAIRS = {
    "read_file": "read_file",
    "write_file": "write_file",
    "list_dir": "list_directory",
    "glob": "file_search",
    "bash": "terminal",
}

_PEER_SCRIPT = """
import json, sys, tempfile, warnings
warnings.simplefilter("ignore")
from langchain_community.agent_toolkits import FileManagementToolkit
from langchain_core.utils.function_calling import convert_to_openai_tool
tools = FileManagementToolkit(root_dir=tempfile.mkdtemp()).get_tools()
try:
    from langchain_community.tools import ShellTool  # its shell comes from langchain_experimental
    tools.append(ShellTool())
except Exception as exc:
    print("no shell tool: " + str(exc), file=sys.stderr)
print(json.dumps([convert_to_openai_tool(t) for t in tools]))
"""


def wire(tools: list[dict[str, Any]]) -> str:
    return json.dumps(tools, ensure_ascii=False, separators=(",", ":"))


def offered(harness: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The descriptors sent now, and as they were sent before issue 29 (same tools)."""
    with tempfile.TemporaryDirectory() as ws:
        booted = boot_tools(ws, harness=harness, plugins=False, web_tools=False)
        now = booted.harness.offered()
        names = [t["function"]["name"] for t in now]
        before = [booted.router.get(name) for name in names]
        old = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in before
            if t is not None
        ]
    return now, old


def tokens(text: str, url: str | None) -> str:
    if not url:
        return f"~{len(text.encode()) // 4}"
    request = urllib.request.Request(
        f"{url.rstrip('/')}/tokenize",
        data=json.dumps({"content": text}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return str(len(json.load(answer)["tokens"]))


def peer_tools(python: str | None) -> list[dict[str, Any]] | None:
    if not python:
        return None
    proc = subprocess.run([python, "-c", _PEER_SCRIPT], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        print(f"peer not measured: {proc.stderr.strip().splitlines()[-1:]}")
        return None
    return list(json.loads(proc.stdout))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", help="a Python with langchain-community and langchain-experimental")
    parser.add_argument("--tokenize-url", help="a llama.cpp server's root, to count real tokens")
    args = parser.parse_args()
    print(f"{'set':<34}{'tools':>6}{'bytes':>8}{'tokens':>8}")
    sets: dict[str, list[dict[str, Any]]] = {}
    for harness in ("full", "minimal", "progressive"):
        now, old = offered(harness)
        # before issue 29, minimal offered full's set (the same eight tools when nothing else is registered)
        sets[f"steerable {harness} (before)"] = offered("full")[1] if harness == "minimal" else old
        sets[f"steerable {harness}"] = now
    for name, tools in sets.items():
        before = name.endswith("(before)")
        text = json.dumps(tools, ensure_ascii=False) if before else wire(tools)
        print(f"{name:<34}{len(tools):>6}{len(text.encode()):>8}{tokens(text, args.tokenize_url):>8}")
    full_now, full_old = sets["steerable full"], sets["steerable full (before)"]
    ratio = len(json.dumps(full_old).encode()) / len(wire(full_now).encode())
    print(f"full: before / now = {ratio:.2f}x")
    peer = peer_tools(args.peer_python)
    if peer is None:
        print("peer rows skipped: pass --peer-python with langchain-community and langchain-experimental")
        return 0
    by_name = {t["function"]["name"]: t for t in peer}
    mine = {t["function"]["name"]: t for t in full_now}
    minimal = {t["function"]["name"]: t for t in sets["steerable minimal"]}
    old = {t["function"]["name"]: t for t in full_old}
    head = f"{'peer':>7}{'before':>8}{'full':>7}{'minimal':>9}{'before/peer':>13}{'full/peer':>11}"
    print(f"\n{'same job':<28}{head}")
    totals = [0, 0, 0]
    for ours, theirs in PAIRS.items():
        if theirs not in by_name or ours not in mine:
            continue
        p, b, m = len(wire([by_name[theirs]])), len(json.dumps([old[ours]])), len(wire([mine[ours]]))
        small = str(len(wire([minimal[ours]]))) if ours in minimal else "-"
        totals = [totals[0] + p, totals[1] + b, totals[2] + m]
        print(f"{ours + ' / ' + theirs:<28}{p:>7}{b:>8}{m:>7}{small:>9}{b / p:>12.2f}x{m / p:>10.2f}x")
    p, b, m = totals
    print(f"{'together':<28}{p:>7}{b:>8}{m:>7}{'':>9}{b / p:>12.2f}x{m / p:>10.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
