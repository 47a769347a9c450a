"""End to end with a real MCP host: Claude Code (``claude -p``, from npm) launches ``steerable mcp``.

The host is the pinned ``@anthropic-ai/claude-code`` of ``tests/hosts/package.json`` (installed by
``npm ci --prefix tests/hosts``, as ``.ci/run`` does). It talks to a fake Anthropic Messages API on
127.0.0.1 (``tests/fake_anthropic.py``) and launches steerable from an ``--mcp-config`` file exactly as
a user would configure it: an absolute command (this interpreter), ``-m steerable_sidecar mcp``, and
``PYTHONPATH`` in the server's ``env`` block. The test asserts what the host actually sent the model:
steerable's tools, with steerable's own schemas, in its first request, and the result of the
``read_file`` call the fake model asked for (a token only the workspace file holds) in the next one.

Hermetic: ``HOME`` and every config directory are temp dirs, the host's environment is built from
scratch (no inherited keys, proxies or ``CLAUDE_*`` settings), ``--strict-mcp-config`` ignores every
other MCP configuration, and telemetry, error reporting, the auto updater and non-essential traffic
are off: the only traffic is to the fake server. Every wait is bounded. Not ``--bare``: that mode
sends only the first paragraph of each MCP tool description, and a user's run is not bare.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

import steerable_sidecar
from fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.host

HOSTS_DIR = Path(__file__).resolve().parents[2] / "hosts"
CLAUDE = HOSTS_DIR / "node_modules" / ".bin" / "claude"
PACKAGE_PATH = str(Path(steerable_sidecar.__file__).resolve().parents[1])

HOST_TIMEOUT_S = 45  # the whole claude -p run; a healthy one takes 2-4 s
LIST_TIMEOUT_S = 15  # the official client listing steerable's tools; about 1 s
MCP_STARTUP_MS = 30_000  # how long the host waits for the server; past it, it goes on WITHOUT its tools
PREFIX = "mcp__steerable__"  # Claude Code's name for an MCP tool: mcp__<server>__<tool>


def _require_host() -> None:
    if not (HOSTS_DIR / "node_modules").is_dir():
        pytest.skip(
            "tests/hosts/node_modules is missing: run `npm ci --prefix tests/hosts --no-audit --no-fund` "
            "(.ci/run does) to install the pinned Claude Code this test drives"
        )
    assert os.access(CLAUDE, os.X_OK), f"tests/hosts/node_modules is there but {CLAUDE} is not executable"


def _server_entry(ws: Path) -> dict[str, Any]:
    """The ``mcpServers`` entry a user writes: absolute command, args, PYTHONPATH in ``env``."""
    return {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-P", "-m", "steerable_sidecar", "mcp", "--workspace", str(ws), "--no-plugins"],
        "env": {"PYTHONPATH": PACKAGE_PATH},
    }


async def _steerable_tools(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What steerable serves over MCP with that entry, asked with the official client: name -> tool."""
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])
    async with asyncio.timeout(LIST_TIMEOUT_S), Client(params) as client:
        listed = await client.list_tools()
    return {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools}


def _host_env(home: Path, base_url: str) -> dict[str, str]:
    """The host's whole environment: nothing inherited but PATH, everything under a temp HOME."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "USER": "steerable-test",
        "LANG": "C.UTF-8",
        "TMPDIR": str(home / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-a-loopback-server",
        # MCP tools in the request itself, not deferred behind ToolSearch (names only in a system message)
        "ENABLE_TOOL_SEARCH": "false",
        "MCP_TIMEOUT": str(MCP_STARTUP_MS),
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "NO_COLOR": "1",
    }


async def _run_host(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """Run the host to its end (bounded); on a timeout, kill its whole process group and fail."""
    proc = await asyncio.create_subprocess_exec(
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own group: the steerable server it launched dies with it
    )
    try:
        async with asyncio.timeout(HOST_TIMEOUT_S):
            out, err = await proc.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        pytest.fail(f"claude -p did not finish within {HOST_TIMEOUT_S} s")
    finally:
        with contextlib.suppress(ProcessLookupError):  # whatever it left behind (the MCP server)
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode is not None
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool_result block in a Messages request's conversation."""
    return [
        block
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _text_of(result: dict[str, Any]) -> str:
    """A tool_result's content as text: a string, or the text blocks of a list."""
    content = result.get("content")
    if isinstance(content, str):
        return content
    assert isinstance(content, list), result
    return "".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text")


async def test_claude_code_lists_steerable_tools_and_passes_a_read_file_result_back(tmp_path: Path) -> None:
    _require_host()
    token = f"steerable-host-token-{uuid.uuid4().hex}"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "note.txt").write_text(f"The token is {token}.\n", encoding="utf-8")
    home = tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    entry = _server_entry(ws)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"steerable": entry}}, indent=2), encoding="utf-8")

    served = await _steerable_tools(entry)
    assert "read_file" in served

    call_id = "toolu_fake_read_note"

    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        # The fake model: ask for read_file until the host hands back its result, then answer.
        if any(r.get("tool_use_id") == call_id for r in _tool_results(body)):
            return [{"type": "text", "text": "I read the note."}]
        offered = {t.get("name") for t in body.get("tools", [])}
        if PREFIX + "read_file" not in offered:
            return [{"type": "text", "text": "steerable's read_file was not offered."}]
        return [
            {"type": "tool_use", "id": call_id, "name": PREFIX + "read_file", "input": {"path": "note.txt"}}
        ]

    with FakeAnthropic(answer) as fake:
        args = [
            str(CLAUDE),
            "-p",
            "What does note.txt say?",
            "--mcp-config",
            str(config),
            "--strict-mcp-config",
            "--tools",
            "",  # no built-in tools: the model sees steerable's alone
            "--allowedTools",
            PREFIX + "read_file",  # -p has nobody to ask: allow the one tool the model calls
            "--no-session-persistence",
            "--output-format",
            "stream-json",  # one JSON event a line; the init event says how the MCP server fared
            "--verbose",  # stream-json with -p requires it
        ]
        code, out, err = await _run_host(args, ws, _host_env(home, fake.base_url))
        requests = fake.messages_requests()
        assert not fake.errors, fake.errors
    assert code == 0, (out, err)
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    (init,) = [e for e in events if e.get("type") == "system" and e.get("subtype") == "init"]
    # Past MCP_TIMEOUT the host goes on without the server's tools, silently (status "pending", exit 0).
    assert [(s["name"], s["status"]) for s in init["mcp_servers"]] == [("steerable", "connected")], (
        init["mcp_servers"],
        err,
    )
    assert requests, f"the host sent the model nothing; stderr: {err}"

    # (1) The first model request offers steerable's tools, with steerable's descriptions and schemas.
    first = requests[0]
    offered = {t["name"]: t for t in first["tools"]}
    assert set(offered) == {PREFIX + name for name in served}, (sorted(offered), sorted(served))
    for name, tool in served.items():
        sent = offered[PREFIX + name]
        assert sent["description"] == tool["description"], name
        assert sent["input_schema"] == tool["inputSchema"], name

    # (2) The host called steerable and gave the model the result in its very next request.
    assert len(requests) == 2, [len(r.get("messages", [])) for r in requests]
    assert not _tool_results(first)
    second = requests[1]
    assert any(
        block.get("type") == "tool_use" and block.get("id") == call_id
        for message in second["messages"]
        if message.get("role") == "assistant" and isinstance(message.get("content"), list)
        for block in message["content"]
    ), second["messages"]
    (result,) = [r for r in _tool_results(second) if r.get("tool_use_id") == call_id]
    assert result.get("is_error") is not True, result
    text = _text_of(result)
    assert token in text
    body = json.loads(text)  # steerable's ToolResult: its structuredContent, which the host sends as JSON
    assert body["success"] is True
    assert body["data"]["path"] == "note.txt"
    assert body["data"]["content"] == f"The token is {token}.\n"

    # The host finished the turn with the fake model's final answer.
    (summary,) = [e for e in events if e.get("type") == "result"]
    assert summary["is_error"] is False, summary
    assert summary["num_turns"] == 2, summary
    assert summary["result"] == "I read the note."
