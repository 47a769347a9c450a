"""``steerable mcp`` clips ``read_file`` for hosts (40,000 characters, ``--read-max-chars``; FILE-10),
driven by the official MCP client: the tool's description and the result say the same bound."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from steerable_agent_runtime import version_of

pytestmark = pytest.mark.slow


async def _read_big(ws: Path, env: dict[str, str], *flags: str) -> tuple[str, dict[str, object]]:
    """``read_file`` of a 120,000-character file: the tool's description and the result's data."""
    text = "".join(f"row {n:05d} {'y' * 50}\n" for n in range(2000))  # 122,000 characters
    (ws / "big.txt").write_text(text)
    args = ["-P", "-m", "steerable_sidecar", "mcp", "--workspace", str(ws), "--no-plugins", *flags]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    async with asyncio.timeout(60), Client(params) as client:
        (tool,) = [t for t in (await client.list_tools()).tools if t.name == "read_file"]
        result = await client.call_tool("read_file", {"path": "big.txt"})
    assert tool.description is not None and result.structured_content is not None
    data = result.structured_content["data"]
    assert data["partial"] is True and data["version"] == version_of(text.encode())
    return tool.description, data


@pytest.fixture
def env(tmp_path: Path, child_env: Callable[..., dict[str, str]]) -> dict[str, str]:
    full = child_env(STEERABLE_STATE_DIR=str(tmp_path / "state"))
    return {name: full[name] for name in ("PYTHONPATH", "STEERABLE_STATE_DIR") if name in full}


async def test_the_default_fits_a_hosts_whole_result(workspace: Path, env: dict[str, str]) -> None:
    description, data = await _read_big(workspace, env)
    assert "Output over 40,000 characters is clipped" in description
    assert 39_000 < len(str(data["content"])) < 40_200


async def test_the_flag_sets_another_bound(workspace: Path, env: dict[str, str]) -> None:
    description, data = await _read_big(workspace, env, "--read-max-chars", "5000")
    assert "Output over 5,000 characters is clipped" in description
    assert 4_000 < len(str(data["content"])) < 5_200
