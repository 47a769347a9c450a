"""``steerable mcp``: a running ``bash`` call's output travels in its progress notifications (issue 31,
"Live output"), driven by the official MCP client as a host drives it (docs/mcp.md, "What is served").

The output's tail is a notification's ``message`` as it comes; heartbeats without new output still
say the elapsed time; the messages are redacted like the server's logs; the result is unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.slow

TIMEOUT_S = 30
SECRET = "sk-live-output-secret-1234"


@contextlib.asynccontextmanager
async def serve(ws: Path, env: dict[str, str]) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["-P", "-m", "steerable_sidecar", "mcp", "--workspace", str(ws)], env=env
    )
    async with asyncio.timeout(TIMEOUT_S), Client(params) as client:
        yield client


class Progress:
    """The progress callback: each notification with when it came (seconds since the call)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.seen: list[tuple[float, float, str]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((time.monotonic() - self.started, progress, message or ""))

    def messages(self) -> list[str]:
        return [message for _, _, message in self.seen]

    def at(self, message: str) -> float:
        return next(at for at, _, shown in self.seen if shown == message)


async def _call(client: Client, command: str) -> tuple[dict[str, Any], Progress, float]:
    progress = Progress()
    result = await client.call_tool("bash", {"command": command}, progress_callback=progress)
    returned = time.monotonic() - progress.started
    assert result.structured_content is not None
    return result.structured_content, progress, returned


@pytest.fixture
def env(tmp_path: Path, child_env: Callable[..., dict[str, str]]) -> dict[str, str]:
    full = child_env(STEERABLE_API_KEY=SECRET, STEERABLE_STATE_DIR=str(tmp_path / "state"))
    keep = ("PYTHONPATH", "STEERABLE_API_KEY", "STEERABLE_STATE_DIR", "STEERABLE_CONFIG")
    return {name: full[name] for name in keep}


async def test_each_line_arrives_in_a_progress_message_before_the_call_returns(workspace: Path, env) -> None:
    async with serve(workspace, env) as client:
        answer, progress, returned = await _call(client, "for i in 1 2 3; do echo line$i; sleep 1; done")
    assert answer["success"] is True and answer["data"]["stdout"] == "line1\nline2\nline3\n"  # unchanged
    messages = progress.messages()
    assert messages[0] == "bash started"
    assert [m for m in messages if m.startswith("line")] == ["line1\n", "line2\n", "line3\n"]
    assert progress.at("line1\n") < returned - 1.5 and returned > 2.9  # line1 at once, not at the end
    assert progress.at("line2\n") - progress.at("line1\n") > 0.8
    values = [value for _, value, _ in progress.seen]
    assert values == sorted(set(values))  # strictly increasing
    # a line a second: a heartbeat with new output since the last one says nothing (one may still
    # come before line1 when the sandbox is slow to start)
    assert len([m for m in messages if " running for " in m]) <= 1, messages


async def test_a_quiet_command_still_gets_heartbeats_and_output_is_redacted(workspace: Path, env) -> None:
    async with serve(workspace, env) as client:
        answer, progress, _ = await _call(client, f"echo key={SECRET}; sleep 2.5; echo end; sleep 0.2")
    messages = progress.messages()
    assert "key=[redacted]\n" in messages  # redacted like every other message (docs/mcp.md)
    assert all(SECRET not in m for m in messages)
    quiet = [m for m in messages[messages.index("key=[redacted]\n") :] if m.startswith("bash running for ")]
    assert quiet, messages  # 2.5 s without output: the elapsed time, once a second
    assert answer["data"]["stdout"] == f"key={SECRET}\nend\n"  # a result is never changed


async def test_a_flood_is_clipped_to_its_tail(workspace: Path, env) -> None:
    async with serve(workspace, env) as client:
        answer, progress, _ = await _call(client, "seq 1 300000; sleep 0.7")
    assert answer["data"]["stdoutBytes"] > 1_000_000
    shown = [m for m in progress.messages()[1:] if not m.startswith("bash running for ")]
    assert shown and all(len(m.encode()) <= 2100 and m.count("\n") <= 21 for m in shown), shown
    assert shown[-1].startswith("[... ") and shown[-1].endswith("299999\n300000\n"), shown[-1]
