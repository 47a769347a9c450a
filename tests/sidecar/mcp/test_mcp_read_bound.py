"""``steerable mcp`` clips ``read_file`` for hosts (40,000 characters, ``--read-max-chars``; FILE-10),
driven by the official MCP client: the tool's description and the result say the same bound, and the
bound holds for what the content takes in the result's JSON, escapes and emoji included."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from steerable_agent_runtime import version_of

pytestmark = pytest.mark.slow

_ORDINARY = "".join(f"row {n:05d} {'y' * 50}\n" for n in range(2000))  # 122,000 characters


async def _read(ws: Path, env: dict[str, str], text: str, *flags: str) -> tuple[str, dict[str, Any]]:
    """``read_file`` of ``text``: the tool's description and the result's ``structuredContent``."""
    (ws / "big.txt").write_text(text, newline="")
    args = ["-P", "-m", "steerable_sidecar", "mcp", "--workspace", str(ws), "--no-plugins", *flags]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    async with asyncio.timeout(60), Client(params) as client:
        (tool,) = [t for t in (await client.list_tools()).tools if t.name == "read_file"]
        result = await client.call_tool("read_file", {"path": "big.txt"})
    assert tool.description is not None and result.structured_content is not None
    data = result.structured_content["data"]
    assert data["partial"] is True and data["version"] == version_of(text.encode())
    return tool.description, result.structured_content


def _compact(value: object) -> int:
    """A value's compact JSON as Claude Code measures it: a JavaScript string's length (UTF-16)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-16-le")) // 2


@pytest.fixture
def env(tmp_path: Path, child_env: Callable[..., dict[str, str]]) -> dict[str, str]:
    full = child_env(STEERABLE_STATE_DIR=str(tmp_path / "state"))
    return {name: full[name] for name in ("PYTHONPATH", "STEERABLE_STATE_DIR") if name in full}


async def test_the_default_fits_a_hosts_whole_result(workspace: Path, env: dict[str, str]) -> None:
    description, result = await _read(workspace, env, _ORDINARY)
    assert "Output over 40,000 characters is clipped" in description
    assert 39_000 < len(str(result["data"]["content"])) < 40_200
    assert _compact(result) < 41_000


async def test_the_flag_sets_another_bound(workspace: Path, env: dict[str, str]) -> None:
    description, result = await _read(workspace, env, _ORDINARY, "--read-max-chars", "5000")
    assert "Output over 5,000 characters is clipped" in description
    assert 4_000 < len(str(result["data"]["content"])) < 5_200


_ESCAPE_HEAVY = {  # as JSON, a quote, backslash, tab or newline takes 2, another control character 6
    "quotes-backslashes": "".join('"\\' * 30 + "\n" for _ in range(3000)),  # was 80,136 as JSON
    "tabs": "".join("\t" * 48 + "x\n" for _ in range(3000)),  # was 79,449
    "control": "".join("\x01\x02\x1b[0m" * 10 + "\n" for _ in range(3000)),  # was 138,996
    "emoji": "".join("\U0001f600" * 40 + "\n" for _ in range(3000)),  # 2 UTF-16 units each: was 80,215
    "mixed": "".join(f'\t"k{n}": "v\\\\{n}\u00e9 \U0001f600 \x07",\n' for n in range(6000)),  # was 60,735
}


@pytest.mark.parametrize("name", list(_ESCAPE_HEAVY))
async def test_an_escape_heavy_file_still_fits_a_hosts_whole_result(
    workspace: Path, env: dict[str, str], name: str
) -> None:
    """The bound counts the content as the JSON holds it: the compact ``structuredContent`` stays
    under the 50,000 characters Claude Code hands its model whole."""
    _, result = await _read(workspace, env, _ESCAPE_HEAVY[name])
    content = str(result["data"]["content"])
    assert "characters of JSON" in content
    assert 39_000 < _compact(content) - 2 < 40_300  # head and tail to whole lines, and the marker line
    assert _compact(result) < 41_000


@pytest.mark.parametrize("value", ["0", "100001", "99999999999", "many"])
def test_a_bound_outside_1_to_100000_exits_2(
    run_cli: Callable[..., subprocess.CompletedProcess[str]], workspace: Path, value: str
) -> None:
    """A bound past the spec's 100,000 would turn the clip off: refused before the server starts."""
    done = run_cli("mcp", "--workspace", str(workspace), "--read-max-chars", value, stdin="")
    assert done.returncode == 2, done
    assert done.stdout == ""  # nothing on the protocol channel
    assert (
        f"argument --read-max-chars: {value!r} is not a number of characters from 1 to 100,000" in done.stderr
    )
