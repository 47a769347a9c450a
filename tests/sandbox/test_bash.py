"""The ``bash`` tool: registration, results, failures, timeouts, cancellation, the environment,
``sandbox_unavailable`` (RUN-6) and confined mode (RUN-8), through the real router."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from test_runner import alive, gone, sleeper

from steerable_agent_runtime import ConfigError, ToolCall, is_terminal_result, workspace_tools_for_cwd
from steerable_agent_runtime.sandbox import BASH_MAX_TIMEOUT_MS, SandboxConfig, bash_tool
from waiting import eventually

RESULT_FIELDS = {
    "stdout",
    "stderr",
    "stdoutBytes",
    "stderrBytes",
    "exitCode",
    "timedOut",
    "durationMs",
    "_sandbox",
}


async def bash(router, command: str, **arguments):
    return await router.dispatch(ToolCall(id="b", name="bash", arguments={"command": command, **arguments}))


@pytest.fixture
def router(workspace: Path):
    return workspace_tools_for_cwd(workspace)


def test_bash_is_registered_in_local_mode_with_its_contract(router):
    spec = router.get("bash")
    assert spec is not None and spec.mode.value == "local" and spec.exposure.value == "direct"
    params = spec.parameters
    assert params["required"] == ["command"] and set(params["properties"]) == {"command", "timeout_ms"}
    assert params["properties"]["timeout_ms"]["maximum"] == BASH_MAX_TIMEOUT_MS == 600_000
    assert (
        spec.timeout_ms is not None and spec.timeout_ms > BASH_MAX_TIMEOUT_MS
    )  # the tool's own deadline fires first
    assert "network is off" in spec.description


def test_bash_can_be_left_out_and_bad_config_fails_at_registration(workspace: Path):
    assert "bash" not in workspace_tools_for_cwd(workspace, bash=False)
    with pytest.raises(ConfigError, match="STEERABLE_SANDBOX="):
        workspace_tools_for_cwd(workspace, environ={"STEERABLE_SANDBOX": "docker"})
    with pytest.raises(ConfigError, match="STEERABLE_SANDBOX_MAX_OUTPUT_BYTES"):
        bash_tool(workspace, environ={"STEERABLE_SANDBOX_MAX_OUTPUT_BYTES": "lots"})


async def test_success_carries_output_exit_code_and_the_backend(router, workspace: Path):
    result = await bash(router, "echo out; echo err >&2; pwd; echo made > new.txt")
    assert result.success and result.data is not None
    assert set(result.data) == RESULT_FIELDS
    assert result.data["stdout"] == f"out\n{workspace}\n" and result.data["stderr"] == "err\n"
    assert (result.data["stdoutBytes"], result.data["stderrBytes"]) == (len(f"out\n{workspace}\n"), 4)
    assert result.data["exitCode"] == 0 and result.data["timedOut"] is False
    assert result.data["_sandbox"] == {"backend": "bwrap", "enforcement": "full"}
    assert (workspace / "new.txt").read_text() == "made\n"


async def test_a_non_zero_exit_is_a_failure_the_model_can_follow_up(workspace: Path):
    router = workspace_tools_for_cwd(workspace, bash=True, environ={"STEERABLE_SANDBOX": "landlock"})
    result = await bash(router, "echo partial; exit 3")
    assert result.success is False and result.needs_followup is True and not is_terminal_result(result)
    assert result.error == "The command exited with status 3."
    assert result.data is not None and result.data["code"] == "exit_status" and result.data["exitCode"] == 3
    assert result.data["stdout"] == "partial\n"
    assert result.data["_sandbox"] == {"backend": "landlock", "enforcement": "partial"}


async def test_output_is_clipped_with_the_total_reported(workspace: Path):
    router = workspace_tools_for_cwd(workspace, environ={"STEERABLE_SANDBOX_MAX_OUTPUT_BYTES": "100"})
    result = await bash(router, "seq 1 10000")
    assert result.success and result.data is not None
    assert result.data["stdoutBytes"] == 48894
    assert result.data["stdout"].startswith("1\n2\n")
    assert "bytes clipped; 48894 bytes in total ...]" in result.data["stdout"]
    assert result.data["stdout"].endswith("9999\n10000\n")
    spec = router.get("bash")
    assert spec is not None and "clipped to 100 bytes" in spec.description


async def test_a_timeout_kills_the_process_group_and_says_so(router):
    seconds, token = sleeper()
    started = time.monotonic()
    result = await bash(router, f"echo begun; sleep {seconds} & sleep {seconds}", timeout_ms=400)
    # cut short at the 400 ms deadline: a call that waited for its sleeps would take over 100 s
    assert time.monotonic() - started < 10
    assert result.success is False and result.needs_followup is True
    assert result.error == "The command timed out after 400 ms; it and every process it started were killed."
    assert result.data is not None and result.data["timedOut"] is True and result.data["exitCode"] is None
    assert result.data["code"] == "timeout" and result.data["stdout"] == "begun\n"
    assert await gone(token), f"left running: {alive(token)}"


async def test_cancelling_the_call_kills_the_command(router):
    seconds, token = sleeper()
    task = asyncio.ensure_future(bash(router, f"sleep {seconds} & sleep {seconds}"))
    await eventually(lambda: alive(token) or task.done(), what="the sleeps started")
    assert alive(token), task.result() if task.done() else "still starting"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(token), f"left running: {alive(token)}"


async def test_invalid_arguments_are_refused_before_anything_runs(router):
    for arguments in (
        {"command": "true", "timeout_ms": 0},
        {"command": "true", "timeout_ms": 600_001},
        {"command": 5},
        {},
    ):
        result = await router.dispatch(ToolCall(id="x", name="bash", arguments=arguments))
        assert (
            result.success is False and result.data is not None and result.data["code"] == "invalid_arguments"
        )


async def test_the_command_sees_only_the_allowlisted_environment_run_7(workspace: Path, monkeypatch):
    monkeypatch.setenv("STEERABLE_API_KEY", "canary-XYZ")
    monkeypatch.setenv("FOO_TOKEN", "canary-token")
    monkeypatch.setenv("OPENAI_API_KEY", "canary-openai")
    monkeypatch.setenv("LC_TIME", "C")
    router = workspace_tools_for_cwd(workspace)
    result = await bash(router, "env | cut -d= -f1 | sort")
    assert result.data is not None
    names = set(result.data["stdout"].split())
    assert "canary" not in result.data["stdout"]
    assert {"STEERABLE_API_KEY", "FOO_TOKEN", "OPENAI_API_KEY"}.isdisjoint(names)
    assert {"PATH", "HOME", "TMPDIR", "TEMP", "TMP", "LC_TIME", "PYTHONDONTWRITEBYTECODE"} <= names
    assert names <= {
        "PATH",
        "HOME",
        "TMPDIR",
        "TEMP",
        "TMP",
        "LANG",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
        "PWD",
        "SHLVL",
        "_",
    } | {n for n in names if n.startswith("LC_")}
    # an explicit environ is the one passed on, allowlisted as well
    explicit = workspace_tools_for_cwd(
        workspace, environ={"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": "canary-gh"}
    )
    seen = await bash(explicit, "echo ${GITHUB_TOKEN:-none} $PATH")
    assert seen.data is not None and seen.data["stdout"] == "none /usr/bin:/bin\n"


async def test_no_backend_refuses_with_sandbox_unavailable_and_runs_nothing_run_6(workspace: Path):
    router = workspace_tools_for_cwd(workspace, environ={"STEERABLE_SANDBOX": "none"})
    result = await bash(router, "echo ran > ran.txt")
    assert result.success is False and result.needs_followup is True
    assert result.error == "sandbox_unavailable"
    assert result.message is not None and "STEERABLE_SIDECAR_CONFINED=1" in result.message
    assert result.data == {"code": "sandbox_unavailable", "tried": {"none": "STEERABLE_SANDBOX=none"}}
    assert not (workspace / "ran.txt").exists()


async def test_confined_mode_inherits_layer_1_and_says_so_run_8(workspace: Path):
    router = workspace_tools_for_cwd(
        workspace, environ={"STEERABLE_SIDECAR_CONFINED": "1", "STEERABLE_SANDBOX": "none"}
    )
    result = await bash(router, "echo inside")
    assert result.success and result.data is not None
    assert result.data["stdout"] == "inside\n"
    assert result.data["_sandbox"] == {"backend": "inherited", "enforcement": "partial", "via": "layer1"}


async def test_a_given_backend_and_config_are_used_as_is(workspace: Path):
    from sbx_helpers import real_backend

    tool = bash_tool(workspace, config=SandboxConfig(network=True), backend=real_backend("landlock"))
    assert "network is on" in tool.description
    result = await tool.handler(command="echo via-landlock")
    assert result.data["_sandbox"]["backend"] == "landlock" and result.data["stdout"] == "via-landlock\n"


async def test_a_command_with_a_lone_surrogate_is_refused_with_the_fix(router, workspace: Path):
    """Half a UTF-16 pair (a ``\\ud83d`` escape in a model's JSON) cannot be passed to the OS."""
    result = await bash(router, "echo \ud83d > made.txt")
    assert result.success is False and result.needs_followup is True
    assert result.data["code"] == "invalid_arguments"
    assert "'\\ud83d', half of a UTF-16 pair" in result.error
    assert not (workspace / "made.txt").exists()
    # a file name's undecodable byte (surrogateescape) still reaches the shell as that byte
    escaped = await bash(router, "printf x > 'b\udcffd.txt'")
    assert escaped.success is True and (workspace / "b\udcffd.txt").exists()
