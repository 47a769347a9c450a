"""Every entry point boots the same way: workspace tools, plugins, harness (issue 4, PLG-3).

A plugin dropped into STEERABLE_PLUGIN_DIR shows up in ``tools``, ``call``, ``session``, ``mcp``,
``run`` and ``sidecar`` at once; a broken one stops each of them, naming it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import RemoteError
from steerable_cli import run_steerable
from steerable_sidecar.sidecar._client import SidecarClient, SidecarStartError

GREET = textwrap.dedent(
    """
    from steerable_agent_runtime import tool

    def register(router):
        @tool(router=router, description="Greet by name")
        async def greet(name: str) -> str:
            return f"hello {name}"
    """
)


@pytest.fixture
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plugins")  # outside the workspace (tmp_path), as required
    (folder / "greeter.py").write_text(GREET)
    return folder


def _state(tmp_path: Path) -> Path:
    """The state directory: beside the workspace (tmp_path), never in it (the one workspace rule)."""
    return tmp_path.parent / f"{tmp_path.name}-state"


@pytest.fixture
def env(plugin_dir: Path, child_env: Callable[..., dict[str, str]], tmp_path: Path) -> dict[str, str]:
    return child_env(STEERABLE_PLUGIN_DIR=str(plugin_dir), STEERABLE_STATE_DIR=str(_state(tmp_path)))


def cli(
    env: dict[str, str], *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return run_steerable(*args, env=env, cwd=cwd, stdin=stdin)


def test_a_directory_plugin_shows_up_in_tools_call_session_and_plugins_plg_2_plg_3(
    env: dict[str, str], tmp_path: Path
) -> None:
    tools = cli(env, "tools", "--json", "-w", str(tmp_path))
    assert tools.returncode == 0, tools.stderr
    assert "greet" in [t["name"] for t in json.loads(tools.stdout)]
    call = cli(env, "call", "greet", '{"name": "Ada"}', "-w", str(tmp_path))
    assert call.returncode == 0 and json.loads(call.stdout) == {
        "success": True,
        "data": {"value": "hello Ada"},
    }
    session = cli(
        env,
        "session",
        "-w",
        str(tmp_path),
        stdin='{"id": "1", "name": "greet", "arguments": {"name": "Bo"}}\n',
    )
    assert json.loads(session.stdout) == {
        "id": "1",
        "result": {"success": True, "data": {"value": "hello Bo"}},
    }
    plugins = cli(env, "plugins", "--json", "-w", str(tmp_path))
    listed = json.loads(plugins.stdout)
    assert [(p["name"], p["state"], p["tools"]) for p in listed if p["name"] == "greeter"] == [
        ("greeter", "enabled", ["greet"])
    ]
    assert cli(env, "tools", "--no-plugins", "--json", "-w", str(tmp_path)).stdout.count('"greet"') == 0


def test_a_directory_plugin_is_offered_to_the_model_in_run(env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "turns.json"
    script.write_text(
        json.dumps([{"tool_calls": [{"id": "g", "name": "greet", "arguments": '{"name": "Cy"}'}]}, "done"])
    )
    env = {**env, "STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)}
    proc = cli(
        env, "run", "--instruction", "greet Cy", "--cwd", str(tmp_path), "--quiet", "--session-id", "g1"
    )
    assert proc.returncode == 0, proc.stderr
    record = (_state(tmp_path) / "sessions" / "g1.jsonl").read_text()
    assert "hello Cy" in record


def test_a_broken_plugin_aborts_every_entry_point_naming_it_plg_7(
    env: dict[str, str], plugin_dir: Path, tmp_path: Path
) -> None:
    (plugin_dir / "broken.py").write_text("import not_a_module_anywhere\n")
    for args in (("tools",), ("call", "greet", "{}"), ("plugins",)):
        proc = cli(env, *args, "-w", str(tmp_path))
        assert proc.returncode == 2, (args, proc.stderr)
        assert "broken" in proc.stderr and "not_a_module_anywhere" in proc.stderr
    script = tmp_path / "turns.json"
    script.write_text('["never"]')
    scripted = {**env, "STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)}
    run = cli(scripted, "run", "--instruction", "x", "--cwd", str(tmp_path))
    assert run.returncode == 2 and "broken" in json.loads(run.stdout)["error"]


async def test_the_sidecar_refuses_to_boot_with_a_broken_plugin_plg_7(
    env: dict[str, str], plugin_dir: Path, tmp_path: Path
) -> None:
    (plugin_dir / "broken.py").write_text(
        "def register(router):\n    raise RuntimeError('boom at register')\n"
    )
    with pytest.raises(SidecarStartError) as info:
        await SidecarClient.start(workspace=tmp_path, env=env)
    assert "broken" in str(info.value) and "boom at register" in str(info.value)


async def test_plugin_rpcs_change_tool_list_at_once_plg_5(
    env: dict[str, str], plugin_dir: Path, tmp_path: Path
) -> None:
    async with await SidecarClient.start(workspace=tmp_path, env=env) as sidecar:

        async def names() -> list[str]:
            return [t["name"] for t in await sidecar.list_tools()]

        listed = await sidecar.peer.request("plugin.list")
        assert "greeter" in [p["name"] for p in listed["plugins"]] and "greet" in await names()
        disabled = await sidecar.peer.request("plugin.disable", {"name": "greeter"})
        assert disabled["plugin"]["state"] == "disabled" and "greet" not in await names()
        gone = await sidecar.invoke("greet", {"name": "x"})
        assert gone.success is False and gone.data and gone.data["code"] == "unknown_tool"
        await sidecar.peer.request("plugin.enable", {"name": "greeter"})
        assert "greet" in await names()
        (plugin_dir / "greeter.py").write_text(GREET.replace("hello", "bonjour"))
        await sidecar.peer.request("plugin.reload", {"name": "greeter"})
        again = await sidecar.invoke("greet", {"name": "Di"}, consent_granted=True)  # local mode
        assert again.data == {"value": "bonjour Di"}
        with pytest.raises(RemoteError) as unknown:
            await sidecar.peer.request("plugin.disable", {"name": "nope"})
        assert unknown.value.data == {"type": "PluginStateError", "plugin": "nope"}
        assert unknown.value.code == -32033 and "no plugin named 'nope'" in unknown.value.message
        await sidecar.peer.request("plugin.unload", {"name": "greeter"})
        assert "greet" not in await names()


async def test_progressive_harness_on_the_mcp_server_lists_tool_search(
    env: dict[str, str], tmp_path: Path
) -> None:
    from mcp import Client, StdioServerParameters  # the official client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "steerable_sidecar", "mcp", "--harness", "progressive", "-w", str(tmp_path)],
        env=env,
    )
    async with Client(params) as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        assert "tool_search" in names and "greet" in names
        result: Any = await client.call_tool("greet", {"name": "Ed"})
        assert result.structured_content == {"success": True, "data": {"value": "hello Ed"}}


SERVER_SCRIPT = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_tool_server.py")


def mcp_config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps([{"name": "wx", "command": sys.executable, "args": [SERVER_SCRIPT]}]))
    return path


def test_run_with_mcp_finds_the_server_tool_through_tool_search_ts_1(
    env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "turns.json"
    script.write_text(
        json.dumps(
            [
                {
                    "tool_calls": [
                        {"id": "s", "name": "tool_search", "arguments": '{"query": "weather city"}'}
                    ]
                },
                {
                    "tool_calls": [
                        {"id": "w", "name": "mcp__wx__get_weather", "arguments": '{"city": "Oslo"}'}
                    ]
                },
                "It is sunny.",
            ]
        )
    )
    scripted = {**env, "STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)}
    args = ["run", "--instruction", "weather?", "--cwd", str(tmp_path), "--quiet", "--session-id", "m1"]
    proc = cli(scripted, *args, "--harness", "progressive", "--mcp", str(mcp_config(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    messages = [
        json.loads(line) for line in (_state(tmp_path) / "sessions" / "m1.jsonl").read_text().splitlines()
    ]
    results = {
        e["message"]["tool_call_id"]: json.loads(e["message"]["content"])
        for e in messages
        if e.get("type") == "message" and e["message"]["role"] == "tool"
    }
    assert "mcp__wx__get_weather" in [t["name"] for t in results["s"]["data"]["tools"]]
    assert results["w"]["success"] is True and "Sunny in Oslo" in json.dumps(results["w"])


def test_a_bad_mcp_config_stops_the_run_naming_the_file(env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"name": "x"}]')
    script = tmp_path / "turns.json"
    script.write_text('["never"]')
    scripted = {**env, "STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)}
    proc = cli(scripted, "run", "--instruction", "x", "--cwd", str(tmp_path), "--mcp", str(bad))
    assert proc.returncode == 2 and str(bad) in json.loads(proc.stdout)["error"]


async def test_the_sidecar_connects_mcp_servers_from_the_environment(
    env: dict[str, str], tmp_path: Path
) -> None:
    env = {**env, "STEERABLE_MCP_CONFIG": str(mcp_config(tmp_path))}
    async with await SidecarClient.start(workspace=tmp_path, env=env) as sidecar:
        tools = {t["name"]: t for t in await sidecar.list_tools()}
        assert tools["mcp__wx__get_weather"]["exposure"] == "deferred"
        assert tools["mcp__wx__get_weather"]["mode"] == "read"
        result = await sidecar.invoke("mcp__wx__get_weather", {"city": "Rome"})
        assert result.success and "Sunny in Rome" in json.dumps(result.to_wire())


DEFERRED_GREET = GREET.replace(
    'description="Greet by name"', 'description="Greet a person by name", exposure="deferred"'
)


async def test_a_progressive_sidecar_chat_finds_plugin_tools_and_follows_plugin_changes_har_2_plg_5(
    env: dict[str, str], plugin_dir: Path, tmp_path: Path
) -> None:
    (plugin_dir / "greeter.py").write_text(DEFERRED_GREET)
    script = tmp_path / "turns.json"
    script.write_text(
        json.dumps(
            [
                {
                    "tool_calls": [
                        {"id": "s1", "name": "tool_search", "arguments": '{"query": "greet person"}'}
                    ]
                },
                {"tool_calls": [{"id": "g1", "name": "greet", "arguments": '{"name": "Al"}'}]},
                {
                    "tool_calls": [
                        {"id": "s2", "name": "tool_search", "arguments": '{"query": "greet person"}'}
                    ]
                },
                "done",
            ]
        )
    )
    env = {**env, "STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)}
    async with await SidecarClient.start(
        workspace=tmp_path, env=env, args=["--harness", "progressive"]
    ) as sidecar:

        async def approve_after_disabling(call: dict[str, Any], mode: str) -> bool:
            # the plugin goes away while the chat runs: the chat must follow at once
            await sidecar.peer.request("plugin.disable", {"name": "greeter"})
            return True

        sidecar.on_approval = approve_after_disabling
        handle = sidecar.start_chat("greet Al")
        summary = await handle.result()
    assert summary["outcome"] == "completed", summary
    results = {e["id"]: e["result"] for e in handle.events_seen if e["type"] == "tool_result"}
    assert [t["name"] for t in results["s1"]["data"]["tools"]] == ["greet"]
    assert results["g1"]["data"]["code"] == "unknown_tool"  # disabled before it could run
    assert results["s2"]["data"]["tools"] == []


NOISY = GREET.replace(
    "def register(router):",
    "print('noise at import')\n\ndef register(router):\n    print('noise at register')",
).replace('return f"hello {name}"', 'print("noise in the tool")\n        return f"hello {name}"')


def test_a_printing_plugin_never_reaches_stdout(
    env: dict[str, str], plugin_dir: Path, tmp_path: Path
) -> None:
    (plugin_dir / "greeter.py").write_text(NOISY)
    call = cli(env, "call", "greet", '{"name": "Ada"}', "-w", str(tmp_path))
    assert json.loads(call.stdout) == {"success": True, "data": {"value": "hello Ada"}}
    assert "noise at import" in call.stderr and "noise in the tool" in call.stderr
    tools = cli(env, "tools", "--json", "-w", str(tmp_path))
    json.loads(tools.stdout)
    session = cli(
        env,
        "session",
        "-w",
        str(tmp_path),
        stdin='{"id": "1", "name": "greet", "arguments": {"name": "B"}}\n',
    )
    assert [json.loads(line)["id"] for line in session.stdout.splitlines()] == ["1"]
    script = tmp_path / "turns.json"
    script.write_text(
        json.dumps([{"tool_calls": [{"id": "g", "name": "greet", "arguments": '{"name": "C"}'}]}, "ok"])
    )
    run = cli(
        {**env, "STEERABLE_PROVIDER": "scripted", "STEERABLE_SCRIPT": str(script)},
        "run",
        "--instruction",
        "x",
        "--cwd",
        str(tmp_path),
        "--quiet",
    )
    assert len(run.stdout.splitlines()) == 1 and json.loads(run.stdout)["outcome"] == "completed"
    frames = '{"jsonrpc":"2.0","id":1,"method":"system.ping"}\n'
    sidecar = cli(env, "sidecar", "-w", str(tmp_path), stdin=frames)
    lines = [json.loads(line) for line in sidecar.stdout.splitlines()]
    assert lines[0]["method"] == "lifecycle.ready" and lines[1]["result"]["pong"] is True


def test_a_plugin_directory_inside_the_workspace_is_refused(
    child_env: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    # the model could write_file a plugin there, and plugins run in the process holding the API key
    inside = tmp_path / "plugins"
    inside.mkdir()
    (inside / "greeter.py").write_text(GREET)
    env = child_env(STEERABLE_PLUGIN_DIR=str(inside))
    refused = cli(env, "tools", "-w", str(tmp_path))
    assert refused.returncode == 2 and "is inside the workspace" in refused.stderr
    assert "STEERABLE_ALLOW_PLUGINS_IN_WORKSPACE=1" in refused.stderr
    allowed = cli(
        {**env, "STEERABLE_ALLOW_PLUGINS_IN_WORKSPACE": "1"}, "tools", "--json", "-w", str(tmp_path)
    )
    assert allowed.returncode == 0 and "greet" in allowed.stdout


def test_a_plugin_file_linked_into_the_workspace_is_refused_safe_1(
    child_env: Callable[..., dict[str, str]], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # SAFE-1: the folder is outside the workspace, but one file in it is a link to a file the model
    # can rewrite with write_file, then loaded into the process holding the API key
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greeter_impl.py").write_text(GREET)
    folder = tmp_path_factory.mktemp("linked-plugins")
    (folder / "greeter.py").symlink_to(workspace / "greeter_impl.py")
    env = child_env(STEERABLE_PLUGIN_DIR=str(folder))
    refused = cli(env, "tools", "-w", str(workspace))
    assert refused.returncode == 2, refused.stdout
    assert (
        f"plugin file {folder.resolve() / 'greeter.py'} is a link to {(workspace / 'greeter_impl.py').resolve()}, "
        f"inside the workspace {workspace.resolve()}: the model can write that file"
    ) in refused.stderr
    assert "STEERABLE_ALLOW_PLUGINS_IN_WORKSPACE=1" in refused.stderr
    # a link to a file outside the workspace is a plugin like any other
    outside = tmp_path_factory.mktemp("elsewhere") / "greeter_impl.py"
    outside.write_text(GREET)
    (folder / "greeter.py").unlink()
    (folder / "greeter.py").symlink_to(outside)
    allowed = cli(env, "tools", "--json", "-w", str(workspace))
    assert allowed.returncode == 0 and "greet" in allowed.stdout


def test_a_hard_linked_plugin_file_is_refused_safe_1(
    child_env: Callable[..., dict[str, str]], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # SAFE-1: a hard link shares the bytes a command may rewrite in place in the workspace
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greeter_impl.py").write_text(GREET)
    folder = tmp_path_factory.mktemp("hard-plugins")
    os.link(workspace / "greeter_impl.py", folder / "greeter.py")
    refused = cli(child_env(STEERABLE_PLUGIN_DIR=str(folder)), "tools", "-w", str(workspace))
    assert refused.returncode == 2, refused.stdout
    assert f"plugin file {folder.resolve() / 'greeter.py'} has 2 hard links" in refused.stderr
