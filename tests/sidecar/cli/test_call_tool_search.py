"""Issue 15: ``steerable call`` and ``session`` reach the deferred tier through ``tool_search``.

They dispatch by name and offer no list, so ``tool_search`` is registered whenever deferred tools
exist, whatever ``--harness`` says; with none, it is "not available here" with the reason.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

DEFERRED_PLUGIN = """
from steerable_agent_runtime import tool

def register(router):
    @tool(router=router, mode="read", exposure="deferred", description="Forecast the weather for a city")
    async def weather_forecast(city: str) -> str:
        return f"sunny in {city}"
"""


def _plugins(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "weather.py").write_text(DEFERRED_PLUGIN, encoding="utf-8")
    return folder


def test_call_finds_a_deferred_tool_with_tool_search(
    tmp_path: Path, run_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"STEERABLE_PLUGIN_DIR": str(_plugins(tmp_path))}
    found = run_cli(
        "call", "tool_search", '{"query": "weather city", "max_results": 3}', "-w", str(ws), **env
    )
    assert found.returncode == 0, found.stderr
    names = [t["name"] for t in json.loads(found.stdout)["data"]["tools"]]
    assert names[0] == "weather_forecast"
    # and the deferred tool itself dispatches by name
    ran = run_cli("call", "weather_forecast", '{"city": "Oslo"}', "-w", str(ws), **env)
    assert json.loads(ran.stdout)["data"] == {"value": "sunny in Oslo"}


def test_session_has_tool_search_too(
    tmp_path: Path, run_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    line = json.dumps(
        {"id": "c1", "name": "tool_search", "arguments": {"query": "forecast", "max_results": 2}}
    )
    out = run_cli("session", "-w", str(ws), stdin=line + "\n", STEERABLE_PLUGIN_DIR=str(_plugins(tmp_path)))
    answer = json.loads(out.stdout.splitlines()[0])
    assert answer["id"] == "c1" and answer["result"]["success"] is True
    assert answer["result"]["data"]["tools"][0]["name"] == "weather_forecast"


def test_without_deferred_tools_tool_search_says_why(
    tmp_path: Path, run_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    out = run_cli(
        "call", "tool_search", '{"query": "x", "max_results": 1}', "-w", str(tmp_path), "--no-plugins"
    )
    assert out.returncode == 1
    result = json.loads(out.stdout)
    assert result["data"]["code"] == "tool_unavailable"
    assert "there is no deferred tool to search here" in result["error"]
