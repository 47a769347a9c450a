"""Bad input that slips through (issue 13, item 7), through real ``steerable`` processes.

ENV-9: ``steerable call`` with ``"limit": "2"`` behaves exactly as with ``"limit": 2``; looser
strings are refused naming the field. ENV-10 / PLG-7: a directory plugin registering a bad tool
name makes ``steerable tools`` exit 2 naming the plugin.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from mcp import Client, StdioServerParameters

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("one\ntwo\nthree\n")
    return ws


def test_call_takes_an_integer_sent_as_a_string(tmp_path: Path, run_cli: RunCli) -> None:  # ENV-9
    ws = str(_workspace(tmp_path))
    as_string = run_cli("call", "read_file", '{"path": "README.md", "limit": "2"}', "--workspace", ws)
    as_number = run_cli("call", "read_file", '{"path": "README.md", "limit": 2}', "--workspace", ws)
    assert as_string.returncode == as_number.returncode == 0, as_string.stdout + as_string.stderr
    assert as_string.stdout == as_number.stdout
    assert as_string.stderr == as_number.stderr
    data = json.loads(as_string.stdout)["data"]
    assert data["content"] == "one\ntwo\n" and data["endLine"] == 2 and data["partial"] is True


def test_call_refuses_a_looser_string_naming_the_field(tmp_path: Path, run_cli: RunCli) -> None:  # ENV-9
    ws = str(_workspace(tmp_path))
    for loose in (" 2", "2.0", "02", "two"):
        arguments = json.dumps({"path": "README.md", "limit": loose})
        done = run_cli("call", "read_file", arguments, "--workspace", ws)
        assert done.returncode == 1, done.stdout + done.stderr
        result = json.loads(done.stdout)
        assert result["success"] is False and result["needsFollowup"] is True
        assert result["data"] == {
            "code": "invalid_arguments",
            "errors": [
                {
                    "field": "limit",
                    "message": f"expected an integer, got the string {loose!r} "
                    '(a string is accepted only as an exact JSON literal such as "1")',
                }
            ],
        }


def test_tools_exits_2_naming_a_plugin_with_a_bad_tool_name(tmp_path: Path, run_cli: RunCli) -> None:
    # ENV-10, PLG-7
    ws = _workspace(tmp_path)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "lookalike.py").write_text(
        "from steerable_agent_runtime import tool\n"
        "\n"
        "def register(router):\n"
        "    @tool(router=router, name='read_file ')\n"
        "    def read_file_again(path: str) -> str:\n"
        "        return path\n"
    )
    done = run_cli("tools", "--workspace", str(ws), STEERABLE_PLUGIN_DIR=str(plugins))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        f"steerable: plugin 'lookalike' from {plugins / 'lookalike.py'}: invalid tool name 'read_file ': it "
        "contains U+0020 SPACE; a tool name is 1 to 64 of the ASCII letters, digits, '_' and '-' "
        "(^[a-zA-Z0-9_-]{1,64}$, what model APIs accept)\n"
    )
    # without the plugin: one read_file row
    plain = run_cli("tools", "--workspace", str(ws), "--json")
    assert plain.returncode == 0, plain.stderr
    names = [t["name"] for t in json.loads(plain.stdout)]
    assert names.count("read_file") == 1


async def test_mcp_server_takes_an_integer_sent_as_a_string(  # ENV-9
    tmp_path: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    """What the MCP Inspector's ``--tool-arg limit=2`` sends, through a real ``steerable mcp``."""
    ws = _workspace(tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "steerable_sidecar", "mcp", "--workspace", str(ws)],
        env={"PYTHONPATH": child_env()["PYTHONPATH"]},
    )
    async with asyncio.timeout(30), Client(params) as client:
        as_string = await client.call_tool("read_file", {"path": "README.md", "limit": "2"})
        as_number = await client.call_tool("read_file", {"path": "README.md", "limit": 2})
    assert as_string.is_error is False
    assert as_string.structured_content == as_number.structured_content
    assert as_string.structured_content is not None
    assert as_string.structured_content["data"]["content"] == "one\ntwo\n"
