"""One flag vocabulary across the ``steerable`` commands, and ``steerable doctor`` (issue 12).

Every test runs ``python -m steerable_sidecar`` as a real process.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

import steerable_agent_runtime
import steerable_sidecar
from steerable_cli import run_steerable

VERSION = steerable_agent_runtime.__version__


def env_without_steerable(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEERABLE_")}
    env.update(overrides)
    return env


def steerable(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return run_steerable(*args, env=env_without_steerable() if env is None else env, cwd=cwd, stdin=stdin)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("hello\n", encoding="utf-8")
    return root


def test_version_is_the_packages_version(ws):
    proc = steerable("--version", cwd=ws)
    assert proc.returncode == 0 and proc.stdout == f"steerable {VERSION}\n"
    assert steerable_sidecar.__version__ == VERSION


def names_listed(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, proc.stderr
    return [tool["name"] for tool in json.loads(proc.stdout)]


def test_shared_options_work_before_and_after_the_command(ws, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = steerable("--no-web-tools", "-w", str(ws), "tools", "--json", cwd=elsewhere)
    after = steerable("tools", "--json", "--no-web-tools", "--workspace", str(ws), cwd=elsewhere)
    assert names_listed(before) == names_listed(after)
    assert "web_fetch" not in names_listed(before) and "read_file" in names_listed(before)
    # the workspace given before the command is the one the call reads
    call = steerable(
        "-w", str(ws), "--no-web-tools", "call", "read_file", '{"path": "notes.txt"}', cwd=elsewhere
    )
    assert call.returncode == 0, call.stderr
    assert json.loads(call.stdout)["data"]["content"] == "hello\n"


def test_an_option_between_the_tool_name_and_its_arguments(ws):
    proc = steerable("call", "tool_search", "--harness", "progressive", '{"query": "read a file"}', cwd=ws)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["success"] is True and result["data"]["query"] == "read a file"


def test_a_command_option_is_never_taken_for_an_abbreviation(ws):
    proc = steerable("tools", "--all", "--json", cwd=ws)
    listed = names_listed(proc)
    assert "run_code" not in listed  # off: unavailable tools are not registered
    assert len(listed) >= len(names_listed(steerable("tools", "--json", cwd=ws)))
    bad = steerable("tools", "--allow-prot", cwd=ws)
    assert bad.returncode == 2 and "unrecognized arguments: --allow-prot" in bad.stderr


def test_run_takes_workspace_and_keeps_cwd_as_an_alias(ws, tmp_path):
    script = tmp_path / "turns.json"
    script.write_text(
        json.dumps([{"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}, "done"])
    )
    env = env_without_steerable(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script))
    state = tmp_path / "state"
    for flag in ("--workspace", "-w", "--cwd"):
        proc = steerable(
            "run", flag, str(ws), "--instruction", "read notes", "--quiet", "--no-web-tools",
            "--state-dir", str(state), cwd=tmp_path, env=env,
        )  # fmt: skip
        assert proc.returncode == 0, (flag, proc.stdout, proc.stderr)
        summary = json.loads(proc.stdout)
        assert summary["outcome"] == "completed" and summary["toolCalls"] == 1, flag
    # shared options before the command reach run too
    proc = steerable(
        "--no-web-tools", "-w", str(ws), "run", "--instruction", "x", "--quiet", "--state-dir", str(state),
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_run_refuses_allow_outside_workspace_with_its_json_line(ws):
    proc = steerable("--allow-outside-workspace", "run", "--instruction", "x", cwd=ws)
    assert proc.returncode == 2
    assert json.loads(proc.stdout) == {
        "outcome": "usage_error",
        "error": "steerable run jails the workspace: --allow-outside-workspace is not accepted",
        "exitCode": 2,
    }


async def _mcp_tool_names(ws: Path, harness: str) -> list[str]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "steerable_sidecar", "mcp", "--harness", harness, "--workspace", str(ws)],
        env=env_without_steerable(),
    )
    async with asyncio.timeout(60), Client(params) as client:
        listed = await client.list_tools()
    return [tool.name for tool in listed.tools]


@pytest.mark.parametrize("harness", ["full", "minimal", "progressive"])
async def test_tools_shows_exactly_what_mcp_offers(ws, harness):
    shown = names_listed(await asyncio.to_thread(steerable, "tools", "--harness", harness, "--json", cwd=ws))
    assert shown == await _mcp_tool_names(ws, harness)
    if harness == "minimal":
        assert "web_fetch" not in shown


def test_mcp_says_what_it_serves_on_stderr_at_start(ws):
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "steerable_sidecar", "mcp", "--workspace", str(ws), "--no-web-tools"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_without_steerable(),
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
    finally:
        proc.communicate(timeout=30)  # EOF on stdin ends the server
    offered = len(names_listed(steerable("tools", "--json", "--no-web-tools", cwd=ws)))
    assert line.startswith(
        f"steerable mcp {VERSION}: serving {offered} tools (full harness) for {ws.resolve()}; sandbox: "
    )
    assert line.rstrip().endswith(("bwrap", "landlock", "seatbelt", "inherited")), line
    assert proc.returncode == 0


def test_verbose_and_log_level_reach_every_command(ws):
    # asyncio logs its selector at DEBUG when a command's event loop starts
    for args, env in (
        (["-vv", "tools"], env_without_steerable()),
        (["call", "-vv", "list_dir", "{}"], env_without_steerable()),
        (["tools"], env_without_steerable(STEERABLE_LOG_LEVEL="debug")),
    ):
        proc = steerable(*args, cwd=ws, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "DEBUG asyncio: Using selector" in proc.stderr, args
    quiet = steerable("tools", cwd=ws)
    assert quiet.stderr == ""
    bad = steerable("tools", cwd=ws, env=env_without_steerable(STEERABLE_LOG_LEVEL="loud"))
    assert bad.returncode == 2
    assert (
        bad.stderr
        == "steerable: STEERABLE_LOG_LEVEL='loud' is not a log level; use one of DEBUG, INFO, WARNING, ERROR\n"
    )


def test_doctor_reports_and_exits_zero_on_a_sound_setup(ws):
    proc = steerable("doctor", "--json", "--no-plugins", cwd=ws)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True and report["version"] == VERSION
    rows = {(c["section"], c["item"]): c for c in report["checks"]}
    assert rows[("Workspace", "root")]["value"] == str(ws.resolve())
    assert rows[("Sandbox", "backend")]["status"] == "ok"
    assert rows[("Sandbox", "probe: bwrap")]["value"] in ("works", "unavailable")
    assert rows[("Sandbox", "deny-read")]["value"].endswith(" present")  # SAFE-3
    assert rows[("run_code", "run_code")]["value"] == "off"
    assert rows[("Model provider", "provider")]["value"] == "not configured"
    assert {v["name"] for v in report["variables"]} >= {"STEERABLE_SANDBOX", "STEERABLE_API_KEY"}
    table = steerable("doctor", "--no-plugins", cwd=ws)
    assert table.returncode == 0 and f"steerable {VERSION} doctor" in table.stdout


@pytest.mark.parametrize(
    ("variable", "value", "command"),
    [
        ("STEERABLE_SANDBOX_MAX_PROCESSES", "-1", ["tools"]),
        ("STEERABLE_SANDBOX_DENY_READ", "relative/keys", ["tools"]),  # SAFE-3
        ("STEERABLE_WEB_FETCH_MAX_BYTES", "lots", ["tools"]),
        ("STEERABLE_PROVIDER", "gpt", ["run", "--instruction", "x", "--quiet"]),
    ],
)
def test_doctor_fails_with_the_message_the_command_gives(ws, variable, value, command):
    env = env_without_steerable(**{variable: value})
    doctor = steerable("doctor", "--no-plugins", cwd=ws, env=env)
    assert doctor.returncode == 2
    failing = steerable(*command, "--no-plugins", cwd=ws, env=env)
    assert failing.returncode == 2
    message = failing.stderr.splitlines()[0].split(": ", 1)[1]  # after "steerable:" / "steerable run:"
    assert variable in message
    assert f"steerable: {message}" in doctor.stderr.splitlines()


def test_doctor_flags_a_state_dir_that_is_a_file(ws, tmp_path):
    blocker = tmp_path / "state-file"
    blocker.write_text("")
    proc = steerable("doctor", "--json", "--no-plugins", "--state-dir", str(blocker), cwd=ws)
    assert proc.returncode == 2
    rows = {(c["section"], c["item"]): c for c in json.loads(proc.stdout)["checks"]}
    assert rows[("State and logs", "state directory")]["status"] == "error"
    message = f"--state-dir {blocker} is not a usable directory: it is a file"
    assert rows[("State and logs", "state directory")]["detail"] == message
    run = steerable("run", "--instruction", "x", "--state-dir", str(blocker), cwd=ws)
    assert run.returncode == 2 and json.loads(run.stdout)["error"] == message


SERVER_SCRIPT = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_tool_server.py")


@pytest.mark.parametrize("harness", ["full", "progressive"])
async def test_tools_lists_the_mcp_servers_tools_as_mcp_offers_them(ws, tmp_path, harness):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps([{"name": "wx", "command": sys.executable, "args": [SERVER_SCRIPT]}]))
    env = env_without_steerable(STEERABLE_MCP_CONFIG=str(config))
    shown = names_listed(
        await asyncio.to_thread(steerable, "tools", "--harness", harness, "--json", cwd=ws, env=env)
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "steerable_sidecar", "mcp", "--harness", harness, "-w", str(ws)],
        env=env,
    )
    async with asyncio.timeout(60), Client(params) as client:
        served = [tool.name for tool in (await client.list_tools()).tools]
    assert shown == served
    every = names_listed(await asyncio.to_thread(steerable, "tools", "--all", "--json", cwd=ws, env=env))
    assert "mcp__wx__get_weather" in every
    assert ("mcp__wx__get_weather" in shown) is (harness == "full")  # deferred: progressive finds it


def test_mcp_says_what_it_serves_even_when_the_host_leaves_at_once(ws):
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "steerable_sidecar", "mcp", "-w", str(ws), "--no-web-tools"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env_without_steerable(),
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout == ""
    assert proc.stderr.startswith(f"steerable mcp {VERSION}: serving "), proc.stderr


def test_doctor_under_head_exits_quietly_like_every_command(ws):
    piped = subprocess.run(
        f"{sys.executable} -m steerable_sidecar doctor --no-plugins | head -1; echo rc=${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        cwd=ws,
        capture_output=True,
        text=True,
        env=env_without_steerable(),
        timeout=60,
    )
    assert piped.stdout.splitlines()[-1] == "rc=141" and "Traceback" not in piped.stderr


def test_doctor_reports_a_bad_log_level_in_its_report(ws):
    proc = steerable(
        "doctor", "--json", "--no-plugins", cwd=ws, env=env_without_steerable(STEERABLE_LOG_LEVEL="trace")
    )
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    rows = {(c["section"], c["item"]): c for c in report["checks"]}
    assert rows[("State and logs", "log level")]["detail"] == (
        "STEERABLE_LOG_LEVEL='trace' is not a log level; use one of DEBUG, INFO, WARNING, ERROR"
    )


def test_run_refuses_allow_outside_workspace_after_the_command_too(ws):
    proc = steerable("run", "--instruction", "x", "--allow-outside-workspace", cwd=ws)
    assert proc.returncode == 2
    assert (
        json.loads(proc.stdout)["error"]
        == "steerable run jails the workspace: --allow-outside-workspace is not accepted"
    )


def test_a_proxy_httpx_cannot_use_is_a_configuration_error(ws):
    env = env_without_steerable(ALL_PROXY="socks5://127.0.0.1:1080", HTTPS_PROXY="ftp://user:SECRET@proxy:21")
    proc = steerable("tools", cwd=ws, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "SECRET" not in proc.stderr
    assert proc.stderr.startswith(
        "steerable: web_search cannot use the proxy set in HTTPS_PROXY, ALL_PROXY: "
    )
    assert proc.stderr.rstrip().endswith("Fix or unset it (or start with --no-web-tools)")
    assert steerable("tools", "--no-web-tools", cwd=ws, env=env).returncode == 0


def test_a_lone_surrogate_in_the_model_text_still_prints_the_summary(ws, tmp_path):
    script = tmp_path / "turns.json"
    script.write_text('["\\ud800 done"]')
    env = env_without_steerable(STEERABLE_PROVIDER="scripted", STEERABLE_SCRIPT=str(script))
    proc = steerable(
        "run",
        "--instruction",
        "x",
        "--quiet",
        "--no-web-tools",
        "--state-dir",
        str(tmp_path / "s"),
        cwd=ws,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["text"] == "\ud800 done"
