"""``~`` in an MCP config is expanded where a path is expected, as a shell would have; what cannot be is said.

A host starts its servers without a shell, so ``"command": "~/bin/server"`` reached the OS as it
was written. Here a real ``steerable run`` (scripted provider) connects a real MCP server through a
file named ``STEERABLE_MCP_CONFIG=~/mcp.json`` whose ``command``, ``args`` and ``cwd`` start with
``~``, and calls its tool.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from run_helpers import summary_of

from steerable_agent_runtime.errors import ConfigError, McpServerError
from steerable_agent_runtime.tools import ToolRouter
from steerable_sidecar.mcp_sources._sources import (
    McpServerConfig,
    McpToolSources,
    load_mcp_config,
    load_mcp_config_from_env,
)

SERVER_SCRIPT = Path(__file__).resolve().parents[2] / "fixtures" / "mcp_tool_server.py"


def _home(tmp_path: Path) -> Path:
    """A home folder with ``bin/py`` (this interpreter), ``srv/mcp_tool_server.py`` and ``mcp.json``."""
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "srv").mkdir()
    launcher = home / "bin" / "py"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    launcher.chmod(0o755)
    (home / "srv" / "mcp_tool_server.py").write_text(SERVER_SCRIPT.read_text())
    # args relative to cwd: the server starts only if "~/srv" became its working directory
    entry = {"command": "~/bin/py", "args": ["mcp_tool_server.py"], "cwd": "~/srv"}
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": entry}}))
    return home


def test_a_tilde_in_the_config_and_its_entries_is_expanded_end_to_end(
    tmp_path: Path, run_cli: Callable[..., Any], workspace: Path
) -> None:
    home = _home(tmp_path)
    script = tmp_path / "turns.json"
    call = {"id": "c1", "name": "mcp__fx__echo", "arguments": {"text": "from ~"}}
    script.write_text(json.dumps([{"tool_calls": [call]}, "echoed"]))
    proc = run_cli(
        "run",
        "-w",
        str(workspace),
        "--instruction",
        "echo",
        "--no-web-tools",
        "--quiet",
        "--session-id",
        "tilde",
        HOME=str(home),
        STEERABLE_MCP_CONFIG="~/mcp.json",
        STEERABLE_PROVIDER="scripted",
        STEERABLE_SCRIPT=str(script),
        STEERABLE_STATE_DIR=str(tmp_path / "state"),
    )
    summary = summary_of(proc)
    assert (summary["outcome"], summary["toolCalls"], summary["exitCode"]) == ("completed", 1, 0), proc.stderr
    record = (tmp_path / "state" / "sessions" / "tilde.jsonl").read_text()
    tool_messages = [
        json.loads(line)["message"]
        for line in record.splitlines()
        if '"type":"message"' in line and '"role":"tool"' in line
    ]
    assert len(tool_messages) == 1 and "from ~" in tool_messages[0]["content"], tool_messages


def test_the_fields_are_expanded_with_this_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    (config,) = load_mcp_config("~/mcp.json")
    assert (config.command, config.args, config.cwd) == (
        f"{home}/bin/py",
        ("mcp_tool_server.py",),
        f"{home}/srv",
    )
    # STEERABLE_MCP_CONFIG's ~ is the HOME of the environment read, as the deny-read set reads it
    (same,) = load_mcp_config_from_env({"STEERABLE_MCP_CONFIG": "~/mcp.json", "HOME": str(home)})
    assert same == config
    assert McpServerConfig("a", "python", ("~/x.py", "--flag=~/y", "~")).args == (
        f"{home}/x.py",
        "--flag=~/y",  # not a path of its own: passed as written
        str(home),
    )


def test_what_cannot_be_expanded_or_found_is_said(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"fx": {"command": "~nosuchuser0/bin/server"}}}))
    with pytest.raises(ConfigError) as info:
        load_mcp_config(config)
    assert str(info.value) == (
        f"MCP config {config}: server 'fx': command '~nosuchuser0/bin/server' starts with ~nosuchuser0, "
        "but there is no user 'nosuchuser0' here: write the absolute path"
    )
    config.write_text(json.dumps([{"name": "fx", "command": "python", "cwd": "proj"}]))
    with pytest.raises(ConfigError) as info:
        load_mcp_config(config)
    assert str(info.value) == (
        f"MCP config {config}: entry 0: cwd 'proj' must be an absolute path (or start with ~/)"
    )


async def test_a_cwd_that_is_not_a_directory_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    missing = McpServerConfig("fx", sys.executable, (str(SERVER_SCRIPT),), cwd="~/proj")
    with pytest.raises(McpServerError) as info:
        async with McpToolSources(ToolRouter(), [missing]):
            pass
    assert str(info.value) == f"MCP server 'fx': its cwd '{tmp_path}/proj' is not a directory"
    assert not os.path.exists(tmp_path / "proj")


def test_a_workspace_left_as_tilde_by_a_host_config_says_why(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    # a host's "args": ["mcp", "--workspace", "~bob/proj"] reaches steerable as written (no shell);
    # ~user naming no user stays unexpanded whoever expands ~, so the message says which it is
    given = "~nosuchuser0/proj"
    why = "there is no user 'nosuchuser0' here for ~nosuchuser0 to name; write the absolute path"
    served = run_cli("mcp", "--workspace", given, stdin="", cwd=tmp_path)
    assert served.returncode == 2
    assert (
        served.stderr.strip().splitlines()[-1] == f"steerable: workspace {given!r} is not a directory: {why}"
    )
    ran = run_cli("run", "-w", given, "--instruction", "hi", cwd=tmp_path, STEERABLE_PROVIDER="scripted")
    assert summary_of(ran) == {
        "outcome": "usage_error",
        "error": f"--workspace {given!r} is not a directory: {why}",
        "exitCode": 2,
    }


def test_a_workspace_given_as_tilde_by_a_host_is_this_homes_project(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    # "args": ["call", "-w", "~/proj"] with no shell: ~ is this HOME, as a shell would have read it
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    (home / "proj" / "notes.txt").write_text("hi\n")
    done = run_cli("call", "list_dir", "{}", "-w", "~/proj", cwd=tmp_path, HOME=str(home))
    assert done.returncode == 0, done.stderr
    assert [e["name"] for e in json.loads(done.stdout)["data"]["entries"]] == ["notes.txt"]
